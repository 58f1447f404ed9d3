/* Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause */
/*
 * What differs between the two Open MPI series the component builds
 * against, in one place: 4.1 (ORTE launches the job) and 5.0 (PRRTE and
 * PMIx). The rest of the component uses only what is named here, and the
 * agent and the engine know nothing of either.
 *
 *   coll framework   the component struct's version (2.0.0 / 2.4.0)
 *   runtime keys     node id, locality and host name of a proc, read from
 *                    the local PMIx store (OPAL_PMIX_* / PMIX_*)
 *   cleanup          a file the runtime removes if the job dies
 *   communicators    the context id every member agrees on (4.1: the
 *                    context id; 5.0: the extended id, also for
 *                    communicators made from groups and sessions) and the
 *                    local one for messages
 *   the launcher     what tells one mpirun's jobs from another's, and the
 *                    job's secret where the launcher hands one out
 *   the launch store what launch rank 0 tells every process without
 *                    MPI_COMM_WORLD (5.0: PMIx; 4.1: none, WORLD instead)
 */
#ifndef MCA_COLL_INA_COMPAT_H
#define MCA_COLL_INA_COMPAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi_config.h"
#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "opal/util/proc.h"

#if OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION == 1
#define INA_OMPI_5 0
#include "opal/mca/pmix/pmix.h"
#include "opal/threads/mutex.h"
#elif OMPI_MAJOR_VERSION == 5 && OMPI_MINOR_VERSION == 0
#define INA_OMPI_5 1
#include "opal/mca/pmix/pmix-internal.h"
#include "opal/mca/threads/mutex.h"
#else
#error "coll/ina builds against Open MPI 4.1 or 5.0"
#endif

BEGIN_C_DECLS

#if INA_OMPI_5
#define INA_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#define INA_KEY_NODEID PMIX_NODEID
#define INA_KEY_LOCALITY PMIX_LOCALITY_STRING
#define INA_KEY_HOSTNAME PMIX_HOSTNAME
#define INA_TYPE_UINT32 PMIX_UINT32
#define INA_TYPE_STRING PMIX_STRING
#else
#define INA_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#define INA_KEY_NODEID OPAL_PMIX_NODEID
#define INA_KEY_LOCALITY OPAL_PMIX_LOCALITY_STRING
#define INA_KEY_HOSTNAME OPAL_PMIX_HOSTNAME
#define INA_TYPE_UINT32 OPAL_UINT32
#define INA_TYPE_STRING OPAL_STRING
#endif

/* Job-level data of proc `name` from the local store (never a round trip
 * to the server): a uint32 into *u32, or a string the caller frees into
 * *str. True if the runtime had it. */
static inline bool ina_compat_get_u32(const char *key, const opal_process_name_t *name,
                                      uint32_t *u32)
{
    uint32_t *p = u32;
    int rc;
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, key, name, &p, INA_TYPE_UINT32);
    return OPAL_SUCCESS == rc;
}

static inline bool ina_compat_get_string(const char *key, const opal_process_name_t *name,
                                         char **str)
{
    int rc;
    *str = NULL;
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, key, name, str, INA_TYPE_STRING);
    if (OPAL_SUCCESS != rc) {
        *str = NULL;
    }
    return NULL != *str;
}

/* The runtime removes `path` if the job ends before the component did. */
static inline void ina_compat_register_cleanup(char *path)
{
#if INA_OMPI_5
    (void) opal_pmix_register_cleanup(path, false, false, false);
#else
    if (NULL != opal_pmix.register_cleanup) {
        (void) opal_pmix.register_cleanup(path, false, false, false);
    }
#endif
}

/* A communicator's id, the same on every member while it lives (reused
 * after a free): what job keys and node segments are named by. */
typedef struct ina_comm_gid {
    uint64_t base, sub;
} ina_comm_gid_t;

static inline ina_comm_gid_t ina_compat_comm_gid(const ompi_communicator_t *comm)
{
    ina_comm_gid_t g;
#if INA_OMPI_5
    const ompi_comm_extended_cid_t x = ompi_comm_get_extended_cid(comm);
    g.base = x.cid_base;
    g.sub = x.cid_sub.u64;
#else
    g.base = 0;
    g.sub = ompi_comm_get_cid((ompi_communicator_t *) comm);
#endif
    return g;
}

/* The context id this process knows the communicator by (messages). */
static inline int ina_compat_local_cid(const ompi_communicator_t *comm)
{
#if INA_OMPI_5
    return (int) ompi_comm_get_local_cid(comm);
#else
    return (int) ompi_comm_get_cid((ompi_communicator_t *) comm);
#endif
}

/* What names this process's launch: ORTE's mpirun address (4.1), the PMIx
 * namespace of its job (5.0, which holds the launcher's host and pid).
 * NULL if unknown. Procs of one launch: those that share it. */
static inline const char *ina_compat_launch_name(void)
{
#if INA_OMPI_5
    return '\0' != opal_process_info.myprocid.nspace[0] ? opal_process_info.myprocid.nspace
                                                        : NULL;
#else
    return getenv("OMPI_MCA_orte_hnp_uri");
#endif
}

/* Which launch started proc `name`: ORTE's job family (the upper 16 bits
 * of a job id); under PRRTE each job is a namespace of its own, so its
 * job id. Procs of one launch share it. */
static inline uint32_t ina_compat_launch_of(const opal_process_name_t *name)
{
#if INA_OMPI_5
    return name->jobid;
#else
    return name->jobid >> 16;
#endif
}

/* The launcher's random key for this job, "%016llx-%016llx" (ORTE's
 * precondition_transports in the environment; PMIx's job credential under
 * PRRTE where it hands one out). The caller frees it; NULL if none. */
static inline char *ina_compat_launcher_key(void)
{
    const char *env = getenv("OMPI_MCA_orte_precondition_transports");
#if INA_OMPI_5
    opal_process_name_t job;
    char *key = NULL;
    job.jobid = opal_process_info.my_name.jobid;
    job.vpid = OPAL_VPID_WILDCARD;
    if (ina_compat_get_string(PMIX_CREDENTIAL, &job, &key)) {
        return key;
    }
#endif
    return NULL != env ? strdup(env) : NULL;
}

/* The launch's key-value store: what its rank 0 (vpid 0) puts while the
 * MPI library starts (the coll framework opens before Open MPI commits
 * this process's data and the processes exchange it), every process of the
 * launch can read. Open MPI 5 only, where a process may have no
 * MPI_COMM_WORLD to hear rank 0 on (MPI Sessions); 4.1 hears it on WORLD,
 * which every 4.1 process has, first of all its communicators. */
#if INA_OMPI_5
#define INA_COMPAT_HAS_LAUNCH_STORE 1
#else
#define INA_COMPAT_HAS_LAUNCH_STORE 0
#endif

/* Whether this process is its launch's rank 0. */
static inline bool ina_compat_launch_rank0(void)
{
    return 0 == OMPI_PROC_MY_NAME->vpid;
}

/* How many processes the launch has, and how many of them share this
 * one's node (this one included), as the runtime told it at start; false
 * where it is not known before MPI_COMM_WORLD exists (4.1). */
static inline bool ina_compat_launch_size(uint32_t *nprocs, uint32_t *local)
{
#if INA_OMPI_5
    *nprocs = opal_process_info.num_procs;
    *local = opal_process_info.num_local_peers + 1;
    return true;
#else
    *nprocs = *local = 0;
    return false;
#endif
}

/* Put `value` under `key` for every process of the launch; false if the
 * store would not take it, or has none. */
static inline bool ina_compat_store_put(const char *key, const char *value)
{
#if INA_OMPI_5
    int rc;
    OPAL_MODEX_SEND_VALUE(rc, PMIX_GLOBAL, key, value, PMIX_STRING);
    return PMIX_SUCCESS == rc;
#else
    (void) key;
    (void) value;
    return false;
#endif
}

/* What launch rank 0 put under `key` (the caller frees it); NULL if it put
 * nothing there, or there is no store. Waits for rank 0's data if it has
 * not come yet. */
static inline char *ina_compat_store_get_rank0(const char *key)
{
#if INA_OMPI_5
    opal_process_name_t rank0 = opal_process_info.my_name;
    char *value = NULL;
    int rc;
    rank0.vpid = 0;
    OPAL_MODEX_RECV_VALUE(rc, key, &rank0, &value, PMIX_STRING);
    if (PMIX_SUCCESS != rc) {
        free(value);
        value = NULL;
    }
    return value;
#else
    (void) key;
    return NULL;
#endif
}

END_C_DECLS

#endif /* MCA_COLL_INA_COMPAT_H */

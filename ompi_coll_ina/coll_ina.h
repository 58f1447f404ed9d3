/*
 * coll/ina: in-network aggregation for Open MPI 4.1 collectives.
 *
 * The component offloads MPI_Allreduce of predefined types/ops to an
 * aggregation agent (ina-switchd) through the client engine (ina_client.h)
 * and falls back per call to the collective it replaced for everything else.
 * With `--mca coll ina` alone it also hosts Open MPI's own `basic` and
 * `libnbc` components so that every MPI collective still has an
 * implementation (coll_ina_host.c).
 */
#ifndef MCA_COLL_INA_H
#define MCA_COLL_INA_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stdint.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "opal/mca/mca.h"
#include "opal/threads/mutex.h"

#include "ina_client.h"

BEGIN_C_DECLS

/* Why a call was not offloaded; one fallback counter (and pvar) each. */
typedef enum mca_coll_ina_fallback_reason {
    MCA_COLL_INA_FB_UNSUPPORTED = 0, /* type, op or layout the agent cannot take */
    MCA_COLL_INA_FB_THRESHOLD,       /* fewer bytes than coll_ina_min_bytes */
    MCA_COLL_INA_FB_DENIED,          /* the agent denied the call (scheduler) */
    MCA_COLL_INA_FB_UNREACHABLE,     /* no agent / no job on this communicator */
    MCA_COLL_INA_FB_COUNT
} mca_coll_ina_fallback_reason_t;

/* Lifecycle of a communicator's job descriptor at the agent. */
typedef enum mca_coll_ina_job_state {
    MCA_COLL_INA_JOB_NONE = 0, /* not set up yet: done at the first offloaded call */
    MCA_COLL_INA_JOB_READY,    /* joined: calls may be offloaded */
    MCA_COLL_INA_JOB_DISABLED  /* setup failed on some rank: always fall back */
} mca_coll_ina_job_state_t;

typedef struct mca_coll_ina_component_t {
    mca_coll_base_component_2_0_0_t super;

    /* MCA parameters (storage registered with the MCA var system). */
    int priority;
    int verbose;
    bool enable;
    char *agent;          /* "auto" or host:port */
    char *agent_path;     /* ina-switchd started when agent is "auto" */
    int agent_segs;
    int block_size;
    int window;
    bool required;
    int timeout_ms;
    size_t min_bytes;

    int output;           /* opal_output stream, verbosity = verbose */
    bool explicitly_selected; /* the coll selection string names ina */
    bool thread_multiple;     /* engine calls are not serialised across threads */

    /* Process-wide agent connection (SEEDS S1: one driver per host process). */
    char agent_addr[256];     /* empty: no agent known to this process */
    bool agent_addr_known;    /* agent_addr was resolved (maybe to "none") */
    int agent_pid;            /* embedded agent started by this process, or -1 */
    ina_client_t *client;
    bool connect_tried;
    bool unreachable_warned;
    int live_jobs;            /* joined job descriptors not yet left */
} mca_coll_ina_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_ina_component_t mca_coll_ina_component;

typedef struct mca_coll_ina_module_t {
    mca_coll_base_module_t super;

    ompi_communicator_t *comm;
    int rank;
    int size;
    int cid;

    /* The previous providers we call for fallback and for our own agreement
     * collectives; each module is retained (coll/ucc pattern). */
    mca_coll_base_module_allreduce_fn_t previous_allreduce;
    mca_coll_base_module_t *previous_allreduce_module;
    mca_coll_base_module_bcast_fn_t previous_bcast;
    mca_coll_base_module_t *previous_bcast_module;

    /* Job descriptor of this communicator. */
    mca_coll_ina_job_state_t job_state;
    ina_job_t *job;
    ina_job_params_t job_params;

    /* Counters (read through MPI_T pvars bound to the communicator). */
    unsigned long long offloaded_calls;
    unsigned long long fallback_calls;
    unsigned long long fallback_by_reason[MCA_COLL_INA_FB_COUNT];
} mca_coll_ina_module_t;

OBJ_CLASS_DECLARATION(mca_coll_ina_module_t);

#define INA_VERBOSE(level, ...) \
    opal_output_verbose((level), mca_coll_ina_component.output, "coll:ina: " __VA_ARGS__)

/* coll_ina_module.c */
int mca_coll_ina_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_ina_comm_query(ompi_communicator_t *comm, int *priority);
/* Set up the job descriptor of the module's communicator (collective over it). */
int mca_coll_ina_job_setup(mca_coll_ina_module_t *module);
/* Count one fallback of this communicator. */
void mca_coll_ina_count_fallback(mca_coll_ina_module_t *module,
                                 mca_coll_ina_fallback_reason_t reason);
const char *mca_coll_ina_fallback_reason_name(mca_coll_ina_fallback_reason_t reason);

/* coll_ina_component.c: the process-wide agent connection. */
/* Resolve the agent address on MPI_COMM_WORLD (embedded agent: rank 0 spawns
 * it and broadcasts the address with WORLD's saved bcast). Collective. */
int mca_coll_ina_agent_setup_world(mca_coll_ina_module_t *world_module);
/* The connected client, connecting at first need; NULL if the agent cannot
 * be reached (warned once per process). */
ina_client_t *mca_coll_ina_client(void);
/* Register the MPI_T performance variables (component register). */
int mca_coll_ina_pvars_register(void);

/* coll_ina_allreduce.c */
int mca_coll_ina_allreduce(const void *sbuf, void *rbuf, int count,
                           struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module);

/* coll_ina_dtype.c: MPI -> wire mapping; -1 when not offloadable. */
void mca_coll_ina_dtype_init(void);
int mca_coll_ina_dtype_to_wire(struct ompi_datatype_t *dtype);
int mca_coll_ina_op_to_wire(struct ompi_op_t *op);

/* coll_ina_host.c: when ina is the only selected coll component, make
 * Open MPI's basic and libnbc components available to the selection. */
int mca_coll_ina_host_components(bool enable_progress_threads, bool enable_mpi_threads);

END_C_DECLS

#endif /* MCA_COLL_INA_H */

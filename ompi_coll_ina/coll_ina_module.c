/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * coll/ina module: selection (init_query, comm_query), enable with saved
 * fallbacks, and the per-communicator job descriptor at the agent.
 */
#include "ompi_config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/group/group.h"
#include "ompi/proc/proc.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/mca/coll/base/base.h"
#include "opal/mca/hwloc/hwloc-internal.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "coll_ina.h"
#include "coll_ina_layout.h"

static const char *const ina_reason_names[MCA_COLL_INA_FB_COUNT] = {
    [MCA_COLL_INA_FB_UNSUPPORTED] = "unsupported",
    [MCA_COLL_INA_FB_THRESHOLD] = "below threshold",
    [MCA_COLL_INA_FB_DENIED] = "denied",
    [MCA_COLL_INA_FB_UNREACHABLE] = "unreachable",
};

static const char *const ina_kind_names[MCA_COLL_INA_KIND_COUNT] = {
    [MCA_COLL_INA_ALLREDUCE] = "allreduce",
    [MCA_COLL_INA_REDUCE] = "reduce",
    [MCA_COLL_INA_BCAST] = "bcast",
    [MCA_COLL_INA_BARRIER] = "barrier",
    [MCA_COLL_INA_ALLGATHER] = "allgather",
    [MCA_COLL_INA_REDUCE_SCATTER] = "reduce_scatter",
};

const char *mca_coll_ina_fallback_reason_name(mca_coll_ina_fallback_reason_t reason)
{
    return reason < MCA_COLL_INA_FB_COUNT ? ina_reason_names[reason] : "?";
}

const char *mca_coll_ina_kind_name(mca_coll_ina_kind_t kind)
{
    return kind < MCA_COLL_INA_KIND_COUNT ? ina_kind_names[kind] : "?";
}

void mca_coll_ina_count_fallback(mca_coll_ina_module_t *module, mca_coll_ina_kind_t kind,
                                 mca_coll_ina_fallback_reason_t reason, const char *detail)
{
    ++module->fallback_calls;
    ++module->fallback_by_reason[reason];
    INA_VERBOSE(10, "cid %d: %s on the host (%s: %s)", module->cid,
                mca_coll_ina_kind_name(kind), mca_coll_ina_fallback_reason_name(reason),
                NULL != detail ? detail : "");
}

/* Every slot ina overrides, with the previous provider it saves. */
#define INA_FOREACH_SLOT(X)                                                       \
    X(allreduce) X(reduce) X(bcast) X(barrier) X(allgather)                       \
    X(reduce_scatter_block) X(reduce_scatter)                                     \
    X(iallreduce) X(ireduce) X(ibcast) X(ibarrier) X(iallgather)                  \
    X(ireduce_scatter_block)

static void ina_module_construct(mca_coll_ina_module_t *m)
{
    m->comm = NULL;
    m->rank = m->size = m->cid = -1;
#define INA_CLEAR_PREVIOUS(fn) m->previous_##fn = NULL; m->previous_##fn##_module = NULL;
    INA_FOREACH_SLOT(INA_CLEAR_PREVIOUS)
#undef INA_CLEAR_PREVIOUS
    m->node_of = NULL;
    m->nnodes = 0;
    m->local_ranks = NULL;
    m->nlocal = 0;
    m->node_only = false;
    m->node_uplink = false;
    m->nstreams = 0;
    m->local_index = 0;
    m->nlocal_max = 0;
    m->stream = -1;
    m->numa_of = NULL;
    m->team = NULL;
    m->job_state = MCA_COLL_INA_JOB_NONE;
    m->peers = false;
    m->peer_leader = NULL;
    m->tree_groups = NULL;
    m->tree_levels = 0;
    m->host_names = NULL;
    m->grid_row = m->grid_col = m->grid_local = m->grid_slot = NULL;
    mca_coll_ina_grid_fini(m);
    m->grid_why = "not set up";
    m->grid_reason[0] = '\0';
    m->grid_calls = 0;
    m->grid_none = MCA_COLL_INA_HP_NO_GRID;
    memset(m->host_previous, 0, sizeof(m->host_previous));
    m->peer_sends = m->peer_recvs = NULL;
    m->recovered_calls = 0;
    m->recovered_offloaded = 0;
    m->agent_lost = false;
    m->resume_in = 0;
    m->resume_every = 0;
    m->resumed = 0;
    m->nagents = 0;
    m->nleaves = 0;
    m->leaf = 0;
    m->allgather_unsupported = NULL;
    memset(&m->job_params, 0, sizeof(m->job_params));
    m->offloaded_calls = 0;
    memset(m->offloaded_by_kind, 0, sizeof(m->offloaded_by_kind));
    m->node_only_calls = 0;
    m->fallback_calls = 0;
    memset(m->fallback_by_reason, 0, sizeof(m->fallback_by_reason));
    memset(m->denied_by_status, 0, sizeof(m->denied_by_status));
    m->verdict_wait_ns = 0;
    m->denied_host_ns = 0;
    m->denied_pending = false;
    m->host_cost_due = false;
    m->host_costs_sent = 0;
    m->host_costs_dropped = 0;
    m->call_time_due = false;
    m->call_t0 = 0;
    m->call_times_sent = 0;
    m->call_times_dropped = 0;
    m->in_fallback = 0;
}

/* Leave the communicator's job (or its stripes) and stop answering its
 * recoveries; the team's node stage stays. */
static void ina_job_teardown(mca_coll_ina_module_t *m)
{
    mca_coll_ina_peers_fini(m);
    m->absent = false;
    if (ina_team_joined(m->team)) {
        --mca_coll_ina_component.live_jobs;
    }
    ina_team_leave(m->team);
}

static void ina_module_destruct(mca_coll_ina_module_t *m)
{
    if (mca_coll_ina_component.verbose >= 1 && 0 == m->rank) {
        opal_output(mca_coll_ina_component.output,
                    "coll:ina: communicator cid %d (%d ranks): offloaded %llu (node only %llu; "
                    "allreduce %llu, "
                    "reduce %llu, bcast %llu, barrier %llu, allgather %llu, reduce_scatter %llu), "
                    "fallback %llu (unsupported %llu, below threshold %llu, denied %llu, "
                    "unreachable %llu)",
                    m->cid, m->size, m->offloaded_calls, m->node_only_calls,
                    m->offloaded_by_kind[MCA_COLL_INA_ALLREDUCE],
                    m->offloaded_by_kind[MCA_COLL_INA_REDUCE],
                    m->offloaded_by_kind[MCA_COLL_INA_BCAST],
                    m->offloaded_by_kind[MCA_COLL_INA_BARRIER],
                    m->offloaded_by_kind[MCA_COLL_INA_ALLGATHER],
                    m->offloaded_by_kind[MCA_COLL_INA_REDUCE_SCATTER], m->fallback_calls,
                    m->fallback_by_reason[MCA_COLL_INA_FB_UNSUPPORTED],
                    m->fallback_by_reason[MCA_COLL_INA_FB_THRESHOLD],
                    m->fallback_by_reason[MCA_COLL_INA_FB_DENIED],
                    m->fallback_by_reason[MCA_COLL_INA_FB_UNREACHABLE]);
    }
    mca_coll_ina_comm_detach(m);
    /* Non-blocking calls retain the module, so none is in flight here. */
    ina_job_teardown(m);
    ina_team_destroy(m->team);
    m->team = NULL;
#define INA_RELEASE_PREVIOUS(fn)                                                  \
    if (NULL != m->previous_##fn##_module) {                                      \
        OBJ_RELEASE(m->previous_##fn##_module);                                   \
    }
    INA_FOREACH_SLOT(INA_RELEASE_PREVIOUS)
#undef INA_RELEASE_PREVIOUS
    free(m->node_of);
    m->node_of = NULL;
    free(m->tree_groups);
    m->tree_groups = NULL;
    mca_coll_ina_host_names_free(m);
    mca_coll_ina_grid_fini(m);
    free(m->local_ranks);
    m->local_ranks = NULL;
    free(m->numa_of);
    m->numa_of = NULL;
}

OBJ_CLASS_INSTANCE(mca_coll_ina_module_t, mca_coll_base_module_t,
                   ina_module_construct, ina_module_destruct);

int mca_coll_ina_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    /* The engine serves one caller at a time; concurrent collectives on
     * different communicators could interleave inside it, so offload is
     * off under MPI_THREAD_MULTIPLE (every call falls back). */
    mca_coll_ina_component.thread_multiple = enable_mpi_threads;
    /* Here, not at open: Open MPI 5.0 opens the coll framework before it
     * builds the predefined datatypes (the pairs' extents read 0 then). */
    mca_coll_ina_dtype_init();
    if (mca_coll_ina_component.explicitly_selected) {
        /* Failure is reported there; the base then reports the missing
         * collectives itself. */
        (void) mca_coll_ina_host_components(enable_progress_threads, enable_mpi_threads);
    }
    return OMPI_SUCCESS;
}

static int ina_layout_setup(mca_coll_ina_module_t *m);
static int ina_job_setup(mca_coll_ina_module_t *m);

int mca_coll_ina_job_reopen(mca_coll_ina_module_t *m)
{
    int rc;

    ina_job_teardown(m);
    m->job_state = MCA_COLL_INA_JOB_NONE;
    /* The next epoch of the same key; the node stage's streams go to the
     * new job as the team joins it (no call in flight). */
    rc = ina_job_setup(m);
    mca_coll_ina_host_names_free(m); /* looked up again for the plan */
    return rc;
}

void mca_coll_ina_job_withdraw(mca_coll_ina_module_t *m)
{
    ina_job_teardown(m);
}

/* Save the lower-priority provider of one collective and retain its module. */
#define INA_SAVE_PREVIOUS(fn)                                                    \
    if (NULL == comm->c_coll->coll_##fn || NULL == comm->c_coll->coll_##fn##_module) { \
        INA_VERBOSE(1, "no underlying " #fn " on communicator cid %d: not enabling", \
                    m->cid);                                                     \
        return OMPI_ERROR;                                                       \
    }                                                                            \
    m->previous_##fn = comm->c_coll->coll_##fn;                                  \
    m->previous_##fn##_module = comm->c_coll->coll_##fn##_module;                \
    OBJ_RETAIN(m->previous_##fn##_module);

static int ina_module_enable(mca_coll_base_module_t *module, ompi_communicator_t *comm)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    int rc;

    m->comm = comm;
    m->rank = ompi_comm_rank(comm);
    m->size = ompi_comm_size(comm);
    m->cid = ina_compat_local_cid(comm);

    /* All or nothing: a failure leaves what was retained to the destructor,
     * which runs when the base releases the module. */
    INA_FOREACH_SLOT(INA_SAVE_PREVIOUS)

    /* Local and identical on every member: no communication. */
    rc = ina_layout_setup(m);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }

    /* Every member on this node: the node stage is the whole collective,
     * no job at the agent. On several nodes: the node stage, then the agent in
     * streams. Decided from the layout, so alike on every member. */
    m->node_only = 1 == m->nnodes && mca_coll_ina_component.node_stage &&
                   !mca_coll_ina_component.thread_multiple;
    m->node_uplink = m->nnodes > 1 && mca_coll_ina_component.node_stage &&
                     !mca_coll_ina_component.thread_multiple;

    if (mca_coll_ina_component.thread_multiple) {
        /* Every call falls back (see init_query): no agent, no job, and no
         * engine use from concurrent communicator creations. */
        m->job_state = MCA_COLL_INA_JOB_DISABLED;
    } else if (m->node_only) {
        /* The world on one node: no communicator of this job will need the
         * agent, so none is started or connected. The node group is opened
         * at the first call, without communication here. */
        m->job_state = MCA_COLL_INA_JOB_DISABLED;
        INA_VERBOSE(10, "cid %d: %d ranks on this node only: node stage, no agent job",
                    m->cid, m->size);
        rc = mca_coll_ina_team_make(m);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    } else {
        rc = mca_coll_ina_agent_setup(m);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        /* Opened here, by key, without waiting for the other members (no
         * collective: MPI_Comm_idup activates communicators from the
         * progress engine, in any order on each rank). */
        rc = ina_job_setup(m);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    /* The hosts' own grid, for the calls the agents do not take (the
     * topology file is read by the agent's set-up, above). */
    mca_coll_ina_grid_setup(m);
    mca_coll_ina_host_names_free(m);
    /* Enabled: findable from the communicator for the counters, whatever
     * component ends up above ina in its slots. */
    mca_coll_ina_comm_attach(m);
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_ina_comm_query(ompi_communicator_t *comm, int *priority)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    mca_coll_ina_module_t *m;

    if (!c->enable && !c->explicitly_selected) {
        INA_VERBOSE(20, "not asked for (coll_ina_enable=0 and the coll selection "
                        "does not name ina): declining %s", comm->c_name);
        return NULL;
    }
    if (OMPI_COMM_IS_INTER(comm)) {
        /* A job is one group reducing into itself; an intercommunicator's
         * results come from the remote group. Its collectives stay with the
         * components below (inter, basic and libnbc, hosted with ina alone),
         * which call the local groups' collectives, where ina may offload. */
        INA_VERBOSE(20, "declining cid %d (%s): an intercommunicator (offload is for "
                        "intracommunicators)", ina_compat_local_cid(comm), comm->c_name);
        return NULL;
    }
    if (c->priority < 0 || ompi_comm_size(comm) < 2) {
        INA_VERBOSE(20, "declining %s (single rank or priority < 0)", comm->c_name);
        return NULL;
    }
    m = OBJ_NEW(mca_coll_ina_module_t);
    if (NULL == m) {
        return NULL;
    }
    m->super.coll_module_enable = ina_module_enable;
    m->super.coll_allreduce = mca_coll_ina_allreduce;
    m->super.coll_reduce = mca_coll_ina_reduce;
    m->super.coll_bcast = mca_coll_ina_bcast;
    m->super.coll_barrier = mca_coll_ina_barrier;
    m->super.coll_allgather = mca_coll_ina_allgather;
    m->super.coll_reduce_scatter_block = mca_coll_ina_reduce_scatter_block;
    m->super.coll_reduce_scatter = mca_coll_ina_reduce_scatter;
    m->super.coll_iallreduce = mca_coll_ina_iallreduce;
    m->super.coll_ireduce = mca_coll_ina_ireduce;
    m->super.coll_ibcast = mca_coll_ina_ibcast;
    m->super.coll_ibarrier = mca_coll_ina_ibarrier;
    m->super.coll_iallgather = mca_coll_ina_iallgather;
    m->super.coll_ireduce_scatter_block = mca_coll_ina_ireduce_scatter_block;
    m->super.coll_allreduce_init = mca_coll_ina_allreduce_init;
    m->super.coll_reduce_init = mca_coll_ina_reduce_init;
    m->super.coll_bcast_init = mca_coll_ina_bcast_init;
    m->super.coll_barrier_init = mca_coll_ina_barrier_init;
    m->super.coll_allgather_init = mca_coll_ina_allgather_init;
    m->super.coll_reduce_scatter_block_init = mca_coll_ina_reduce_scatter_block_init;
    *priority = c->priority;
    return &m->super;
}

/* ---- node layout ------------------------------------------------------ */

/* Which node member `rank` of `comm` is on, as a raw key for
 * ina_layout_number. What is used, in order:
 *  1. coll_ina_test_node_size = K > 0 (tests only): world rank / K, the
 *     world rank being the proc's rank in its own job (its vpid);
 *  2. Open MPI's node id of the proc: the runtime's PMIx node id (the
 *     id Open MPI's own topo/treematch groups procs by). It is job-level
 *     data the runtime hands every process at startup, so it is read from
 *     the local store (ina_compat_get_u32), never a round trip to the
 *     server, never a collective;
 *  3. without a node id, locality relative to this process
 *     (OPAL_PROC_ON_LOCAL_NODE of the proc's flags, what MPI_COMM_TYPE_SHARED
 *     uses): a proc on this node shares this process's key, any other proc is
 *     put on a node of its own. Then each rank knows its own node right but
 *     ranks may disagree on how the remote procs group (a runtime without
 *     node ids is not expected with mpirun, ORTE's or PRRTE's).
 * Host names are not used: they need not be unique or consistent. */
static uint64_t ina_member_node_key(ompi_communicator_t *comm, int rank, int my_rank,
                                    uint64_t my_key, bool *from_runtime)
{
    opal_process_name_t name = ompi_group_get_proc_name(comm->c_local_group, rank);
    uint32_t nodeid = 0;
    ompi_proc_t *proc;
    uint64_t key;

    *from_runtime = false;
    if (0 == ina_layout_test_key(mca_coll_ina_component.test_node_size, name.vpid, &key)) {
        return key;
    }
    if (ina_compat_get_u32(INA_KEY_NODEID, &name, &nodeid)) {
        *from_runtime = true;
        return ina_layout_key(INA_LAYOUT_KEY_NODEID, nodeid);
    }
    if (rank == my_rank) {
        return my_key;
    }
    /* Open MPI creates the procs of this node at MPI_Init: one that does
     * not exist yet is remote. */
    proc = ompi_group_peer_lookup_existing(comm->c_local_group, rank);
    if (NULL != proc && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)) {
        return my_key;
    }
    return ina_layout_key(INA_LAYOUT_KEY_ALONE, (uint32_t) rank);
}

/* Where the members on this node sit (Open MPI's locality of each proc,
 * or the test override for packages): the stream leaders spread over the
 * packages, and the NUMA node of each local rank for the placement of the
 * node segment (none if no local rank is bound to one). */
static int ina_locality_setup(mca_coll_ina_module_t *m)
{
    int *package = malloc(sizeof(*package) * (size_t) m->nlocal);
    int i, j, leaders[MCA_COLL_INA_MAX_STREAMS], numa_known = 0;

    m->numa_of = malloc(sizeof(*m->numa_of) * (size_t) m->nlocal);
    if (NULL == package || NULL == m->numa_of) {
        free(package);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (i = 0; i < m->nlocal; ++i) {
        opal_process_name_t name = ompi_group_get_proc_name(m->comm->c_local_group,
                                                            m->local_ranks[i]);
        char *loc = NULL;
        (void) ina_compat_get_string(INA_KEY_LOCALITY, &name, &loc);
        package[i] = mca_coll_ina_component.test_package_size > 0
                         ? i / mca_coll_ina_component.test_package_size
                         : ina_layout_locality_index(loc, "SK");
        m->numa_of[i] = ina_layout_locality_index(loc, "NM");
        numa_known += m->numa_of[i] >= 0;
        free(loc);
    }
    if (0 == numa_known) {
        free(m->numa_of);
        m->numa_of = NULL;
    }
    ina_layout_stream_leaders(package, m->nlocal, m->nstreams, leaders);
    free(package);
    m->stream = -1;
    for (j = 0; j < m->nstreams; ++j) {
        m->leaders[j] = (uint32_t) leaders[j];
        m->stream = leaders[j] == m->local_index ? j : m->stream;
    }
    return OMPI_SUCCESS;
}

/* The node layout of the module's communicator (see the module struct). */
static int ina_layout_setup(mca_coll_ina_module_t *m)
{
    uint64_t *keys, my_key;
    int i, fewest = 0, from_runtime = 0;
    bool runtime;

    keys = malloc(sizeof(*keys) * (size_t) m->size);
    m->node_of = malloc(sizeof(*m->node_of) * (size_t) m->size);
    m->local_ranks = malloc(sizeof(*m->local_ranks) * (size_t) m->size);
    if (NULL == keys || NULL == m->node_of || NULL == m->local_ranks) {
        free(keys);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* This process's key first: its local peers without a node id share it. */
    my_key = ina_member_node_key(m->comm, m->rank, m->rank,
                                 ina_layout_key(INA_LAYOUT_KEY_ALONE, (uint32_t) m->rank),
                                 &runtime);
    for (i = 0; i < m->size; ++i) {
        keys[i] = i == m->rank ? my_key
                               : ina_member_node_key(m->comm, i, m->rank, my_key, &runtime);
        from_runtime += runtime;
    }
    m->nnodes = ina_layout_number(keys, m->size, m->node_of);
    free(keys);
    if (m->nnodes < 0) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    m->nlocal = ina_layout_local_ranks(m->node_of, m->size, m->rank, m->local_ranks);
    for (i = 0; i < m->nlocal; ++i) {
        if (m->local_ranks[i] == m->rank) {
            m->local_index = i;
        }
    }
    ina_layout_node_sizes(m->node_of, m->size, m->nnodes, &fewest, &m->nlocal_max);
    m->nstreams = fewest < MCA_COLL_INA_MAX_STREAMS ? fewest : MCA_COLL_INA_MAX_STREAMS;
    if (mca_coll_ina_component.node_streams > 0 &&
        mca_coll_ina_component.node_streams < m->nstreams) {
        m->nstreams = mca_coll_ina_component.node_streams;
    }
    INA_VERBOSE(10, "cid %d rank %d: %d ranks on %d nodes, %d on mine (node ids from %s)",
                m->cid, m->rank, m->size, m->nnodes, m->nlocal,
                mca_coll_ina_component.test_node_size > 0 ? "coll_ina_test_node_size"
                : from_runtime == m->size ? "the runtime"
                : "the runtime and locality");
    if (OMPI_SUCCESS != ina_locality_setup(m)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (m->nnodes > 1 && 0 == m->local_index) {
        char list[MCA_COLL_INA_MAX_STREAMS * 4 + 1] = "";
        size_t used = 0;
        for (i = 0; i < m->nstreams && used < sizeof(list); ++i) {
            used += (size_t) snprintf(list + used, sizeof(list) - used, "%s%u",
                                      0 == i ? "" : ",", m->leaders[i]);
        }
        INA_VERBOSE(10, "cid %d node %u: stream leaders (local ranks) %s", m->cid,
                    m->node_of[m->rank], list);
    }
    return OMPI_SUCCESS;
}

const int *mca_coll_ina_local_ranks(const mca_coll_ina_module_t *module, int *n)
{
    *n = module->nlocal;
    return module->local_ranks;
}

/* ---- job setup --------------------------------------------------------- */

/* The part of the communicator's job key every member computes alike from
 * what Open MPI knows, without communicating (docs/HIERARCHY.md, "Job
 * setup without a collective at enable"):
 *  - the launch (ina_compat_launch_name) when every member was started by
 *    this process's mpirun, so that two mpirun invocations sharing an
 *    agent never meet, even with equal job ids; members of several
 *    launches (MPI_Comm_connect) rely on their job ids alone;
 *  - the context id all members agree on (ina_compat_comm_gid) and every
 *    member's name (job id, rank in its job), in rank order: disjoint
 *    splits share a context id;
 *  - an epoch: how many communicators with this context id and these
 *    members this process enabled before (a context id is reused after a
 *    free, and the old job may still be leaving at the agent). Every member
 *    took part in each of them, so the count is alike. */
static void ina_job_key_base(mca_coll_ina_module_t *m, ina_job_key_t *key)
{
    static const char tag[] = "ina job key 1";
    const char *launcher = ina_compat_launch_name();
    const uint32_t my_launch = ina_compat_launch_of(OMPI_PROC_MY_NAME);
    const ina_comm_gid_t gid = ina_compat_comm_gid(m->comm);
    uint32_t size = (uint32_t) m->size, epoch = 0, len;
    void *count = NULL;
    int r;

    for (r = 0; r < m->size && NULL != launcher; ++r) {
        opal_process_name_t name = ompi_group_get_proc_name(m->comm->c_local_group, r);
        if (ina_compat_launch_of(&name) != my_launch) {
            launcher = NULL;
        }
    }
    ina_job_key_init(key);
    ina_job_key_add(key, tag, sizeof(tag));
    /* The job's secret too: a key nobody outside the MPI job can compute
     * names no job a foreign opener could find (its capability, sealed
     * with the same secret, is what the agent checks). */
    ina_job_key_add(key, mca_coll_ina_component.secret, sizeof(mca_coll_ina_component.secret));
    len = NULL != launcher ? (uint32_t) strlen(launcher) : 0;
    ina_job_key_add(key, &len, sizeof(len));
    ina_job_key_add(key, NULL != launcher ? launcher : "", len);
    ina_job_key_add(key, &gid.base, sizeof(gid.base));
    ina_job_key_add(key, &gid.sub, sizeof(gid.sub));
    ina_job_key_add(key, &size, sizeof(size));
    for (r = 0; r < m->size; ++r) {
        opal_process_name_t name = ompi_group_get_proc_name(m->comm->c_local_group, r);
        ina_job_key_add(key, &name.jobid, sizeof(name.jobid));
        ina_job_key_add(key, &name.vpid, sizeof(name.vpid));
    }
    if (OPAL_SUCCESS == opal_hash_table_get_value_ptr(&mca_coll_ina_component.key_epochs,
                                                      key->bytes, sizeof(key->bytes), &count)) {
        epoch = (uint32_t) (uintptr_t) count;
    }
    (void) opal_hash_table_set_value_ptr(&mca_coll_ina_component.key_epochs, key->bytes,
                                         sizeof(key->bytes), (void *) (uintptr_t) (epoch + 1));
    ina_job_key_add(key, &epoch, sizeof(epoch));
}

void mca_coll_ina_host_of(ompi_communicator_t *comm, int rank, char *host, size_t len)
{
    opal_process_name_t name = ompi_group_get_proc_name(comm->c_local_group, rank);
    const char *list = mca_coll_ina_component.test_hosts;
    char *found = NULL;

    host[0] = '\0';
    if ('\0' != list[0]) {
        /* Entry `vpid` of the comma-separated list. */
        uint32_t i = 0;
        const char *p = list, *end;
        while (i < name.vpid && NULL != (p = strchr(p, ','))) {
            ++p;
            ++i;
        }
        if (NULL != p) {
            end = strchr(p, ',');
            snprintf(host, len, "%.*s", (int) (NULL != end ? (size_t) (end - p) : strlen(p)), p);
        }
        return;
    }
    if (ina_compat_get_string(INA_KEY_HOSTNAME, &name, &found)) {
        snprintf(host, len, "%s", found);
        free(found);
    } else if (rank == ompi_comm_rank(comm)) {
        snprintf(host, len, "%s", opal_process_info.nodename);
    }
}

/* With a topology file: how many leaf agents the members talk to, the
 * tree's levels above them (*levels) and each member's agent at every level
 * in groups (m->size x INA_TOPOLOGY_MAX_LEVELS entries, level-major; level
 * 0 the leaves, numbered in order of their first rank); 0 and a reason in
 * why when the plan fails. The same on every member: the same file, the
 * same host names. */
static uint32_t ina_topology_tree(mca_coll_ina_module_t *m, uint32_t *groups, uint32_t *levels,
                                  char *why, size_t whylen)
{
    const char *const *names = mca_coll_ina_host_names(m);
    uint32_t nleaves = 0;
    int r;

    if (NULL == names) {
        snprintf(why, whylen, "out of memory");
    } else if (INA_OK != ina_topology_plan(mca_coll_ina_component.topo, names,
                                           (uint32_t) m->size, levels, groups, why, whylen)) {
        nleaves = 0;
    } else if (0 == *levels) {
        nleaves = 1;
    } else {
        for (r = 0; r < m->size; ++r) {
            nleaves = groups[r] + 1 > nleaves ? groups[r] + 1 : nleaves;
        }
    }
    return nleaves;
}

const char *const *mca_coll_ina_host_names(mca_coll_ina_module_t *m)
{
    char host[256];
    int r;

    if (NULL != m->host_names) {
        return (const char *const *) m->host_names;
    }
    m->host_names = calloc((size_t) m->size, sizeof(*m->host_names));
    for (r = 0; NULL != m->host_names && r < m->size; ++r) {
        mca_coll_ina_host_of(m->comm, r, host, sizeof(host));
        if (NULL == (m->host_names[r] = strdup(host))) {
            mca_coll_ina_host_names_free(m);
        }
    }
    return (const char *const *) m->host_names;
}

void mca_coll_ina_host_names_free(mca_coll_ina_module_t *m)
{
    int r;

    for (r = 0; NULL != m->host_names && r < m->size; ++r) {
        free(m->host_names[r]);
    }
    free(m->host_names);
    m->host_names = NULL;
}

/* This member's part of a job over several leaf agents (docs/HIERARCHY.md),
 * as its leaf is told it: the leaf's members are its ranks, or with the node
 * uplink its nodes, in communicator order, their node ids renumbered in the
 * leaf (the Node bitmap at each level names that level's children). */
typedef struct ina_leaf_part {
    uint32_t nmembers;  /* members at this leaf */
    uint32_t *nodes;    /* their node ids at this leaf (nmembers entries) */
    uint32_t as;        /* this member's index among them */
    uint32_t comm_as;   /* and in the communicator's terms: rank, or node */
    uint32_t comm_size; /* ranks, or nodes */
} ina_leaf_part_t;

/* Fill `part` from leaf_of (as ina_topology_leaves gave it); NULL, or why
 * the communicator cannot use the tree (alike on every member). */
static const char *ina_leaf_part(mca_coll_ina_module_t *m, const uint32_t *leaf_of,
                                 ina_leaf_part_t *part)
{
    const uint32_t nnodes = (uint32_t) m->nnodes;
    uint32_t *first = malloc(sizeof(*first) * nnodes);  /* node -> its first rank */
    uint32_t *remap = malloc(sizeof(*remap) * nnodes);  /* node -> id at the leaf */
    const char *why = NULL;
    uint32_t r, j, next = 0;

    part->nmembers = 0;
    part->nodes = malloc(sizeof(*part->nodes) * (size_t) m->size);
    if (NULL == first || NULL == remap || NULL == part->nodes) {
        why = "out of memory";
        goto out;
    }
    for (j = 0; j < nnodes; ++j) {
        first[j] = UINT32_MAX;
        remap[j] = UINT32_MAX;
    }
    for (r = 0; r < (uint32_t) m->size; ++r) {
        const uint32_t node = m->node_of[r];
        first[node] = UINT32_MAX == first[node] ? r : first[node];
        if (m->node_uplink && leaf_of[r] != leaf_of[first[node]]) {
            /* A node's one partial goes to one leaf. */
            why = "the ranks of one node talk to different leaf agents (the topology's host "
                  "names disagree with the node layout)";
            goto out;
        }
    }
    if (m->node_uplink) {
        part->comm_as = m->node_of[m->rank];
        part->comm_size = nnodes;
        for (j = 0; j < nnodes; ++j) {
            if (leaf_of[first[j]] == m->leaf) {
                part->as = j == part->comm_as ? part->nmembers : part->as;
                part->nodes[part->nmembers] = part->nmembers;
                ++part->nmembers;
            }
        }
    } else {
        part->comm_as = (uint32_t) m->rank;
        part->comm_size = (uint32_t) m->size;
        for (r = 0; r < (uint32_t) m->size; ++r) {
            if (leaf_of[r] == m->leaf) {
                const uint32_t node = m->node_of[r];
                remap[node] = UINT32_MAX == remap[node] ? next++ : remap[node];
                part->as = r == part->comm_as ? part->nmembers : part->as;
                part->nodes[part->nmembers++] = remap[node];
            }
        }
    }
out:
    free(first);
    free(remap);
    if (NULL != why) {
        free(part->nodes);
        part->nodes = NULL;
    }
    return why;
}

/* With a topology file: which leaf agents serve the communicator (m->nleaves,
 * m->leaf) and, over several, this member's part (ina_leaf_part). False when
 * the communicator must run the host algorithms (alike on every member:
 * the same file, the same host names). */
static bool ina_tree_setup(mca_coll_ina_module_t *m, ina_leaf_part_t *part)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    uint32_t *groups = malloc(sizeof(*groups) * (size_t) m->size * INA_TOPOLOGY_MAX_LEVELS);
    const char *bad = NULL;
    char why[256] = "";
    uint32_t levels = 0, l;
    int r;

    free(m->tree_groups); /* an earlier setup's (offload resuming) */
    m->tree_groups = NULL;
    m->tree_levels = 0;
    m->nleaves = NULL != groups ? ina_topology_tree(m, groups, &levels, why, sizeof(why)) : 0;
    if (NULL == groups) {
        snprintf(why, sizeof(why), "out of memory");
    }
    if (m->nleaves > 1) {
        m->leaf = groups[m->rank];
        /* recovery reduces as the tree does (ina_job_set_groups) */
        m->tree_groups = groups;
        m->tree_levels = levels;
        ina_topology_place(groups, (uint32_t) m->size, levels, (uint32_t) m->rank,
                           m->tree_place);
        bad = ina_leaf_part(m, groups, part);
        if (NULL != bad) {
            snprintf(why, sizeof(why), "%s", bad);
        }
        /* Agents are numbered by first rank at every level: each one's ranks
         * are consecutive exactly when the numbers never go down. An
         * allgather's agent sends up the one range its members placed. */
        for (l = 0; l < levels; ++l) {
            for (r = 1; NULL == bad && r < m->size; ++r) {
                const uint32_t *g = groups + (size_t) l * (size_t) m->size;
                if (g[r] < g[r - 1]) {
                    m->allgather_unsupported = "the ranks of an agent of the tree are not "
                                               "consecutive (a tree's allgather needs them in "
                                               "one run)";
                }
            }
        }
    }
    if (m->tree_groups != groups) {
        free(groups);
    }
    if (0 == m->nleaves || NULL != bad) {
        INA_VERBOSE(5, "cid %d: host algorithms for this communicator (topology %s): %s",
                    m->cid, c->topology, why);
        m->nleaves = 0;
        return false;
    }
    if (m->nleaves > 1) {
        INA_VERBOSE(10, "cid %d: a tree of %u leaf agents, %u level%s up to its top; this "
                        "rank's leaf %u has %u of the %u %s%s",
                    m->cid, m->nleaves, m->tree_levels, 1 == m->tree_levels ? "" : "s",
                    m->leaf, part->nmembers, part->comm_size,
                    m->node_uplink ? "nodes" : "ranks",
                    NULL != m->allgather_unsupported ? "; allgather on the host" : "");
    }
    return true;
}

/* No job of `key` here, though other members may have one: the agent
 * denies their calls (the job never gets this member) and this rank runs
 * every call on the host; should their agent be lost, they ask every
 * member about their call, and this rank must answer. */
static void ina_job_absent(mca_coll_ina_module_t *m, const ina_job_key_t *key)
{
    ina_team_join_t join;

    memset(&join, 0, sizeof(join));
    join.mask = INA_TEAM_ABSENT;
    join.absent_key = *key;
    join.block_bytes = m->job_params.block_bytes;
    m->absent = true;
    mca_coll_ina_peers_join(m, &join);
    (void) ina_team_join(m->team, &join);
}

/* A rank that leads no stream: its team talks to no job, yet its node
 * stage cuts calls into agent blocks alike on every rank; recovery only to
 * drop what the leaders of other nodes send. */
static void ina_job_none(mca_coll_ina_module_t *m)
{
    ina_team_join_t join;

    memset(&join, 0, sizeof(join));
    join.block_bytes = m->job_params.block_bytes;
    mca_coll_ina_peers_join(m, &join);
    (void) ina_team_join(m->team, &join);
}

/* Open this rank's job at the agent, by key: flat, the communicator's job
 * (one member per rank), at each of the agents it is striped over; with the
 * node uplink, the job of the stream this rank leads (one member per node),
 * stream j at agent j mod A; over several leaf agents, this rank's leaf's
 * part of it (the leaf opens the rest at its parent). No rank waits for
 * another: the agent holds a call until every member opened the job, and
 * denies it on every member if one never does. */
static int ina_job_setup(mca_coll_ina_module_t *m)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    ina_client_t *clients[MCA_COLL_INA_MAX_AGENTS], *client;
    ina_job_key_t key;
    ina_leaf_part_t part = {0};
    ina_team_join_t join;
    uint32_t stream = UINT32_MAX, as = (uint32_t) m->rank, *nodes = m->node_of;
    uint32_t nmembers = (uint32_t) m->size, block = 0, nagents = 0;
    ina_status_t rc;
    int j;

    for (j = 0; j < m->size; ++j) {
        /* The capability's secret is the MPI job's (ORTE's per-job key, or
         * WORLD rank 0's): members of other jobs (MPI_Comm_spawn,
         * MPI_Comm_connect, then merged) share none with this process. Alike
         * on every member: the same group. */
        opal_process_name_t name = ompi_group_get_proc_name(m->comm->c_local_group, j);
        if (name.jobid != OMPI_PROC_MY_NAME->jobid || !c->secret_known) {
            INA_VERBOSE(5, "cid %d: host algorithms for this communicator: %s", m->cid,
                        !c->secret_known ? "no secret to seal its job with"
                                         : "its members come from several MPI jobs, which "
                                           "share no secret to seal its job with");
            m->job_state = MCA_COLL_INA_JOB_DISABLED;
            return OMPI_SUCCESS;
        }
    }
    ina_job_key_base(m, &key);
    if (NULL != c->topo && !ina_tree_setup(m, &part)) {
        m->job_state = MCA_COLL_INA_JOB_DISABLED;
        return OMPI_SUCCESS;
    }
    m->nleaves = NULL != c->topo ? m->nleaves : 1;
    m->job_state = MCA_COLL_INA_JOB_READY;
    if (m->node_uplink && c->nagents > 1 && 1 == m->nlocal_max) {
        /* Striped, one rank per node: the node stage would carry every
         * node's data in one stream to one agent; the flat job spreads
         * each call over all of them (alike on every member: the layout). */
        m->node_uplink = false;
        INA_VERBOSE(10, "cid %d: one rank per node and %u striped agents: no node stage",
                    m->cid, c->nagents);
    }
    if (OMPI_SUCCESS != mca_coll_ina_team_make(m)) {
        free(part.nodes);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    m->nagents = !m->node_uplink || c->nagents < (uint32_t) m->nstreams ? c->nagents
                                                                       : (uint32_t) m->nstreams;
    if (m->node_uplink) {
        /* Every rank of a node cuts the node's part in blocks of this size,
         * leaders or not: it comes from the parameters alone, never from the
         * agent (which only the leaders talk to). */
        int asked = c->block_size < (int) INA_PROTO_MAX_SEG_BYTES ? c->block_size
                                                                  : (int) INA_PROTO_MAX_SEG_BYTES;
        block = (uint32_t) (asked > 16 ? asked : 16) & ~15u;
        m->job_params.block_bytes = block;
        m->job_params.nmembers = (uint32_t) m->nnodes;
        if (m->stream < 0) {
            free(part.nodes);
            ina_job_none(m); /* never talks to the agent */
            return OMPI_SUCCESS;
        }
        stream = (uint32_t) m->stream;
        as = m->node_of[m->rank];
        nmembers = (uint32_t) m->nnodes;
    }
    ina_job_key_add(&key, &stream, sizeof(stream));
    ina_job_key_seal(&key, c->secret);

    if ((int) OMPI_PROC_MY_NAME->vpid != c->test_no_job) {
        nagents = mca_coll_ina_clients(clients);
    }
    client = 0 != nagents ? clients[m->node_uplink ? stream % nagents : 0] : NULL;
    if (NULL == client) {
        /* Flat: this rank falls back on its own; the others' calls are
         * denied by the agent (the job never completes). Node uplink: the
         * stream's verdict is "unreachable" for every call on this node. */
        m->job_state = m->node_uplink ? MCA_COLL_INA_JOB_READY : MCA_COLL_INA_JOB_DISABLED;
        m->nleaves = 0;
        m->nagents = 0;
        free(part.nodes);
        ina_job_absent(m, &key);
        return OMPI_SUCCESS;
    }
    if (m->node_uplink) {
        if (m->nleaves <= 1) {
            nodes = malloc(sizeof(*nodes) * nmembers);
            if (NULL == nodes) {
                return OMPI_ERR_OUT_OF_RESOURCE;
            }
            for (j = 0; j < (int) nmembers; ++j) {
                nodes[j] = (uint32_t) j;
            }
        }
    }
    /* Striped over several agents (flat communicators only), or this
     * rank's job at one agent: the team opens it. */
    const bool striped = nagents > 1 && !m->node_uplink;
    ina_job_open_params_t op = {
        .mask = INA_JOB_OPEN_SHAPE,
        .key = &key,
        .nmembers = nmembers,
        .node_of_member = nodes,
        .rank = as,
        .window = (uint32_t) c->window,
        .block_bytes = 0 != block ? block : (uint32_t) c->block_size,
    };
    if (m->nleaves > 1) { /* this leaf's members, placed in the communicator */
        op.mask |= INA_JOB_OPEN_TREE;
        op.nmembers = part.nmembers;
        op.node_of_member = part.nodes;
        op.rank = part.as;
        op.leaf = m->tree_place[0].group; /* among the leaves under its parent */
        op.nleaves = m->tree_place[0].groups;
        op.above = m->tree_place + 1; /* and the places of the agents above */
        op.nabove = m->tree_levels - 1;
        op.comm_rank = part.comm_as;
        op.comm_size = part.comm_size;
    }
    memset(&join, 0, sizeof(join));
    join.mask = INA_TEAM_OPEN;
    join.clients = striped ? clients : &client;
    join.nclients = striped ? nagents : 1;
    join.open = &op;
    join.granted = &m->job_params;
    join.block_bytes = block;
    if (m->nleaves <= 1) {
        /* One agent per job: flat, a member per rank; node uplink, a
         * member per node (its leader of the stream). */
        mca_coll_ina_peers_join(m, &join);
    } else if (NULL != m->tree_groups) {
        /* A tree of agents: the whole communicator recovers together (its
         * ranks, or with the node stage its nodes' leaders of the stream),
         * a rebuilt block reduced as the agents of every level do: each
         * leaf's members in order, then the leaves under each parent, and so
         * on up. Without that order a float result would not be the agents'
         * bits: no recovery then. */
        const uint32_t n = m->node_uplink ? (uint32_t) m->nnodes : (uint32_t) m->size;
        const size_t size = (size_t) m->size;
        uint32_t *group = malloc(sizeof(*group) * (size_t) n * m->tree_levels), r, l;
        if (NULL != group) {
            for (l = 0; l < m->tree_levels; ++l) {
                for (r = 0; r < (uint32_t) m->size; ++r) {
                    group[(size_t) l * n + (m->node_uplink ? m->node_of[r] : r)] =
                        m->tree_groups[(size_t) l * size + r];
                }
            }
            join.mask |= INA_TEAM_GROUPS;
            join.group_of_member = group;
            join.ngroups = n;
            join.group_levels = m->tree_levels;
            mca_coll_ina_peers_join(m, &join);
        }
    }
    rc = ina_team_join(m->team, &join);
    free((void *) join.group_of_member);
    if (nodes != m->node_of) {
        free(nodes);
    }
    free(part.nodes);
    if (INA_OK != rc) {
        mca_coll_ina_peers_fini(m); /* set up for the job that did not open */
        if (INA_ERR_INVALID == rc && m->node_uplink) {
            /* The agent's Segs are smaller than the node stage's blocks
             * (the team said so at verbose level 1): alike on every leader
             * of the stream (the same agent); a stream without its job is
             * unreachable for every call, so every rank falls back alike. */
            m->job_params.block_bytes = block;
            return OMPI_SUCCESS;
        }
        m->job_params.block_bytes = block;
        m->job_params.nmembers = m->node_uplink ? nmembers : 0;
        m->job_state = m->node_uplink ? MCA_COLL_INA_JOB_READY : MCA_COLL_INA_JOB_DISABLED;
        INA_VERBOSE(5, "cid %d rank %d: opening the job at the agent failed (rc %d): host "
                       "algorithms for this communicator", m->cid, m->rank, rc);
        ina_job_absent(m, &key);
        return OMPI_SUCCESS;
    }
    ++c->live_jobs;
    INA_VERBOSE(10, "cid %d: opened job %u as member %u (window %u, block %u bytes, "
                    "%u members%s%s%s)",
                m->cid, m->job_params.jid, m->nleaves > 1 ? part.comm_as : as,
                m->job_params.window, m->job_params.block_bytes, m->job_params.nmembers,
                m->node_uplink ? ", one per node: node stage uplink" : "",
                m->nleaves > 1 ? ", over a tree of agents" : "",
                striped ? ", striped over several agents" : "");
    return OMPI_SUCCESS;
}

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * coll/ina: in-network aggregation for Open MPI 4.1 collectives.
 *
 * The component offloads MPI_Allreduce, Reduce, Bcast, Barrier, Allgather,
 * Reduce_scatter_block, Reduce_scatter and the non-blocking Iallreduce,
 * Ireduce, Iallgather, Ibarrier, Ibcast to an aggregation agent
 * (ina-switchd) through the client engine (ina_client.h), and falls back per
 * call to the collective it replaced for everything else.
 * With `--mca coll ina` alone it also hosts Open MPI's own `basic`,
 * `libnbc` and `inter` components so that every MPI collective still has an
 * implementation, on intercommunicators too (coll_ina_host.c).
 */
#ifndef MCA_COLL_INA_H
#define MCA_COLL_INA_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stdint.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/mca/coll/coll.h"
#include "opal/mca/mca.h"
#include "ompi/request/request.h"
#include "opal/class/opal_free_list.h"
#include "opal/class/opal_hash_table.h"
#include <time.h>

#include "opal/class/opal_list.h"

#include "coll_ina_compat.h"
#include "ina_client.h"
#include "ina_node.h"
#include "ina_team.h"

BEGIN_C_DECLS

/* Why a call was not offloaded; one fallback counter (and pvar) each. */
typedef enum mca_coll_ina_fallback_reason {
    MCA_COLL_INA_FB_UNSUPPORTED = 0, /* type, op or layout the agent cannot take */
    MCA_COLL_INA_FB_THRESHOLD,       /* fewer bytes than coll_ina_min_bytes */
    MCA_COLL_INA_FB_DENIED,          /* the agent denied the call (scheduler) */
    MCA_COLL_INA_FB_UNREACHABLE,     /* no agent / no job on this communicator */
    MCA_COLL_INA_FB_COUNT
} mca_coll_ina_fallback_reason_t;

/* coll_ina_host: what runs a call the agents do not take. */
typedef enum mca_coll_ina_host_mode {
    MCA_COLL_INA_HOST_AUTO = 0, /* the grid's rings where the topology file describes a
                                   grid under the communicator and the call is at least
                                   coll_ina_grid_min_bytes, else the previous component */
    MCA_COLL_INA_HOST_GRID,     /* the grid's rings for every call they can take */
    MCA_COLL_INA_HOST_PREVIOUS  /* the algorithm ina replaced, always */
} mca_coll_ina_host_mode_t;

/* Why a call the agents did not take ran the previous component's
 * algorithm rather than the grid's rings (coll_ina_grid.c); one counter
 * (and pvar, host_previous_*) each. */
typedef enum mca_coll_ina_host_reason {
    MCA_COLL_INA_HP_NO_GRID = 0, /* no grid under the communicator: coll_ina_host=previous,
                                    none described, a host off it, one node */
    MCA_COLL_INA_HP_PARTIAL,     /* the ranks cover part of a group of the grid, or leave
                                    a group of their rectangle empty */
    MCA_COLL_INA_HP_UNEQUAL,     /* a per-rank or rooted collective, on nodes holding
                                    unequal numbers of ranks */
    MCA_COLL_INA_HP_LAYOUT,      /* a datatype not one run of elements from its start, or
                                    an op that is not commutative */
    MCA_COLL_INA_HP_SMALL,       /* below coll_ina_grid_min_bytes (coll_ina_host=auto) */
    MCA_COLL_INA_HP_THREADS,     /* a non-blocking call under MPI_THREAD_MULTIPLE */
    MCA_COLL_INA_HP_COUNT
} mca_coll_ina_host_reason_t;

/* The collectives ina offloads, for the per-collective counters; a
 * non-blocking form counts with its blocking one. */
typedef enum mca_coll_ina_kind {
    MCA_COLL_INA_ALLREDUCE = 0,
    MCA_COLL_INA_REDUCE,
    MCA_COLL_INA_BCAST,
    MCA_COLL_INA_BARRIER,
    MCA_COLL_INA_ALLGATHER,
    MCA_COLL_INA_REDUCE_SCATTER, /* Reduce_scatter and Reduce_scatter_block */
    MCA_COLL_INA_KIND_COUNT
} mca_coll_ina_kind_t;

/* Lifecycle of a communicator's job descriptor at the agent. */
typedef enum mca_coll_ina_job_state {
    MCA_COLL_INA_JOB_NONE = 0, /* not set up yet (module enable does it) */
    MCA_COLL_INA_JOB_READY,    /* opened (or, with the node uplink, nothing to open
                                  or a stream that reports itself unreachable):
                                  calls may be offloaded */
    MCA_COLL_INA_JOB_DISABLED  /* this rank has no job: its calls fall back, and the
                                  agent denies the others' (the job never completes) */
} mca_coll_ina_job_state_t;

/* A communicator's node stage has two groups, each opened at the first
 * call that needs it: a small one for calls that fit in one small step
 * (barriers, latency-bound calls: most communicators never need more), and
 * the large one (coll_ina_node_segment_bytes) for the rest. Which one a call
 * uses depends only on its size, so it is the same on every rank; each
 * group runs its calls in order. */
/* Most streams from one node to the agent (coll_ina_node_streams). */
#define MCA_COLL_INA_MAX_STREAMS 64
#define MCA_COLL_INA_NODE_SMALL_CHUNK 8192
/* Most agents one job is striped over (coll_ina_agent=HOST:PORT,HOST:PORT,...). */
#define MCA_COLL_INA_MAX_AGENTS 16

/* The node stage's shared-memory group of a communicator. */

typedef struct mca_coll_ina_component_t {
    mca_coll_base_component_t super;

    /* MCA parameters (storage registered with the MCA var system). */
    int priority;
    int verbose;
    bool enable;
    char *agent;          /* "auto", or host:port[,host:port...] (striping) */
    char *topology;       /* the cluster's topology file, or "" */
    char *test_hosts;     /* tests only: host names by world rank, or "" */
    int test_no_job;      /* tests only: this world rank opens no job, or -1 */
    char *agent_path;     /* ina-switchd started when agent is "auto" */
    char *agent_bind;     /* its --bind (core:N, numa:N, ..., none) */
    int agent_segs;
    int block_size;
    int window;
    bool required;
    bool recover;             /* coll_ina_recover: finish calls lost with the agent */
    int resume_interval;      /* coll_ina_resume_interval (0: never resume) */
    int timeout_ms;
    int liveness_ms;          /* coll_ina_liveness_ms: a silent agent is lost after it */
    size_t min_bytes;
    int host;               /* coll_ina_host (mca_coll_ina_host_mode_t) */
    size_t grid_min_bytes;  /* coll_ina_grid_min_bytes */
    bool grid_both_ways;    /* coll_ina_grid_both_ways */
    size_t grid_frag_bytes; /* coll_ina_grid_frag_bytes */
    size_t grid_chunk_bytes; /* coll_ina_grid_chunk_bytes */
    int grid_chunks;         /* coll_ina_grid_chunks */
    int progress_thread;  /* coll_ina_progress_thread: -1 auto (coll_ina_agent.c) */
    int spin_us;          /* coll_ina_spin_us: the engine's and the embedded agent's */
    int rndv_bytes;       /* coll_ina_rndv_bytes */
    char *tenant;         /* coll_ina_tenant (a string: MCA has no 64-bit unsigned type) */
    int test_node_size;   /* tests only: > 0 pretends world ranks [0, K) are node 0, ... */
    int test_proto_lowest, test_proto_highest; /* tests only: the protocol versions offered */
    int test_package_size; /* tests only: > 0 pretends local ranks [0, P) share package 0, ... */
    bool host_cost_hint;  /* coll_ina_host_cost_hint: tell the agent what the calls it
                             denied cost on the hosts (HOST_COST, protocol 16), and
                             what whole calls took (CALL_TIME, protocol 17) */
    size_t call_time_min_bytes; /* coll_ina_call_time_min_bytes */
    bool node_stage;      /* ranks of a node combine in shared memory first (coll_ina_team.c) */
    int node_streams;     /* streams per node to the agent (0: one per rank of the
                             smallest node) */
    size_t node_segment_bytes;
    size_t node_chunk_bytes;
    size_t node_small_bytes;

    int output;           /* opal_output stream, verbosity = verbose */
    bool explicitly_selected; /* the coll selection string names ina */
    bool thread_multiple;     /* engine calls are not serialised across threads */

    /* Process-wide agent connections (one engine per agent and process, for
     * every communicator): one agent, or the agents a job is striped over
     * (docs/HIERARCHY.md, "Striping"), in the order coll_ina_agent names them. */
    char agent_addr[MCA_COLL_INA_MAX_AGENTS][256];
    uint32_t nagents;         /* agent_addr entries; 0: no agent known to this process */
    bool agent_addr_known;    /* agent_addr was resolved (maybe to none) */
    /* The MPI job's secret, sealing every job's capability (coll_ina_component.c,
     * ina_launcher_secret); known from MPI_COMM_WORLD's enable on. */
    uint8_t secret[16];
    bool secret_known;
    int agent_pid;            /* embedded agent started by this process, or -1 */
    ina_client_t *client[MCA_COLL_INA_MAX_AGENTS];
    int agent_alt[MCA_COLL_INA_MAX_AGENTS]; /* which of an entry's "a|b" client[k] is at */
    ina_client_t **retired;   /* connections to agents that were lost (jobs may still
                                 point to them), disconnected at close */
    int nretired;
    ina_topology_t *topo;     /* coll_ina_topology, read at MPI_COMM_WORLD's enable */
    bool connect_tried;
    bool unreachable_warned;
    int live_jobs;            /* joined job descriptors not yet left */
    /* Communicators enabled so far per (launcher, context id, members): the
     * epoch of the job key (coll_ina_module.c, ina_job_key_base). */
    opal_hash_table_t key_epochs;

    /* Non-blocking calls: request objects, and the offloaded calls in
     * flight (every job), completed by the progress callback, which is
     * registered with opal_progress only while this list is not empty. */
    opal_free_list_t requests;
    bool requests_ready;      /* the free list is initialised */
    opal_list_t outstanding;
    opal_list_t completed;    /* mca_coll_ina_progress's, between its walk and completing */
    bool progress_registered;

    /* The module of every communicator ina enabled, by communicator, for
     * the MPI_T pvars (mca_coll_ina_comm_attach); under its lock, as
     * communicators may come and go in several threads. */
    opal_hash_table_t modules;
    opal_mutex_t modules_lock;
} mca_coll_ina_component_t;

OMPI_DECLSPEC extern mca_coll_ina_component_t mca_coll_ina_component;

typedef struct mca_coll_ina_module_t {
    mca_coll_base_module_t super;

    ompi_communicator_t *comm;
    int rank;
    int size;
    int cid;

    /* The previous providers of every slot ina overrides, called for the
     * per-call fallback and for our own agreement collectives; each module
     * is retained (coll/ucc pattern). */
    mca_coll_base_module_allreduce_fn_t previous_allreduce;
    mca_coll_base_module_t *previous_allreduce_module;
    mca_coll_base_module_reduce_fn_t previous_reduce;
    mca_coll_base_module_t *previous_reduce_module;
    mca_coll_base_module_bcast_fn_t previous_bcast;
    mca_coll_base_module_t *previous_bcast_module;
    mca_coll_base_module_barrier_fn_t previous_barrier;
    mca_coll_base_module_t *previous_barrier_module;
    mca_coll_base_module_allgather_fn_t previous_allgather;
    mca_coll_base_module_t *previous_allgather_module;
    mca_coll_base_module_reduce_scatter_block_fn_t previous_reduce_scatter_block;
    mca_coll_base_module_t *previous_reduce_scatter_block_module;
    mca_coll_base_module_reduce_scatter_fn_t previous_reduce_scatter;
    mca_coll_base_module_t *previous_reduce_scatter_module;
    mca_coll_base_module_iallreduce_fn_t previous_iallreduce;
    mca_coll_base_module_t *previous_iallreduce_module;
    mca_coll_base_module_ireduce_fn_t previous_ireduce;
    mca_coll_base_module_t *previous_ireduce_module;
    mca_coll_base_module_ibcast_fn_t previous_ibcast;
    mca_coll_base_module_t *previous_ibcast_module;
    mca_coll_base_module_ibarrier_fn_t previous_ibarrier;
    mca_coll_base_module_t *previous_ibarrier_module;
    mca_coll_base_module_iallgather_fn_t previous_iallgather;
    mca_coll_base_module_t *previous_iallgather_module;
    /* Not ina's slot (it has no MPI_Ireduce_scatter_block): the host form
     * of a persistent reduce-scatter's start that is not offloaded. */
    mca_coll_base_module_ireduce_scatter_block_fn_t previous_ireduce_scatter_block;
    mca_coll_base_module_t *previous_ireduce_scatter_block_module;

    /* Node layout of this communicator, computed by every member at module
     * enable from what Open MPI knows about the procs, without
     * communication (coll_ina_module.c): node_of[r] is member r's dense node
     * id (0..nnodes-1 by first appearance in rank order), local_ranks[] the
     * members on this rank's node in rank order (this rank included). */
    uint32_t *node_of;
    int nnodes;
    int *local_ranks;
    int nlocal;

    /* Node stage (the team's, coll_ina_team.c). node_only: every member is on this node
     * and the node stage is on, so the whole collective runs in shared
     * memory and the communicator has no job at the agent. node_uplink: the
     * members span nodes and the node stage is on: the node's ranks combine
     * in shared memory and nstreams local ranks of every node (the
     * leaders, spread over the node's packages) each carry one stream of
     * the node's part to the agent (one job per stream, with one member per
     * node; the team joins this rank's, none if it leads none). The group
     * is opened at the first call that needs it (every member makes that
     * call: no communication at enable). */
    bool node_only;
    bool node_uplink;
    int nstreams;
    int local_index;  /* this rank's place in local_ranks */
    int nlocal_max;   /* members on the most populated node */
    uint32_t leaders[MCA_COLL_INA_MAX_STREAMS]; /* stream -> local index of its leader */
    int stream;       /* the stream this rank leads, -1 if none */
    int32_t *numa_of; /* local index -> NUMA node it is bound to (-1: unknown);
                         NULL: no placement of the segment */

    /* The engine for this communicator (team/ina_team.h): the node stage,
     * and the job it joined: one agent's job, or the job striped over
     * several agents (flat communicators; with the node uplink, stream j's
     * job is at agent j mod A instead). Every call is one of its tasks. */
    ina_team_t *team;
    mca_coll_ina_job_state_t job_state;
    /* Recovery's point-to-point traffic (coll_ina_recover.c), for a job at
     * one agent: set up with it. */
    bool peers;
    /* This rank got no job of the communicator's key (its agent out of
     * reach, or refusing it) while others may have: its team answers their
     * recoveries with "denied" (INA_TEAM_ABSENT). */
    bool absent;
    struct ina_peer_io *peer_sends, *peer_recvs;
    /* Node uplink: per node, the rank that leads this rank's stream there,
     * learnt from its first recovery message (-1: not yet; a message to
     * the node then goes to each of its ranks, and only the leader takes
     * it). */
    int *peer_leader;
    unsigned long long recovered_calls;
    unsigned long long recovered_offloaded; /* of those: finished from the results and
                                               inputs the members held */
    /* The agent is lost (a call's recovery found nothing anywhere, so every
     * member decided so at the same call): calls run the host algorithms,
     * and every resume_every of them the members check whether offload may
     * resume (coll_ina_recover.c, mca_coll_ina_resume). */
    bool agent_lost;
    uint32_t resume_in, resume_every;
    unsigned long long resumed; /* times offload resumed on this communicator */
    uint32_t nagents; /* agents the job is striped over (1: not striped; 0: no job) */
    ina_job_params_t job_params;
    /* The leaf agents serving the job (1: one agent; more: a tree of agents
     * from coll_ina_topology, docs/HIERARCHY.md; 0: no agent) and this
     * rank's leaf, numbered by first rank. */
    uint32_t nleaves;
    uint32_t leaf;
    /* Over several leaves: the tree's levels above the leaves, each rank's
     * agent at every level (tree_levels x size, level-major, as
     * ina_topology_plan numbers them; else NULL), and this rank's place
     * at each level (ina_topology_place). */
    uint32_t tree_levels;
    uint32_t *tree_groups;
    char **host_names; /* mca_coll_ina_host_names' (m->size), while set up */
    ina_proto_tree_level_t tree_place[INA_TOPOLOGY_MAX_LEVELS];
    /* The hyper-square under this communicator (coll_ina_grid.c): grid_cols x
     * grid_rows nodes (0: none, grid_why says why); this rank's node's leader
     * (its lowest rank); on a leader, the node's other ranks (ascending) and
     * the leaders of its row and column rings in the order of their links,
     * with its own position in each. */
    uint32_t grid_cols, grid_rows;
    int grid_leader;
    int *grid_local;
    int grid_nlocal;
    int *grid_row, *grid_col;
    uint32_t grid_row_pos, grid_col_pos;
    /* Where every rank's block lies in the node-major order of the grid's
     * per-rank collectives (coll_ina_grid_blocks.c): slot (i x rows + j) x
     * grid_per_node + k for the k-th rank of the node at row-ring position i
     * and column-ring position j; NULL when the nodes hold unequal numbers
     * of ranks (those calls then take the previous algorithm). */
    int *grid_slot;
    uint32_t grid_per_node;
    const char *grid_why;
    char grid_reason[256];
    mca_coll_ina_host_reason_t grid_none; /* with grid_why: why no grid, as counted */
    unsigned long long grid_calls; /* calls the grid's rings ran */
    unsigned long long host_previous[MCA_COLL_INA_HP_COUNT]; /* calls not on the grid */
    /* Why MPI_Allgather runs the host algorithm on this communicator
     * whatever the call (a leaf's ranks are not consecutive), or NULL. */
    const char *allgather_unsupported;

    /* Counters (read through MPI_T pvars bound to the communicator). */
    unsigned long long offloaded_calls;
    unsigned long long offloaded_by_kind[MCA_COLL_INA_KIND_COUNT];
    unsigned long long node_only_calls; /* of offloaded_calls: done by the node stage alone */
    unsigned long long fallback_calls;
    unsigned long long fallback_by_reason[MCA_COLL_INA_FB_COUNT];
    /* Sharing the agent (docs/ARCHITECTURE.md, "Sharing an agent among
     * jobs"): denials by the agent's reason (a DENY status), the time calls
     * waited for the agents' verdicts, and the time denied calls then spent
     * in the host algorithm (a non-blocking one: its post only). */
    unsigned long long denied_by_status[INA_PROTO_STATUS_MAX + 1];
    unsigned long long verdict_wait_ns;
    unsigned long long denied_host_ns;
    bool denied_pending; /* the call in hand was denied: time its fallback */
    /* ... and it is blocking: its fallback is the whole host algorithm, whose
     * time the agents that denied it hear (mca_coll_ina_host_cost). */
    bool host_cost_due;
    unsigned long long host_costs_sent;    /* HOST_COSTs this rank sent */
    unsigned long long host_costs_dropped; /* and those it could not send */
    /* The blocking call in hand reached the agents and is large enough for
     * its whole time to be told (CALL_TIME, mca_coll_ina_call_time): from
     * call_t0, its post. */
    bool call_time_due;
    uint64_t call_t0;
    unsigned long long call_times_sent;    /* CALL_TIMEs this rank sent */
    unsigned long long call_times_dropped; /* and those it could not send */

    /* > 0 while a saved collective runs: the collectives it calls on this
     * communicator (basic's allreduce calls comm->c_coll->coll_reduce and
     * coll_bcast, which are ina's) go straight to the saved ones, so that a
     * fallback is the host algorithm alone: it does not ask the agent again
     * (a denied call must not reach it piecewise) and counts once. */
    int in_fallback;
} mca_coll_ina_module_t;

static inline uint64_t mca_coll_ina_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* Tell the agents that denied the call in hand what it cost this rank on
 * the hosts, `ns` (0: nothing, forget the denial), where this rank speaks
 * for their job and coll_ina_host_cost_hint is on (coll_ina_request.c). */
void mca_coll_ina_host_cost(mca_coll_ina_module_t *m, uint64_t ns);
/* Tell the agents the blocking call in hand went to what it took this rank
 * in all, from its post (call_t0) to now (`tell` false: nothing, forget
 * it), where this rank speaks for their job; clears call_time_due. Called
 * where the call was due (call_time_due, set in ina_post), as
 * mca_coll_ina_host_cost. */
void mca_coll_ina_call_time(mca_coll_ina_module_t *m, bool tell);

/* Run the saved provider of slot `fn` with the call's arguments into `rc`,
 * as above (timed when the agent denied the call: denied_host_ns; a
 * blocking one's time goes to the agents that denied it too, then its
 * whole time, CALL_TIME). The flags are taken before the provider runs:
 * the collectives it calls on this communicator come back here, and must
 * not tell this call's times before it ends. */
#define MCA_COLL_INA_CALL_PREVIOUS(rc, m, fn, ...)                                \
    do {                                                                          \
        const bool timed_ = (m)->denied_pending;                                  \
        const bool tell_ = (m)->host_cost_due;                                    \
        const bool whole_ = (m)->call_time_due;                                   \
        const uint64_t t0_ = timed_ ? mca_coll_ina_now_ns() : 0;                  \
        (m)->denied_pending = false;                                              \
        (m)->host_cost_due = false;                                               \
        (m)->call_time_due = false;                                               \
        ++(m)->in_fallback;                                                       \
        (rc) = (m)->previous_##fn(__VA_ARGS__, (m)->previous_##fn##_module);      \
        --(m)->in_fallback;                                                       \
        if (timed_) {                                                             \
            const uint64_t ns_ = mca_coll_ina_now_ns() - t0_;                     \
            (m)->denied_host_ns += ns_;                                           \
            if (tell_) {                                                          \
                mca_coll_ina_host_cost((m), ns_ > 0 ? ns_ : 1);                   \
            }                                                                     \
        }                                                                         \
        if (whole_) {                                                             \
            mca_coll_ina_call_time((m), true);                                    \
        }                                                                         \
    } while (0)
/* The same, returning its result. */
#define MCA_COLL_INA_RETURN_PREVIOUS(m, fn, ...)                                  \
    do {                                                                          \
        int rc_;                                                                  \
        MCA_COLL_INA_CALL_PREVIOUS(rc_, m, fn, __VA_ARGS__);                      \
        return rc_;                                                               \
    } while (0)

OBJ_CLASS_DECLARATION(mca_coll_ina_module_t);

struct mca_coll_ina_plan;

/* A non-blocking collective offloaded to the agent (coll/ucc pattern: an
 * ompi_request_t subclass from a free list), or a persistent request's
 * offloaded start (coll_ina_persistent.c: the same request at every start).
 * While in flight it is on the component's outstanding list (through
 * super's list item, as libnbc does). */
typedef struct mca_coll_ina_req_t {
    /* Open MPI's non-blocking collective request: MPI's bindings keep the
     * application's datatypes and op for the call in its fields
     * (ompi_coll_base_retain_op and _datatypes, which cast every coll
     * component's request to it), so ina's requests extend it. */
    ompi_coll_base_nbc_request_t super;
    /* A persistent request's plan, completed with each offloaded start
     * (mca_coll_ina_plan_complete); NULL for a request of the free list. */
    const struct mca_coll_ina_plan *plan;
    ina_task_t *task;              /* the call, in the team; NULL once done */
    mca_coll_ina_module_t *module; /* retained until completion */
    mca_coll_ina_kind_t kind;      /* for messages */
    bool freed;                    /* MPI_Request_free before completion */
    /* A call on the grid's rings instead of a task (coll_ina_grid.h). */
    struct ina_grid_call *grid;
} mca_coll_ina_req_t;

OBJ_CLASS_DECLARATION(mca_coll_ina_req_t);

#define INA_VERBOSE(level, ...) \
    opal_output_verbose((level), mca_coll_ina_component.output, "coll:ina: " __VA_ARGS__)

/* coll_ina_module.c */
/* The host name of member `rank` of `comm` (coll_ina_test_hosts, or the
 * runtime's), "" if unknown. */
void mca_coll_ina_host_of(ompi_communicator_t *comm, int rank, char *host, size_t len);
/* Every member's host (mca_coll_ina_host_of), looked up once and kept in
 * the module until mca_coll_ina_host_names_free (the topology's plan and
 * its grid both map them); NULL when out of memory. */
const char *const *mca_coll_ina_host_names(mca_coll_ina_module_t *m);
void mca_coll_ina_host_names_free(mca_coll_ina_module_t *m);
int mca_coll_ina_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_ina_comm_query(ompi_communicator_t *comm, int *priority);
/* Count one fallback of this communicator and say why at verbose level 10. */
/* The hyper-square's host algorithms (coll_ina_grid.c). setup at enable:
 * local, alike on every member; fini frees what setup made. takes: whether
 * the grid's rings run this allreduce (a grid under the communicator,
 * coll_ina_host, a commutative op, a contiguous vector, the size). */
void mca_coll_ina_grid_setup(mca_coll_ina_module_t *m);
void mca_coll_ina_grid_fini(mca_coll_ina_module_t *m);
/* Whether the grid's rings run a call the agents do not take: `elems`
 * elements in all (of every rank's blocks for the per-rank and rooted
 * collectives, which need every node to hold as many ranks: `blocks`), a
 * reduction's op (NULL: none), a non-blocking or persistent call
 * (`nonblocking`). If not, the reason is counted (host_previous_*). */
bool mca_coll_ina_grid_takes(mca_coll_ina_module_t *m, int64_t elems,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op, bool blocks,
                             bool nonblocking);
/* The grid's collectives: blocking where request is NULL, else started,
 * with *request set (a persistent request's start uses that too). */
int mca_coll_ina_grid_allgather(mca_coll_ina_module_t *m, const void *sbuf, int scount,
                                struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                struct ompi_datatype_t *rdtype, ompi_request_t **request);
int mca_coll_ina_grid_reduce_scatter_block(mca_coll_ina_module_t *m, const void *sbuf, void *rbuf,
                                           int rcount, struct ompi_datatype_t *dtype,
                                           struct ompi_op_t *op, ompi_request_t **request);
int mca_coll_ina_grid_bcast(mca_coll_ina_module_t *m, void *buf, int count,
                            struct ompi_datatype_t *dtype, int root, ompi_request_t **request);
int mca_coll_ina_grid_reduce(mca_coll_ina_module_t *m, const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                             ompi_request_t **request);
int mca_coll_ina_grid_allreduce(mca_coll_ina_module_t *m, const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                ompi_request_t **request);
/* coll_ina_request.c: a request for a started grid call (coll_ina_grid.h),
 * which the component's progress callback drives to its end; takes g. */
struct ina_grid_call;
int mca_coll_ina_grid_request(struct ina_grid_call *g, ompi_request_t **request);

void mca_coll_ina_count_fallback(mca_coll_ina_module_t *module, mca_coll_ina_kind_t kind,
                                 mca_coll_ina_fallback_reason_t reason, const char *detail);
const char *mca_coll_ina_fallback_reason_name(mca_coll_ina_fallback_reason_t reason);
const char *mca_coll_ina_kind_name(mca_coll_ina_kind_t kind);
/* The members of the module's communicator on this rank's node (this rank
 * included), in rank order: what the node stage reduces among. Known from
 * module enable on; no communication. Sets *n; NULL before enable. */
const int *mca_coll_ina_local_ranks(const mca_coll_ina_module_t *module, int *n);

/* coll_ina_request.c: running one call through the engine, planned from
 * the MPI arguments by its collective's file (mca_coll_ina_*_plan): what
 * blocking, non-blocking and persistent forms share. A persistent request
 * plans once, at *_init, and posts the same plan at every start. */
typedef struct mca_coll_ina_plan {
    mca_coll_ina_kind_t kind;
    ina_coll_desc_t desc;
    size_t bytes;        /* the result vector's bytes (coll_ina_min_bytes) */
    const char *why;     /* NULL, or why no call of this plan is offloaded */
    bool empty;          /* moves nothing: complete at once, on every rank */
    uint64_t *counts;    /* reduce-scatter: every member's part, owned */
    void *part;          /* in-place reduce-scatter: this rank's part, owned, */
    void *part_dst;      /* copied here once an offloaded call completed */
    size_t part_bytes;
    bool reuse;          /* posted many times: keep its task */
    /* A persistent call's task, made at the first start and posted at
     * every start (the engine keeps what it planned: blocks, steps), owned. */
    ina_task_t *task;
    /* The persistent request whose starts post this plan: an offloaded
     * start is that request (none taken from the free list); NULL for a
     * blocking or non-blocking call. */
    mca_coll_ina_req_t *persistent;
} mca_coll_ina_plan_t;
/* Post a planned call. *fallback true: the caller must run the saved
 * collective (the fallback is counted and logged), and the return value is
 * OMPI_SUCCESS. Else the call was handled and the return value is its
 * result, an OMPI code (OMPI_ERROR after a failure it explained with
 * opal_show_help); with `request` not NULL a non-blocking call was started
 * and *request set (blocking calls wait driving opal_progress). A plan with
 * `why` set is not offloaded for that reason; an empty plan completes at
 * once. */
int mca_coll_ina_plan_post(mca_coll_ina_module_t *module, mca_coll_ina_plan_t *plan,
                           ompi_request_t **request, bool *fallback);
/* An offloaded call of the plan completed: put what it left aside in place. */
void mca_coll_ina_plan_complete(const mca_coll_ina_plan_t *plan);
/* Release what the plan owns. */
void mca_coll_ina_plan_fini(mca_coll_ina_plan_t *plan);
/* Each collective's plan (its file). Return an OMPI code: only a failed
 * allocation fails; a call ina cannot offload is a plan with `why` set. */
int mca_coll_ina_allreduce_plan(mca_coll_ina_plan_t *plan, const void *sbuf, void *rbuf,
                                int count, struct ompi_datatype_t *dtype,
                                struct ompi_op_t *op);
int mca_coll_ina_reduce_plan(mca_coll_ina_plan_t *plan, const void *sbuf, void *rbuf,
                             int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             int root, int rank);
int mca_coll_ina_bcast_plan(mca_coll_ina_plan_t *plan, void *buf, int count,
                            struct ompi_datatype_t *dtype, int root);
int mca_coll_ina_barrier_plan(mca_coll_ina_plan_t *plan);
int mca_coll_ina_allgather_plan(mca_coll_ina_plan_t *plan, const mca_coll_ina_module_t *module,
                                const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                void *rbuf, int rcount, struct ompi_datatype_t *rdtype);
int mca_coll_ina_reduce_scatter_block_plan(mca_coll_ina_plan_t *plan,
                                           const mca_coll_ina_module_t *module,
                                           const void *sbuf, void *rbuf, int rcount,
                                           struct ompi_datatype_t *dtype,
                                           struct ompi_op_t *op);
/* The opal_progress callback: completes finished non-blocking calls. */
int mca_coll_ina_progress(void);
/* Release the request machinery (component close). */
void mca_coll_ina_requests_fini(void);
/* Clear what MPI's bindings keep in a request taken from a free list (its
 * constructor ran when the list grew, not at each use). */
void mca_coll_ina_nbc_reset(ompi_coll_base_nbc_request_t *nbc);
/* coll_ina_persistent.c: release its requests' free list. */
void mca_coll_ina_persistent_fini(void);

/* coll_ina_team.c: the communicator's team, made once the layout is
 * known (the node stage's shape from it), at enable or at the job's setup. */
int mca_coll_ina_team_make(mca_coll_ina_module_t *module);

/* coll_ina_recover.c: recovering calls lost with their agent, over MPI's
 * point-to-point layer. Before the team joins the job: whether the
 * communicator recovers (then *join gets the peers' link); teardown
 * before the job is left. */
void mca_coll_ina_peers_join(mca_coll_ina_module_t *m, ina_team_join_t *join);
void mca_coll_ina_peers_fini(mca_coll_ina_module_t *m);
/* Every member decided alike that the communicator's agent is lost: its
 * calls run the host algorithms and offload may resume later. */
void mca_coll_ina_agent_lost(mca_coll_ina_module_t *m);
/* The communicator's agent is lost: whether this call may use an agent
 * again. Counts the call; at a blocking call (`blocking`) once resume_every
 * calls have passed, the members agree (a host allreduce) whether each of
 * them reaches the agent or a standby again and has no call of the lost
 * job in flight; if so the job is opened anew and true returned (alike on
 * every member). */
bool mca_coll_ina_resume(mca_coll_ina_module_t *m, bool blocking);

/* coll_ina_component.c: the process-wide agent connection. */
/* Launch rank 0, as the component opens (Open MPI 5): draw the job's
 * secret if the launcher gave none, start the embedded agent if a
 * communicator of the launch may need it, and put both in the launch's
 * key-value store for the other processes (coll_ina_compat.h). */
void mca_coll_ina_launch_publish(void);
/* Resolve the agent address and the job's secret at the enable of the
 * first communicator that needs the agent: from coll_ina_topology or
 * coll_ina_agent, or else launch rank 0's word (embedded agent; a secret
 * the launcher did not give): read from the launch's store (Open MPI 5,
 * MPI Sessions included), or broadcast over MPI_COMM_WORLD by its saved
 * bcast (4.1, collective there; WORLD is always the first). */
int mca_coll_ina_agent_setup(mca_coll_ina_module_t *module);
/* The connected clients, one per agent (coll_ina_agent's order),
 * connecting at first need: sets clients[0..n) and returns n; 0 if some
 * agent cannot be reached (warned once per process). */
uint32_t mca_coll_ina_clients(ina_client_t **clients);
/* After a lost agent: the alternative of agent slot k's entry this process
 * is connected to (0: the agent, 1...: its standbys), connecting first to
 * the first that answers when the connection is gone; -1 if none does. */
int mca_coll_ina_agent_reach(uint32_t k);
/* Give up slot k's connection (kept until close for the jobs on it). */
void mca_coll_ina_agent_drop(uint32_t k);
/* coll_ina_module.c: the communicator's job, left (its calls all over) and
 * opened anew under the next key epoch (no communication). */
int mca_coll_ina_job_reopen(mca_coll_ina_module_t *m);
/* Leave the communicator's job (no call in flight): the node stage's
 * streams lose it too. */
void mca_coll_ina_job_withdraw(mca_coll_ina_module_t *m);
/* Register the MPI_T performance variables (component register). */
int mca_coll_ina_pvars_register(void);
/* coll_ina_params.c: every MCA parameter, then the pvars (the component's
 * register hook). */
int mca_coll_ina_register_params(void);
/* Find the module from its communicator from its enable on (attach)
 * until its destruction (detach), whatever component provides the
 * communicator's collectives; a failure only leaves the pvars reading 0. */
void mca_coll_ina_comm_attach(mca_coll_ina_module_t *module);
void mca_coll_ina_comm_detach(mca_coll_ina_module_t *module);

/* One file per collective; the non-blocking form sits beside the blocking one. */
int mca_coll_ina_allreduce(const void *sbuf, void *rbuf, int count,
                           struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module);
int mca_coll_ina_iallreduce(const void *sbuf, void *rbuf, int count,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module);
int mca_coll_ina_reduce(const void *sbuf, void *rbuf, int count,
                        struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_ina_ireduce(const void *sbuf, void *rbuf, int count,
                         struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module);
int mca_coll_ina_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_ina_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module);
int mca_coll_ina_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_ina_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module);
int mca_coll_ina_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_ina_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module);
int mca_coll_ina_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm,
                                       ompi_request_t **request, mca_coll_base_module_t *module);
/* MPI-4 persistent forms: planned once, each start posts the plan
 * (coll_ina_persistent.c). */
int mca_coll_ina_allreduce_init(const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_ina_reduce_init(const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                             struct ompi_communicator_t *comm, struct ompi_info_t *info,
                             ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_ina_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                            struct ompi_communicator_t *comm, struct ompi_info_t *info,
                            ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_ina_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_ina_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_ina_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                           struct ompi_datatype_t *dtype,
                                           struct ompi_op_t *op,
                                           struct ompi_communicator_t *comm,
                                           struct ompi_info_t *info, ompi_request_t **request,
                                           mca_coll_base_module_t *module);
int mca_coll_ina_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      struct ompi_communicator_t *comm,
                                      mca_coll_base_module_t *module);
int mca_coll_ina_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm,
                                mca_coll_base_module_t *module);

/* coll_ina_dtype.c: MPI -> wire mapping. */
void mca_coll_ina_dtype_init(void);
/* Wire (dtype, op) of a reduction of `dtype` by `op` that the agent computes
 * exactly as MPI defines it; NULL, or why not (for the verbose log). */
const char *mca_coll_ina_reduction_to_wire(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                           unsigned *wire_dtype, unsigned *wire_op);
/* Bytes moved by `count` elements of `dtype` when they lie contiguous in
 * memory starting at buf + true lb (*offset); NULL, or why not. */
const char *mca_coll_ina_contiguous_bytes(struct ompi_datatype_t *dtype, size_t count,
                                          size_t *bytes, ptrdiff_t *offset);

/* coll_ina_host.c: when ina is the only selected coll component, make
 * Open MPI's basic, libnbc and inter components available to the selection. */
int mca_coll_ina_host_components(bool enable_progress_threads, bool enable_mpi_threads);

END_C_DECLS

#endif /* MCA_COLL_INA_H */

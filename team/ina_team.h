/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The engine's one door for a communicator: a team, and a task per call.
 *
 * A team is everything the engine does for one communicator's collectives,
 * chosen when it is made: the node stage (the ranks of a node combine in
 * shared memory; on one node that is the whole call, on several the node's
 * part goes on to the agent in streams), the job at one agent (flat, or a
 * leaf of a tree of agents), the job striped over several agents, and
 * recovery with the other members when an agent is lost. The caller never
 * learns which of these carries a call: each call is a task, posted, asked
 * for its verdict (offloaded, or a fallback every member sees alike), then
 * tested to completion, with the same calls whatever the strategy.
 *
 *   ina_team_create      once per communicator (ina_team_params_t)
 *   ina_team_join        the job (or stripe) it talks to, and again after a
 *   ina_team_leave       lost agent came back; leave it when it is lost
 *   ina_task_init        a call: once per call, or once for a persistent one
 *   ina_task_post        start it (each start, for a persistent one)
 *   ina_task_verdict     until 1: offloaded, fall back, or an error
 *   ina_task_test        until 1 (an offloaded call): how it ended
 *   ina_task_finalize    give it back
 *
 * Nothing here blocks for long: a verdict or a completion that needs the
 * other members (the node stage's other local ranks, a recovery's
 * messages) returns 0 and the caller progresses its own transport (MPI's
 * point-to-point layer, which carries the recovery's messages) before it
 * asks again. One caller at a time per team.
 */
#ifndef INA_TEAM_H
#define INA_TEAM_H

#include <stddef.h>
#include <stdint.h>

#include "ina_client.h"
#include "ina_node.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ina_team ina_team_t;
typedef struct ina_task ina_task_t;

/* Which fields of ina_team_params_t are set. */
enum {
    INA_TEAM_NODE = 1u << 0, /* node: the node stage */
    INA_TEAM_LOG = 1u << 1   /* log_fn, log_arg, label */
};

/* The node stage: the shared-memory group of this communicator's ranks on
 * this node, opened (every local rank alike) at the first call that needs
 * it, in one of two sizes: a small one for calls of one small step, a
 * large one for the rest. */
typedef struct ina_team_node_params {
    /* As ina_node_config_t, except: name is the stem of the segments'
     * names (a letter for the size is added), job and block_bytes come
     * from ina_team_join, chunk_bytes from the fields below. Arrays are
     * copied. */
    ina_node_config_t config;
    size_t small_chunk_bytes; /* steps of the small group */
    size_t segment_bytes;     /* the large group's segment at most, and */
    size_t chunk_bytes;       /* its steps at most (ina_node_chunk_bytes) */
    uint32_t nlocal_max;      /* ranks on the most populated node: every node
                                 cuts a call into the same steps */
    /* Told each segment's file before it exists, so that the caller's
     * runtime removes it if the job dies before every rank attached. */
    void (*created)(void *arg, const char *path);
    void *created_arg;
} ina_team_node_params_t;

typedef struct ina_team_params {
    uint64_t mask; /* INA_TEAM_* */
    ina_team_node_params_t node;
    ina_log_fn_t log_fn; /* NULL: no messages */
    void *log_arg;
    int verbose;
    const char *label; /* prefixes the team's messages (copied) */
} ina_team_params_t;

ina_status_t ina_team_create(const ina_team_params_t *params, ina_team_t **out);
/* Leaves the job and closes the node stage; no task may be in flight
 * (a persistent one that is complete may still exist: finalize it after). */
void ina_team_destroy(ina_team_t *team);

/* Which fields of ina_team_join_t are set. */
enum {
    INA_TEAM_JOB = 1u << 0,    /* job: the job at one agent */
    INA_TEAM_STRIPE = 1u << 1, /* stripe: the job striped over several agents */
    INA_TEAM_PEERS = 1u << 2,  /* peers: recover calls lost with their agent */
    INA_TEAM_GROUPS = 1u << 3, /* group_of_member, ngroups, group_levels: a tree's agents */
    INA_TEAM_ABSENT = 1u << 4, /* absent_key: this member has no job of this key */
    INA_TEAM_OPEN = 1u << 5    /* clients, nclients, open, granted: open the job here */
};

/* What the team talks to from now on (at most one of JOB, STRIPE and OPEN;
 * with the node stage over several nodes, the job of the stream this rank
 * leads, or none). The job or stripe is the team's from here: it leaves it. */
typedef struct ina_team_join {
    uint64_t mask;
    ina_job_t *job;
    ina_stripe_t *stripe;
    /* Open it here, by key (no member waits for another): at clients[0]
     * (ina_job_open with `open`, a flat job or a tree's leaf), or striped
     * over nclients > 1 agents (ina_stripe_open, open's shape); granted
     * gets what the agents granted. An error leaves the team unjoined:
     * INA_ERR_INVALID where the node stage's blocks (block_bytes) do not
     * fit the agent's Segs (it says so in the log). */
    ina_client_t *const *clients;
    uint32_t nclients;
    const ina_job_open_params_t *open;
    ina_job_params_t *granted;
    /* Recovery's link to the other members (ina_peer_ops_t); a striped
     * post that waits for a lost part's recovery calls progress(arg). */
    ina_peer_ops_t peers;
    void (*progress)(void *arg);
    void *progress_arg;
    /* A tree: member -> its agent at each level (ina_job_set_groups:
     * ngroups members, group_levels levels, 0 meaning 1: the leaves
     * alone), copied. */
    const uint32_t *group_of_member;
    uint32_t ngroups;
    uint32_t group_levels;
    /* Every member's calls are denied or fall back while this one has no
     * job of the key: their recoveries ask it all the same, and it answers
     * "denied" (ina_peer_answer_absent). Copied. */
    ina_job_key_t absent_key;
    /* The node stage over several nodes: each agent block's bytes (every
     * rank cuts the node's part alike, stream leader or not). */
    uint32_t block_bytes;
} ina_team_join_t;

ina_status_t ina_team_join(ina_team_t *team, const ina_team_join_t *join);
/* Leave the job (the agent was lost and will be asked again later); the
 * node stage stays. No call may be in flight. */
void ina_team_leave(ina_team_t *team);
/* Whether the team has a job or stripe at an agent now. */
int ina_team_joined(const ina_team_t *team);
/* Whether every agent the team talks to is still there (progresses each
 * connection once). 1 with none. */
int ina_team_reachable(ina_team_t *team);
/* HOST_COST (protocol 16): the call this team's agents last denied took `ns`
 * nanoseconds on the hosts at this rank (its host algorithm, from start to
 * end). Each agent that denied it hears it from its job's member 0, where
 * that is this rank (ina_job_host_cost, ina_stripe_host_cost); never blocks.
 * ns 0: nothing is sent, the denial is forgotten (a call not timed: a
 * non-blocking call's host algorithm outlives its post). Returns how many
 * were sent; *dropped (may be NULL) gets how many could not be. */
uint32_t ina_team_host_cost(ina_team_t *team, uint64_t ns, uint32_t *dropped);
/* CALL_TIME (protocol 17): the latest call posted on this team took `ns`
 * nanoseconds in all at this rank, from its post to its end, whatever the
 * verdict. Each agent it went to hears it from its job's member 0, where
 * that is this rank (ina_job_call_time, ina_stripe_call_time); never
 * blocks. ns 0: nothing is sent, the call is forgotten (a non-blocking
 * call). Returns how many were sent; *dropped (may be NULL) as above. */
uint32_t ina_team_call_time(ina_team_t *team, uint64_t ns, uint32_t *dropped);
/* A recovery message from member `from` (as peers.send numbered it): 1 if
 * it was this team's job's (its sender talks for that member), else 0
 * (another job's, or malformed: dropped). */
int ina_team_peer_message(ina_team_t *team, uint32_t from, const void *msg, size_t len);
/* Send what the engine's progress thread composed for the other members
 * (ina_job_peer_flush): from the progress of the caller's point-to-point
 * layer, on the caller's thread. */
void ina_team_peer_flush(ina_team_t *team);

/* ---- tasks ---------------------------------------------------------------- */

/* Which fields of ina_task_params_t are set, and how the call runs. */
enum {
    INA_TASK_PERSISTENT = 1u << 0, /* posted many times: its plan is kept */
    INA_TASK_NONBLOCKING = 1u << 1 /* the caller returns before it completes: it
                                      is moved by the engine's progress thread,
                                      and a loss found after the verdict is
                                      recovered without the host algorithm */
};

typedef struct ina_task_params {
    uint64_t flags;       /* INA_TASK_* */
    ina_coll_desc_t desc; /* buffers and counts stay the caller's */
    size_t bytes;         /* the result's bytes (the node stage's size) */
} ina_task_params_t;

/* How a task's verdict or completion came out. */
typedef struct ina_task_result {
    ina_status_t rc;       /* INA_OK, or the error that ended the call (an MPI
                              error: other ranks may hold the result or not) */
    ina_outcome_t outcome; /* with INA_OK: offloaded, or every member falls back */
    uint8_t status;        /* a denial's reason (ina_proto_status_t), 0 if none */
    uint64_t mid;          /* the call's MID where one was consumed */
    /* A fallback's words: who decided it ("the agent", ...), or the whole
     * reason when no agent did (the node stage has no segment: this rank's
     * own, so a required offload is an error). */
    const char *who;
    const char *reason;
    int recovered;  /* lost with its agent, finished with the members */
    int agent_lost; /* every member decided at this call that the agent
                              is lost: stop asking it (ina_team_leave) */
} ina_task_result_t;

ina_status_t ina_task_init(ina_team_t *team, const ina_task_params_t *params, ina_task_t **out);
/* Start the call (again, for a persistent task whose last start completed).
 * An error here (INA_ERR_INVALID, INA_ERR_NOMEM) moved nothing. */
ina_status_t ina_task_post(ina_task_t *task);
/* 1 once every member will see the same outcome: result says offloaded
 * (test it), a fallback (run the host algorithm now; the task is done), or
 * an error (done). 0: progress the caller's transport and ask again. */
int ina_task_verdict(ina_task_t *task, ina_task_result_t *result);
/* An offloaded call: 1 once it completed (result says how: offloaded, an
 * error, or, for a blocking call lost with its agent and settled by the
 * members, a fallback to run now); 0: progress and ask again. */
int ina_task_test(ina_task_t *task, ina_task_result_t *result);
/* Done with it; a persistent task must be complete (or never posted). */
void ina_task_finalize(ina_task_t *task);

#ifdef __cplusplus
}
#endif

#endif /* INA_TEAM_H */

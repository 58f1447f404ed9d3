/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The client engine's C API (the component and the tools use it; the
 * engine itself is C++, in this folder). A client owns one channel to an
 * agent (UCX today, ucx_channel.cpp), job descriptors (one per
 * communicator), and runs offloaded calls as work requests: blocks (SID) in
 * a sliding window whose slots are the job's Seg lease, each RESULT being
 * the ACK of its block; a call's completion is its CQE (docs/ARCHITECTURE.md,
 * "Vocabulary").
 *
 * A staged call (ina_job_post_staged) is the same work request whose
 * blocks the caller produces and whose RESULTs it takes through callbacks,
 * block by block (the node stage's calls to the agent).
 *
 * Threading: one caller at a time per ina_client_t (the component serialises).
 * With progress_thread the engine runs one thread of its own that keeps
 * background calls (ina_call_background) moving while the caller computes;
 * every entry point then serialises with it on the client's mutex. That
 * thread never calls back into the caller (but for the callbacks of staged
 * calls, ina_stage_ops_t): a call it completed is seen completed by the
 * caller's next ina_call_test/ina_call_wait.
 */
#ifndef INA_CLIENT_H
#define INA_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "ina_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ina_client ina_client_t;
typedef struct ina_job ina_job_t;

/* Status of every engine entry point: INA_OK, or an error (negative). An
 * error is never a reason to fall back silently: the caller reports it. */
typedef enum ina_status {
    INA_OK = 0,
    INA_ERR_INVALID = -1,     /* bad argument (a programming error) */
    INA_ERR_NOMEM = -2,
    INA_ERR_UNREACHABLE = -3, /* connect / job setup: no usable agent */
    INA_ERR_PROTO = -4,       /* the agent rejected a request or a call (status in
                                 the CQE); in the middle of a call: as INA_ERR_LOST */
    INA_ERR_LOST = -5         /* agent lost in the middle of a call: results are
                                 undefined on some ranks: an MPI error, never a fallback */
} ina_status_t;

/* What became of a call that raised no error: offloaded, or one of the two
 * outcomes that every member of the job sees at the same call, so that all
 * of them run the host algorithm instead. */
typedef enum ina_outcome {
    INA_OFFLOADED = 0,
    INA_FALLBACK_DENIED = 1,      /* the agent's scheduler denied the call */
    INA_FALLBACK_UNREACHABLE = 2  /* the agent was gone before anything was sent */
} ina_outcome_t;

/* Where the engine's messages go: level 0 (always) .. 100 (chatty), one line
 * without newline. NULL: stderr, prefixed "ina-client[pid]". May be called
 * from the engine's progress thread. */
typedef void (*ina_log_fn_t)(void *arg, int level, const char *line);

typedef struct ina_client_config {
    const char *agent_addr;  /* "host:port" of a running ina-switchd */
    int connect_timeout_ms;  /* give up connecting after this long */
    int progress_timeout_ms; /* no progress for this long in a call => INA_ERR_LOST */
    int verbose;             /* 0 quiet .. 100 chatty */
    int progress_thread;     /* nonzero: a progress thread drives background calls
                                (ina_call_background) between the caller's entries */
    ina_log_fn_t log_fn;     /* NULL: stderr */
    void *log_arg;
    /* Waiting (common/spin_policy.h; last, so that a config zeroed or
     * initialised without them waits as by default): */
    int spin_us;             /* poll the link at most this long before sleeping on
                                its wake-up fd, less when recent waits were short:
                                0 the default (100 us), negative never */
    int spin_yield;          /* nonzero: sched_yield between those polls (more
                                processes than cores) */
    int rndv_bytes;          /* RESULT payloads of at least this many bytes come
                                by rendezvous, straight into the receive buffer
                                where they can; 0 (the default) never: every
                                RESULT eager (see docs/RDMA.md) */
    uint64_t tenant;         /* the application this process belongs to, the same
                                number in all its processes (JOB_OPEN's tenant):
                                the agent's scheduler does not make its jobs
                                compete with each other; 0: each job its own */
    int liveness_ms;         /* calls waiting and nothing at all heard from the
                                agent for this long, though it was probed (PING)
                                from a third of it on: the agent is lost, as if
                                its connection had closed (a frozen agent, a dead
                                link). Counts only time this process spends in
                                the engine (its caller or progress thread), so
                                a process that computes is never misled. 0: the
                                default (1000 ms); negative: no probes (only
                                progress_timeout_ms) */
    int proto_lowest;        /* the protocol versions HELLO offers: lowest and */
    int proto_highest;       /* highest (common/ina_proto.h, "Versions"). 0: this
                                build's (INA_PROTO_VERSION_MIN, INA_PROTO_VERSION);
                                negative: that many below INA_PROTO_VERSION (a
                                test offers -1 to play a previous build) */
} ina_client_config_t;

/* What HELLO_ACK told us. */
typedef struct ina_agent_info {
    uint32_t max_window;     /* Segs a lease may hold */
    uint32_t seg_bytes;      /* bytes of one Seg (upper bound of a block) */
    uint32_t protocol;       /* the protocol version the connection speaks */
} ina_agent_info_t;

/* Completion queue entry (CQE) of one offloaded call. */
typedef struct ina_cqe {
    ina_status_t rc;         /* INA_OK or the error that ended the call */
    ina_outcome_t outcome;   /* with INA_OK: offloaded, or fall back */
    uint8_t status;          /* ina_proto_status_t from the agent, if any */
    uint64_t mid;            /* the call's MID (valid when a MID was consumed) */
    uint64_t blocks;         /* blocks (SIDs) the call was cut into */
} ina_cqe_t;

/* Connect to the agent: creates the UCX context (UCP_FEATURE_AM | WAKEUP, error
 * mode PEER), a worker, an endpoint to agent_addr, sends HELLO, waits HELLO_ACK.
 * On failure returns an error and writes a one-line reason into err. */
ina_status_t ina_client_connect(const ina_client_config_t *cfg, ina_client_t **out,
                       char *err, size_t errlen);
void ina_client_disconnect(ina_client_t *client);
void ina_client_agent_info(const ina_client_t *client, ina_agent_info_t *info);
/* Whether the endpoint is still usable (no error callback seen). */
int ina_client_alive(const ina_client_t *client);
/* Progress the connection once without blocking (delivers a pending loss of
 * the agent or an early DENY); returns ina_client_alive(). Optional: every
 * engine call progresses by itself. */
int ina_client_progress(ina_client_t *client);

/* Parameters of a job, the same on every member (the agent's JOB_OPENED). */
typedef struct ina_job_params {
    uint32_t jid;
    uint32_t window;         /* granted by the agent */
    uint32_t block_bytes;    /* min(requested block, seg_bytes), multiple of 16 */
    uint32_t nmembers;
    uint32_t ahead;          /* blocks of MID 0 sent before its verdict (0: 1),
                                ina_proto.h "Leases" */
} ina_job_params_t;

/* The key of a job opened by key (ina_job_open): bytes every member of a
 * communicator knows alike, without communicating, hashed in order
 * (FNV-1a, 128 bits; the key's bytes are the hash, most significant first).
 * Which bytes the component adds is in docs/ARCHITECTURE.md, "Job setup".
 * It names a job. `cap`, the job's capability, proves the opener is a
 * member: ina_job_key_seal derives it from the key and a secret that only
 * the job's processes hold (the agent refuses an opener without the
 * capability the job's first opener brought). ina_job_key_init leaves it
 * zero, which no agent accepts. */
typedef struct ina_job_key {
    uint8_t bytes[INA_PROTO_JOB_KEY_BYTES];
    uint8_t cap[INA_PROTO_JOB_CAP_BYTES];
} ina_job_key_t;
void ina_job_key_init(ina_job_key_t *key);
void ina_job_key_add(ina_job_key_t *key, const void *data, size_t len);
/* Once every byte is added: cap = SipHash-2-4 of the key's bytes (followed
 * by 0, then by 1, for the two halves) under the 16-byte `secret`. */
void ina_job_key_seal(ina_job_key_t *key, const uint8_t *secret);

/* What a member brings to JOB_OPEN. The required fields first; the others
 * count only where `mask` names them (INA_JOB_OPEN_*), so that a field added
 * later leaves every caller that does not set it as it was. Zero the struct,
 * fill what applies. */
enum {
    INA_JOB_OPEN_SHAPE = 1u << 0,  /* window, block_bytes (else the agent's largest) */
    INA_JOB_OPEN_TREE = 1u << 1,   /* leaf, nleaves, comm_rank, comm_size */
    INA_JOB_OPEN_STRIPE = 1u << 2  /* stripe_index, stripe_width */
};
typedef struct ina_job_open_params {
    uint64_t mask;                  /* INA_JOB_OPEN_* of the optional fields set */
    const ina_job_key_t *key;       /* the job's name and capability (ina_job_key_*) */
    uint32_t nmembers;              /* the job's members at this agent, */
    const uint32_t *node_of_member; /* the node of each (nmembers ids), */
    uint32_t rank;                  /* and this member's rank among them */
    /* INA_JOB_OPEN_SHAPE: the window (Segs a call's lease may hold) and the
     * block size asked for, each clamped to what the agent offers; 0: its
     * largest. */
    uint32_t window;
    uint32_t block_bytes;
    /* INA_JOB_OPEN_TREE: the communicator's members talk to several leaf
     * agents of one tree (docs/HIERARCHY.md): this member's leaf is number
     * `leaf` of the `nleaves` leaves of the job under the leaf's parent
     * (ina_topology_place's place[0]), and nmembers, node_of_member and rank
     * describe only the members of this leaf (its ranks in communicator
     * order). A tree deeper than leaves under one parent also gives the
     * places of the agents above (place[1..]: `nabove` levels, nearest
     * first, at most INA_PROTO_MAX_TREE_UP; the job goes up even where
     * nleaves is 1). comm_rank and comm_size place the member in the whole
     * communicator: calls are described in its terms (roots, allgather
     * chunks, reduce_scatter parts; params->nmembers is comm_size), and an
     * allgather needs each leaf's members to be consecutive ranks. The leaf
     * opens the job at its parent, and so on up; every member of every leaf
     * must pass the same window, and the members of a leaf the same places. */
    uint32_t leaf, nleaves, comm_rank, comm_size;
    const ina_proto_tree_level_t *above;
    uint32_t nabove;
    /* INA_JOB_OPEN_STRIPE: this agent is number stripe_index of the
     * stripe_width agents the communicator stripes its calls over
     * (ina_stripe_open): the agent shows it to its operator (ina-switchctl
     * jobs); nothing else changes. */
    uint32_t stripe_index, stripe_width;
} ina_job_open_params_t;

/* Every member, without waiting for the others: open the job named by
 * `p->key` (bytes every member computes alike, sealed with the job's
 * capability) as `p->rank`.
 * The first member to arrive creates it at the agent. Every member must pass
 * the same nmembers, node ids, requested window and block; a member that
 * does not, or brings another capability, is refused (INA_ERR_PROTO; the
 * agent's status is in the log at verbose 1) and the others' calls are denied
 * until it opens alike. Calls may start at once: the agent holds a call
 * until every member opened the job (docs/HIERARCHY.md). */
ina_status_t ina_job_open(ina_client_t *client, const ina_job_open_params_t *p,
                          ina_job_params_t *params, ina_job_t **out);

/* The job's certified mark (ina_proto.h, "Certification"), as the latest
 * RESULT this member received said: every member holds every call of a
 * lower MID complete. */
uint64_t ina_job_certified(const ina_job_t *job);

/* Whether the job's agent is still there: progresses its connection once
 * (a loss not seen yet shows) and returns ina_client_progress's answer. */
int ina_job_reachable(ina_job_t *job);

/* Recovery (docs/ARCHITECTURE.md, "Recovery from a lost agent"): keep, for
 * every call this member completes, its input of the call's last `window`
 * blocks until the job's certified mark passes the call (a window's worth
 * per call in flight somewhere; buffers are reused). Off by default. How
 * many calls and bytes are kept now. */
void ina_job_keep_blocks(ina_job_t *job, int on);
size_t ina_job_kept_calls(const ina_job_t *job, size_t *bytes);

/* Recovering calls lost with their agent (docs/ARCHITECTURE.md, "Recovery
 * from a lost agent"); flat jobs (ina_job_open), every collective. The
 * members talk to each other through the caller's
 * point-to-point layer, member r being the job's rank r:
 *   send  deliver `len` bytes to member `to` (in order per pair); the bytes
 *         may be reused once it returns. 0 on success.
 * Setting peers turns ina_job_keep_blocks on. Every message a member's
 * send gave must reach ina_job_peer_message on member `to`, whenever that
 * member is in the MPI library (it answers for calls it has finished).
 * With peers set, an ERROR that says another member left the job at the
 * agent (NOT_MEMBER: its link to the agent ended, e.g. it found the agent
 * silent first) ends a call as lost, to be recovered with the others. */
typedef struct ina_peer_ops {
    void *arg;
    int (*send)(void *arg, uint32_t to, const void *msg, size_t len);
    /* Tells apart jobs whose messages share the caller's link (a stripe's
     * agents, opened with one key): the same on every member of the job.
     * Jobs of different keys (a node's streams, a job opened again) are
     * told apart by their key, never by JID (each leaf of a tree numbers
     * its own). */
    uint32_t channel;
} ina_peer_ops_t;
void ina_job_set_peers(ina_job_t *job, const ina_peer_ops_t *ops);
/* A tree's job (ina_job_open with INA_JOB_OPEN_TREE): member (communicator rank, or node
 * with the node stage: comm_rank/comm_size as opened) -> its agent at each of
 * `levels` levels, level-major (group_of_member[l * n + member]: l = 0 its
 * leaf, 1 the leaf's parent...; the numbers of ina_topology_plan), n = the
 * communicator's members. A recovery reduces a rebuilt block as the agents
 * do: each leaf's members in order, then the leaves under each parent in
 * order, and so on up.
 * With peers set, an ERROR the tree caused (a parent or another leaf lost:
 * UPSTREAM, NOT_MEMBER) ends a call as lost, to be recovered. */
void ina_job_set_groups(ina_job_t *job, const uint32_t *group_of_member, uint32_t n,
                        uint32_t levels);
/* Whether peers are set: a call lost with the agent can be recovered. */
int ina_job_has_peers(const ina_job_t *job);
/* 1 if the message was this job's (0: another job's, or malformed: dropped). */
int ina_job_peer_message(ina_job_t *job, uint32_t from, const void *msg, size_t len);
/* Send the recovery messages the engine's progress thread composed (a call
 * that completed there answering a member that asked about it): the caller
 * sends them from its own thread, at any entry of its into the engine, or
 * here, from the progress of its point-to-point layer. Cheap when there
 * are none. */
void ina_job_peer_flush(ina_job_t *job);
/* A member that has no job of `key` (its agent was out of reach when the
 * job opened, or refused it): every call of that job ran on the host
 * algorithm here, and the agent denied the others' (the job never had all
 * its members). Yet when their agent is lost they ask every member about
 * their calls: this answers each question with "denied" through ops->send
 * (so they settle on the host algorithm too, rather than wait forever).
 * 1 if the message was that job's, 0 if another's (or malformed). */
int ina_peer_answer_absent(const ina_job_key_t *key, const ina_peer_ops_t *ops, uint32_t from,
                           const void *msg, size_t len);


/* Leave the job (non-blocking toward the agent) and free the descriptor. */
void ina_job_leave(ina_job_t *job);

/* One offloaded collective call (a work request, WR). Buffers stay the
 * caller's until the call completes. Element counts are of wire dtype
 * `dtype` (bytes with INA_DT_UINT8 for BCAST/ALLGATHER).
 *   ALLREDUCE       sbuf (count) -> rbuf (count); sbuf == rbuf: in place.
 *   REDUCE          sbuf (count) -> rbuf (count) on `root` only (rbuf ignored
 *                   elsewhere); root may pass sbuf == rbuf.
 *   REDUCE_SCATTER  sbuf (sum of recvcounts) -> rbuf (recvcounts[rank]);
 *                   recvcounts has nmembers entries, equal on every rank.
 *                   sbuf may equal rbuf only as MPI_IN_PLACE allows (the
 *                   engine reads sbuf before writing rbuf's part).
 *   BCAST           rbuf (count bytes): the root's bytes land on every rank.
 *   ALLGATHER       sbuf (count bytes) -> rbuf (nmembers * count bytes), rank r's
 *                   chunk at r * count; sbuf == NULL: in place (the chunk is
 *                   already at its place in rbuf).
 *   BARRIER         no buffers; op and dtype are ignored (REPLACE, UINT8).
 * A call consumes the job's next MID unless it moves no data (count 0, except
 * BARRIER), which completes at once on every rank alike. */
typedef struct ina_coll_desc {
    unsigned coll;               /* ina_proto_coll_t */
    unsigned op;                 /* ina_proto_op_t (INA_OP_REPLACE for data moves) */
    unsigned dtype;              /* ina_proto_dtype_t */
    const void *sbuf;
    void *rbuf;
    uint64_t count;
    uint32_t root;
    const uint64_t *recvcounts;  /* REDUCE_SCATTER only */
} ina_coll_desc_t;

typedef struct ina_call ina_call_t;

/* Post a call: consumes its MID, sends the first window of blocks, and
 * progresses until the agent's decision for this MID (GRANT or DENY) is
 * known, so that every rank learns it before its next collective starts.
 * Returns INA_OK with *outcome:
 *   INA_OFFLOADED             granted (or nothing to move): *call is set; test/wait it;
 *   INA_FALLBACK_DENIED       denied on every member: fall back now, *call is NULL;
 *   INA_FALLBACK_UNREACHABLE  agent lost before anything was sent: fall back, *call NULL;
 * or an error (INA_ERR_LOST / INA_ERR_PROTO: failure after data was sent).
 * Calls on one job complete in posting order; several may be outstanding,
 * on one job and on different jobs. */
ina_status_t ina_job_post(ina_job_t *job, const ina_coll_desc_t *desc, ina_call_t **call,
                          ina_outcome_t *outcome);

/* A call planned once and posted many times (a persistent collective):
 * ina_job_plan checks the description and cuts it into blocks as
 * ina_job_post does at every post; ina_job_post_plan posts it, with
 * ina_job_post's outcomes. The plan keeps the description (buffers,
 * counts) and may be posted on another job of the same members (the
 * communicator's job opened anew): it is cut again there if that job's
 * block size or rank differ. INA_ERR_INVALID: a call the wire cannot
 * carry (as ina_job_post). Free it with ina_call_plan_free (NULL is
 * fine); a call posted from it need not be complete. */
typedef struct ina_call_plan ina_call_plan_t;
ina_status_t ina_job_plan(ina_job_t *job, const ina_coll_desc_t *desc, ina_call_plan_t **plan);
ina_status_t ina_job_post_plan(ina_job_t *job, ina_call_plan_t *plan, ina_call_t **call,
                               ina_outcome_t *outcome);
void ina_call_plan_free(ina_call_plan_t *plan);

/* Why the agent denied this job's latest post that returned
 * INA_FALLBACK_DENIED (ina_job_post or ina_job_post_staged): its DENY status
 * (ina_proto_status_t: BUSY, OUTSCORED, NO_RESOURCES, ...); 0 after a post
 * with another outcome. A denial found later, by ina_call_decision, is in
 * that CQE's status. */
uint8_t ina_job_deny_status(const ina_job_t *job);

/* HOST_COST (protocol 16): the latest call posted on this job, which its
 * agent denied by its own verdict (a DENY; not a striped call given back
 * because another agent denied it), took `ns` nanoseconds on the hosts at
 * this member (its host algorithm, from start to end): tell the agent, so
 * that its scheduler weighs measured costs instead of its model. Only the
 * job's member 0 (rank 0 at this agent) sends it, once per denied call, and
 * only on a connection of protocol 16 or later. Never blocks: the message
 * is posted and forgotten. ns 0 sends nothing and forgets the denial (a call
 * that was not timed). Returns 1 if sent, 0 if this member had nothing to
 * send, or an error (INA_ERR_UNREACHABLE: the agent is gone or the send
 * failed; INA_ERR_NOMEM): nothing was sent. */
int ina_job_host_cost(ina_job_t *job, uint64_t ns);
/* CALL_TIME (protocol 17): the latest call posted on this job, whatever its
 * verdict, took `ns` nanoseconds in all at this member, from its post to its
 * end (the wait for the verdict, then the agent's service or the host
 * algorithm): tell the agent, whose harm guard judges by it whether sharing
 * the agent slows the job down. As ina_job_host_cost: only member 0 sends
 * it, once per call, only on a connection of protocol 17 or later, never
 * blocking; ns 0 sends nothing and forgets the call (one not timed: a
 * non-blocking call). Returns 1 if sent, 0 if nothing to send, or an error. */
int ina_job_call_time(ina_job_t *job, uint64_t ns);

/* Let the engine's progress thread (config progress_thread) drive this posted
 * call while the caller is not in the engine: it sends the next blocks as
 * RESULTs arrive and completes the call, so a caller that computes between
 * post and test/wait holds nobody back. The caller still tests/waits and frees
 * the call. Without a progress thread, or for a call already complete, this
 * does nothing. A caller that waits right away need not call it (the thread
 * then stays asleep: no cost on the blocking path). */
void ina_call_background(ina_call_t *call);

/* Progress every outstanding call of the client once, without blocking;
 * returns 1 when `call` has completed (cqe filled: rc INA_OK, outcome
 * INA_OFFLOADED, or the error), else 0. */
int ina_call_test(ina_call_t *call, ina_cqe_t *cqe);

/* Block (spin, then sleep on the channel's wake-up fd) until `call`
 * completes; returns cqe->rc. */
ina_status_t ina_call_wait(ina_call_t *call, ina_cqe_t *cqe);

/* Give back an outstanding call this member will not carry through: a call
 * striped over several agents, another of which denied it (docs/HIERARCHY.md,
 * "Striping"). Sends CALL_ABORT (status ABORTED) to the agent, which ends
 * the call on every member (each then falls back: DENY or ERROR with status
 * ABORTED, which the engine reports as INA_FALLBACK_DENIED, never as a
 * failure), sends no more blocks and drops RESULTs still on their way. The
 * call completes with outcome INA_FALLBACK_DENIED (status ABORTED), unless
 * it had already failed or received every RESULT; test/wait and free it as
 * any call. A RESULT applied before the abort stays where it landed: abort
 * staged calls (whose RESULTs are the caller's) or calls whose input is not
 * their receive buffer. */
void ina_call_abort(ina_call_t *call);

/* Release a completed call. Freeing a call still outstanding is a programming
 * error: the engine logs it and completes the call first, so that nothing
 * writes into its buffers after this returns. */
void ina_call_free(ina_call_t *call);

/* A call whose test/wait returned INA_ERR_LOST (not freed yet), on a job
 * with peers: finish it with the other members. host_ok: this member could
 * still run the host algorithm for the call now (its input intact, and the
 * call may start late: not a non-blocking call posted before). Then test
 * it with ina_call_recover_test, which progresses the exchange (messages
 * arrive through ina_job_peer_message) and returns 1 when it is over: cqe
 * rc INA_OK and outcome INA_OFFLOADED (every block in place, bit for bit
 * what the agent would have given), INA_FALLBACK_DENIED (the call was
 * denied somewhere: run the host algorithm), INA_FALLBACK_UNREACHABLE
 * (nobody holds anything and every member may run the host algorithm: run
 * it), or an error (the call cannot be recovered: the same on every
 * member). Free the call afterwards as any call. */
ina_status_t ina_call_recover_start(ina_call_t *call, int host_ok);
int ina_call_recover_test(ina_call_t *call, ina_cqe_t *cqe);
/* Staged calls (ina_job_post_staged, on a job with peers) recover too: the
 * members do the agent's work among themselves from then on, block by
 * block as each caller produces them (its callbacks keep running: blocks
 * are asked for in order, results handed over, from inside
 * ina_call_recover_test and ina_job_peer_message), so the caller's
 * pipeline goes on. 1 once the members' words are all in, with how the
 * recovery will end: INA_OFFLOADED (test it to its end with
 * ina_call_recover_test, which may still fail), a fallback outcome
 * (nothing was handed over), or an error. */
int ina_call_recover_decision(ina_call_t *call, ina_cqe_t *cqe);

/* A staged call: the caller produces each block when it is ready and takes
 * each block's RESULT; the engine keeps the MID, window, verdict and CQE as
 * for any call. The result vector has `total` elements of wire `dtype`, cut
 * into the job's blocks like any call (ina_geometry.h); BARRIER: total 0,
 * one block of 0 elements (op and dtype are ignored, as for ina_job_post).
 * The callbacks run inside the engine (from ina_call_test, ina_call_decision,
 * ina_call_wait and any other entry that progresses the client, or on the
 * engine's progress thread (config progress_thread) while another call is in
 * the background): they must not call into the engine and must only touch
 * memory that is safe for that (e.g. atomics). */
typedef struct ina_stage_block {
    const void *data;  /* element 0 of the block (the payload is data + offset
                          elements, count elements); ignored when count is 0.
                          The payload must stay readable until the block's
                          result callback, or until the call completes */
    uint32_t offset;   /* element offset of the payload in the block */
    uint32_t count;    /* payload elements; 0: a CREDIT */
    int want_result;   /* nonzero: INA_PROTO_F_WANT_RESULT */
} ina_stage_block_t;

typedef struct ina_stage_ops {
    void *arg;
    /* What this member sends for block sid: 1 with *b filled, or 0 while it
     * is not ready (asked again at the next progress). Asked in SID order,
     * once the window has room for sid. The block must be what the wire
     * allows (ina_proto.h, "Collectives"): offset + count <= the block's
     * elements, and for ALLREDUCE/REDUCE/REDUCE_SCATTER the whole block
     * (offset 0, count = the block's elements); anything else is a
     * programming error that fails the call (INA_ERR_PROTO, status
     * INA_PROTO_ERR_MALFORMED) without sending it. */
    int (*block)(void *arg, uint64_t sid, ina_stage_block_t *b);
    /* The RESULT of block sid arrived (it is the ACK of our block): data
     * holds its `count` elements (valid during the callback only), or is
     * NULL with count 0 for an ACK only (want_result was 0) and for
     * BARRIER's empty block. Called once per block of a call that completes
     * OK (at most once on one that fails), in arrival order (not
     * necessarily SID order). */
    void (*result)(void *arg, uint64_t sid, const void *data, uint32_t count);
} ina_stage_ops_t;

typedef struct ina_staged_desc {
    unsigned coll;   /* ina_proto_coll_t */
    unsigned op;     /* ina_proto_op_t */
    unsigned dtype;  /* ina_proto_dtype_t */
    uint64_t total;  /* elements of the result vector */
    uint32_t block_bytes; /* bytes per block (the cut: SID k covers elements
                             k * (block_bytes / size) ...); 0: the job's block;
                             more than the job's block is invalid */
    ina_stage_ops_t ops;
} ina_staged_desc_t;

/* Post a staged call: consumes the job's next MID (unless it moves nothing:
 * total 0 and not BARRIER, which completes at once) and sends the blocks
 * that are ready. It does NOT wait for the agent's decision (the first
 * block may not be ready yet): see ina_call_decision. *outcome as
 * ina_job_post: a verdict already known (an early DENY) or an agent gone
 * before anything was sent returns a fallback outcome with *call NULL.
 * Test (or wait) the call to completion and free it as any call. A staged
 * call waiting for its caller's next block with nothing in flight is not
 * waiting on the agent: it never counts toward progress_timeout_ms. So
 * ina_call_wait, ina_call_free of an outstanding call and ina_job_leave
 * wait as long as the blocks take to become ready; ina_call_wait sleeps up
 * to 10 ms between asks, the progress thread up to 100 ms (poll with
 * ina_call_test when the producer is elsewhere). */
ina_status_t ina_job_post_staged(ina_job_t *job, const ina_staged_desc_t *desc,
                                 ina_call_t **call, ina_outcome_t *outcome);

/* Progress once without blocking; 1 once the agent's decision on the call
 * is known: cqe->rc INA_OK with outcome INA_OFFLOADED (granted: the call
 * goes on, test it to completion), or a fallback outcome (denied / agent
 * lost before anything was sent: nothing more is sent; test it until it
 * completes, then free it), or an error rc; 0 while undecided. Works on
 * ordinary calls too (and on completed ones: their CQE). */
int ina_call_decision(ina_call_t *call, ina_cqe_t *cqe);

/* Blocking convenience: post + wait + free. Unlike ina_job_post it does not
 * wait for the GRANT before streaming (a blocking call needs no ordering
 * guarantee beyond its own completion). Returns cqe->rc; with INA_OK,
 * cqe->outcome says whether the call was offloaded. A fallback outcome and
 * INA_ERR_PROTO leave the input intact (falling back is safe); in place, a
 * failure after some results were already written is INA_ERR_LOST. */
ina_status_t ina_job_run(ina_job_t *job, const ina_coll_desc_t *desc, ina_cqe_t *cqe);

/* ina_job_run of an ALLREDUCE. */
ina_status_t ina_job_allreduce(ina_job_t *job, const void *sbuf, void *rbuf,
                      uint64_t count, unsigned dtype, unsigned op, ina_cqe_t *cqe);

/* Embedded agent (address "auto"): fork/exec `path` listening on
 * listen_host:0 with `--ready-fd`, wait until it reports its address, write
 * "host:port" into addr. The child dies with this process (PR_SET_PDEATHSIG).
 * extra_args: NULL-terminated list appended to the command line, may be NULL. */
ina_status_t ina_agent_spawn(const char *path, const char *listen_host,
                    const char *const *extra_args, char *addr, size_t addrlen,
                    int *pid_out, char *err, size_t errlen);
/* SIGTERM the embedded agent, wait up to timeout_ms, then SIGKILL. */
void ina_agent_stop(int pid, int timeout_ms);

/* ---- striping: one job over several agents (docs/HIERARCHY.md) --------
 *
 * The job named by `key` is opened at every client's agent alike (each
 * member passes its clients in the same agent order). A call is cut into
 * blocks as one agent would cut it, and block sid goes to agent
 * ina_stripe_agent(sid, nagents) = sid mod nagents: agent k aggregates
 * blocks k, k+A, k+2A, ... as a call of its own (own MID, window, lease); an
 * agent with no block of a call has no part in it. The call is offloaded
 * only if every agent with a part granted it; otherwise every member falls
 * back alike (granted parts are given back with ina_call_abort). RESULTs
 * stay out of the caller's buffers until every verdict is known, so a
 * fallback always finds the input intact. requested_window is the member's
 * whole window: each agent is asked for its share, ceil(window / nagents)
 * (0: each agent's maximum), so a member has about as many blocks in
 * flight as over one agent (measured on the emulated fabric: a window per
 * agent as large as one agent's lets the members' flows drift apart at each
 * agent's link, docs/perf-history/trees-and-stripes.md). params gets agent 0's JID and the
 * smallest window (per agent) and block of all agents. */
typedef struct ina_stripe ina_stripe_t;
typedef struct ina_stripe_call ina_stripe_call_t;

uint32_t ina_stripe_agent(uint64_t sid, uint32_t nagents);

ina_status_t ina_stripe_open(ina_client_t *const *clients, uint32_t nagents,
                             const ina_job_key_t *key,
                             uint32_t nmembers, const uint32_t *node_of_member, uint32_t rank,
                             uint32_t requested_window, uint32_t requested_block_bytes,
                             ina_job_params_t *params, ina_stripe_t **out);
/* Leave the job at every agent and free the stripe. */
void ina_stripe_leave(ina_stripe_t *stripe);
/* As ina_job_post. With wait_decision, waits until every agent's verdict is
 * known: *call is set when the call is offloaded (test/wait, then free it);
 * a fallback outcome (or an error) returns with *call NULL, the parts
 * already ended. Without, *call is always set (outcome INA_OFFLOADED: it
 * was posted) and its CQE says what became of it. */
ina_status_t ina_stripe_post(ina_stripe_t *stripe, const ina_coll_desc_t *desc,
                             int wait_decision, ina_stripe_call_t **call,
                             ina_outcome_t *outcome);
/* As ina_job_deny_status, for the latest ina_stripe_post that waited for
 * the verdicts: the DENY status of the first agent that denied. */
uint8_t ina_stripe_deny_status(const ina_stripe_t *stripe);
/* ina_job_host_cost at every agent of the stripe: each agent that denied
 * the latest call hears from its member 0. Returns how many HOST_COSTs were
 * sent; *dropped (may be NULL) gets how many could not be. */
uint32_t ina_stripe_host_cost(ina_stripe_t *stripe, uint64_t ns, uint32_t *dropped);
/* ina_job_call_time at every agent of the stripe the latest call went to.
 * Returns how many CALL_TIMEs were sent; *dropped as above. */
uint32_t ina_stripe_call_time(ina_stripe_t *stripe, uint64_t ns, uint32_t *dropped);
int ina_stripe_call_test(ina_stripe_call_t *call, ina_cqe_t *cqe);
/* Recovery for a striped job (docs/ARCHITECTURE.md, "Recovery from a lost
 * agent"): the members' link as for ina_job_set_peers (agent k's job uses
 * channel k), and the caller's progress, which ina_stripe_post calls while
 * it waits for a lost part's recovery to decide (the link must move). A
 * part lost with its agent is finished by the members; the call's verdict
 * counts its recovery's outcome as that agent's. */
void ina_stripe_set_peers(ina_stripe_t *stripe, const ina_peer_ops_t *ops,
                          void (*progress)(void *), void *arg);
/* As ina_job_peer_message, for whichever of the stripe's jobs it is. */
int ina_stripe_peer_message(ina_stripe_t *stripe, uint32_t from, const void *msg, size_t len);
/* As ina_job_peer_flush, for each of the stripe's jobs. */
void ina_stripe_peer_flush(ina_stripe_t *stripe);
/* Whether every agent of the stripe is still there (ina_job_reachable). */
int ina_stripe_reachable(ina_stripe_t *stripe);
/* Whether a part of the call was lost with its agent and recovered; and
 * of the latest ina_stripe_post that ended without a call (a fallback). */
int ina_stripe_call_recovered(ina_stripe_call_t *call);
int ina_stripe_post_recovered(const ina_stripe_t *stripe);
ina_status_t ina_stripe_call_wait(ina_stripe_call_t *call, ina_cqe_t *cqe);
/* Waits for the call first if it is still outstanding. */
void ina_stripe_call_free(ina_stripe_call_t *call);
/* As ina_job_run: post, wait, free, without waiting for the verdicts before
 * the blocks stream. */
ina_status_t ina_stripe_run(ina_stripe_t *stripe, const ina_coll_desc_t *desc, ina_cqe_t *cqe);

/* The cluster's topology file (client/ina_topology.h, docs/HIERARCHY.md):
 * which agent each host's ranks talk to. Every rank reads the same file and
 * derives the same answers from the same host names, without communicating. */
typedef struct ina_topology ina_topology_t;
/* Read and parse `path`. On failure returns INA_ERR_INVALID and writes
 * "PATH: line N: why" (or why it could not be read) into err. */
ina_status_t ina_topology_load(const char *path, ina_topology_t **out, char *err, size_t errlen);
void ina_topology_free(ina_topology_t *topo);
/* How many agents the file names (0: it describes the hosts' grid alone). */
uint32_t ina_topology_agents(const ina_topology_t *topo);
/* HOST:PORT of the agent serving `host`, NULL if no hosts line names it. */
const char *ina_topology_agent_for(const ina_topology_t *topo, const char *host);
/* The most levels of agents above a communicator's leaf agents. */
#define INA_TOPOLOGY_MAX_LEVELS (INA_PROTO_MAX_TREE_UP + 1u)
/* The tree of agents that the n ranks on hosts[0..n-1] talk to. Its leaves
 * are the agents the ranks talk to; its top, the one agent nearest the
 * leaves above all of them (not always the root of the file's tree).
 * *levels: how many steps from every leaf up to the top (0: the ranks all
 * talk to one agent; 1: several leaves under the top; 2: leaf, spine,
 * core; every leaf must be as deep as the others). group_of_rank (n *
 * max(*levels, 1) entries, at most n * INA_TOPOLOGY_MAX_LEVELS; may be
 * NULL): group_of_rank[l * n + r] numbers the agent l steps above rank r's
 * leaf (l = 0: the leaf), the agents of each level numbered in order of
 * their first rank, so every rank numbers them alike. INA_ERR_INVALID with
 * the reason in err when a host is unmapped, the leaves lie in different
 * trees or at different depths, or the tree is deeper than
 * INA_TOPOLOGY_MAX_LEVELS. */
ina_status_t ina_topology_plan(const ina_topology_t *topo, const char *const *hosts, uint32_t n,
                               uint32_t *levels, uint32_t *group_of_rank, char *err,
                               size_t errlen);
/* Rank r's place in a plan's tree (group_of_rank and levels as
 * ina_topology_plan gave them, levels >= 1): place[k], k < levels, says
 * how many agents of level k the tree has under the parent of r's level-k
 * agent (groups) and which of them r's is (group, in order of first rank).
 * place[0] is the leaf's (ina_job_open_params_t's nleaves, leaf), the rest
 * the levels above (its `above`). */
void ina_topology_place(const uint32_t *group_of_rank, uint32_t n, uint32_t levels, uint32_t r,
                        ina_proto_tree_level_t *place);

/* The hyper-square: the hosts' own links, which the host algorithms use for
 * the calls the agents do not take (docs/HIERARCHY.md, "The host side").
 * Groups of four nodes A, B, C, D linked A-B, A-C, D-B, D-C (a 2x2 square),
 * neighbouring groups of a grid linked node to node of the same letter. As a
 * grid of nodes, group (gx, gy) puts A at column 2gx, row 2gy, B at (2gx + 1,
 * 2gy), C at (2gx, 2gy + 1) and D at (2gx + 1, 2gy + 1); every row and every
 * column closes into a ring whose every step is one link (ina_grid_ring).
 *
 * Where the n ranks on hosts[0..n-1] sit on the file's grid: *cols x *rows
 * nodes (both even), node_of_rank[r] = row * cols + column of rank r's host
 * (n entries), counted from the corner of the rectangle the ranks cover;
 * several ranks may share a node. INA_OK with *cols = *rows = 0 when the
 * file describes no grid or the ranks do not cover whole groups of it
 * exactly (a rectangle of whole groups, every node holding a rank; why in
 * err), when a rank's host is not on the grid, or when they cover one node;
 * then *partial (unless NULL) is 1 where every host is on the grid but they
 * cover part of a group or leave a group of their rectangle empty, else 0.
 * INA_ERR_INVALID only for bad arguments. */
ina_status_t ina_topology_grid(const ina_topology_t *topo, const char *const *hosts, uint32_t n,
                               uint32_t *cols, uint32_t *rows, uint32_t *node_of_rank,
                               int *partial, char *err, size_t errlen);
/* The ring through the n positions of a row or a column (n even, >= 2) in
 * the order its links run: out along the odd positions, back along the even
 * ones: ring[k] = 0, 1, 3, ..., n - 1, n - 2, ..., 2. Any other n: nothing
 * is written. */
void ina_grid_ring(uint32_t n, uint32_t *ring);

#ifdef __cplusplus
}
#endif

#endif /* INA_CLIENT_H */

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * ina wire protocol: the ONE definition shared by the Open MPI component
 * (ompi_coll_ina) and the aggregation agent (switch_agent / ina-switchd).
 *
 * Transport: UCX active messages (ucp_am_send_nbx). Every message is one AM
 * whose AM *header* is exactly one ina_proto_hdr_t and whose AM *data* is the
 * payload (possibly empty). Client -> agent messages use INA_PROTO_AM_TO_AGENT,
 * agent -> client messages use INA_PROTO_AM_TO_CLIENT.
 *
 * Vocabulary (docs/ARCHITECTURE.md, "Vocabulary"):
 *   JID  job id: one per communicator, unique at the agent.
 *   MID  message id: the n-th offloaded call of a job (0, 1, 2, ...).
 *   SID  sequence id: the block index inside one call.
 *   Seg  the buffer unit a block uses inside the call's lease: seg = sid % window.
 *   window  blocks a rank may have in flight; equals the lease size. The RESULT
 *           of a block is its ACK: the window slides by one.
 *
 * Leases (protocol 8). A job's window (JOB_OPENED) is the most a call of it
 * may get; the agent's scheduler gives each call its own lease of 1..window
 * Segs, told in the call's GRANT and in every RESULT (`window`). From then on
 * a member has at most that many blocks of the call in flight, with seg = sid
 * % lease. Before the verdict a member may send only the call's first
 * `ahead` blocks (seg = sid, window = the job's), where `ahead` is what the
 * JOB_OPENED (for MID 0) or the GRANT, DENY or any RESULT of the previous MID
 * said, if the member heard it before it started the call, else 1. The agent
 * never grants a call a lease shorter than the `ahead` it told for it (1 if
 * it decided the call first), so every block sent before the verdict has its
 * Seg. A contended agent says 1: a call it then denies cost the link one
 * block, not a window; an idle one says `window`: no round trip before a
 * call streams. ahead = 0 reads 1. A job of child agents (F_CHILDREN) gets
 * leases of its whole window: its members, agents, order themselves by
 * CALL_READY and ignore `ahead`.
 *
 * Certification (protocol 9; docs/ARCHITECTURE.md, "Recovery from a lost
 * agent"). Every BLOCK's `done` is its member's mark: MID + 1 of its newest
 * call that is complete at the member together with every earlier call of
 * the job (0: none), low 32 bits. Every RESULT's `done` is the job's
 * certified mark at the agent: the least of its members' latest marks (a
 * member that sent no BLOCK yet counts 0), low 32 bits: every member holds
 * every call below it complete, so nobody can need anything of those calls
 * from another member if the agent is lost. A member's mark never exceeds
 * the MID of a block it sends + 1 (a call is not complete while it sends
 * for it): both sides recover the full value from the MID beside it.
 * `done` is 0 on every other message.
 *
 * Versions (protocol 14). A connection speaks one version, chosen at its
 * start: the HELLO offers a range (lowest..highest), the agent answers with
 * the highest version both speak (HELLO_ACK's version) or refuses with
 * ERROR(VERSION) naming its own range. An agent speaks every version from
 * INA_PROTO_VERSION_MIN to INA_PROTO_VERSION, so a site upgrades its daemon
 * first and every user's component later; a component offers the same
 * range, and meets an older agent that does not know ranges (protocol 13
 * refuses any other version with ERROR(VERSION) stamped with its own) by
 * offering that version alone once more. HELLO, HELLO_ACK and ERROR(VERSION)
 * keep their fields in every version, and ina_proto_check takes the first
 * and the last of any version, so that two builds always learn each other's
 * range. Where versions differ, the code asks the connection's version
 * (so far only HELLO changed: 13 and 14 are otherwise the same).
 *
 * Message flow (where a type gives a field a meaning of its own, say
 * JOB_OPEN's mid = the tenant, code reads and writes it through the named
 * accessors below: ina_proto_job_open_*, ina_proto_hello_*,
 * ina_proto_hello_ack_*, ina_proto_error_*, ina_proto_refusal_*):
 *   HELLO       c->a  first message on a new endpoint (its layout, and that of
 *                     HELLO_ACK and ERROR(VERSION), is the same in every version,
 *                     "Versions"). version = the highest protocol version the
 *                     sender speaks, rank = the lowest (protocol 14; 0: only
 *                     `version`, as every HELLO before), sid = feature bits it
 *                     can use (none defined yet). count = the client's stream
 *                     segment (bytes UCX's TCP transport sends and receives in one
 *                     fragment, ina::ucx::kStreamSegBytes): the agent refuses a
 *                     HELLO whose value differs from its own (ERROR MISMATCH),
 *                     since a peer with a smaller one cannot receive its messages.
 *                     arg = rendezvous threshold
 *                     for RESULTs: payloads of at least arg bytes the agent sends
 *                     with UCP_AM_SEND_FLAG_RNDV, and the client receives them
 *                     straight into their destination (ucp_am_recv_data_nbx);
 *                     0 = eager only.
 *   HELLO_ACK   a->c  version = the version the agent chose: the highest both
 *                     speak; every later message of the connection, both ways,
 *                     carries it. sid = the feature bits both use.
 *                     count = max window (Segs per lease), arg = Seg size in bytes,
 *                     mid = rendezvous threshold for BLOCKs: payloads of at least
 *                     mid bytes the client sends by rendezvous, and the agent
 *                     receives them straight into a Seg buffer; 0 = eager only.
 *               Every other message is eager.
 *   JOB_OPEN    c->a  rank, count = number of members, window = requested
 *                     window, arg = cookie, payload = a 16-byte job key, a
 *                     16-byte capability, then
 *                     uint32_t node_id[count] (members with equal node_id share
 *                     a node: Node/Rank bitmaps): every member sends it, in any
 *                     order, without waiting for the others (no collective at
 *                     communicator creation, docs/HIERARCHY.md). The first
 *                     creates the job under the key, each one joins it as
 *                     `rank` (this endpoint is then bound to (jid, rank));
 *                     all must describe the job alike.
 *                     The capability is a secret only the job's members can
 *                     compute (docs/ARCHITECTURE.md, "Job setup"); the first
 *                     opener sets it, every later opener must bring the same
 *                     (else JOB_OPENED with status FORBIDDEN, and the job
 *                     does not notice); all zeros is no capability, always
 *                     FORBIDDEN. A leaf passes its job's on to its parent.
 *                     Trees of agents (docs/HIERARCHY.md): the number of
 *                     leaf agents the job's members talk to (0 or 1: the job
 *                     ends at this agent) and the index of this agent's leaf
 *                     among them (ina_proto_job_open_leaves/_leaf; on the
 *                     wire block_elems and offset). A leaf with a parent
 *                     opens, for a job of more than one leaf, the job of the
 *                     same key at its parent as member `leaf` of `leaves`,
 *                     with flags = INA_PROTO_F_CHILDREN (node ids: one node
 *                     per leaf). Both are part of the description.
 *                     Deeper trees (protocol 15): after the node ids, the
 *                     payload may carry k <= INA_PROTO_MAX_TREE_UP pairs of
 *                     uint32_t (groups, group), one per level above the
 *                     header's, nearest first: the parent agent is member
 *                     `group` of `groups` at its own parent, and so on up
 *                     (ina_proto_job_open_levels_above, _level_above). With
 *                     k > 0 the job goes up even where `leaves` is 1 (one
 *                     leaf of this job under its parent); a leaf opens its
 *                     parent's job with the first pair in the header's tree
 *                     fields and the rest after its node ids. Part of the
 *                     description too.
 *                     The tenant (ina_proto_job_open_tenant; on the wire
 *                     mid): the application the member belongs
 *                     to, one number in all its processes (0: none, the job
 *                     is a tenant of its own); the scheduler does not make
 *                     one tenant's jobs compete. The creator's counts, and a
 *                     leaf passes it on to its parent.
 *                     The job's place in a stripe (protocol 10;
 *                     ina_proto_job_open_stripe_*; on the wire sid =
 *                     (width << 16) | index), this agent being number index
 *                     of the width agents the communicator stripes its calls
 *                     over (index < width, width >= 2); 0: not striped. For
 *                     the operator's views only; the creator's counts.
 *   JOB_OPENED  a->c  jid, rank, window = granted window (the longest lease a
 *                     call may get), ahead (for MID 0, "Leases"), status (MISMATCH:
 *                     another description than the job's; FORBIDDEN: not the
 *                     job's capability; LIMIT: an agent limit), arg = cookie.
 *                     A refusal says nothing of the job (jid, window 0).
 *                     A job opened by key is complete once every member opened
 *                     it; a call that starts before waits for that (the agent's
 *                     --open-wait-ms), then is denied (status INCOMPLETE) on
 *                     every member, and a member that opens later gets that
 *                     DENY at its first block of the call. After one such
 *                     wait in vain, later calls of the still incomplete job
 *                     are denied at once.
 *   JOB_LEAVE   c->a  jid, rank: the member leaves; the job dies when all left.
 *   BLOCK       c->a  one member's contribution to block `sid` of call `mid`:
 *                     jid, rank, mid, sid, seg, window, coll, op, dtype, flags,
 *                     block_elems = elements block `sid` holds (the Seg's length),
 *                     offset = element offset of this payload inside the block,
 *                     count = elements in the payload (0 = a CREDIT: the member
 *                     takes part in the block but brings no data),
 *                     arg = elements of the call's whole result vector,
 *                     payload = count * dtype size bytes.
 *   RESULT      a->c  jid, mid, sid, seg, coll, op, dtype, block_elems, count,
 *                     flags, window = the call's lease, ahead ("Leases"); payload = the completed block (count = block_elems)
 *                     for a member that set INA_PROTO_F_WANT_RESULT, else no
 *                     payload (count = 0, INA_PROTO_F_ACK_ONLY). Either way the
 *                     RESULT of block sid is the ACK of that member's block: its
 *                     window slides by one.
 *   GRANT       a->c  jid, mid, window = the call's lease, ahead ("Leases"): the
 *                     agent aggregates this call (a lease is held);
 *                     sent to every member at the decision, like DENY, so a rank
 *                     can learn the decision one round trip after its first
 *                     block, without waiting for the other members. A RESULT
 *                     of the call implies its GRANT: a member whose first
 *                     RESULT goes out with the decision (a call of one member)
 *                     gets that RESULT and no GRANT. Never a GRANT after a RESULT.
 *   DENY        a->c  jid, mid, status, ahead: the agent will not aggregate this call; sent
 *                     to every member, so all ranks fall back together.
 *   CALL_READY  c->a  jid, rank, mid, window, coll, op, dtype, arg = elements of
 *                     the call's result vector: a member of a job opened with
 *                     INA_PROTO_F_CHILDREN (a leaf agent) holds a lease for call
 *                     mid and will send its blocks. Sent before the call's
 *                     first BLOCK. The parent GRANTs a call only once every
 *                     member said CALL_READY (and it holds a lease itself), so
 *                     no leaf can deny a call another leaf was told granted.
 *   CALL_ABORT  c->a  jid, rank, mid, status: the member will not take part in
 *                     call mid (a leaf denied it, or lost a member of its own
 *                     in the middle of it). Before a GRANT went out: the parent
 *                     denies the call on every member with this status; after:
 *                     the call fails (ERROR) on every member.
 *                     From a rank (protocol 7), status ABORTED: the call is
 *                     striped over several agents and another of them denied
 *                     it, so every member falls back (docs/HIERARCHY.md,
 *                     "Striping"); this agent ends the call and gives its lease
 *                     back: ERROR(ABORTED) to every member if it had started,
 *                     else DENY(ABORTED) at their first block of it. Members
 *                     take either as "fall back", never as a failure.
 *   ERROR       a->c  the sender's message was rejected: status, and the offending
 *                     message's type in op, its jid/mid/sid echoed. With status
 *                     VERSION (protocol 14), count and arg = the lowest and the
 *                     highest version the agent speaks ("Versions"). An ERROR that
 *                     ends a call the tree lost a part under (UPSTREAM,
 *                     NOT_MEMBER) sets INA_PROTO_F_IN_FLIGHT where the call was
 *                     under way at that moment (its members had sent BLOCKs to
 *                     agents that were then lost), not where a tree already
 *                     broken refused a later call.
 *   PING        c->a  arg = cookie (protocol 11): is the agent there? Sent by a
 *                     rank whose calls wait and that heard nothing from the
 *                     agent for a while (its liveness probe), or by a leaf
 *                     agent to its silent parent. No other field.
 *               a->c  (protocol 12) the same, from a parent agent to a silent
 *                     child agent (a leaf); never to a rank.
 *   PONG        a->c  arg = the PING's cookie: answered at once, whatever the
 *                     agent's data path is doing (a full pool, a deferred call,
 *                     a job still incomplete), so that a rank tells an agent
 *                     that stopped (frozen, its link dead) from one that is slow
 *                     or waits for another rank.
 *               c->a  (protocol 12) a child agent's answer, from its loop.
 *   HOST_COST   c->a  (protocol 16) jid, rank, coll: what a call of this job
 *                     that the agent denied cost the sender on the hosts (its
 *                     host algorithm, from its start to its end; not the
 *                     wait for the verdict), for the scheduler to weigh real
 *                     costs instead of its model (ina_proto_timing_*: the
 *                     call's result vector in bytes, on the wire arg; the
 *                     time in nanoseconds, on the wire mid). Sent by the
 *                     job's member 0, at most once per denied call; the
 *                     agent answers nothing (an ERROR if it is not a
 *                     member's). Never sent on a connection of an older
 *                     version.
 *   CALL_TIME   c->a  (protocol 17) jid, rank, coll: what a blocking call of
 *                     this job took the sender in all, from its post to its
 *                     end, whatever the verdict (the wait for it, then the
 *                     agent's service or the host algorithm), for the
 *                     scheduler to judge whether sharing the agent harms the
 *                     job (ina_proto_timing_*: bytes on arg, nanoseconds on
 *                     mid, as HOST_COST). Sent by the job's member 0, at most
 *                     once per call, for calls of the component's
 *                     coll_ina_call_time_min_bytes or more; answered as
 *                     HOST_COST. Never sent on a connection of an older
 *                     version.
 *
 * Collectives (coll) and what each member sends for every block sid:
 *   ALLREDUCE       data (offset 0, count = block_elems), WANT_RESULT.
 *   REDUCE          data; only the root sets WANT_RESULT (the others get ACKs).
 *   REDUCE_SCATTER  data; members whose part of the result overlaps the block set
 *                   WANT_RESULT and cut their part out of it.
 *   BCAST           root: data (dtype UINT8, bytes); others: CREDIT with WANT_RESULT.
 *   ALLGATHER       the result vector is the members' chunks concatenated (dtype
 *                   UINT8, bytes); each member sends the part of its chunk that
 *                   falls in the block (offset, count), or a CREDIT if none;
 *                   everyone sets WANT_RESULT.
 *   BARRIER         one block (sid 0, block_elems 0): CREDIT with WANT_RESULT.
 * A Seg completes when every member contributed (its Rank/Node bitmaps are empty).
 * Reduction collectives need data from every member; the others copy each
 * member's bytes to its offset (the gather happens in the switch).
 *
 * Byte order: host order (agent and clients run on the same architecture class;
 * the magic detects a mismatch).
 */
#ifndef INA_PROTO_H
#define INA_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INA_PROTO_MAGIC   0x31414e49u /* "INA1" in memory on little endian */
#define INA_PROTO_VERSION 17u /* 17: CALL_TIME (the ranks' measured time of
                                   a whole call, offloaded or not);
                               16: HOST_COST (the ranks' measured cost of a
                                   denied call on the hosts);
                               15: JOB_OPEN may carry a tree's levels above
                                   the first (trees of any depth);
                               14: HELLO offers a range of versions, HELLO_ACK
                                   says the chosen one, ERROR(VERSION) the agent's
                                   range ("Versions");
                               13: ERROR's INA_PROTO_F_IN_FLIGHT;
                               12: parent agents probe their children (PING a->c);
                               11: PING/PONG (liveness probes); 10: status DRAINING, JOB_OPEN's stripe; 9: JOB_OPEN carries
                               the job's capability, BLOCK and RESULT certification (`done`);
                               8: per-call leases (GRANT/RESULT window)
                               and `ahead`; 7: CALL_ABORT from a rank, status ABORTED
                               (striping); 6: agent trees (JOB_OPEN's tree
                               fields, CALL_READY, CALL_ABORT); 5: jobs by key
                               only (JOB_CREATE/JOIN retired); 4: JOB_OPEN;
                               3: rendezvous in HELLO */

/* The oldest version this build still speaks (an agent serves a component
 * of any version from it to INA_PROTO_VERSION; "Versions"). */
#define INA_PROTO_VERSION_MIN 13u

/* UCX active-message ids. */
#define INA_PROTO_AM_TO_AGENT  17u
#define INA_PROTO_AM_TO_CLIENT 18u

/* Bytes of the key that names a job opened with JOB_OPEN, and of the
 * capability that proves the opener is one of its members. */
#define INA_PROTO_JOB_KEY_BYTES 16u
#define INA_PROTO_JOB_CAP_BYTES 16u

/* Hard limits the agent enforces (and the client respects). */
#define INA_PROTO_MAX_MEMBERS  65536u
#define INA_PROTO_MAX_WINDOW   1024u
#define INA_PROTO_MAX_SEG_BYTES (1u << 20)

typedef enum ina_proto_type {
    INA_PROTO_HELLO = 1,
    INA_PROTO_HELLO_ACK = 2,
    /* 3-6: JOB_CREATE, JOB_CREATED, JOB_JOIN, JOB_JOINED until protocol 4 */
    INA_PROTO_JOB_LEAVE = 7,
    INA_PROTO_BLOCK = 8,
    INA_PROTO_RESULT = 9,
    INA_PROTO_DENY = 10,
    INA_PROTO_ERROR = 11,
    INA_PROTO_GRANT = 12,
    INA_PROTO_JOB_OPEN = 13,
    INA_PROTO_JOB_OPENED = 14,
    INA_PROTO_CALL_READY = 15,
    INA_PROTO_CALL_ABORT = 16,
    INA_PROTO_PING = 17,
    INA_PROTO_PONG = 18,
    INA_PROTO_HOST_COST = 19, /* protocol 16 */
    INA_PROTO_CALL_TIME = 20, /* protocol 17 */
    INA_PROTO_TYPE_MAX = 20
} ina_proto_type_t;

/* The collective a BLOCK/RESULT belongs to. */
typedef enum ina_proto_coll {
    INA_COLL_ALLREDUCE = 0,
    INA_COLL_REDUCE = 1,
    INA_COLL_REDUCE_SCATTER = 2,
    INA_COLL_BCAST = 3,
    INA_COLL_ALLGATHER = 4,
    INA_COLL_BARRIER = 5,
    INA_COLL_COUNT
} ina_proto_coll_t;

/* BLOCK/RESULT flags. */
#define INA_PROTO_F_WANT_RESULT 0x1u /* BLOCK: send me the completed block */
#define INA_PROTO_F_ACK_ONLY    0x2u /* RESULT: no payload, only the ACK */
/* JOB_OPEN flag. */
#define INA_PROTO_F_CHILDREN    0x4u /* JOB_OPEN: the members are child agents,
                                        which vote on every call (CALL_READY) */
/* ERROR flag (protocol 13). */
#define INA_PROTO_F_IN_FLIGHT   0x8u /* ERROR ending a call: it was under way when the
                                        tree lost a part under it (the parent, a
                                        leaf, a leaf's member); without it, a tree
                                        already broken refused the call */

/* Execution status: how a message, a job or a call went (OK, or why it was
 * refused, denied or failed); also the status in a call's CQE. */
typedef enum ina_proto_status {
    INA_PROTO_OK = 0,
    INA_PROTO_ERR_MALFORMED = 1,   /* bad magic, size, type or field range */
    INA_PROTO_ERR_VERSION = 2,     /* protocol version not spoken */
    INA_PROTO_ERR_NO_JOB = 3,      /* unknown JID */
    INA_PROTO_ERR_NOT_MEMBER = 4,  /* sender is not (jid, rank) */
    INA_PROTO_ERR_NO_RESOURCES = 5,/* no Segs / jobs left: a DENY reason */
    INA_PROTO_ERR_MISMATCH = 6,    /* op/dtype/count differ from other members */
    INA_PROTO_ERR_UNSUPPORTED = 7, /* (op, dtype) pair the agent cannot reduce */
    INA_PROTO_ERR_SEG_BUSY = 8,    /* block names a Seg still held by another SID */
    INA_PROTO_ERR_INCOMPLETE = 9,  /* a job opened by key, not by all members yet: a DENY reason */
    INA_PROTO_ERR_UPSTREAM = 10,   /* the parent agent cannot serve the job (unreachable,
                                      refused, lost): a DENY or abort reason */
    INA_PROTO_ERR_ABORTED = 11,    /* a member gave a striped call back (another
                                      agent of the stripe denied it): fall back */
    INA_PROTO_ERR_BUSY = 12,       /* another job's call holds the agent (tdm), or another
                                      job holds it (exclusive): a DENY reason */
    INA_PROTO_ERR_OUTSCORED = 13,  /* another job's call, predicted while this one would
                                      run, scores higher (tdm): a DENY reason */
    INA_PROTO_ERR_FORBIDDEN = 14,  /* JOB_OPEN without the job's capability (a foreign
                                      or forged opener): refused, the job unaffected */
    INA_PROTO_ERR_LIMIT = 15,      /* one of the agent's limits (connections, jobs per
                                      connection, members, bytes kept per connection):
                                      HELLO, JOB_OPEN or a call refused; the agent's log
                                      names the limit */
    INA_PROTO_ERR_DRAINING = 16,   /* the agent's operator drains it (ina-switchctl
                                      drain) before a restart: a DENY reason */
    INA_PROTO_STATUS_MAX = 16
} ina_proto_status_t;

/* Element types on the wire. Fixed-width: the component maps every MPI
 * predefined C integer/floating type onto one of these by size/signedness. */
typedef enum ina_proto_dtype {
    INA_DT_INT8 = 0,
    INA_DT_UINT8,
    INA_DT_INT16,
    INA_DT_UINT16,
    INA_DT_INT32,
    INA_DT_UINT32,
    INA_DT_INT64,
    INA_DT_UINT64,
    INA_DT_FLOAT,       /* IEEE binary32 */
    INA_DT_DOUBLE,      /* IEEE binary64 */
    INA_DT_LONG_DOUBLE, /* C long double of the host (x87 80-bit in 16 bytes on x86-64) */
    INA_DT_BOOL,        /* C _Bool, one byte, 0 or 1: logical ops only */
    INA_DT_FLOAT_COMPLEX,       /* C float _Complex: SUM, PROD */
    INA_DT_DOUBLE_COMPLEX,      /* C double _Complex: SUM, PROD */
    INA_DT_LONG_DOUBLE_COMPLEX, /* C long double _Complex: SUM, PROD */
    /* MINLOC/MAXLOC pairs, laid out as the C structs MPI defines for them
     * (value first, then int index, with the host's padding): */
    INA_DT_FLOAT_INT,       /* struct { float v; int i; }        8 bytes */
    INA_DT_DOUBLE_INT,      /* struct { double v; int i; }      16 bytes */
    INA_DT_LONG_INT,        /* struct { long v; int i; }        16 bytes */
    INA_DT_2INT,            /* struct { int v; int i; }          8 bytes */
    INA_DT_SHORT_INT,       /* struct { short v; int i; }        8 bytes */
    INA_DT_LONG_DOUBLE_INT, /* struct { long double v; int i; } 32 bytes */
    INA_DT_COUNT
} ina_proto_dtype_t;

typedef enum ina_proto_op {
    INA_OP_SUM = 0,
    INA_OP_PROD,
    INA_OP_MIN,
    INA_OP_MAX,
    INA_OP_LAND,
    INA_OP_LOR,
    INA_OP_LXOR,
    INA_OP_BAND,
    INA_OP_BOR,
    INA_OP_BXOR,
    INA_OP_MINLOC, /* pairs: smaller value; on a tie the smaller index */
    INA_OP_MAXLOC, /* pairs: larger value; on a tie the smaller index */
    INA_OP_REPLACE, /* BCAST/ALLGATHER/BARRIER: bytes are placed, not reduced */
    INA_OP_COUNT
} ina_proto_op_t;

/* One header for every message: 64 bytes, naturally aligned, no padding. */
typedef struct ina_proto_hdr {
    uint32_t magic;     /*  0: INA_PROTO_MAGIC */
    uint8_t version;    /*  4: INA_PROTO_VERSION */
    uint8_t type;       /*  5: ina_proto_type_t */
    uint8_t status;     /*  6: ina_proto_status_t */
    uint8_t op;         /*  7: ina_proto_op_t (ERROR: the rejected message's type) */
    uint8_t dtype;      /*  8: ina_proto_dtype_t */
    uint8_t coll;       /*  9: ina_proto_coll_t (BLOCK/RESULT) */
    uint16_t window;    /* 10: lease size / window */
    uint32_t jid;       /* 12 */
    uint32_t rank;      /* 16: sender's rank in the job */
    uint32_t sid;       /* 20 */
    uint64_t mid;       /* 24 */
    uint32_t seg;       /* 32: Seg unit inside the lease = sid % window */
    uint32_t count;     /* 36: elements in payload, or member count */
    uint64_t arg;       /* 40: type specific, see above */
    uint32_t offset;    /* 48: BLOCK: element offset of the payload in the block */
    uint32_t block_elems; /* 52: BLOCK/RESULT: elements of the whole block */
    uint16_t flags;     /* 56: INA_PROTO_F_* */
    uint16_t ahead;     /* 58: JOB_OPENED/GRANT/DENY/RESULT: see "Leases" */
    uint32_t done;      /* 60: BLOCK/RESULT: certification, see "Certification" */
} ina_proto_hdr_t;

#ifdef __cplusplus
#define INA_STATIC_ASSERT static_assert
#else
#define INA_STATIC_ASSERT _Static_assert
#endif
INA_STATIC_ASSERT(sizeof(ina_proto_hdr_t) == 64, "ina_proto_hdr_t must be 64 bytes");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, version) == 4, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, coll) == 9, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, window) == 10, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, jid) == 12, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, rank) == 16, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, sid) == 20, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, mid) == 24, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, seg) == 32, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, count) == 36, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, arg) == 40, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, offset) == 48, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, block_elems) == 52, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, flags) == 56, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, ahead) == 58, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, done) == 60, "layout");

/* Fill magic/version/type, zero the rest. */
void ina_proto_init(ina_proto_hdr_t *hdr, ina_proto_type_t type);

/* Size in bytes of one element of a wire dtype; 0 if out of range. */
size_t ina_proto_dtype_size(unsigned dtype);

/* Whether MPI defines (op, dtype) and the kernels implement it:
 * integer types: SUM PROD MIN MAX LAND LOR LXOR BAND BOR BXOR;
 * floating types: SUM PROD MIN MAX; BOOL: LAND LOR LXOR;
 * complex types: SUM PROD; pair types: MINLOC MAXLOC;
 * REPLACE: UINT8 only (bytes placed by BCAST/ALLGATHER/BARRIER). */
int ina_proto_op_valid(unsigned op, unsigned dtype);

/* Whether (op, dtype) is a valid combination for collective `coll`:
 * reduction collectives take a reducing op, BCAST/ALLGATHER/BARRIER take
 * REPLACE on UINT8. */
int ina_proto_coll_valid(unsigned coll, unsigned op, unsigned dtype);

/* Validate one received message: header bytes as received (hdr_len may be
 * wrong!) and the payload length. Checks magic, version (INA_PROTO_VERSION_MIN
 * to INA_PROTO_VERSION; a HELLO or an ERROR(VERSION) of any version, whose
 * fields every version keeps: a HELLO's lowest version at most its highest;
 * which version a connection chose is its owner's to check), type range, reserved
 * fields, status range, per-type field ranges (window <= INA_PROTO_MAX_WINDOW,
 * seg < window and seg == sid % window for BLOCK, count <= member limit,
 * rank < INA_PROTO_MAX_MEMBERS for JOB_OPENED/LEAVE, BLOCK and CALL_READY/ABORT,
 * rank < count and offset < block_elems (or both 0) for JOB_OPEN, whose only
 * flag is INA_PROTO_F_CHILDREN; CALL_READY's coll/op/dtype as a BLOCK's and
 * window > 0,
 * coll < INA_COLL_COUNT and ina_proto_coll_valid for BLOCK/RESULT,
 * block_elems * dtype size <= INA_PROTO_MAX_SEG_BYTES, offset + count <= block_elems,
 * block_elems <= arg for BLOCK; BLOCK count 0 is a CREDIT; RESULT count is
 * block_elems, or 0 with INA_PROTO_F_ACK_ONLY; unknown flag bits rejected;
 * payload_len == count * dtype size for BLOCK/RESULT, == 32 + count * 4 for
 * JOB_OPEN, == 0 for the others; the retired types 3-6 are MALFORMED;
 * HOST_COST only from protocol 16, with coll < INA_COLL_COUNT, rank below
 * the member limit, and no op, dtype, window, offset or block_elems;
 * CALL_TIME the same from protocol 17).
 * Also rejected (MALFORMED): a reduction BLOCK that is not the whole block
 * (offset 0, count = block_elems; so no CREDIT); block_elems 0 except BARRIER,
 * whose only form is sid 0, block_elems = count = offset = arg = 0; flags other
 * than WANT_RESULT on a BLOCK or ACK_ONLY on a RESULT; a RESULT offset != 0;
 * nonzero coll/offset/block_elems on the other types, and flags other than
 * IN_FLIGHT on an ERROR or any on the others. A valid (op, dtype)
 * in the wrong collective is MALFORMED, an invalid pair UNSUPPORTED.
 * Returns INA_PROTO_OK or the status that explains the rejection.
 * Never reads past hdr_len. */
ina_proto_status_t ina_proto_check(const void *hdr, size_t hdr_len, size_t payload_len);

/* ---- Fields that mean something of their own in one message type -------
 * The header's fields are named for the data path (BLOCK, RESULT); the
 * types below reuse some of them. Code reads and writes those through
 * these names, never through the reused field. */

/* JOB_OPEN: the tenant (the application the member belongs to; 0: none). */
static inline void ina_proto_job_open_set_tenant(ina_proto_hdr_t *h, uint64_t tenant)
{
    h->mid = tenant;
}
static inline uint64_t ina_proto_job_open_tenant(const ina_proto_hdr_t *h)
{
    return h->mid;
}

/* JOB_OPEN: the job's place in a tree of agents: `leaves` leaf agents the
 * members talk to (0 or 1: the job ends at this agent), this agent being
 * leaf number `leaf` among them. */
static inline void ina_proto_job_open_set_tree(ina_proto_hdr_t *h, uint32_t leaves, uint32_t leaf)
{
    h->block_elems = leaves;
    h->offset = leaf;
}
static inline uint32_t ina_proto_job_open_leaves(const ina_proto_hdr_t *h)
{
    return h->block_elems;
}
static inline uint32_t ina_proto_job_open_leaf(const ina_proto_hdr_t *h)
{
    return h->offset;
}

/* JOB_OPEN (protocol 15): the levels of a tree above the header's, carried
 * after the node ids: at most INA_PROTO_MAX_TREE_UP (trees of up to
 * INA_PROTO_MAX_TREE_UP + 2 levels of agents), each a pair of uint32_t. */
#define INA_PROTO_MAX_TREE_UP 6u
typedef struct ina_proto_tree_level {
    uint32_t groups; /* the agents of this job under that level's parent */
    uint32_t group;  /* this path's agent among them */
} ina_proto_tree_level_t;
/* The payload of a JOB_OPEN without levels above: key, capability, node ids. */
static inline size_t ina_proto_job_open_base_len(const ina_proto_hdr_t *h)
{
    return INA_PROTO_JOB_KEY_BYTES + INA_PROTO_JOB_CAP_BYTES + (size_t) h->count * sizeof(uint32_t);
}
/* How many levels above a checked JOB_OPEN of payload_len bytes carries. */
static inline uint32_t ina_proto_job_open_levels_above(const ina_proto_hdr_t *h,
                                                       size_t payload_len)
{
    return (uint32_t) ((payload_len - ina_proto_job_open_base_len(h)) /
                       sizeof(ina_proto_tree_level_t));
}
/* Level i (0: the parent's place at its own parent) of a checked JOB_OPEN's
 * payload (which may be unaligned). */
static inline ina_proto_tree_level_t ina_proto_job_open_level_above(const ina_proto_hdr_t *h,
                                                                    const void *payload,
                                                                    uint32_t i)
{
    ina_proto_tree_level_t l;
    memcpy(&l,
           (const uint8_t *) payload + ina_proto_job_open_base_len(h) +
               (size_t) i * sizeof(ina_proto_tree_level_t),
           sizeof(l));
    return l;
}

/* JOB_OPEN: the job's place in a stripe: this agent is number `index` of
 * the `width` agents a communicator stripes its calls over (width >= 2;
 * width 0 or 1: not striped). The word is (width << 16) | index, or 0. */
static inline void ina_proto_job_open_set_stripe(ina_proto_hdr_t *h, uint32_t index,
                                                 uint32_t width)
{
    h->sid = width > 1 ? (width << 16) | (index & 0xffffu) : 0u;
}
static inline uint32_t ina_proto_job_open_stripe_word(const ina_proto_hdr_t *h)
{
    return h->sid;
}
static inline uint32_t ina_proto_job_open_stripe_width(const ina_proto_hdr_t *h)
{
    return h->sid >> 16;
}
static inline uint32_t ina_proto_job_open_stripe_index(const ina_proto_hdr_t *h)
{
    return h->sid & 0xffffu;
}

/* HELLO: the sender's UCX stream segment and its rendezvous threshold for
 * RESULTs (0: eager only). */
static inline void ina_proto_hello_set_transport(ina_proto_hdr_t *h, uint32_t stream_seg_bytes,
                                                 uint64_t rndv_result_bytes)
{
    h->count = stream_seg_bytes;
    h->arg = rndv_result_bytes;
}
static inline uint32_t ina_proto_hello_stream_seg(const ina_proto_hdr_t *h)
{
    return h->count;
}
static inline uint64_t ina_proto_hello_rndv_results(const ina_proto_hdr_t *h)
{
    return h->arg;
}

/* HELLO_ACK: the agent's largest lease (Segs), its Seg size in bytes and
 * its rendezvous threshold for BLOCKs (0: eager only). */
static inline void ina_proto_hello_ack_set_agent(ina_proto_hdr_t *h, uint32_t max_window,
                                                 uint64_t seg_bytes, uint64_t rndv_block_bytes)
{
    h->count = max_window;
    h->arg = seg_bytes;
    h->mid = rndv_block_bytes;
}
static inline uint32_t ina_proto_hello_ack_max_window(const ina_proto_hdr_t *h)
{
    return h->count;
}
static inline uint64_t ina_proto_hello_ack_seg_bytes(const ina_proto_hdr_t *h)
{
    return h->arg;
}
static inline uint64_t ina_proto_hello_ack_rndv_blocks(const ina_proto_hdr_t *h)
{
    return h->mid;
}

/* ERROR: the type of the message it rejects. */
static inline void ina_proto_error_set_rejected(ina_proto_hdr_t *h, unsigned type)
{
    h->op = (uint8_t) type;
}
static inline unsigned ina_proto_error_rejected(const ina_proto_hdr_t *h)
{
    return h->op;
}

/* HOST_COST and CALL_TIME: the call's result vector in bytes, and a time
 * in nanoseconds: what the denied call cost the sender on the hosts
 * (HOST_COST), or what the whole call took the sender (CALL_TIME). */
static inline void ina_proto_timing_set(ina_proto_hdr_t *h, uint64_t bytes, uint64_t ns)
{
    h->arg = bytes;
    h->mid = ns;
}
static inline uint64_t ina_proto_timing_bytes(const ina_proto_hdr_t *h)
{
    return h->arg;
}
static inline uint64_t ina_proto_timing_ns(const ina_proto_hdr_t *h)
{
    return h->mid;
}

/* ---- Versions: the fields of the first-contact messages, by name. ----- */

/* A HELLO offering versions lowest..highest and feature bits `features`. */
static inline void ina_proto_hello_offer(ina_proto_hdr_t *hello, unsigned lowest, unsigned highest,
                                         uint32_t features)
{
    hello->version = (uint8_t) highest;
    hello->rank = lowest;
    hello->sid = features;
}

/* The range a HELLO offers (a HELLO of protocol 13 or older: its version). */
static inline unsigned ina_proto_hello_lowest(const ina_proto_hdr_t *hello)
{
    return hello->rank != 0 ? hello->rank : hello->version;
}
static inline unsigned ina_proto_hello_highest(const ina_proto_hdr_t *hello)
{
    return hello->version;
}
static inline uint32_t ina_proto_hello_features(const ina_proto_hdr_t *hello)
{
    return hello->sid;
}

/* The version to speak with a peer that offers peer_lowest..peer_highest,
 * this build speaking lowest..highest: the highest both speak, or 0 if
 * the ranges do not meet. */
static inline unsigned ina_proto_version_choose(unsigned peer_lowest, unsigned peer_highest,
                                                unsigned lowest, unsigned highest)
{
    const unsigned top = peer_highest < highest ? peer_highest : highest;
    const unsigned bottom = peer_lowest > lowest ? peer_lowest : lowest;
    return top >= bottom ? top : 0u;
}

/* HELLO_ACK's feature bits: those both sides use. */
static inline void ina_proto_hello_ack_set_features(ina_proto_hdr_t *ack, uint32_t features)
{
    ack->sid = features;
}
static inline uint32_t ina_proto_hello_ack_features(const ina_proto_hdr_t *ack)
{
    return ack->sid;
}

/* ERROR(VERSION)'s range: the versions the refusing agent speaks. An agent
 * of protocol 13 or older names none: its own version, in the header. */
static inline void ina_proto_refusal_set_range(ina_proto_hdr_t *error, unsigned lowest,
                                               unsigned highest)
{
    error->count = lowest;
    error->arg = highest;
}
static inline unsigned ina_proto_refusal_lowest(const ina_proto_hdr_t *error)
{
    return error->count != 0 ? error->count : error->version;
}
static inline unsigned ina_proto_refusal_highest(const ina_proto_hdr_t *error)
{
    return error->arg != 0 && error->arg <= 255 ? (unsigned) error->arg : error->version;
}

/* After a HELLO offering lowest..highest was refused with `refusal`: the
 * version to offer alone in a second HELLO, or 0 for none. An agent of
 * protocol 13 or older refuses every version but its own without naming a
 * range; one that names its range refused because none is shared. */
static inline unsigned ina_proto_version_retry(const ina_proto_hdr_t *refusal, unsigned lowest,
                                               unsigned highest)
{
    const unsigned v = ina_proto_version_choose(ina_proto_refusal_lowest(refusal),
                                                ina_proto_refusal_highest(refusal), lowest,
                                                highest);
    return v != 0 && v < highest ? v : 0u;
}

/* The full certification mark a message's 32-bit `done` stands for: the
 * largest value <= mid + 1 with those low bits ("Certification"). */
static inline uint64_t ina_proto_mark(uint64_t mid, uint32_t done)
{
    return mid + 1 - (uint32_t) ((uint32_t) (mid + 1) - done);
}

/* Human-readable names, for logs. Never NULL. */
const char *ina_proto_type_name(unsigned type);
const char *ina_proto_status_name(unsigned status);
const char *ina_proto_op_name(unsigned op);
const char *ina_proto_dtype_name(unsigned dtype);
const char *ina_proto_coll_name(unsigned coll);

#ifdef __cplusplus
}
#endif

#endif /* INA_PROTO_H */

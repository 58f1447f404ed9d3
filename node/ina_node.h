/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The node stage (the first level of the hierarchy, below any agent): the ranks
 * of one communicator that share a node combine their contributions through one
 * POSIX shared-memory segment. For a communicator whose members are all on one
 * node this is the whole collective; the agent is never involved.
 *
 * A group is the local ranks of one communicator; every rank of the group
 * opens it with the same name and nlocal, without any communication: the
 * first to arrive creates and reserves the segment, the others attach, and
 * the name is unlinked as soon as the last local rank attached (so a killed
 * job leaves nothing in /dev/shm once its groups are set up).
 *
 * Calls are posted in the communicator's call order (MPI requires every
 * rank to issue a communicator's collectives in the same order) and run one
 * after the other, cut into steps of at most chunk_bytes per rank. Nothing
 * blocks: ina_node_test advances the group as far as the other ranks allow
 * and says whether the call completed.
 *
 * Reduction order (floats bit-identical on every rank, run after run): the
 * contributions of local ranks 0, 1, ..., nlocal-1 are folded left to right,
 * ((c0 op c1) op c2) ..., whatever rank computes a piece; that is the order
 * the agent uses across ranks too. Large steps spread the work: local rank
 * k folds shard k of the step (a node-level reduce-scatter), then every
 * rank copies the whole result out (a node-level allgather).
 *
 * A communicator whose members sit on several nodes adds the agent level
 * above it: the node's combined contribution crosses the node's link
 * once per call, cut into `nstreams` streams (one agent job each, joined by
 * one local rank of every node as that node's member: its leader); the
 * leader of stream k folds stream k's part of every step, sends it, takes
 * the agent's result back into the segment, and every local rank copies
 * the result out. The
 * node is one member of each stream job (the Node bitmap holds one member
 * per node), so a call's bytes on the link are S up and S down per node,
 * whatever the number of ranks. All streams of a call are granted or none
 * is used: the leaders agree through the segment, since every node sees
 * the same verdict for each stream (node_uplink.cpp). Across nodes the
 * agent folds node partials in node order, so results are bit-identical on
 * every rank and run to run for a given layout, not across layouts.
 *
 * Threading: one caller at a time per group.
 */
#ifndef INA_NODE_H
#define INA_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "ina_client.h" /* ina_status_t, ina_coll_desc_t */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ina_node_group ina_node_group_t;
typedef struct ina_node_op ina_node_op_t;

typedef struct ina_node_config {
    const char *name;        /* shm_open name ("/ina-..."), the same on every local rank */
    uint32_t nlocal;         /* ranks in the group (>= 1) */
    uint32_t index;          /* this rank's place among them, 0..nlocal-1 */
    /* The communicator: size members, this one `rank`, node_of[r] the node
     * (0..nnodes-1) of member r. node_of NULL: every member is in the group
     * (size = nlocal, rank = index). Roots and recvcounts of the calls are
     * ranks of the communicator. */
    uint32_t size;
    uint32_t rank;
    const uint32_t *node_of; /* copied */
    /* The agent level, when node_of names more than one node: */
    uint32_t nstreams;       /* streams, each led by one local rank of every node */
    const uint32_t *leaders; /* nstreams entries: the local index that leads stream j on
                                this node (copied); NULL: local ranks 0..nstreams-1 */
    ina_job_t *job;          /* this rank's stream job if it leads one, else NULL; the
                                job's member index is the node's, and every job has
                                block_bytes and one member per node. A leader without
                                a job reports its stream unreachable at every call */
    uint32_t block_bytes;
    size_t chunk_bytes;      /* per rank and step; a multiple of 64 (ina_node_chunk_bytes) */
    size_t small_bytes;      /* steps of at most this many bytes: every rank folds the
                                whole step itself (one synchronisation instead of two) */
    int attach_timeout_ms;   /* how long to wait for the creator to reserve the memory */
    /* Placement: nlocal entries, the NUMA node (hwloc logical index) each
     * local rank is bound to, -1 if not known; NULL: leave the pages to the
     * kernel. The rank that creates the segment binds each rank's slots and
     * each folding rank's share of the result area to that rank's node
     * before it reserves the memory (numa_placement.h). */
    const int32_t *numa;
} ina_node_config_t;

/* Bytes of the segment of a group of nlocal ranks with steps of chunk_bytes. */
size_t ina_node_segment_bytes(uint32_t nlocal, size_t chunk_bytes);
/* The largest step (a multiple of 64, at most chunk_max) whose segment fits
 * in segment_max bytes; 0 if none does. */
size_t ina_node_chunk_bytes(uint32_t nlocal, size_t segment_max, size_t chunk_max);

/* Open (create or attach) the group's segment. INA_ERR_NOMEM: the memory
 * could not be reserved (e.g. /dev/shm is full); every rank of the group
 * sees the same outcome. Other errors carry a reason in err. */
ina_status_t ina_node_group_open(const ina_node_config_t *cfg, ina_node_group_t **out,
                                 char *err, size_t errlen);
/* What the placement of the group's segment did, in words (for logs). */
const char *ina_node_group_placement(const ina_node_group_t *group);
/* Unmap the segment and remove its name if still there. No call may be in
 * flight. */
void ina_node_group_close(ina_node_group_t *group);
/* The file of the segment named `name` while its name exists (Linux:
 * /dev/shm/...), for the runtime's cleanup of a job that dies before every
 * rank attached. 0, or -1 if buf is too short. */
int ina_node_shm_path(const char *name, char *buf, size_t len);

/* Post one call, as described in ina_client.h (ina_coll_desc_t), with roots
 * and recvcounts indexed by the communicator's rank. Nothing moves until
 * ina_node_test / ina_node_decision. */
ina_status_t ina_node_post(ina_node_group_t *group, const ina_coll_desc_t *desc,
                           ina_node_op_t **out);
/* Post a completed call of `group` again, as ina_node_post posted it (the
 * same description and buffers, their contents new), without planning its
 * steps anew: a persistent request's start. Only a one-node group's calls
 * can be; INA_ERR_INVALID for others, or a call in flight (post anew). */
ina_status_t ina_node_repost(ina_node_group_t *group, ina_node_op_t *op);
/* Advance the group's calls; 1 once every local rank knows whether `op` is
 * offloaded, with cqe->outcome INA_OFFLOADED (test it to completion), a
 * fallback outcome (every rank of the communicator falls back: the op is
 * complete, free it), or an error in cqe->rc (the op is complete). A call of
 * a one-node group is decided at once. Every rank of the communicator gets
 * the same answer, except that an error may be a fallback elsewhere. */
int ina_node_decision(ina_node_op_t *op, ina_cqe_t *cqe);
/* Advance the group's calls as far as the other ranks allow; nonzero when
 * `op` completed; then cqe (if not NULL) says how: rc INA_OK with outcome
 * INA_OFFLOADED, or the error that ended it. */
int ina_node_test(ina_node_op_t *op, ina_cqe_t *cqe);
/* cqe.status of a call whose outcome is INA_FALLBACK_UNREACHABLE because a
 * stream's leaders found the agent lost (they settled the call without it,
 * nothing held anywhere): the same on every rank of the communicator. */
#define INA_NODE_STATUS_LOST 31
/* Whether this rank's stream call of `op` was lost with the agent and
 * finished with the stream's other leaders (ina_call_recover_*). */
int ina_node_op_recovered(const ina_node_op_t *op);
/* The stream job this rank leads from now on (the old one left: offload
 * resumed after a lost agent); no call may be in flight. */
void ina_node_group_set_job(ina_node_group_t *group, ina_job_t *job);
/* Advance the group's calls; nonzero if any step moved. */
int ina_node_progress(ina_node_group_t *group);
/* Release a completed call. */
void ina_node_op_free(ina_node_op_t *op);

#ifdef __cplusplus
}
#endif

#endif /* INA_NODE_H */

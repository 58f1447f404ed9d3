/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * Inside the node stage (ina_node.h): the group of a communicator's local
 * ranks, its segment layout and step counters, and the two kinds of call
 * that run on it:
 *   node_stage.cpp   LocalOp: every member is on this node; the node stage
 *                    is the whole collective.
 *   node_uplink.cpp  UplinkOp: members on several nodes; the node's
 *                    combined contribution goes to the agent in streams,
 *                    one per leading local rank, and the result comes back
 *                    into the segment for every local rank.
 *
 * Segment layout (one per group):
 *   SegmentHeader                      one cache line
 *   RankLine[nlocal]                   one cache line per local rank
 *   slot[2][nlocal][chunk]             each rank's contribution to a step
 *   result[2][chunk]                   the step's result (bcast data; the
 *                                      streams' blocks to and from the agent)
 * Steps are numbered 1, 2, ... across all calls of the group, alike on every
 * rank (calls come in the same order, and a call's steps depend only on its
 * arguments, which MPI requires to match). Step s uses buffer set s % 2, so
 * a rank may fill step s+1 while another still reads step s.
 *
 * Every rank publishes, per step s, in its own line:
 *   arrived  = s  its contribution is in its slot (bcast: the root's data)
 *   reduced  = s  its shard of the result is folded (large local reductions)
 *   returned = s  (a stream's leader) the agent's result of its part is back
 *   released = s  it is done reading step s's buffers
 * and, per call of an UplinkOp, verdict = call * kVerdictSpan + the agent's
 * DENY status * 8 + code (kVerdict*). A
 * rank writes into set s % 2 only when every rank released s - 2. Every
 * rank sets released for every step, whatever its role.
 */
#ifndef INA_NODE_GROUP_H
#define INA_NODE_GROUP_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "ina_node.h"
#include "numa_placement.h"
#include "shm_segment.h"

namespace ina::node {

struct alignas(64) RankLine {
    std::atomic<uint64_t> arrived;
    std::atomic<uint64_t> reduced;
    std::atomic<uint64_t> returned;
    std::atomic<uint64_t> released;
    std::atomic<uint64_t> verdict;
};

// Verdict codes of one stream of an UplinkOp (RankLine::verdict % 8; the
// bits above, up to kVerdictSpan, carry the DENY status: why, for MPI_T).
constexpr uint64_t kVerdictSpan = 256;
constexpr uint64_t kVerdictGo = 1;          // granted
constexpr uint64_t kVerdictDenied = 2;      // the agent denied it
constexpr uint64_t kVerdictUnreachable = 3; // no agent before anything was sent
constexpr uint64_t kVerdictError = 4;       // failed: the call is an error

constexpr size_t kPage = 4096;

inline size_t data_offset(uint32_t nlocal)
{
    size_t end = sizeof(SegmentHeader) + sizeof(RankLine) * nlocal;
    return (end + kPage - 1) / kPage * kPage;
}

inline bool is_reduction(unsigned coll)
{
    return coll == INA_COLL_ALLREDUCE || coll == INA_COLL_REDUCE ||
           coll == INA_COLL_REDUCE_SCATTER;
}

} // namespace ina::node

// One call on a group (the C handle): advanced by the group in posting order.
struct ina_node_op {
    ina_node_group *g = nullptr;
    ina_coll_desc_t d{};
    bool done = false;
    // Known once every local rank knows whether the call is offloaded
    // (LocalOp: at once); with done, whether it was.
    bool decided = true;
    ina_cqe_t cqe{}; // rc INA_OK, outcome INA_OFFLOADED unless it says otherwise
    bool recovered = false; // this rank's stream call was lost with the agent and recovered

    virtual ~ina_node_op() = default;
    // Run the call as far as the other ranks allow; true if it moved.
    virtual bool advance() = 0;
    // Make a completed call new again, its description and steps as
    // planned (ina_node_repost); false where it cannot be.
    virtual bool restart() { return false; }
};

struct ina_node_group {
    ina::node::Segment seg;
    uint32_t L = 0, me = 0;
    size_t chunk = 0, small = 0;
    ina::node::RankLine *lines = nullptr;
    char *data = nullptr;
    uint64_t last_step = 0; // the number of the latest step begun
    std::deque<ina_node_op *> queue;

    // The communicator (roots and recvcounts are its ranks) and, with
    // nnodes > 1, the agent level (ina_node_config_t).
    uint32_t size = 0, rank = 0;
    uint32_t nnodes = 1, node = 0;
    uint32_t nstreams = 0;
    std::vector<uint32_t> leader; // stream -> the local index that leads it here
    uint32_t stream = UINT32_MAX; // the stream this rank leads, if any
    ina_job_t *job = nullptr;
    uint32_t block_bytes = 0;
    std::vector<uint32_t> node_of;    // member -> node
    std::vector<uint32_t> order;      // node order (members by node, then rank) -> member
    std::vector<uint64_t> node_first; // node -> its first position in node order; nnodes + 1
    uint64_t calls = 0;               // UplinkOps posted: numbers their verdicts

    char *slot(uint64_t s, uint32_t i) const { return data + ((s & 1) * L + i) * chunk; }
    char *result(uint64_t s) const
    {
        return data + (2 * static_cast<size_t>(L) + (s & 1)) * chunk;
    }

    // Whether the counter `field` of every rank in [first, last) reached v.
    bool all_reached(std::atomic<uint64_t> ina::node::RankLine::*field, uint64_t v,
                     uint32_t first = 0, uint32_t last = UINT32_MAX) const
    {
        for (uint32_t i = first; i < L && i < last; ++i) {
            if ((lines[i].*field).load(std::memory_order_acquire) < v) {
                return false;
            }
        }
        return true;
    }
    // Whether the counter `field` of the leaders of streams [0, k) reached v.
    bool leaders_reached(std::atomic<uint64_t> ina::node::RankLine::*field, uint64_t v,
                         uint32_t k) const
    {
        for (uint32_t j = 0; j < k; ++j) {
            if ((lines[leader[j]].*field).load(std::memory_order_acquire) < v) {
                return false;
            }
        }
        return true;
    }
    // Where each part of the segment belongs (numa_placement.h), from the
    // NUMA node of each local rank (cfg.numa): slots to their writers,
    // shares of the result area to the ranks that fold them.
    std::vector<ina::node::Region> regions(const int32_t *numa) const;
    std::string placement; // what the creator's placement did (logs)
    int progress();
    // The communicator's layout and the agent level from the
    // configuration (node_uplink.cpp); false with a reason if inconsistent.
    bool set_layout(const ina_node_config_t &cfg, std::string &why);
};

namespace ina::node {

// Build the UplinkOp of `d` (node_uplink.cpp); nullptr with *rc on failure.
ina_node_op *make_uplink_op(ina_node_group *g, const ina_coll_desc_t &d, ina_status_t *rc);

} // namespace ina::node

#endif

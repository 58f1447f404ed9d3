// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Simulated collective calls for the agent tests: what each simulated rank
// sends for every block of a call (protocol v2) and what it must get back,
// and a driver that runs several calls of one job at once, blocks interleaved
// at random across calls, ranks and SIDs inside each rank's sliding window.
#ifndef INA_AGENT_CALLS_H
#define INA_AGENT_CALLS_H

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "agent_harness.h"

namespace ina_test {

// Elements [lo, hi) of a call's result vector.
struct Range {
    uint64_t lo = 0;
    uint64_t hi = 0;
    bool empty() const { return hi <= lo; }
};

// One call as every rank sees it. The test fills `expect` from its own
// reference; the driver derives each BLOCK from contrib/wants.
struct CallPlan {
    unsigned coll = INA_COLL_ALLREDUCE;
    unsigned op = INA_OP_SUM;
    unsigned dtype = INA_DT_INT32;
    uint32_t n = 0;             // ranks
    uint64_t total = 0;         // elements of the result vector (BARRIER: 0)
    uint32_t block_elems = 1;   // elements per block (the last may be shorter)
    std::vector<std::vector<uint8_t>> input; // per rank: total elements; only contrib is sent
    std::vector<Range> contrib; // per rank: the elements it sends (empty: CREDITs)
    std::vector<Range> wants;   // per rank: the elements it needs (empty: ACKs only)
    std::vector<uint8_t> expect; // the reference result vector (total elements)

    uint32_t nblocks() const
    {
        return total == 0 ? 1u : static_cast<uint32_t>((total + block_elems - 1) / block_elems);
    }
    Range block(uint32_t sid) const
    {
        uint64_t lo = static_cast<uint64_t>(sid) * block_elems;
        return {lo, std::min<uint64_t>(lo + block_elems, total)};
    }
};

// Plans with their membership rules filled in and random inputs drawn from
// rng; `expect` is left for the caller's reference (placing collectives
// fill it: it is the bytes the ranks send, put where the contract says).
// ALLREDUCE: everybody sends and wants the whole vector.
CallPlan plan_allreduce(unsigned op, unsigned dtype, uint32_t n, uint64_t count,
                        uint32_t block_elems, std::mt19937_64 &rng);
// REDUCE: everybody sends everything; only root wants the result.
CallPlan plan_reduce(unsigned op, unsigned dtype, uint32_t n, uint64_t count, uint32_t root,
                     uint32_t block_elems, std::mt19937_64 &rng);
// REDUCE_SCATTER: everybody sends sum(parts) elements; rank r wants part r.
CallPlan plan_reduce_scatter(unsigned op, unsigned dtype, const std::vector<uint64_t> &parts,
                             uint32_t block_elems, std::mt19937_64 &rng);
// BCAST of `bytes` from root (expect filled: the root's bytes).
CallPlan plan_bcast(uint32_t n, uint64_t bytes, uint32_t root, uint32_t block_bytes,
                    std::mt19937_64 &rng);
// ALLGATHER of `chunk` bytes per rank (expect filled: the chunks in rank order).
CallPlan plan_allgather(uint32_t n, uint64_t chunk, uint32_t block_bytes, std::mt19937_64 &rng);
// BARRIER: one empty block, CREDITs only, everybody wants the (empty) result.
CallPlan plan_barrier(uint32_t n);

// Random elements of dtype for op (floats of mixed magnitudes, so that the
// order of a sum changes its rounding; few non-zeros for logical ops).
void fill_random(unsigned op, unsigned dtype, uint8_t *dst, uint64_t count, std::mt19937_64 &rng);

// Fill plan.expect of a reduction with fold(acc, in_r, total) over ranks
// 0..n-1 in rank order, acc starting as a copy of rank 0's input.
void reduce_reference(CallPlan &plan,
                      const std::function<void(uint8_t *acc, const uint8_t *in, uint64_t n)> &fold);

struct RunStats {
    uint64_t results = 0;       // RESULTs with payload checked
    uint64_t acks = 0;          // ACK_ONLY RESULTs checked
    uint64_t result_bytes = 0;  // their payload bytes
    uint64_t grants = 0;
    uint64_t implied_grants = 0; // calls whose first message to a rank was a RESULT
};

// Runs calls[i] as MID first_mid + i of job jid (rank r on endpoint eps[r])
// all at once. Each rank posts the calls in MID order (its first block of
// call i goes after its first block of call i-1), sends each call's blocks
// at most `window` ahead of the RESULTs/ACKs it got back, and must receive
// exactly one GRANT per call before any RESULT of it (or none, when the
// agent sent the first RESULT with it: that RESULT implies it), then for every block
// either the reference payload (if it wants any of the block) or an
// ACK_ONLY RESULT. Fails the test on anything else.
RunStats run_calls(Client &c, const std::vector<size_t> &eps, uint32_t jid, uint32_t window,
                   uint64_t first_mid, const std::vector<CallPlan> &calls, unsigned seed);

} // namespace ina_test

#endif

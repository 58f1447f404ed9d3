// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Agent test: allreduce through a real ina-switchd with 2..8 simulated ranks
// (one UCX endpoint each), several dtype/op pairs, multi-block calls with a
// sliding window, blocks sent in random interleavings across ranks and SIDs.
// Every rank gets the call's GRANT, then every RESULT must equal, bit for bit,
// the rank-order reference computed with ina_reduce, on every rank.
#include <chrono>
#include <cstdio>
#include <iterator>
#include <random>
#include <vector>

#include "agent_calls.h"
#include "agent_harness.h"
#include "ina_reduce.h"

using namespace ina_test;

namespace {

struct CallSpec {
    unsigned dtype;
    unsigned op;
    uint64_t total;       // elements of the call
    uint32_t block_elems; // elements per block (last one may be shorter)
};

// An ALLREDUCE plan whose reference is the rank-order fold with ina_reduce
// (the kernels are checked against hand-written references in test_reduce).
CallPlan allreduce_plan(const CallSpec &s, uint32_t n, unsigned data_seed)
{
    std::mt19937_64 rng(data_seed);
    CallPlan p = plan_allreduce(s.op, s.dtype, n, s.total, s.block_elems, rng);
    reduce_reference(p, [&](uint8_t *acc, const uint8_t *in, uint64_t cnt) {
        CHECK_OR_FAIL(ina_reduce(s.op, s.dtype, acc, in, cnt) == 0, "reference reduce failed");
    });
    return p;
}

} // namespace

int main()
{
    arm_watchdog(240);
    Daemon d;
    Client c;
    const uint32_t kRanks = 8;
    std::vector<size_t> all;
    for (uint32_t r = 0; r < kRanks; ++r) {
        all.push_back(c.connect(d.address()));
        uint32_t maxw = 0;
        uint64_t segb = 0;
        c.hello(all.back(), &maxw, &segb);
        CHECK_OR_FAIL(maxw == 64 && segb == 65536, "HELLO_ACK: max window %u seg bytes %lu", maxw,
                      (unsigned long)segb);
    }
    std::printf("checked: HELLO_ACK on %u endpoints (max window 64, Seg 65536 B)\n", kRanks);

    const CallSpec specs[] = {
        {INA_DT_FLOAT, INA_OP_SUM, 1000, 64},   {INA_DT_DOUBLE, INA_OP_SUM, 513, 32},
        {INA_DT_DOUBLE, INA_OP_PROD, 300, 50},  {INA_DT_FLOAT, INA_OP_MAX, 200, 40},
        {INA_DT_INT32, INA_OP_SUM, 777, 100},   {INA_DT_INT64, INA_OP_MIN, 129, 16},
        {INA_DT_UINT8, INA_OP_BXOR, 4000, 1024}, {INA_DT_INT16, INA_OP_LAND, 90, 30},
        {INA_DT_UINT64, INA_OP_PROD, 64, 8},    {INA_DT_LONG_DOUBLE, INA_OP_SUM, 70, 16},
        {INA_DT_DOUBLE, INA_OP_SUM, 20000, 8192}, // full 64 KiB Segs
        {INA_DT_BOOL, INA_OP_LXOR, 300, 64},    {INA_DT_FLOAT_COMPLEX, INA_OP_SUM, 257, 32},
        {INA_DT_DOUBLE_COMPLEX, INA_OP_PROD, 100, 16},
        {INA_DT_LONG_DOUBLE_COMPLEX, INA_OP_SUM, 40, 8},
        {INA_DT_FLOAT_INT, INA_OP_MINLOC, 200, 32}, {INA_DT_DOUBLE_INT, INA_OP_MAXLOC, 150, 16},
        {INA_DT_LONG_INT, INA_OP_MINLOC, 99, 20},   {INA_DT_2INT, INA_OP_MAXLOC, 300, 64},
        {INA_DT_SHORT_INT, INA_OP_MINLOC, 77, 10},
        {INA_DT_LONG_DOUBLE_INT, INA_OP_MAXLOC, 60, 8},
    };
    uint64_t results = 0;
    unsigned calls = 0;
    for (uint32_t n : {1u, 2u, 3u, 5u, 8u}) {
        std::vector<size_t> eps(all.begin(), all.begin() + n);
        std::vector<uint32_t> nodes(n);
        for (uint32_t r = 0; r < n; ++r) {
            nodes[r] = 100 + r / 2; // two ranks per node
        }
        uint32_t window = 0;
        uint32_t jid = c.open_all(eps, nodes, 4, &window);
        CHECK_OR_FAIL(window == 4, "granted window %u, asked 4", window);
        uint64_t mid = 0;
        for (const CallSpec &s : specs) {
            unsigned seed = 1000 * n + static_cast<unsigned>(mid);
            RunStats st = run_calls(c, eps, jid, window, mid, {allreduce_plan(s, n, seed)}, seed);
            CHECK_OR_FAIL(st.acks == 0 && st.grants + st.implied_grants == n,
                          "allreduce: %lu ACKs, %lu GRANTs, %lu implied by a RESULT",
                          (unsigned long)st.acks, (unsigned long)st.grants,
                          (unsigned long)st.implied_grants);
            // One member: its first block decides and completes the call, so
            // its RESULT goes out with the decision and stands for the GRANT.
            CHECK_OR_FAIL(n > 1 || (st.grants == 0 && st.implied_grants == 1),
                          "one member: %lu GRANTs sent beside its RESULT",
                          (unsigned long)st.grants);
            results += st.results;
            ++mid;
            ++calls;
        }
        for (uint32_t r = 0; r < n; ++r) {
            c.leave(eps[r], jid, r);
            c.fence(eps[r]);
        }
    }
    std::printf("checked: %u calls (%zu dtype/op/size specs incl. bool, complex, MINLOC/MAXLOC "
                "pairs x 1,2,3,5,8 ranks, 2 ranks per node, "
                "window 4, multi-block) = %lu RESULTs bit-identical to the rank-order reference on "
                "every rank\n", calls, std::size(specs), (unsigned long)results);

    // Same float data, different interleavings: identical bits every time.
    {
        const uint32_t n = 6;
        std::vector<size_t> eps(all.begin(), all.begin() + n);
        std::vector<uint32_t> nodes = {1, 1, 1, 2, 2, 3};
        uint32_t window = 0;
        uint32_t jid = c.open_all(eps, nodes, 3, &window);
        // Same inputs (data seed 42) every time; only the interleaving changes.
        const CallPlan plan = allreduce_plan({INA_DT_FLOAT, INA_OP_SUM, 2048, 128}, n, 42);
        for (unsigned seed = 1; seed <= 6; ++seed) {
            results += run_calls(c, eps, jid, window, seed - 1, {plan}, seed).results;
        }
        for (uint32_t r = 0; r < n; ++r) {
            c.leave(eps[r], jid, r);
            c.fence(eps[r]);
        }
        std::printf("checked: float sum, 6 ranks on 3 nodes, same inputs in 6 random "
                    "interleavings across ranks and SIDs, every RESULT equal to the rank-order reference\n");
    }

    int rc = d.terminate();
    CHECK_OR_FAIL(rc == 0, "ina-switchd exit status %d after SIGTERM", rc);
    long out = d.counter("results_out");
    CHECK_OR_FAIL(out == static_cast<long>(results), "agent counted %ld results, client got %lu",
                  out, (unsigned long)results);
    CHECK_OR_FAIL(d.counter("acks_out") == 0, "acks_out=%ld in an allreduce-only run",
                  d.counter("acks_out"));
    CHECK_OR_FAIL(d.counter("jobs_live") == 0, "jobs left at exit: %ld", d.counter("jobs_live"));
    std::printf("checked: SIGTERM -> exit 0, agent results_out=%ld matches, jobs_live=0\n", out);

    // --bench-delay-us (benchmarks: an emulated propagation delay): every
    // message to a client leaves at least that late, in order, and the
    // results are as exact. Only the lower bound is checked: a loaded
    // machine may make them later still, never earlier.
    {
        const auto kDelay = std::chrono::milliseconds(300);
        Daemon slow({"--bench-delay-us", "300000"});
        Client sc;
        const uint32_t n = 3;
        std::vector<size_t> eps;
        for (uint32_t r = 0; r < n; ++r) {
            eps.push_back(sc.connect(slow.address()));
            const auto t0 = std::chrono::steady_clock::now();
            uint32_t maxw = 0;
            uint64_t segb = 0;
            sc.hello(eps.back(), &maxw, &segb);
            CHECK_OR_FAIL(std::chrono::steady_clock::now() - t0 >= kDelay,
                          "HELLO_ACK came before the agent's delay");
        }
        uint32_t window = 0;
        const uint32_t jid = sc.open_all(eps, {1, 2, 3}, 4, &window);
        const auto t0 = std::chrono::steady_clock::now();
        const RunStats st = run_calls(
            sc, eps, jid, window, 0, {allreduce_plan({INA_DT_DOUBLE, INA_OP_SUM, 300, 100}, n, 7)},
            7);
        CHECK_OR_FAIL(st.results == 3 * n, "delayed agent: %lu RESULTs, want %u",
                      (unsigned long)st.results, 3 * n);
        CHECK_OR_FAIL(std::chrono::steady_clock::now() - t0 >= kDelay,
                      "a call of 3 blocks finished before the agent's delay");
        std::printf("checked: --bench-delay-us 300000: HELLO_ACKs and a 3-block call's RESULTs "
                    "no earlier than 300 ms, every RESULT equal to the rank-order reference\n");
    }
    std::printf("PASS agent_allreduce\n");
    return 0;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Agent test: every collective kind of protocol v2 through a real ina-switchd,
// on jobs of 2..8 simulated ranks (3 ranks per node, window 3), blocks in
// random interleavings across ranks and SIDs:
// - REDUCE to root 0, last and middle: the root gets the reduced blocks,
//   everybody else ACK_ONLY RESULTs without payload;
// - BCAST from several roots, sizes of 1 byte to several blocks: the root's
//   bytes on every other rank, an ACK to the root;
// - ALLGATHER with chunks smaller than a block (several members' pieces in
//   one Seg), equal to it, and straddling block boundaries;
// - REDUCE_SCATTER with uneven parts (some empty): each rank gets the blocks
//   its part touches, ACKs for the others;
// - BARRIER repeated; no rank is released before the last one arrived;
// - several calls (MIDs) of one job in flight at once, all kinds mixed;
// - the GRANT reaches every member at the first block of a call, including
//   the members that have not sent anything yet.
// Reductions are checked against references written here (rank order, plain
// C++ arithmetic), placing collectives against the bytes the ranks sent.
// At the end the agent's counters must match what the ranks received: a
// member that did not ask for a block cost no payload send.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "agent_calls.h"
#include "agent_harness.h"

using namespace ina_test;

namespace {

// Rank-order fold with a binary function on T (T may be unsigned to wrap).
template <typename T, typename F> std::function<void(uint8_t *, const uint8_t *, uint64_t)> fold(F f)
{
    return [f](uint8_t *acc, const uint8_t *in, uint64_t n) {
        for (uint64_t i = 0; i < n; ++i) {
            T a, b;
            std::memcpy(&a, acc + i * sizeof(T), sizeof(T));
            std::memcpy(&b, in + i * sizeof(T), sizeof(T));
            a = f(a, b);
            std::memcpy(acc + i * sizeof(T), &a, sizeof(T));
        }
    };
}

// The reductions used here and their references.
struct Red {
    unsigned op, dtype;
    std::function<void(uint8_t *, const uint8_t *, uint64_t)> ref;
};
const Red kI32Sum{INA_OP_SUM, INA_DT_INT32, fold<uint32_t>([](uint32_t a, uint32_t b) { return a + b; })};
const Red kF64Sum{INA_OP_SUM, INA_DT_DOUBLE, fold<double>([](double a, double b) { return a + b; })};
const Red kF32Sum{INA_OP_SUM, INA_DT_FLOAT, fold<float>([](float a, float b) { return a + b; })};
const Red kI64Max{INA_OP_MAX, INA_DT_INT64,
                  fold<int64_t>([](int64_t a, int64_t b) { return std::max(a, b); })};
const Red kU16Bxor{INA_OP_BXOR, INA_DT_UINT16,
                   fold<uint16_t>([](uint16_t a, uint16_t b) { return uint16_t(a ^ b); })};

struct Totals {
    RunStats s;
    unsigned calls = 0;
    void add(const RunStats &r, unsigned ncalls)
    {
        s.results += r.results;
        s.acks += r.acks;
        s.result_bytes += r.result_bytes;
        s.grants += r.grants;
        s.implied_grants += r.implied_grants;
        calls += ncalls;
    }
};

class JobRun {
public:
    JobRun(Client &c, const std::vector<size_t> &eps, uint32_t jid, uint32_t window, Totals &t)
        : c_(c), eps_(eps), jid_(jid), window_(window), t_(t)
    {
    }
    uint32_t n() const { return static_cast<uint32_t>(eps_.size()); }
    uint64_t next_mid() const { return mid_; }
    // Run plans as consecutive MIDs, all in flight at once.
    RunStats run(const std::vector<CallPlan> &plans)
    {
        RunStats r = run_calls(c_, eps_, jid_, window_, mid_, plans,
                               static_cast<unsigned>(1000 * n() + mid_));
        CHECK_OR_FAIL(r.grants + r.implied_grants == plans.size() * n(),
                      "%lu GRANTs (%lu implied by a RESULT) for %zu calls on %u ranks",
                      (unsigned long)r.grants, (unsigned long)r.implied_grants, plans.size(), n());
        mid_ += plans.size();
        t_.add(r, static_cast<unsigned>(plans.size()));
        return r;
    }
    void skip_mid(RunStats r)
    {
        ++mid_;
        t_.add(r, 1);
    }

private:
    Client &c_;
    std::vector<size_t> eps_;
    uint32_t jid_, window_;
    Totals &t_;
    uint64_t mid_ = 0;
};

CallPlan reduction(const Red &red, unsigned coll, uint32_t n, uint64_t count, uint32_t root,
                   uint32_t block_elems, std::mt19937_64 &rng)
{
    CallPlan p = coll == INA_COLL_ALLREDUCE
                     ? plan_allreduce(red.op, red.dtype, n, count, block_elems, rng)
                     : plan_reduce(red.op, red.dtype, n, count, root, block_elems, rng);
    reduce_reference(p, red.ref);
    return p;
}

CallPlan scatter(const Red &red, const std::vector<uint64_t> &parts, uint32_t block_elems,
                 std::mt19937_64 &rng)
{
    CallPlan p = plan_reduce_scatter(red.op, red.dtype, parts, block_elems, rng);
    reduce_reference(p, red.ref);
    return p;
}

// Uneven REDUCE_SCATTER parts for n ranks: rank 1 gets nothing, the others
// between 1 and 29 elements, so parts start and end anywhere in a block.
std::vector<uint64_t> uneven_parts(uint32_t n, unsigned salt)
{
    std::vector<uint64_t> parts(n);
    for (uint32_t r = 0; r < n; ++r) {
        parts[r] = r == 1 ? 0 : 1 + (r * 11 + salt * 7) % 29;
    }
    return parts;
}

void test_reduce(JobRun &job, std::mt19937_64 &rng)
{
    const uint32_t n = job.n();
    for (uint32_t root : {0u, n - 1, n / 2}) {
        RunStats r = job.run({reduction(kI32Sum, INA_COLL_REDUCE, n, 100, root, 16, rng)});
        // 7 blocks: the root gets each with its payload, the others ACKs.
        CHECK_OR_FAIL(r.results == 7 && r.acks == 7 * (n - 1), "REDUCE root %u: %lu results %lu acks",
                      root, (unsigned long)r.results, (unsigned long)r.acks);
        job.run({reduction(kF64Sum, INA_COLL_REDUCE, n, 300, root, 64, rng)});
    }
}

void test_bcast(JobRun &job, std::mt19937_64 &rng)
{
    const uint32_t n = job.n();
    std::vector<uint32_t> roots = {0, n - 1, n / 2};
    if (n <= 4) {
        roots = {};
        for (uint32_t r = 0; r < n; ++r) {
            roots.push_back(r); // every rank a root once
        }
    }
    for (uint32_t root : roots) {
        RunStats r = job.run({plan_bcast(n, 1000, root, 256, rng)});
        CHECK_OR_FAIL(r.acks == 4 && r.results == 4 * (n - 1) && r.result_bytes == 1000 * (n - 1),
                      "BCAST root %u: %lu results %lu acks %lu bytes", root,
                      (unsigned long)r.results, (unsigned long)r.acks,
                      (unsigned long)r.result_bytes);
    }
    job.run({plan_bcast(n, 1, n - 1, 256, rng)});
    job.run({plan_bcast(n, 4096, 0, 4096, rng)});
    job.run({plan_bcast(n, 65536 + 100, n / 2, 65536, rng)}); // one full 64 KiB Seg, then 100 B
}

void test_allgather(JobRun &job, std::mt19937_64 &rng)
{
    const uint32_t n = job.n();
    // Blocks of 64 bytes: chunks of 1 and 10 put several members in one Seg,
    // 64 matches the block, 100 and 200 straddle block boundaries.
    for (uint64_t chunk : {1u, 10u, 64u, 100u, 200u}) {
        RunStats r = job.run({plan_allgather(n, chunk, 64, rng)});
        CHECK_OR_FAIL(r.acks == 0 && r.result_bytes == n * n * chunk,
                      "ALLGATHER chunk %lu: %lu acks, %lu bytes", (unsigned long)chunk,
                      (unsigned long)r.acks, (unsigned long)r.result_bytes);
    }
    job.run({plan_allgather(n, 3000, 4096, rng)});
}

void test_reduce_scatter(JobRun &job, std::mt19937_64 &rng)
{
    const uint32_t n = job.n();
    for (unsigned salt = 0; salt < 3; ++salt) {
        std::vector<uint64_t> parts = uneven_parts(n, salt);
        RunStats r = job.run({scatter(kI64Max, parts, 8, rng)});
        // Rank 1's part is empty: it gets only ACKs.
        CHECK_OR_FAIL(r.acks > 0, "REDUCE_SCATTER: no ACK_ONLY RESULT at all");
        job.run({scatter(kF32Sum, parts, 5, rng)});
    }
}

// No rank leaves a BARRIER before the last one entered: with n-1 CREDITs in,
// the agent has sent nothing but the GRANTs (fences on every endpoint prove
// it processed those blocks); the last CREDIT releases everybody.
void test_barrier(JobRun &job, Client &c, const std::vector<size_t> &eps, uint32_t jid,
                  uint32_t window, std::mt19937_64 &rng)
{
    const uint32_t n = job.n();
    for (int rep = 0; rep < 5; ++rep) {
        RunStats r = job.run({plan_barrier(n)});
        CHECK_OR_FAIL(r.results == n && r.acks == 0 && r.result_bytes == 0,
                      "BARRIER: %lu results %lu acks", (unsigned long)r.results,
                      (unsigned long)r.acks);
    }
    std::vector<uint32_t> order(n);
    for (uint32_t r = 0; r < n; ++r) {
        order[r] = r;
    }
    for (int rep = 0; rep < 3; ++rep) {
        std::shuffle(order.begin(), order.end(), rng);
        const uint64_t mid = job.next_mid();
        for (uint32_t i = 0; i + 1 < n; ++i) {
            c.send(eps[order[i]], block_hdr(jid, order[i], mid, 0, window, INA_COLL_BARRIER,
                                            INA_OP_REPLACE, INA_DT_UINT8, 0, 0, 0, 0, true));
        }
        for (size_t ep : eps) {
            c.fence(ep);
        }
        RunStats st;
        for (const Msg &m : c.inbox()) {
            CHECK_OR_FAIL(m.hdr.jid != jid || m.hdr.type == INA_PROTO_GRANT,
                          "BARRIER: rank %u got %s before the last rank (%u) entered", m.hdr.rank,
                          ina_proto_type_name(m.hdr.type), order[n - 1]);
        }
        std::vector<uint32_t> all(order.begin(), order.end());
        std::sort(all.begin(), all.end());
        expect_grants(c, jid, mid, all);
        c.send(eps[order[n - 1]], block_hdr(jid, order[n - 1], mid, 0, window, INA_COLL_BARRIER,
                                            INA_OP_REPLACE, INA_DT_UINT8, 0, 0, 0, 0, true));
        for (uint32_t r = 0; r < n; ++r) {
            Msg m = c.wait_for([&](const Msg &m) { return m.hdr.jid == jid && m.hdr.rank == r; },
                               10000, "BARRIER RESULT");
            CHECK_OR_FAIL(m.hdr.type == INA_PROTO_RESULT && m.hdr.mid == mid &&
                              m.hdr.coll == INA_COLL_BARRIER && m.hdr.count == 0 &&
                              m.hdr.flags == 0 && m.payload.empty(),
                          "BARRIER: rank %u got %s", r, ina_proto_type_name(m.hdr.type));
        }
        st.results = n;
        st.grants = n;
        job.skip_mid(st);
    }
}

// Several MIDs of the job in flight at once, every kind mixed.
void test_interleaved(JobRun &job, std::mt19937_64 &rng)
{
    const uint32_t n = job.n();
    for (int rep = 0; rep < 2; ++rep) {
        std::vector<CallPlan> plans;
        plans.push_back(reduction(kF64Sum, INA_COLL_ALLREDUCE, n, 200, 0, 16, rng));
        plans.push_back(reduction(kI32Sum, INA_COLL_REDUCE, n, 50, 1 % n, 8, rng));
        plans.push_back(plan_barrier(n));
        plans.push_back(plan_bcast(n, 333, n - 1, 64, rng));
        plans.push_back(plan_allgather(n, 37, 64, rng));
        plans.push_back(scatter(kU16Bxor, uneven_parts(n, 5), 6, rng));
        plans.push_back(plan_barrier(n));
        plans.push_back(reduction(kI64Max, INA_COLL_ALLREDUCE, n, 30, 0, 4, rng));
        job.run(plans);
    }
}

// The first block of a call from any one rank brings the GRANT to every
// member, before any other member sent a thing; then the call completes.
void test_grant_to_all(JobRun &job, Client &c, const std::vector<size_t> &eps, uint32_t jid,
                       uint32_t window)
{
    const uint32_t n = job.n();
    std::vector<uint32_t> all(n);
    for (uint32_t r = 0; r < n; ++r) {
        all[r] = r;
    }
    for (uint32_t first = 0; first < n; ++first) {
        const uint64_t mid = job.next_mid();
        // A one-block int32 ALLREDUCE; rank `first` sends alone.
        std::vector<std::vector<int32_t>> in(n, std::vector<int32_t>(8));
        std::vector<uint32_t> ref(8, 0);
        for (uint32_t r = 0; r < n; ++r) {
            for (uint32_t i = 0; i < 8; ++i) {
                in[r][i] = static_cast<int32_t>(r * 1000 + i * 3 + first);
                ref[i] += static_cast<uint32_t>(in[r][i]);
            }
        }
        auto send = [&](uint32_t r) {
            c.send(eps[r], allreduce_hdr(jid, r, mid, 0, window, INA_OP_SUM, INA_DT_INT32, 8, 8),
                   in[r].data(), 32);
        };
        send(first);
        expect_grants(c, jid, mid, all);
        for (uint32_t r = 0; r < n; ++r) {
            if (r != first) {
                send(r);
            }
        }
        for (uint32_t r = 0; r < n; ++r) {
            Msg m = c.wait_for([&](const Msg &m) { return m.hdr.jid == jid && m.hdr.rank == r; },
                               10000, "RESULT");
            CHECK_OR_FAIL(m.hdr.type == INA_PROTO_RESULT && m.hdr.mid == mid &&
                              m.payload.size() == 32 &&
                              std::memcmp(m.payload.data(), ref.data(), 32) == 0,
                          "GRANT test mid %lu: rank %u got a wrong %s", (unsigned long)mid, r,
                          ina_proto_type_name(m.hdr.type));
        }
        RunStats st;
        st.results = n;
        st.result_bytes = 32 * n;
        st.grants = n;
        job.skip_mid(st);
    }
}

} // namespace

int main()
{
    arm_watchdog(400);
    Daemon d;
    Client c;
    const uint32_t kRanks = 8;
    std::vector<size_t> all;
    for (uint32_t r = 0; r < kRanks; ++r) {
        all.push_back(c.connect(d.address()));
    }
    Totals t;
    std::mt19937_64 rng(2024);
    for (uint32_t n = 2; n <= kRanks; ++n) {
        std::vector<size_t> eps(all.begin(), all.begin() + n);
        std::vector<uint32_t> nodes(n);
        for (uint32_t r = 0; r < n; ++r) {
            nodes[r] = 10 + r / 3; // three ranks per node
        }
        uint32_t window = 0;
        uint32_t jid = c.open_all(eps, nodes, 3, &window);
        CHECK_OR_FAIL(window == 3, "granted window %u, asked 3", window);
        JobRun job(c, eps, jid, window, t);
        test_grant_to_all(job, c, eps, jid, window);
        test_reduce(job, rng);
        test_bcast(job, rng);
        test_allgather(job, rng);
        test_reduce_scatter(job, rng);
        test_barrier(job, c, eps, jid, window, rng);
        test_interleaved(job, rng);
        for (uint32_t r = 0; r < n; ++r) {
            c.leave(eps[r], jid, r);
            c.fence(eps[r]);
        }
        std::printf("checked: %u ranks: GRANT to every member at the first block (each rank "
                    "first once); REDUCE roots 0/last/middle; BCAST roots; ALLGATHER chunks "
                    "1/10/64/100/200/3000 B; REDUCE_SCATTER uneven parts; BARRIER x8 (none "
                    "released early); 2 x 8 calls in flight at once\n",
                    n);
    }
    CHECK_OR_FAIL(c.inbox().empty(), "%zu unexpected messages left", c.inbox().size());
    std::printf("checked: %u calls, %lu RESULTs with payload equal to the references, %lu "
                "ACK_ONLY RESULTs, %lu GRANTs\n",
                t.calls, (unsigned long)t.s.results, (unsigned long)t.s.acks,
                (unsigned long)t.s.grants);

    int rc = d.terminate();
    CHECK_OR_FAIL(rc == 0, "ina-switchd exit status %d after SIGTERM", rc);
    CHECK_OR_FAIL(d.counter("results_out") == static_cast<long>(t.s.results) &&
                      d.counter("acks_out") == static_cast<long>(t.s.acks) &&
                      d.counter("result_bytes_out") == static_cast<long>(t.s.result_bytes) &&
                      d.counter("grants_out") == static_cast<long>(t.s.grants) &&
                      d.counter("grants_implied") == static_cast<long>(t.s.implied_grants),
                  "agent sent results=%ld acks=%ld bytes=%ld grants=%ld; ranks got %lu %lu %lu %lu",
                  d.counter("results_out"), d.counter("acks_out"), d.counter("result_bytes_out"),
                  d.counter("grants_out"), (unsigned long)t.s.results, (unsigned long)t.s.acks,
                  (unsigned long)t.s.result_bytes, (unsigned long)t.s.grants);
    CHECK_OR_FAIL(d.counter("calls_granted") == static_cast<long>(t.calls) &&
                      d.counter("calls_denied") == 0,
                  "calls_granted=%ld calls_denied=%ld for %u calls", d.counter("calls_granted"),
                  d.counter("calls_denied"), t.calls);
    CHECK_OR_FAIL(d.log().find("segs_free=1024/1024") != std::string::npos &&
                      d.counter("jobs_live") == 0,
                  "pool not whole or jobs left at exit");
    long buffers = d.counter("buffers");
    CHECK_OR_FAIL(buffers >= 1 && buffers <= 64, "buffers=%ld: payload buffers not reused", buffers);
    std::printf("checked: agent counters match what the ranks got (results_out=%ld acks_out=%ld "
                "result_bytes_out=%ld grants_out=%ld), every lease back, %ld payload buffers\n",
                d.counter("results_out"), d.counter("acks_out"), d.counter("result_bytes_out"),
                d.counter("grants_out"), buffers);
    std::printf("PASS agent_collectives\n");
    return 0;
}

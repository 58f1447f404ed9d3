// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Unit tests of the aggregation core driven directly, with a recording Sink
// and a scheduler the test steers: members' blocks in shuffled orders (exact
// integers, floats bit-identical to a rank-order reference), who gets a
// payload and who an ACK, duplicates, foreign members, a member lost in the
// middle of a call, the same DENY for every member, Defer then Grant (kept
// blocks replayed, on a tick or when a lease comes back), Defer then Deny,
// the bound on kept blocks, the scheduler's hooks, and leases and buffers
// back in their pools at the end.
#include <check.h>
#include "check_main.h"

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "aggregator.h"
#include "aggregation_fakes.h"
#include "ina_proto.h"

using namespace agg_test;

namespace {

// Values over many magnitudes and both signs: the sum depends on the order.
template <typename T> std::vector<std::vector<std::byte>> fp_data(uint32_t nranks, uint64_t total,
                                                                  uint32_t seed)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> mant(-1.0, 1.0);
    std::uniform_int_distribution<int> expo(-30, 30);
    std::vector<std::vector<std::byte>> d;
    for (uint32_t r = 0; r < nranks; ++r) {
        std::vector<T> v(total);
        for (auto &x : v) {
            x = static_cast<T>(std::ldexp(mant(rng), expo(rng)));
        }
        d.push_back(bytes_of(v));
    }
    return d;
}

// ((d0 + d1) + d2) + ...: rank order.
template <typename T>
std::vector<std::byte> fp_rank_order_sum(const std::vector<std::vector<std::byte>> &d,
                                         uint64_t total)
{
    std::vector<T> acc(total);
    std::memcpy(acc.data(), d[0].data(), total * sizeof(T));
    for (size_t r = 1; r < d.size(); ++r) {
        for (uint64_t i = 0; i < total; ++i) {
            T x;
            std::memcpy(&x, d[r].data() + i * sizeof(T), sizeof(T));
            volatile T s = acc[i] + x; // no contraction, no reassociation
            acc[i] = s;
        }
    }
    return bytes_of(acc);
}

} // namespace

// Integer SUM over members on two nodes, a partial last block, many random
// interleavings of the members' blocks (each member keeps its window).
START_TEST(test_int_sum_any_interleaving)
{
    const std::vector<uint32_t> nodes = {5, 5, 9, 9, 9};
    const uint32_t n = 5, window = 3, block_elems = 16;
    const uint64_t total = 16 * 7 + 5;
    for (uint32_t seed = 1; seed <= 60; ++seed) {
        Rig rig;
        Members m(n);
        const uint32_t jid = make_job(rig, m.ptrs(), nodes, window);
        auto data = int_data(n, total, seed);
        const auto ref = bytes_of(int_sum(data, total));
        CallSim sim(rig, m.ptrs(), jid, 0, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                    block_elems, total, data, std::vector<bool>(n, true));
        std::mt19937 rng(seed);
        ck_assert_uint_eq(sim.run(rng), n * sim.nblocks());
        ck_assert(sim.all_decided());
        ck_assert(sim.complete());
        for (uint32_t r = 0; r < n; ++r) {
            ck_assert(sim.granted(r));
            ck_assert(sim.result(r) == ref);
        }
        ck_assert(rig.sink.events.empty()); // nothing else was said
        const Counters &c = rig.agg.counters();
        ck_assert_uint_eq(c.blocks_in, n * sim.nblocks());
        ck_assert_uint_eq(c.calls_granted, 1);
        ck_assert_uint_eq(c.duplicate, 0);
        ck_assert_uint_eq(rig.sched->asked.size(), 1);
        ck_assert_uint_eq(rig.sched->done.size(), 1);
        ck_assert_uint_eq(rig.sched->done[0].lease_size, window);
        expect_pool_whole(rig);
    }
}
END_TEST

// Floating SUM: whatever order the blocks arrive in, every member gets the
// rank-order sum, bit for bit.
template <typename T> void check_fp_rank_order(unsigned dtype)
{
    const std::vector<uint32_t> nodes = {1, 2, 3, 1, 2, 3};
    const uint32_t n = 6, window = 2, block_elems = 8;
    const uint64_t total = 8 * 5 + 3;
    for (uint32_t seed = 1; seed <= 60; ++seed) {
        Rig rig;
        Members m(n);
        const uint32_t jid = make_job(rig, m.ptrs(), nodes, window);
        auto data = fp_data<T>(n, total, seed);
        const auto ref = fp_rank_order_sum<T>(data, total);
        CallSim sim(rig, m.ptrs(), jid, 7, window, INA_COLL_ALLREDUCE, INA_OP_SUM, dtype,
                    block_elems, total, data, std::vector<bool>(n, true));
        std::mt19937 rng(seed * 7919);
        sim.run(rng);
        ck_assert(sim.complete());
        for (uint32_t r = 0; r < n; ++r) {
            ck_assert_int_eq(std::memcmp(sim.result(r).data(), ref.data(), ref.size()), 0);
        }
        expect_pool_whole(rig);
    }
}

START_TEST(test_float_sum_rank_order_bit_identical)
{
    check_fp_rank_order<float>(INA_DT_FLOAT);
    check_fp_rank_order<double>(INA_DT_DOUBLE);
}
END_TEST

// REDUCE: the payload only to the member that asked (the root), an ACK to
// everybody else; references on the result buffer only for payload sends.
START_TEST(test_payload_to_askers_ack_to_others)
{
    const uint32_t n = 4, window = 2, block_elems = 32;
    const uint64_t total = 32 * 3;
    Rig rig;
    rig.sink.hold_refs = true; // sends still in flight
    Members m(n);
    const uint32_t jid = make_job(rig, m.ptrs(), {0, 0, 1, 1}, window);
    auto data = int_data(n, total, 3);
    std::vector<bool> want = {false, false, true, false};
    CallSim sim(rig, m.ptrs(), jid, 0, window, INA_COLL_REDUCE, INA_OP_SUM, INA_DT_INT32,
                block_elems, total, data, want);
    std::mt19937 rng(3);
    sim.run(rng);
    ck_assert(sim.complete());
    ck_assert(sim.result(2) == bytes_of(int_sum(data, total)));
    ck_assert_uint_eq(rig.sink.held.size(), sim.nblocks()); // one per payload send
    // Segs are free at once; the buffers wait for their sends.
    ck_assert_uint_eq(rig.agg.pool().free_segs(), rig.agg.pool().size());
    ck_assert_uint_lt(rig.agg.pool().buffers().free_count(), rig.agg.pool().buffers().allocated());
    rig.sink.held.clear();
    expect_pool_whole(rig);
}
END_TEST

// A second contribution of a rank to a block (before or after the block
// completed, or to a finished call) changes nothing and is only counted.
START_TEST(test_duplicates)
{
    const uint32_t n = 3, window = 2, block_elems = 4;
    const uint64_t total = 8; // two blocks
    Rig rig;
    Members m(n);
    const uint32_t jid = make_job(rig, m.ptrs(), {0, 1, 2}, window);
    auto data = int_data(n, total, 11);
    CallSim sim(rig, m.ptrs(), jid, 0, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                block_elems, total, data, std::vector<bool>(n, true));
    sim.send(0); // rank 0, sid 0
    ck_assert(sim.all_decided());
    rig.agg.block(m[0], sim.header(0, 0), sim.payload(0, 0)); // again, block still open
    ck_assert_uint_eq(rig.agg.counters().duplicate, 1);
    ck_assert(rig.sink.events.empty());
    sim.send(1);
    sim.send(2); // sid 0 complete
    ck_assert_uint_eq(sim.results_heard(), 3);
    rig.agg.block(m[1], sim.header(1, 0), sim.payload(1, 0)); // its RESULT went out already
    ck_assert_uint_eq(rig.agg.counters().duplicate, 2);
    ck_assert(rig.sink.events.empty());
    std::mt19937 rng(1);
    sim.run(rng);
    ck_assert(sim.complete());
    ck_assert(sim.result(0) == bytes_of(int_sum(data, total)));
    rig.agg.block(m[2], sim.header(2, 1), sim.payload(2, 1)); // the call is over
    ck_assert_uint_eq(rig.agg.counters().duplicate, 3);
    ck_assert(rig.sink.events.empty());
    ck_assert_uint_eq(rig.agg.counters().rejected[INA_PROTO_ERR_MISMATCH], 0);
    expect_pool_whole(rig);
}
END_TEST

// A block whose SID is near the top of uint32_t (nonsense for any call,
// but a member may send it): once its RESULT went out, the same block again
// is a duplicate like any other, not a second RESULT (the slot's next SID,
// that SID plus the lease, once wrapped around to a small number).
START_TEST(test_duplicate_at_top_sid)
{
    const uint32_t window = 4, block_elems = 64;
    const uint32_t sid = UINT32_MAX - 1;
    Rig rig;
    Member m;
    const uint32_t jid = make_job(rig, {&m}, {0}, window);
    const std::vector<int32_t> v(block_elems, 7);
    const ina_proto_hdr_t h = block_hdr(jid, 0, 0, sid, window, INA_COLL_ALLREDUCE, INA_OP_SUM,
                                        INA_DT_INT32, 0, block_elems, block_elems, 1000, true);
    rig.agg.block(m, h, v.data());
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kResult), 1);
    rig.agg.block(m, h, v.data());
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kResult), 1);
    ck_assert_uint_eq(rig.agg.counters().duplicate, 1);
}
END_TEST

// A block from a handle that is not (jid, rank) never touches the job: the
// sender gets an ERROR, the call of the real members goes on undisturbed.
START_TEST(test_foreign_members)
{
    const uint32_t window = 2, block_elems = 4;
    const uint64_t total = 8;
    Rig rig;
    Members a(2), b(2);
    Member stranger;
    const uint32_t ja = make_job(rig, a.ptrs(), {0, 1}, window);
    const uint32_t jb = make_job(rig, b.ptrs(), {0, 1}, window);
    ck_assert_uint_ne(ja, jb);
    auto data = int_data(2, total, 5);
    CallSim sim(rig, a.ptrs(), ja, 0, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                block_elems, total, data, {true, true});

    // A member of job B, a member of job A posing as the other rank, a
    // handle that joined nothing.
    Member *forgers[] = {&b[0], &a[1], &stranger};
    for (Member *f : forgers) {
        rig.agg.block(*f, sim.header(0, 0), sim.payload(1, 0));
        ck_assert_uint_eq(rig.sink.events.size(), 1);
        const Event &e = rig.sink.events.back();
        ck_assert(e.kind == Event::Kind::kError);
        ck_assert_ptr_eq(e.to, f);
        ck_assert_int_eq(e.status, INA_PROTO_ERR_NOT_MEMBER);
        ck_assert_uint_eq(e.hdr.jid, ja);
        ck_assert_uint_eq(e.hdr.type, INA_PROTO_BLOCK);
        rig.sink.events.clear();
    }
    ck_assert_uint_eq(rig.agg.counters().foreign, 3);
    ck_assert_uint_eq(rig.agg.counters().rejected[INA_PROTO_ERR_NOT_MEMBER], 3);
    ck_assert(rig.sched->asked.empty()); // not even a call record
    ck_assert(sim.nobody_decided());

    // An unknown job.
    ina_proto_hdr_t h = sim.header(0, 0);
    h.jid = 999;
    rig.agg.block(a[0], h, sim.payload(0, 0));
    ck_assert(rig.sink.events.back().kind == Event::Kind::kError);
    ck_assert_int_eq(rig.sink.events.back().status, INA_PROTO_ERR_NO_JOB);
    rig.sink.events.clear();

    std::mt19937 rng(2);
    sim.run(rng);
    ck_assert(sim.complete());
    ck_assert(sim.result(0) == bytes_of(int_sum(data, total)));
    ck_assert(sim.result(1) == sim.result(0));
    ck_assert(rig.sink.events.empty());
    expect_pool_whole(rig);
}
END_TEST

// A member lost in the middle of a call: the call can never complete, every
// other member gets an ERROR for it at once, its lease goes back.
START_TEST(test_member_lost_mid_call)
{
    const uint32_t n = 3, window = 2, block_elems = 4;
    const uint64_t total = 16; // four blocks
    Rig rig;
    rig.sink.hold_refs = true;
    Members m(n);
    const uint32_t jid = make_job(rig, m.ptrs(), {0, 1, 2}, window);
    auto data = int_data(n, total, 9);
    CallSim sim(rig, m.ptrs(), jid, 4, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                block_elems, total, data, std::vector<bool>(n, true));
    sim.send(0);
    sim.send(0);
    sim.send(1);
    sim.send(1);
    sim.send(2); // sid 0 complete, sid 1 waits for rank 2
    ck_assert_uint_eq(sim.results_heard(), 3);
    ck_assert_uint_eq(rig.agg.pool().free_segs(), rig.agg.pool().size() - window);

    rig.agg.member_lost(m[2]);
    ck_assert_uint_eq(rig.sink.events.size(), 2);
    for (const Event &e : rig.sink.events) {
        ck_assert(e.kind == Event::Kind::kError);
        ck_assert(e.to == &m[0] || e.to == &m[1]);
        ck_assert_int_eq(e.status, INA_PROTO_ERR_NOT_MEMBER);
        ck_assert_uint_eq(e.hdr.type, INA_PROTO_BLOCK);
        ck_assert_uint_eq(e.hdr.jid, jid);
        ck_assert_uint_eq(e.hdr.mid, 4);
        ck_assert_uint_eq(e.hdr.rank, e.to == &m[0] ? 0 : 1);
    }
    ck_assert(rig.sink.events[0].to != rig.sink.events[1].to);
    rig.sink.events.clear();
    ck_assert_uint_eq(rig.agg.counters().calls_aborted, 1);
    ck_assert_uint_eq(rig.sched->done.size(), 1);
    ck_assert_uint_eq(rig.sched->done[0].lease_size, window);
    // A late block of the aborted call is dropped without a word.
    rig.agg.block(m[0], sim.header(0, 2), sim.payload(0, 2));
    ck_assert(rig.sink.events.empty());
    rig.sink.held.clear();
    expect_pool_whole(rig);
    // The survivors leave: the job is freed.
    leave(rig, m[0], jid, 0);
    ck_assert_uint_eq(rig.agg.live_jobs(), 1);
    leave(rig, m[1], jid, 1);
    ck_assert_uint_eq(rig.agg.live_jobs(), 0);
    ck_assert_uint_eq(rig.sched->freed.size(), 1);
    ck_assert_uint_eq(rig.sched->freed[0], jid);
    ck_assert(rig.sink.events.empty());
}
END_TEST

// A member lost between calls: the next call can never have its part, so
// it ends at once on the others with an ERROR (NOT_MEMBER), never a DENY
// (in a tree the lost member is a leaf whose ranks finish the call with
// everybody), and holds no Segs.
START_TEST(test_call_after_member_gone)
{
    const uint32_t n = 3, window = 2, block_elems = 4;
    const uint64_t total = 8;
    Rig rig;
    Members m(n);
    const uint32_t jid = make_job(rig, m.ptrs(), {0, 1, 2}, window);
    rig.agg.member_lost(m[2]);
    ck_assert(rig.sink.events.empty()); // no call was open
    auto data = int_data(n, total, 5);
    CallSim sim(rig, m.ptrs(), jid, 0, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                block_elems, total, data, std::vector<bool>(n, true));
    sim.send(0);
    ck_assert_uint_eq(rig.sink.events.size(), 2);
    for (const Event &e : rig.sink.events) {
        ck_assert(e.kind == Event::Kind::kError);
        ck_assert(e.to == &m[0] || e.to == &m[1]);
        ck_assert_int_eq(e.status, INA_PROTO_ERR_NOT_MEMBER);
        ck_assert_uint_eq(e.hdr.jid, jid);
        ck_assert_uint_eq(e.hdr.mid, 0);
    }
    rig.sink.events.clear();
    ck_assert_uint_eq(rig.agg.counters().calls_aborted, 1);
    ck_assert_uint_eq(rig.agg.counters().calls_granted, 0);
    // The other survivor's block of it is dropped without a word.
    sim.send(1);
    ck_assert(rig.sink.events.empty());
    expect_pool_whole(rig);
}
END_TEST

// CALL_ABORT from a rank (protocol 7, striping: another agent of the stripe
// denied the call). Granted and under way: ERROR(ABORTED) to every member,
// the lease back, later blocks dropped. Before any block: DENY(ABORTED) to
// every member at once. Any other status from a rank, or a CALL_ABORT from
// a non-member: refused, the call untouched.
START_TEST(test_rank_call_abort)
{
    const uint32_t n = 3, window = 2, block_elems = 4;
    const uint64_t total = 16;
    Rig rig;
    rig.sink.hold_refs = true;
    Members m(n);
    Member stranger;
    const uint32_t jid = make_job(rig, m.ptrs(), {0, 1, 2}, window);
    auto data = int_data(n, total, 5);
    CallSim sim(rig, m.ptrs(), jid, 0, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                block_elems, total, data, std::vector<bool>(n, true));
    sim.send(0);
    sim.send(1);
    ck_assert(sim.all_decided());
    rig.sink.events.clear();
    auto abort_hdr = [&](uint32_t rank, uint64_t mid, ina_proto_status_t st) {
        ina_proto_hdr_t h;
        ina_proto_init(&h, INA_PROTO_CALL_ABORT);
        h.jid = jid;
        h.rank = rank;
        h.mid = mid;
        h.status = static_cast<uint8_t>(st);
        expect_valid(h, 0);
        return h;
    };
    // Refused: another status from a rank; the stranger speaking for rank 1.
    rig.agg.call_abort(m[1], abort_hdr(1, 0, INA_PROTO_ERR_NO_RESOURCES));
    rig.agg.call_abort(stranger, abort_hdr(1, 0, INA_PROTO_ERR_ABORTED));
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kError), 2);
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kError, &m[1]), 1);
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kError, &stranger), 1);
    ck_assert_uint_eq(rig.agg.counters().calls_aborted, 0);
    rig.sink.events.clear();
    // Rank 2 gives the call back.
    rig.agg.call_abort(m[2], abort_hdr(2, 0, INA_PROTO_ERR_ABORTED));
    ck_assert_uint_eq(rig.sink.events.size(), n);
    for (const Event &e : rig.sink.events) {
        ck_assert(e.kind == Event::Kind::kError);
        ck_assert_int_eq(e.status, INA_PROTO_ERR_ABORTED);
        ck_assert_uint_eq(e.hdr.mid, 0);
    }
    rig.sink.events.clear();
    ck_assert_uint_eq(rig.agg.counters().calls_aborted, 1);
    ck_assert_uint_eq(rig.agg.counters().abort_in, 1);
    rig.agg.block(m[2], sim.header(2, 0), sim.payload(2, 0)); // late: dropped
    ck_assert(rig.sink.events.empty());
    rig.sink.held.clear();
    expect_pool_whole(rig);
    // The next call is given back before anybody sent a block of it.
    rig.agg.call_abort(m[0], abort_hdr(0, 1, INA_PROTO_ERR_ABORTED));
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kDecision), n);
    for (const Event &e : rig.sink.events) {
        ck_assert(!e.d.grant);
        ck_assert_int_eq(e.d.status, INA_PROTO_ERR_ABORTED);
        ck_assert_uint_eq(e.d.mid, 1);
    }
    ck_assert_uint_eq(rig.sched->asked.size(), 1); // mid 1 never asked for a lease
    expect_pool_whole(rig);
}
END_TEST

// A denied call: every member hears the same DENY exactly once, whoever sent
// first and whatever they send after; the next call may be granted.
START_TEST(test_deny_same_for_everybody)
{
    const uint32_t block_elems = 4;
    const uint64_t total = 12;
    Rig rig(small_config(4));
    Members a(2), b(3);
    const uint32_t ja = make_job(rig, a.ptrs(), {0, 1}, 4);
    const uint32_t jb = make_job(rig, b.ptrs(), {0, 1, 2}, 2);
    auto da = int_data(2, total, 1);
    auto db = int_data(3, total, 2);
    CallSim simA(rig, a.ptrs(), ja, 0, 4, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                 block_elems, total, da, {true, true});
    simA.send(0); // A takes the whole pool
    ck_assert(simA.all_decided() && simA.granted(0));

    CallSim simB(rig, b.ptrs(), jb, 0, 2, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                 block_elems, total, db, {true, true, true});
    simB.send(1);
    ck_assert(simB.all_decided());
    for (uint32_t r = 0; r < 3; ++r) {
        ck_assert(!simB.granted(r));
    }
    ck_assert_int_eq(simB.deny_status(), INA_PROTO_ERR_NO_RESOURCES);
    std::mt19937 rng(4);
    simB.run(rng); // the others' first windows: dropped silently
    ck_assert(rig.sink.events.empty());
    ck_assert_uint_eq(rig.agg.counters().calls_denied, 1);
    ck_assert_uint_eq(rig.agg.counters().denied_blocks, 6);
    ck_assert_uint_eq(simB.results_heard(), 0);

    simA.run(rng);
    ck_assert(simA.complete());
    expect_pool_whole(rig);
    // The next call of B finds the pool free.
    CallSim simB1(rig, b.ptrs(), jb, 1, 2, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                  block_elems, total, db, {true, true, true});
    simB1.run(rng);
    ck_assert(simB1.complete());
    ck_assert(simB1.result(2) == bytes_of(int_sum(db, total)));
    // A policy's own reason reaches every member too.
    rig.sched->mode = TestScheduler::Mode::kDeny;
    rig.sched->deny_status = INA_PROTO_ERR_UNSUPPORTED;
    CallSim simB2(rig, b.ptrs(), jb, 2, 2, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                  block_elems, total, db, {true, true, true});
    simB2.run(rng);
    ck_assert(simB2.all_decided());
    ck_assert_int_eq(simB2.deny_status(), INA_PROTO_ERR_UNSUPPORTED);
    ck_assert(rig.sink.events.empty());
    expect_pool_whole(rig);
}
END_TEST

// Defer, then Grant at a tick: the kept blocks are replayed in the Segs and
// the result is exact (floats: still rank order).
START_TEST(test_defer_then_grant_on_tick)
{
    const std::vector<uint32_t> nodes = {0, 0, 1, 1};
    const uint32_t n = 4, window = 2, block_elems = 8;
    const uint64_t total = 8 * 5;
    for (uint32_t seed = 1; seed <= 20; ++seed) {
        Rig rig;
        Members m(n);
        const uint32_t jid = make_job(rig, m.ptrs(), nodes, window);
        rig.sched->mode = TestScheduler::Mode::kDefer;
        auto data = fp_data<float>(n, total, seed);
        const auto ref = fp_rank_order_sum<float>(data, total);
        CallSim sim(rig, m.ptrs(), jid, 0, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_FLOAT,
                    block_elems, total, data, std::vector<bool>(n, true));
        std::mt19937 rng(seed);
        ck_assert_uint_eq(sim.run(rng), n * window); // first windows, then stuck
        ck_assert(sim.nobody_decided());
        ck_assert(rig.sink.events.empty());
        ck_assert_uint_eq(rig.agg.counters().calls_deferred, 1);
        ck_assert_uint_eq(rig.agg.counters().kept_blocks, n * window);
        ck_assert_uint_eq(rig.agg.deferred_calls(), 1);
        ck_assert(rig.agg.wants_tick());
        ck_assert_uint_eq(rig.sched->asked.size(), 1); // asked once, at the first block
        ck_assert_uint_eq(rig.agg.pool().free_segs(), rig.agg.pool().size());

        rig.agg.tick(Clock::now()); // still deferred
        ck_assert_uint_eq(rig.sched->ticks, 1);
        ck_assert_uint_eq(rig.sched->asked.size(), 2);
        ck_assert_uint_eq(rig.sched->asked[1].asked, 1);
        ck_assert(rig.sink.events.empty());

        rig.sched->mode = TestScheduler::Mode::kFree;
        rig.agg.tick(Clock::now());
        sim.drain();
        ck_assert(sim.all_decided());
        ck_assert_uint_eq(sim.results_heard(), n * window); // the replayed blocks completed
        ck_assert(!rig.agg.wants_tick());
        ck_assert_uint_eq(rig.agg.kept_bytes(), 0);
        sim.run(rng);
        ck_assert(sim.complete());
        for (uint32_t r = 0; r < n; ++r) {
            ck_assert(sim.granted(r));
            ck_assert_int_eq(std::memcmp(sim.result(r).data(), ref.data(), ref.size()), 0);
        }
        ck_assert(rig.sink.events.empty());
        ck_assert_uint_eq(rig.agg.counters().calls_granted, 1);
        ck_assert_uint_eq(rig.sched->done.size(), 1);
        ck_assert_uint_eq(rig.sched->done[0].lease_size, window);
        expect_pool_whole(rig);
    }
}
END_TEST

// A deferred call granted in a round that a std::bad_alloc cut short (its
// GRANT could not be sent): the blocks kept for it are replayed at the next
// tick, not stranded with the kept bytes still counted, and the call ends.
START_TEST(test_defer_grant_cut_short_by_bad_alloc)
{
    const uint32_t n = 2, window = 2, block_elems = 4;
    const uint64_t total = 16;
    Rig rig;
    Members m(n);
    const uint32_t jid = make_job(rig, m.ptrs(), {0, 1}, window);
    rig.sched->mode = TestScheduler::Mode::kDefer;
    CallSim sim(rig, m.ptrs(), jid, 0, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                block_elems, total, int_data(n, total, 5), {true, true});
    std::mt19937 rng(5);
    ck_assert_uint_eq(sim.run(rng), n * window);
    ck_assert_uint_gt(rig.agg.kept_bytes(), 0);

    rig.sched->mode = TestScheduler::Mode::kFree;
    rig.sink.throw_decisions = 1;
    bool threw = false;
    try {
        rig.agg.tick(Clock::now());
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    ck_assert(threw);
    ck_assert_uint_eq(rig.sched->asked.size(), 2); // granted, before the GRANT failed
    ck_assert(rig.agg.wants_tick());               // the round is not over

    rig.agg.tick(Clock::now());
    ck_assert_uint_eq(rig.sched->asked.size(), 2); // decided once
    ck_assert_uint_eq(rig.agg.kept_bytes(), 0);
    ck_assert_uint_eq(rig.agg.deferred_calls(), 0);
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kResult), n * window); // the kept blocks
    for (Member *p : m.ptrs()) {
        rig.agg.member_lost(*p);
    }
    ck_assert_uint_eq(rig.agg.live_jobs(), 0);
    expect_pool_whole(rig);
}
END_TEST

// A call deferred because the pool is taken is asked again when a lease
// comes back, without any tick, and granted then.
START_TEST(test_defer_until_a_lease_returns)
{
    const uint32_t block_elems = 4;
    const uint64_t total = 20;
    Rig rig(small_config(4));
    rig.sched->mode = TestScheduler::Mode::kFreeOrDefer;
    Members a(2), b(3);
    const uint32_t ja = make_job(rig, a.ptrs(), {0, 1}, 4);
    const uint32_t jb = make_job(rig, b.ptrs(), {0, 1, 2}, 2);
    auto da = int_data(2, total, 1);
    auto db = int_data(3, total, 2);
    CallSim simA(rig, a.ptrs(), ja, 0, 4, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                 block_elems, total, da, {true, true});
    CallSim simB(rig, b.ptrs(), jb, 0, 2, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                 block_elems, total, db, {true, true, true});
    simA.send(0);
    ck_assert(simA.all_decided());
    std::mt19937 rng(8);
    ck_assert_uint_eq(simB.run(rng), 6); // deferred: the first windows are kept
    ck_assert(simB.nobody_decided());
    ck_assert_uint_eq(rig.agg.deferred_calls(), 1);
    simA.run(rng); // A completes; its lease returns; B is granted and replayed
    ck_assert(simA.complete());
    simB.drain();
    ck_assert(simB.all_decided());
    ck_assert(simB.granted(0));
    ck_assert_uint_eq(simB.results_heard(), 6);
    simB.run(rng);
    ck_assert(simB.complete());
    ck_assert(simB.result(1) == bytes_of(int_sum(db, total)));
    ck_assert_int_eq(rig.sched->ticks, 0);
    ck_assert_uint_eq(rig.agg.deferred_calls(), 0);
    ck_assert(rig.sink.events.empty());
    expect_pool_whole(rig);
}
END_TEST

// Defer, then Deny: every member hears the DENY once, the kept blocks and
// every later block are dropped, the scheduler hears the call is over.
START_TEST(test_defer_then_deny)
{
    const uint32_t n = 3, window = 2, block_elems = 4;
    const uint64_t total = 16;
    Rig rig;
    Members m(n);
    const uint32_t jid = make_job(rig, m.ptrs(), {0, 1, 2}, window);
    rig.sched->mode = TestScheduler::Mode::kDefer;
    auto data = int_data(n, total, 4);
    CallSim sim(rig, m.ptrs(), jid, 3, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                block_elems, total, data, std::vector<bool>(n, true));
    sim.send(2);
    sim.send(0);
    sim.send(2);
    ck_assert(sim.nobody_decided());
    rig.sched->mode = TestScheduler::Mode::kDeny;
    rig.sched->deny_status = INA_PROTO_ERR_NO_RESOURCES;
    rig.agg.tick(Clock::now());
    sim.drain();
    ck_assert(sim.all_decided());
    for (uint32_t r = 0; r < n; ++r) {
        ck_assert(!sim.granted(r));
    }
    ck_assert_int_eq(sim.deny_status(), INA_PROTO_ERR_NO_RESOURCES);
    ck_assert_uint_eq(rig.agg.counters().denied_blocks, 3);
    std::mt19937 rng(1);
    sim.run(rng); // the rest of the first windows: dropped
    ck_assert(rig.sink.events.empty());
    ck_assert_uint_eq(sim.results_heard(), 0);
    ck_assert_uint_eq(rig.agg.counters().denied_blocks, 6);
    ck_assert_uint_eq(rig.agg.deferred_calls(), 0);
    ck_assert_uint_eq(rig.agg.kept_bytes(), 0);
    ck_assert_uint_eq(rig.sched->done.size(), 0); // it denied the call itself
    expect_pool_whole(rig);
}
END_TEST

// No room to keep more blocks of deferred calls: the call is denied for
// everybody, the scheduler hears it is over.
START_TEST(test_defer_keep_bound)
{
    const uint32_t n = 3, window = 2, block_elems = 64;
    const uint64_t total = 256;
    AggregatorConfig cfg = small_config();
    cfg.keep_bytes = 3 * (block_elems * sizeof(int32_t) + sizeof(KeptBlock));
    Rig rig(cfg);
    Members m(n);
    const uint32_t jid = make_job(rig, m.ptrs(), {0, 1, 2}, window);
    rig.sched->mode = TestScheduler::Mode::kDefer;
    auto data = int_data(n, total, 4);
    CallSim sim(rig, m.ptrs(), jid, 0, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                block_elems, total, data, std::vector<bool>(n, true));
    sim.send(0);
    sim.send(1);
    sim.send(2);
    ck_assert(sim.nobody_decided());
    ck_assert_uint_eq(rig.agg.counters().kept_blocks, 3);
    sim.send(0); // does not fit
    ck_assert(sim.all_decided());
    ck_assert(!sim.granted(0));
    ck_assert_int_eq(sim.deny_status(), INA_PROTO_ERR_NO_RESOURCES);
    ck_assert_uint_eq(rig.agg.counters().denied_blocks, 4);
    ck_assert_uint_eq(rig.agg.kept_bytes(), 0);
    ck_assert(!rig.agg.wants_tick());
    ck_assert_uint_eq(rig.sched->done.size(), 1);
    ck_assert_uint_eq(rig.sched->done[0].lease_size, 0);
    ck_assert(rig.sink.events.empty());
}
END_TEST

// A member leaves while two calls of the job are deferred with its blocks
// kept, and the DENY of the first cannot be sent (std::bad_alloc, which the
// agent survives): both calls ended all the same, no block of the leaver is
// kept (they name it, and it may be gone next).
START_TEST(test_leave_deny_cut_short_by_bad_alloc)
{
    const uint32_t n = 3, window = 2, block_elems = 4;
    const uint64_t total = 16;
    Rig rig;
    Members m(n);
    const uint32_t jid = make_job(rig, m.ptrs(), {0, 1, 2}, window);
    rig.sched->mode = TestScheduler::Mode::kDefer;
    for (uint64_t mid = 0; mid < 2; ++mid) {
        CallSim sim(rig, m.ptrs(), jid, mid, window, INA_COLL_ALLREDUCE, INA_OP_SUM,
                    INA_DT_INT32, block_elems, total, int_data(n, total, 6),
                    std::vector<bool>(n, true));
        std::mt19937 rng(6);
        ck_assert_uint_eq(sim.run(rng), n * window);
    }
    ck_assert_uint_eq(rig.agg.deferred_calls(), 2);
    rig.sink.throw_decisions = 1;
    bool threw = false;
    try {
        leave(rig, m[1], jid, 1);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    ck_assert(threw);
    ck_assert_uint_eq(rig.agg.deferred_calls(), 0);
    ck_assert_uint_eq(rig.agg.kept_bytes(), 0);
    ck_assert_uint_eq(rig.sched->done.size(), 2);
    for (Member *p : m.ptrs()) {
        rig.agg.member_lost(*p);
    }
    ck_assert_uint_eq(rig.agg.live_jobs(), 0);
    expect_pool_whole(rig);
}
END_TEST

// A member lost while its call is deferred: nobody was told GRANT, so the
// others get a DENY (status not-member) and fall back, the kept blocks go.
START_TEST(test_defer_then_member_lost)
{
    const uint32_t n = 3, window = 2, block_elems = 4;
    const uint64_t total = 16;
    Rig rig;
    Members m(n);
    const uint32_t jid = make_job(rig, m.ptrs(), {0, 1, 2}, window);
    rig.sched->mode = TestScheduler::Mode::kDefer;
    auto data = int_data(n, total, 4);
    CallSim sim(rig, m.ptrs(), jid, 0, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                block_elems, total, data, std::vector<bool>(n, true));
    std::mt19937 rng(1);
    sim.run(rng);
    rig.agg.member_lost(m[1]);
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kDecision), 2);
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kDecision, &m[0]), 1);
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kDecision, &m[2]), 1);
    ck_assert_uint_eq(rig.sink.events.size(), 2);
    for (const Event &e : rig.sink.events) {
        ck_assert(!e.d.grant);
        ck_assert_int_eq(e.d.status, INA_PROTO_ERR_NOT_MEMBER);
    }
    ck_assert_uint_eq(rig.agg.counters().calls_aborted, 0);
    ck_assert_uint_eq(rig.agg.counters().calls_denied, 1);
    ck_assert_uint_eq(rig.agg.deferred_calls(), 0);
    ck_assert_uint_eq(rig.agg.kept_bytes(), 0);
    ck_assert_uint_eq(rig.sched->done.size(), 1);
    ck_assert_uint_eq(rig.sched->done[0].lease_size, 0);
    rig.sink.events.clear();
    rig.sched->mode = TestScheduler::Mode::kFree;
    rig.agg.tick(Clock::now());
    ck_assert(rig.sink.events.empty()); // nothing left to decide
    expect_pool_whole(rig);
}
END_TEST

// What the scheduler is told: jobs created (with their shape) and freed,
// every call asked with its parameters, every lease given back.
START_TEST(test_scheduler_hooks)
{
    Rig rig(small_config(16));
    Members m(5);
    Member lonely;
    const uint32_t jid = make_job(rig, m.ptrs(), {4, 4, 8, 8, 8}, 100); // window clamped
    ck_assert_uint_eq(rig.sched->created.size(), 1);
    const JobInfo &ji = rig.sched->created[0];
    ck_assert_uint_eq(ji.jid, jid);
    ck_assert_uint_eq(ji.nmembers, 5);
    ck_assert_uint_eq(ji.nnodes, 2);
    ck_assert_uint_eq(ji.window, 8);
    ck_assert_uint_eq(rig.agg.max_window(), 8);

    auto data = int_data(5, 40, 1);
    std::mt19937 rng(1);
    for (uint64_t mid = 0; mid < 3; ++mid) {
        CallSim sim(rig, m.ptrs(), jid, mid, 8, INA_COLL_ALLREDUCE, INA_OP_MAX, INA_DT_INT32, 4,
                    40, data, std::vector<bool>(5, true));
        sim.run(rng);
        ck_assert(sim.complete());
    }
    ck_assert_uint_eq(rig.sched->asked.size(), 3);
    const CallRequest &q = rig.sched->asked[2];
    ck_assert_uint_eq(q.jid, jid);
    ck_assert_uint_eq(q.mid, 2);
    ck_assert_uint_eq(q.window, 8);
    ck_assert_uint_eq(q.total, 40);
    ck_assert_uint_eq(q.coll, INA_COLL_ALLREDUCE);
    ck_assert_uint_eq(q.op, INA_OP_MAX);
    ck_assert_uint_eq(q.dtype, INA_DT_INT32);
    ck_assert_uint_eq(q.nmembers, 5);
    ck_assert_uint_eq(q.asked, 0);
    ck_assert_uint_eq(rig.sched->done.size(), 3);
    for (uint64_t mid = 0; mid < 3; ++mid) {
        ck_assert_uint_eq(rig.sched->done[mid].mid, mid);
        ck_assert_uint_eq(rig.sched->done[mid].lease_size, 8);
    }
    // A job whose first member goes before the others opened it is freed
    // with it.
    const uint32_t orphan = open_job(rig.agg, rig.sink, lonely, 0x0e0e, {0, 0}, 2, 0).jid;
    ck_assert_uint_eq(rig.sched->created.size(), 2);
    rig.agg.member_lost(lonely);
    ck_assert_uint_eq(rig.sched->freed.size(), 1);
    ck_assert_uint_eq(rig.sched->freed[0], orphan);
    // Everybody leaves: freed.
    for (uint32_t r = 0; r < 5; ++r) {
        leave(rig, m[r], jid, r);
    }
    ck_assert_uint_eq(rig.sched->freed.size(), 2);
    ck_assert_uint_eq(rig.sched->freed[1], jid);
    ck_assert_uint_eq(rig.agg.live_jobs(), 0);
    ck_assert_uint_eq(rig.agg.counters().jobs_created, 2);
    ck_assert_uint_eq(rig.agg.counters().jobs_freed, 2);
    expect_pool_whole(rig);
}
END_TEST

// A job freed with a granted call in flight and one deferred: both end, the
// lease and the kept blocks go back.
START_TEST(test_job_freed_with_open_calls)
{
    Rig rig(small_config(4));
    rig.sched->mode = TestScheduler::Mode::kFreeOrDefer;
    Members m(2);
    const uint32_t jid = make_job(rig, m.ptrs(), {0, 1}, 4);
    auto data = int_data(2, 16, 1);
    CallSim s0(rig, m.ptrs(), jid, 0, 4, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, 4, 16,
               data, {true, true});
    CallSim s1(rig, m.ptrs(), jid, 1, 4, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, 4, 16,
               data, {true, true});
    s0.send(0);
    s1.send(0); // no Segs left: deferred
    s1.send(1);
    ck_assert_uint_eq(rig.agg.deferred_calls(), 1);
    rig.agg.member_lost(m[0]);
    rig.agg.member_lost(m[1]);
    ck_assert_uint_eq(rig.agg.live_jobs(), 0);
    ck_assert_uint_eq(rig.agg.deferred_calls(), 0);
    ck_assert_uint_eq(rig.agg.kept_bytes(), 0);
    ck_assert_uint_eq(rig.sched->done.size(), 2);
    ck_assert_uint_eq(rig.sched->freed.size(), 1);
    expect_pool_whole(rig);
}
END_TEST

// BARRIER: one empty block, a RESULT without a buffer for everybody.
START_TEST(test_barrier)
{
    const uint32_t n = 3;
    Rig rig;
    Members m(n);
    const uint32_t jid = make_job(rig, m.ptrs(), {0, 0, 1}, 2);
    for (uint32_t r = 0; r < n; ++r) {
        ina_proto_hdr_t h = block_hdr(jid, r, 0, 0, 2, INA_COLL_BARRIER, INA_OP_REPLACE,
                                      INA_DT_UINT8, 0, 0, 0, 0, true);
        rig.agg.block(m[r], h, nullptr);
    }
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kDecision), n);
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kResult), n);
    for (const Event &e : rig.sink.events) {
        if (e.kind == Event::Kind::kResult) {
            ck_assert(!e.has_buffer);
            ck_assert(e.payload.empty());
        }
    }
    ck_assert_uint_eq(rig.sched->done.size(), 1);
    expect_pool_whole(rig);
}
END_TEST

// Refusals the transport makes go through the same counting.
START_TEST(test_reject_counts_and_tells)
{
    Rig rig;
    Member x;
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_BLOCK);
    h.jid = 3;
    rig.agg.reject(&x, h, INA_PROTO_ERR_MALFORMED, "test");
    rig.agg.reject(nullptr, h, INA_PROTO_ERR_MALFORMED, "test, nobody to tell");
    ck_assert_uint_eq(rig.agg.counters().rejected[INA_PROTO_ERR_MALFORMED], 2);
    ck_assert_uint_eq(rig.sink.events.size(), 1);
    ck_assert_ptr_eq(rig.sink.events[0].to, &x);
    ck_assert_int_eq(rig.sink.events[0].status, INA_PROTO_ERR_MALFORMED);
}
END_TEST

// Certification (ina_proto.h): every RESULT carries the least of the
// members' marks, as their BLOCKs said them (a member that sent nothing yet
// counts 0); a lagging member holds it back; marks across the 32-bit wrap.
START_TEST(test_certification)
{
    const uint32_t block_elems = 4;
    Rig rig(small_config(16));
    Members m(2);
    const uint32_t jid = make_job(rig, m.ptrs(), {0, 1}, 4);
    const std::vector<int32_t> v(block_elems, 1);
    // One one-block allreduce as MID `mid`, member r saying mark done[r]:
    // the `done` of the RESULT each member gets.
    auto call = [&](uint64_t mid, uint32_t d0, uint32_t d1) {
        const uint32_t done[2] = {d0, d1};
        for (uint32_t r = 0; r < 2; ++r) {
            ina_proto_hdr_t h = block_hdr(jid, r, mid, 0, 4, INA_COLL_ALLREDUCE, INA_OP_SUM,
                                          INA_DT_INT32, 0, block_elems, block_elems, block_elems, true);
            h.done = done[r];
            expect_valid(h, v.size() * sizeof(int32_t));
            rig.agg.block(m[r], h, v.data());
        }
        std::vector<uint32_t> said;
        for (const Event &e : rig.sink.events) {
            if (e.kind == Event::Kind::kResult) {
                said.push_back(e.hdr.done);
            }
        }
        rig.sink.events.clear();
        ck_assert_uint_eq(said.size(), 2);
        ck_assert_uint_eq(said[0], said[1]); // every member hears the same mark
        return said[0];
    };
    ck_assert_uint_eq(call(0, 0, 0), 0);
    ck_assert_uint_eq(call(1, 1, 1), 1);
    ck_assert_uint_eq(call(2, 2, 1), 1); // member 1 has not completed MID 1 yet
    ck_assert_uint_eq(call(3, 3, 3), 3);
    ck_assert_uint_eq(rig.agg.find_job(jid)->certified(), 3);
    ck_assert_uint_eq(call(4, 2, 4), 3); // a mark never goes back
    expect_pool_whole(rig);
}
END_TEST

// Leases (ina_proto.h): JOB_OPENED says `ahead` for MID 0, each verdict
// says it for the next MID; a call's lease may be shorter than the job's
// window and is named in its GRANT and RESULTs; blocks sent before the
// verdict (seg = sid) fit any lease of at least `ahead`; a block outside the
// lease is refused; a scheduler may not lease less than the members were
// told; a call decided before its predecessor's verdict was told 1, and so
// is the predecessor's verdict then.
START_TEST(test_leases)
{
    const uint32_t block_elems = 4;
    const uint64_t total = 4 * block_elems; // 4 blocks
    Rig rig(small_config(16));
    rig.sched->ahead_word = 2;
    Members m(2);
    const Event o0 = open_job(rig.agg, rig.sink, m[0], 0x1ea5e, {0, 1}, 8, 0);
    const Event o1 = open_job(rig.agg, rig.sink, m[1], 0x1ea5e, {0, 1}, 8, 1);
    ck_assert_int_eq(o1.status, INA_PROTO_OK);
    ck_assert_uint_eq(o0.window, 8);
    ck_assert_uint_eq(o0.ahead, 2);
    ck_assert_uint_eq(o1.ahead, 2);
    const uint32_t jid = o0.jid;
    rig.sink.events.clear();
    auto data = int_data(2, total, 7);
    auto send = [&](uint32_t r, uint64_t mid, uint32_t sid, uint32_t window) {
        ina_proto_hdr_t h = block_hdr(jid, r, mid, sid, window, INA_COLL_ALLREDUCE, INA_OP_SUM,
                                      INA_DT_INT32, 0, block_elems, block_elems, total, true);
        rig.agg.block(m[r], h, data[r].data() + sid * block_elems * sizeof(int32_t), nullptr);
    };

    // Call 0: leased 3 of the window's 8 Segs.
    rig.sched->lease_size = 3;
    send(0, 0, 0, 8); // before the verdict: seg = sid, the job's window
    ck_assert_uint_eq(rig.sched->asked.back().min_window, 2);
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kDecision), 2);
    for (const Event &e : rig.sink.events) {
        ck_assert(e.d.grant);
        ck_assert_uint_eq(e.d.window, 3);
        ck_assert_uint_eq(e.d.ahead, 2);
    }
    rig.sink.events.clear();
    send(1, 0, 0, 8);
    send(1, 0, 1, 8); // member 1 had not heard the GRANT: its `ahead` was 2
    send(0, 0, 1, 3);
    send(0, 0, 2, 3);
    send(1, 0, 2, 3);
    send(0, 0, 3, 3); // seg 0 again: block 0's Seg is free
    send(1, 0, 3, 3);
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kResult), 8);
    std::vector<int32_t> sum = int_sum(data, total);
    for (const Event &e : rig.sink.events) {
        ck_assert(e.kind == Event::Kind::kResult);
        ck_assert_uint_eq(e.hdr.window, 3);
        ck_assert_uint_eq(e.hdr.ahead, 2);
        ck_assert_uint_eq(e.hdr.seg, e.hdr.sid % 3);
        ck_assert(std::memcmp(e.payload.data(), sum.data() + e.hdr.sid * block_elems,
                              e.payload.size()) == 0);
    }
    ck_assert_uint_eq(rig.sched->done.back().lease_size, 3);
    expect_pool_whole(rig);
    rig.sink.events.clear();

    // Call 1: a block outside its lease of 2 is refused.
    rig.sched->lease_size = 2;
    send(0, 1, 0, 8);
    ck_assert_uint_eq(rig.sched->asked.back().min_window, 2);
    rig.sink.events.clear();
    send(0, 1, 2, 8); // seg 2 of a lease of 2 Segs
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kError), 1);
    ck_assert_int_eq(rig.sink.events.back().status, INA_PROTO_ERR_MISMATCH);
    rig.sink.events.clear();

    // Call 2: the members were told 2, a lease of 1 would lose a block.
    rig.sched->lease_size = 1;
    send(1, 2, 0, 8);
    ck_assert_uint_eq(rig.sink.count(Event::Kind::kDecision), 2);
    ck_assert(!rig.sink.events.back().d.grant);
    ck_assert_int_eq(rig.sink.events.back().status, INA_PROTO_ERR_NO_RESOURCES);
    rig.sink.events.clear();

    // Call 4 reaches the agent before call 3: nobody heard a word for it.
    rig.sched->lease_size = 0;
    send(0, 4, 0, 8);
    ck_assert_uint_eq(rig.sched->asked.back().min_window, 1);
    send(0, 3, 0, 8);
    ck_assert_uint_eq(rig.sched->asked.back().min_window, 2); // call 2's word
    for (const Event &e : rig.sink.events) {
        if (e.kind == Event::Kind::kDecision && e.d.mid == 3) {
            ck_assert_uint_eq(e.d.ahead, 1); // call 4 was leased without it
        }
    }
}
END_TEST

// Draining: a call in flight when the drain begins completes; every new
// call is denied (DRAINING) on every member; after the drain ends calls are
// granted again. The job's statistics count what its members sent and got,
// and block times are recorded once per completed block.
START_TEST(test_drain_and_job_stats)
{
    const uint32_t block_elems = 4;
    const uint64_t total = 12; // 3 blocks
    AggregatorConfig cfg = small_config(4);
    cfg.time_blocks = true;
    Rig rig(cfg);
    Members a(2);
    const uint32_t ja = make_job(rig, a.ptrs(), {0, 1}, 4);
    auto da = int_data(2, total, 1);
    CallSim sim0(rig, a.ptrs(), ja, 0, 4, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                 block_elems, total, da, {true, false});
    sim0.send(0);
    ck_assert(sim0.all_decided() && sim0.granted(0));
    ck_assert_uint_eq(rig.agg.granted_calls(), 1);
    rig.agg.set_draining(true);
    std::mt19937 rng(5);
    sim0.run(rng);
    ck_assert(sim0.complete());
    ck_assert(sim0.result(0) == bytes_of(int_sum(da, total)));
    ck_assert_uint_eq(rig.agg.granted_calls(), 0);

    CallSim sim1(rig, a.ptrs(), ja, 1, 4, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                 block_elems, total, da, {true, true});
    sim1.run(rng);
    ck_assert(sim1.all_decided());
    ck_assert(!sim1.granted(0) && !sim1.granted(1));
    ck_assert_int_eq(sim1.deny_status(), INA_PROTO_ERR_DRAINING);
    ck_assert_uint_eq(rig.agg.counters().denied_by[INA_PROTO_ERR_DRAINING], 1);

    rig.agg.set_draining(false);
    CallSim sim2(rig, a.ptrs(), ja, 2, 4, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                 block_elems, total, da, {true, true});
    sim2.run(rng);
    ck_assert(sim2.complete());
    expect_pool_whole(rig);

    const Job *job = rig.agg.find_job(ja);
    ck_assert_ptr_nonnull(job);
    const Job::Stats &st = job->stats();
    // Calls 0 and 2 completed 3 blocks each; call 1's blocks were counted in
    // (and dropped). Rank 1 of call 0 wanted no payload: ACKs.
    ck_assert_uint_eq(st.blocks_done, 6);
    ck_assert_uint_eq(st.blocks_in, 2 * 3 * 3);
    ck_assert_uint_eq(st.bytes_in, 3 * 2 * total * sizeof(int32_t));
    ck_assert_uint_eq(st.results_out, 3 + 3 * 2);
    ck_assert_uint_eq(st.acks_out, 3);
    ck_assert_uint_eq(st.bytes_out, (1 + 2) * total * sizeof(int32_t));
    ck_assert_uint_eq(st.errors, 0);
    ck_assert_uint_eq(job->decisions().granted, 2);
    ck_assert_uint_eq(job->decisions().denied[INA_PROTO_ERR_DRAINING], 1);
    ck_assert_uint_eq(rig.agg.block_times().count(), 6);
    ck_assert_uint_eq(rig.agg.block_times().cumulative(LatencyHistogram::kBounds.size()), 6);
    ck_assert(rig.agg.block_times().sum() >= 0);
}
END_TEST

int main()
{
    return ina_test::run_suite("aggregator", "aggregator",
                               {test_int_sum_any_interleaving,
                                test_float_sum_rank_order_bit_identical,
                                test_payload_to_askers_ack_to_others,
                                test_duplicates,
                                test_duplicate_at_top_sid,
                                test_foreign_members,
                                test_member_lost_mid_call,
                                test_call_after_member_gone,
                                test_rank_call_abort,
                                test_deny_same_for_everybody,
                                test_defer_then_grant_on_tick,
                                test_defer_grant_cut_short_by_bad_alloc,
                                test_defer_until_a_lease_returns,
                                test_defer_then_deny,
                                test_defer_keep_bound,
                                test_defer_then_member_lost,
                                test_leave_deny_cut_short_by_bad_alloc,
                                test_scheduler_hooks,
                                test_job_freed_with_open_calls,
                                test_barrier,
                                test_reject_counts_and_tells,
                                test_leases,
                                test_certification,
                                test_drain_and_job_stats}, 60);
}

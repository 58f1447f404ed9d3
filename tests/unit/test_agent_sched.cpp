// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Unit tests of the agent's scheduling policies (switch_agent/sched/): the
// free-Seg policy on its own (it takes and returns leases, never defers,
// needs no clock) and behind the Aggregator (a call that finds the pool
// taken is denied for every member; leases come back on completion, abort
// and job free); the exclusive policy (one job holds the agent until it is
// freed or idle; the others are denied, on a clock the test steers); the
// partition policy (the pool split evenly among active tenants, leases that
// shrink as tenants arrive and grow as they leave).
#include <check.h>
#include "check_main.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "aggregator.h"
#include "aggregation_fakes.h"
#include "sched/exclusive.h"
#include "sched/free_seg.h"
#include "sched/partition.h"

using namespace agg_test;
using ina::sched::PartitionScheduler;
using ina::sched::ExclusiveScheduler;
using ina::sched::FreeSegScheduler;

START_TEST(test_free_seg_grant_deny)
{
    SegPool pool(8, 64);
    FreeSegScheduler sched(pool);
    CallRequest req{1, 0, 4, 100, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, 3, 0};
    Verdict a = sched.decide(req); // the scheduler takes the lease itself
    ck_assert(a.kind == Verdict::Kind::kGrant);
    ck_assert_int_eq(a.status, INA_PROTO_OK);
    ck_assert_uint_eq(a.lease.size(), 4);
    ck_assert_uint_eq(pool.free_segs(), 4);
    Verdict b = sched.decide(req); // 4 still free
    ck_assert(b.kind == Verdict::Kind::kGrant);
    ck_assert_uint_eq(pool.free_segs(), 0);
    std::vector<uint32_t> all(a.lease);
    all.insert(all.end(), b.lease.begin(), b.lease.end());
    std::sort(all.begin(), all.end());
    ck_assert(std::unique(all.begin(), all.end()) == all.end()); // disjoint leases
    Verdict d = sched.decide(req);
    ck_assert(d.kind == Verdict::Kind::kDeny); // never Defer
    ck_assert_int_eq(d.status, INA_PROTO_ERR_NO_RESOURCES);
    ck_assert(d.lease.empty());
    sched.on_call_done(1, 0, a.lease); // the lease goes back
    ck_assert(a.lease.empty());
    ck_assert_uint_eq(pool.free_segs(), 4);
    req.window = 2;
    Verdict c = sched.decide(req);
    ck_assert(c.kind == Verdict::Kind::kGrant);
    req.window = 5;
    ck_assert(sched.decide(req).kind == Verdict::Kind::kDeny); // all or nothing
    ck_assert_uint_eq(pool.free_segs(), 2);
    sched.on_call_done(1, 1, b.lease);
    sched.on_call_done(1, 2, c.lease);
    ck_assert_uint_eq(pool.free_segs(), 8);
    // The hooks it does not need are harmless; an empty lease is nothing to return.
    sched.on_job_created(JobInfo{1, 3, 3, 4});
    sched.tick(Clock::now());
    std::vector<uint32_t> none;
    sched.on_call_done(1, 3, none);
    sched.on_job_freed(1);
    ck_assert_uint_eq(pool.free_segs(), 8);
}
END_TEST

// A lease returned in the middle of a call (abort) still has busy Segs: they
// come back empty.
START_TEST(test_free_seg_abort_returns_busy_segs)
{
    SegPool pool(2, 64);
    FreeSegScheduler sched(pool);
    Verdict g = sched.decide(CallRequest{1, 0, 2, 32, INA_COLL_ALLREDUCE, INA_OP_SUM,
                                         INA_DT_INT32, 2, 0});
    ck_assert(g.kind == Verdict::Kind::kGrant);
    const uint32_t nodes[2] = {0, 1};
    Topology topo(nodes, 2);
    std::vector<int32_t> v(16, 1);
    Block b{0, 0, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, true, 0, 16, 16, 32, v.data()};
    ck_assert(pool.contribute(g.lease[0], topo, b) == SegOutcome::kStored);
    ck_assert(pool.busy(g.lease[0]));
    const uint32_t seg = g.lease[0];
    sched.on_call_done(1, 0, g.lease);
    ck_assert(!pool.busy(seg));
    ck_assert_uint_eq(pool.free_segs(), 2);
    ck_assert_uint_eq(pool.buffers().free_count(), pool.buffers().allocated());
}
END_TEST

// Behind the Aggregator, as ina-switchd runs it.
START_TEST(test_free_seg_in_the_aggregator)
{
    FakeSink sink;
    Aggregator agg(small_config(4),
                   [](SegPool &pool) { return std::make_unique<FreeSegScheduler>(pool); }, sink);
    Members a(2), b(2);
    // make_job wants a Rig; do it by hand here.
    uint32_t tag = 0;
    auto job = [&](Members &m, uint32_t window) {
        ++tag;
        uint32_t jid = 0;
        for (uint32_t r = 0; r < 2; ++r) {
            jid = agg_test::open_job(agg, sink, m[r], tag, {0, 1}, window, r).jid;
        }
        sink.events.clear();
        return jid;
    };
    const uint32_t ja = job(a, 4);
    const uint32_t jb = job(b, 2);
    std::vector<int32_t> v(4, 7);
    auto blk = [&](uint32_t jid, uint32_t rank, uint64_t mid, uint32_t window) {
        return block_hdr(jid, rank, mid, 0, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                         0, 4, 4, 4, true);
    };
    agg.block(a[0], blk(ja, 0, 0, 4), v.data()); // A: granted, the whole pool
    ck_assert_uint_eq(sink.count(Event::Kind::kDecision), 2);
    ck_assert(sink.events[0].d.grant && sink.events[1].d.grant);
    sink.events.clear();
    agg.block(b[1], blk(jb, 1, 0, 2), v.data()); // B: denied for both members
    ck_assert_uint_eq(sink.count(Event::Kind::kDecision), 2);
    for (const Event &e : sink.events) {
        ck_assert(!e.d.grant);
        ck_assert_int_eq(e.d.status, INA_PROTO_ERR_NO_RESOURCES);
    }
    ck_assert(!agg.wants_tick()); // the free-Seg policy never defers
    sink.events.clear();
    agg.block(a[1], blk(ja, 1, 0, 4), v.data()); // A completes, its lease returns
    ck_assert_uint_eq(sink.count(Event::Kind::kResult), 2);
    ck_assert_uint_eq(agg.pool().free_segs(), 4);
    sink.events.clear();
    agg.block(b[0], blk(jb, 0, 1, 2), v.data()); // B's next call: granted
    ck_assert(sink.events[0].d.grant);
    agg.member_lost(b[1]); // aborted: its lease returns too
    ck_assert_uint_eq(agg.pool().free_segs(), 4);
    ck_assert_uint_eq(agg.counters().calls_granted, 2);
    ck_assert_uint_eq(agg.counters().calls_denied, 1);
    ck_assert_uint_eq(agg.counters().calls_aborted, 1);
}
END_TEST

// The exclusive policy on a clock the test moves: job 1 takes the agent at
// its first call; job 2 is denied while job 1 has a call open and until job
// 1 was idle for the set time, then takes the agent over; a freed holder
// frees the agent at once. The holder's own calls share the pool as under
// the free-Seg policy.
START_TEST(test_exclusive_holds_until_idle_or_freed)
{
    using std::chrono::milliseconds;
    SegPool pool(8, 64);
    Clock::time_point t{};
    ExclusiveScheduler sched(pool, milliseconds(100), [&t] { return t; });
    auto req = [](uint32_t jid, uint64_t mid, uint32_t window) {
        return CallRequest{jid, mid, window, 100, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                           2, 0, jid}; // each job a tenant of its own
    };
    ck_assert_uint_eq(sched.holder(), 0);
    Verdict a = sched.decide(req(1, 0, 4)); // job 1 takes the agent
    ck_assert(a.kind == Verdict::Kind::kGrant);
    ck_assert_uint_eq(sched.holder(), 1);
    Verdict b = sched.decide(req(2, 0, 2)); // job 2: denied, the pool has room
    ck_assert(b.kind == Verdict::Kind::kDeny);
    ck_assert_int_eq(b.status, INA_PROTO_ERR_BUSY);
    ck_assert_uint_eq(pool.free_segs(), 4);
    // Leases: job 2's members hear "one block before the verdict" while
    // job 1 holds the agent; the holder streams its whole window.
    ck_assert_uint_eq(sched.ahead(2, 2), 1);
    ck_assert_uint_eq(sched.ahead(1, 4), 4);
    Verdict a2 = sched.decide(req(1, 1, 4)); // the holder's second call: the rest
    ck_assert(a2.kind == Verdict::Kind::kGrant);
    ck_assert(sched.decide(req(1, 2, 1)).kind == Verdict::Kind::kDeny); // pool empty
    t += milliseconds(500);
    ck_assert(sched.decide(req(2, 1, 2)).kind == Verdict::Kind::kDeny); // calls still open
    sched.on_call_done(1, 0, a.lease);
    sched.on_call_done(1, 1, a2.lease);
    ck_assert_uint_eq(pool.free_segs(), 8);
    t += milliseconds(99);
    ck_assert(sched.decide(req(2, 2, 2)).kind == Verdict::Kind::kDeny); // idle 99 ms only
    t += milliseconds(1);
    Verdict c = sched.decide(req(2, 3, 2)); // idle 100 ms: job 2 takes over
    ck_assert(c.kind == Verdict::Kind::kGrant);
    ck_assert_uint_eq(sched.holder(), 2);
    ck_assert(sched.decide(req(1, 3, 4)).kind == Verdict::Kind::kDeny); // now job 1 waits
    sched.on_call_done(2, 3, c.lease);
    std::vector<uint32_t> none; // a call that ended without a grant
    sched.on_call_done(1, 3, none);
    sched.on_job_freed(2); // the holder leaves: free at once
    ck_assert_uint_eq(sched.holder(), 0);
    ck_assert_uint_eq(sched.ahead(1, 4), 4);
    Verdict d = sched.decide(req(1, 4, 4));
    ck_assert(d.kind == Verdict::Kind::kGrant);
    ck_assert_uint_eq(sched.holder(), 1);
    sched.on_call_done(1, 4, d.lease);
    ck_assert_uint_eq(pool.free_segs(), 8);
}
END_TEST

// The partition policy on a clock the test moves. Tenant 1 alone gets its
// whole window; tenant 2 arrives while 1 holds the pool: denied (its share
// is still held); each is told ahead = pool / (other tenants + 2); once 1's
// call ends each gets half; a lease never goes below the call's min_window; a tenant idle for
// the set time, or freed, gives its share back.
START_TEST(test_partition_shares)
{
    using std::chrono::milliseconds;
    SegPool pool(8, 64);
    Clock::time_point t{};
    PartitionScheduler sched(pool, milliseconds(100), [&t] { return t; });
    auto req = [](uint32_t jid, uint64_t mid, uint32_t min_window = 1) {
        CallRequest r{jid, mid, 8, 100, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, 2, 0, jid};
        r.min_window = min_window;
        return r;
    };
    sched.on_job_created(JobInfo{1, 2, 2, 8, 1});
    sched.on_job_created(JobInfo{2, 2, 2, 8, 2});
    ck_assert_uint_eq(sched.ahead(1, 8), 4); // room for a newcomer: 8 / 2
    Verdict a = sched.decide(req(1, 0, 8)); // alone: the whole window
    ck_assert(a.kind == Verdict::Kind::kGrant);
    ck_assert_uint_eq(a.lease.size(), 8);
    ck_assert_uint_eq(sched.active(), 1);
    Verdict b = sched.decide(req(2, 0)); // its half is still under tenant 1's call
    ck_assert(b.kind == Verdict::Kind::kDeny);
    ck_assert_int_eq(b.status, INA_PROTO_ERR_NO_RESOURCES);
    ck_assert_uint_eq(sched.active(), 2);
    ck_assert_uint_eq(sched.share(), 4);
    ck_assert_uint_eq(sched.ahead(1, 8), 2); // 8 / (1 other + 2)
    ck_assert_uint_eq(sched.ahead(2, 8), 2);
    sched.on_call_done(1, 0, a.lease);
    Verdict a1 = sched.decide(req(1, 1));
    Verdict b1 = sched.decide(req(2, 1));
    ck_assert(a1.kind == Verdict::Kind::kGrant && b1.kind == Verdict::Kind::kGrant);
    ck_assert_uint_eq(a1.lease.size(), 4);
    ck_assert_uint_eq(b1.lease.size(), 4);
    // Overlapping calls of one tenant split its share; none goes below its
    // min_window.
    sched.on_call_done(2, 1, b1.lease);
    Verdict b2 = sched.decide(req(2, 2, 2));
    ck_assert_uint_eq(b2.lease.size(), 4);
    Verdict b3 = sched.decide(req(2, 3));
    ck_assert(b3.kind == Verdict::Kind::kDeny); // its share is held
    sched.on_call_done(2, 2, b2.lease);
    Verdict b4 = sched.decide(req(2, 4, 5)); // told 5, its share is 4
    ck_assert(b4.kind == Verdict::Kind::kDeny);
    // Tenant 2 goes idle: after the set time tenant 1's lease grows back.
    t += milliseconds(99);
    sched.on_call_done(1, 1, a1.lease);
    ck_assert_uint_eq(sched.active(), 2);
    t += milliseconds(1);
    ck_assert_uint_eq(sched.active(), 1);
    ck_assert_uint_eq(sched.ahead(1, 8), 4);
    Verdict a2 = sched.decide(req(1, 2));
    ck_assert_uint_eq(a2.lease.size(), 8);
    sched.on_call_done(1, 2, a2.lease);
    // A tenant whose last job is freed gives its share back at once.
    Verdict b5 = sched.decide(req(2, 5));
    ck_assert_uint_eq(b5.lease.size(), 4);
    sched.on_call_done(2, 5, b5.lease);
    sched.on_job_freed(2);
    ck_assert_uint_eq(sched.active(), 1);
    Verdict a3 = sched.decide(req(1, 3));
    ck_assert_uint_eq(a3.lease.size(), 8);
    sched.on_call_done(1, 3, a3.lease);
    ck_assert_uint_eq(pool.free_segs(), 8);
}
END_TEST

int main()
{
    return ina_test::run_suite("agent_sched", "policies",
                               {test_free_seg_grant_deny,
                                test_free_seg_abort_returns_busy_segs,
                                test_free_seg_in_the_aggregator,
                                test_exclusive_holds_until_idle_or_freed,
                                test_partition_shares});
}

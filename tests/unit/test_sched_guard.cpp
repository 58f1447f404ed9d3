// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Unit tests of the harm guard (switch_agent/sched/guard.h) around the
// policies it corrects, on a clock the test moves: a job's ledger from its
// members' words (CALL_TIME) and from the agent's own view; a harmed job
// served with its whole window, waiting for it while that beats the hosts
// and sent to them otherwise; a job alone never judged; calls a waiting
// policy (tdm) put off stay that policy's.
// Also the members' host costs (host_cost.h) and what they change in tdm's
// decisions, against the same trace without them.
#include <check.h>
#include "check_main.h"

#include <chrono>
#include <memory>
#include <vector>

#include "aggregator.h"
#include "sched/exclusive.h"
#include "sched/guard.h"
#include "sched/host_cost.h"
#include "sched/partition.h"
#include "sched/tdm.h"
#include "seg_pool.h"

using ina::agg::CallRequest;
using ina::agg::Clock;
using ina::agg::JobInfo;
using ina::agg::SegPool;
using ina::agg::Verdict;
using ina::sched::ExclusiveScheduler;
using ina::sched::GuardConfig;
using ina::sched::HarmGuard;
using ina::sched::HostCosts;
using ina::sched::PartitionScheduler;
using ina::sched::TdmConfig;
using ina::sched::TdmScheduler;

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// 1 MiB allreduces of 4 members; with 10 us per step and 1 ns per byte the
// hosts take 2 * 3/4 * 1 MiB * 1 ns + 6 * 10 us = 1.63 ms.
constexpr double kHostSecs = 1.5 * (1 << 20) * 1e-9 + 60e-6;

GuardConfig guard_config()
{
    GuardConfig cfg;
    cfg.host.alpha = 10e-6;
    cfg.host.beta = 1e-9;
    return cfg;
}

CallRequest req(uint32_t jid, uint64_t mid, uint32_t asked)
{
    CallRequest r{jid, mid, 8, 1 << 18, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, 4, asked};
    r.tenant = jid;
    return r;
}

// Jobs of tenants 1 and 2 (jids alike), their hosts measured at the model's
// cost (no probe).
void two_jobs(HarmGuard &guard)
{
    for (uint32_t jid : {1u, 2u}) {
        guard.on_job_created(JobInfo{jid, 4, 4, 8, jid});
        guard.on_host_cost(jid, INA_COLL_ALLREDUCE, 1 << 20, kHostSecs);
    }
}

bool granted(const Verdict &v, size_t segs)
{
    return v.kind == Verdict::Kind::kGrant && v.lease.size() == segs;
}

// An 8-Seg pool, a clock the test moves, and a guard in front of a policy
// made on them (policy<P>: P with a 100 ms idle limit).
struct Rig {
    using Now = HarmGuard::Now;
    using Make = std::unique_ptr<ina::agg::Scheduler> (*)(SegPool &, const Now &);
    explicit Rig(Make make, const GuardConfig &cfg = guard_config())
        : guard(pool, make(pool, clock), cfg, clock)
    {
    }
    SegPool pool{8, 64};
    Clock::time_point now{};
    Now clock = [this] { return now; };
    HarmGuard guard;
};

template <typename P>
std::unique_ptr<ina::agg::Scheduler> policy(SegPool &pool, const Rig::Now &clock)
{
    return std::make_unique<P>(pool, milliseconds(100), clock);
}

} // namespace

Clock::duration secs(double s)
{
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// Exclusive, tenant 1 holding the agent; tenant 2's members tell what its
// calls took (CALL_TIME). Its denied call took its host cost and the wait
// for the verdict: no gain, so it is harmed, and its next call waits for
// the pool (the holder's call has 0.34 ms left, its own hold 0.84 ms: less
// than the hosts' 1.63 ms), nobody passes it, and it is served with its
// whole window. Served faster than the hosts, it has gained: back to the
// policy, which denies it again. Every lease comes back.
START_TEST(test_guard_ledger)
{
    Rig rig(policy<ExclusiveScheduler>);
    SegPool &pool = rig.pool;
    Clock::time_point &now = rig.now;
    HarmGuard &guard = rig.guard;
    two_jobs(guard);
    Verdict a = guard.decide(req(1, 0, 0));
    ck_assert(granted(a, 8));
    now += microseconds(500);
    ck_assert_int_eq(guard.decide(req(2, 0, 0)).status, INA_PROTO_ERR_BUSY);
    guard.on_host_cost(2, INA_COLL_ALLREDUCE, 1 << 20, kHostSecs);
    guard.on_call_time(2, INA_COLL_ALLREDUCE, 1 << 20, kHostSecs + 50e-6);
    ck_assert(guard.harmed(2));
    ck_assert(guard.ledger(2) > 49e-6 && guard.ledger(2) < 51e-6);
    // What the operator sees (ina-switchctl jobs): one judged call, its time
    // and its host cost as told; one job harmed, the holder not judged.
    std::optional<HarmGuard::JobView> v = guard.view(2);
    ck_assert(v && v->calls == 1 && v->harmed && v->took == kHostSecs + 50e-6);
    ck_assert(v->host > kHostSecs * 0.99 && v->host < kHostSecs * 1.01);
    v = guard.view(1);
    ck_assert(v && v->calls == 0 && !v->harmed);
    ck_assert(!guard.view(3));
    ck_assert_uint_eq(guard.harmed_jobs(), 1);
    ck_assert_uint_eq(guard.ahead(2, 8), 1);
    // Its next call waits for the pool; the holder's next does not pass it.
    ck_assert(guard.decide(req(2, 1, 0)).kind == Verdict::Kind::kDefer);
    now += microseconds(200);
    ck_assert(guard.decide(req(2, 1, 1)).kind == Verdict::Kind::kDefer);
    guard.on_call_done(1, 0, a.lease);
    ck_assert_int_eq(guard.decide(req(1, 1, 0)).status, INA_PROTO_ERR_BUSY);
    Verdict b = guard.decide(req(2, 1, 2));
    ck_assert(granted(b, 8));
    ck_assert_uint_eq(guard.served(), 1);
    now += microseconds(900);
    guard.on_call_done(2, 1, b.lease);
    guard.on_call_time(2, INA_COLL_ALLREDUCE, 1 << 20, 1.1e-3);
    ck_assert(!guard.harmed(2)); // 0.53 ms gained less 0.05 lost
    ck_assert_uint_eq(guard.harmed_jobs(), 0);
    ck_assert_uint_eq(guard.view(2)->calls, 2);
    // Back to the policy: tenant 1 still holds exclusive, tenant 2 is
    // denied again; a gain of 0.48 ms covers the verdict's waits of a while.
    Verdict c = guard.decide(req(1, 2, 0));
    ck_assert(granted(c, 8));
    ck_assert_int_eq(guard.decide(req(2, 2, 0)).status, INA_PROTO_ERR_BUSY);
    guard.on_host_cost(2, INA_COLL_ALLREDUCE, 1 << 20, kHostSecs);
    guard.on_call_time(2, INA_COLL_ALLREDUCE, 1 << 20, kHostSecs + 50e-6);
    ck_assert(!guard.harmed(2));
    guard.on_call_done(1, 2, c.lease);
    ck_assert_uint_eq(pool.free_segs(), 8);
    ck_assert_uint_eq(guard.sent_to_hosts(), 0);
}
END_TEST

// One tenant alone is neither harmed nor judged, however slow its calls:
// only sharing is the guard's business. A second tenant's job makes the
// same words count.
START_TEST(test_guard_alone)
{
    Rig rig(policy<PartitionScheduler>);
    SegPool &pool = rig.pool;
    HarmGuard &guard = rig.guard;
    guard.on_job_created(JobInfo{1, 4, 4, 8, 1});
    guard.on_call_time(1, INA_COLL_ALLREDUCE, 1 << 20, 10 * kHostSecs);
    ck_assert(!guard.harmed(1));
    ck_assert(guard.ledger(1) == 0);
    guard.on_job_created(JobInfo{2, 4, 4, 8, 2});
    guard.on_call_time(1, INA_COLL_ALLREDUCE, 1 << 20, 10 * kHostSecs);
    ck_assert(guard.harmed(1));
    guard.on_job_freed(2);
    ck_assert(guard.harmed(1)); // (what it lost stays lost)
    Verdict a = guard.decide(req(1, 0, 0));
    ck_assert(granted(a, 8)); // the pool is free, the model's hold 0.84 ms
    guard.on_call_done(1, 0, a.lease);
    ck_assert_uint_eq(pool.free_segs(), 8);
}
END_TEST

// A job with no measure of the hosts near a call's size, sharing the
// agent, sends its first such call there to be measured, once per size
// class; alone it is not probed.
START_TEST(test_guard_probe)
{
    Rig rig(policy<PartitionScheduler>);
    SegPool &pool = rig.pool;
    HarmGuard &guard = rig.guard;
    guard.on_job_created(JobInfo{1, 4, 4, 8, 1});
    Verdict a = guard.decide(req(1, 0, 0));
    ck_assert(granted(a, 8)); // alone
    guard.on_call_done(1, 0, a.lease);
    guard.on_job_created(JobInfo{2, 4, 4, 8, 2});
    ck_assert_int_eq(guard.decide(req(1, 1, 0)).status, INA_PROTO_ERR_BUSY);
    ck_assert_uint_eq(guard.probes(), 1);
    a = guard.decide(req(1, 2, 0)); // (probed: the model until the measure comes)
    ck_assert(a.kind == Verdict::Kind::kGrant);
    guard.on_call_done(1, 2, a.lease);
    CallRequest small = req(1, 3, 0);
    small.total = 1024; // 4 KiB: below min_bytes, never probed
    a = guard.decide(small);
    ck_assert(a.kind == Verdict::Kind::kGrant);
    guard.on_call_done(1, 3, a.lease);
    CallRequest big = req(1, 4, 0);
    big.total = 16 << 20; // 64 MiB: out of the 1 MiB class's reach
    ck_assert_int_eq(guard.decide(big).status, INA_PROTO_ERR_BUSY);
    ck_assert_uint_eq(guard.probes(), 2);
    guard.on_host_cost(1, INA_COLL_ALLREDUCE, 64 << 20, 0.1);
    big.mid = 5;
    a = guard.decide(big);
    ck_assert(a.kind == Verdict::Kind::kGrant);
    guard.on_call_done(1, 5, a.lease);
    ck_assert_uint_eq(guard.probes(), 2);
    ck_assert_uint_eq(pool.free_segs(), 8);
}
END_TEST

// Without a configured model, a call is judged only by the job's own
// measure of the hosts near its size: the model over the agent's rate
// would judge the agent by itself.
START_TEST(test_guard_unknown_cost)
{
    GuardConfig cfg; // (beta 0: the agent's rate)
    Rig rig(policy<PartitionScheduler>, cfg);
    HarmGuard &guard = rig.guard;
    guard.on_job_created(JobInfo{1, 4, 4, 8, 1});
    guard.on_job_created(JobInfo{2, 4, 4, 8, 2});
    guard.on_call_time(1, INA_COLL_ALLREDUCE, 1 << 20, 1.0);
    ck_assert(!guard.harmed(1));
    ck_assert(guard.ledger(1) == 0);
    guard.on_host_cost(1, INA_COLL_ALLREDUCE, 1 << 20, 0.01);
    guard.on_call_time(1, INA_COLL_ALLREDUCE, 1 << 20, 0.0105);
    ck_assert(guard.harmed(1));
    ck_assert(guard.ledger(1) > 0.00049 && guard.ledger(1) < 0.00051);
    guard.on_call_time(1, INA_COLL_ALLREDUCE, 64 << 20, 1.0); // no measure near it
    ck_assert(guard.ledger(1) < 0.00051);
}
END_TEST

// Partition: two tenants' calls get half the pool each, and tenant 2's run
// 3 ms, slower than the hosts' 1.63 ms; its members say nothing (an older
// client), so the agent's own view judges it: harmed, its next call has its
// whole window. Then both whole-window calls run 2.5 ms: even the whole
// pool is slower than the hosts, so tenant 2's calls go to them.
START_TEST(test_guard_seen_slow)
{
    Rig rig(policy<PartitionScheduler>);
    SegPool &pool = rig.pool;
    Clock::time_point &now = rig.now;
    HarmGuard &guard = rig.guard;
    guard.on_job_created(JobInfo{1, 4, 4, 8, 1});
    Verdict alone = guard.decide(req(1, 9, 0)); // (alone: not judged)
    ck_assert(granted(alone, 8));
    guard.on_call_done(1, 9, alone.lease);
    guard.on_job_created(JobInfo{2, 4, 4, 8, 2});
    guard.on_host_cost(1, INA_COLL_ALLREDUCE, 1 << 20, kHostSecs);
    guard.on_host_cost(2, INA_COLL_ALLREDUCE, 1 << 20, kHostSecs);
    Verdict b = guard.decide(req(2, 0, 0));
    Verdict a = guard.decide(req(1, 0, 0));
    ck_assert(granted(a, 4));
    ck_assert(granted(b, 4));
    now += microseconds(1000);
    guard.on_call_done(1, 0, a.lease); // 1 ms: faster than the hosts
    now += microseconds(2000);
    guard.on_call_done(2, 0, b.lease); // 3 ms: slower
    ck_assert(!guard.harmed(1));
    ck_assert(guard.harmed(2));
    ck_assert(guard.ledger(2) > 1.3e-3 && guard.ledger(2) < 1.4e-3);
    Verdict c = guard.decide(req(2, 1, 0));
    ck_assert(granted(c, 8));
    ck_assert_uint_eq(guard.served(), 1);
    ck_assert_int_eq(guard.decide(req(1, 1, 0)).status, INA_PROTO_ERR_NO_RESOURCES);
    now += microseconds(2500);
    guard.on_call_done(2, 1, c.lease); // the whole pool: 2.5 ms
    ck_assert(guard.harmed(2));
    ck_assert_int_eq(guard.decide(req(2, 2, 0)).status, INA_PROTO_ERR_BUSY);
    ck_assert_uint_eq(guard.sent_to_hosts(), 1);
    ck_assert(guard.ledger(2) > 2.2e-3 && guard.ledger(2) < 2.3e-3); // (a denial at once)
    ck_assert_uint_eq(pool.free_segs(), 8);
}
END_TEST

// A harmed call waits only while waiting can still beat the hosts: with
// the holder's call predicted to run long, it goes to them at once; a call
// that waits (the prediction short) goes there once its wait and hold
// would have outlasted the hosts (the holder stalls).
START_TEST(test_guard_give_up)
{
    Rig rig(policy<ExclusiveScheduler>);
    SegPool &pool = rig.pool;
    Clock::time_point &now = rig.now;
    HarmGuard &guard = rig.guard;
    two_jobs(guard);
    CallRequest big = req(1, 0, 0);
    big.total = 1 << 20; // 4 MiB: 3.4 ms predicted
    Verdict a = guard.decide(big);
    ck_assert(granted(a, 8));
    ck_assert_int_eq(guard.decide(req(2, 0, 0)).status, INA_PROTO_ERR_BUSY);
    ck_assert(guard.harmed(2)); // (the agent's view: a denial at once, no gain)
    ck_assert_int_eq(guard.decide(req(2, 1, 0)).status, INA_PROTO_ERR_BUSY);
    ck_assert_uint_eq(guard.sent_to_hosts(), 1);
    now += microseconds(3000);
    // 0.4 ms left of the holder's: it waits, for at most 1.63 - 0.84 ms.
    ck_assert(guard.decide(req(2, 2, 0)).kind == Verdict::Kind::kDefer);
    now += microseconds(700);
    ck_assert(guard.decide(req(2, 2, 1)).kind == Verdict::Kind::kDefer);
    now += microseconds(200);
    ck_assert_int_eq(guard.decide(req(2, 2, 2)).status, INA_PROTO_ERR_BUSY);
    ck_assert_uint_eq(guard.sent_to_hosts(), 2);
    guard.on_call_done(1, 0, a.lease);
    ck_assert_uint_eq(pool.free_segs(), 8);
    ck_assert_uint_eq(guard.served(), 0);
}
END_TEST

// A call tdm (waiting) put off stays tdm's: asked again, it goes to tdm,
// which grants it once the holder's call ends; its lease goes back to tdm.
START_TEST(test_guard_policy_defers)
{
    SegPool pool(8, 64);
    Clock::time_point now{};
    auto clock = [&now] { return now; };
    TdmConfig tdm;
    tdm.host.alpha = 10e-6;
    tdm.host.beta = 1e-9;
    tdm.wait = true;
    tdm.host_hints = false; // (no probe to the hosts: job 2 waits)
    HarmGuard guard(pool, std::make_unique<TdmScheduler>(pool, tdm, clock), guard_config(), clock);
    two_jobs(guard);
    Verdict a = guard.decide(req(1, 0, 0));
    ck_assert(granted(a, 8));
    now += microseconds(500);
    ck_assert(guard.decide(req(2, 0, 0)).kind == Verdict::Kind::kDefer);
    ck_assert(!guard.harmed(2));
    now += microseconds(300);
    guard.on_call_done(1, 0, a.lease);
    Verdict b = guard.decide(req(2, 0, 1));
    ck_assert(granted(b, 8));
    ck_assert_uint_eq(guard.served(), 0);
    guard.on_call_done(2, 0, b.lease);
    ck_assert_uint_eq(pool.free_segs(), 8);
}
END_TEST

// The members' measures: by size class, scaled by bytes, the nearest class
// within reach, never further than kTrust from the model.
START_TEST(test_host_costs)
{
    HostCosts h;
    ck_assert(h.measured(INA_COLL_ALLREDUCE, 1 << 20) < 0);
    ck_assert(h.cost(INA_COLL_ALLREDUCE, 1 << 20, 0.002) == 0.002);
    h.add(INA_COLL_ALLREDUCE, 1 << 20, 0.01);
    ck_assert(h.measured(INA_COLL_ALLREDUCE, 1 << 20) == 0.01);
    ck_assert(h.measured(INA_COLL_ALLREDUCE, 2 << 20) == 0.02); // the next class, scaled
    ck_assert(h.measured(INA_COLL_ALLREDUCE, 8 << 20) == 0.08); // three classes away
    ck_assert(h.measured(INA_COLL_ALLREDUCE, 16 << 20) < 0);    // four: out of reach
    ck_assert(h.measured(INA_COLL_BCAST, 1 << 20) < 0);         // another collective
    ck_assert(h.cost(INA_COLL_ALLREDUCE, 1 << 20, 0.002) == 0.01);
    ck_assert(h.cost(INA_COLL_ALLREDUCE, 1 << 20, 0.0001) == 0.0001 * HostCosts::kTrust);
    // A probe: once per class without a measure near it.
    ck_assert(!h.probe(INA_COLL_ALLREDUCE, 2 << 20)); // measured near enough
    ck_assert(h.probe(INA_COLL_ALLREDUCE, 64 << 20));
    ck_assert(!h.probe(INA_COLL_ALLREDUCE, 64 << 20)); // asked already
    ck_assert(h.measured(INA_COLL_ALLREDUCE, 64 << 20) < 0);
    ck_assert(h.measured(INA_COLL_ALLREDUCE, 1 << 20) == 0.01); // (the probe is no measure)
    // Nonsense is not kept.
    h.add(INA_COLL_BCAST, 1 << 20, -1);
    h.add(INA_COLL_BCAST, 1 << 20, 0);
    ck_assert(h.measured(INA_COLL_BCAST, 1 << 20) < 0);
}
END_TEST

// tdm with waiting, the same trace with and without the members' measures:
// job 2's call finds job 1's holding the pool, 0.35 ms left of it; its own
// hold is 0.85 ms. By the model the hosts take 1.63 ms: it waits. Its
// members measured 0.5 ms on the hosts: with them it goes there at once.
// Job 3, never measured, sends its first call of that size to the hosts to
// be measured (with the measures on), and waits with the next as the model
// says.
START_TEST(test_tdm_host_hints)
{
    for (bool hints : {false, true}) {
        SegPool pool(8, 64);
        Clock::time_point now{};
        TdmConfig cfg;
        cfg.host.alpha = 10e-6;
        cfg.host.beta = 1e-9;
        cfg.wait = true;
        cfg.wait_after_denied = 2;
        cfg.host_hints = hints;
        TdmScheduler sched(pool, cfg, [&now] { return now; });
        sched.on_job_created(JobInfo{2, 4, 4, 8, 2});
        sched.on_host_cost(2, INA_COLL_ALLREDUCE, 1 << 20, 0.0005);
        ck_assert(sched.host_cost(2, INA_COLL_ALLREDUCE, 1 << 20) == (hints ? 0.0005 : kHostSecs));
        Verdict a = sched.decide(req(1, 0, 0));
        ck_assert(granted(a, 8));
        now += microseconds(500);
        Verdict b = sched.decide(req(2, 0, 0));
        std::vector<uint32_t> none;
        if (hints) {
            ck_assert_int_eq(b.status, INA_PROTO_ERR_BUSY);
        } else {
            ck_assert(b.kind == Verdict::Kind::kDefer);
            sched.on_call_done(2, 0, none);
        }
        Verdict c = sched.decide(req(3, 0, 0));
        if (hints) {
            ck_assert_int_eq(c.status, INA_PROTO_ERR_BUSY); // to be measured
            c = sched.decide(req(3, 1, 0));
        }
        ck_assert(c.kind == Verdict::Kind::kDefer);
        sched.on_call_done(3, hints ? 1 : 0, none);
        sched.on_call_done(1, 0, a.lease);
        ck_assert_uint_eq(pool.free_segs(), 8);
    }
}
END_TEST

int main()
{
    return ina_test::run_suite("sched_guard", "guard",
                               {test_guard_ledger, test_guard_alone, test_guard_probe,
                                test_guard_unknown_cost, test_guard_seen_slow, test_guard_give_up,
                                test_guard_policy_defers, test_host_costs, test_tdm_host_hints});
}

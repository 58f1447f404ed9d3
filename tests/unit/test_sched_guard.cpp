// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Unit tests of the harm guard (switch_agent/sched/guard.h) around the
// policies it corrects, on a clock the test moves: a tenant exclusive denies
// twice gets its next call served when the holder's call ends, and nobody
// passes it meanwhile; a job whose partition share ran slower than the hosts
// twice gets its whole window; a harmed call that waits past its limit goes
// to the hosts; calls a waiting policy (tdm) put off stay that policy's.
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

bool granted(const Verdict &v, size_t segs)
{
    return v.kind == Verdict::Kind::kGrant && v.lease.size() == segs;
}

} // namespace

// Exclusive: tenant 1 holds the agent; tenant 2, denied twice, waits with
// its third call, which nobody passes, and is served with its whole window
// when 1's call ends. Tenant 1, then short of the pool twice, gets its turn
// too. Every lease comes back, and exclusive's own accounting still holds.
START_TEST(test_guard_exclusive)
{
    SegPool pool(8, 64);
    Clock::time_point now{};
    auto clock = [&now] { return now; };
    HarmGuard guard(pool, std::make_unique<ExclusiveScheduler>(pool, milliseconds(100), clock),
                    guard_config(), clock);
    guard.on_job_created(JobInfo{1, 4, 4, 8, 1});
    guard.on_job_created(JobInfo{2, 4, 4, 8, 2});
    Verdict a = guard.decide(req(1, 0, 0));
    ck_assert(granted(a, 8));
    ck_assert_int_eq(guard.decide(req(2, 0, 0)).status, INA_PROTO_ERR_BUSY);
    ck_assert(!guard.harmed(2));
    ck_assert_int_eq(guard.decide(req(2, 1, 0)).status, INA_PROTO_ERR_BUSY);
    ck_assert(guard.harmed(2));
    ck_assert_uint_eq(guard.ahead(2, 8), 1);
    // Its third call waits for the pool.
    ck_assert(guard.decide(req(2, 2, 0)).kind == Verdict::Kind::kDefer);
    now += milliseconds(1);
    ck_assert(guard.decide(req(2, 2, 1)).kind == Verdict::Kind::kDefer);
    guard.on_call_done(1, 0, a.lease);
    // The holder's next call does not pass it.
    ck_assert_int_eq(guard.decide(req(1, 1, 0)).status, INA_PROTO_ERR_BUSY);
    Verdict b = guard.decide(req(2, 2, 2));
    ck_assert(granted(b, 8));
    ck_assert_uint_eq(guard.served(), 1);
    ck_assert(!guard.harmed(2));
    // Exclusive still holds for tenant 1, but the pool is out: denied.
    ck_assert_int_eq(guard.decide(req(1, 2, 0)).status, INA_PROTO_ERR_NO_RESOURCES);
    ck_assert(guard.harmed(1));
    now += milliseconds(1);
    guard.on_call_done(2, 2, b.lease);
    ck_assert_uint_eq(pool.free_segs(), 8);
    Verdict c = guard.decide(req(1, 3, 0));
    ck_assert(granted(c, 8));
    ck_assert_uint_eq(guard.served(), 2);
    guard.on_call_done(1, 3, c.lease);
    // Back to the policy: tenant 1 holds, tenant 2 is denied again.
    Verdict d = guard.decide(req(1, 4, 0));
    ck_assert(granted(d, 8));
    ck_assert_int_eq(guard.decide(req(2, 3, 0)).status, INA_PROTO_ERR_BUSY);
    guard.on_call_done(1, 4, d.lease);
    ck_assert_uint_eq(pool.free_segs(), 8);
}
END_TEST

// Partition: two tenants' calls get half the pool each, and tenant 2's run
// 3 ms, slower than the hosts' 1.63 ms (x 1.25). After two such calls its
// next one has its whole window; then the policy's shares again.
START_TEST(test_guard_partition_slow)
{
    SegPool pool(8, 64);
    Clock::time_point now{};
    auto clock = [&now] { return now; };
    HarmGuard guard(pool, std::make_unique<PartitionScheduler>(pool, milliseconds(100), clock),
                    guard_config(), clock);
    guard.on_job_created(JobInfo{1, 4, 4, 8, 1});
    guard.on_job_created(JobInfo{2, 4, 4, 8, 2});
    // Tenant 1 alone has the whole window; tenant 2 comes while it holds it.
    Verdict first = guard.decide(req(1, 0, 0));
    ck_assert(granted(first, 8));
    ck_assert_int_eq(guard.decide(req(2, 0, 0)).status, INA_PROTO_ERR_NO_RESOURCES);
    guard.on_call_done(1, 0, first.lease);
    for (uint64_t mid = 1; mid < 3; ++mid) {
        Verdict a = guard.decide(req(1, mid, 0));
        Verdict b = guard.decide(req(2, mid, 0));
        ck_assert(a.kind == Verdict::Kind::kGrant);
        ck_assert(granted(b, 4));
        now += microseconds(1000);
        guard.on_call_done(1, mid, a.lease); // 1 ms: faster than the hosts
        now += microseconds(2000);
        guard.on_call_done(2, mid, b.lease); // 3 ms: slower
    }
    ck_assert(!guard.harmed(1));
    ck_assert(guard.harmed(2));
    Verdict b = guard.decide(req(2, 3, 0));
    ck_assert(granted(b, 8));
    ck_assert_uint_eq(guard.served(), 1);
    // Its own fast call says nothing of the policy's shares; tenant 1 finds
    // the pool out meanwhile.
    ck_assert_int_eq(guard.decide(req(1, 3, 0)).status, INA_PROTO_ERR_NO_RESOURCES);
    now += microseconds(500);
    guard.on_call_done(2, 3, b.lease);
    ck_assert(!guard.harmed(2));
    Verdict a = guard.decide(req(1, 4, 0));
    ck_assert(a.kind == Verdict::Kind::kGrant);
    guard.on_call_done(1, 4, a.lease);
    ck_assert_uint_eq(pool.free_segs(), 8);
}
END_TEST

// A harmed call whose wait outlasts wait_limit times its cost on the hosts
// (the holder stalls) goes there after all.
START_TEST(test_guard_wait_limit)
{
    SegPool pool(8, 64);
    Clock::time_point now{};
    auto clock = [&now] { return now; };
    HarmGuard guard(pool, std::make_unique<ExclusiveScheduler>(pool, milliseconds(100), clock),
                    guard_config(), clock);
    Verdict a = guard.decide(req(1, 0, 0));
    ck_assert(granted(a, 8));
    guard.decide(req(2, 0, 0));
    guard.decide(req(2, 1, 0));
    ck_assert(guard.decide(req(2, 2, 0)).kind == Verdict::Kind::kDefer);
    now += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(3.9 * kHostSecs));
    ck_assert(guard.decide(req(2, 2, 1)).kind == Verdict::Kind::kDefer);
    now += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(0.2 * kHostSecs));
    ck_assert_int_eq(guard.decide(req(2, 2, 2)).status, INA_PROTO_ERR_BUSY);
    std::vector<uint32_t> none;
    guard.on_call_done(2, 2, none);
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
    HarmGuard guard(pool, std::make_unique<TdmScheduler>(pool, tdm, clock), guard_config(),
                    clock);
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
        ck_assert(sched.host_cost(2, INA_COLL_ALLREDUCE, 1 << 20) ==
                  (hints ? 0.0005 : kHostSecs));
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
                               {test_guard_exclusive, test_guard_partition_slow,
                                test_guard_wait_limit, test_guard_policy_defers, test_host_costs,
                                test_tdm_host_hints});
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The aggregation core against hostile and greedy clients:
// - a job's capability: an opener without it (another capability, or none)
//   is refused FORBIDDEN and learns nothing of the job, which goes on
//   exactly as if nobody had tried; an endpoint speaks for no other rank;
// - the limits (AggregatorConfig::Limits): jobs per connection, members per
//   job, Segs a job holds, bytes kept per connection, each refused LIMIT
//   (or, for Segs, waited for) and counted; nothing leaks.
#include <check.h>

#include <cstdint>
#include <random>
#include <vector>

#include "aggregation_fakes.h"
#include "aggregator.h"
#include "check_main.h"
#include "ina_proto.h"

using namespace agg_test;

namespace {

// A refusal says nothing of the job: no JID, no window, no `ahead`.
void expect_refused(const Event &e, ina_proto_status_t st)
{
    ck_assert_int_eq(e.status, st);
    ck_assert_uint_eq(e.jid, 0);
    ck_assert_uint_eq(e.window, 0);
    ck_assert_uint_eq(e.ahead, 0);
}

// One exact allreduce of `total` int32 on job `jid` of `members`.
void run_exact_call(Rig &rig, Members &m, uint32_t jid, uint64_t mid, uint32_t window,
                    uint32_t seed)
{
    const uint32_t n = static_cast<uint32_t>(m.owned.size()), block_elems = 4;
    const uint64_t total = 24;
    auto data = int_data(n, total, seed);
    CallSim sim(rig, m.ptrs(), jid, mid, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                block_elems, total, data, std::vector<bool>(n, true));
    std::mt19937 rng(seed);
    sim.run(rng);
    ck_assert(sim.complete());
    for (uint32_t r = 0; r < n; ++r) {
        ck_assert(sim.result(r) == bytes_of(int_sum(data, total)));
    }
    rig.sink.events.clear();
}

} // namespace

// Openers without the job's capability, a thousand guesses of it, and an
// endpoint posing as a member: all refused, counted, and the job's call is
// exact.
START_TEST(test_capability)
{
    Rig rig;
    Members a(2);
    Member stranger;
    const uint32_t tag = 0x6a0b;
    const JobCap cap = test_cap(0x11);
    const Event first = open_job(rig.agg, rig.sink, a[0], tag, {0, 1}, 4, 0, 0, 0, 0, cap);
    ck_assert_int_eq(first.status, INA_PROTO_OK);
    const uint32_t jid = first.jid;

    // Guessed capabilities, as any rank, before the last member opened.
    std::mt19937_64 rng(12);
    const uint32_t guesses = 1000;
    for (uint32_t i = 0; i < guesses; ++i) {
        JobCap guess;
        for (auto &b : guess) {
            b = static_cast<uint8_t>(rng());
        }
        expect_refused(open_job(rig.agg, rig.sink, stranger, tag, {0, 1}, 4,
                                static_cast<uint32_t>(rng() % 2), 0, 0, 0, guess),
                       INA_PROTO_ERR_FORBIDDEN);
    }
    // No capability at all: refused even for a key nobody opened, and no
    // job is created for it.
    const size_t jobs = rig.agg.live_jobs();
    expect_refused(open_job(rig.agg, rig.sink, stranger, tag + 1, {0}, 4, 0, 0, 0, 0, JobCap{}),
                   INA_PROTO_ERR_FORBIDDEN);
    expect_refused(open_job(rig.agg, rig.sink, stranger, tag, {0, 1}, 4, 1, 0, 0, 0, JobCap{}),
                   INA_PROTO_ERR_FORBIDDEN);
    ck_assert_uint_eq(rig.agg.live_jobs(), jobs);
    ck_assert_uint_eq(rig.agg.counters().forbidden_opens, guesses + 2);
    ck_assert_uint_eq(rig.agg.counters().rejected[INA_PROTO_ERR_FORBIDDEN], guesses + 2);

    // The member opens with the right one; its rank was never taken.
    const Event second = open_job(rig.agg, rig.sink, a[1], tag, {0, 1}, 4, 1, 0, 0, 0, cap);
    ck_assert_int_eq(second.status, INA_PROTO_OK);
    ck_assert_uint_eq(second.jid, jid);
    rig.sink.events.clear();

    // The stranger posing as rank 0 of the job: NOT_MEMBER, no call record.
    ina_proto_hdr_t h = block_hdr(jid, 0, 0, 0, 4, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                                  0, 4, 4, 24, true);
    const std::vector<int32_t> junk(4, 7);
    rig.agg.block(stranger, h, junk.data());
    ck_assert_uint_eq(rig.sink.events.size(), 1);
    ck_assert_int_eq(rig.sink.events.back().status, INA_PROTO_ERR_NOT_MEMBER);
    ck_assert_ptr_eq(rig.sink.events.back().to, &stranger);
    ck_assert_uint_eq(rig.agg.counters().foreign, 1);
    ck_assert(rig.sched->asked.empty());
    rig.sink.events.clear();

    run_exact_call(rig, a, jid, 0, 4, 3);
    expect_pool_whole(rig);
}
END_TEST

// --max-jobs-per-conn: a member in as many jobs as allowed is refused a
// new one (LIMIT), may still open one of its own jobs again, and may open a
// new one once it left another.
START_TEST(test_limit_jobs_per_member)
{
    AggregatorConfig cfg = small_config();
    cfg.limits.jobs_per_member = 2;
    Rig rig(cfg);
    Member m;
    const Event x = open_job(rig.agg, rig.sink, m, 0x100, {0}, 4, 0);
    const Event y = open_job(rig.agg, rig.sink, m, 0x101, {0}, 4, 0);
    ck_assert_int_eq(x.status, INA_PROTO_OK);
    ck_assert_int_eq(y.status, INA_PROTO_OK);
    expect_refused(open_job(rig.agg, rig.sink, m, 0x102, {0}, 4, 0), INA_PROTO_ERR_LIMIT);
    ck_assert_uint_eq(rig.agg.live_jobs(), 2);
    const Event again = open_job(rig.agg, rig.sink, m, 0x100, {0}, 4, 0);
    ck_assert_int_eq(again.status, INA_PROTO_OK);
    ck_assert_uint_eq(again.jid, x.jid);
    leave(rig, m, x.jid, 0);
    const Event z = open_job(rig.agg, rig.sink, m, 0x102, {0}, 4, 0);
    ck_assert_int_eq(z.status, INA_PROTO_OK);
    ck_assert_uint_eq(rig.agg.counters().limit_refusals, 1);
    ck_assert_uint_eq(rig.agg.counters().rejected[INA_PROTO_ERR_LIMIT], 1);
}
END_TEST

// --max-members: a job of more members is refused at its first JOB_OPEN.
START_TEST(test_limit_members)
{
    AggregatorConfig cfg = small_config();
    cfg.limits.members = 3;
    Rig rig(cfg);
    Member m;
    expect_refused(open_job(rig.agg, rig.sink, m, 0x200, {0, 1, 2, 3}, 4, 0),
                   INA_PROTO_ERR_LIMIT);
    ck_assert_uint_eq(rig.agg.live_jobs(), 0);
    ck_assert_int_eq(open_job(rig.agg, rig.sink, m, 0x201, {0, 1, 2}, 4, 0).status,
                     INA_PROTO_OK);
}
END_TEST

// --max-job-segs: the job's window is capped by it, and a second call in
// flight waits until the first gives its Segs back (the pool has room for
// both), then completes exactly.
START_TEST(test_limit_job_segs)
{
    AggregatorConfig cfg = small_config(16);
    cfg.limits.job_segs = 4;
    Rig rig(cfg);
    Members m(2);
    Event e = open_job(rig.agg, rig.sink, m[0], 0x300, {0, 1}, 8, 0);
    ck_assert_int_eq(e.status, INA_PROTO_OK);
    ck_assert_uint_eq(e.window, 4);
    const uint32_t jid = e.jid;
    ck_assert_int_eq(open_job(rig.agg, rig.sink, m[1], 0x300, {0, 1}, 8, 1).status, INA_PROTO_OK);
    rig.sink.events.clear();

    const uint32_t window = 4, block_elems = 4;
    const uint64_t total = 32; // 8 blocks a call
    auto d0 = int_data(2, total, 5), d1 = int_data(2, total, 6);
    CallSim c0(rig, m.ptrs(), jid, 0, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
               block_elems, total, d0, {true, true});
    CallSim c1(rig, m.ptrs(), jid, 1, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
               block_elems, total, d1, {true, true});
    c0.send(0);
    ck_assert(c0.all_decided());
    ck_assert(c0.granted(0));
    c1.send(0);
    c1.send(1);
    ck_assert(c1.nobody_decided());
    ck_assert_uint_eq(rig.agg.deferred_calls(), 1);
    ck_assert_uint_eq(rig.agg.pool().free_segs(), 12); // room, but not the job's
    std::mt19937 rng(4);
    c0.run(rng);
    ck_assert(c0.complete());
    c1.drain();
    ck_assert(c1.all_decided());
    ck_assert(c1.granted(0));
    c1.run(rng);
    ck_assert(c1.complete());
    ck_assert(c0.result(1) == bytes_of(int_sum(d0, total)));
    ck_assert(c1.result(0) == bytes_of(int_sum(d1, total)));
    ck_assert(rig.sink.events.empty());
    expect_pool_whole(rig);
}
END_TEST

// --max-conn-keep-bytes: a connection whose blocks of deferred calls would
// exceed its allowance gets the call denied (LIMIT) on every member, though
// the agent as a whole has room; its allowance is whole again after.
START_TEST(test_limit_member_keep)
{
    const uint32_t n = 2, window = 4, block_elems = 64;
    const uint64_t total = 512;
    AggregatorConfig cfg = small_config();
    cfg.limits.member_keep_bytes = 2 * (block_elems * sizeof(int32_t) + sizeof(KeptBlock));
    Rig rig(cfg);
    Members m(n);
    const uint32_t jid = make_job(rig, m.ptrs(), {0, 1}, window);
    rig.sched->mode = TestScheduler::Mode::kDefer;
    auto data = int_data(n, total, 9);
    CallSim sim(rig, m.ptrs(), jid, 0, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                block_elems, total, data, {true, true});
    sim.send(0);
    sim.send(1);
    sim.send(1);
    ck_assert(sim.nobody_decided());
    sim.send(1); // rank 1's third kept block: over its allowance
    ck_assert(sim.all_decided());
    ck_assert(!sim.granted(0));
    ck_assert_int_eq(sim.deny_status(), INA_PROTO_ERR_LIMIT);
    ck_assert_uint_eq(rig.agg.kept_bytes(), 0);
    ck_assert_uint_eq(rig.agg.counters().limit_refusals, 1);
    rig.sink.events.clear();
    // The next call is kept again from zero: two blocks of each rank fit.
    CallSim next(rig, m.ptrs(), jid, 1, window, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32,
                 block_elems, total, data, {true, true});
    next.send(0);
    next.send(0);
    next.send(1);
    next.send(1);
    ck_assert(next.nobody_decided());
    ck_assert_uint_eq(rig.agg.counters().limit_refusals, 1);
    rig.sched->mode = TestScheduler::Mode::kFree;
    rig.agg.tick(Clock::now());
    next.drain();
    ck_assert(next.granted(0));
    std::mt19937 rng(2);
    next.run(rng);
    ck_assert(next.complete());
    ck_assert(next.result(0) == bytes_of(int_sum(data, total)));
    expect_pool_whole(rig);
}
END_TEST

int main()
{
    return ina_test::run_suite("guard", "guard",
                               {test_capability, test_limit_jobs_per_member, test_limit_members,
                                test_limit_job_segs, test_limit_member_keep},
                               60);
}

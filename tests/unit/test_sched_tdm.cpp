// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Unit tests of the time-division policy (switch_agent/sched/tdm.h) as pure
// logic: its estimator of a job's call pattern and the deadlines its indexes
// order jobs by (predictor.h), CalcScore and the host model (score.h), and
// the decisions tdm.h describes on arrival traces driven by a simulated
// clock: periodic jobs that fit side by side,
// a call that loses to a better predicted one, ageing that ends every
// losing streak, bursty jobs, a job changing its period, and the same trace
// giving the same decisions twice.
#include <check.h>
#include "check_main.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <random>
#include <tuple>
#include <vector>

#include "aggregator.h"
#include "aggregation_fakes.h"
#include "sched/predictor.h"
#include "sched/score.h"
#include "sched/tdm.h"
#include "seg_pool.h"

using ina::agg::CallRequest;
using ina::agg::Clock;
using ina::agg::JobInfo;
using ina::agg::SegPool;
using ina::agg::Verdict;
using ina::sched::calc_score;
using ina::sched::Contender;
using ina::sched::Estimate;
using ina::sched::host_time;
using ina::sched::TdmConfig;
using ina::sched::TdmScheduler;

namespace {

// Seconds to the scheduler's clock.
Clock::duration secs(double s)
{
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

constexpr double kBeta = 1e-9; // host links and agent: 1 ns per byte

TdmConfig test_config()
{
    TdmConfig cfg;
    cfg.host.alpha = 10e-6;
    cfg.host.beta = kBeta;
    cfg.ageing = 0.5;
    return cfg;
}

// A job of the simulated cluster: a loop of compute, then one allreduce of
// `bytes` that holds the agent bytes * kBeta when offloaded and takes the
// host model's time when denied.
struct SimJob {
    uint32_t jid;
    uint32_t members;
    double bytes;
    std::vector<double> compute; // compute before call i (cycled)
    double start = 0;            // first arrival
    size_t burst = 1;            // calls back to back per compute phase
};

struct Decision {
    double t;
    uint32_t jid;
    uint64_t mid;
    ina_proto_status_t status; // OK: granted
};

struct Trace {
    std::vector<Decision> decisions;
    std::vector<std::tuple<double, double, uint32_t>> held; // granted calls: [start, end), job
    std::map<uint32_t, int> granted;
    std::map<uint32_t, int> denied;
    std::map<std::pair<uint32_t, ina_proto_status_t>, int> reasons;
};

// Run the jobs against a fresh tdm scheduler until `horizon` seconds.
Trace simulate(const std::vector<SimJob> &jobs, double horizon, TdmConfig cfg = test_config())
{
    constexpr uint32_t kWindow = 8;
    SegPool pool(kWindow, 64); // one lease: the whole pool (the case tdm is for)
    Clock::time_point t0{};
    Clock::time_point now = t0;
    TdmScheduler sched(pool, cfg, [&now] { return now; });
    struct Ev {
        double t;
        uint64_t seq;
        size_t job;
        bool done;
        bool operator>(const Ev &o) const { return std::tie(t, seq) > std::tie(o.t, o.seq); }
    };
    std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> q;
    uint64_t seq = 0;
    std::vector<uint64_t> mid(jobs.size(), 0);
    std::vector<size_t> iter(jobs.size(), 0);
    std::vector<std::vector<uint32_t>> lease(jobs.size());
    std::vector<bool> granted(jobs.size(), false);
    for (size_t i = 0; i < jobs.size(); ++i) {
        sched.on_job_created({jobs[i].jid, jobs[i].members, jobs[i].members, kWindow});
        q.push({jobs[i].start, seq++, i, false});
    }
    Trace tr;
    while (!q.empty() && q.top().t < horizon) {
        const Ev e = q.top();
        q.pop();
        now = t0 + secs(e.t);
        const SimJob &j = jobs[e.job];
        if (!e.done) {
            const CallRequest req{j.jid, mid[e.job], kWindow, static_cast<uint64_t>(j.bytes / 4),
                                  INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, j.members, 0};
            Verdict v = sched.decide(req);
            ck_assert(v.kind != Verdict::Kind::kDefer); // tdm never defers
            tr.decisions.push_back({e.t, j.jid, mid[e.job], v.status});
            double took;
            if (v.kind == Verdict::Kind::kGrant) {
                ck_assert_uint_eq(v.lease.size(), kWindow);
                lease[e.job] = std::move(v.lease);
                granted[e.job] = true;
                took = j.bytes * kBeta;
                tr.held.emplace_back(e.t, e.t + took, j.jid);
                ++tr.granted[j.jid];
            } else {
                granted[e.job] = false;
                took = host_time(INA_COLL_ALLREDUCE, j.bytes, j.members, 10e-6, kBeta);
                ++tr.denied[j.jid];
                ++tr.reasons[{j.jid, v.status}];
            }
            q.push({e.t + took, seq++, e.job, true});
        } else {
            if (granted[e.job]) {
                sched.on_call_done(j.jid, mid[e.job], lease[e.job]);
            }
            ++mid[e.job];
            ++iter[e.job];
            const bool in_burst = iter[e.job] % j.burst != 0;
            const double c = in_burst ? 0 : j.compute[(iter[e.job] / j.burst) % j.compute.size()];
            q.push({e.t + c, seq++, e.job, false});
        }
    }
    // Whatever is still held goes back, so the pool is whole again.
    for (size_t i = 0; i < jobs.size(); ++i) {
        if (granted[i] && !lease[i].empty()) {
            sched.on_call_done(jobs[i].jid, mid[i], lease[i]);
        }
    }
    ck_assert_uint_eq(pool.free_segs(), kWindow);
    return tr;
}

// No two jobs' granted calls overlap in time (rule 1).
void assert_one_job_at_a_time(const Trace &tr)
{
    auto held = tr.held;
    std::sort(held.begin(), held.end());
    for (size_t i = 1; i < held.size(); ++i) {
        const auto &[s0, e0, j0] = held[i - 1];
        const auto &[s1, e1, j1] = held[i];
        if (j0 != j1) {
            ck_assert_msg(s1 >= e0, "job %u granted at %.6f while job %u held until %.6f", j1, s1,
                          j0, e0);
        }
    }
}

// The longest run of denials of one job.
int longest_denial_run(const Trace &tr, uint32_t jid)
{
    int run = 0;
    int longest = 0;
    for (const Decision &d : tr.decisions) {
        if (d.jid == jid) {
            run = d.status == INA_PROTO_OK ? 0 : run + 1;
            longest = std::max(longest, run);
        }
    }
    return longest;
}

} // namespace

// The estimator: converges on a steady quantity, ignores a lone outlier,
// restarts on a new phase after kPhase outliers in a row.
START_TEST(test_estimate_follows_phases)
{
    Estimate e;
    ck_assert_uint_eq(e.samples(), 0);
    for (int i = 0; i < 40; ++i) {
        e.add(i % 2 ? 10.5 : 9.5); // 10 +- 0.5
    }
    ck_assert(std::fabs(e.mean() - 10) < 0.2);
    ck_assert(e.dev() < 1.0);
    const double before = e.mean();
    e.add(100); // one stall
    ck_assert(e.mean() == before);
    e.add(10);
    ck_assert(std::fabs(e.mean() - 10) < 0.2);
    for (unsigned i = 0; i + 1 < Estimate::kPhase; ++i) {
        e.add(30); // a new phase, not yet believed
        ck_assert(std::fabs(e.mean() - 10) < 0.2);
    }
    e.add(30); // the kPhase-th in a row: restart from them
    ck_assert(e.mean() == 30);
    ck_assert(e.dev() == 0);
    for (int i = 0; i < 10; ++i) {
        e.add(31);
    }
    ck_assert(std::fabs(e.mean() - 31) < 0.5);
}
END_TEST

// The deadline form of "is a call of this job expected": for any instant,
// expected(now, quiet) == (now <= expected_until(quiet)), at the boundary
// too, where last + quiet and now - last round differently; in every state
// of the pattern (no call yet, too few to predict, predictable, after a
// phase change) and for any quiet (0, tiny, infinite, NaN).
START_TEST(test_expected_until_is_expected)
{
    std::mt19937_64 rng(11);
    const double inf = std::numeric_limits<double>::infinity();
    // Times as the scheduler makes them (nanoseconds of its clock as
    // seconds), and arbitrary doubles.
    auto instant = [&] {
        return rng() % 2 ? static_cast<double>(rng() % 20000000000) / 1e9
                         : std::ldexp(static_cast<double>(rng() % (1 << 30)),
                                      -static_cast<int>(rng() % 40));
    };
    auto check = [&](const ina::sched::CallPattern &p, double quiet, double probe) {
        const double e = p.expected_until(quiet);
        for (double x : {e, std::nextafter(e, inf), std::nextafter(e, -inf), probe,
                         std::nextafter(probe, inf), std::nextafter(probe, -inf)}) {
            if (std::isfinite(x)) {
                ck_assert_msg(p.expected(x, quiet) == (x <= e),
                              "expected(%a, %a) = %d, expected_until %a", x, quiet,
                              p.expected(x, quiet), e);
            }
        }
    };
    const double quiets[] = {
        0.0, 1e-9, 0.004, 0.05, 1.0, 1e-300, inf, -1.0, std::numeric_limits<double>::quiet_NaN()};
    for (int trial = 0; trial < 20000; ++trial) {
        ina::sched::CallPattern p;
        const double quiet = trial % 3 ? quiets[rng() % 9] : instant();
        check(p, quiet, instant()); // no call yet: never expected
        double t = instant();
        const unsigned calls = 1 + rng() % 8;
        const double period = instant();
        for (unsigned i = 0; i < calls; ++i) {
            p.arrived(t, 1024, INA_COLL_ALLREDUCE);
            // At the instant where each form's rounding could differ.
            check(p, quiet, t + quiet);
            check(p, quiet, p.next_arrival() + p.lateness());
            check(p, quiet, instant());
            t += i == 4 ? 40 * period : period; // and a phase change
        }
    }
}
END_TEST

// The bound an index by next arrival starts from: no next arrival below it
// plus a lateness up to the bound reaches now in double arithmetic, even
// where now - lateness cancels almost to nothing; and it is not far below.
START_TEST(test_earliest_expected_arrival)
{
    std::mt19937_64 rng(12);
    const double inf = std::numeric_limits<double>::infinity();
    auto value = [&] {
        switch (rng() % 5) {
        case 0:
            return static_cast<double>(rng() % 20000000000) / 1e9;
        case 1:
            return std::ldexp(static_cast<double>(rng() % (1 << 20)),
                              -static_cast<int>(rng() % 60));
        case 2:
            return static_cast<double>(rng() % 1000) * 1e-3;
        case 3:
            return 0.0;
        default:
            return std::ldexp(1.0, -static_cast<int>(rng() % 1075));
        }
    };
    for (int trial = 0; trial < 200000; ++trial) {
        const double now = value();
        double bound = value();
        if (trial % 3 == 0) {
            bound = now; // now - bound is 0
        } else if (trial % 3 == 1) {
            bound = std::nextafter(now, 0.0); // a unit in the last place apart
        }
        const double from = ina::sched::earliest_expected_arrival(now, bound);
        ck_assert(from <= now - bound);
        ck_assert(from >= (now - bound) - 1e-12 * (now + bound) - 1e-300);
        const double lateness[] = {bound, bound / 3, 0.0};
        double t = std::nextafter(from, -inf);
        for (int k = 0; k < 64; ++k, t = std::nextafter(t, -inf)) {
            for (double l : lateness) {
                ck_assert_msg(t + l < now, "now %a, lateness %a <= %a: %a + it reaches now", now, l,
                              bound, t);
            }
        }
    }
}
END_TEST

// The host model: ring allreduce moves 2(n-1)/n of the vector, one member
// costs nothing, latency counts per step.
START_TEST(test_host_model)
{
    ck_assert(std::fabs(host_time(INA_COLL_ALLREDUCE, 1e6, 4, 0, 1e-9) - 1.5e-3) < 1e-12);
    ck_assert(std::fabs(host_time(INA_COLL_ALLREDUCE, 0, 4, 1e-6, 1e-9) - 6e-6) < 1e-15);
    ck_assert(host_time(INA_COLL_ALLREDUCE, 1e6, 1, 1e-6, 1e-9) == 0);
    ck_assert(std::fabs(host_time(INA_COLL_ALLGATHER, 1e6, 4, 0, 1e-9) - 0.75e-3) < 1e-12);
    ck_assert(std::fabs(host_time(INA_COLL_BCAST, 1e6, 8, 1e-6, 1e-9) - (1e-3 + 3e-6)) < 1e-12);
    ck_assert(std::fabs(host_time(INA_COLL_BARRIER, 0, 8, 1e-6, 1e-9) - 3e-6) < 1e-15);
    // More members, more host time: offloading saves more.
    double prev = 0;
    for (uint32_t n = 2; n <= 64; n *= 2) {
        const double h = host_time(INA_COLL_ALLREDUCE, 1e6, n, 1e-6, 1e-9);
        ck_assert(h > prev);
        prev = h;
    }
}
END_TEST

// CalcScore: monotone in the saving at a fixed hold; each denial adds the
// ageing term; the order breaks ties by denials, then the present call,
// then the JID; pure (the same inputs, the same result).
START_TEST(test_calc_score_properties)
{
    const double ina = 1e-3;
    double prev = -1e9;
    for (double host = 0; host <= 10e-3; host += 0.25e-3) {
        const double s = calc_score(host, ina, 0, 0.5);
        ck_assert(s > prev);
        prev = s;
        ck_assert(s == calc_score(host, ina, 0, 0.5)); // deterministic
        for (uint32_t d = 0; d < 5; ++d) {
            ck_assert(std::fabs(calc_score(host, ina, d + 1, 0.5) -
                                (calc_score(host, ina, d, 0.5) + 0.5)) < 1e-9);
        }
    }
    // Saving per unit of hold: the same saving over a shorter hold scores higher.
    ck_assert(calc_score(2e-3, 1e-3, 0, 0.5) > calc_score(3e-3, 2e-3, 0, 0.5));
    // A zero hold does not divide by zero.
    ck_assert(std::isfinite(calc_score(1e-3, 0, 0, 0.5)));
    // Ties: more denials first, then the present call, then the lower JID.
    const Contender a{1, 1.0, 0, false};
    const Contender b{2, 1.0, 1, false};
    const Contender c{3, 1.0, 0, true};
    ck_assert(before(b, a) && !before(a, b));
    ck_assert(before(c, a) && !before(a, c));
    ck_assert(before(a, Contender{4, 1.0, 0, false}));
    ck_assert(!before(a, a));
    // No starvation: whatever the gap in score, a bounded number of
    // denials puts the loser first.
    for (double gap : {0.0, 0.3, 1.0, 7.5}) {
        const Contender winner{1, gap, 0, false};
        uint32_t d = 0;
        while (!before(Contender{2, calc_score(1e-3, 1e-3, d, 0.5), d, true}, winner)) {
            ++d;
        }
        ck_assert_uint_le(d, static_cast<uint32_t>(std::ceil(gap / 0.5)) + 1);
    }
}
END_TEST

// Rule 1 and 2 with no history: a call is granted while no other job's call
// holds the agent; another job's call that arrives meanwhile and does not
// fit beside it is denied BUSY; one that fits is granted (the pool is the
// resource); the same job's calls overlap (pool permitting).
START_TEST(test_tdm_busy_and_free)
{
    SegPool pool(8, 64);
    Clock::time_point now{};
    TdmScheduler sched(pool, test_config(), [&now] { return now; });
    auto req = [](uint32_t jid, uint64_t mid, uint32_t window) {
        return CallRequest{jid, mid, window, 1 << 18, INA_COLL_ALLREDUCE, INA_OP_SUM,
                           INA_DT_INT32, 4, 0};
    };
    Verdict a = sched.decide(req(1, 0, 4));
    ck_assert(a.kind == Verdict::Kind::kGrant);
    Verdict b = sched.decide(req(2, 0, 6)); // 6 do not fit beside 4 in 8
    ck_assert(b.kind == Verdict::Kind::kDeny);
    ck_assert_int_eq(b.status, INA_PROTO_ERR_BUSY);
    Verdict c = sched.decide(CallRequest{3, 0, 2, 1024, INA_COLL_ALLREDUCE, INA_OP_SUM,
                                         INA_DT_INT32, 4, 0}); // 2 do: no competition
    ck_assert(c.kind == Verdict::Kind::kGrant);
    sched.on_call_done(3, 0, c.lease);
    Verdict a2 = sched.decide(req(1, 1, 4)); // job 1's own overlap
    ck_assert(a2.kind == Verdict::Kind::kGrant);
    Verdict a3 = sched.decide(req(1, 2, 4)); // beyond the pool
    ck_assert_int_eq(a3.status, INA_PROTO_ERR_NO_RESOURCES);
    now += std::chrono::milliseconds(1);
    sched.on_call_done(1, 0, a.lease);
    ck_assert(sched.decide(req(2, 1, 6)).kind == Verdict::Kind::kDeny); // one still open
    sched.on_call_done(1, 1, a2.lease);
    ck_assert_uint_eq(pool.free_segs(), 8);
    Verdict b2 = sched.decide(req(2, 2, 6)); // free: nothing predicted yet
    ck_assert(b2.kind == Verdict::Kind::kGrant);
    now += std::chrono::milliseconds(1);
    sched.on_call_done(2, 2, b2.lease);
    // The agent learned its rate from the 1 MiB calls that held it 1 ms.
    ck_assert(std::fabs(sched.rate() - 1e-3 / (1 << 20)) < 1e-12);
    sched.on_job_freed(1);
    sched.on_job_freed(2);
    sched.on_job_freed(3);
    ck_assert(sched.pattern(1) == nullptr);
    ck_assert_uint_eq(pool.free_segs(), 8);
}
END_TEST

// Periodic jobs whose calls fit between each other's: once learned, every
// call is granted (rule 2) and never two jobs' calls at once.
START_TEST(test_tdm_periodic_jobs_interleave)
{
    // 1 MiB calls hold the agent ~1 ms; periods 10 ms; offset 5 ms.
    const std::vector<SimJob> jobs = {
        {1, 8, 1 << 20, {9e-3}, 0, 1},
        {2, 8, 1 << 20, {9e-3}, 5e-3, 1},
    };
    Trace tr = simulate(jobs, 1.0);
    assert_one_job_at_a_time(tr);
    ck_assert_int_ge(tr.granted.at(1), 95);
    ck_assert_int_ge(tr.granted.at(2), 95);
    ck_assert_int_le(tr.denied[1] + tr.denied[2], 2);
}
END_TEST

// Rule 3: job 2 (8 members: a large saving) is predicted to arrive while
// job 1's call (2 members: offloading saves little) would run; job 1 is
// denied OUTSCORED, until its denials age it past job 2; no losing streak
// longer than the score gap allows.
START_TEST(test_tdm_score_decides_and_ageing_ends_streaks)
{
    const std::vector<SimJob> jobs = {
        {1, 2, 4 << 20, {2e-3}, 0, 1},
        {2, 8, 4 << 20, {3e-3}, 1e-3, 1},
    };
    Trace tr = simulate(jobs, 2.0);
    assert_one_job_at_a_time(tr);
    const int outscored1 = tr.reasons.count({1, INA_PROTO_ERR_OUTSCORED})
                               ? tr.reasons.at({1, INA_PROTO_ERR_OUTSCORED})
                               : 0;
    ck_assert_int_gt(outscored1, 10); // job 2 is preferred
    ck_assert_int_gt(tr.granted.at(1), 10); // but job 1 is not starved
    // Score gap ~0.75 (saving/hold 0.75 against ~0), ageing 0.5: job 1 wins
    // by its 2nd denial in a row; BUSY denials count as well.
    ck_assert_int_le(longest_denial_run(tr, 1), 3);
    ck_assert_int_le(longest_denial_run(tr, 2), 3);
}
END_TEST

// The priority order: the best predicted scorer first.
START_TEST(test_tdm_priority_order)
{
    const std::vector<SimJob> jobs = {
        {1, 2, 1 << 20, {20e-3}, 0, 1},
        {2, 16, 1 << 20, {20e-3}, 5e-3, 1},
        {3, 4, 1 << 20, {20e-3}, 10e-3, 1},
    };
    SegPool pool(8, 64);
    Clock::time_point now{};
    TdmScheduler s(pool, test_config(), [&now] { return now; });
    for (const SimJob &j : jobs) {
        s.on_job_created({j.jid, j.members, j.members, 8});
    }
    for (int i = 0; i < 5; ++i) {
        for (const SimJob &j : jobs) {
            now = Clock::time_point{} + secs(i * 20e-3 + j.start);
            Verdict v = s.decide({j.jid, static_cast<uint64_t>(i), 8, 1 << 18, INA_COLL_ALLREDUCE,
                                  INA_OP_SUM, INA_DT_INT32, j.members, 0});
            now += secs(1e-3);
            if (v.kind == Verdict::Kind::kGrant) {
                s.on_call_done(j.jid, i, v.lease);
            }
        }
    }
    const std::vector<uint32_t> order = s.priority();
    ck_assert_uint_eq(order.size(), 3);
    ck_assert_uint_eq(order[0], 2); // 16 members saves the most
    ck_assert_uint_eq(order[1], 3);
    ck_assert_uint_eq(order[2], 1);
    const ina::sched::CallPattern *p = s.pattern(2);
    ck_assert(p != nullptr && p->predictable());
    ck_assert(std::fabs(p->next_arrival() - (4 * 20e-3 + 5e-3 + 20e-3)) < 1e-6);
}
END_TEST

// Three jobs with a total duty cycle of ~0.75 and bursty calls: one job at a
// time, nobody below half its share of grants, and the same trace twice
// gives the same decisions.
START_TEST(test_tdm_bursty_three_jobs_fair_and_deterministic)
{
    const std::vector<SimJob> jobs = {
        {1, 8, 2 << 20, {8e-3}, 0, 1},           // ~2.1 ms of 10 ms
        {2, 8, 1 << 20, {3e-3}, 1e-3, 1},        // ~1 ms of 4 ms
        {3, 8, 1 << 19, {6e-3}, 2e-3, 4},        // bursts of 4 x 0.5 ms, then 6 ms
    };
    Trace a = simulate(jobs, 2.0);
    const Trace b = simulate(jobs, 2.0);
    ck_assert_uint_eq(a.decisions.size(), b.decisions.size());
    for (size_t i = 0; i < a.decisions.size(); ++i) {
        ck_assert(a.decisions[i].jid == b.decisions[i].jid);
        ck_assert(a.decisions[i].status == b.decisions[i].status);
    }
    assert_one_job_at_a_time(a);
    for (uint32_t jid = 1; jid <= 3; ++jid) {
        const int calls = a.granted.at(jid) + a.denied[jid];
        // Fair share of offloaded calls: a third of the agent's capacity,
        // so at least half of that: each job's calls are offloaded at
        // least 1/6 of the time... of its own calls, at least a quarter.
        ck_assert_msg(a.granted.at(jid) * 4 >= calls, "job %u: %d of %d granted", jid,
                      a.granted.at(jid), calls);
        ck_assert_int_le(longest_denial_run(a, jid), 6);
    }
}
END_TEST

// A job that changes its period: the prediction follows within a few calls.
START_TEST(test_tdm_follows_a_phase_change)
{
    SegPool pool(8, 64);
    Clock::time_point now{};
    TdmScheduler s(pool, test_config(), [&now] { return now; });
    double t = 0;
    auto call = [&](uint64_t mid) {
        now = Clock::time_point{} + secs(t);
        Verdict v = s.decide({1, mid, 8, 1024, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, 4, 0});
        ck_assert(v.kind == Verdict::Kind::kGrant); // alone: always granted
        s.on_call_done(1, mid, v.lease);
    };
    uint64_t mid = 0;
    for (int i = 0; i < 30; ++i) {
        call(mid++);
        t += 10e-3;
    }
    t -= 10e-3; // the last call's time
    const ina::sched::CallPattern *p = s.pattern(1);
    ck_assert(std::fabs(p->gap().mean() - 10e-3) < 1e-6);
    for (int i = 0; i < 3; ++i) {
        t += 30e-3; // now every 30 ms
        call(mid++);
    }
    ck_assert(std::fabs(p->gap().mean() - 30e-3) < 1e-6);
    ck_assert(std::fabs(p->next_arrival() - (t + 30e-3)) < 1e-6);
}
END_TEST

// Behind the Aggregator, as ina-switchd runs it: the communicators of one
// application (jobs opened with one tenant, JOB_OPEN's mid) share the
// agent; another application's call is denied BUSY on every member while
// one holds it; decisions are counted per job and by reason.
START_TEST(test_tdm_tenants_in_the_aggregator)
{
    using namespace agg_test;
    FakeSink sink;
    // The pool holds two leases: the application's two calls fill it.
    Aggregator agg(small_config(8),
                   [](SegPool &pool) {
                       return std::make_unique<TdmScheduler>(pool, test_config());
                   },
                   sink);
    Members app(2), other(2);
    uint32_t tag = 0;
    auto job = [&](Members &m, uint64_t tenant) {
        ++tag;
        uint32_t jid = 0;
        for (uint32_t r = 0; r < 2; ++r) {
            jid = open_job(agg, sink, m[r], tag, {0, 1}, 4, r, 0, 0, tenant).jid;
        }
        sink.events.clear();
        return jid;
    };
    const uint32_t world = job(app, 77);
    const uint32_t dup = job(app, 77); // the application's second communicator
    const uint32_t foreign = job(other, 78);
    std::vector<int32_t> v(4, 7);
    auto blk = [&](uint32_t jid, uint32_t rank, uint64_t mid) {
        return block_hdr(jid, rank, mid, 0, 4, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, 0, 4,
                         4, 4, true);
    };
    auto decisions = [&](bool grant, ina_proto_status_t st) {
        ck_assert_uint_eq(sink.count(Event::Kind::kDecision), 2); // every member told
        for (const Event &e : sink.events) {
            if (e.kind == Event::Kind::kDecision) {
                ck_assert(e.d.grant == grant);
                ck_assert_int_eq(e.d.status, st);
            }
        }
        sink.events.clear();
    };
    agg.block(app[0], blk(world, 0, 0), v.data());
    decisions(true, INA_PROTO_OK);
    agg.block(app[1], blk(dup, 1, 0), v.data()); // overlaps the world's call
    decisions(true, INA_PROTO_OK);
    agg.block(other[0], blk(foreign, 0, 0), v.data());
    decisions(false, INA_PROTO_ERR_BUSY);
    agg.block(app[1], blk(world, 1, 0), v.data());
    agg.block(app[0], blk(dup, 0, 0), v.data());
    ck_assert_uint_eq(agg.pool().free_segs(), 8); // both done: leases back
    sink.events.clear();
    agg.block(other[1], blk(foreign, 1, 1), v.data()); // free now, nothing predicted
    decisions(true, INA_PROTO_OK);
    ck_assert_uint_eq(agg.find_job(foreign)->decisions().granted, 1);
    ck_assert_uint_eq(agg.find_job(foreign)->decisions().denied[INA_PROTO_ERR_BUSY], 1);
    ck_assert_uint_eq(agg.find_job(world)->decisions().granted, 1);
    ck_assert_uint_eq(agg.counters().denied_by[INA_PROTO_ERR_BUSY], 1);
    ck_assert_uint_eq(agg.counters().calls_denied, 1);
    agg.member_lost(other[0]);
    ck_assert_uint_eq(agg.pool().free_segs(), 8);
}
END_TEST

// Leases: tdm tells a job's members to send its whole window before the
// verdict while no other tenant's call that would not fit beside it is open
// or expected, else one block (a denied call then costs the link one block).
START_TEST(test_tdm_ahead)
{
    SegPool pool(8, 64);
    Clock::time_point now{};
    TdmConfig cfg = test_config();
    cfg.quiet = 0.5;
    TdmScheduler sched(pool, cfg, [&now] { return now; });
    auto req = [](uint32_t jid, uint64_t mid, uint32_t window) {
        return CallRequest{jid, mid, window, 1 << 18, INA_COLL_ALLREDUCE, INA_OP_SUM,
                           INA_DT_INT32, 4, 0};
    };
    sched.on_job_created(JobInfo{1, 4, 4, 8});
    sched.on_job_created(JobInfo{2, 4, 4, 8});
    sched.on_job_created(JobInfo{3, 4, 4, 8, 77});
    sched.on_job_created(JobInfo{4, 4, 4, 8, 77}); // job 3's tenant
    ck_assert_uint_eq(sched.ahead(1, 8), 8); // nobody else called yet
    Verdict b = sched.decide(req(2, 0, 8));
    ck_assert(b.kind == Verdict::Kind::kGrant);
    ck_assert_uint_eq(sched.ahead(1, 8), 1); // job 2's call holds the pool
    ck_assert_uint_eq(sched.ahead(2, 8), 8); // its own calls do not compete
    now += std::chrono::milliseconds(10);
    sched.on_call_done(2, 0, b.lease);
    ck_assert_uint_eq(sched.ahead(1, 8), 1); // job 2 is expected again soon
    now += std::chrono::milliseconds(500);
    ck_assert_uint_eq(sched.ahead(1, 8), 8); // quiet for long enough
    CallRequest r3 = req(3, 0, 8);
    r3.tenant = 77;
    Verdict c = sched.decide(r3);
    ck_assert(c.kind == Verdict::Kind::kGrant);
    ck_assert_uint_eq(sched.ahead(4, 8), 8); // one application's jobs
    ck_assert_uint_eq(sched.ahead(1, 8), 1);
    ck_assert_uint_eq(sched.ahead(1, 2), 1); // 8 + 2 Segs do not fit in 8: it competes
    sched.on_call_done(3, 0, c.lease);
}
END_TEST

// With `wait`: a call that finds another tenant's call holding the pool
// waits (Defer) when the rest of that call and its own hold end before its
// time on the hosts, else it is denied; calls that wait are served first
// come first served as the pool frees, a new call does not pass them, a job
// denied twice in a row waits whatever the estimate, and one that waited
// far longer than its host time goes to the hosts after all.
START_TEST(test_tdm_wait)
{
    SegPool pool(8, 64);
    Clock::time_point now{};
    TdmConfig cfg = test_config();
    cfg.wait = true;
    cfg.wait_after_denied = 2;
    cfg.host_hints = false; // waiting by the model (the members' measures: test_sched_guard)
    TdmScheduler sched(pool, cfg, [&now] { return now; });
    // 1 MiB allreduces of 4 members: on the hosts 2 * 3/4 * 1 MiB * 1 ns +
    // 6 * 10 us = 1.63 ms; at the agent (its initial rate, 0.8 ns per
    // byte) 0.85 ms.
    auto req = [](uint32_t jid, uint64_t mid, uint32_t asked) {
        return CallRequest{jid, mid, 8, 1 << 18, INA_COLL_ALLREDUCE, INA_OP_SUM,
                           INA_DT_INT32, 4, asked};
    };
    Verdict a = sched.decide(req(1, 0, 0));
    ck_assert(a.kind == Verdict::Kind::kGrant);
    // At once: 0.85 ms left of job 1's call + 0.85 of its own > 1.63 ms.
    Verdict b = sched.decide(req(2, 0, 0));
    ck_assert_int_eq(b.status, INA_PROTO_ERR_BUSY);
    now += std::chrono::microseconds(500);
    // 0.35 + 0.85 < 1.63: it waits.
    ck_assert(sched.decide(req(2, 1, 0)).kind == Verdict::Kind::kDefer);
    // Behind it: 0.35 + 0.85 + 0.85 > 1.63: the hosts.
    ck_assert_int_eq(sched.decide(req(3, 0, 0)).status, INA_PROTO_ERR_BUSY);
    ck_assert(sched.decide(req(2, 1, 1)).kind == Verdict::Kind::kDefer); // still held
    now += std::chrono::microseconds(300);
    sched.on_call_done(1, 0, a.lease);
    // A new call does not pass the one that waits, though the pool is free
    // (behind it: 0.85 + 0.85 > 1.63, the hosts).
    now += std::chrono::microseconds(600);
    ck_assert_int_eq(sched.decide(req(3, 1, 0)).status, INA_PROTO_ERR_BUSY);
    Verdict b2 = sched.decide(req(2, 1, 2));
    ck_assert(b2.kind == Verdict::Kind::kGrant);
    ck_assert_uint_eq(b2.lease.size(), 8);
    // Job 3, denied twice in a row, waits with its next call though the
    // estimate says the hosts (0.85 + 0.85 > 1.63).
    Verdict c = sched.decide(req(3, 2, 0));
    ck_assert(c.kind == Verdict::Kind::kDefer);
    now += std::chrono::microseconds(900);
    sched.on_call_done(2, 1, b2.lease);
    c = sched.decide(req(3, 2, 1));
    ck_assert(c.kind == Verdict::Kind::kGrant);
    // A call that waits far longer than its host time: the hosts after all.
    now += std::chrono::microseconds(100);
    ck_assert(sched.decide(req(1, 1, 0)).kind == Verdict::Kind::kDefer);
    now += std::chrono::milliseconds(100); // job 3's call stalls
    ck_assert_int_eq(sched.decide(req(1, 1, 1)).status, INA_PROTO_ERR_BUSY);
    std::vector<uint32_t> none;
    sched.on_call_done(1, 1, none);
    sched.on_call_done(3, 2, c.lease);
    ck_assert_uint_eq(pool.free_segs(), 8);
    // Without waiting calls or holders, a call is granted at once.
    Verdict d = sched.decide(req(3, 3, 0));
    ck_assert(d.kind == Verdict::Kind::kGrant);
    sched.on_call_done(3, 3, d.lease);
}
END_TEST

int main()
{
    return ina_test::run_suite(
        "sched_tdm", "tdm",
        {test_estimate_follows_phases, test_expected_until_is_expected,
         test_earliest_expected_arrival, test_host_model, test_calc_score_properties,
         test_tdm_busy_and_free, test_tdm_periodic_jobs_interleave,
         test_tdm_score_decides_and_ageing_ends_streaks, test_tdm_priority_order,
         test_tdm_bursty_three_jobs_fair_and_deterministic, test_tdm_follows_a_phase_change,
         test_tdm_tenants_in_the_aggregator, test_tdm_ahead, test_tdm_wait});
}

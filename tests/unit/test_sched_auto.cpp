// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Unit tests of the auto policy (switch_agent/sched/tdm.h, TdmConfig::by_need)
// and of what it learns each job's need from (sched/need.h), as pure logic
// on a simulated clock. The scripted trace: three jobs whose calls stream at
// the line rate with a lease of two Segs (the pool of eight is plentiful:
// once its probes down have taught it so, auto divides it and grants every
// call side by side); then their links'
// round trip grows fourfold, so each needs eight Segs, the whole pool
// (scarce: auto divides time, one job's call at a time, each with its whole
// window); then two jobs end and the one left has the pool to itself again,
// divided among one.
#include <check.h>
#include "check_main.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

#include "sched/need.h"
#include "sched/score.h"
#include "sched/tdm.h"
#include "seg_pool.h"

using ina::agg::CallRequest;
using ina::agg::Clock;
using ina::agg::JobInfo;
using ina::agg::SegPool;
using ina::agg::Verdict;
using ina::sched::host_time;
using ina::sched::NeedEstimate;
using ina::sched::TdmConfig;
using ina::sched::TdmScheduler;

namespace {

Clock::duration secs(double s)
{
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

constexpr uint32_t kPool = 8;
constexpr uint32_t kWindow = 8;
constexpr size_t kSegBytes = 4096;
constexpr double kLine = 1e9;          // bytes per second
constexpr double kCallBytes = 1 << 20; // 1 MiB: 1 ms at the line rate
constexpr double kCompute = 2e-3;      // between a job's calls

// The time a call of `bytes` takes on a lease of `lease` Segs when its job
// needs `need` of them for the line rate (a window-limited stream moves
// lease Segs per round trip).
double offloaded_time(double bytes, uint32_t lease, uint32_t need)
{
    return bytes / kLine * std::max(1.0, static_cast<double>(need) / lease);
}

struct Grant {
    double start, end;
    uint32_t jid;
    uint32_t lease;
};

struct Trace {
    std::vector<std::tuple<double, uint32_t, ina_proto_status_t, uint32_t>> decisions;
    std::vector<Grant> grants;
    // dividing() after each decision, with its instant.
    std::vector<std::pair<double, bool>> mode;
};

// Three jobs of three tenants (JIDs 1..3) on a fresh auto scheduler. Each
// job's need is need_at(t); jobs 2 and 3 end at `end_at`.
// Returns the decisions until `horizon`. Each call's members send as far
// ahead as they were told (`ahead`), which bounds the next lease from below.
Trace simulate(const std::function<uint32_t(double)> &need_at, double end_at, double horizon)
{
    SegPool pool(kPool, kSegBytes);
    Clock::time_point t0{};
    Clock::time_point now = t0;
    TdmConfig cfg;
    cfg.host.alpha = 10e-6;
    cfg.host.beta = 1 / kLine;
    cfg.by_need = true;
    TdmScheduler sched(pool, cfg, [&now] { return now; });
    ck_assert_str_eq(sched.name(), "auto");
    constexpr size_t kJobs = 3;
    struct Ev {
        double t;
        uint64_t seq;
        size_t job;
        bool done;
        bool operator>(const Ev &o) const { return std::tie(t, seq) > std::tie(o.t, o.seq); }
    };
    std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> q;
    uint64_t seq = 0;
    std::vector<uint64_t> mid(kJobs, 0);
    std::vector<std::vector<uint32_t>> lease(kJobs);
    std::vector<uint32_t> told(kJobs, kWindow);
    std::vector<bool> alive(kJobs, true);
    for (size_t i = 0; i < kJobs; ++i) {
        const uint32_t jid = static_cast<uint32_t>(i + 1);
        sched.on_job_created(JobInfo{jid, 4, 4, kWindow, 100 + jid});
        q.push({1e-4 * static_cast<double>(i), seq++, i, false});
    }
    for (size_t i = 0; i < kJobs; ++i) {
        told[i] = sched.ahead(static_cast<uint32_t>(i + 1), kWindow); // JOB_OPEN's word
    }
    Trace tr;
    while (!q.empty() && q.top().t < horizon) {
        const Ev e = q.top();
        q.pop();
        now = t0 + secs(e.t);
        const uint32_t jid = static_cast<uint32_t>(e.job + 1);
        if (!alive[e.job]) {
            continue;
        }
        if (!e.done) {
            if (jid >= 2 && e.t >= end_at) {
                sched.on_job_freed(jid); // nothing of it is open: between calls
                alive[e.job] = false;
                continue;
            }
            CallRequest req{jid,
                            mid[e.job],
                            kWindow,
                            static_cast<uint64_t>(kCallBytes / 4),
                            INA_COLL_ALLREDUCE,
                            INA_OP_SUM,
                            INA_DT_INT32,
                            4,
                            0,
                            100 + jid};
            req.min_window = told[e.job];
            Verdict v = sched.decide(req);
            ck_assert(v.kind != Verdict::Kind::kDefer);
            const uint32_t n =
                v.kind == Verdict::Kind::kGrant ? static_cast<uint32_t>(v.lease.size()) : 0;
            tr.decisions.emplace_back(e.t, jid, v.status, n);
            tr.mode.emplace_back(e.t, sched.dividing());
            double took;
            if (v.kind == Verdict::Kind::kGrant) {
                ck_assert_uint_ge(n, req.min_window);
                ck_assert_uint_le(n, kWindow);
                took = offloaded_time(kCallBytes, n, need_at(e.t));
                tr.grants.push_back({e.t, e.t + took, jid, n});
                lease[e.job] = std::move(v.lease);
            } else {
                lease[e.job].clear();
                took = host_time(INA_COLL_ALLREDUCE, kCallBytes, 4, 10e-6, 1 / kLine);
            }
            q.push({e.t + took, seq++, e.job, true});
        } else {
            if (!lease[e.job].empty()) {
                sched.on_call_done(jid, mid[e.job], lease[e.job]);
            }
            told[e.job] = sched.ahead(jid, kWindow);
            ck_assert_uint_ge(told[e.job], 1);
            ++mid[e.job];
            q.push({e.t + kCompute, seq++, e.job, false});
        }
    }
    for (size_t i = 0; i < kJobs; ++i) {
        if (alive[i] && !lease[i].empty()) {
            sched.on_call_done(static_cast<uint32_t>(i + 1), mid[i], lease[i]);
        }
    }
    ck_assert_uint_eq(pool.free_segs(), kPool);
    return tr;
}

// The most Segs leased at once, and the most tenants holding a lease at
// once, at the grants of [from, to).
std::pair<uint32_t, size_t> peaks(const Trace &tr, double from, double to)
{
    uint32_t segs = 0;
    size_t tenants = 0;
    for (const Grant &g : tr.grants) {
        if (g.start < from || g.start >= to) {
            continue;
        }
        uint32_t sum = 0;
        std::map<uint32_t, bool> holding;
        for (const Grant &o : tr.grants) {
            if (o.start <= g.start && g.start < o.end) {
                sum += o.lease;
                holding[o.jid] = true;
            }
        }
        segs = std::max(segs, sum);
        tenants = std::max(tenants, holding.size());
    }
    return {segs, tenants};
}

} // namespace

// The need of a job: what its calls could use until a large call is
// judged (nothing before its first call; its largest call's blocks, at most
// its window); at most a lease that reached the line; about L times how far
// a slow one fell short, at most the window, from the second slow call in a
// row; small calls teach nothing, nor a short lease before a whole window
// set the line; only whole-window calls lower the line; a freed job's need
// leaves the total.
START_TEST(test_need_estimate)
{
    NeedEstimate n(kSegBytes);
    ck_assert_uint_eq(n.need(1), 0);
    const double big = 64 * kSegBytes;
    n.asked(1, 8, big);
    ck_assert_uint_eq(n.need(1), 8); // could use its window
    n.asked(4, 8, 3 * kSegBytes);
    ck_assert_uint_eq(n.need(4), 3); // three blocks: three Segs at most
    n.asked(4, 8, 1);
    ck_assert_uint_eq(n.need(4), 3); // its largest call counts
    ck_assert_uint_eq(n.total(), 8 + 3);
    ck_assert(!n.judged(1));
    n.observe(1, 8, 2, big, big / kLine); // a short lease before the line: says nothing
    ck_assert_uint_eq(n.need(1), 8);
    ck_assert(n.line() == 0 && !n.judged(1));
    n.observe(1, 8, 8, 8 * kSegBytes, 1e-3); // two leases' worth: too small to teach
    ck_assert_uint_eq(n.need(1), 8);
    ck_assert(n.line() == 0);
    n.observe(1, 8, 8, big, big / kLine); // the line, with its whole window
    ck_assert_uint_eq(n.need(1), 8);      // it needs at most 8
    ck_assert(n.judged(1));
    ck_assert(std::fabs(n.line() - kLine) < 1);
    ck_assert_uint_eq(n.longest(1), 8);
    n.asked(1, 8, big);                           // judged: what it asks changes nothing
    ck_assert_uint_eq(n.teaching_lease(big), 16); // 64 blocks: 4 leases of 16
    n.observe(1, 8, 4, big, big / kLine);         // as fast with 4
    ck_assert_uint_eq(n.need(1), 4);
    n.observe(1, 8, 2, big, 4 * big / kLine); // a quarter with 2: about 8
    n.observe(1, 8, 2, big, 4 * big / kLine);
    ck_assert_uint_eq(n.need(1), 8);
    n.observe(1, 8, 2, big, big / kLine); // as fast with 2 after all
    ck_assert_uint_eq(n.need(1), 2);
    n.asked(2, 8, big);
    n.observe(2, 8, 2, big, 3 * big / kLine); // a third of the line with 2: about 6
    ck_assert_uint_eq(n.need(2), 8);          // once is not yet
    n.observe(2, 8, 2, big, 3 * big / kLine);
    ck_assert_uint_eq(n.need(2), 6);
    n.asked(3, 6, big);
    n.observe(3, 6, 3, big, 10 * big / kLine); // a tenth with 3: 30, at most its window
    n.observe(3, 6, 3, big, 10 * big / kLine);
    ck_assert_uint_eq(n.need(3), 6);
    ck_assert_uint_eq(n.total(), 2 + 6 + 6 + 3);
    // A late member's slow call between two fast ones changes nothing.
    n.observe(1, 8, 2, big, 5 * big / kLine);
    n.observe(1, 8, 2, big, big / kLine);
    n.observe(1, 8, 2, big, 5 * big / kLine);
    ck_assert_uint_eq(n.need(1), 2);
    n.forget(2);
    ck_assert_uint_eq(n.need(2), 0);
    ck_assert_uint_eq(n.total(), 2 + 6 + 3);
    // Slow calls on short leases leave the line; one on the whole window
    // pulls it down by a 64th of the gap.
    n.observe(1, 8, 4, big, 2 * big / kLine);
    ck_assert(std::fabs(n.line() - kLine) < 1);
    n.observe(1, 8, 8, big, 2 * big / kLine);
    ck_assert(n.line() < kLine - 1 && n.line() > kLine * (1 - 1.0 / 64));
}
END_TEST

// The scripted trace (see the top of the file).
START_TEST(test_auto_switches_with_the_regime)
{
    constexpr double kScarceFrom = 0.3;
    constexpr double kEndFrom = 0.6;
    constexpr double kHorizon = 0.9;
    auto need_at = [](double t) -> uint32_t { return t < kScarceFrom ? 2 : 8; };
    const Trace tr = simulate(need_at, kEndFrom, kHorizon);

    // Plentiful. Each job's 1 MiB calls could use its whole window, so
    // time is divided at first; every job's probes down (a half lease, then
    // half of that, while they stream as fast) teach within a few calls
    // each that two Segs are enough, and from then on the pool is divided:
    // the jobs side by side within the pool. Calls that come during another
    // tenant's call while time is divided, or during a probe up, or are
    // predicted to, are denied (busy, outscored): a few, against some 300
    // granted.
    constexpr double kLearned = 0.02;
    int granted = 0;
    int denied = 0;
    for (const auto &[t, jid, status, n] : tr.decisions) {
        if (t < kScarceFrom) {
            if (status == INA_PROTO_OK) {
                ++granted;
            } else {
                ck_assert(status == INA_PROTO_ERR_BUSY || status == INA_PROTO_ERR_OUTSCORED);
                ++denied;
            }
        }
    }
    ck_assert_msg(granted > 200 && denied <= 12, "plentiful: %d granted, %d denied", granted,
                  denied);
    double learned = -1;
    for (const auto &[t, dividing] : tr.mode) {
        if (t < kScarceFrom && !dividing) {
            learned = t;
        }
    }
    ck_assert_msg(learned >= 0 && learned < kLearned,
                  "time still divided at %.4f in the plentiful regime", learned);
    ck_assert_uint_le(peaks(tr, 0, kScarceFrom).first, kPool);
    ck_assert_uint_ge(peaks(tr, kLearned, kScarceFrom).second, 2);
    std::map<uint32_t, int> up;
    for (const Grant &g : tr.grants) {
        if (g.start > kLearned && g.start < kScarceFrom && g.lease > kPool / 2) {
            ++up[g.jid]; // a probe up: at most one call in 32
        }
    }
    for (const auto &[jid, n] : up) {
        ck_assert_msg(n <= 3, "job %u had %d leases of more than half the pool", jid, n);
    }

    // Scarce: once it has seen the jobs' calls slow down on their shares,
    // time is divided as under tdm: one job at a time, the others denied
    // (busy, or outscored by a call predicted while theirs would run).
    double switched = -1;
    for (const auto &[t, dividing] : tr.mode) {
        if (t >= kScarceFrom && !dividing) {
            switched = t;
            break;
        }
    }
    ck_assert_msg(switched > 0 && switched < kScarceFrom + 0.05,
                  "auto did not divide time within 50 ms of the scarce regime (%.4f)", switched);
    // Whole windows, but every 32nd call of a job half of one (a probe
    // down: does it need all of it? It does).
    int whole = 0;
    int half = 0;
    int busy = 0;
    for (const auto &[t, jid, status, n] : tr.decisions) {
        if (t > switched + 0.02 && t < kEndFrom) {
            if (status == INA_PROTO_OK) {
                ck_assert(n == kWindow || n == kWindow / 2);
                ++(n == kWindow ? whole : half);
            } else {
                ck_assert(status == INA_PROTO_ERR_BUSY || status == INA_PROTO_ERR_OUTSCORED);
                ++busy;
            }
        }
    }
    ck_assert_int_gt(whole, 10);
    ck_assert_int_gt(busy, 10);
    ck_assert_int_le(half, whole / 16 + 3);
    for (const auto &[t, dividing] : tr.mode) {
        if (t > switched + 0.02 && t < kEndFrom) {
            ck_assert_msg(!dividing, "the pool divided again at %.4f", t);
        }
    }

    // One job left: its need (the pool) fits, the pool is divided among one
    // and every call of it has its whole window.
    int alone = 0;
    for (const auto &[t, jid, status, n] : tr.decisions) {
        if (t > kEndFrom + 0.02) {
            ck_assert_uint_eq(jid, 1);
            ck_assert_int_eq(status, INA_PROTO_OK);
            ck_assert_uint_eq(n, kWindow);
            ++alone;
        }
    }
    ck_assert_int_gt(alone, 10);
    for (const auto &[t, dividing] : tr.mode) {
        if (t > kEndFrom + 0.02) {
            ck_assert(dividing);
        }
    }

    // The same trace, the same decisions.
    const Trace again = simulate(need_at, kEndFrom, kHorizon);
    ck_assert(again.decisions == tr.decisions);
}
END_TEST

// Auto leaves tdm's own configuration alone: without by_need, leases are
// whole windows and the policy is named tdm.
START_TEST(test_tdm_unchanged_without_by_need)
{
    SegPool pool(kPool, kSegBytes);
    Clock::time_point now{};
    TdmConfig cfg;
    TdmScheduler sched(pool, cfg, [&now] { return now; });
    ck_assert_str_eq(sched.name(), "tdm");
    sched.on_job_created(JobInfo{1, 4, 4, kWindow, 7});
    sched.on_job_created(JobInfo{2, 4, 4, kWindow, 8});
    CallRequest req{1, 0, kWindow, 1 << 18, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, 4, 0, 7};
    Verdict v = sched.decide(req);
    ck_assert(v.kind == Verdict::Kind::kGrant);
    ck_assert_uint_eq(v.lease.size(), kWindow);
    sched.on_call_done(1, 0, v.lease);
}
END_TEST

int main()
{
    return ina_test::run_suite("sched_auto", "auto",
                               {test_need_estimate, test_auto_switches_with_the_regime,
                                test_tdm_unchanged_without_by_need});
}

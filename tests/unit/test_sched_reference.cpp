// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The agent's policies against straightforward references: each reference
// below is the policy as first written, a loop over every job or tenant at
// each decision, kept here as the specification of its verdicts. The
// policies themselves keep counts and ordered indexes so that a decision
// costs no more with more tenants and jobs (bench/engine/ina_sched_bench);
// these tests replay scripted traces with many tenants through both, on one
// simulated clock and two pools of the same size, and require the same
// verdict, reason, lease (the very Segs) and `ahead` word at every step.
// The traces mix what moves the indexes: periodic jobs with jitter, jobs on
// a grid of whole milliseconds (so that deadlines and clock ties meet
// exactly), phase changes, jobs gone quiet, jobs freed and opened again,
// a job whose calls name another tenant than its JOB_OPEN, calls of one job
// that overlap, and `ahead` asked for any job and window, known or not.
// They check verdicts only, never speed.
#include <check.h>
#include "check_main.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <tuple>
#include <vector>

#include "scheduler.h"
#include "sched/exclusive.h"
#include "sched/partition.h"
#include "sched/predictor.h"
#include "sched/score.h"
#include "sched/tdm.h"
#include "seg_pool.h"

using ina::agg::CallRequest;
using ina::agg::Clock;
using ina::agg::JobInfo;
using ina::agg::Scheduler;
using ina::agg::SegPool;
using ina::agg::Verdict;
using ina::sched::CallPattern;
using ina::sched::Contender;
using ina::sched::Estimate;
using ina::sched::TdmConfig;

namespace {

using Now = std::function<Clock::time_point()>;

// --- References: each policy's decision as a loop over all of its state ------

// tdm.h's rules, every job visited at every decision.
class RefTdm final : public Scheduler {
public:
    RefTdm(SegPool &pool, const TdmConfig &cfg, Now now)
        : pool_(pool), cfg_(cfg), now_(std::move(now)), epoch_(now_())
    {
    }

    Verdict decide(const CallRequest &req) override
    {
        const double now = now_s();
        JobState &me = job(req.jid, req.nmembers);
        me.window = req.window;
        me.tenant = ina::agg::tenant_key(req);
        const double bytes = static_cast<double>(req.total) * ina_proto_dtype_size(req.dtype);
        me.pattern.arrived(now, bytes, req.coll);
        const uint32_t free = pool_.free_segs();
        const uint32_t left = free >= req.window ? free - req.window : 0;
        for (const auto &[jid, other] : jobs_) {
            if (other.tenant != me.tenant && other.open > 0 && free < req.window) {
                return deny(me, INA_PROTO_ERR_BUSY);
            }
        }
        const double until = now + hold(me, bytes);
        Contender best{req.jid, score(me, req.coll, bytes), me.denied, true};
        for (const auto &[jid, other] : jobs_) {
            const CallPattern &p = other.pattern;
            if (other.tenant == me.tenant || !p.predictable() || other.window <= left) {
                continue;
            }
            const double t = p.next_arrival();
            if (t > until || t + p.lateness() < now) {
                continue;
            }
            const Contender c{jid, score(other, p.last_coll(), p.next_bytes()), other.denied,
                              false};
            if (before(c, best)) {
                best = c;
            }
        }
        if (best.jid != req.jid) {
            return deny(me, INA_PROTO_ERR_OUTSCORED);
        }
        std::vector<uint32_t> lease;
        if (!pool_.acquire(req.window, lease)) {
            return deny(me, INA_PROTO_ERR_NO_RESOURCES);
        }
        ++me.open;
        me.denied = 0;
        me.granted[req.mid] = {now, bytes};
        return Verdict::grant(std::move(lease));
    }

    void on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease) override
    {
        auto it = jobs_.find(jid);
        if (it != jobs_.end()) {
            JobState &j = it->second;
            auto g = j.granted.find(mid);
            if (g != j.granted.end()) {
                const double secs = now_s() - g->second.first;
                const double bytes = g->second.second;
                j.pattern.held(secs, bytes);
                if (bytes >= 64 * 1024) {
                    rate_.add(secs / bytes);
                }
                j.granted.erase(g);
                j.open = j.open > 0 ? j.open - 1 : 0;
            }
        }
        pool_.release(lease);
        lease.clear();
    }

    void on_job_created(const JobInfo &info) override
    {
        JobState &j = job(info.jid, info.nmembers);
        j.window = info.window;
        j.tenant = ina::agg::tenant_key(info);
    }

    void on_job_freed(uint32_t jid) override { jobs_.erase(jid); }

    uint32_t ahead(uint32_t jid, uint32_t window) const override
    {
        auto me = jobs_.find(jid);
        const uint64_t tenant =
            me != jobs_.end() ? me->second.tenant : ina::agg::tenant_key(0, jid);
        const double now = now_s();
        for (const auto &[other_jid, other] : jobs_) {
            if (other.tenant == tenant || other.window + window <= pool_.size()) {
                continue;
            }
            if (other.open > 0 || other.pattern.expected(now, cfg_.quiet)) {
                return 1;
            }
        }
        return window;
    }

    double rate() const { return rate_.samples() > 0 ? rate_.mean() : cfg_.initial_rate; }

private:
    struct JobState {
        uint32_t nmembers = 1;
        uint64_t tenant = 0;
        uint32_t window = 0;
        CallPattern pattern;
        uint32_t open = 0;
        uint32_t denied = 0;
        std::map<uint64_t, std::pair<double, double>> granted;
    };

    double now_s() const { return std::chrono::duration<double>(now_() - epoch_).count(); }
    JobState &job(uint32_t jid, uint32_t nmembers)
    {
        JobState &j = jobs_[jid];
        j.nmembers = nmembers;
        if (j.tenant == 0) {
            j.tenant = (uint64_t{1} << 63) | jid;
        }
        return j;
    }
    double beta() const { return cfg_.host.beta > 0 ? cfg_.host.beta : rate(); }
    double hold(const JobState &j, double bytes) const
    {
        const double h = j.pattern.hold_for(bytes);
        return h >= 0 ? h : bytes * rate() + cfg_.host.alpha;
    }
    double score(const JobState &j, uint8_t coll, double bytes) const
    {
        const double host = ina::sched::host_time(coll, bytes, j.nmembers, cfg_.host.alpha, beta());
        return ina::sched::calc_score(host, hold(j, bytes), j.denied, cfg_.ageing);
    }
    Verdict deny(JobState &j, ina_proto_status_t why)
    {
        ++j.denied;
        return Verdict::deny(why);
    }

    SegPool &pool_;
    TdmConfig cfg_;
    Now now_;
    Clock::time_point epoch_;
    std::map<uint32_t, JobState> jobs_;
    Estimate rate_;
};

// partition.h's rules, every tenant visited at every decision.
class RefPartition final : public Scheduler {
public:
    RefPartition(SegPool &pool, std::chrono::milliseconds idle, Now now)
        : pool_(pool), idle_(idle), now_(std::move(now))
    {
    }

    Verdict decide(const CallRequest &req) override
    {
        const Clock::time_point now = now_();
        const uint64_t key = ina::agg::tenant_key(req);
        jobs_[req.jid] = key;
        for (auto it = tenants_.begin(); it != tenants_.end();) {
            it = it->first != key && !is_active(it->second, now) ? tenants_.erase(it)
                                                                 : std::next(it);
        }
        Tenant &t = tenants_[key];
        t.last = now;
        const uint32_t mine = share();
        const uint32_t room = mine > t.held ? mine - t.held : 0;
        const uint32_t lease_size = std::min({req.window, room, pool_.free_segs()});
        std::vector<uint32_t> lease;
        if (lease_size < req.min_window || !pool_.acquire(lease_size, lease)) {
            return Verdict::deny(INA_PROTO_ERR_NO_RESOURCES);
        }
        t.held += lease_size;
        ++t.open;
        return Verdict::grant(std::move(lease));
    }

    void on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease) override
    {
        auto it = tenants_.find(tenant_of(jid));
        if (it != tenants_.end() && !lease.empty()) {
            Tenant &t = it->second;
            t.held -= std::min<uint32_t>(t.held, static_cast<uint32_t>(lease.size()));
            t.open = t.open > 0 ? t.open - 1 : 0;
            t.last = now_();
        }
        pool_.release(lease);
        lease.clear();
    }

    void on_job_created(const JobInfo &job) override { jobs_[job.jid] = ina::agg::tenant_key(job); }

    void on_job_freed(uint32_t jid) override
    {
        const uint64_t key = tenant_of(jid);
        jobs_.erase(jid);
        const bool more =
            std::any_of(jobs_.begin(), jobs_.end(), [&](const auto &j) { return j.second == key; });
        auto it = tenants_.find(key);
        if (!more && it != tenants_.end() && it->second.open == 0) {
            tenants_.erase(it);
        }
    }

    uint32_t ahead(uint32_t jid, uint32_t window) const override
    {
        const Clock::time_point now = now_();
        const uint64_t key = tenant_of(jid);
        const auto others = static_cast<uint32_t>(
            std::count_if(tenants_.begin(), tenants_.end(), [&](const auto &t) {
                return t.first != key && is_active(t.second, now);
            }));
        return std::clamp<uint32_t>(pool_.size() / (others + 2), 1, window);
    }

    uint32_t active() const
    {
        const Clock::time_point now = now_();
        return static_cast<uint32_t>(
            std::count_if(tenants_.begin(), tenants_.end(),
                          [&](const auto &t) { return is_active(t.second, now); }));
    }
    uint32_t share() const
    {
        return std::max<uint32_t>(1, pool_.size() / std::max<uint32_t>(1, active()));
    }

private:
    struct Tenant {
        uint32_t held = 0;
        uint32_t open = 0;
        Clock::time_point last{};
    };
    bool is_active(const Tenant &t, Clock::time_point now) const
    {
        return t.open > 0 || now - t.last < idle_;
    }
    uint64_t tenant_of(uint32_t jid) const
    {
        auto it = jobs_.find(jid);
        return it != jobs_.end() ? it->second : ina::agg::tenant_key(0, jid);
    }

    SegPool &pool_;
    std::chrono::milliseconds idle_;
    Now now_;
    std::map<uint32_t, uint64_t> jobs_;
    std::map<uint64_t, Tenant> tenants_;
};

// exclusive.h's rules (a job's freeing looks at every job).
class RefExclusive final : public Scheduler {
public:
    RefExclusive(SegPool &pool, std::chrono::milliseconds idle, Now now)
        : pool_(pool), idle_(idle), now_(std::move(now))
    {
    }

    Verdict decide(const CallRequest &req) override
    {
        const Clock::time_point now = now_();
        const uint64_t tenant = ina::agg::tenant_key(req);
        tenants_[req.jid] = tenant;
        if (holder_ != 0 && holder_ != tenant) {
            if (open_ > 0 || now - last_ < idle_) {
                return Verdict::deny(INA_PROTO_ERR_BUSY);
            }
            holder_ = 0;
        }
        std::vector<uint32_t> lease;
        if (!pool_.acquire(req.window, lease)) {
            return Verdict::deny(INA_PROTO_ERR_NO_RESOURCES);
        }
        holder_ = tenant;
        ++open_;
        last_ = now;
        return Verdict::grant(std::move(lease));
    }

    void on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease) override
    {
        if (!lease.empty()) {
            open_ = open_ > 0 ? open_ - 1 : 0;
            last_ = now_();
        }
        pool_.release(lease);
        lease.clear();
    }

    void on_job_created(const JobInfo &job) override
    {
        tenants_[job.jid] = ina::agg::tenant_key(job);
    }

    void on_job_freed(uint32_t jid) override
    {
        auto it = tenants_.find(jid);
        const uint64_t tenant = it != tenants_.end() ? it->second : ina::agg::tenant_key(0, jid);
        if (it != tenants_.end()) {
            tenants_.erase(it);
        }
        const bool more = std::any_of(tenants_.begin(), tenants_.end(),
                                      [&](const auto &t) { return t.second == tenant; });
        if (tenant == holder_ && !more) {
            holder_ = 0;
            open_ = 0;
        }
    }

    uint32_t ahead(uint32_t jid, uint32_t window) const override
    {
        auto it = tenants_.find(jid);
        const uint64_t tenant = it != tenants_.end() ? it->second : ina::agg::tenant_key(0, jid);
        const bool held = holder_ != 0 && (open_ > 0 || now_() - last_ < idle_);
        return held && holder_ != tenant ? 1 : window;
    }

    uint64_t holder() const { return holder_; }

private:
    SegPool &pool_;
    std::chrono::milliseconds idle_;
    Now now_;
    std::map<uint32_t, uint64_t> tenants_;
    uint64_t holder_ = 0;
    uint32_t open_ = 0;
    Clock::time_point last_{};
};

// --- The traces --------------------------------------------------------------

struct TraceSpec {
    uint32_t tenants;
    uint32_t jobs;
    uint32_t segs;  // both pools
    uint64_t calls; // arrivals to replay
    uint32_t seed;
    int64_t period_ns; // the jobs' periods are 1..4 times this
};

// What a replay saw (so that a test can require that a trace reached the
// cases it is about).
struct Seen {
    uint64_t granted = 0;
    std::map<ina_proto_status_t, uint64_t> denied;
    uint64_t ahead_one = 0;  // `ahead` said 1
    uint64_t ahead_more = 0; // `ahead` said more than 1
    uint64_t freed = 0;
    uint64_t ties = 0; // arrivals at the instant of the previous one
};

// The rng's raw output only: std's distributions differ between libraries,
// mt19937's numbers do not.
struct Rng {
    std::mt19937 gen;
    explicit Rng(uint32_t seed) : gen(seed) {}
    uint32_t below(uint32_t n) { return static_cast<uint32_t>(gen() % n); }
    bool one_in(uint32_t n) { return below(n) == 0; }
};

// Replay one trace through `ref` and `impl` (each on its own pool, both on
// `now`), requiring the same verdicts; `check` compares what else the two
// can say after each step.
Seen replay(const TraceSpec &spec, Clock::time_point &now, Scheduler &ref, SegPool &ref_pool,
            Scheduler &impl, SegPool &impl_pool, const std::function<void()> &check = {})
{
    struct Job {
        uint32_t jid;
        uint64_t tenant;      // JOB_OPEN's
        uint64_t call_tenant; // what its calls say (usually the same)
        uint32_t window;
        uint32_t members;
        uint64_t bytes;
        int64_t period;
        bool grid; // whole milliseconds, no jitter
        bool live = true;
        uint64_t mid = 0;
        std::map<uint64_t, std::pair<std::vector<uint32_t>, std::vector<uint32_t>>> open;
    };
    Rng rng(spec.seed);
    std::vector<Job> jobs;
    const uint32_t windows[] = {1, 2, 4, 8, 16, 32, 64};
    for (uint32_t i = 0; i < spec.jobs; ++i) {
        Job j{};
        j.jid = 100 + 7 * i; // not dense: JIDs as the agent hands them out
        // A few jobs are their own tenant (JOB_OPEN's tenant 0).
        j.tenant = rng.one_in(10) ? 0 : 1 + rng.below(spec.tenants);
        j.call_tenant = j.tenant;
        j.window = std::min(windows[rng.below(7)], spec.segs);
        j.members = 2 + rng.below(31);
        j.bytes = uint64_t{4096} << rng.below(10); // 4 KiB..2 MiB
        j.grid = rng.one_in(3);
        j.period = spec.period_ns * (1 + rng.below(4));
        if (j.grid) {
            j.period = std::max<int64_t>(1, j.period / 1000000) * 1000000;
        }
        jobs.push_back(j);
    }
    const Clock::time_point t0 = now;
    using Ev = std::tuple<int64_t, uint64_t, uint32_t, uint64_t>; // ns, seq, job, mid or kArrive
    constexpr uint64_t kArrive = UINT64_MAX;
    constexpr uint64_t kOpen = UINT64_MAX - 1; // a freed job opens again
    std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> q;
    uint64_t seq = 0;
    for (uint32_t i = 0; i < spec.jobs; ++i) {
        const JobInfo info{jobs[i].jid, jobs[i].members, jobs[i].members, jobs[i].window,
                           jobs[i].tenant};
        ref.on_job_created(info);
        impl.on_job_created(info);
        const int64_t start = jobs[i].grid
                                  ? 1000000 * int64_t{rng.below(20)}
                                  : int64_t{rng.below(static_cast<uint32_t>(spec.period_ns))};
        q.emplace(start, seq++, i, kArrive);
    }
    Seen seen;
    int64_t last_arrival = -1;
    auto same_ahead = [&](uint32_t jid, uint32_t window) {
        const uint32_t a = ref.ahead(jid, window);
        const uint32_t b = impl.ahead(jid, window);
        ck_assert_msg(a == b, "ahead(%u, %u): reference %u, policy %u", jid, window, a, b);
        (a == 1 ? seen.ahead_one : seen.ahead_more) += 1;
    };
    uint64_t calls = 0;
    while (calls < spec.calls && !q.empty()) {
        const auto [t, s, i, what] = q.top();
        q.pop();
        now = t0 + std::chrono::nanoseconds(t);
        Job &j = jobs[i];
        if (what == kOpen) {
            // Open again, perhaps for another tenant or window.
            if (rng.one_in(2)) {
                j.tenant = 1 + rng.below(spec.tenants);
            }
            j.call_tenant = j.tenant;
            j.window = std::min(windows[rng.below(7)], spec.segs);
            j.live = true;
            const JobInfo info{j.jid, j.members, j.members, j.window, j.tenant};
            ref.on_job_created(info);
            impl.on_job_created(info);
            q.emplace(t + j.period, seq++, i, kArrive);
            continue;
        }
        if (what != kArrive) {
            auto it = j.open.find(what);
            ref.on_call_done(j.jid, what, it->second.first);
            impl.on_call_done(j.jid, what, it->second.second);
            ck_assert(it->second.first.empty() && it->second.second.empty());
            j.open.erase(it);
            if (check) {
                check();
            }
            if (!j.live && j.open.empty()) {
                // Its last call is done: now it may be freed.
                ref.on_job_freed(j.jid);
                impl.on_job_freed(j.jid);
                ++seen.freed;
                q.emplace(t + 20 * j.period, seq++, i, kOpen);
            }
            continue;
        }
        if (!j.live) {
            continue; // waiting for its calls to end before it is freed
        }
        if (t == last_arrival) {
            ++seen.ties;
        }
        last_arrival = t;
        ++calls;
        // Now and then a job's calls name another tenant than its JOB_OPEN
        // (and then go back to it).
        if (rng.one_in(400)) {
            j.call_tenant = j.call_tenant == j.tenant ? 1 + rng.below(spec.tenants) : j.tenant;
        }
        CallRequest req{j.jid,      j.mid,        j.window,  j.bytes / 4, INA_COLL_ALLREDUCE,
                        INA_OP_SUM, INA_DT_INT32, j.members, 0,           j.call_tenant};
        if (rng.one_in(5)) {
            req.coll = INA_COLL_ALLGATHER;
        }
        req.min_window = 1 + rng.below(j.window);
        Verdict a = ref.decide(req);
        Verdict b = impl.decide(req);
        ck_assert_msg(a.kind == b.kind && a.status == b.status,
                      "call %llu of job %u at %lld ns: reference %d/%d, policy %d/%d",
                      static_cast<unsigned long long>(j.mid), j.jid, static_cast<long long>(t),
                      static_cast<int>(a.kind), a.status, static_cast<int>(b.kind), b.status);
        ck_assert(a.lease == b.lease);
        if (a.kind == Verdict::Kind::kGrant) {
            ++seen.granted;
            // Held for its bytes at 1 ns each, give or take half; now and
            // then aborted at once.
            const int64_t hold =
                rng.one_in(20)
                    ? 0
                    : static_cast<int64_t>(j.bytes) / 2 +
                          static_cast<int64_t>(rng.below(static_cast<uint32_t>(j.bytes)));
            j.open.emplace(j.mid, std::make_pair(std::move(a.lease), std::move(b.lease)));
            q.emplace(t + hold, seq++, i, j.mid);
        } else {
            ++seen.denied[a.status];
        }
        same_ahead(j.jid, j.window);
        // `ahead` for any job (known or not) and any window, the pool's size
        // and beyond included.
        const uint32_t other = rng.one_in(10) ? 1 + rng.below(50) : jobs[rng.below(spec.jobs)].jid;
        same_ahead(other, 1 + rng.below(spec.segs + 8));
        same_ahead(other, UINT32_MAX - rng.below(4));
        if (check) {
            check();
        }
        ++j.mid;
        // The next call: a phase change, a long silence, or the period
        // (jittered unless on the grid); or the job ends and opens again.
        if (rng.one_in(60)) {
            j.period = std::clamp<int64_t>(j.period / 2 * (1 + rng.below(4)), j.grid ? 1000000 : 1,
                                           1000000000);
            if (j.grid) {
                j.period = j.period / 1000000 * 1000000;
            }
        }
        int64_t gap = j.period;
        if (rng.one_in(150)) {
            gap *= 30; // quiet for a while: its deadline passes
        } else if (rng.one_in(8)) {
            gap = 0; // back to back (a burst; an overlap with its own call)
        } else if (!j.grid) {
            gap += static_cast<int64_t>(rng.below(static_cast<uint32_t>(j.period / 4 + 1))) -
                   j.period / 8;
        }
        if (rng.one_in(300)) {
            j.live = false; // freed once its open calls are done
            if (j.open.empty()) {
                ref.on_job_freed(j.jid);
                impl.on_job_freed(j.jid);
                ++seen.freed;
                q.emplace(t + 20 * j.period, seq++, i, kOpen);
            }
            continue;
        }
        q.emplace(t + std::max<int64_t>(gap, 0), seq++, i, kArrive);
    }
    // Whatever is open ends; both pools whole again.
    for (Job &j : jobs) {
        for (auto &[mid, leases] : j.open) {
            ref.on_call_done(j.jid, mid, leases.first);
            impl.on_call_done(j.jid, mid, leases.second);
        }
    }
    ck_assert_uint_eq(ref_pool.free_segs(), ref_pool.size());
    ck_assert_uint_eq(impl_pool.free_segs(), impl_pool.size());
    return seen;
}

TdmConfig tdm_config()
{
    TdmConfig cfg;
    cfg.host.alpha = 10e-6;
    cfg.ageing = 0.5;
    cfg.quiet = 0.05;
    return cfg;
}

void replay_tdm(const TraceSpec &spec, const TdmConfig &cfg, Seen &seen)
{
    SegPool ref_pool(spec.segs, 64), impl_pool(spec.segs, 64);
    Clock::time_point now{};
    RefTdm ref(ref_pool, cfg, [&now] { return now; });
    ina::sched::TdmScheduler impl(impl_pool, cfg, [&now] { return now; });
    seen = replay(spec, now, ref, ref_pool, impl, impl_pool,
                  [&] { ck_assert(ref.rate() == impl.rate()); });
}

} // namespace

// tdm: many tenants on a pool of a few windows, so that every rule decides
// often (BUSY, OUTSCORED, NO_RESOURCES, grants beside another tenant's).
START_TEST(test_tdm_matches_reference)
{
    const TraceSpec specs[] = {
        {40, 300, 128, 30000, 1, 2000000}, // 2..8 ms periods
        {200, 400, 64, 30000, 2, 500000},  // crowded: 0.5..2 ms
        {5, 60, 256, 20000, 3, 10000000},  // few tenants, many jobs each
    };
    Seen total;
    for (const TraceSpec &spec : specs) {
        Seen seen;
        replay_tdm(spec, tdm_config(), seen);
        total.granted += seen.granted;
        for (const auto &[st, n] : seen.denied) {
            total.denied[st] += n;
        }
        total.ahead_one += seen.ahead_one;
        total.ahead_more += seen.ahead_more;
        total.freed += seen.freed;
        total.ties += seen.ties;
    }
    // The traces reached every case.
    ck_assert_uint_gt(total.granted, 1000);
    ck_assert_uint_gt(total.denied[INA_PROTO_ERR_BUSY], 100);
    ck_assert_uint_gt(total.denied[INA_PROTO_ERR_OUTSCORED], 100);
    ck_assert_uint_gt(total.denied[INA_PROTO_ERR_NO_RESOURCES], 10);
    ck_assert_uint_gt(total.ahead_one, 1000);
    ck_assert_uint_gt(total.ahead_more, 1000);
    ck_assert_uint_gt(total.freed, 50);
    ck_assert_uint_gt(total.ties, 100);
}
END_TEST

// tdm with a clock step of whole milliseconds everywhere and a quiet time
// of the same grain: deadlines (next arrival + lateness, last + quiet) fall
// on the instant of a call.
START_TEST(test_tdm_matches_reference_on_a_grid)
{
    TdmConfig cfg = tdm_config();
    cfg.quiet = 0.004;
    Seen seen;
    replay_tdm({30, 120, 64, 20000, 4, 1000000}, cfg, seen);
    ck_assert_uint_gt(seen.granted, 1000);
    ck_assert_uint_gt(seen.denied[INA_PROTO_ERR_OUTSCORED], 10);
}
END_TEST

START_TEST(test_partition_matches_reference)
{
    for (const TraceSpec &spec :
         {TraceSpec{40, 300, 128, 30000, 5, 2000000}, TraceSpec{200, 400, 64, 30000, 6, 500000}}) {
        for (auto idle : {std::chrono::milliseconds(0), std::chrono::milliseconds(3),
                          std::chrono::milliseconds(50)}) {
            SegPool ref_pool(spec.segs, 64), impl_pool(spec.segs, 64);
            Clock::time_point now{};
            RefPartition ref(ref_pool, idle, [&now] { return now; });
            ina::sched::PartitionScheduler impl(impl_pool, idle, [&now] { return now; });
            Seen seen = replay(spec, now, ref, ref_pool, impl, impl_pool, [&] {
                ck_assert_uint_eq(ref.active(), impl.active());
                ck_assert_uint_eq(ref.share(), impl.share());
            });
            ck_assert_uint_gt(seen.granted, 1000);
            ck_assert_uint_gt(seen.denied[INA_PROTO_ERR_NO_RESOURCES], 100);
            ck_assert_uint_gt(seen.freed, 50);
        }
    }
}
END_TEST

START_TEST(test_exclusive_matches_reference)
{
    for (auto idle : {std::chrono::milliseconds(0), std::chrono::milliseconds(2)}) {
        const TraceSpec spec{40, 300, 128, 30000, 7, 2000000};
        SegPool ref_pool(spec.segs, 64), impl_pool(spec.segs, 64);
        Clock::time_point now{};
        RefExclusive ref(ref_pool, idle, [&now] { return now; });
        ina::sched::ExclusiveScheduler impl(impl_pool, idle, [&now] { return now; });
        Seen seen = replay(spec, now, ref, ref_pool, impl, impl_pool,
                           [&] { ck_assert_uint_eq(ref.holder(), impl.holder()); });
        ck_assert_uint_gt(seen.granted, 500);
        ck_assert_uint_gt(seen.denied[INA_PROTO_ERR_BUSY], 1000);
        ck_assert_uint_gt(seen.freed, 50);
    }
}
END_TEST

int main()
{
    return ina_test::run_suite("sched_reference", "reference",
                               {test_tdm_matches_reference, test_tdm_matches_reference_on_a_grid,
                                test_partition_matches_reference,
                                test_exclusive_matches_reference});
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Time-division policy (see tdm.h).
#include "sched/tdm.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <tuple>
#include <utility>

namespace ina::sched {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
} // namespace

TdmScheduler::TdmScheduler(agg::SegPool &pool, const TdmConfig &cfg, Now now)
    : pool_(pool), cfg_(cfg), now_(std::move(now)), epoch_(now_()), need_(pool.seg_bytes())
{
}

double TdmScheduler::now_s() const
{
    return std::chrono::duration<double>(now_() - epoch_).count();
}

TdmScheduler::JobState &TdmScheduler::job(uint32_t jid, uint32_t nmembers)
{
    JobState &j = jobs_[jid];
    j.id = jid;
    j.nmembers = nmembers;
    if (j.tenant == 0) {
        j.tenant = (uint64_t{1} << 63) | jid; // until its first call says
        j.since_probe = cfg_.probe_every;     // auto: a new job may probe at once
    }
    return j;
}

double TdmScheduler::rate() const
{
    return rate_.samples() > 0 ? rate_.mean() : cfg_.initial_rate;
}

double TdmScheduler::beta() const
{
    return cfg_.host.beta > 0 ? cfg_.host.beta : rate();
}

double TdmScheduler::hold(const JobState &j, double bytes) const
{
    if (cfg_.by_need) {
        // Auto: a job's past holds were on leases of other sizes; what it
        // needs says how long this one's will be.
        const double h = need_.hold(j.id, j.window, bytes);
        if (h >= 0) {
            return h;
        }
    }
    const double h = j.pattern.hold_for(bytes);
    return h >= 0 ? h : bytes * rate() + cfg_.host.alpha;
}

double TdmScheduler::host_cost(const JobState &j, uint8_t coll, double bytes) const
{
    const double model = host_time(coll, bytes, j.nmembers, cfg_.host.alpha, beta());
    return cfg_.host_hints ? j.host.cost(coll, bytes, model) : model;
}

double TdmScheduler::host_cost(uint32_t jid, uint8_t coll, double bytes) const
{
    auto it = jobs_.find(jid);
    return it != jobs_.end() ? host_cost(it->second, coll, bytes) : -1;
}

double TdmScheduler::score(const JobState &j, uint8_t coll, double bytes) const
{
    return calc_score(host_cost(j, coll, bytes), hold(j, bytes), j.denied, cfg_.ageing);
}

agg::Verdict TdmScheduler::deny(JobState &j, ina_proto_status_t why)
{
    ++j.denied;
    return agg::Verdict::deny(why);
}

uint32_t TdmScheduler::divided_lease(uint32_t jid, uint64_t tenant, uint32_t extra) const
{
    // Tenants with a job open, this one's counted whether or not it is yet.
    const uint64_t tenants = tenants_.size() + (tenants_.count(tenant) == 0 ? 1 : 0) + extra;
    const uint64_t spare = (pool_.size() - need_.total()) / tenants;
    return static_cast<uint32_t>(std::min<uint64_t>(need_.need(jid) + spare, pool_.size()));
}

uint32_t TdmScheduler::lease_size(uint32_t jid, JobState &j, const agg::CallRequest &req,
                                  uint64_t tenant, double bytes)
{
    if (!cfg_.by_need) {
        return req.window;
    }
    const uint32_t least = std::max(1u, req.min_window);
    j.probe = 0;
    if (!dividing()) {
        // Time divided: what the job needs (its window until a large call
        // said less), but every `probe_every`-th call half of it, short
        // enough for the call to teach: does it need all of it (a probe
        // down)? Once a probe streamed as fast, the next call probes again.
        const uint32_t need = std::clamp(need_.need(jid), least, std::max(least, req.window));
        if (need_.line() > 0 && ++j.since_probe >= cfg_.probe_every) {
            const uint32_t down = std::max(least, std::min(need / 2, need_.teaching_lease(bytes)));
            if (down < need) {
                j.probe = down;
                return down;
            }
        }
        return need;
    }
    const uint32_t lease =
        std::clamp(divided_lease(jid, tenant, 0), least, std::max(least, req.window));
    if (lease >= req.window) {
        return lease;
    }
    // A probe: would a longer lease stream faster?
    const uint32_t free = pool_.free_segs();
    const uint32_t longer = std::min(req.window, 2 * lease);
    if (need_.longest(jid) < longer && ++j.since_probe >= cfg_.probe_every && free >= longer) {
        j.probe = std::min(req.window, free);
        return j.probe;
    }
    return lease;
}

double TdmScheduler::busy_for(uint64_t tenant, double now) const
{
    for (auto e = ends_.rbegin(); e != ends_.rend(); ++e) {
        if (e->second != tenant) {
            return std::max(0.0, e->first - now);
        }
    }
    return 0;
}

agg::Verdict TdmScheduler::grant(const agg::CallRequest &req, JobState &j, uint32_t want,
                                 double now, double bytes)
{
    // The grant's records first: once the lease is taken nothing may throw,
    // or a std::bad_alloc (which the agent survives) would lose its Segs.
    const auto end = ends_.emplace(now + hold(j, bytes), j.tenant);
    std::map<uint64_t, Granted>::iterator rec;
    bool fresh;
    try {
        std::tie(rec, fresh) = j.granted.try_emplace(req.mid);
    } catch (...) {
        ends_.erase(end);
        throw;
    }
    auto undo = [&] {
        ends_.erase(end);
        if (fresh) {
            j.granted.erase(rec);
        }
    };
    std::vector<uint32_t> lease;
    bool taken;
    try {
        taken = pool_.acquire(want, lease);
    } catch (...) {
        undo();
        throw;
    }
    if (!taken) {
        undo();
        return deny(j, INA_PROTO_ERR_NO_RESOURCES); // its own calls fill the pool
    }
    if (!fresh) {
        ends_.erase(rec->second.end); // (granted twice: the core never asks so)
    }
    set_open(j, j.open + 1);
    j.denied = 0;
    if (j.probe != 0 && want == j.probe) {
        j.since_probe = 0; // (a probe denied is asked again by the next call)
        j.probe = 0;
    }
    rec->second = Granted{now, bytes, end};
    return agg::Verdict::grant(std::move(lease));
}

agg::Verdict TdmScheduler::serve_waiting(const agg::CallRequest &req, JobState &j,
                                         WaitLine<Waiting>::iterator w, double now)
{
    const Waiting &mine = *w;
    if (waiting_.first(w) && pool_.free_segs() >= mine.lease) {
        agg::Verdict v = grant(req, j, mine.lease, now, mine.bytes); // (the pool has it)
        if (v.kind == agg::Verdict::Kind::kGrant) {
            waiting_.erase(req.jid, req.mid);
        }
        return v;
    }
    if (now - mine.since > cfg_.wait_limit * mine.host) {
        waiting_.erase(req.jid, req.mid);
        return deny(j, INA_PROTO_ERR_BUSY); // misjudged: the hosts after all
    }
    return agg::Verdict::defer();
}

agg::Verdict TdmScheduler::wait_or_deny(const agg::CallRequest &req, JobState &j, uint32_t want,
                                        double now, double bytes)
{
    if (cfg_.wait) {
        // The hosts' cost is the model's until the job's members measured
        // it: a job's first large call of a size that finds the pool held
        // goes there once, and its wait is judged by a measure from then on.
        if (cfg_.host_hints && bytes >= kRateMinBytes && j.denied < cfg_.wait_after_denied &&
            j.host.probe(req.coll, bytes)) {
            return deny(j, INA_PROTO_ERR_BUSY);
        }
        const double host = host_cost(j, req.coll, bytes);
        const double mine = hold(j, bytes);
        if (busy_for(j.tenant, now) + waiting_.hold() + mine < host ||
            j.denied >= cfg_.wait_after_denied) {
            waiting_.push(Waiting{req.jid, req.mid, want, mine, now, host, bytes});
            return agg::Verdict::defer();
        }
    }
    return deny(j, INA_PROTO_ERR_BUSY);
}

agg::Verdict TdmScheduler::decide(const agg::CallRequest &req)
{
    const double now = now_s();
    JobState &me = job(req.jid, req.nmembers);
    if (req.asked > 0) {
        auto w = waiting_.find(req.jid, req.mid);
        if (w != waiting_.end()) {
            return serve_waiting(req, me, w, now);
        }
    }
    const uint64_t tenant = agg::tenant_key(req);
    const double bytes = static_cast<double>(req.total) * ina_proto_dtype_size(req.dtype);
    if (cfg_.by_need) {
        need_.asked(req.jid, req.window, bytes);
    }
    const uint32_t want = lease_size(req.jid, me, req, tenant, bytes);
    // Same tenant and lease (every call but the first, and auto's when the
    // lease changes): its entries move.
    const bool moved = !me.in.counted || me.in.tenant != tenant || me.in.window != want;
    if (moved) {
        unindex(me);
    }
    me.window = want;
    me.asked = req.window;
    me.tenant = tenant;
    me.pattern.arrived(now, bytes, req.coll);
    try {
        if (moved) {
            index(req.jid, me);
        } else {
            refresh(req.jid, me);
        }
    } catch (...) {
        unindex(me); // out of all of them until its next call, not half in
        throw;
    }

    // Calls that wait go first: a new one waits behind them or goes to the
    // hosts.
    if (!waiting_.empty()) {
        return wait_or_deny(req, me, want, now, bytes);
    }
    // The resource is the pool: what is left of it once this call has its
    // lease. Only a tenant that would not fit beside this call competes.
    const uint32_t free = pool_.free_segs();
    const uint32_t left = free >= want ? free - want : 0;
    // 1. Another tenant's call holds the agent (this one does not fit beside
    //    it): the open calls of all tenants but this one's.
    if (free < want && open_total_ > me.in.load->open) {
        return wait_or_deny(req, me, want, now, bytes);
    }
    // Waiting calls take the agent in turn: a call that is here is granted,
    // and a predicted one waits behind it if that beats the hosts when it
    // comes (denying the one here for it would send it to the hosts).
    if (cfg_.wait) {
        return grant(req, me, want, now, bytes);
    }
    // 2./3. Calls of other tenants predicted while this one would run, that
    // would not fit beside it: the first in score order takes the agent.
    // This call loses if any of them goes before it (whichever is first of
    // all of them, it is not this one), so the first found decides. A job is
    // predicted here if its next arrival t lies in [now - its lateness,
    // until]: none before now - the largest lateness of all (less the
    // rounding, predictor.h).
    const double until = now + hold(me, bytes);
    const Contender mine{req.jid, score(me, req.coll, bytes), me.denied, true};
    if (!lateness_.empty()) {
        const double from = earliest_expected_arrival(now, *lateness_.rbegin());
        for (auto it = by_arrival_.lower_bound({from, 0}); it != by_arrival_.end(); ++it) {
            const double t = it->first.first;
            if (t > until) {
                break; // not during this call, nor any after it in the index
            }
            const JobState &other = *it->second;
            const CallPattern &p = other.pattern;
            if (other.tenant == me.tenant || other.window <= left || t + p.lateness() < now) {
                continue; // one application's, fits beside it, or too late to be expected
            }
            const Contender c{it->first.second, score(other, p.last_coll(), p.next_bytes()),
                              other.denied, false};
            if (before(c, mine)) {
                return deny(me, INA_PROTO_ERR_OUTSCORED);
            }
        }
    }
    return grant(req, me, want, now, bytes);
}

void TdmScheduler::on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease)
{
    waiting_.erase(jid, mid); // (one that waited and ended without a grant)
    auto it = jobs_.find(jid);
    if (it != jobs_.end()) {
        JobState &j = it->second;
        auto g = j.granted.find(mid);
        if (g != j.granted.end()) {
            const double secs = now_s() - g->second.start;
            const double bytes = g->second.bytes;
            j.pattern.held(secs, bytes);
            if (bytes >= kRateMinBytes) {
                rate_.add(secs / bytes);
            }
            if (cfg_.by_need) {
                const uint32_t was = need_.need(jid);
                need_.observe(jid, j.asked, static_cast<uint32_t>(lease.size()), bytes, secs);
                if (need_.need(jid) < was) {
                    j.since_probe = cfg_.probe_every; // it may need less still
                }
            }
            ends_.erase(g->second.end);
            j.granted.erase(g);
            set_open(j, j.open > 0 ? j.open - 1 : 0);
        }
    }
    pool_.release(lease);
    lease.clear();
}

void TdmScheduler::on_host_cost(uint32_t jid, uint8_t coll, uint64_t bytes, double secs)
{
    auto it = jobs_.find(jid);
    if (it != jobs_.end()) {
        it->second.host.add(coll, static_cast<double>(bytes), secs);
    }
}

void TdmScheduler::on_job_created(const agg::JobInfo &info)
{
    JobState &j = job(info.jid, info.nmembers);
    unindex(j);
    j.window = info.window;
    j.asked = info.window;
    j.tenant = agg::tenant_key(info);
    index(info.jid, j);
}

uint32_t TdmScheduler::ahead(uint32_t jid, uint32_t window) const
{
    auto me = jobs_.find(jid);
    const uint64_t tenant = me != jobs_.end() ? me->second.tenant : agg::tenant_key(0, jid);
    if (cfg_.by_need && dividing()) {
        // The lease it would get with one tenant more: what a word told now
        // still fits when the next call comes. The rest as for any lease.
        window = std::clamp<uint32_t>(divided_lease(jid, tenant, 1), 1, window);
    }
    const double now = now_s();
    // Another tenant's job that would not fit beside this one, open or
    // expected: per window that does not fit, the tenant whose jobs count
    // the longest, or the next one if that is this job's own.
    for (auto g = expected_.rbegin(); g != expected_.rend(); ++g) {
        const uint32_t other = g->first;
        if (uint64_t{other} + window <= pool_.size()) {
            break; // this window fits beside it, and so do all smaller ones
        }
        if (other + window <= pool_.size()) {
            continue; // the 32-bit sum wraps: it counts as fitting, as it always did
        }
        const auto &latest = g->second.latest;
        auto top = latest.rbegin();
        if (top != latest.rend() && top->second == tenant) {
            ++top;
        }
        if (top != latest.rend() && now <= top->first) {
            return 1;
        }
    }
    return window;
}

void TdmScheduler::on_job_freed(uint32_t jid)
{
    auto it = jobs_.find(jid);
    if (it != jobs_.end()) {
        unindex(it->second);
        jobs_.erase(it);
    }
    need_.forget(jid);
}

double TdmScheduler::expected_until(const JobState &j) const
{
    return j.open > 0 ? kInf : j.pattern.expected_until(cfg_.quiet);
}

void TdmScheduler::index(uint32_t jid, JobState &j)
{
    Entries &in = j.in;
    try {
        TenantLoad &load = tenants_[j.tenant];
        ++load.jobs;
        load.open += j.open;
        open_total_ += j.open;
        in.counted = true;
        in.tenant = j.tenant;
        in.window = j.window;
        in.load = &load;
        if (j.pattern.predictable()) {
            add_arrival(jid, j);
        }
        add_expected(j);
    } catch (...) {
        unindex(j);
        throw;
    }
}

void TdmScheduler::unindex(JobState &j) noexcept
{
    Entries &in = j.in;
    remove_arrival(j);
    remove_expected(j);
    if (in.counted) {
        in.load->open -= j.open;
        open_total_ -= j.open;
        if (--in.load->jobs == 0) {
            tenants_.erase(in.tenant);
        }
        in.counted = false;
        in.load = nullptr;
    }
}

void TdmScheduler::refresh(uint32_t jid, JobState &j)
{
    Entries &in = j.in;
    const CallPattern &p = j.pattern;
    if (in.arriving && p.predictable()) {
        // Re-key the nodes it has: no allocation.
        auto a = by_arrival_.extract(in.arrival);
        a.key() = {p.next_arrival(), jid};
        in.arrival = by_arrival_.insert(std::move(a)).position;
        auto l = lateness_.extract(in.lateness);
        l.value() = p.lateness();
        in.lateness = lateness_.insert(std::move(l));
    } else if (p.predictable()) {
        add_arrival(jid, j);
    } else {
        remove_arrival(j);
    }
    move_expected(j);
}

void TdmScheduler::set_open(JobState &j, uint32_t open) noexcept
{
    if (j.in.counted) {
        j.in.load->open = j.in.load->open - j.open + open;
        open_total_ = open_total_ - j.open + open;
    }
    j.open = open;
    move_expected(j);
}

void TdmScheduler::add_arrival(uint32_t jid, JobState &j)
{
    const CallPattern &p = j.pattern;
    const auto a = by_arrival_.emplace(std::make_pair(p.next_arrival(), jid), &j).first;
    try {
        j.in.lateness = lateness_.insert(p.lateness());
    } catch (...) {
        by_arrival_.erase(a);
        throw;
    }
    j.in.arrival = a;
    j.in.arriving = true;
}

void TdmScheduler::remove_arrival(JobState &j) noexcept
{
    if (j.in.arriving) {
        by_arrival_.erase(j.in.arrival);
        lateness_.erase(j.in.lateness);
        j.in.arriving = false;
    }
}

void TdmScheduler::add_expected(JobState &j)
{
    Entries &in = j.in;
    const double until = expected_until(j);
    const auto g = expected_.try_emplace(j.window).first;
    ExpectedWindow &group = g->second;
    try {
        const auto [m, fresh] = group.until.try_emplace(j.tenant);
        std::multiset<double> &mine = m->second;
        try {
            const double latest = fresh ? -kInf : *mine.rbegin();
            const auto u = mine.insert(until);
            if (fresh) {
                try {
                    group.latest.emplace(until, j.tenant);
                } catch (...) {
                    mine.erase(u);
                    throw;
                }
            } else if (until > latest) {
                auto n = group.latest.extract({latest, j.tenant});
                n.value().first = until;
                group.latest.insert(std::move(n));
            }
            in.until = u;
        } catch (...) {
            if (mine.empty()) {
                group.until.erase(m);
            }
            throw;
        }
        in.mine = &mine;
    } catch (...) {
        if (group.until.empty()) {
            expected_.erase(g);
        }
        throw;
    }
    in.group = &group;
    in.expecting = true;
}

void TdmScheduler::remove_expected(JobState &j) noexcept
{
    Entries &in = j.in;
    if (!in.expecting) {
        return;
    }
    in.expecting = false;
    ExpectedWindow &group = *in.group;
    std::multiset<double> &mine = *in.mine;
    const double latest = *mine.rbegin();
    mine.erase(in.until);
    if (mine.empty()) {
        group.latest.erase({latest, in.tenant});
        group.until.erase(in.tenant);
        if (group.until.empty()) {
            expected_.erase(in.window);
        }
    } else if (*mine.rbegin() != latest) {
        auto n = group.latest.extract({latest, in.tenant});
        n.value().first = *mine.rbegin();
        group.latest.insert(std::move(n));
    }
    in.group = nullptr;
    in.mine = nullptr;
}

void TdmScheduler::move_expected(JobState &j) noexcept
{
    Entries &in = j.in;
    if (!in.expecting) {
        return;
    }
    std::multiset<double> &mine = *in.mine;
    const double latest = *mine.rbegin();
    auto u = mine.extract(in.until);
    u.value() = expected_until(j);
    in.until = mine.insert(std::move(u));
    if (*mine.rbegin() != latest) {
        auto n = in.group->latest.extract({latest, in.tenant});
        n.value().first = *mine.rbegin();
        in.group->latest.insert(std::move(n));
    }
}

std::vector<uint32_t> TdmScheduler::priority() const
{
    std::vector<Contender> c;
    for (const auto &[jid, j] : jobs_) {
        if (j.pattern.predictable()) {
            const CallPattern &p = j.pattern;
            c.push_back(Contender{jid, score(j, p.last_coll(), p.next_bytes()), j.denied, false});
        }
    }
    std::sort(c.begin(), c.end(), before);
    std::vector<uint32_t> order;
    for (const Contender &x : c) {
        order.push_back(x.jid);
    }
    return order;
}

const CallPattern *TdmScheduler::pattern(uint32_t jid) const
{
    auto it = jobs_.find(jid);
    return it != jobs_.end() ? &it->second.pattern : nullptr;
}

} // namespace ina::sched

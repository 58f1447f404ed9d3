// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Time-division policy (see tdm.h).
#include "sched/tdm.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace ina::sched {

namespace {
// Calls from this size on teach the agent its rate (smaller ones measure
// latency, not bytes per second).
constexpr double kRateMinBytes = 64 * 1024;
} // namespace

TdmScheduler::TdmScheduler(agg::SegPool &pool, const TdmConfig &cfg, Now now)
    : pool_(pool), cfg_(cfg), now_(std::move(now)), epoch_(now_())
{
}

double TdmScheduler::now_s() const
{
    return std::chrono::duration<double>(now_() - epoch_).count();
}

TdmScheduler::JobState &TdmScheduler::job(uint32_t jid, uint32_t nmembers)
{
    JobState &j = jobs_[jid];
    j.nmembers = nmembers;
    if (j.tenant == 0) {
        j.tenant = (uint64_t{1} << 63) | jid; // until its first call says
    }
    return j;
}

double TdmScheduler::rate() const
{
    return rate_.samples() > 0 ? rate_.mean() : cfg_.initial_rate;
}

double TdmScheduler::beta() const { return cfg_.host.beta > 0 ? cfg_.host.beta : rate(); }

double TdmScheduler::hold(const JobState &j, double bytes) const
{
    const double h = j.pattern.hold_for(bytes);
    return h >= 0 ? h : bytes * rate() + cfg_.host.alpha;
}

double TdmScheduler::score(const JobState &j, uint8_t coll, double bytes) const
{
    const double host = host_time(coll, bytes, j.nmembers, cfg_.host.alpha, beta());
    return calc_score(host, hold(j, bytes), j.denied, cfg_.ageing);
}

agg::Verdict TdmScheduler::deny(JobState &j, ina_proto_status_t why)
{
    ++j.denied;
    return agg::Verdict::deny(why);
}

agg::Verdict TdmScheduler::decide(const agg::CallRequest &req)
{
    const double now = now_s();
    JobState &me = job(req.jid, req.nmembers);
    me.window = req.window;
    me.tenant = agg::tenant_key(req);
    const double bytes = static_cast<double>(req.total) * ina_proto_dtype_size(req.dtype);
    me.pattern.arrived(now, bytes, req.coll);

    // The resource is the pool: what is left of it once this call has its
    // lease. Only a tenant that would not fit beside this call competes.
    const uint32_t free = pool_.free_segs();
    const uint32_t left = free >= req.window ? free - req.window : 0;
    // 1. Another tenant's call holds the agent (this one does not fit beside it).
    for (const auto &[jid, other] : jobs_) {
        if (other.tenant != me.tenant && other.open > 0 && free < req.window) {
            return deny(me, INA_PROTO_ERR_BUSY);
        }
    }
    // 2./3. Calls of other tenants predicted while this one would run, that
    // would not fit beside it: the first in score order takes the agent.
    const double until = now + hold(me, bytes);
    Contender best{req.jid, score(me, req.coll, bytes), me.denied, true};
    for (const auto &[jid, other] : jobs_) {
        const CallPattern &p = other.pattern;
        if (other.tenant == me.tenant || !p.predictable() || other.window <= left) {
            continue;
        }
        const double t = p.next_arrival();
        if (t > until || t + p.lateness() < now) {
            continue; // not during this call, or too late to be expected
        }
        const Contender c{jid, score(other, p.last_coll(), p.next_bytes()), other.denied, false};
        if (before(c, best)) {
            best = c;
        }
    }
    if (best.jid != req.jid) {
        return deny(me, INA_PROTO_ERR_OUTSCORED);
    }
    // The grant's record first: once the lease is taken nothing may throw,
    // or a std::bad_alloc (which the agent survives) would lose its Segs.
    const auto [rec, fresh] = me.granted.try_emplace(req.mid);
    std::vector<uint32_t> lease;
    if (!pool_.acquire(req.window, lease)) {
        if (fresh) {
            me.granted.erase(rec);
        }
        return deny(me, INA_PROTO_ERR_NO_RESOURCES); // its own calls fill the pool
    }
    ++me.open;
    me.denied = 0;
    rec->second = {now, bytes};
    return agg::Verdict::grant(std::move(lease));
}

void TdmScheduler::on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease)
{
    auto it = jobs_.find(jid);
    if (it != jobs_.end()) {
        JobState &j = it->second;
        auto g = j.granted.find(mid);
        if (g != j.granted.end()) {
            const double secs = now_s() - g->second.first;
            const double bytes = g->second.second;
            j.pattern.held(secs, bytes);
            if (bytes >= kRateMinBytes) {
                rate_.add(secs / bytes);
            }
            j.granted.erase(g);
            j.open = j.open > 0 ? j.open - 1 : 0;
        }
    }
    pool_.release(lease);
    lease.clear();
}

void TdmScheduler::on_job_created(const agg::JobInfo &info)
{
    JobState &j = job(info.jid, info.nmembers);
    j.window = info.window;
    j.tenant = agg::tenant_key(info);
}

uint32_t TdmScheduler::ahead(uint32_t jid, uint32_t window) const
{
    auto me = jobs_.find(jid);
    const uint64_t tenant = me != jobs_.end() ? me->second.tenant : agg::tenant_key(0, jid);
    const double now = now_s();
    for (const auto &[other_jid, other] : jobs_) {
        if (other.tenant == tenant || other.window + window <= pool_.size()) {
            continue; // one application's, or fits beside it
        }
        if (other.open > 0 || other.pattern.expected(now, cfg_.quiet)) {
            return 1;
        }
    }
    return window;
}

void TdmScheduler::on_job_freed(uint32_t jid) { jobs_.erase(jid); }

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

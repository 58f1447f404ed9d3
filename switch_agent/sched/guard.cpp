// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The harm guard around a policy (see guard.h).
#include "sched/guard.h"

#include <algorithm>
#include <cinttypes>
#include <utility>

#include "log.h"

namespace ina::sched {

HarmGuard::HarmGuard(agg::SegPool &pool, std::unique_ptr<agg::Scheduler> policy,
                     const GuardConfig &cfg, Now now)
    : pool_(pool), policy_(std::move(policy)), cfg_(cfg), now_(std::move(now)), epoch_(now_())
{
}

double HarmGuard::now_s() const
{
    return std::chrono::duration<double>(now_() - epoch_).count();
}

HarmGuard::Job &HarmGuard::job(const agg::CallRequest &req)
{
    tenants_.set(req.jid, agg::tenant_key(req)); // (first: a std::bad_alloc changes nothing)
    Job &j = jobs_[req.jid];
    j.nmembers = req.nmembers;
    return j;
}

double HarmGuard::rate() const
{
    return rate_.samples() > 0 ? rate_.mean() : cfg_.initial_rate;
}

double HarmGuard::host_cost(const Job &j, uint8_t coll, double bytes) const
{
    const double beta = cfg_.host.beta > 0 ? cfg_.host.beta : rate();
    return j.host.cost(coll, bytes, host_time(coll, bytes, j.nmembers, cfg_.host.alpha, beta));
}

double HarmGuard::known_cost(const Job &j, uint8_t coll, double bytes) const
{
    const double m = j.host.measured(coll, bytes);
    if (cfg_.host.beta > 0) {
        // The hosts at their best: a measure taken while other jobs load
        // the hosts' cores or links is above what the job would get with
        // every job on the hosts, which the operator's model says.
        const double model = host_time(coll, bytes, j.nmembers, cfg_.host.alpha, cfg_.host.beta);
        return m >= 0 ? std::min(m, model) : model;
    }
    return m >= 0 ? host_cost(j, coll, bytes) : -1; // (kept within trust of the model)
}

double HarmGuard::judged_cost(const Job &j, uint8_t coll, double bytes) const
{
    const double known = known_cost(j, coll, bytes);
    return known >= 0 ? known : host_cost(j, coll, bytes);
}

double HarmGuard::whole_hold(const Job &j, double bytes) const
{
    const double r = j.whole.samples() > 0  ? j.whole.mean()
                     : whole_.samples() > 0 ? whole_.mean()
                                            : rate();
    return bytes * r;
}

double HarmGuard::busy_for(double now) const
{
    return ends_.empty() ? 0 : std::max(0.0, *ends_.rbegin() - now);
}

bool HarmGuard::harmed(uint32_t jid) const
{
    auto it = jobs_.find(jid);
    return it != jobs_.end() && is_harmed(it->second);
}

double HarmGuard::ledger(uint32_t jid) const
{
    auto it = jobs_.find(jid);
    return it != jobs_.end() ? it->second.ledger().excess() : 0;
}

std::optional<HarmGuard::JobView> HarmGuard::view(uint32_t jid) const
{
    auto it = jobs_.find(jid);
    if (it == jobs_.end()) {
        return std::nullopt;
    }
    const Ledger &l = it->second.ledger();
    return JobView{l.calls, l.took, l.host, is_harmed(it->second)};
}

size_t HarmGuard::harmed_jobs() const
{
    return static_cast<size_t>(std::count_if(
        jobs_.begin(), jobs_.end(), [this](const auto &e) { return is_harmed(e.second); }));
}

agg::Verdict HarmGuard::to_hosts(const agg::CallRequest &req)
{
    waiting_.erase(req.jid, req.mid);
    ++to_hosts_;
    return agg::Verdict::deny(INA_PROTO_ERR_BUSY);
}

agg::Verdict HarmGuard::serve(const agg::CallRequest &req, Job &j, double now, double bytes,
                              bool &mine)
{
    auto at = waiting_.find(req.jid, req.mid);
    const bool first = at == waiting_.end();
    const double hold = first ? whole_hold(j, bytes) : at->hold;
    const double host = judged_cost(j, req.coll, bytes);
    if ((first ? waiting_.empty() : waiting_.first(at)) && pool_.free_segs() >= req.window) {
        if (first && hold >= host) {
            return to_hosts(req); // even the whole pool is slower than the hosts
        }
        std::vector<uint32_t> lease;
        if (pool_.acquire(req.window, lease)) { // (cannot fail: the pool had it)
            waiting_.erase(req.jid, req.mid);
            mine = true;
            ++served_;
            return agg::Verdict::grant(std::move(lease));
        }
    }
    if (!first) {
        return now > at->give_up ? to_hosts(req) : agg::Verdict::defer();
    }
    // Wait if what the open calls and the calls waiting before it have left,
    // and its own hold, end before the hosts would.
    const double wait = busy_for(now) + waiting_.hold();
    if (wait + hold >= host) {
        return to_hosts(req);
    }
    waiting_.push(Waiting{req.jid, req.mid, tenants_.of(req.jid), now + (host - hold), hold});
    return agg::Verdict::defer();
}

agg::Verdict HarmGuard::decide(const agg::CallRequest &req)
{
    const double now = now_s();
    Job &j = job(req);
    const double bytes = static_cast<double>(req.total) * ina_proto_dtype_size(req.dtype);
    const Call call{req.jid, req.mid};
    const auto [at, fresh] = asked_.try_emplace(call, now);
    const double asked = at->second;
    const bool policy_deferred = deferred_.count(call) != 0;
    bool mine = false;
    agg::Verdict v = agg::Verdict::defer();
    if (fresh && shared() && bytes >= cfg_.min_bytes && j.host.probe(req.coll, bytes)) {
        // No measure of the hosts near this size: to them once, for the
        // members to measure (HOST_COST).
        ++probes_;
        v = agg::Verdict::deny(INA_PROTO_ERR_BUSY);
    } else if (!policy_deferred && (waiting_.waits(req.jid, req.mid) || is_harmed(j))) {
        v = serve(req, j, now, bytes, mine);
    } else if (!policy_deferred && !waiting_.empty() &&
               waiting_.front().tenant != tenants_.of(req.jid)) {
        // A harmed call of another tenant waits for the pool: no new call
        // takes it before that one.
        v = agg::Verdict::deny(INA_PROTO_ERR_BUSY);
    } else {
        v = policy_->decide(req);
        if (v.kind == agg::Verdict::Kind::kDefer) {
            if (!policy_deferred) {
                try {
                    deferred_.insert(call);
                } catch (...) {
                    std::vector<uint32_t> none;
                    policy_->on_call_done(req.jid, req.mid, none); // over for it
                    throw;
                }
            }
            return v;
        }
        deferred_.erase(call);
    }
    if (v.kind == agg::Verdict::Kind::kDefer) {
        return v;
    }
    asked_.erase(call);
    if (v.kind == agg::Verdict::Kind::kGrant) {
        const double r = j.rate.samples() > 0 ? j.rate.mean() : rate();
        try {
            const auto end = ends_.insert(now + bytes * r);
            try {
                granted_.emplace(call, Granted{now, asked, bytes, req.coll, mine,
                                               v.lease.size() >= req.window, end});
            } catch (...) {
                ends_.erase(end);
                throw;
            }
        } catch (...) {
            if (mine) {
                pool_.release(v.lease);
            } else {
                policy_->on_call_done(req.jid, req.mid, v.lease); // the lease goes back
            }
            throw;
        }
    } else if (shared() && bytes >= cfg_.min_bytes) {
        // Denied: on the hosts it costs its host cost; what sharing added is
        // the wait for the verdict.
        const double host = known_cost(j, req.coll, bytes);
        if (host >= 0) {
            j.seen.add(now - asked + host, host);
        }
    }
    return v;
}

uint32_t HarmGuard::ahead(uint32_t jid, uint32_t window) const
{
    // A harmed job's next call may wait for the pool: its members send one
    // block before the verdict, as to a contended agent.
    return harmed(jid) || !waiting_.empty() ? 1 : policy_->ahead(jid, window);
}

void HarmGuard::on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease)
{
    const Call call{jid, mid};
    asked_.erase(call);
    if (waiting_.waits(jid, mid)) {
        waiting_.erase(jid, mid); // ended while it waited here: not the policy's
        pool_.release(lease);
        lease.clear();
        return;
    }
    deferred_.erase(call);
    auto g = granted_.find(call);
    bool mine = false;
    if (g != granted_.end()) {
        const Granted rec = g->second;
        ends_.erase(rec.end);
        granted_.erase(g);
        mine = rec.mine;
        const double now = now_s();
        const double secs = now - rec.start;
        auto it = jobs_.find(jid);
        Job *j = it != jobs_.end() ? &it->second : nullptr;
        if (rec.bytes >= kRateMinBytes) {
            rate_.add(secs / rec.bytes);
            if (rec.whole) {
                whole_.add(secs / rec.bytes);
            }
            if (j != nullptr) {
                j->rate.add(secs / rec.bytes);
                if (rec.whole) {
                    j->whole.add(secs / rec.bytes);
                }
            }
        }
        const double host = j != nullptr && shared() && rec.bytes >= cfg_.min_bytes
                                ? known_cost(*j, rec.coll, rec.bytes)
                                : -1;
        if (host >= 0) {
            j->seen.add(now - rec.asked, host);
        }
    }
    if (mine) {
        pool_.release(lease);
        lease.clear();
        return;
    }
    policy_->on_call_done(jid, mid, lease);
}

void HarmGuard::on_job_created(const agg::JobInfo &info)
{
    tenants_.set(info.jid, agg::tenant_key(info));
    jobs_[info.jid].nmembers = info.nmembers;
    policy_->on_job_created(info);
}

void HarmGuard::on_job_freed(uint32_t jid)
{
    // The guard's verdict on the job, for the operator's log (bench/tenancy
    // keeps it with each run): what its judged calls took against the hosts.
    if (auto it = jobs_.find(jid); it != jobs_.end() && it->second.ledger().calls > 0) {
        const Ledger &l = it->second.ledger();
        INA_INFO("job %u: harm guard judged %" PRIu64
                 " calls (%s): %.3f s, %.3f s on the hosts; %s",
                 jid, l.calls, it->second.told.calls > 0 ? "the ranks' times" : "the agent's view",
                 l.took, l.host, is_harmed(it->second) ? "harmed" : "not harmed");
    }
    tenants_.erase(jid);
    jobs_.erase(jid);
    policy_->on_job_freed(jid);
}

void HarmGuard::on_host_cost(uint32_t jid, uint8_t coll, uint64_t bytes, double secs)
{
    auto it = jobs_.find(jid);
    if (it != jobs_.end()) {
        it->second.host.add(coll, static_cast<double>(bytes), secs);
    }
    policy_->on_host_cost(jid, coll, bytes, secs);
}

void HarmGuard::on_call_time(uint32_t jid, uint8_t coll, uint64_t bytes, double secs)
{
    auto it = jobs_.find(jid);
    if (it != jobs_.end() && shared()) {
        Job &j = it->second;
        const double host = known_cost(j, coll, static_cast<double>(bytes));
        if (host >= 0) {
            j.told.add(secs, host);
        }
    }
    policy_->on_call_time(jid, coll, bytes, secs);
}

} // namespace ina::sched

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The harm guard around a policy (see guard.h).
#include "sched/guard.h"

#include <algorithm>
#include <utility>

namespace ina::sched {

namespace {
bool policy_denial(ina_proto_status_t st)
{
    // The policy's choices, not the job's faults (a draining agent, an
    // incomplete job, a tree that cannot serve it deny for every policy).
    return st == INA_PROTO_ERR_BUSY || st == INA_PROTO_ERR_OUTSCORED ||
           st == INA_PROTO_ERR_NO_RESOURCES;
}
} // namespace

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
    Job &j = jobs_[req.jid];
    j.nmembers = req.nmembers;
    j.tenant = agg::tenant_key(req);
    return j;
}

double HarmGuard::host_cost(const Job &j, uint8_t coll, double bytes) const
{
    const double beta = cfg_.host.beta > 0
                            ? cfg_.host.beta
                            : (rate_.samples() > 0 ? rate_.mean() : cfg_.initial_rate);
    return j.host.cost(coll, bytes, host_time(coll, bytes, j.nmembers, cfg_.host.alpha, beta));
}

bool HarmGuard::harmed(uint32_t jid) const
{
    auto it = jobs_.find(jid);
    return it != jobs_.end() && is_harmed(it->second);
}

agg::Verdict HarmGuard::serve(const agg::CallRequest &req, Job &j, double now, double bytes)
{
    auto at = waiting_at_.find({req.jid, req.mid});
    if (at == waiting_at_.end()) {
        waiting_.push_back(
            Waiting{req.jid, req.mid, j.tenant, now, host_cost(j, req.coll, bytes)});
        try {
            at = waiting_at_.emplace(std::make_pair(req.jid, req.mid), std::prev(waiting_.end()))
                     .first;
        } catch (...) {
            waiting_.pop_back();
            throw;
        }
    }
    const Waiting &w = *at->second;
    if (at->second == waiting_.begin() && pool_.free_segs() >= req.window) {
        granted_.emplace(std::make_pair(req.jid, req.mid),
                         Granted{now, bytes, req.coll, true, false});
        std::vector<uint32_t> lease;
        if (!pool_.acquire(req.window, lease)) { // (cannot fail: the pool had it)
            granted_.erase({req.jid, req.mid});
            return agg::Verdict::defer();
        }
        forget_waiting(req.jid, req.mid);
        j.denied = 0;
        j.slow = 0;
        ++served_;
        return agg::Verdict::grant(std::move(lease));
    }
    if (now - w.since > cfg_.wait_limit * w.host) {
        forget_waiting(req.jid, req.mid);
        ++j.denied;
        return agg::Verdict::deny(INA_PROTO_ERR_BUSY); // misjudged: the hosts after all
    }
    return agg::Verdict::defer();
}

agg::Verdict HarmGuard::decide(const agg::CallRequest &req)
{
    const double now = now_s();
    Job &j = job(req);
    const double bytes = static_cast<double>(req.total) * ina_proto_dtype_size(req.dtype);
    const auto call = std::make_pair(req.jid, req.mid);
    const bool policy_deferred = deferred_.count(call) != 0;
    if (!policy_deferred && (waiting_at_.count(call) != 0 || is_harmed(j))) {
        return serve(req, j, now, bytes);
    }
    // A harmed call of another tenant waits for the pool: no new call takes
    // it before that one.
    if (!policy_deferred && !waiting_.empty() && waiting_.front().tenant != j.tenant) {
        ++j.denied;
        return agg::Verdict::deny(INA_PROTO_ERR_BUSY);
    }
    agg::Verdict v = policy_->decide(req);
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
    if (policy_deferred) {
        deferred_.erase(call);
    }
    if (v.kind == agg::Verdict::Kind::kGrant) {
        try {
            const double lease_bytes = static_cast<double>(v.lease.size()) * pool_.seg_bytes();
            granted_.emplace(call, Granted{now, bytes, req.coll, false,
                                           v.lease.size() < req.window && bytes > lease_bytes});
        } catch (...) {
            policy_->on_call_done(req.jid, req.mid, v.lease); // the lease goes back
            throw;
        }
        j.denied = 0;
    } else if (policy_denial(v.status)) {
        ++j.denied;
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
    if (waiting_at_.count({jid, mid}) != 0) {
        forget_waiting(jid, mid); // ended while it waited here: not the policy's
        pool_.release(lease);
        lease.clear();
        return;
    }
    deferred_.erase({jid, mid});
    auto g = granted_.find({jid, mid});
    bool mine = false;
    if (g != granted_.end()) {
        const Granted rec = g->second;
        granted_.erase(g);
        mine = rec.mine;
        const double secs = now_s() - rec.start;
        if (rec.bytes >= kRateMinBytes) {
            rate_.add(secs / rec.bytes);
        }
        auto it = jobs_.find(jid);
        if (it != jobs_.end()) {
            Job &j = it->second;
            // (A call the guard served had the whole window: it says
            // nothing of what the policy's leases give.)
            if (rec.short_lease) {
                const bool slow = secs > cfg_.slow * host_cost(j, rec.coll, rec.bytes);
                j.slow = slow ? j.slow + 1 : 0;
            }
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
    Job &j = jobs_[info.jid];
    j.nmembers = info.nmembers;
    j.tenant = agg::tenant_key(info);
    policy_->on_job_created(info);
}

void HarmGuard::on_job_freed(uint32_t jid)
{
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

void HarmGuard::forget_waiting(uint32_t jid, uint64_t mid) noexcept
{
    auto at = waiting_at_.find({jid, mid});
    if (at != waiting_at_.end()) {
        waiting_.erase(at->second);
        waiting_at_.erase(at);
    }
}

} // namespace ina::sched

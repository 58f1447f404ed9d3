// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Exclusive policy: one job holds the agent (see exclusive.h).
#include "sched/exclusive.h"

#include <utility>

namespace ina::sched {

agg::Verdict ExclusiveScheduler::decide(const agg::CallRequest &req)
{
    const agg::Clock::time_point now = now_();
    const uint64_t tenant = agg::tenant_key(req);
    jobs_.set(req.jid, tenant);
    if (holder_ != 0 && holder_ != tenant) {
        if (open_ > 0 || now - last_ < idle_) {
            return agg::Verdict::deny(INA_PROTO_ERR_BUSY);
        }
        holder_ = 0; // idle long enough: the agent is free again
    }
    std::vector<uint32_t> lease;
    if (!pool_.acquire(req.window, lease)) {
        // The holder's own calls overlap beyond the pool.
        return agg::Verdict::deny(INA_PROTO_ERR_NO_RESOURCES);
    }
    holder_ = tenant;
    ++open_;
    last_ = now;
    return agg::Verdict::grant(std::move(lease));
}

void ExclusiveScheduler::on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease)
{
    (void) mid;
    if (!lease.empty()) {
        // Only granted calls hold a lease, and only the holder's are granted.
        open_ = open_ > 0 ? open_ - 1 : 0;
        last_ = now_();
    }
    pool_.release(lease);
    lease.clear();
}

void ExclusiveScheduler::on_job_created(const agg::JobInfo &job)
{
    jobs_.set(job.jid, agg::tenant_key(job));
}

void ExclusiveScheduler::on_job_freed(uint32_t jid)
{
    const uint64_t tenant = jobs_.of(jid);
    jobs_.erase(jid);
    // The holder's last job is gone: the agent is free at once.
    if (tenant == holder_ && !jobs_.has_jobs(tenant)) {
        holder_ = 0;
        open_ = 0;
    }
}

uint32_t ExclusiveScheduler::ahead(uint32_t jid, uint32_t window) const
{
    const uint64_t tenant = jobs_.of(jid);
    const bool held = holder_ != 0 && (open_ > 0 || now_() - last_ < idle_);
    return held && holder_ != tenant ? 1 : window;
}

} // namespace ina::sched

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

void ExclusiveScheduler::on_job_freed(uint32_t jid)
{
    if (jid == holder_) {
        holder_ = 0;
        open_ = 0;
    }
}

} // namespace ina::sched

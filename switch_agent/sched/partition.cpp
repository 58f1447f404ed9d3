// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Space-division policy: the pool split among active tenants (see partition.h).
#include "sched/partition.h"

#include <algorithm>
#include <utility>

namespace ina::sched {

uint64_t PartitionScheduler::tenant_of(uint32_t jid) const
{
    auto it = jobs_.find(jid);
    return it != jobs_.end() ? it->second : agg::tenant_key(0, jid);
}

uint32_t PartitionScheduler::active() const
{
    const agg::Clock::time_point now = now_();
    return static_cast<uint32_t>(std::count_if(tenants_.begin(), tenants_.end(), [&](const auto &t) {
        return is_active(t.second, now);
    }));
}

uint32_t PartitionScheduler::share() const
{
    return std::max<uint32_t>(1, pool_.size() / std::max<uint32_t>(1, active()));
}

agg::Verdict PartitionScheduler::decide(const agg::CallRequest &req)
{
    const agg::Clock::time_point now = now_();
    const uint64_t key = agg::tenant_key(req);
    jobs_[req.jid] = key;
    // Tenants gone idle give their share back (nothing of theirs is open).
    for (auto it = tenants_.begin(); it != tenants_.end();) {
        it = it->first != key && !is_active(it->second, now) ? tenants_.erase(it) : std::next(it);
    }
    Tenant &t = tenants_[key];
    t.last = now;
    const uint32_t mine = share();
    const uint32_t room = mine > t.held ? mine - t.held : 0;
    const uint32_t lease_size = std::min({req.window, room, pool_.free_segs()});
    std::vector<uint32_t> lease;
    if (lease_size < req.min_window || !pool_.acquire(lease_size, lease)) {
        return agg::Verdict::deny(INA_PROTO_ERR_NO_RESOURCES);
    }
    t.held += lease_size;
    ++t.open;
    return agg::Verdict::grant(std::move(lease));
}

void PartitionScheduler::on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease)
{
    (void) mid;
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

void PartitionScheduler::on_job_created(const agg::JobInfo &job)
{
    jobs_[job.jid] = agg::tenant_key(job);
}

void PartitionScheduler::on_job_freed(uint32_t jid)
{
    const uint64_t key = tenant_of(jid);
    jobs_.erase(jid);
    const bool more = std::any_of(jobs_.begin(), jobs_.end(),
                                  [&](const auto &j) { return j.second == key; });
    auto it = tenants_.find(key);
    if (!more && it != tenants_.end() && it->second.open == 0) {
        tenants_.erase(it); // its share goes back at once
    }
}

uint32_t PartitionScheduler::ahead(uint32_t jid, uint32_t window) const
{
    // What its share will be even if one more tenant comes before the call:
    // a word told now must still fit then.
    const agg::Clock::time_point now = now_();
    const uint64_t key = tenant_of(jid);
    const auto others = static_cast<uint32_t>(std::count_if(
        tenants_.begin(), tenants_.end(),
        [&](const auto &t) { return t.first != key && is_active(t.second, now); }));
    return std::clamp<uint32_t>(pool_.size() / (others + 2), 1, window);
}

} // namespace ina::sched

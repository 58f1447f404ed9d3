// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Space-division policy: the pool split among active tenants (see partition.h).
#include "sched/partition.h"

#include <algorithm>
#include <utility>

namespace ina::sched {

uint64_t PartitionScheduler::tenant_of(uint32_t jid) const { return jobs_.of(jid); }

void PartitionScheduler::update(uint64_t key, Tenant &t, agg::Clock::time_point last,
                                uint32_t open) noexcept
{
    auto node = by_last_.extract(order(key, t));
    t.last = last;
    t.open = open;
    node.value() = order(key, t);
    by_last_.insert(std::move(node));
}

uint32_t PartitionScheduler::active_at(agg::Clock::time_point now) const
{
    // Idle: no call open (the front of by_last_) and the last one idle_ ago;
    // the later a tenant's last call, the later it goes idle.
    size_t idle = 0;
    for (auto it = by_last_.begin();
         it != by_last_.end() && !std::get<0>(*it) && !(now - std::get<1>(*it) < idle_); ++it) {
        ++idle;
    }
    return static_cast<uint32_t>(tenants_.size() - idle);
}

uint32_t PartitionScheduler::active() const
{
    return active_at(now_());
}

uint32_t PartitionScheduler::share() const
{
    return std::max<uint32_t>(1, pool_.size() / std::max<uint32_t>(1, active()));
}

agg::Verdict PartitionScheduler::decide(const agg::CallRequest &req)
{
    const agg::Clock::time_point now = now_();
    const uint64_t key = agg::tenant_key(req);
    jobs_.set(req.jid, key);
    // Tenants gone idle give their share back (nothing of theirs is open):
    // the front of by_last_, up to the first still active.
    for (auto it = by_last_.begin();
         it != by_last_.end() && !std::get<0>(*it) && !(now - std::get<1>(*it) < idle_);) {
        if (std::get<2>(*it) == key) {
            ++it; // the asking tenant stays
            continue;
        }
        tenants_.erase(std::get<2>(*it));
        it = by_last_.erase(it);
    }
    const auto [at, fresh] = tenants_.try_emplace(key);
    Tenant &t = at->second;
    if (fresh) {
        t.last = now;
        try {
            by_last_.insert(order(key, t));
        } catch (...) {
            tenants_.erase(at);
            throw;
        }
    } else {
        update(key, t, now, t.open);
    }
    const uint32_t mine = share();
    const uint32_t room = mine > t.held ? mine - t.held : 0;
    const uint32_t lease_size = std::min({req.window, room, pool_.free_segs()});
    std::vector<uint32_t> lease;
    if (lease_size < req.min_window || !pool_.acquire(lease_size, lease)) {
        return agg::Verdict::deny(INA_PROTO_ERR_NO_RESOURCES);
    }
    t.held += lease_size;
    update(key, t, t.last, t.open + 1);
    return agg::Verdict::grant(std::move(lease));
}

void PartitionScheduler::on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease)
{
    (void) mid;
    auto it = tenants_.find(tenant_of(jid));
    if (it != tenants_.end() && !lease.empty()) {
        Tenant &t = it->second;
        t.held -= std::min<uint32_t>(t.held, static_cast<uint32_t>(lease.size()));
        update(it->first, t, now_(), t.open > 0 ? t.open - 1 : 0);
    }
    pool_.release(lease);
    lease.clear();
}

void PartitionScheduler::on_job_created(const agg::JobInfo &job)
{
    jobs_.set(job.jid, agg::tenant_key(job));
}

void PartitionScheduler::on_job_freed(uint32_t jid)
{
    const uint64_t key = tenant_of(jid);
    jobs_.erase(jid);
    const bool more = jobs_.has_jobs(key);
    auto it = tenants_.find(key);
    if (!more && it != tenants_.end() && it->second.open == 0) {
        by_last_.erase(order(key, it->second));
        tenants_.erase(it); // its share goes back at once
    }
}

uint32_t PartitionScheduler::ahead(uint32_t jid, uint32_t window) const
{
    // What its share will be even if one more tenant comes before the call:
    // a word told now must still fit then.
    const agg::Clock::time_point now = now_();
    const uint64_t key = tenant_of(jid);
    auto me = tenants_.find(key);
    const uint32_t others =
        active_at(now) - (me != tenants_.end() && is_active(me->second, now) ? 1 : 0);
    return std::clamp<uint32_t>(pool_.size() / (others + 2), 1, window);
}

} // namespace ina::sched

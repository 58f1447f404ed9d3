// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Space-division policy (the ATP/SwitchML model, `ina-switchd --policy
// partition`): the pool is divided evenly among the active tenants (a
// tenant: one application, CallRequest::tenant). A tenant is active while it
// has a call open or had one within `idle`. Each call gets a lease of
// min(the job's window, what is left of its tenant's share, the free Segs):
// leases shrink as tenants arrive and grow as they leave. A call whose lease
// would be shorter than the blocks its members may already have sent
// (CallRequest::min_window) is denied NO_RESOURCES, which happens while a
// newcomer's share is still held by calls granted before it came. Members
// are told an `ahead` (ina_proto.h "Leases") that fits the share they would
// have with one more tenant, pool / (others + 2), so a word told before a
// newcomer came still fits after. It never defers; idleness is judged when
// asked, so it needs no clock ticks.
//
// What a decision costs: the tenants are kept in the order they go idle in
// (those with a call open last), so a decision gives back the shares of
// those gone idle from the front of that order, and counts the active
// tenants as all but the idle ones still there, which a decision has just
// removed: O(log tenants) plus the tenants that went idle since the last
// decision. The verdicts are those of a loop over every tenant
// (tests/unit/test_sched_reference.cpp keeps it).
#ifndef INA_SCHED_PARTITION_H
#define INA_SCHED_PARTITION_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "scheduler.h"
#include "sched/job_tenants.h"
#include "seg_pool.h"

namespace ina::sched {

class PartitionScheduler final : public agg::Scheduler {
public:
    const char *name() const override { return "partition"; }
    using Now = std::function<agg::Clock::time_point()>;

    PartitionScheduler(agg::SegPool &pool, std::chrono::milliseconds idle,
                       Now now = agg::Clock::now)
        : pool_(pool), idle_(idle), now_(std::move(now))
    {
    }

    agg::Verdict decide(const agg::CallRequest &req) override;
    void on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease) override;
    void on_job_created(const agg::JobInfo &job) override;
    void on_job_freed(uint32_t jid) override;
    // pool / (other active tenants + 2), at most `window`.
    uint32_t ahead(uint32_t jid, uint32_t window) const override;

    // Tenants active now, and the share of the pool each has.
    uint32_t active() const;
    uint32_t share() const;

private:
    struct Tenant {
        uint32_t held = 0; // Segs its granted calls hold
        uint32_t open = 0; // its granted calls not done
        agg::Clock::time_point last{};
    };

    // A tenant's place in by_last_: those with no call open first, by their
    // last call (the first to go idle first), then those with calls open.
    using Order = std::tuple<bool, agg::Clock::time_point, uint64_t>;

    bool is_active(const Tenant &t, agg::Clock::time_point now) const
    {
        return t.open > 0 || now - t.last < idle_;
    }
    uint64_t tenant_of(uint32_t jid) const;
    static Order order(uint64_t key, const Tenant &t)
    {
        return {t.open > 0, t.open > 0 ? agg::Clock::time_point{} : t.last, key};
    }
    // Set a tenant's last call and open calls, moving its place in by_last_
    // (allocates nothing).
    void update(uint64_t key, Tenant &t, agg::Clock::time_point last, uint32_t open) noexcept;
    // Tenants active at `now`: all but those at the front of by_last_ gone idle.
    uint32_t active_at(agg::Clock::time_point now) const;

    agg::SegPool &pool_;
    std::chrono::milliseconds idle_;
    Now now_;
    JobTenants jobs_;
    std::map<uint64_t, Tenant> tenants_;  // by agg::tenant_key
    std::set<Order> by_last_;             // every tenant of tenants_, once
};

} // namespace ina::sched

#endif

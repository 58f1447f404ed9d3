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
#ifndef INA_SCHED_PARTITION_H
#define INA_SCHED_PARTITION_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "scheduler.h"
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

    bool is_active(const Tenant &t, agg::Clock::time_point now) const
    {
        return t.open > 0 || now - t.last < idle_;
    }
    uint64_t tenant_of(uint32_t jid) const;

    agg::SegPool &pool_;
    std::chrono::milliseconds idle_;
    Now now_;
    std::map<uint32_t, uint64_t> jobs_;   // jid -> agg::tenant_key
    std::map<uint64_t, Tenant> tenants_;  // by agg::tenant_key
};

} // namespace ina::sched

#endif

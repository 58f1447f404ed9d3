// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Exclusive policy (the SHARP model, `ina-switchd --policy exclusive`): the
// first job to offload holds the agent (with the jobs of its tenant: the
// other communicators of the same application); every other job's calls are denied
// (status BUSY) until the holder's job is freed, or until the holder
// has had no call open for `idle` (then the next job to ask takes the agent
// over). The holder's own calls get leases from the pool as under the
// free-Seg policy. It never defers; idleness is judged when a call asks, so
// it needs no clock ticks. A decision and `ahead` are O(log jobs), and so is
// freeing a job (its tenant's jobs are counted).
#ifndef INA_SCHED_EXCLUSIVE_H
#define INA_SCHED_EXCLUSIVE_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "scheduler.h"
#include "sched/job_tenants.h"
#include "seg_pool.h"

namespace ina::sched {

class ExclusiveScheduler final : public agg::Scheduler {
public:
    const char *name() const override { return "exclusive"; }
    using Now = std::function<agg::Clock::time_point()>;

    // `now`: the clock (tests pass their own).
    ExclusiveScheduler(agg::SegPool &pool, std::chrono::milliseconds idle,
                       Now now = agg::Clock::now)
        : pool_(pool), idle_(idle), now_(std::move(now))
    {
    }

    agg::Verdict decide(const agg::CallRequest &req) override;
    void on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease) override;
    void on_job_created(const agg::JobInfo &job) override;
    void on_job_freed(uint32_t jid) override;
    // `window`, but 1 for a job of another tenant while the holder holds:
    // its calls will be denied, each then costs the link one block.
    uint32_t ahead(uint32_t jid, uint32_t window) const override;

    // The tenant holding the agent (agg::tenant_key), 0 if none.
    uint64_t holder() const { return holder_; }

private:
    agg::SegPool &pool_;
    std::chrono::milliseconds idle_;
    Now now_;
    JobTenants jobs_;
    uint64_t holder_ = 0;
    uint32_t open_ = 0;          // the holder's granted calls not done yet
    agg::Clock::time_point last_{}; // the holder's last grant or completion
};

} // namespace ina::sched

#endif

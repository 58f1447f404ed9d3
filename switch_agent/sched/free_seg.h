// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The agent's first scheduling policy: grant while the pool has a whole lease
// free, else deny at once (the denied call runs the host algorithm right away
// instead of waiting). It never defers and needs no clock. Other policies
// (time-division, scores) go next to it in this folder, behind the interface
// the aggregation core asks (aggregation/scheduler.h).
#ifndef INA_SCHED_FREE_SEG_H
#define INA_SCHED_FREE_SEG_H

#include <cstdint>
#include <vector>

#include "scheduler.h"
#include "seg_pool.h"

namespace ina::sched {

class FreeSegScheduler final : public agg::Scheduler {
public:
    const char *name() const override { return "fcfs"; }
    explicit FreeSegScheduler(agg::SegPool &pool) : pool_(pool) {}

    agg::Verdict decide(const agg::CallRequest &req) override;
    void on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease) override;

private:
    agg::SegPool &pool_;
};

} // namespace ina::sched

#endif

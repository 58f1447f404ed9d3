// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Free-Seg policy: a call gets its lease if the pool has it, else a DENY.
#include "sched/free_seg.h"

#include <utility>

namespace ina::sched {

agg::Verdict FreeSegScheduler::decide(const agg::CallRequest &req)
{
    std::vector<uint32_t> lease;
    if (pool_.acquire(req.window, lease)) {
        return agg::Verdict::grant(std::move(lease));
    }
    return agg::Verdict::deny(INA_PROTO_ERR_NO_RESOURCES);
}

void FreeSegScheduler::on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease)
{
    pool_.release(lease);
    lease.clear();
}

} // namespace ina::sched

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#include "sched/job_tenants.h"

#include "scheduler.h"

namespace ina::sched {

uint64_t JobTenants::of(uint32_t jid) const
{
    auto it = tenant_.find(jid);
    return it != tenant_.end() ? it->second : agg::tenant_key(0, jid);
}

void JobTenants::set(uint32_t jid, uint64_t key)
{
    const auto [it, fresh] = tenant_.try_emplace(jid, key);
    if (!fresh && it->second == key) {
        return;
    }
    try {
        ++jobs_of_[key];
    } catch (...) {
        if (fresh) {
            tenant_.erase(it);
        }
        throw;
    }
    if (!fresh) {
        drop(jobs_of_.find(it->second));
        it->second = key;
    }
}

void JobTenants::erase(uint32_t jid)
{
    auto it = tenant_.find(jid);
    if (it != tenant_.end()) {
        drop(jobs_of_.find(it->second));
        tenant_.erase(it);
    }
}

void JobTenants::drop(std::map<uint64_t, uint32_t>::iterator it)
{
    if (--it->second == 0) {
        jobs_of_.erase(it);
    }
}

} // namespace ina::sched

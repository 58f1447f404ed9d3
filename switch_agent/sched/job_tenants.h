// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Which tenant each job belongs to, and how many jobs each tenant has: what
// the exclusive and partition policies need to tell when a tenant's last
// job is gone, and the harm guard whether the agent is shared, without
// visiting every job. O(log jobs) each.
#ifndef INA_SCHED_JOB_TENANTS_H
#define INA_SCHED_JOB_TENANTS_H

#include <cstddef>
#include <cstdint>
#include <map>

namespace ina::sched {

class JobTenants {
public:
    // The job's tenant (agg::tenant_key); a job never seen is its own.
    uint64_t of(uint32_t jid) const;
    // The job belongs to `key` now (moved from another tenant if it was
    // in one). Strong guarantee: on std::bad_alloc nothing changed.
    void set(uint32_t jid, uint64_t key);
    // The job is gone (nothing if it was never seen).
    void erase(uint32_t jid);
    // Whether the tenant has a job.
    bool has_jobs(uint64_t key) const { return jobs_of_.count(key) > 0; }
    // How many tenants have a job.
    size_t count() const { return jobs_of_.size(); }

private:
    // One job fewer for `it`'s tenant, which goes when it has none.
    void drop(std::map<uint64_t, uint32_t>::iterator it);

    std::map<uint32_t, uint64_t> tenant_;  // jid -> agg::tenant_key
    std::map<uint64_t, uint32_t> jobs_of_; // agg::tenant_key -> its jobs
};

} // namespace ina::sched

#endif

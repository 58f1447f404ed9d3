// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The scheduler interface the aggregation core asks once per call (JID, MID),
// at the call's first block: Grant (with the lease, taken from the pool by the
// scheduler), Deny (with the reason every member is told), or Defer (ask me
// again later: the core keeps the call's blocks and asks again when a lease
// comes back and at every tick). The scheduler owns leases from grant to
// on_call_done. Policies live with the program that runs them (the agent's are
// in switch_agent/sched/); a stage that needs no policy passes its own trivial
// one. The interface is here so that the core depends on nothing above it.
#ifndef INA_AGG_SCHEDULER_H
#define INA_AGG_SCHEDULER_H

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "ina_proto.h"

namespace ina::agg {

class SegPool;

using Clock = std::chrono::steady_clock;

// What a policy may know about a job.
struct JobInfo {
    uint32_t jid;
    uint32_t nmembers;
    uint32_t nnodes;
    uint32_t window; // the longest lease a call of this job may get
    uint64_t tenant = 0; // JOB_OPEN's (CallRequest::tenant)
};

// What a policy may know about a call.
struct CallRequest {
    uint32_t jid;
    uint64_t mid;
    uint32_t window;   // the job's window: the longest lease the call may get
    uint64_t total;    // elements of the call's result vector
    uint8_t coll;      // ina_proto_coll_t
    uint8_t op;        // ina_proto_op_t
    uint8_t dtype;     // ina_proto_dtype_t
    uint32_t nmembers; // members of the job
    uint32_t asked;    // how often this call was asked before (0 at its first block)
    // The job's tenant (JOB_OPEN's): the application it belongs to. Jobs of
    // one tenant (communicators, node streams of one application) do not
    // compete: the program orders its own calls. 0: the job is its own.
    uint64_t tenant = 0;
    // The shortest lease the call may get: blocks its members may have sent
    // before the verdict (the `ahead` they were told, ina_proto.h "Leases").
    // 1 <= min_window <= window.
    uint32_t min_window = 1;
};

// Jobs with equal keys are one tenant.
inline uint64_t tenant_key(uint64_t tenant, uint32_t jid)
{
    return tenant != 0 ? tenant : (uint64_t{1} << 63) | jid;
}
inline uint64_t tenant_key(const CallRequest &req) { return tenant_key(req.tenant, req.jid); }
inline uint64_t tenant_key(const JobInfo &job) { return tenant_key(job.tenant, job.jid); }

struct Verdict {
    enum class Kind { kGrant, kDeny, kDefer };
    Kind kind = Kind::kDeny;
    ina_proto_status_t status = INA_PROTO_ERR_NO_RESOURCES; // kDeny: the reason
    std::vector<uint32_t> lease; // kGrant: min_window..window Segs, lease[i] serves sid % size == i

    static Verdict grant(std::vector<uint32_t> lease)
    {
        Verdict v;
        v.kind = Kind::kGrant;
        v.status = INA_PROTO_OK;
        v.lease = std::move(lease);
        return v;
    }
    static Verdict deny(ina_proto_status_t why)
    {
        Verdict v;
        v.kind = Kind::kDeny;
        v.status = why;
        return v;
    }
    static Verdict defer()
    {
        Verdict v;
        v.kind = Kind::kDefer;
        v.status = INA_PROTO_OK;
        return v;
    }
};

class Scheduler {
public:
    virtual ~Scheduler() = default;

    // The policy's name, as --policy takes it (status, metrics).
    virtual const char *name() const { return "custom"; }

    // Decide a call. A Grant's lease must hold req.min_window..req.window
    // Segs of the pool; the scheduler gets it back in on_call_done.
    virtual Verdict decide(const CallRequest &req) = 0;
    // How many blocks of its next call the members of `jid` may send before
    // that call's verdict (1..window; ina_proto.h "Leases"): what a denial
    // of it will cost the link, and the shortest lease it may then get. An
    // agent nobody else wants says `window` (no round trip before a call
    // streams); one that may deny or cut the call says less.
    virtual uint32_t ahead(uint32_t jid, uint32_t window) const { return window; }
    // A call that was granted or deferred is over: `lease` is the granted
    // lease (the scheduler gives it back to the pool; it may hold busy Segs of
    // an aborted call, SegPool::release empties them), or empty when a
    // deferred call ended without a grant (aborted, denied for lack of room
    // to keep its blocks, its job freed). Called once per such call.
    virtual void on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease) = 0;
    virtual void on_job_created(const JobInfo &job) {}
    // After on_call_done for every open call of the job.
    virtual void on_job_freed(uint32_t jid) {}
    // A member of `jid` measured what a call of `bytes` (collective `coll`)
    // that this agent denied cost it on the hosts: `secs` (HOST_COST,
    // protocol 16). A policy that weighs the hosts against waiting may
    // prefer it to its model.
    virtual void on_host_cost(uint32_t jid, uint8_t coll, uint64_t bytes, double secs) {}
    // A member of `jid` measured what a whole call of `bytes` took it, from
    // its post to its end, whatever this agent's verdict: `secs` (CALL_TIME,
    // protocol 17). What judges whether sharing the agent harms the job.
    virtual void on_call_time(uint32_t jid, uint8_t coll, uint64_t bytes, double secs) {}
    // The clock, while calls are deferred (at least every tick_interval()).
    virtual void tick(Clock::time_point now) {}
    virtual std::chrono::milliseconds tick_interval() const { return std::chrono::milliseconds(1); }
};

} // namespace ina::agg

#endif

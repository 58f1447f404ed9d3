// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The harm guard (`ina-switchd --harm-guard`, on by default): whatever the
// policy, no job is to end slower for sharing the agent than it would with
// every job on the hosts. A policy harms a job in one of two ways, and the
// guard, wrapped around it, watches each job for both:
//   - denied too often: its calls were denied `denials` times in a row
//     (exclusive denies every tenant but the holder while it holds; tdm
//     without waiting denies while another tenant's call holds the pool).
//     Each such call pays the verdict's round trip and then runs on hosts
//     whose links the offloaded jobs share;
//   - served too slowly: `slow_calls` granted calls in a row held the agent
//     longer than `slow` times their cost on the hosts (partition's equal
//     share where the pool is scarce: a third of it streams at a third of
//     the line, slower than the hosts). Only calls a longer lease could
//     have sped up count, one way or the other: those on a lease shorter
//     than their window and longer than it (a call that fits in its lease
//     waits on round trips, which no lease shortens).
// A job so harmed gets its next call served here, with its whole window,
// instead of by the policy: granted at once if the pool has the lease, else
// it waits (Defer) first come first served behind the other harmed calls,
// and meanwhile a new call of another tenant is denied (BUSY) so that the
// pool frees for it; a call that waited `wait_limit` times its cost on the
// hosts is denied after all (a holder that stalls). A denied call's cost on
// the hosts is the job's own measure where its members sent one (HOST_COST,
// host_cost.h), else the model over the agent's measured rate.
//
// The policy never sees the calls the guard serves (it sees the others'
// verdicts as it gave them; a harmed job's call it denied, the guard then
// made wait, is over for it): its own accounting holds. What the guard
// adds to a decision is O(log jobs).
#ifndef INA_SCHED_GUARD_H
#define INA_SCHED_GUARD_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "scheduler.h"
#include "sched/host_cost.h"
#include "sched/predictor.h"
#include "sched/score.h"
#include "seg_pool.h"

namespace ina::sched {

struct GuardConfig {
    uint32_t denials = 2;    // denied this many times in a row: harmed
    uint32_t slow_calls = 2; // this many slow grants in a row: harmed
    double slow = 1.25;      // a grant is slow above this times its host cost
    double wait_limit = 4;   // of the call's host cost
    HostModel host;          // beta 0: the agent's measured rate
    double initial_rate = 8.0 / 10e9; // seconds per byte before a measure
};

class HarmGuard final : public agg::Scheduler {
public:
    using Now = std::function<agg::Clock::time_point()>;

    HarmGuard(agg::SegPool &pool, std::unique_ptr<agg::Scheduler> policy, const GuardConfig &cfg,
              Now now = agg::Clock::now);

    const char *name() const override { return policy_->name(); }
    agg::Verdict decide(const agg::CallRequest &req) override;
    uint32_t ahead(uint32_t jid, uint32_t window) const override;
    void on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease) override;
    void on_job_created(const agg::JobInfo &job) override;
    void on_job_freed(uint32_t jid) override;
    void on_host_cost(uint32_t jid, uint8_t coll, uint64_t bytes, double secs) override;
    void tick(agg::Clock::time_point now) override { policy_->tick(now); }
    std::chrono::milliseconds tick_interval() const override { return policy_->tick_interval(); }

    const agg::Scheduler &policy() const { return *policy_; }
    // Whether the job is harmed now (its next call is the guard's), and the
    // calls the guard served (granted itself) in all.
    bool harmed(uint32_t jid) const;
    uint64_t served() const { return served_; }

private:
    struct Job {
        uint32_t nmembers = 1;
        uint64_t tenant = 0;
        uint32_t denied = 0; // in a row (the policy's denials, and the guard's)
        uint32_t slow = 0;   // slow grants in a row
        HostCosts host;
    };
    // A granted call: when, how large, and whether the guard granted it.
    struct Granted {
        double start;
        double bytes;
        uint8_t coll;
        bool mine;
        // Its lease was shorter than its window and the call longer than
        // the lease: a longer one could have made it faster.
        bool short_lease;
    };
    struct Waiting {
        uint32_t jid;
        uint64_t mid;
        uint64_t tenant;
        double since;
        double host;
    };
    using WaitList = std::list<Waiting>;

    double now_s() const;
    Job &job(const agg::CallRequest &req);
    double host_cost(const Job &j, uint8_t coll, double bytes) const;
    bool is_harmed(const Job &j) const
    {
        return (cfg_.denials > 0 && j.denied >= cfg_.denials) ||
               (cfg_.slow_calls > 0 && j.slow >= cfg_.slow_calls);
    }
    // Serve a harmed job's call: grant its window if the pool has it and no
    // call waits before it, else wait (or deny past the limit).
    agg::Verdict serve(const agg::CallRequest &req, Job &j, double now, double bytes);
    void forget_waiting(uint32_t jid, uint64_t mid) noexcept;

    agg::SegPool &pool_;
    std::unique_ptr<agg::Scheduler> policy_;
    GuardConfig cfg_;
    Now now_;
    agg::Clock::time_point epoch_;
    std::map<uint32_t, Job> jobs_;
    std::map<std::pair<uint32_t, uint64_t>, Granted> granted_;
    WaitList waiting_;
    std::map<std::pair<uint32_t, uint64_t>, WaitList::iterator> waiting_at_;
    // Calls the policy put off: it decides them until it is done with them.
    std::set<std::pair<uint32_t, uint64_t>> deferred_;
    Estimate rate_; // seconds per byte of large granted calls
    uint64_t served_ = 0;
};

} // namespace ina::sched

#endif

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Time-division policy (`ina-switchd --policy tdm`, the default):
// the agent serves one job's calls at a time, each with its whole lease,
// instead of splitting the pool among jobs. The contended resource is the
// pool: jobs whose leases fit side by side do not compete (with a pool of
// many windows tdm grants as fcfs does). When a call of job A asks:
//   1. another job's call holds the agent now (A's lease does not fit
//      beside it): deny (BUSY);
//   2. no other job's call that would not fit beside A's is predicted to
//      arrive while A's would run: grant;
//   ("another job": of another tenant, CallRequest::tenant; an application's
//   own communicators and node streams do not compete, their calls share
//   the pool as under fcfs)
//   3. else CalcScore A's call and every such predicted call (score.h):
//      grant if A's goes first in that order, else deny (OUTSCORED); the
//      order is the priority in which the jobs get the agent next.
// A denied call runs its host algorithm at once: it never waits (no Defer).
// A's own calls may overlap (non-blocking ones), each with its lease while
// the pool has one (else NO_RESOURCES). What it knows of each job comes from
// the calls themselves (predictor.h): arrivals, sizes, and how long granted
// calls held the agent; a call's host cost comes from the host model.
#ifndef INA_SCHED_TDM_H
#define INA_SCHED_TDM_H

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "scheduler.h"
#include "sched/predictor.h"
#include "sched/score.h"
#include "seg_pool.h"

namespace ina::sched {

struct TdmConfig {
    HostModel host;
    double ageing = 0.5; // score per denial in a row (score.h)
    // The agent's rate before it measured one (seconds per byte): 10 Gbit/s.
    double initial_rate = 8.0 / 10e9;
    // A job seen only once is expected again for this long (seconds): what
    // `ahead` assumes of a job too new to predict.
    double quiet = 1.0;
};

class TdmScheduler final : public agg::Scheduler {
public:
    const char *name() const override { return "tdm"; }
    using Now = std::function<agg::Clock::time_point()>;

    TdmScheduler(agg::SegPool &pool, const TdmConfig &cfg, Now now = agg::Clock::now);

    agg::Verdict decide(const agg::CallRequest &req) override;
    void on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease) override;
    void on_job_created(const agg::JobInfo &job) override;
    void on_job_freed(uint32_t jid) override;
    // `window` while no call of another tenant that would not fit beside
    // this job's is open or expected; else 1: a call then denied cost the
    // link one block, not a window (ina_proto.h "Leases").
    uint32_t ahead(uint32_t jid, uint32_t window) const override;

    // The jobs whose next call is predicted, in the order they would get the
    // agent now (first: the best scorer).
    std::vector<uint32_t> priority() const;
    // The agent's measured seconds per byte (initial_rate until measured).
    double rate() const;
    // What the policy knows of a job (null: nothing).
    const CallPattern *pattern(uint32_t jid) const;

private:
    struct JobState {
        uint32_t nmembers = 1;
        uint64_t tenant = 0; // agg::tenant_key, as of its last call
        uint32_t window = 0; // the lease its calls take
        CallPattern pattern;
        uint32_t open = 0;   // granted calls not done
        uint32_t denied = 0; // calls denied in a row since the last grant
        std::map<uint64_t, std::pair<double, double>> granted; // mid -> (start, bytes)
    };

    double now_s() const;
    JobState &job(uint32_t jid, uint32_t nmembers);
    double hold(const JobState &j, double bytes) const;
    double beta() const;
    // CalcScore of a call of job `j` of `bytes` (collective `coll`).
    double score(const JobState &j, uint8_t coll, double bytes) const;
    agg::Verdict deny(JobState &j, ina_proto_status_t why);

    agg::SegPool &pool_;
    TdmConfig cfg_;
    Now now_;
    agg::Clock::time_point epoch_;
    std::map<uint32_t, JobState> jobs_; // ordered: decisions never depend on hash order
    Estimate rate_;                     // seconds per byte of large granted calls
};

} // namespace ina::sched

#endif

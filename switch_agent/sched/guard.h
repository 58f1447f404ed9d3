// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The harm guard (`ina-switchd --harm-guard`, on by default): whatever the
// policy, no job is to end slower for sharing the agent than it would with
// every job on the hosts. A job's time is its compute, which sharing does
// not touch, plus its calls; so the guard keeps, per job, a ledger of what
// its calls took against what each would have cost on the hosts:
//   - the members' word where they send it (CALL_TIME, protocol 17: a
//     blocking call's whole time at member 0, from its post to its end,
//     whatever the verdict): the ledger gains that time less the call's
//     host cost. An offloaded call served fast enters as a gain; one that
//     waited for the pool, or streamed on a short lease, as a loss; a
//     denied call as the verdict's wait (its host algorithm is its host
//     cost);
//   - else the agent's own view, for calls of `min_bytes` or more: from the
//     call's first request to its end (granted) or its verdict (denied),
//     which misses the result's way back to the ranks.
// A call's cost on the hosts is the job's own measure where its members
// sent one near its size (HOST_COST, host_cost.h), the model where the
// operator set one (`--host-gbps`), and the lower of the two with both: a
// measure taken while the other jobs load the hosts' cores or links is
// above what the job would get with every job on the hosts. With neither
// the call is not judged: a model over the agent's own rate would judge the
// agent by itself. So that
// a job never denied is measured too, its first call of `min_bytes` or more
// in a size class with no measure near it goes to the hosts (BUSY), once.
// Only calls made while two or more tenants have jobs here count (and are
// probed): a job alone harms nobody and is harmed by nobody.
//
// A job is harmed while its ledger's losses exceed `-margin` of its calls'
// host costs (so a job breaks even with a little to spare against the
// noise of the measures). A harmed job's calls are served here instead of
// by the policy, each where it costs the job least: with its whole window
// at once if the pool has it and no harmed call waits before it (and its
// hold, predicted from its own calls on a whole window, beats the hosts);
// else it waits for the pool (Defer), first come first served behind other
// harmed calls, when what the open calls have left plus its hold beats the
// hosts, and meanwhile a new call of another tenant is denied (BUSY) so
// that the pool frees for it; else, and once it has waited as long as that
// could still beat the hosts, it goes to them (BUSY): at its host cost, a
// call neither gains nor loses.
//
// The policy never sees the calls the guard serves (it sees the others'
// verdicts as it gave them): its own accounting holds. A call the policy
// deferred stays the policy's until it is done. What the guard adds to a
// decision is O(log calls).
#ifndef INA_SCHED_GUARD_H
#define INA_SCHED_GUARD_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "scheduler.h"
#include "sched/host_cost.h"
#include "sched/job_tenants.h"
#include "sched/predictor.h"
#include "sched/score.h"
#include "sched/wait_line.h"
#include "seg_pool.h"

namespace ina::sched {

struct GuardConfig {
    double margin = 0.02;             // of a job's host costs: the gain it keeps
    double min_bytes = kRateMinBytes; // calls the agent judges by its own view
    HostModel host;                   // beta 0: the agent's measured rate
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
    void on_call_time(uint32_t jid, uint8_t coll, uint64_t bytes, double secs) override;
    void tick(agg::Clock::time_point now) override { policy_->tick(now); }
    std::chrono::milliseconds tick_interval() const override { return policy_->tick_interval(); }

    const agg::Scheduler &policy() const { return *policy_; }
    // Whether the job is harmed now (its next call is the guard's); its
    // ledger (seconds its judged calls took beyond their host costs: < 0 a
    // gain); the calls the guard served (granted itself), sent to the hosts
    // and sent there to be measured, in all.
    bool harmed(uint32_t jid) const;
    double ledger(uint32_t jid) const;
    // What an operator sees of a job (ina-switchctl jobs): its judged calls,
    // what they took and would have cost on the hosts (seconds), whether it
    // is harmed now; empty for a job the guard has not seen.
    struct JobView {
        uint64_t calls = 0;
        double took = 0;
        double host = 0;
        bool harmed = false;
    };
    std::optional<JobView> view(uint32_t jid) const;
    size_t harmed_jobs() const; // jobs harmed now
    uint64_t served() const { return served_; }
    uint64_t sent_to_hosts() const { return to_hosts_; }
    uint64_t probes() const { return probes_; }

private:
    // Seconds the judged calls took and would have cost on the hosts;
    // excess(): what they took beyond that.
    struct Ledger {
        double took = 0;
        double host = 0;
        uint64_t calls = 0;
        void add(double call, double host_cost)
        {
            took += call;
            host += host_cost;
            ++calls;
        }
        double excess() const { return took - host; }
    };
    struct Job {
        uint32_t nmembers = 1;
        Ledger told; // the members' CALL_TIMEs
        Ledger seen; // the agent's own view, for a job whose members tell nothing
        HostCosts host;
        Estimate rate;  // seconds per byte of its large granted calls
        Estimate whole; // the same, on its whole window
        const Ledger &ledger() const { return told.calls > 0 ? told : seen; }
    };
    // A granted call: when it was granted and first asked, how large, whether
    // the guard granted it, whether on its whole window, and where its
    // predicted end sits in ends_.
    struct Granted {
        double start;
        double asked;
        double bytes;
        uint8_t coll;
        bool mine;
        bool whole;
        std::multiset<double>::iterator end;
    };
    struct Waiting {
        uint32_t jid;
        uint64_t mid;
        uint64_t tenant;
        double give_up; // after this, the hosts would have been faster
        double hold;    // its predicted hold
    };
    using Call = std::pair<uint32_t, uint64_t>;

    double now_s() const;
    Job &job(const agg::CallRequest &req);
    bool shared() const { return tenants_.count() >= 2; }
    bool is_harmed(const Job &j) const
    {
        const Ledger &l = j.ledger();
        return l.calls > 0 && l.excess() > -cfg_.margin * l.host;
    }
    double rate() const;
    double host_cost(const Job &j, uint8_t coll, double bytes) const;
    // The host cost a call is judged by: the job's measure near it, or the
    // configured model, the lower of the two with both; < 0 (not judged)
    // with neither, for the model over the agent's own rate would judge the
    // agent by itself. judged_cost: that, else the model anyway (what a
    // harmed call's service is weighed against).
    double known_cost(const Job &j, uint8_t coll, double bytes) const;
    double judged_cost(const Job &j, uint8_t coll, double bytes) const;
    // What a call of `bytes` of `j` would hold the agent with its whole
    // window, and what the open calls have left to run.
    double whole_hold(const Job &j, double bytes) const;
    double busy_for(double now) const;
    // Serve a harmed job's call (see above).
    agg::Verdict serve(const agg::CallRequest &req, Job &j, double now, double bytes, bool &mine);
    agg::Verdict to_hosts(const agg::CallRequest &req);

    agg::SegPool &pool_;
    std::unique_ptr<agg::Scheduler> policy_;
    GuardConfig cfg_;
    Now now_;
    agg::Clock::time_point epoch_;
    std::map<uint32_t, Job> jobs_;
    JobTenants tenants_;
    std::map<Call, double> asked_; // calls without a verdict: since when
    std::map<Call, Granted> granted_;
    std::multiset<double> ends_; // the granted calls' predicted ends
    WaitLine<Waiting> waiting_;  // harmed calls waiting for the whole window
    // Calls the policy put off: it decides them until it is done with them.
    std::set<Call> deferred_;
    Estimate rate_;  // seconds per byte of large granted calls
    Estimate whole_; // the same, on a whole window
    uint64_t served_ = 0;
    uint64_t to_hosts_ = 0;
    uint64_t probes_ = 0;
};

} // namespace ina::sched

#endif

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
// A denied call runs its host algorithm at once. With `wait` (TdmConfig), a
// call that rule 1 would deny waits instead (Defer) when its predicted wait
// (what the other tenants' open calls have left to run, plus the calls
// already waiting) and its own hold end before its cost on the hosts would:
// waiting calls are served first come first served as the pool frees, each
// with its lease, and a new call does not pass one that waits. Rules 2 and
// 3 are then off: a call that is here is granted, and one predicted during
// it will wait if that is worth it (denying the call here for it would
// send the call here to the hosts). A call that
// waited is never denied for a prediction afterwards (it paid for the wait);
// only one that waited `wait_limit` times its cost on the hosts goes there
// (BUSY), in case its wait was misjudged (a holder that stalls). No job is
// sent to the hosts for ever: one denied `wait_after_denied` times in a
// row waits with its next call whatever the estimates say. With
// `host_hints`, a job's first large call of a size class (host_cost.h) that
// would wait goes to the hosts once instead, so that its members measure
// what the hosts cost it (a job never denied would be judged by the model
// for ever).
// A's own calls may overlap (non-blocking ones), each with its lease while
// the pool has one (else NO_RESOURCES). What it knows of each job comes from
// the calls themselves (predictor.h): arrivals, sizes, and how long granted
// calls held the agent; a call's host cost comes from what the job's members
// measured their denied calls cost (HOST_COST, host_cost.h; with
// `host_hints`), else from the host model.
//
// Auto (`ina-switchd --policy auto`, TdmConfig::by_need): the same rules,
// with each call's lease sized by what its job needs (need.h) instead of its
// whole window. While the needs of all jobs fit in the pool, the pool is
// divided: a call's lease is its job's need plus an equal part of what the
// needs leave over (every tenant with a job open counts), the leases fit
// side by side, and no call competes (as partition, but by need rather than
// in equal parts). When they do not fit, each call asks for its job's need,
// and time is divided as above. Until one of its large calls was judged, a
// job needs what its calls could use (its window, or fewer Segs if its
// largest call has fewer blocks): a new job of large calls divides time,
// since dividing the pool among jobs that each need all of it makes every
// call slow. Two kinds of probe correct a need:
//   - while time is divided, every `probe_every`-th call of a job (its
//     first once the line rate is known) has half its need, short enough
//     for the call to teach (a probe down): a job that streams as fast on it
//     needs no more, its next call probes again, and the needs may come to
//     fit in the pool;
//   - while the pool is divided, a job none of whose large calls had twice
//     the lease it gets now (or its window) takes, with every
//     `probe_every`-th call, all the pool has free up to its window, if that
//     is at least as much (a probe up: the rate says only that a lease was
//     too short, not by how much a longer one would be faster; other
//     tenants' calls that do not fit beside it meanwhile are denied as
//     under tdm).
//
// What a decision costs: it does not visit every job. The policy keeps, as
// calls come and go, the open calls of each tenant (rule 1 is then a
// subtraction), the jobs by predicted arrival (rules 2/3 visit only those
// predicted from now - the largest lateness of any job up to the end of the
// asking call, and stop at the first that goes before it), and for `ahead`
// the latest instant each tenant's jobs of each window are still expected
// (a look at the two latest per window). A decision is O(log jobs) plus the
// calls predicted around it; the verdicts are the same as a loop over every
// job would give (tests/unit/test_sched_reference.cpp keeps that loop).
#ifndef INA_SCHED_TDM_H
#define INA_SCHED_TDM_H

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "scheduler.h"
#include "sched/host_cost.h"
#include "sched/need.h"
#include "sched/predictor.h"
#include "sched/score.h"
#include "sched/wait_line.h"
#include "seg_pool.h"

namespace ina::sched {

struct TdmConfig {
    HostModel host;
    // Weigh the members' measured host costs (HOST_COST) over the model.
    bool host_hints = true;
    double ageing = 0.5; // score per denial in a row (score.h)
    // The agent's rate before it measured one (seconds per byte): 10 Gbit/s.
    double initial_rate = 8.0 / 10e9;
    // A job seen only once is expected again for this long (seconds): what
    // `ahead` assumes of a job too new to predict.
    double quiet = 1.0;
    // Calls that find another tenant's call holding the pool wait when that
    // costs less than the hosts (see above).
    bool wait = false;
    double wait_limit = 4;
    // A job whose calls were denied this many times in a row waits with its
    // next call whatever the estimates say (its host runs are not what the
    // model thinks, or it loses to longer calls every time): at most every
    // other call of a job goes to the hosts.
    uint32_t wait_after_denied = 1;
    // Auto: size leases by need (see above). (ina-switchd makes tdm and auto
    // wait unless told not to.)
    bool by_need = false;
    uint32_t probe_every = 32;
};

class TdmScheduler final : public agg::Scheduler {
public:
    const char *name() const override { return cfg_.by_need ? "auto" : "tdm"; }
    using Now = std::function<agg::Clock::time_point()>;

    TdmScheduler(agg::SegPool &pool, const TdmConfig &cfg, Now now = agg::Clock::now);

    agg::Verdict decide(const agg::CallRequest &req) override;
    void on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease) override;
    void on_job_created(const agg::JobInfo &job) override;
    void on_job_freed(uint32_t jid) override;
    void on_host_cost(uint32_t jid, uint8_t coll, uint64_t bytes, double secs) override;
    // `window` while no call of another tenant that would not fit beside
    // this job's is open or expected; else 1: a call then denied cost the
    // link one block, not a window (ina_proto.h "Leases"). Auto, while the
    // pool is divided: at most the lease the job would get with one tenant
    // more.
    uint32_t ahead(uint32_t jid, uint32_t window) const override;

    // The jobs whose next call is predicted, in the order they would get the
    // agent now (first: the best scorer).
    std::vector<uint32_t> priority() const;
    // The agent's measured seconds per byte (initial_rate until measured).
    double rate() const;
    // What a call of `bytes` of job `jid` would cost on the hosts, as the
    // policy weighs it (measured or modelled; < 0 for an unknown job).
    double host_cost(uint32_t jid, uint8_t coll, double bytes) const;
    // What the policy knows of a job (null: nothing).
    const CallPattern *pattern(uint32_t jid) const;
    // Auto: what each job needs, and whether the pool is divided now (the
    // needs fit in it).
    const NeedEstimate &needs() const { return need_; }
    bool dividing() const { return need_.total() <= pool_.size(); }

private:
    struct JobState;
    // A tenant's jobs and their granted calls not done (rule 1).
    struct TenantLoad {
        uint32_t jobs = 0;
        uint32_t open = 0;
    };
    // Predictable jobs by (next arrival, JID) (rules 2/3).
    using ByArrival = std::map<std::pair<double, uint32_t>, const JobState *>;
    // The jobs of one window, for `ahead`: per tenant, the instants until
    // which each of its jobs counts (open: forever; else until it is no
    // longer expected, CallPattern::expected), and the latest of them.
    struct ExpectedWindow {
        std::map<uint64_t, std::multiset<double>> until; // by tenant
        std::set<std::pair<double, uint64_t>> latest;    // (latest until, tenant)
    };
    // Where a job sits in the indexes, as index() put it there: every change
    // of its tenant, window, pattern or open calls moves it.
    struct Entries {
        bool counted = false; // in tenants_ (its open calls counted there)
        uint64_t tenant = 0;
        uint32_t window = 0;
        TenantLoad *load = nullptr;
        bool arriving = false; // in by_arrival_ and lateness_ (predictable)
        ByArrival::iterator arrival;
        std::multiset<double>::iterator lateness;
        bool expecting = false; // in expected_[window].until[tenant]
        ExpectedWindow *group = nullptr;
        std::multiset<double> *mine = nullptr;
        std::multiset<double>::iterator until;
    };
    // A granted call's record: when it started, its bytes, and where its
    // predicted end sits in ends_.
    struct Granted {
        double start = 0;
        double bytes = 0;
        std::multiset<std::pair<double, uint64_t>>::iterator end;
    };
    // A call that waits for the pool (Defer), in arrival order.
    struct Waiting {
        uint32_t jid;
        uint64_t mid;
        uint32_t lease; // the lease it asks for
        double hold;    // its predicted hold
        double since;   // when it began to wait
        double host;    // its predicted cost on the hosts
        double bytes;
    };
    struct JobState {
        uint32_t id = 0; // its JID
        uint32_t nmembers = 1;
        uint64_t tenant = 0;      // agg::tenant_key, as of its last call
        uint32_t window = 0;      // the lease its calls take (auto: its last call's)
        uint32_t asked = 0;       // the job's window (the longest lease it may get)
        uint32_t since_probe = 0; // auto: calls since its last probe was granted
        uint32_t probe = 0;       // auto: the lease of the probe it asked for last (0: none)
        CallPattern pattern;
        uint32_t open = 0;                   // granted calls not done (change it with set_open)
        uint32_t denied = 0;                 // calls denied in a row since the last grant
        std::map<uint64_t, Granted> granted; // by mid
        HostCosts host;                      // its members' measures (HOST_COST)
        Entries in;
    };

    double now_s() const;
    JobState &job(uint32_t jid, uint32_t nmembers);
    // The lease a call asks for: its window, or (auto) as above.
    uint32_t lease_size(uint32_t jid, JobState &j, const agg::CallRequest &req, uint64_t tenant,
                        double bytes);
    // Auto: the lease a job of `tenant` would get with `extra` more tenants.
    uint32_t divided_lease(uint32_t jid, uint64_t tenant, uint32_t extra) const;
    double hold(const JobState &j, double bytes) const;
    double host_cost(const JobState &j, uint8_t coll, double bytes) const;
    double beta() const;
    // CalcScore of a call of job `j` of `bytes` (collective `coll`).
    double score(const JobState &j, uint8_t coll, double bytes) const;
    agg::Verdict deny(JobState &j, ina_proto_status_t why);
    // Take a lease of `want` Segs for the call and record it; deny
    // NO_RESOURCES if the pool has not that much.
    agg::Verdict grant(const agg::CallRequest &req, JobState &j, uint32_t want, double now,
                       double bytes);
    // A call that waits, asked again.
    agg::Verdict serve_waiting(const agg::CallRequest &req, JobState &j,
                               WaitLine<Waiting>::iterator w, double now);
    // What the other tenants' open calls have left to run, predicted.
    double busy_for(uint64_t tenant, double now) const;
    // Rule 1 (or a call waits already): wait if that costs less than the
    // hosts (`wait`), else deny BUSY.
    agg::Verdict wait_or_deny(const agg::CallRequest &req, JobState &j, uint32_t want, double now,
                              double bytes);

    // The indexes. index() puts a job that is in none into all (or, if an
    // allocation fails, into none: a std::bad_alloc leaves a job out of the
    // indexes until its next call, never half in); unindex() takes it out
    // of all; refresh() moves it after its pattern changed (same tenant and
    // window); set_open() changes its open calls, allocating nothing.
    void index(uint32_t jid, JobState &j);
    void unindex(JobState &j) noexcept;
    void refresh(uint32_t jid, JobState &j);
    void set_open(JobState &j, uint32_t open) noexcept;
    void add_arrival(uint32_t jid, JobState &j);
    void remove_arrival(JobState &j) noexcept;
    void add_expected(JobState &j);
    void remove_expected(JobState &j) noexcept;
    void move_expected(JobState &j) noexcept;
    // The last instant at which `ahead` counts the job (CallPattern::expected
    // as a deadline; +inf while a call is open, -inf before any).
    double expected_until(const JobState &j) const;

    agg::SegPool &pool_;
    TdmConfig cfg_;
    Now now_;
    agg::Clock::time_point epoch_;
    // Ordered containers throughout: decisions never depend on hash order.
    std::map<uint32_t, JobState> jobs_;
    std::map<uint64_t, TenantLoad> tenants_; // by agg::tenant_key, while it has jobs
    uint64_t open_total_ = 0;                // granted calls not done, all tenants
    ByArrival by_arrival_;
    std::multiset<double> lateness_;              // of the jobs in by_arrival_
    std::map<uint32_t, ExpectedWindow> expected_; // by window
    Estimate rate_;                               // seconds per byte of large granted calls
    NeedEstimate need_;                           // auto
    // Open granted calls by predicted end (with their tenant), and the calls
    // that wait (with `wait`), in arrival order.
    std::multiset<std::pair<double, uint64_t>> ends_;
    WaitLine<Waiting> waiting_;
};

} // namespace ina::sched

#endif

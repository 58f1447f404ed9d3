// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// CalcScore: how much a call deserves the agent, for the time-division
// policy (tdm.h) to compare a call that asks now with the calls other jobs
// are predicted to make while it would run.
//
//   score = (host - ina) / ina  +  ageing * denied
//
// - host: what the call would cost on the hosts (HostModel below);
//   ina: how long it holds the agent when offloaded (measured, predicted).
//   host - ina is the time offloading saves, and dividing by ina makes it a
//   saving per unit of time the call keeps every other job off the agent: the
//   agent is the scarce resource, so it goes where each second of it saves
//   the most. Monotone: more saving at the same hold, a higher score.
// - denied: the job's calls denied in a row since its last grant. Each one
//   adds `ageing`, so a job that keeps losing (to a better scorer, or to
//   the agent being busy) wins after a bounded number of tries: nobody
//   starves. Counting denials, not seconds, keeps it free of any time scale
//   (jobs of microsecond and of second periods age alike).
// - Ties: more denials first, then the call that asks now (it is here; a
//   predicted call may not come). Pure functions of their inputs: the same
//   history gives the same decision on every run.
#ifndef INA_SCHED_SCORE_H
#define INA_SCHED_SCORE_H

#include <cstdint>

namespace ina::sched {

// The host alternative, modelled as Open MPI's tuned algorithms for large
// vectors over links of `beta` seconds per byte with `alpha` seconds of
// latency per step (Hockney's model):
//   allreduce       ring:            2(n-1)/n S beta + 2(n-1) alpha
//   reduce_scatter,
//   allgather       ring:             (n-1)/n S beta +  (n-1) alpha
//   reduce, bcast   pipelined tree:            S beta + ceil(log2 n) alpha
//   barrier         dissemination:                    ceil(log2 n) alpha
// where S is the call's result vector in bytes and n its members.
// Calls from this size on teach the agent its rate (seconds per byte):
// smaller ones measure latency, not bytes per second.
constexpr double kRateMinBytes = 64 * 1024;

struct HostModel {
    double alpha = 10e-6; // seconds per step
    double beta = 0;      // seconds per byte; 0: the agent's own measured rate
};

double host_time(uint8_t coll, double bytes, uint32_t nmembers, double alpha, double beta);

// CalcScore. `ina` is floored at a microsecond (a call never holds the
// agent for nothing).
double calc_score(double host, double ina, uint32_t denied, double ageing);

// One contender for the agent: a call asking now or one predicted.
struct Contender {
    uint32_t jid;
    double score;
    uint32_t denied;
    bool present; // asks now
};

// Whether `a` goes before `b` (the order of use): higher score, then more
// denials, then the present call, then the lower JID.
bool before(const Contender &a, const Contender &b);

} // namespace ina::sched

#endif

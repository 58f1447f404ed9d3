// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// What a call costs on the hosts, as the policies weigh it: the members'
// own measures where they sent some (HOST_COST, protocol 16: what a denied
// call's host algorithm took at the job's member 0), else the model
// (score.h's HostModel). The model is Hockney's over the agent's own rate
// or a configured one; the hosts' real algorithm, their load and the links
// the other jobs' calls share are what it does not see, and what the
// measures bring.
//
// Measures are kept per job, by collective and size class (the power of
// two of the call's bytes), each an Estimate (predictor.h) of seconds and
// of bytes. A call of a class that has measures costs their mean seconds
// scaled by its bytes over their mean bytes; one of a class without, the
// nearest measured class of the same collective within kReach classes,
// scaled alike (large calls are bandwidth-bound: linear in bytes); else the
// model. A measure is kept within kTrust of the model either way (a member
// that reports nonsense moves its own job's decisions that far, no more).
#ifndef INA_SCHED_HOST_COST_H
#define INA_SCHED_HOST_COST_H

#include <cstdint>
#include <map>
#include <utility>

#include "sched/predictor.h"

namespace ina::sched {

class HostCosts {
public:
    static constexpr int kReach = 3;       // classes: up to 8x the bytes either way
    static constexpr double kTrust = 16;   // a measure within model / 16 .. model * 16

    // A member measured a call of `bytes` (collective `coll`) at `secs`.
    void add(uint8_t coll, double bytes, double secs);
    // The cost of a call of `bytes` on the hosts from the measures; < 0 if
    // none is near enough.
    double measured(uint8_t coll, double bytes) const;
    // measured(), kept within kTrust of `model`, or `model` without one.
    double cost(uint8_t coll, double bytes, double model) const;
    // Whether a call of `bytes` should go to the hosts once to be measured:
    // no measure is near it, and none was asked for its class before (this
    // marks the class asked). Strong guarantee on std::bad_alloc.
    bool probe(uint8_t coll, double bytes);
    bool empty() const { return classes_.empty(); }

private:
    struct Class {
        Estimate secs; // (no samples: only probed so far)
        Estimate bytes;
        bool probed = false;
    };
    static int size_class(double bytes);
    std::map<std::pair<uint8_t, int>, Class> classes_; // by (coll, size class)
};

} // namespace ina::sched

#endif

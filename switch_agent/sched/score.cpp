// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// CalcScore and the host model (see score.h).
#include "sched/score.h"

#include <algorithm>
#include <cmath>

#include "ina_proto.h"

namespace ina::sched {

double host_time(uint8_t coll, double bytes, uint32_t nmembers, double alpha, double beta)
{
    const double n = std::max<uint32_t>(nmembers, 1);
    const double steps_tree = std::ceil(std::log2(n));
    switch (coll) {
    case INA_COLL_ALLREDUCE:
        return 2 * (n - 1) / n * bytes * beta + 2 * (n - 1) * alpha;
    case INA_COLL_ALLGATHER:
    case INA_COLL_REDUCE_SCATTER:
        return (n - 1) / n * bytes * beta + (n - 1) * alpha;
    case INA_COLL_BARRIER:
        return steps_tree * alpha;
    default: // reduce, bcast
        return bytes * beta + steps_tree * alpha;
    }
}

double calc_score(double host, double ina, uint32_t denied, double ageing)
{
    const double hold = std::max(ina, 1e-6);
    return (host - hold) / hold + ageing * denied;
}

bool before(const Contender &a, const Contender &b)
{
    if (a.score != b.score) {
        return a.score > b.score;
    }
    if (a.denied != b.denied) {
        return a.denied > b.denied;
    }
    if (a.present != b.present) {
        return a.present;
    }
    return a.jid < b.jid;
}

} // namespace ina::sched

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The hosts' cost of a call, measured or modelled (see host_cost.h).
#include "sched/host_cost.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace ina::sched {

int HostCosts::size_class(double bytes)
{
    return bytes < 1 ? 0 : std::ilogb(bytes) + 1;
}

void HostCosts::add(uint8_t coll, double bytes, double secs)
{
    if (!(secs > 0) || !std::isfinite(secs) || !(bytes >= 0) || !std::isfinite(bytes)) {
        return;
    }
    Class &c = classes_[{coll, size_class(bytes)}];
    c.secs.add(secs);
    c.bytes.add(bytes);
}

double HostCosts::measured(uint8_t coll, double bytes) const
{
    const int want = size_class(bytes);
    const Class *best = nullptr;
    int dist = kReach + 1;
    // The classes of `coll` within reach, both ways: at most 2 kReach + 1.
    for (auto it = classes_.lower_bound({coll, want - kReach});
         it != classes_.end() && it->first.first == coll && it->first.second <= want + kReach;
         ++it) {
        if (it->second.secs.samples() == 0) {
            continue; // probed, not measured yet
        }
        const int d = std::abs(it->first.second - want);
        if (d < dist) {
            dist = d;
            best = &it->second;
        }
    }
    if (best == nullptr) {
        return -1;
    }
    const double mean_bytes = best->bytes.mean();
    return mean_bytes > 0 ? best->secs.mean() * std::max(bytes, 1.0) / std::max(mean_bytes, 1.0)
                          : best->secs.mean();
}

bool HostCosts::probe(uint8_t coll, double bytes)
{
    if (measured(coll, bytes) >= 0) {
        return false;
    }
    Class &c = classes_[{coll, size_class(bytes)}];
    if (c.probed) {
        return false;
    }
    c.probed = true;
    return true;
}

double HostCosts::cost(uint8_t coll, double bytes, double model) const
{
    const double m = measured(coll, bytes);
    if (m < 0 || !(model > 0)) {
        return m < 0 ? model : m;
    }
    return std::clamp(m, model / kTrust, model * kTrust);
}

} // namespace ina::sched

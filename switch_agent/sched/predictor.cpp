// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The online estimator of a job's call pattern (see predictor.h).
#include "sched/predictor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ina::sched {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// Doubles as unsigned integers in the same order (negatives reversed below
// the positives), so that a bisection can walk them.
uint64_t ordered(double x)
{
    uint64_t b;
    std::memcpy(&b, &x, sizeof b);
    return b >> 63 ? ~b : b | uint64_t{1} << 63;
}

double from_ordered(uint64_t u)
{
    const uint64_t b = u >> 63 ? u & ~(uint64_t{1} << 63) : ~u;
    double x;
    std::memcpy(&x, &b, sizeof x);
    return x;
}

// The last `now` at which now - last < quiet holds as doubles compute it.
// now - last grows with now, so those instants end at one double: last +
// quiet or its neighbour (the sum may round either way) when the times are
// of one sign, else found by bisection over all doubles (64 steps at most,
// whatever the values).
double quiet_until(double last, double quiet)
{
    if (std::isnan(quiet) || quiet == -kInf) {
        return -kInf; // never
    }
    if (quiet == kInf) {
        return kInf; // always
    }
    const auto holds = [&](double now) { return now - last < quiet; };
    const double x = last + quiet;
    for (const double y : {x, std::nextafter(x, -kInf)}) {
        if (holds(y) && !holds(std::nextafter(y, kInf))) {
            return y;
        }
    }
    uint64_t lo = ordered(-kInf); // holds (last is finite)
    uint64_t hi = ordered(kInf);  // does not
    while (hi - lo > 1) {
        const uint64_t mid = lo + (hi - lo) / 2;
        (holds(from_ordered(mid)) ? lo : hi) = mid;
    }
    return from_ordered(lo);
}
} // namespace

double Estimate::band() const { return 4 * dev_ + std::fabs(mean_) / 8; }

void Estimate::add(double x)
{
    if (n_ == 0) {
        mean_ = x;
        dev_ = std::fabs(x) / 2; // RFC 6298's first deviation
        n_ = 1;
        return;
    }
    if (n_ >= 2 && std::fabs(x - mean_) > band()) {
        outliers_[noutliers_++] = x;
        if (noutliers_ < kPhase) {
            return; // one odd sample does not move the estimate
        }
        // A new phase: restart from the outliers alone.
        double sum = 0;
        for (double o : outliers_) {
            sum += o;
        }
        mean_ = sum / kPhase;
        dev_ = 0;
        for (double o : outliers_) {
            dev_ += std::fabs(o - mean_);
        }
        dev_ /= kPhase;
        n_ = kPhase;
        noutliers_ = 0;
        return;
    }
    noutliers_ = 0;
    dev_ = (1 - kDevGain) * dev_ + kDevGain * std::fabs(x - mean_);
    mean_ = (1 - kGain) * mean_ + kGain * x;
    ++n_;
}

void CallPattern::arrived(double t, double bytes, uint8_t coll)
{
    if (arrivals_ > 0) {
        gap_.add(std::max(0.0, t - last_));
    }
    bytes_.add(bytes);
    last_ = t;
    coll_ = coll;
    ++arrivals_;
}

void CallPattern::held(double secs, double bytes)
{
    hold_.add(secs);
    hold_bytes_.add(bytes);
}

double CallPattern::hold_for(double bytes) const
{
    if (hold_.samples() == 0) {
        return -1;
    }
    const double ref = std::max(hold_bytes_.mean(), 1.0);
    return hold_.mean() * std::max(bytes, 1.0) / ref;
}

double CallPattern::expected_until(double quiet) const
{
    if (arrivals_ == 0) {
        return -kInf;
    }
    if (predictable()) {
        return next_arrival() + lateness(); // expected(): now <= this
    }
    return quiet_until(last_, quiet);
}

double earliest_expected_arrival(double now, double lateness)
{
    // t + lateness (lateness <= the bound) rounds up by half a unit in the
    // last place of the magnitudes at most, and computing the result costs
    // three more roundings: a margin of 4 epsilon (8 such units) and the
    // least normal double (below it additions are exact) covers them all.
    constexpr double kEps = std::numeric_limits<double>::epsilon();
    return (now - lateness) -
           (4 * kEps * (std::fabs(now) + std::fabs(lateness)) + std::numeric_limits<double>::min());
}

} // namespace ina::sched

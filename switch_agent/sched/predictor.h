// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// What the time-division policy (tdm.h) learns of each job, online, from the
// calls it is asked about: how far apart they arrive, how large they are,
// and how long a granted one holds the agent. Each is an Estimate: a
// smoothed mean and mean deviation with the gains of TCP's round-trip
// estimator (RFC 6298: 1/8 and 1/4), so it follows a drifting quantity
// within about eight samples and forgets an old value geometrically. A job
// that changes phase (a training loop moving from one layer group or batch
// size to another) gives samples far outside the band the estimate expects;
// a single one is ignored (a one-off stall does not move the prediction),
// kPhase in a row replace the history: the estimate restarts from them.
#ifndef INA_SCHED_PREDICTOR_H
#define INA_SCHED_PREDICTOR_H

#include <array>
#include <cstdint>

#include "scheduler.h"

namespace ina::sched {

class Estimate {
public:
    static constexpr double kGain = 1.0 / 8;    // of the mean
    static constexpr double kDevGain = 1.0 / 4; // of the deviation
    static constexpr unsigned kPhase = 3;       // outliers in a row that start a new phase

    void add(double x);
    unsigned samples() const { return n_; }
    double mean() const { return mean_; }
    double dev() const { return dev_; }
    // How far from the mean a sample may fall and still belong to this
    // phase: four deviations (as RFC 6298's timeout) plus an eighth of the
    // mean, so that a perfectly regular quantity still tolerates jitter.
    double band() const;

private:
    double mean_ = 0;
    double dev_ = 0;
    unsigned n_ = 0;
    std::array<double, kPhase> outliers_{};
    unsigned noutliers_ = 0;
};

// One job's calls as the agent sees them. Times are seconds on the
// scheduler's clock (a double: the estimator's arithmetic wants one).
class CallPattern {
public:
    // A call arrives (its first block, from any member): `bytes` of result.
    void arrived(double t, double bytes, uint8_t coll);
    // A granted call of `bytes` held the agent for `secs`.
    void held(double secs, double bytes);

    // The next arrival can be predicted once two gaps were seen.
    bool predictable() const { return gap_.samples() >= 2; }
    // When the next call should arrive, and how late it may be and still be
    // expected (the gap's band).
    double next_arrival() const { return last_ + gap_.mean(); }
    double lateness() const { return gap_.band(); }
    double next_bytes() const { return bytes_.mean(); }
    uint8_t last_coll() const { return coll_; }
    // How long a call of `bytes` should hold the agent, from this job's
    // granted calls (scaled by size from their mean size); < 0 if none yet.
    double hold_for(double bytes) const;

    const Estimate &gap() const { return gap_; }
    // Calls seen, and when the latest arrived.
    uint64_t arrivals() const { return arrivals_; }
    double last_arrival() const { return last_; }
    // Whether a call of this job is to be expected at `now` or soon: its
    // next arrival is not overdue beyond the band, or, with too few calls
    // to predict, one came within the last `quiet` seconds.
    bool expected(double now, double quiet) const
    {
        if (arrivals_ == 0) {
            return false;
        }
        return predictable() ? now <= next_arrival() + lateness() : now - last_ < quiet;
    }
    // The last instant at which expected(now, quiet) holds: for every now,
    // expected(now, quiet) == (now <= expected_until(quiet)), in the same
    // double arithmetic (-inf: never, as before the first call). A deadline
    // that an index can order jobs by.
    double expected_until(double quiet) const;

private:
    Estimate gap_;
    Estimate bytes_;
    Estimate hold_;       // seconds a granted call held the agent
    Estimate hold_bytes_; // their sizes
    double last_ = 0;
    uint64_t arrivals_ = 0;
    uint8_t coll_ = 0;
};

// A bound for an index of patterns by next_arrival(): no pattern whose
// lateness() is at most `lateness` and whose next_arrival() lies below the
// result has next_arrival() + lateness() >= now, as doubles compute it. It is
// now - lateness less a margin of a few units in the last place (that sum
// may round up), so it costs a search by arrival nothing noticeable.
double earliest_expected_arrival(double now, double lateness);

} // namespace ina::sched

#endif

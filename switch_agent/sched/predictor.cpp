// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The online estimator of a job's call pattern (see predictor.h).
#include "sched/predictor.h"

#include <algorithm>
#include <cmath>

namespace ina::sched {

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

} // namespace ina::sched

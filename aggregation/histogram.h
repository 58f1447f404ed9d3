// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A fixed-bucket histogram of durations, as Prometheus exposes them: counts
// per upper bound (cumulated when read), their sum and their number. The
// bounds span what a block's time in an agent can be, from a few hundred
// nanoseconds (a Seg completed by the last rank on a fast fabric) to seconds
// (a straggler rank). Recording is one comparison chain and two additions.
#ifndef INA_AGG_HISTOGRAM_H
#define INA_AGG_HISTOGRAM_H

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace ina::agg {

class LatencyHistogram {
public:
    // Upper bounds, in seconds (the last bucket, +Inf, is implicit).
    static constexpr std::array<double, 16> kBounds = {
        1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4,
        5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 1e-1, 1.0, 10.0};

    void record(std::chrono::nanoseconds d)
    {
        const double s = std::chrono::duration<double>(d).count();
        size_t i = 0;
        while (i < kBounds.size() && s > kBounds[i]) {
            ++i;
        }
        ++counts_[i];
        sum_ += s;
        ++count_;
    }
    // Observations at most kBounds[i] (i == kBounds.size(): all of them).
    uint64_t cumulative(size_t i) const
    {
        uint64_t n = 0;
        for (size_t j = 0; j <= i && j < counts_.size(); ++j) {
            n += counts_[j];
        }
        return n;
    }
    double sum() const { return sum_; }
    uint64_t count() const { return count_; }

private:
    std::array<uint64_t, kBounds.size() + 1> counts_{};
    double sum_ = 0;
    uint64_t count_ = 0;
};

} // namespace ina::agg

#endif

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Waiting that matches the transport: how long a waiter (a rank's engine,
// its progress thread, the agent's loop) busy-polls its link before it arms
// the event fd and sleeps. Sleeping costs a wake-up per hop (tens of us on
// loopback, more than a UCX round trip); spinning costs a core. So a waiter
// spins only while it waits for something (calls outstanding, Segs in
// flight), only for about the wait it has recently seen, and never longer
// than a bound (0: never). A wait expected to outlast the bound is not
// spun at all: the event would most likely come after the spin anyway, and
// an oversubscribed node (more ranks than cores) needs that core.
//
// SpinPolicy is pure (no clock, no syscalls): the waiter measures each wait
// and feeds it back; spin_poll() is the loop that uses its answer.
#ifndef INA_SPIN_POLICY_H
#define INA_SPIN_POLICY_H

#include <sched.h>

#include <algorithm>
#include <chrono>

namespace ina {

// The default bound of one spin, in microseconds: a few loopback round trips
// (docs/perf-history/agent-data-path.md, "Waiting"), far below a scheduler quantum.
constexpr int kDefaultSpinUs = 100;

struct SpinConfig {
    std::chrono::microseconds max{kDefaultSpinUs}; // bound of one spin; 0: never spin
    bool yield = false; // sched_yield between polls (oversubscribed node)
};

class SpinPolicy {
public:
    using Duration = std::chrono::nanoseconds;

    // Spin this many times the expected wait: waits vary, a spin that ends
    // just before the event pays both the spin and the wake-up.
    static constexpr int kFactor = 2;
    // A new wait weighs 1/2^kShift in the average: one hiccup (a page fault,
    // a preemption) does not stop spinning, two long waits in a row do.
    static constexpr int kShift = 3;
    // A wait counts as at most kClip bounds: an application that computes
    // for seconds between collectives must not keep the next hundred
    // round trips from spinning.
    static constexpr int kClip = 4;

    SpinPolicy() = default;
    explicit SpinPolicy(const SpinConfig &cfg) : cfg_(cfg) {}

    const SpinConfig &config() const { return cfg_; }

    // How long to poll before sleeping, for a wait that starts now.
    // Nothing outstanding: nothing to wait for, sleep at once (an idle
    // waiter uses no CPU). Before any wait was seen: the whole bound.
    Duration budget(bool outstanding) const
    {
        const Duration max = cfg_.max;
        if (!outstanding || max <= Duration::zero()) {
            return Duration::zero();
        }
        if (!learned_) {
            return max;
        }
        if (expected_ > max) {
            return Duration::zero();
        }
        return std::min<Duration>(kFactor * expected_, max);
    }

    // A wait ended: its first event came `waited` after it began, or none
    // came and `waited` is how long it lasted (a lower bound, as good).
    void observe(Duration waited)
    {
        const Duration sample = std::clamp<Duration>(waited, Duration::zero(),
                                                     kClip * Duration(cfg_.max));
        if (!learned_) {
            expected_ = sample;
            learned_ = true;
            return;
        }
        expected_ += (sample - expected_) / (1 << kShift);
    }

    // The average wait (an EWMA of the observed ones); zero before any.
    Duration expected() const { return expected_; }

private:
    SpinConfig cfg_;
    Duration expected_{0};
    bool learned_ = false;
};

// Run poll() until it returns true (an event) or `budget` has passed; poll()
// runs at least once. Between polls the CPU is yielded when asked, so that
// other runnable processes on an oversubscribed core run meanwhile.
// Returns whether poll() saw an event.
template <typename Poll> bool spin_poll(SpinPolicy::Duration budget, bool yield, Poll &&poll)
{
    using Clock = std::chrono::steady_clock;
    const Clock::time_point end = Clock::now() + budget;
    for (;;) {
        if (poll()) {
            return true;
        }
        if (Clock::now() >= end) {
            return false;
        }
        if (yield) {
            sched_yield();
        }
    }
}

} // namespace ina

#endif

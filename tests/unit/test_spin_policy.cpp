// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Unit tests of the waiting policy (common/spin_policy.h): the budget before
// any wait, its adaptation down and up to the observed waits, the clamp to
// the bound, the zero bound, no spin with nothing outstanding, the stop on
// long waits and the way back, and spin_poll's loop. No test depends on
// speed: the policy sees only the durations fed to it, and spin_poll is
// checked with a zero budget or a poll that ends it.
#include "spin_policy.h"

#include <check.h>
#include "check_main.h"

#include <chrono>

namespace {

using ina::SpinConfig;
using ina::SpinPolicy;
using std::chrono::microseconds;
using Ns = SpinPolicy::Duration;

SpinPolicy policy(int max_us, bool yield = false)
{
    SpinConfig cfg;
    cfg.max = microseconds(max_us);
    cfg.yield = yield;
    return SpinPolicy(cfg);
}

// Feed the same wait n times.
void feed(SpinPolicy &p, Ns waited, int n)
{
    for (int i = 0; i < n; ++i) {
        p.observe(waited);
    }
}

START_TEST(test_default_config)
{
    SpinPolicy p;
    ck_assert(p.config().max == microseconds(ina::kDefaultSpinUs));
    ck_assert(!p.config().yield);
    ck_assert(p.expected() == Ns::zero());
}
END_TEST

START_TEST(test_unlearned_spins_whole_bound)
{
    SpinPolicy p = policy(150);
    ck_assert(p.budget(true) == microseconds(150));
}
END_TEST

START_TEST(test_idle_never_spins)
{
    SpinPolicy p = policy(200);
    ck_assert(p.budget(false) == Ns::zero());
    feed(p, microseconds(10), 20);
    ck_assert(p.budget(false) == Ns::zero());
    ck_assert(p.budget(true) > Ns::zero());
}
END_TEST

START_TEST(test_zero_bound_never_spins)
{
    SpinPolicy p = policy(0);
    ck_assert(p.budget(true) == Ns::zero());
    feed(p, microseconds(5), 50);
    ck_assert(p.budget(true) == Ns::zero());
    feed(p, std::chrono::seconds(1), 3);
    ck_assert(p.budget(true) == Ns::zero());
}
END_TEST

START_TEST(test_first_wait_is_the_estimate)
{
    SpinPolicy p = policy(200);
    p.observe(microseconds(30));
    ck_assert(p.expected() == microseconds(30));
    ck_assert(p.budget(true) == SpinPolicy::kFactor * microseconds(30));
}
END_TEST

START_TEST(test_adapts_down)
{
    SpinPolicy p = policy(200);
    p.observe(microseconds(80));
    const Ns before = p.budget(true);
    feed(p, microseconds(10), 100);
    const Ns after = p.budget(true);
    ck_assert(after < before);
    // Converged on the short wait (integer EWMA: within a few ns).
    ck_assert(p.expected() >= microseconds(10));
    ck_assert(p.expected() < microseconds(10) + Ns(100));
    ck_assert(after >= SpinPolicy::kFactor * microseconds(10));
    ck_assert(after < SpinPolicy::kFactor * (microseconds(10) + Ns(100)));
}
END_TEST

START_TEST(test_adapts_up)
{
    SpinPolicy p = policy(200);
    feed(p, microseconds(10), 50);
    const Ns before = p.budget(true);
    feed(p, microseconds(60), 100);
    ck_assert(p.budget(true) > before);
    ck_assert(p.expected() > microseconds(59));
    ck_assert(p.expected() <= microseconds(60));
}
END_TEST

START_TEST(test_clamped_to_bound)
{
    SpinPolicy p = policy(100);
    // k x 90 us is beyond the bound, the wait itself is not: spin the bound.
    feed(p, microseconds(90), 200);
    ck_assert(p.expected() <= microseconds(100));
    ck_assert(p.budget(true) == microseconds(100));
}
END_TEST

START_TEST(test_long_waits_stop_spinning)
{
    SpinPolicy p = policy(100);
    feed(p, microseconds(20), 50);
    ck_assert(p.budget(true) > Ns::zero());
    // The application computes for seconds: no spin for the next waits...
    feed(p, std::chrono::seconds(10), 2);
    ck_assert(p.budget(true) == Ns::zero());
    // ...but each counts as a few bounds only.
    ck_assert(p.expected() <= SpinPolicy::kClip * microseconds(100));
    feed(p, std::chrono::seconds(10), 100);
    ck_assert(p.expected() <= SpinPolicy::kClip * microseconds(100));
    ck_assert(p.budget(true) == Ns::zero());
}
END_TEST

START_TEST(test_one_hiccup_keeps_spinning)
{
    SpinPolicy p = policy(100);
    feed(p, microseconds(20), 50);
    p.observe(std::chrono::milliseconds(50)); // one preemption
    ck_assert(p.budget(true) > Ns::zero());
}
END_TEST

START_TEST(test_recovers_after_long_waits)
{
    SpinPolicy p = policy(100);
    feed(p, std::chrono::seconds(1), 100);
    ck_assert(p.budget(true) == Ns::zero());
    // Short round trips again (seen while sleeping: wake-up included).
    int waits = 0;
    while (p.budget(true) == Ns::zero()) {
        p.observe(microseconds(40));
        ck_assert_int_lt(++waits, 100);
    }
    // A handful of waits, not hundreds.
    ck_assert_int_le(waits, 3 * (1 << SpinPolicy::kShift));
    feed(p, microseconds(40), 200);
    // Converged (integer EWMA: within a few ns).
    ck_assert(p.budget(true) >= SpinPolicy::kFactor * microseconds(40));
    ck_assert(p.budget(true) < SpinPolicy::kFactor * (microseconds(40) + Ns(100)));
}
END_TEST

START_TEST(test_negative_wait_is_zero)
{
    SpinPolicy p = policy(100);
    p.observe(Ns(-5000));
    ck_assert(p.expected() == Ns::zero());
    ck_assert(p.budget(true) == Ns::zero());
}
END_TEST

START_TEST(test_spin_poll_zero_budget_polls_once)
{
    int polls = 0;
    const bool hit = ina::spin_poll(Ns::zero(), false, [&] {
        ++polls;
        return false;
    });
    ck_assert(!hit);
    ck_assert_int_eq(polls, 1);
}
END_TEST

START_TEST(test_spin_poll_stops_at_event)
{
    for (bool yield : {false, true}) {
        int polls = 0;
        const bool hit = ina::spin_poll(std::chrono::hours(1), yield, [&] { return ++polls == 3; });
        ck_assert(hit);
        ck_assert_int_eq(polls, 3);
    }
}
END_TEST

} // namespace

int main()
{
    return ina_test::run_suite("spin_policy", "policy",
                               {test_default_config,
                                test_unlearned_spins_whole_bound,
                                test_idle_never_spins,
                                test_zero_bound_never_spins,
                                test_first_wait_is_the_estimate,
                                test_adapts_down,
                                test_adapts_up,
                                test_clamped_to_bound,
                                test_long_waits_stop_spinning,
                                test_one_hiccup_keeps_spinning,
                                test_recovers_after_long_waits,
                                test_negative_wait_is_zero,
                                test_spin_poll_zero_budget_polls_once,
                                test_spin_poll_stops_at_event});
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Unit tests of the liveness verdict (common/liveness.h): no probe before a
// third of the limit, probes every third, lost only after the whole limit
// with a probe unanswered for a third, any message restarting the silence,
// a restart forgetting the probes, and off at 0. No test depends on speed:
// the clock is the one the test gives.
#include "liveness.h"

#include <check.h>
#include "check_main.h"

#include <chrono>

namespace {

using ina::Liveness;
using std::chrono::milliseconds;
using V = Liveness::Verdict;

const Liveness::Clock::time_point t0{std::chrono::hours(1)};
Liveness::Clock::time_point at(int ms) { return t0 + milliseconds(ms); }

START_TEST(test_off_at_zero)
{
    Liveness l;
    ck_assert(!l.enabled());
    l.restart(t0);
    ck_assert(l.check(at(3600000), 0) == V::kFine);
}
END_TEST

START_TEST(test_probe_then_lost)
{
    Liveness l(milliseconds(1500));
    l.restart(t0);
    ck_assert(l.check(at(100), 0) == V::kFine);
    ck_assert(l.check(at(499), 0) == V::kFine);
    ck_assert(l.check(at(500), 0) == V::kProbe); // a third of the limit
    ck_assert(l.due() == at(1000));
    ck_assert(l.check(at(999), 0) == V::kFine);
    ck_assert(l.check(at(1000), 0) == V::kProbe); // again every third
    ck_assert(l.check(at(1499), 0) == V::kFine);
    ck_assert(l.check(at(1500), 0) == V::kLost); // the whole limit, a probe a third old
}
END_TEST

START_TEST(test_lost_waits_for_a_probe)
{
    // Checked for the first time after the whole limit: it probes first,
    // and gives up only a third later (a gap with nobody checking never
    // condemns alone).
    Liveness l(milliseconds(1500));
    l.restart(t0);
    ck_assert(l.check(at(5000), 0) == V::kProbe);
    ck_assert(l.check(at(5499), 0) == V::kFine);
    ck_assert(l.check(at(5500), 0) == V::kLost);
}
END_TEST

START_TEST(test_any_message_restarts)
{
    Liveness l(milliseconds(1500));
    l.restart(t0);
    ck_assert(l.check(at(500), 0) == V::kProbe);
    ck_assert(l.check(at(1400), 1) == V::kFine); // the PONG (or anything) came
    ck_assert(l.silent(at(1400)) == milliseconds(0));
    ck_assert(l.check(at(1899), 1) == V::kFine);
    ck_assert(l.check(at(1900), 1) == V::kProbe);
    ck_assert(l.check(at(2000), 7) == V::kFine);
    ck_assert(l.check(at(2499), 7) == V::kFine); // silent since 2000 only
    ck_assert(l.check(at(2500), 7) == V::kProbe);
}
END_TEST

START_TEST(test_restart_forgets_probes)
{
    Liveness l(milliseconds(900));
    l.restart(t0);
    ck_assert(l.check(at(300), 0) == V::kProbe);
    ck_assert(l.check(at(600), 0) == V::kProbe);
    l.restart(at(800)); // nobody listened for a while, or nothing is asked
    ck_assert(l.due() == at(1100));
    ck_assert(l.check(at(1099), 0) == V::kFine);
    ck_assert(l.check(at(1100), 0) == V::kProbe);
    ck_assert(l.check(at(1399), 0) == V::kFine);
    ck_assert(l.check(at(1400), 0) == V::kProbe);
    ck_assert(l.check(at(1700), 0) == V::kLost);
}
END_TEST

} // namespace

int main()
{
    return ina_test::run_suite("liveness", "verdict",
                               {test_off_at_zero, test_probe_then_lost, test_lost_waits_for_a_probe,
                                test_any_message_restarts, test_restart_forgets_probes});
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The main() of every Check unit test here: one suite, one test case, the
// tests in order; exit status 0 when all passed.
#ifndef INA_TEST_CHECK_MAIN_H
#define INA_TEST_CHECK_MAIN_H

#include <check.h>

#include <initializer_list>

namespace ina_test {

// How long one test may run before Check kills it: a guard against a hang,
// never a measure of speed. Check's own default (4 s) failed tests that
// wait for a timeout of their own (a 10 s progress timeout of the engine
// under the sanitizers on a loaded 2-core machine took 17-20 s for a
// suite); 300 s is 30 times the longest timeout a unit test sets.
// CK_DEFAULT_TIMEOUT in the environment is ignored; CK_TIMEOUT_MULTIPLIER
// still scales it.
constexpr double kHangGuardS = 300;

// timeout_s > 0: a longer guard, for a suite that needs it.
inline int run_suite(const char *suite, const char *tcase,
                     std::initializer_list<const TTest *> tests, double timeout_s = 0)
{
    Suite *s = suite_create(suite);
    TCase *tc = tcase_create(tcase);
    tcase_set_timeout(tc, timeout_s > kHangGuardS ? timeout_s : kHangGuardS);
    for (const TTest *t : tests) {
        tcase_add_test(tc, t);
    }
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

} // namespace ina_test

#endif

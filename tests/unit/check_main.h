// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The main() of every Check unit test here: one suite, one test case, the
// tests in order; exit status 0 when all passed.
#ifndef INA_TEST_CHECK_MAIN_H
#define INA_TEST_CHECK_MAIN_H

#include <check.h>

#include <initializer_list>

namespace ina_test {

// timeout_s > 0 overrides Check's default per-test timeout.
inline int run_suite(const char *suite, const char *tcase,
                     std::initializer_list<const TTest *> tests, double timeout_s = 0)
{
    Suite *s = suite_create(suite);
    TCase *tc = tcase_create(tcase);
    if (timeout_s > 0) {
        tcase_set_timeout(tc, timeout_s);
    }
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

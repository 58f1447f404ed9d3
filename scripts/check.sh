#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# Set up (scripts/setup.sh), then run every test: Check unit tests, agent
# tests with a real ina-switchd, MPI integration tests (make check in build/);
# then the unit and agent tests again under ASan and UBSan, with a short run
# of each fuzzer (scripts/check-asan.sh, in build-asan/).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh" --fuzz || exit 1
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$top/build" || exit 1
make -j"$(nproc)" check VERBOSE=1
rc=$?
start=$(date +%s)
"$top/scripts/check-asan.sh"
rc_asan=$?
echo "== sanitizer pass: $(( $(date +%s) - start )) s"
cd "$top" || exit 1
# Both passes: build/ and build-asan/.
results() { find build/tests build-asan/tests -name '*.trs' -exec cat {} + 2>/dev/null; }
pass=$(results | grep -c '^:test-result: PASS')
fail=$(results | grep -c '^:test-result: \(FAIL\|ERROR\|XPASS\)')
# Sanitizer reports outside any test's verdict count as one failure more.
if ls build-asan/sanitizer-reports/* >/dev/null 2>&1; then
  fail=$((fail + 1))
fi
echo
echo "check: $pass passed, $fail failed"
[ $rc = 0 ] && rc=$rc_asan
exit $rc

#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# Set up (scripts/setup.sh), then run every test: Check unit tests, agent
# tests with a real ina-switchd, MPI integration tests (make check).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh" || exit 1
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$top/build" || exit 1
make -j"$(nproc)" check VERBOSE=1
rc=$?
pass=$(find tests -name '*.trs' -exec cat {} + | grep -c '^:test-result: PASS')
fail=$(find tests -name '*.trs' -exec cat {} + | grep -c '^:test-result: \(FAIL\|ERROR\|XPASS\)')
echo
echo "check: $pass passed, $fail failed"
exit $rc

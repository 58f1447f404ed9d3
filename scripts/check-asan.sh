#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# The sanitizer pass of scripts/check.sh: the unit and agent tests again,
# built with ASan and UBSan (configure --enable-sanitizers), and a few
# seconds of each fuzzer (--enable-fuzz: clang's libFuzzer) on a corpus
# recorded from the agent tests, in build-asan/. The MPI tests stay on the
# normal build (docs/TESTING.md). Needs what `scripts/setup.sh --fuzz`
# installs; run after it (check.sh does).
#
# Every sanitizer report of every process (the agents the tests start, and
# processes whose exit status no test looks at, included) is also written to
# build-asan/sanitizer-reports/; any there fails this pass.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
[ -x configure ] || autoreconf -fi >/dev/null || exit 1
mkdir -p build-asan
cd build-asan || exit 1
conf=(--enable-sanitizers --enable-fuzz)
if [ ! -f config.status ] || [ ../configure -nt config.status ] ||
   ! grep -qF -- "${conf[*]}" config.log; then
  ../configure -q "${conf[@]}" || exit 1
fi
echo "== sanitizer build in $top/build-asan"
make -j"$(nproc)" >/dev/null || exit 1
reports=$PWD/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
# log_path: reports go to files named after each process (stderr gets none).
export ASAN_OPTIONS="log_path=$reports/asan:${ASAN_OPTIONS-}"
export UBSAN_OPTIONS="log_path=$reports/ubsan:${UBSAN_OPTIONS-}"
make -j"$(nproc)" check VERBOSE=1
rc=$?
shopt -s nullglob
found=("$reports"/*)
if [ ${#found[@]} -gt 0 ]; then
  for f in "${found[@]}"; do
    echo "== $f"
    cat "$f"
  done
  echo "check-asan: ${#found[@]} sanitizer reports (above)"
  [ $rc = 0 ] && rc=1
fi
exit $rc

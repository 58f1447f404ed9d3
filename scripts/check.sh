#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# Set up (scripts/setup.sh), then run every test against both Open MPI
# series:
#   4.1  the machine's (Debian 12): Check unit tests, agent tests with a
#        real ina-switchd, MPI integration tests (make check in build/);
#        then the unit and agent tests again under ASan and UBSan, with a
#        short run of each fuzzer (scripts/check-asan.sh, in build-asan/);
#   5.0  Debian 13's, in a chroot (scripts/ompi5-root.sh, made once and
#        kept): the same make check, in build-ompi5/.
# usage: scripts/check.sh [--series 4.1|5.0|all]   (default all)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
series=all
case "${1:-}" in
  --series)
    series=${2:-}
    case $series in 4.1 | 5.0 | all) ;; *) echo "usage: check.sh [--series 4.1|5.0|all]" >&2; exit 2 ;; esac
    ;;
  "") ;;
  *) echo "usage: check.sh [--series 4.1|5.0|all]" >&2; exit 2 ;;
esac
root=1
[ "$(id -u)" = 0 ] || root=0
rc=0
# A pass whose make fails (a build error, a test program that does not link,
# a check-data rule) fails the check even where no test reports a verdict.
broken=()

if [ "$series" != 5.0 ]; then
  "$top/scripts/setup.sh" --fuzz || exit 1
  [ $root = 1 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  cd "$top/build" || exit 1
  start=$(date +%s)
  make -k -j"$(nproc)" check VERBOSE=1 || { rc=1; broken+=("Open MPI 4.1"); }
  echo "== Open MPI 4.1: $(( $(date +%s) - start )) s"
  start=$(date +%s)
  "$top/scripts/check-asan.sh" || { rc=1; broken+=("sanitizer pass"); }
  echo "== sanitizer pass: $(( $(date +%s) - start )) s"
fi

skipped=""
if [ "$series" != 4.1 ]; then
  if [ $root = 0 ]; then
    # (A chroot needs root; a user's own check covers 4.1.)
    [ "$series" = 5.0 ] && { echo "check.sh --series 5.0: run as root (a chroot)" >&2; exit 2; }
    skipped=" (Open MPI 5.0 skipped: not root)"
  else
    start=$(date +%s)
    # shellcheck disable=SC2016 # expanded in the chroot
    "$top/scripts/ompi5-root.sh" run bash -c '
      [ -x configure ] || autoreconf -fi >/dev/null || exit 1
      mkdir -p build-ompi5 && cd build-ompi5 || exit 1
      conf=(--with-ompi-source=/usr/src/openmpi)
      if [ ! -f config.status ] || [ ../configure -nt config.status ] ||
         ! grep -qF -- "${conf[*]}" config.log; then
        ../configure -q "${conf[@]}" || exit 1
      fi
      echo "== building ina against $(ompi_info --version | head -1) in build-ompi5"
      make -j"$(nproc)" >/dev/null || exit 1
      make -k -j"$(nproc)" check VERBOSE=1' || { rc=1; broken+=("Open MPI 5.0"); }
    echo "== Open MPI 5.0: $(( $(date +%s) - start )) s"
  fi
fi

cd "$top" || exit 1
# Each pass's results: build/ and build-asan/ (4.1), build-ompi5/ (5.0).
count() { # pattern dirs...
  local pattern=$1
  shift
  find "$@" -name '*.trs' -exec cat {} + 2>/dev/null | grep -c "$pattern"
}
line=""
pass=0
fail=0
for s in 4.1 5.0; do
  [ "$series" = all ] || [ "$series" = "$s" ] || continue
  if [ $s = 4.1 ]; then dirs=(build/tests build-asan/tests); else dirs=(build-ompi5/tests); fi
  [ -d "${dirs[0]}" ] || continue
  [ $s = 5.0 ] && [ -n "$skipped" ] && continue
  p=$(count '^:test-result: PASS' "${dirs[@]}")
  f=$(count '^:test-result: \(FAIL\|ERROR\|XPASS\)' "${dirs[@]}")
  # Sanitizer reports outside any test's verdict count as one failure more.
  if [ $s = 4.1 ] && ls build-asan/sanitizer-reports/* >/dev/null 2>&1; then
    f=$((f + 1))
  fi
  line="$line, Open MPI $s: $p passed, $f failed"
  pass=$((pass + p))
  fail=$((fail + f))
done
echo
echo "check: $pass passed, $fail failed${line:+ (${line#, })}$skipped"
for b in "${broken[@]}"; do
  echo "check: FAILED: $b (its make exited non-zero; see its log above)"
done
[ $fail = 0 ] || rc=1
exit $rc

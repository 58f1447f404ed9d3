#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# A long fuzzing run of one target:
#   tests/fuzz/run.sh BUILDDIR TARGET RUNS [libFuzzer options...]
# BUILDDIR: a build configured with --enable-fuzz whose make check made the
# corpus (BUILDDIR/tests/fuzz/corpus). Runs fuzz_TARGET (proto or serve) for
# RUNS executions on the corpus (what it finds new goes to work/TARGET, a
# crash to crashes/TARGET-*, both under BUILDDIR/tests/fuzz), then reports
# executions, executions/s, wall time and crashes. libFuzzer stops at the
# first crash: fix it, add the input to tests/fuzz/regressions/TARGET/, run
# again. One core per run; on two cores run the two targets side by side.
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: run.sh BUILDDIR proto|serve RUNS [libFuzzer options...]" >&2; exit 2; }
dir=$1/tests/fuzz
t=$2
runs=$3
shift 3
cd "$dir" || exit 2
[ -x "./fuzz_$t" ] && [ -d "corpus/$t" ] ||
  { echo "run.sh: no $dir/fuzz_$t or its corpus: configure --enable-fuzz, make check" >&2; exit 2; }
mkdir -p "work/$t" crashes
log=work/$t.log
mark=work/$t.start
touch "$mark"
start=$(date +%s.%N)
"./fuzz_$t" -runs="$runs" -timeout=10 -print_final_stats=1 -artifact_prefix="crashes/$t-" \
  "$@" "work/$t" "corpus/$t" >"$log" 2>&1
rc=$?
end=$(date +%s.%N)
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
crashes=$(find crashes -name "$t-*" -newer "$mark" | wc -l)
printf 'fuzz %s: %s executions in %.0f s (%s/s), peak RSS %s MiB, exit %d, %d new crash inputs\n' \
  "$t" "${execs:-?}" "$(awk "BEGIN { print $end - $start }")" "${rate:-?}" "${rss:-?}" "$rc" "$crashes"
if [ "$rc" != 0 ]; then
  grep -E -A30 'ERROR: |runtime error|fuzz_(serve|proto):|==[0-9]+== ' "$log" | head -60
  find crashes -name "$t-*" -newer "$mark"
fi
exit "$rc"

#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# make check's run of one fuzzer (smoke-TARGET.sh): every input of
# regressions/TARGET once (each once broke something), then FUZZ_SECONDS
# (default 5) of fuzzing on the recorded corpus (corpus/TARGET, make-corpus.sh).
# New inputs go to smoke-work/TARGET (not work/, run.sh's), a crash to
# crashes/TARGET-*: the libFuzzer output above it says what broke.
set -uo pipefail
t=$1
bin=./fuzz_$t
[ -x "$bin" ] && [ -d "corpus/$t" ] || { echo "no $bin or corpus/$t: run make check"; exit 99; }
regs=${FUZZ_REGRESSIONS:-$(dirname "$0")/regressions}/$t
shopt -s nullglob
inputs=("$regs"/*)
if [ ${#inputs[@]} -gt 0 ]; then
  echo "== $t: ${#inputs[@]} regression inputs"
  "$bin" "${inputs[@]}" || exit 1
fi
echo "== $t: ${FUZZ_SECONDS:-5} s on $(ls "corpus/$t" | wc -l) seeds"
# A fresh work dir: make check takes the same few seconds every time.
rm -rf "smoke-work/$t"
mkdir -p "smoke-work/$t" crashes
exec "$bin" -max_total_time="${FUZZ_SECONDS:-5}" -timeout=10 -print_final_stats=1 \
  -artifact_prefix="crashes/$t-" "smoke-work/$t" "corpus/$t"

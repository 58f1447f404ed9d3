#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# The fuzzers' seed corpus, from real traffic:
#   make-corpus.sh TOP_BUILDDIR OUTDIR TEST...
# runs the agent tests TEST... of TOP_BUILDDIR/tests/agent with their agents
# recording what they receive (INA_SWITCHD_RECORD, switch_agent/recorder.h),
# turns the recordings into seeds (fuzz_corpus) and keeps, per target, those
# that add coverage (libFuzzer -merge=1) in OUTDIR/proto and OUTDIR/serve.
# Run in tests/fuzz of the build (the fuzz_* programs); make check does it
# whenever the agent was rebuilt. A failing test's traffic is used all the
# same (the tests are checked by make check, not here).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: make-corpus.sh TOP_BUILDDIR OUTDIR TEST..." >&2; exit 2; }
top=$(cd "$1" && pwd)
out=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/rec" "$tmp/raw/proto" "$tmp/raw/serve"
start=$(date +%s)
for t in "$@"; do
  if ! (cd "$top/tests/agent" &&
        INA_SWITCHD="$top/switch_agent/ina-switchd" INA_SWITCHD_RECORD="$tmp/rec" \
        "./$t") >"$tmp/$t.out" 2>&1; then
    echo "make-corpus: $t failed (its traffic is used all the same):" >&2
    tail -5 "$tmp/$t.out" >&2
  fi
done
./fuzz_corpus "$tmp/raw" "$tmp"/rec/*.rec
rm -rf "$out.new"
mkdir -p "$out.new/proto" "$out.new/serve"
for t in proto serve; do
  "./fuzz_$t" -merge=1 "$out.new/$t" "$tmp/raw/$t" >"$tmp/merge-$t.out" 2>&1 ||
    { cat "$tmp/merge-$t.out" >&2; exit 1; }
done
rm -rf "$out"
mv "$out.new" "$out"
echo "make-corpus: $(ls "$out/proto" | wc -l) proto and $(ls "$out/serve" | wc -l) serve seeds" \
     "($(du -sh "$out" | cut -f1)) in $(( $(date +%s) - start )) s"

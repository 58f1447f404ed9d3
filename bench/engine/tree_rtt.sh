#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#
# What a level of agents more costs a small call: in each round,
# `ina_loadgen -p P` through one agent (flat) and then `ina_loadgen -p P
# --tree L [--spines S]` through a tree of agents it spawns (a spine over L
# leaves; with S, a core over S spines over the L leaves), the same ranks,
# bytes and iterations, one job, blocking calls, over the same UCX
# transports (UCX_TLS, default tcp) on loopback. Rounds interleave the two.
# Prints each run's median per-call latency (p50) round by round, then the
# median over the rounds of each, tree/flat, and the cost of one hop:
# (tree - flat) / the one-way hops the tree adds to a block's way (2: leaf to
# spine and back; 4 with --spines: and spine to core and back). It reports;
# it never asserts on time.
#
#   bench/engine/tree_rtt.sh [--rounds 5] [--bytes 8] [--iters 20000]
#                            [--ranks 4] [--leaves 2] [--spines S]
#                            [--tls tcp] [--builddir build]
#                            [-- ina_loadgen options, for both runs]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$top/bench/lib.sh"

rounds=5 bytes=8 iters=20000 ranks=4 leaves=2 spines='' tls=tcp builddir=$top/build
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=${2:?}; shift 2 ;;
    --bytes) bytes=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --ranks) ranks=${2:?}; shift 2 ;;
    --leaves) leaves=${2:?}; shift 2 ;;
    --spines) spines=${2:?}; shift 2 ;;
    --tls) tls=${2:?}; shift 2 ;;
    --builddir) builddir=$(cd "${2:?}" && pwd); shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see -h)" ;;
  esac
done
need_build "$builddir" bench/engine/ina_loadgen
need_build "$builddir" switch_agent/ina-switchd
need_tool python3 python3
lg=$builddir/bench/engine/ina_loadgen
# ina_loadgen checks the shape itself; asking first saves the flat run of a
# round whose tree run would be refused.
[ $((ranks % leaves)) -eq 0 ] || die "--ranks $ranks is not a multiple of --leaves $leaves"
tree=(--tree "$leaves")
hops=2 shape="spine over $leaves leaves"
if [ -n "$spines" ]; then
  [ $((leaves % spines)) -eq 0 ] || die "--leaves $leaves is not a multiple of --spines $spines"
  tree+=(--spines "$spines")
  hops=4 shape="core over $spines spines over $leaves leaves"
fi

out=$(mktemp -d /tmp/ina-tree-rtt.XXXXXX)
trap 'rm -rf "$out"' EXIT

run() { # ina_loadgen options... -> the run's p50 per-call latency in us
  local line
  line=$(UCX_TLS=$tls "$lg" -p "$ranks" -j 1 -s "$bytes" -n "$iters" -W 200 \
           -d "$builddir/switch_agent/ina-switchd" "$@" "${extra[@]}" 2>"$out/lg.err" |
           grep '^RESULT') || die "ina_loadgen $* failed: $(tail -3 "$out/lg.err")"
  grep -o 'p50_us=[0-9.]*' <<<"$line" | cut -d= -f2
}

echo "== $rounds rounds, $ranks ranks, $bytes B, $iters calls each, UCX_TLS=$tls, loopback;" \
  "flat: one agent; tree: $shape, $((ranks / leaves)) per leaf"
for r in $(seq 1 "$rounds"); do
  f=$(run)
  t=$(run "${tree[@]}")
  echo "$f" >>"$out/flat"
  echo "$t" >>"$out/tree"
  echo "round $r: p50 flat $f us, tree $t us"
done
python3 - "$out" "$bytes" "$hops" "$shape" <<'PY'
import statistics, sys
out, nbytes, hops, shape = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
v = {t: [float(x) for x in open(f"{out}/{t}")] for t in ("flat", "tree")}
mf, mt = statistics.median(v["flat"]), statistics.median(v["tree"])
print(f"\n| per-call latency p50, {nbytes} B | median (us) | each round (us) |")
print("|---|---:|---|")
print(f"| flat: one agent | {mf:.1f} | {' '.join(f'{x:.1f}' for x in v['flat'])} |")
print(f"| tree: {shape} | {mt:.1f} | {' '.join(f'{x:.1f}' for x in v['tree'])} |")
print(f"\ntree/flat: {mt / mf:.2f}x; per hop: ({mt:.1f} - {mf:.1f}) / {hops} = "
      f"{(mt - mf) / hops:.1f} us")
PY

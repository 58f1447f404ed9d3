#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#
# Same-run comparison of two builds of ina, for a change that must not slow
# the data path (or that claims to speed it up): builds git revision REV
# beside this checkout (in DIR/base, a detached worktree), then runs the
# demo program (MPI_Allreduce, float sum, verified) on one node through
# `--mca coll ina` with each build's component and agent, interleaved round
# by round, and Open MPI's tuned for reference; prints the median time per
# size and the ratios. With --fabric it also runs bench/fabric/run.sh (root)
# for both builds, one after the other.
#
#   bench/compare.sh REV [--rounds 5] [--np 4] [--sizes 4:16777216] [--iters 20]
#                        [--dir /tmp/ina-compare] [--fabric "--rate 100mbit ..."]
#                        [--mca "--mca coll_ina_node_stage 0"]
#
# --mca: more mpirun arguments for both ina builds (e.g. without the node
# stage, every rank a member of a job at the embedded agent: its data path).
#
# The current build is the one scripts/setup.sh made (build/). Ratios only:
# the machine is shared; read the spread between rounds before a trend.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top/bench/lib.sh"

[ $# -ge 1 ] || die "usage: $0 REV [--rounds N] [--np N] [--sizes MIN:MAX] [--iters K] [--dir DIR] [--fabric ARGS] [--mca ARGS]"
rev=$1; shift
rounds=5 np=4 sizes=4:16777216 iters=20 dir=/tmp/ina-compare fabric='' mca=''
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=${2:?}; shift 2 ;;
    --np) np=${2:?}; shift 2 ;;
    --sizes) sizes=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --dir) dir=${2:?}; shift 2 ;;
    --fabric) fabric=${2:?}; shift 2 ;;
    --mca) mca=${2?}; shift 2 ;;
    *) die "unknown option '$1'" ;;
  esac
done
new=$top/build
need_build "$new" examples/ina_allreduce_demo
base=$("$top/bench/build_rev.sh" "$rev" "$dir" | tail -1) || die "building $rev failed"

allow_root
common=(-np "$np" --oversubscribe --mca mpi_yield_when_idle 1)
out=$dir/runs
rm -rf "$out" && mkdir -p "$out"
run_ina() { # build-dir tag round
  # shellcheck disable=SC2086 # the caller's options, word-split on purpose
  with_component "$1" mpirun "${common[@]}" \
    --mca coll_ina_agent_path "$1/switch_agent/ina-switchd" --mca coll ina $mca \
    "$1/examples/ina_allreduce_demo" -m "$sizes" -i "$iters" 2>/dev/null | grep -v '^#' >"$out/$2.$3"
}
for r in $(seq "$rounds"); do
  echo "== round $r of $rounds"
  run_ina "$base" base "$r"
  run_ina "$new" new "$r"
  mpirun "${common[@]}" --mca coll ^ina "$new/examples/ina_allreduce_demo" -m "$sizes" \
    -i "$iters" 2>/dev/null | grep -v '^#' >"$out/tuned.$r"
done

echo
echo "one node${mca:+ ($mca)}, np=$np, median of $rounds rounds (base/new > 1: the new build is faster)"
python3 - "$out" "$rounds" <<'PY'
import statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(name):
    d = {}
    for r in range(1, rounds + 1):
        for line in open(f"{out}/{name}.{r}"):
            f = line.split()
            if len(f) >= 3:
                d.setdefault(int(f[0]), []).append((float(f[1]), f[2]))
    return d
b, n, t = load("base"), load("new"), load("tuned")
print(f"{'bytes':>10} {'base us':>10} {'new us':>10} {'tuned us':>10} {'base/new':>9} {'tuned/new':>9}  spread(new)  check")
for k in sorted(n):
    mb, mn, mt = (statistics.median(x[0] for x in d[k]) for d in (b, n, t))
    lo, hi = min(x[0] for x in n[k]), max(x[0] for x in n[k])
    ok = all(x[1] == "ok" for x in b[k] + n[k] + t[k])
    print(f"{k:>10} {mb:>10.1f} {mn:>10.1f} {mt:>10.1f} {mb / mn:>9.2f} {mt / mn:>9.2f}  {hi / lo:>10.1f}x  {'ok' if ok else 'WRONG'}")
PY

if [ -n "$fabric" ]; then
  for b in base new; do
    bd=$base; [ $b = new ] && bd=$new
    echo "== bench/fabric/run.sh $fabric --systems tuned,ina --builddir $bd"
    # shellcheck disable=SC2086 # the caller's options, word-split on purpose
    "$top/bench/fabric/run.sh" $fabric --systems tuned,ina --builddir "$bd" --out "$dir/fabric-$b"
  done
  echo "fabric tables: $dir/fabric-base/allreduce.md and $dir/fabric-new/allreduce.md"
fi

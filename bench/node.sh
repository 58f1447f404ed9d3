#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#
# One node, same run: every offloaded collective through ina (the node
# stage: shared memory among the node's ranks, no agent) and through Open
# MPI's own collectives (`--mca coll ^ina`: tuned), interleaved round by
# round; prints the median of the rounds' average times and tuned/ina
# (> 1: ina is faster). ina_bench checks every result (-c).
#
#   bench/node.sh [--np 4] [--rounds 3] [--iters 50] [--colls "allreduce reduce bcast allgather barrier"]
#                 [--allreduce-sizes 8:16777216] [--sizes "8 65536 4194304"] [--mca "..."]
#
# --mca adds parameters to the ina runs (e.g. "--mca coll_ina_node_chunk_bytes 524288").
# Uses the build in build/ (scripts/setup.sh). Ratios only: the machine is shared.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top/bench/lib.sh"
np=4 rounds=3 iters=50 colls="allreduce reduce bcast allgather barrier"
ar_sizes=8:16777216 sizes="8 65536 4194304" extra=''
while [ $# -gt 0 ]; do
  case $1 in
    --np) np=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --colls) colls=${2:?}; shift 2 ;;
    --allreduce-sizes) ar_sizes=${2:?}; shift 2 ;;
    --sizes) sizes=${2:?}; shift 2 ;;
    --mca) extra=${2:?}; shift 2 ;;
    *) die "unknown option '$1'" ;;
  esac
done
bench=$top/build/examples/ina_bench
need_build "$top/build" examples/ina_bench
allow_root
common=(-np "$np" --oversubscribe --mca mpi_yield_when_idle 1)
export_component "$top/build"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# run WHO COLL RANGE: append "bytes avg_usec" lines to $out/WHO.COLL
run() {
  local who=$1 coll=$2 range=$3 sel
  # shellcheck disable=SC2206
  if [ "$who" = ina ]; then sel=(--mca coll ina $extra); else sel=(--mca coll ^ina); fi
  mpirun "${common[@]}" "${sel[@]}" "$bench" -b "$coll" -m "$range" -i "$iters" -c \
    >"$out/last" 2>&1 || { cat "$out/last"; die "$who $coll $range failed"; }
  grep -q WRONG "$out/last" && { cat "$out/last"; die "$who $coll $range: wrong results"; }
  grep -v '^#' "$out/last" | awk '{print $1, $3}' >>"$out/$who.$coll"
}

echo "# bench/node.sh: np $np on one node, $rounds rounds x $iters iterations, $(date -u +%F)"
for coll in $colls; do
  if [ "$coll" = allreduce ]; then ranges=$ar_sizes; else ranges=$(for s in $sizes; do echo "$s:$s"; done); fi
  [ "$coll" = barrier ] && ranges=8:8
  for r in $(seq "$rounds"); do
    for range in $ranges; do
      run ina "$coll" "$range"
      run tuned "$coll" "$range"
    done
  done
  echo
  printf "%-10s %10s %12s %12s %10s\n" "$coll" bytes "ina usec" "tuned usec" tuned/ina
  # median per size of each side, then the ratio
  join <(sort -k1,1n -k2,2g "$out/ina.$coll" | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print k a[k]}' | sort -k1,1) \
       <(sort -k1,1n -k2,2g "$out/tuned.$coll" | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print k a[k]}' | sort -k1,1) |
    awk -v n="$rounds" '{ mi = $(2 + int((n - 1) / 2)); mt = $(2 + n + int((n - 1) / 2));
                          printf "%-10s %10s %12.1f %12.1f %10.2f\n", "", $1, mi, mt, mt / mi }' | sort -k1,1n
done

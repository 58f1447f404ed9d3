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
#                 [--ring] [--builddir build] [--csv FILE]
#
# --mca adds parameters to the ina runs (e.g. "--mca coll_ina_node_chunk_bytes 524288").
# --ring also runs tuned forced to its ring allreduce (for allreduce only,
# interleaved with the others): "ring" in bench/fabric/run.sh.
# --csv FILE writes the medians as collective,system,bytes,avg_usec,busbw_MBps
# (busbw as ina_bench reports it, of the round with the median time).
# Uses the build in build/ (scripts/setup.sh) unless --builddir names another.
# Ratios only: the machine is shared.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top/bench/lib.sh"
np=4 rounds=3 iters=50 colls="allreduce reduce bcast allgather barrier"
ar_sizes=8:16777216 sizes="8 65536 4194304" extra='' ring=0 builddir=$top/build csv=''
while [ $# -gt 0 ]; do
  case $1 in
    --np) np=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --colls) colls=${2:?}; shift 2 ;;
    --allreduce-sizes) ar_sizes=${2:?}; shift 2 ;;
    --sizes) sizes=${2:?}; shift 2 ;;
    --mca) extra=${2:?}; shift 2 ;;
    --ring) ring=1; shift ;;
    --builddir) builddir=${2:?}; shift 2 ;;
    --csv) csv=${2:?}; shift 2 ;;
    *) die "unknown option '$1'" ;;
  esac
done
bench=$builddir/examples/ina_bench
need_build "$builddir" examples/ina_bench
allow_root
common=(-np "$np" --oversubscribe --mca mpi_yield_when_idle 1)
export_component "$builddir"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
[ -z "$csv" ] || echo "collective,system,bytes,avg_usec,busbw_MBps" >"$csv"

# run WHO COLL RANGE: append "bytes avg_usec busbw_MBps" lines to $out/WHO.COLL
run() {
  local who=$1 coll=$2 range=$3 sel
  # shellcheck disable=SC2206
  case $who in
    ina) sel=(--mca coll ina $extra) ;;
    tuned) sel=(--mca coll ^ina) ;;
    # as "ring" in bench/fabric/run.sh: tuned's allreduce algorithm 4
    ring) sel=(--mca coll ^ina --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4) ;;
  esac
  mpirun "${common[@]}" "${sel[@]}" "$bench" -b "$coll" -m "$range" -i "$iters" -c \
    >"$out/last" 2>&1 || { cat "$out/last"; die "$who $coll $range failed"; }
  grep -q WRONG "$out/last" && { cat "$out/last"; die "$who $coll $range: wrong results"; }
  awk '$1 ~ /^[0-9]+$/ && NF == 6 { print $1, $3, $6 }' "$out/last" >>"$out/$who.$coll"
}

# medians FILE: per size (ascending), "bytes median_usec busbw" of the
# round with the median time (the lower median for an even count)
medians() {
  sort -k1,1n -k2,2g "$1" |
    awk 'function out() { m = int((n + 1) / 2); print b, t[m], w[m] }
         NR == 1 || $1 != b { if (n) out(); b = $1; n = 0 } { t[++n] = $2; w[n] = $3 } END { if (n) out() }'
}

echo "# bench/node.sh: np $np on one node, $rounds rounds x $iters iterations, $(date -u +%F)"
for coll in $colls; do
  if [ "$coll" = allreduce ]; then ranges=$ar_sizes; else ranges=$(for s in $sizes; do echo "$s:$s"; done); fi
  [ "$coll" = barrier ] && ranges=8:8
  whos="ina tuned"
  [ "$ring" = 1 ] && [ "$coll" = allreduce ] && whos="ina tuned ring"
  for _ in $(seq "$rounds"); do
    for range in $ranges; do
      for who in $whos; do run "$who" "$coll" "$range"; done
    done
  done
  meds=()
  for who in $whos; do
    meds+=("$out/$who.$coll.med")
    medians "$out/$who.$coll" >"$out/$who.$coll.med"
    [ -z "$csv" ] || awk -v c="$coll" -v s="$who" '{ printf "%s,%s,%s,%.2f,%s\n", c, s, $1, $2, $3 }' \
      "$out/$who.$coll.med" >>"$csv"
  done
  echo
  if [ "$whos" = "ina tuned" ]; then
    printf "%-10s %10s %12s %12s %10s\n" "$coll" bytes "ina usec" "tuned usec" tuned/ina
  else
    printf "%-10s %10s %12s %12s %12s %10s %10s\n" "$coll" bytes "ina usec" "tuned usec" "ring usec" tuned/ina ring/ina
  fi
  # the median per size of each, then the ratios to ina
  awk 'function q(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }
       FNR == 1 { f++ } f == 1 { k[++n] = $1; i[$1] = $2 } f == 2 { t[$1] = $2 } f == 3 { r[$1] = $2 }
       END { for (j = 1; j <= n; j++) { s = k[j]
               if (f < 3) printf "%-10s %10s %12.1f %12.1f %10s\n", "", s, i[s], t[s], q(t[s], i[s])
               else printf "%-10s %10s %12.1f %12.1f %12.1f %10s %10s\n", "", s, i[s], t[s], r[s],
                           q(t[s], i[s]), q(r[s], i[s]) } }' \
    "${meds[@]}"
done

#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#
# A started persistent allreduce (MPI_Allreduce_init once per size, then
# MPI_Start + MPI_Wait; Open MPI 4.1: MPIX_Allreduce_init) against the same
# blocking MPI_Allreduce in a loop, through ina and through Open MPI's own
# components (tuned for the blocking call, libnbc for the persistent one),
# interleaved round by round in one run (examples/ina_bench, results
# checked). Prints the median time per size and the ratios. Never asserts
# on time: ratios only, the machine is shared.
#
#   bench/persistent.sh [--builddir build] [--rounds 5] [--np 4] [--sizes 8:65536]
#                       [--iters 200] [--mca "--mca coll_ina_node_stage 0"]
#
# --mca: more mpirun arguments for the ina runs (e.g. without the node
# stage: every rank a member of a job at the embedded agent).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top/bench/lib.sh"
b=$top/build rounds=5 np=4 sizes=8:65536 iters=200 mca=''
while [ $# -gt 0 ]; do
  case $1 in
    --builddir) b=$(cd "${2:?}" && pwd); shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --np) np=${2:?}; shift 2 ;;
    --sizes) sizes=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --mca) mca=${2?}; shift 2 ;;
    *) die "unknown option '$1'" ;;
  esac
done
need_build "$b" examples/ina_bench
allow_root
out=$(mktemp -d /tmp/ina-persistent.XXXXXX)
export_component "$b" # the --mca coll ^ina runs leave it out
common=(-np "$np" --oversubscribe --mca mpi_yield_when_idle 1)
bench=("$b/examples/ina_bench" -b allreduce -m "$sizes" -i "$iters" -c)
run() { # tag round mpirun-args...
  local tag=$1 r=$2
  shift 2
  mpirun "${common[@]}" "$@" 2>/dev/null | grep -v '^#' >"$out/$tag.$r" ||
    die "the $tag run failed (round $r)"
}
for r in $(seq "$rounds"); do
  echo "== round $r of $rounds"
  # shellcheck disable=SC2086 # the caller's options, word-split on purpose
  run ina "$r" --mca coll_ina_agent_path "$b/switch_agent/ina-switchd" --mca coll ina $mca \
    "${bench[@]}"
  # shellcheck disable=SC2086
  run ina_p "$r" --mca coll_ina_agent_path "$b/switch_agent/ina-switchd" --mca coll ina $mca \
    "${bench[@]}" -P
  run host "$r" --mca coll ^ina "${bench[@]}"
  run host_p "$r" --mca coll ^ina "${bench[@]}" -P
done

echo
echo "allreduce float sum, np=$np${mca:+ ($mca)}, median of $rounds rounds of $iters calls"
echo "(blocking/persistent > 1: the started persistent call is faster)"
python3 - "$out" "$rounds" <<'PY'
import statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(name):
    d = {}
    for r in range(1, rounds + 1):
        for line in open(f"{out}/{name}.{r}"):
            f = line.split()
            if len(f) >= 3:
                d.setdefault(int(f[0]), []).append(float(f[2]))  # avg over ranks
    return d
ina, ina_p, host, host_p = (load(n) for n in ("ina", "ina_p", "host", "host_p"))
print(f"{'bytes':>8} {'ina us':>9} {'ina_P us':>9} {'host us':>9} {'host_P us':>10}"
      f" {'ina/ina_P':>10} {'host/ina_P':>11} {'host_P/ina_P':>13}")
for k in sorted(ina):
    a, p, h, hp = (statistics.median(d[k]) for d in (ina, ina_p, host, host_p))
    print(f"{k:>8} {a:>9.2f} {p:>9.2f} {h:>9.2f} {hp:>10.2f} {a / p:>10.2f} {h / p:>11.2f} {hp / p:>13.2f}")
PY
echo "(runs in $out)"

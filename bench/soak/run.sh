#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# Long runs against one ina-switchd: communicator churn must not
# grow the agent. Starts a standalone agent on loopback, samples its resident
# memory (VmRSS) every second, and runs through it, one after the other:
#   - tests/mpi/test_comm_loop -n CYCLES -a 10: CYCLES MPI_Comm_dup / allreduce
#     / MPI_Comm_free cycles (every one a job opened and freed at the agent);
#   - tests/mpi/test_idup -n ROUNDS: ROUNDS rounds of MPI_Comm_idup, several
#     in flight, completed in crossed orders, each new communicator used.
# Every call is checked by the programs (exact, offloaded). A run that does
# not finish within --timeout is a hang. Reports the agent's RSS at start,
# after warm-up and at the end of each phase, and its job counters.
# Results: OUT/soak.txt, OUT/rss.txt (seconds, kB), OUT/*.log.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$repo/bench/lib.sh"
np=4 cycles=10000 rounds=1000 builddir=$repo/build out=$here/results limit=3600
# Every rank a member at the agent (one node would be served by the node stage
# alone); --mca-extra "--mca coll_ina_node_stage 1 --mca coll_ina_test_node_size 2"
# streams pretend nodes through the node stage instead.
extra="--mca coll_ina_node_stage 0"
usage() {
    cat <<EOF2
usage: $0 [--np N] [--cycles N] [--rounds N] [--builddir DIR] [--out DIR] [--timeout S]
          [--mca-extra "MPIRUN ARGS"]
  defaults: --np $np --cycles $cycles --rounds $rounds --timeout $limit (per phase)
EOF2
}
while (($#)); do
    case $1 in
    --np) np=${2:?}; shift 2 ;;
    --cycles) cycles=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --builddir) builddir=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --timeout) limit=${2:?}; shift 2 ;;
    --mca-extra) extra=${2?}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
agent=$builddir/switch_agent/ina-switchd
tests=$builddir/tests/mpi
for f in "$agent" "$tests/test_comm_loop" "$tests/test_idup"; do
    [[ -x $f ]] || { echo "soak: missing $f (make check -C build/tests/mpi TESTS= builds it)" >&2; exit 1; }
done
mkdir -p "$out"
allow_root

fifo=$(mktemp -u) && mkfifo "$fifo"
"$agent" --listen 127.0.0.1:0 --ready-fd 4 --log-level info 4>"$fifo" 2>"$out/agent.log" &
apid=$!
read -r addr <"$fifo"
rm -f "$fifo"
trap 'kill $apid 2>/dev/null; kill $sampler 2>/dev/null' EXIT
rss() { awk '/^VmRSS/ {print $2}' "/proc/$apid/status"; }
t0=$SECONDS
(while kill -0 "$apid" 2>/dev/null; do echo "$((SECONDS - t0)) $(rss)"; sleep 1; done) >"$out/rss.txt" &
sampler=$!

report=$out/soak.txt
echo "agent $addr (pid $apid), np $np, $extra" >"$report"
echo "rss at start: $(rss) kB" | tee -a "$report"
hangs=0
phase() { # NAME PROG ARGS...
    local name=$1 prog=$2
    shift 2
    local t=$SECONDS rc=0
    with_component "$builddir" \
        timeout -k 10 "$limit" mpirun -np "$np" --oversubscribe --mca mpi_yield_when_idle 1 \
        --mca coll ina --mca coll_ina_agent "$addr" $extra "$tests/$prog" "$@" >"$out/$name.log" 2>&1 || rc=$?
    ((rc == 124 || rc == 137)) && hangs=$((hangs + 1))
    printf '%-28s rc %d  %4d s  agent rss %s kB  %s\n' "$name" "$rc" $((SECONDS - t)) "$(rss)" \
        "$(grep -h 'checks,' "$out/$name.log" | head -1)" | tee -a "$report"
}
phase warmup-100-cycles test_comm_loop -n 100 -a 10
phase "dup-free-$cycles-cycles" test_comm_loop -n "$cycles" -a 10
phase "idup-$rounds-rounds" test_idup -n "$rounds"
echo "hangs: $hangs" | tee -a "$report"
kill -TERM "$apid"
wait "$apid" || true
grep -h 'jobs: \|guard: ' "$out/agent.log" | sed 's/^/agent at exit: /' | tee -a "$report"

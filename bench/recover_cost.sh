#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# What being able to recover from a lost agent costs while the agent is
# healthy: with coll_ina_recover on, every call of a communicator without
# the node stage copies its last window of input and results until the
# agent certifies it (docs/ARCHITECTURE.md, "Recovery from a lost agent");
# with --node-size K (the node stage, ranks [0, K) pretending to be node 0,
# ...), every stream leader copies each RESULT it takes (or its BLOCK, ACK
# only) until the window proves every node has it.
# Runs examples/ina_bench (allreduce, in place) through one standalone agent
# with recovery on and off, interleaved ROUNDS times, and prints the median
# time per size of each and their ratio (on/off; above 1: recovery costs).
# usage: bench/recover_cost.sh [--np N] [--rounds R] [--sizes MIN:MAX] [--iters K]
#          [--node-size K]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top/bench/lib.sh"
np=4 rounds=3 sizes=8:4194304 iters=30 node=(--mca coll_ina_node_stage 0)
while (($#)); do
    case $1 in
    --np) np=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --sizes) sizes=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --node-size) node=(--mca coll_ina_test_node_size "${2:?}"); shift 2 ;;
    *) echo "usage: $0 [--np N] [--rounds R] [--sizes MIN:MAX] [--iters K] [--node-size K]" >&2
       exit 2 ;;
    esac
done
b=$top/build
allow_root
work=$(mktemp -d)
fifo=$work/ready && mkfifo "$fifo"
"$b/switch_agent/ina-switchd" --listen 127.0.0.1:0 --ready-fd 3 3>"$fifo" 2>"$work/agent.log" &
apid=$!
trap 'kill $apid 2>/dev/null; rm -rf "$work"' EXIT
read -r addr <"$fifo"
for ((r = 0; r < rounds; r++)); do
    for rec in 1 0; do
        with_component "$b" \
            mpirun -np "$np" --oversubscribe --mca mpi_yield_when_idle 1 --mca coll ina \
            --mca coll_ina_agent "$addr" "${node[@]}" --mca coll_ina_recover "$rec" \
            "$b/examples/ina_bench" -b allreduce -p -m "$sizes" -i "$iters" \
            >"$work/run-$rec-$r.txt" 2>&1
    done
done
# ina_bench prints "bytes  avg_us ..." rows: median over rounds per size.
python3 - "$work" "$rounds" <<'PY'
import sys, statistics, glob, re
work, rounds = sys.argv[1], int(sys.argv[2])
def rows(rec):
    per = {}
    for f in glob.glob(f"{work}/run-{rec}-*.txt"):
        for line in open(f):
            m = re.match(r"\s*(\d+)\s+([0-9.]+)", line)
            if m:
                per.setdefault(int(m.group(1)), []).append(float(m.group(2)))
    return {k: statistics.median(v) for k, v in per.items()}
on, off = rows(1), rows(0)
print(f"{'bytes':>10} {'recover on us':>14} {'off us':>10} {'on/off':>7}")
for k in sorted(on):
    if k in off:
        print(f"{k:>10} {on[k]:>14.1f} {off[k]:>10.1f} {on[k]/off[k]:>7.2f}")
PY

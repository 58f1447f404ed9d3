#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# No false "agent lost" from the probes: for DURATION seconds, MPI jobs run
# verified collectives (tests/mpi/test_recover, no fault) through one
# standalone agent that is alive but slow: bound to core 0 (--bind core:0)
# while a busy loop of equal priority shares that core, and, with --load,
# a command loading the machine beside (a parallel build). Every rank logs
# at coll_ina_verbose 1, so a liveness verdict ("the agent answered
# nothing") or any recovered call is counted: both must stay 0.
# --tree: a tree of agents instead, a spine and two leaves (the first half
# of the ranks on one), all three on core 0 beside the busy loop: the
# leaves' probes of the spine and the spine's of its leaves must give no
# verdict either ("parent ... lost", "a child agent) lost": counted too).
# Results: OUT/soak.txt, OUT/run-N.log.
# usage: bench/recover/liveness_soak.sh [--duration S] [--np N] [--rounds N]
#          [--liveness-ms MS] [--load "CMD"] [--node-size K] [--tree] [--out DIR]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$top/bench/lib.sh"
duration=600 np=4 rounds=40 liveness=1000 load='' out=$here/soak b=$top/build tree=0
node=(--mca coll_ina_node_stage 0)
while (($#)); do
    case $1 in
    --duration) duration=${2:?}; shift 2 ;;
    --np) np=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --liveness-ms) liveness=${2:?}; shift 2 ;;
    --load) load=${2:?}; shift 2 ;;
    --node-size) node=(--mca coll_ina_test_node_size "${2:?}"); shift 2 ;;
    --tree) tree=1; shift ;;
    --out) out=${2:?}; shift 2 ;;
    *) sed -n '2,17p' "$0" >&2; exit 2 ;;
    esac
done
prog=$b/tests/mpi/test_recover
[[ -x $prog ]] || { echo "liveness_soak: build $prog first" >&2; exit 1; }
allow_root
mkdir -p "$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

fifo=$(mktemp -u) && mkfifo "$fifo"
"$b/switch_agent/ina-switchd" --listen 127.0.0.1:0 --ready-fd 3 --bind core:0 3>"$fifo" \
    2>"$out/agent.log" &
pids+=($!)
read -r addr <"$fifo"
rm -f "$fifo"
where=(--mca coll_ina_agent "$addr")
if ((tree)); then
    laddr=()
    for leaf in 0 1; do
        fifo=$(mktemp -u) && mkfifo "$fifo"
        "$b/switch_agent/ina-switchd" --listen 127.0.0.1:0 --ready-fd 3 --bind core:0 \
            --parent "$addr" 3>"$fifo" 2>"$out/leaf$leaf.log" &
        pids+=($!)
        read -r "laddr[$leaf]" <"$fifo"
        rm -f "$fifo"
    done
    printf 'agent spine %s\nagent leaf0 %s parent spine\nagent leaf1 %s parent spine\n%s\n%s\n' \
        "$addr" "${laddr[0]}" "${laddr[1]}" 'hosts leaf0 hosta' 'hosts leaf1 hostb' >"$out/topology"
    hosts=$(for ((r = 0; r < np; r++)); do ((r < np / 2)) && echo hosta || echo hostb; done |
        paste -sd,)
    where=(--mca coll_ina_topology "$out/topology" --mca coll_ina_test_hosts "$hosts")
fi
# The agent's core is shared with a busy loop: it runs half the time.
taskset -c 0 bash -c 'while :; do :; done' &
pids+=($!)
if [ -n "$load" ]; then
    bash -c "while :; do $load; done" >"$out/load.log" 2>&1 &
    pids+=($!)
fi

runs=0 passed=0 verdicts=0 recovered=0
end=$(($(date +%s) + duration))
while (($(date +%s) < end)); do
    log=$out/run-$runs.log
    rc=0
    with_component "$b" \
        timeout -k 10 600 mpirun -np "$np" --oversubscribe --mca mpi_yield_when_idle 1 \
        --mca coll ina \
        "${where[@]}" "${node[@]}" --mca coll_ina_liveness_ms "$liveness" \
        --mca coll_ina_verbose 1 "$prog" -r "$rounds" >"$log" 2>&1 || rc=$?
    runs=$((runs + 1))
    ((rc == 0)) && passed=$((passed + 1))
    verdicts=$((verdicts + $(grep -c 'the agent answered nothing' "$log" || true)))
    n=$(sed -n 's/^test_recover: \([0-9]*\) calls recovered.*/\1/p' "$log")
    recovered=$((recovered + ${n:-0}))
done
if ((tree)); then
    # The agents' own verdicts on each other, over the whole soak.
    verdicts=$((verdicts + $(cat "$out"/agent.log "$out"/leaf*.log |
        grep -c -e 'parent .* lost' -e 'a child agent) lost' || true)))
fi
printf 'liveness soak: %d s, %d runs of %d rounds (np %d, liveness %d ms, %s on a shared core%s): %d passed, %d "agent lost" verdicts, %d calls recovered\n' \
    "$duration" "$runs" "$rounds" "$np" "$liveness" "$( ((tree)) && echo 'a spine and two leaves' || echo 'agent')" \
    "${load:+, load: $load}" "$passed" "$verdicts" \
    "$recovered" | tee "$out/soak.txt"

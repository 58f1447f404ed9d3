#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# A silently dead link to the agent, on the emulated fabric of
# bench/fabric (root, iproute2, socat): HOSTS hosts in network namespaces
# behind rate-limited veths, the agent in the switch namespace. Each of
# TRIALS runs is tests/mpi/test_recover -c KIND (one call per round, 8 B ..
# 64 MiB in turn, every result checked) through the agent; after a random
# delay the agent's port on the switch (ag0-br) is set down: its packets
# vanish and no connection is closed, as when a cable or switch port dies.
# The ranks (whose own links are fine) must find the agent by its silence
# (coll_ina_liveness_ms) and finish every call exact among themselves.
# Counts runs passed, hangs, wrong results, failed calls, calls recovered,
# and from the cut to the end of the call it struck, beyond that call's own
# time a cycle of sizes earlier (OUT/fault-delays.txt).
# The delay starts with mpirun, so with a small --min-ms the port may go
# down before some ranks reached the agent: those run every call on the
# host, and answer the others' recoveries "denied".
# --ppn P: P ranks per host and the node stage on (each host a node,
# coll_ina_test_node_size P): the hosts' stream leaders recover the calls.
# Results: OUT/deadlink.txt, OUT/<kind>-<n>.log.
# usage: bench/recover/deadlink.sh [--trials N] [--hosts N] [--ppn P] [--rounds N]
#          [--kinds LIST] [--min-ms MS] [--max-ms MS] [--rate RATE] [--out DIR]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=../fabric/fabric.sh
. "$top/bench/fabric/fabric.sh"
# shellcheck source=verdict.sh
. "$here/verdict.sh"
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$top/bench/lib.sh"
trials=20 hosts=4 ppn=1 rounds=60 kinds=allreduce,iallreduce minms=0 maxms=6000 rate=500mbit
out=$here/deadlink b=$top/build limit=300
while (($#)); do
    case $1 in
    --trials) trials=${2:?}; shift 2 ;;
    --hosts) hosts=${2:?}; shift 2 ;;
    --ppn) ppn=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --kinds) kinds=${2:?}; shift 2 ;;
    --min-ms) minms=${2:?}; shift 2 ;;
    --max-ms) maxms=${2:?}; shift 2 ;;
    --rate) rate=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    *) sed -n '2,22p' "$0" >&2; exit 2 ;;
    esac
done
prog=$b/tests/mpi/test_recover
[[ -x $prog ]] || { echo "deadlink: build $prog first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "deadlink: needs root (network namespaces)" >&2; exit 1; }
# The emulated fabric is one per machine: never two runs on it at once
# (bench/fabric/run.sh takes the same lock).
fab_lock || { echo "deadlink: another run uses the emulated fabric (lock /run/lock/$FAB_PREFIX.lock)" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
sw=$(fab_ns_switch)
cleanup() { fab_agent_down; fab_down; }
trap cleanup EXIT
pmix_port=
for ((p = 43000 + RANDOM % 2000; p < 65000; p += 7)); do
    if ! ss -Hltn "sport = :$p" | grep -q .; then pmix_port=$p; break; fi
done
fab_down
fab_up "$hosts" "$rate" 64kb 50ms
fab_relay_up "$hosts" "$pmix_port"
allow_root
export PMIX_MCA_ptl_tcp_ipv4_port=$pmix_port INAFAB_PPN=$ppn INAFAB_PREFIX=$FAB_PREFIX
# One node per emulated host (MPI's runtime sees one node: all run here).
stage=(--mca coll_ina_node_stage 0)
((ppn > 1)) && stage=(--mca coll_ina_test_node_size "$ppn")
report=$out/deadlink.txt
delays=$out/fault-delays.txt
: >"$delays"
printf '%-15s %6s %6s %6s %6s %6s %10s\n' kind runs passed hangs wrong failed recovered |
    tee "$report"
IFS=, read -r -a ks <<<"$kinds"
for kind in "${ks[@]}"; do
    pass=0 hang=0 wrong=0 failed=0 rec=0
    for ((t = 0; t < trials; t++)); do
        ip -n "$sw" link set ag0-br up
        fab_agent_up main "$sw" "$FAB_AGENT_ADDR" "$b/switch_agent/ina-switchd" \
            "$out/$kind-$t.agent.log"
        ms=$((minms + RANDOM % (maxms - minms)))
        rm -f "$out/cut-at"
        (sleep "$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')" &&
            ip -n "$sw" link set ag0-br down && date +%s%N >"$out/cut-at") 9>&- &
        cutter=$!
        rc=0
        with_component "$b" \
            timeout -k 10 "$limit" mpirun -np $((hosts * ppn)) --oversubscribe --bind-to none \
            --mca mpi_yield_when_idle 1 --mca pml ob1 --mca btl tcp,self \
            --mca btl_tcp_if_include "$FAB_HOST_IF" -x UCX_TLS=tcp \
            --mca coll ina --mca coll_ina_agent "$FAB_AGENT_ADDR:$FAB_AGENT_PORT" "${stage[@]}" \
            --mca coll_ina_resume_interval 4 \
            "$top/bench/fabric/rank.sh" "$prog" -c "$kind" -r "$rounds" -a "$out/cut-at" \
            >"$out/$kind-$t.log" 2>&1 9>&- || rc=$?
        wait "$cutter" 2>/dev/null || true
        fab_agent_down
        case $(verdict "$rc" "$out/$kind-$t.log") in
        hang) hang=$((hang + 1)) ;;
        wrong) wrong=$((wrong + 1)) ;;
        failed) failed=$((failed + 1)) ;;
        *) pass=$((pass + 1)) ;;
        esac
        rec=$((rec + $(recovered "$out/$kind-$t.log")))
        delay "$kind" "$out/$kind-$t.log" >>"$delays"
    done
    printf '%-15s %6d %6d %6d %6d %6d %10d\n' "$kind" "$trials" "$pass" "$hang" "$wrong" \
        "$failed" "$rec" | tee -a "$report"
done
delays "$delays" "cut" | tee -a "$report"

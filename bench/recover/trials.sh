#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# Recovery from an agent SIGKILLed at a random moment. For each collective kind,
# TRIALS runs of tests/mpi/test_recover -c KIND: one call per round of 8 B,
# 1000 B, 64 KiB + 8, 1 MiB, 8 MiB and 64 MiB in turn, in place every other
# round, every result checked; rank 0 kills a standalone agent (SIGKILL)
# after a random delay within the run. Counts per kind: runs that passed,
# hangs (past --timeout), wrong results (failed checks) and failed calls
# (any other non-zero exit: an MPI error), and how many calls the ranks
# recovered. Results: OUT/trials.txt, OUT/<kind>-<n>.log.
# --standby: a second agent runs beside, named after the first in
# coll_ina_agent (HOST:PORT|HOST:PORT); after the rounds each run goes on
# until offload has resumed on it (test_recover -R, checks every 4 calls)
# and one more round must be offloaded there; the column `resumed` counts
# runs in which every rank resumed (a run that does not fails).
# --node-size K: the node stage on, ranks [0, K) pretending to be node 0,
# [K, 2K) node 1, ... (coll_ina_test_node_size): the stream leaders of the
# nodes recover the agent's calls among themselves.
# --stripe: the job striped over two agents (coll_ina_agent A0,A1), the
# second one killed: its parts are finished by the ranks, the first agent's
# go on there. (Not with --standby.)
# --tree: a tree of agents, the spine killed: two leaves (--parent), the
# first half of the ranks on one (host "hosta" in a coll_ina_topology
# file), the rest on the other; with --node-size the leaves' members are
# nodes. (Not with --standby or --stripe.) --leaf: the fault strikes the
# second leaf instead of the spine: its own ranks lose their agent, the
# other leaf's ranks have theirs and are told by the spine, which finds a
# stopped leaf by its probes (ina-switchd --child-liveness-ms).
# --fault stop|stopcont: instead of SIGKILL, the agent (the spine with
# --tree, the second agent with --stripe) is stopped (SIGSTOP) and left
# stopped, or continued 5 s later: its connections stay open, and only the
# ranks' liveness probes (coll_ina_liveness_ms) find it. Each run's time
# from the fault to the end of the call it struck, less that call's own
# time a cycle earlier, goes to OUT/fault-delays.txt; its distribution is
# printed at the end (a fault in the first cycle of sizes has no earlier
# call to compare with: --min-ms puts it later).
# usage: bench/recover/trials.sh [--trials N] [--np N] [--rounds N]
#          [--kinds LIST] [--min-ms MS] [--max-ms MS] [--out DIR] [--timeout S] [--standby]
#          [--node-size K] [--stripe] [--tree [--leaf]] [--fault kill|stop|stopcont]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=verdict.sh
. "$here/verdict.sh"
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$top/bench/lib.sh"
trials=20 np=4 rounds=12 kinds=allreduce,reduce,bcast,allgather,reduce_scatter,iallreduce
minms=0 maxms=1200 out=$here/results limit=300 b=$top/build standby=0 node=(--mca coll_ina_node_stage 0)
stripe=0 tree=0 leafvictim=0 fault=kill
while (($#)); do
    case $1 in
    --trials) trials=${2:?}; shift 2 ;;
    --np) np=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --kinds) kinds=${2:?}; shift 2 ;;
    --min-ms) minms=${2:?}; shift 2 ;;
    --max-ms) maxms=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --timeout) limit=${2:?}; shift 2 ;;
    --builddir) b=${2:?}; shift 2 ;;
    --standby) standby=1; shift ;;
    --node-size) node=(--mca coll_ina_test_node_size "${2:?}"); shift 2 ;;
    --stripe) stripe=1; shift ;;
    --tree) tree=1; shift ;;
    --leaf) leafvictim=1; shift ;;
    --fault) fault=${2:?}; shift 2 ;;
    *) sed -n '2,40p' "$0" >&2; exit 2 ;;
    esac
done
prog=$b/tests/mpi/test_recover
[[ -x $prog ]] || { echo "trials: build $prog first (make -C build/tests/mpi test_recover)" >&2; exit 1; }
allow_root
mkdir -p "$out"
report=$out/trials.txt
delays=$out/fault-delays.txt
: >"$delays"
printf '%-15s %6s %6s %6s %6s %6s %10s %8s\n' kind runs passed hangs wrong failed recovered resumed |
    tee "$report"
IFS=, read -r -a ks <<<"$kinds"
# An interrupted run leaves no agent behind (one stopped by --fault stop
# would stay stopped for good, its connections open), nor its mpirun.
apid='' spid=''
trap 'for p in $apid $spid; do kill -9 "$p" 2>/dev/null || true; done; pkill -TERM -P $$ || true' EXIT
for kind in "${ks[@]}"; do
    pass=0 hang=0 wrong=0 failed=0 rec=0 resumed=0
    for ((t = 0; t < trials; t++)); do
        fifo=$(mktemp -u) && mkfifo "$fifo"
        "$b/switch_agent/ina-switchd" --listen 127.0.0.1:0 --ready-fd 3 3>"$fifo" \
            2>"$out/$kind-$t.agent.log" &
        apid=$!
        read -r addr <"$fifo"
        spid='' extra=() where=(--mca coll_ina_agent "$addr")
        rm -f "$fifo"
        if ((tree)); then
            # The agent struck is the spine (the leaves stay), or with
            # --leaf the second leaf (the spine and the first leaf stay).
            spid='' laddr=() lpid=()
            for leaf in 0 1; do
                fifo=$(mktemp -u) && mkfifo "$fifo"
                "$b/switch_agent/ina-switchd" --listen 127.0.0.1:0 --ready-fd 3 --parent "$addr" \
                    3>"$fifo" 2>"$out/$kind-$t.leaf$leaf.log" &
                lpid[leaf]=$!
                read -r "laddr[$leaf]" <"$fifo"
                rm -f "$fifo"
            done
            if ((leafvictim)); then
                spid="$apid ${lpid[0]}" apid=${lpid[1]}
            else
                spid="${lpid[*]}"
            fi
            printf 'agent spine %s\nagent leaf0 %s parent spine\nagent leaf1 %s parent spine\n%s\n%s\n' \
                "$addr" "${laddr[0]}" "${laddr[1]}" 'hosts leaf0 hosta' 'hosts leaf1 hostb' \
                >"$out/$kind-$t.topology"
            hosts=$(for ((r = 0; r < np; r++)); do ((r < np / 2)) && echo hosta || echo hostb; done |
                paste -sd,)
            where=(--mca coll_ina_topology "$out/$kind-$t.topology" --mca coll_ina_test_hosts "$hosts")
        fi
        if ((stripe)); then
            # The first agent stays; the one killed is the second.
            fifo=$(mktemp -u) && mkfifo "$fifo"
            "$b/switch_agent/ina-switchd" --listen 127.0.0.1:0 --ready-fd 3 3>"$fifo" \
                2>"$out/$kind-$t.agent1.log" &
            spid=$apid
            apid=$!
            read -r saddr <"$fifo"
            rm -f "$fifo"
            addr="$addr,$saddr"
        fi
        if ((standby)); then
            # A fifo of its own: the first agent's end may close any time.
            fifo=$(mktemp -u) && mkfifo "$fifo"
            "$b/switch_agent/ina-switchd" --listen 127.0.0.1:0 --ready-fd 3 3>"$fifo" \
                2>"$out/$kind-$t.standby.log" &
            spid=$!
            read -r saddr <"$fifo"
            rm -f "$fifo"
            addr="$addr|$saddr"
            extra=(-R)
        fi
        ms=$((minms + RANDOM % (maxms - minms)))
        rc=0
        with_component "$b" \
            timeout -k 10 "$limit" mpirun -np "$np" --oversubscribe --mca mpi_yield_when_idle 1 \
            --mca coll ina \
            "${where[@]}" "${node[@]}" \
            --mca coll_ina_resume_interval 4 \
            "$prog" -c "$kind" -r "$rounds" -k "$apid" -t "$ms" -f "$fault" "${extra[@]}" \
            >"$out/$kind-$t.log" 2>&1 || rc=$?
        delay "$kind" "$out/$kind-$t.log" >>"$delays"
        for p in $apid $spid; do
            kill -9 "$p" 2>/dev/null || true
            wait "$p" 2>/dev/null || true
        done
        case $(verdict "$rc" "$out/$kind-$t.log") in
        hang) hang=$((hang + 1)) ;;
        wrong) wrong=$((wrong + 1)) ;;
        failed) failed=$((failed + 1)) ;;
        *) pass=$((pass + 1)) ;;
        esac
        rec=$((rec + $(recovered "$out/$kind-$t.log")))
        if ((standby && rc == 0)); then
            resumed=$((resumed + 1)) # -R: every rank resumed and offloaded a round
        fi
    done
    printf '%-15s %6d %6d %6d %6d %6d %10d %8s\n' "$kind" "$trials" "$pass" "$hang" "$wrong" \
        "$failed" "$rec" "$( ((standby)) && echo "$resumed" || echo -)" | tee -a "$report"
done
delays "$delays" "fault" | tee -a "$report"

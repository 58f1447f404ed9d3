#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#
# How the agent's waiting changes a call's time where the agent shares the
# ranks' cores: NP ranks of ina_bench (allreduce, MIN..MAX bytes, node stage
# off, so every call goes through the agent) against
#   - embedded: the agent the component starts (coll_ina_agent=auto; on a
#     node with fewer cores than ranks + 2 it is told --spin-us 0);
#   - standalone: ina-switchd started by hand with its defaults (it polls
#     up to 100 us inside calls without giving the core away);
#   - spin0: the same with --spin-us 0 (it sleeps on its event fd at once);
#   - yield: the same with --spin-yield (it polls, and sched_yield()s
#     between polls).
# ROUNDS rounds, the systems interleaved in each; prints each system's
# median avg_usec per size and its ratio to embedded (> 1: slower).
#
#   bench/agent_wait.sh [--np 2] [--rounds 5] [--iters 1000] [--sizes 8:65536]
#                       [--builddir build]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top/bench/lib.sh"

np=2 rounds=5 iters=1000 sizes=8:65536 builddir=$top/build
while [ $# -gt 0 ]; do
  case $1 in
    --np) np=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --sizes) sizes=${2:?}; shift 2 ;;
    --builddir) builddir=$(cd "${2:?}" && pwd); shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see -h)" ;;
  esac
done
need_build "$builddir" examples/ina_bench
allow_root
export_component "$builddir"

out=$(mktemp -d /tmp/ina-agent-wait.XXXXXX)
agent_pid=''
cleanup() {
  if [ -n "$agent_pid" ]; then kill "$agent_pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT

# run SYSTEM [ina-switchd options]: one ina_bench run, "SYSTEM SIZE USEC" lines.
run() {
  local sys=$1 agent=()
  shift
  if [ "$sys" != embedded ]; then
    rm -f "$out/ready"
    "$builddir/switch_agent/ina-switchd" --listen 127.0.0.1:0 --ready-fd 3 --log-level warn "$@" \
      3>"$out/ready" 2>"$out/agent.log" &
    agent_pid=$!
    for _ in $(seq 100); do [ -s "$out/ready" ] && break; sleep 0.1; done
    [ -s "$out/ready" ] || die "ina-switchd did not start: $(tail -3 "$out/agent.log")"
    agent=(--mca coll_ina_agent "$(head -1 "$out/ready")")
  fi
  mpirun -np "$np" --oversubscribe --mca coll ina --mca coll_ina_enable 1 \
    --mca coll_ina_required 1 --mca coll_ina_node_stage 0 \
    --mca coll_ina_agent_path "$builddir/switch_agent/ina-switchd" "${agent[@]}" \
    "$builddir/examples/ina_bench" -b allreduce -m "$sizes" -i "$iters" -w $((iters / 10)) \
    >"$out/bench" 2>&1 || die "ina_bench failed: $(tail -5 "$out/bench")"
  awk -v s="$sys" '!/^#/ && NF >= 2 { print s, $1, $2 }' "$out/bench"
  if [ -n "$agent_pid" ]; then
    kill "$agent_pid"
    wait "$agent_pid" 2>/dev/null || true
    agent_pid=''
  fi
}

echo "== $np ranks, allreduce $sizes, $iters iterations, $rounds rounds (median avg_usec; x embedded)"
for r in $(seq "$rounds"); do
  run embedded
  run standalone
  run spin0 --spin-us 0
  run yield --spin-yield
done >"$out/all"
awk '
  { v[$1 " " $2] = v[$1 " " $2] " " $3; size[$2] = 1; sys[$1] = 1 }
  function median(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    n = split("embedded standalone spin0 yield", order, " ")
    printf "| bytes |"; for (i = 1; i <= n; i++) printf " %s |", order[i]; printf "\n"
    printf "| ---: |"; for (i = 1; i <= n; i++) printf " ---: |"; printf "\n"
    m = 0; for (s in size) sorted[++m] = s + 0
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (sorted[j] < sorted[i]) { t = sorted[i]; sorted[i] = sorted[j]; sorted[j] = t }
    for (k = 1; k <= m; k++) {
      s = sorted[k]; base = median(v["embedded " s])
      printf "| %d |", s
      for (i = 1; i <= n; i++) {
        x = median(v[order[i] " " s])
        if (order[i] == "embedded") printf " %.1f |", x; else printf " %.1f (%.2f) |", x, x / base
      }
      printf "\n"
    }
  }' "$out/all"

#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#
# CPU of an idle agent and idle ranks: a standalone ina-switchd (default
# waiting: it polls inside calls and, for about the recent gap, between
# them) serves NP ranks of ina_bench that run ITERS 8-byte allreduces
# through it, sleep SEC seconds, and do it again. Over the middle of each
# sleep (SEC - 2 seconds) the script samples utime + stime of the agent and
# of every rank from /proc/PID/stat and prints the share of one CPU each
# used. The resolution is one clock tick over the window (10 ms in 8 s:
# 0.12%).
#
#   bench/idle.sh [--np 2] [--iters 1000] [--sec 10] [--builddir build]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top/bench/lib.sh"

np=2 iters=1000 sec=10 builddir=$top/build
while [ $# -gt 0 ]; do
  case $1 in
    --np) np=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --sec) sec=${2:?}; shift 2 ;;
    --builddir) builddir=$(cd "${2:?}" && pwd); shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see -h)" ;;
  esac
done
[ "$sec" -ge 4 ] || die "--sec must be at least 4"
for f in switch_agent/ina-switchd examples/ina_bench ompi_coll_ina/.libs/mca_coll_ina.so; do
  [ -e "$builddir/$f" ] || die "no $builddir/$f: build first (scripts/setup.sh)"
done
allow_root

out=$(mktemp -d /tmp/ina-idle.XXXXXX)
agent_pid='' mpi_pid=''
cleanup() {
  [ -n "$mpi_pid" ] && kill "$mpi_pid" 2>/dev/null || true
  [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT

"$builddir/switch_agent/ina-switchd" --listen 127.0.0.1:0 --ready-fd 3 --log-level warn \
  3>"$out/ready" 2>"$out/agent.log" &
agent_pid=$!
for _ in $(seq 100); do [ -s "$out/ready" ] && break; sleep 0.1; done
[ -s "$out/ready" ] || die "ina-switchd did not start: $(tail -3 "$out/agent.log")"
addr=$(head -1 "$out/ready")

export_component "$builddir"
mpirun -np "$np" --oversubscribe --mca coll_ina_enable 1 --mca coll_ina_required 1 \
  --mca coll_ina_node_stage 0 --mca coll_ina_agent "$addr" \
  "$builddir/examples/ina_bench" -m 8:16 -i "$iters" -w 10 -c -s "$sec" >"$out/bench" 2>&1 &
mpi_pid=$!

hz=$(getconf CLK_TCK)
window=$((sec - 2))
echo "== $np ranks, $iters 8-byte allreduces through a standalone agent, then $sec s asleep (twice)"
echo "| sleep | process | CPU over ${window} s |"
echo "|---|---|---:|"
for n in 1 2; do
  for _ in $(seq $((sec * 20 + 600))); do
    [ "$(grep -c '^# sleeping' "$out/bench" 2>/dev/null)" -ge "$n" ] && break
    kill -0 "$mpi_pid" 2>/dev/null || die "ina_bench ended early: $(tail -5 "$out/bench")"
    sleep 0.05
  done
  sleep 1 # into the sleep, past the last messages
  mapfile -t ranks < <(pgrep -f "$builddir/examples/ina_bench" | while read -r p; do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = ina_bench ] && echo "$p"; done)
  pids=("$agent_pid" "${ranks[@]}")
  declare -A before=()
  for p in "${pids[@]}"; do before[$p]=$(cpu_ticks "$p"); done
  sleep "$window"
  for p in "${pids[@]}"; do
    name=rank; [ "$p" = "$agent_pid" ] && name=agent
    awk -v a="${before[$p]}" -v b="$(cpu_ticks "$p")" -v hz="$hz" -v w="$window" -v n="$n" -v who="$name $p" \
      'BEGIN { printf "| %d | %s | %.2f%% |\n", n, who, 100 * (b - a) / hz / w }'
  done
done
wait "$mpi_pid" || die "ina_bench failed: $(tail -5 "$out/bench")"
grep -q '# check: ok' "$out/bench" || die "results not verified: $(tail -5 "$out/bench")"
echo "(results checked: ok)"

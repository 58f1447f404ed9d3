#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#
# What the operator's endpoints cost the agent's data path: ina_loadgen
# through an agent without them (--control none, no --metrics) and through
# one with both (a control socket, which the loop serves every 5 ms while
# busy, and the metrics endpoint, which also times every block), rounds
# interleaved, S bytes per allreduce. Prints the median allreduces/s and
# agent CPU per block of each, and their ratios (above 1: the endpoints
# cost that much). Ratios only: the machine is shared.
#
#   bench/ops_cost.sh [--rounds 9] [--sizes "8 65536"] [--calls 20000] [--procs 2]
#                     [--builddir build] [--scrape]
# --scrape: a curl of /metrics and an `ina-switchctl status` every 100 ms
# during the runs with the endpoints (a busy operator).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=9 sizes="8 65536" calls=20000 procs=2 b="$top/build" scrape=0
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;;
    --builddir) b=$(cd "$2" && pwd); shift 2 ;;
    --scrape) scrape=1; shift ;;
    *) sed -n '2,16p' "$0"; exit 2 ;;
  esac
done
lg="$b/bench/engine/ina_loadgen"
ctl="$b/switch_agent/ina-switchctl"
[ -x "$lg" ] || { echo "no $lg: build first (scripts/setup.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

# One run: the RESULT line's allreduces/s and agent CPU per block.
run() { # SIZE KIND
  local extra=()
  if [ "$2" = ops ]; then
    rm -f "$work/ctl.sock"
    extra=(-A --control -A "$work/ctl.sock" -A --metrics -A 127.0.0.1:0 -A --log-level -A info)
  fi
  if [ "$2" = ops ] && [ "$scrape" = 1 ]; then
    ( while sleep 0.1; do
        [ -S "$work/ctl.sock" ] || continue
        "$ctl" -s "$work/ctl.sock" status >/dev/null 2>&1 || true
        m=$("$ctl" -s "$work/ctl.sock" --json status 2>/dev/null | sed -n 's/.*"metrics": "\(.*\)".*/\1/p')
        if [ -n "$m" ]; then curl -s "http://$m/metrics" >/dev/null || true; fi
      done ) &
    local poller=$!
  fi
  "$lg" -p "$procs" -s "$1" -n "$calls" "${extra[@]}" 2>/dev/null | sed -n 's/^RESULT //p' |
    tr ' ' '\n' | sed -n 's/^allreduces_per_s=//p; s/^agent_cpu_us_per_block=//p' | paste -sd' '
  if [ -n "${poller:-}" ]; then
    kill "$poller" 2>/dev/null || true
    wait "$poller" 2>/dev/null || true
  fi
}

for s in $sizes; do
  : >"$work/plain.$s"; : >"$work/ops.$s"
done
for ((r = 1; r <= rounds; r++)); do
  for s in $sizes; do
    run "$s" plain >>"$work/plain.$s"
    run "$s" ops >>"$work/ops.$s"
  done
  echo "round $r/$rounds done" >&2
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf "%10s %14s %14s %10s %14s %14s %10s\n" bytes "plain calls/s" "ops calls/s" "ratio" \
  "plain us/blk" "ops us/blk" "ratio"
for s in $sizes; do
  pc=$(cut -d' ' -f1 "$work/plain.$s" | median); oc=$(cut -d' ' -f1 "$work/ops.$s" | median)
  pu=$(cut -d' ' -f2 "$work/plain.$s" | median); ou=$(cut -d' ' -f2 "$work/ops.$s" | median)
  awk -v s="$s" -v pc="$pc" -v oc="$oc" -v pu="$pu" -v ou="$ou" 'BEGIN {
    printf "%10s %14.0f %14.0f %10.3f %14.2f %14.2f %10.3f\n", s, pc, oc, pc / oc, pu, ou, ou / pu }'
done
echo "(ratio of calls/s: plain/ops, of CPU per block: ops/plain; above 1: the endpoints cost)"
echo "spread of calls/s per round (min-max): $(for s in $sizes; do
  printf '%s B plain %s, ops %s; ' "$s" \
    "$(cut -d' ' -f1 "$work/plain.$s" | sort -g | sed -n '1p;$p' | paste -sd-)" \
    "$(cut -d' ' -f1 "$work/ops.$s" | sort -g | sed -n '1p;$p' | paste -sd-)"; done)"

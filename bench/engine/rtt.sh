#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#
# The round trip of one small block through the agent against the transport's
# own: in each round, `ucx_perftest -t ucp_am_lat` (a UCX active-message
# ping-pong, server and client on this host) and then `ina_loadgen -p 1`
# (one client, one-member job: each allreduce is one BLOCK up and its RESULT
# back), both over the same UCX transports (UCX_TLS, default tcp) on
# loopback, S bytes, N iterations. Rounds interleave the two; prints the
# median round trip of each (ucx_perftest reports half a round trip: it is
# doubled) and the ratio ina/UCX.
#
#   bench/engine/rtt.sh [--rounds 5] [--bytes 8] [--iters 20000] [--tls tcp]
#                       [--builddir build] [-- ina_loadgen options]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$top/bench/lib.sh"

rounds=5 bytes=8 iters=20000 tls=tcp builddir=$top/build
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=${2:?}; shift 2 ;;
    --bytes) bytes=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --tls) tls=${2:?}; shift 2 ;;
    --builddir) builddir=$(cd "${2:?}" && pwd); shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see -h)" ;;
  esac
done
need_tool ucx_perftest ucx-utils
lg=$builddir/bench/engine/ina_loadgen
[ -x "$lg" ] || die "no $lg: build first (scripts/setup.sh)"

out=$(mktemp -d /tmp/ina-rtt.XXXXXX)
trap 'rm -rf "$out"' EXIT
port=$((20000 + RANDOM % 20000))

ucx_round() { # -> round trip in us (median of the run)
  UCX_TLS=$tls timeout 120 ucx_perftest -t ucp_am_lat -s "$bytes" -n "$iters" -p "$port" \
    >"$out/server" 2>&1 &
  local srv=$! line=
  for _ in $(seq 50); do # the server listens once it printed nothing yet: retry the client
    if line=$(UCX_TLS=$tls timeout 120 ucx_perftest 127.0.0.1 -t ucp_am_lat -s "$bytes" \
                -n "$iters" -p "$port" 2>/dev/null | grep '^Final:'); then
      break
    fi
    sleep 0.1
  done
  wait "$srv" || true
  [ -n "$line" ] || die "ucx_perftest gave no result (server: $(tail -3 "$out/server"))"
  # Final: iters p50 avg overall ... (one-way latency in us)
  awk '{printf "%.2f\n", 2 * $3}' <<<"$line"
}

ina_round() { # -> round trip in us (p50 of the run)
  UCX_TLS=$tls "$lg" -p 1 -j 1 -s "$bytes" -n "$iters" -W 200 -d "$builddir/switch_agent/ina-switchd" \
    "${extra[@]}" 2>"$out/lg.err" | grep -o 'p50_us=[0-9.]*' | cut -d= -f2 ||
    die "ina_loadgen failed: $(tail -3 "$out/lg.err")"
}

echo "== $rounds rounds, $bytes B, $iters round trips each, UCX_TLS=$tls, loopback"
for r in $(seq 1 "$rounds"); do
  ucx_round >>"$out/ucx"
  ina_round >>"$out/ina"
done
python3 - "$out" "$bytes" <<'PY'
import statistics, sys
out, nbytes = sys.argv[1], sys.argv[2]
v = {t: [float(x) for x in open(f"{out}/{t}")] for t in ("ucx", "ina")}
mu, mi = statistics.median(v["ucx"]), statistics.median(v["ina"])
print(f"| round trip, {nbytes} B | median (us) | each round (us) |")
print("|---|---:|---|")
print(f"| UCX active message (ucx_perftest ucp_am_lat, x2) | {mu:.1f} | {' '.join(f'{x:.1f}' for x in v['ucx'])} |")
print(f"| ina: BLOCK to the agent, RESULT back (ina_loadgen -p 1) | {mi:.1f} | {' '.join(f'{x:.1f}' for x in v['ina'])} |")
print(f"\nina/UCX: {mi / mu:.2f}x")
PY

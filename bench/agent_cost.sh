#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#
# What one block costs the agent, this build against git revision REV, in one
# run: builds REV beside this checkout (DIR/base, a detached worktree), then
# for each build
#   - instructions per block: ina-switchd under `valgrind --tool=callgrind`,
#     fed by that build's ina_loadgen (P processes, float-sum allreduces of S
#     bytes cut in B-byte blocks); total instructions / BLOCKs the agent took
#     in (its counters). Instructions do not depend on the machine's noise.
#   - blocks/s: the same load without valgrind, ROUNDS rounds, the two builds
#     interleaved; the median of each.
#   - agent CPU per block: the same rounds again with the agent on its own
#     (ina_loadgen -a) and not polling (--spin-us 0), its CPU time (user +
#     system, /proc/PID/stat) over the blocks it took: what a block costs
#     the agent including the kernel's socket work, which callgrind does
#     not see, and without the polling that fills its idle time.
# and prints both with the ratios new/base. Extra ina_loadgen options for
# both builds after --, e.g. -- -A --rndv-bytes -A 16384 -R 16384 (the base
# build must know them).
#
#   bench/agent_cost.sh REV [--rounds 5] [--procs 2] [--bytes 1M] [--block 64K]
#                           [--calls 300] [--dir /tmp/ina-agent-cost] [-- ARGS]
#
# The current build is the one scripts/setup.sh made (build/). Needs valgrind.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top/bench/lib.sh"

[ $# -ge 1 ] || die "usage: $0 REV [--rounds N] [--procs P] [--bytes S] [--block B] [--calls N] [--dir DIR] [-- ARGS]"
rev=$1; shift
rounds=5 procs=2 bytes=1M block=64K calls=300 dir=/tmp/ina-agent-cost
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=${2:?}; shift 2 ;;
    --procs) procs=${2:?}; shift 2 ;;
    --bytes) bytes=${2:?}; shift 2 ;;
    --block) block=${2:?}; shift 2 ;;
    --calls) calls=${2:?}; shift 2 ;;
    --dir) dir=${2:?}; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) die "unknown option '$1'" ;;
  esac
done
need_tool valgrind valgrind
new=$top/build
need_build "$new" bench/engine/ina_loadgen
base=$("$top/bench/build_rev.sh" "$rev" "$dir" | tail -1) || die "building $rev failed"

out=$dir/runs
rm -rf "$out" && mkdir -p "$out"
# The daemon under callgrind: ina_loadgen spawns --switchd with its own
# arguments (--listen, --ready-fd, -A ...); valgrind keeps the ready fd open.
cat >"$out/callgrind-switchd" <<'EOF'
#!/bin/sh
exec valgrind --tool=callgrind --callgrind-out-file="$CG_OUT" "$CG_SWITCHD" "$@"
EOF
chmod +x "$out/callgrind-switchd"

loadgen() { # build-dir [options...]
  local b=$1; shift
  "$b/bench/engine/ina_loadgen" -p "$procs" -j 1 -s "$bytes" -b "$block" -n "$calls" \
    -d "$b/switch_agent/ina-switchd" "$@" "${extra[@]}"
}

instructions() { # build-dir tag
  local b=$1 tag=$2
  CG_OUT=$out/$tag.callgrind CG_SWITCHD=$b/switch_agent/ina-switchd \
    loadgen "$b" -d "$out/callgrind-switchd" -A --log-level -A info \
    >"$out/$tag.cg.stdout" 2>"$out/$tag.cg.stderr" || die "callgrind run of $tag failed (see $out)"
  local ir blocks
  ir=$(callgrind_annotate "$out/$tag.callgrind" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  blocks=$(grep -o 'blocks_in=[0-9]*' "$out/$tag.cg.stderr" | tail -1 | cut -d= -f2)
  [ -n "$ir" ] && [ -n "$blocks" ] && [ "$blocks" -gt 0 ] || die "no counters from the $tag run (see $out)"
  echo "$ir $blocks"
}

echo "== callgrind: $procs processes, $bytes per allreduce, $block blocks, $calls calls"
read -r ir_b blk_b < <(instructions "$base" base)
read -r ir_n blk_n < <(instructions "$new" new)
callgrind_annotate --inclusive=no "$out/base.callgrind" 2>/dev/null | sed -n '/file:function/,$p' | sed -n 2,6p >"$out/base.top"
callgrind_annotate --inclusive=no "$out/new.callgrind" 2>/dev/null | sed -n '/file:function/,$p' | sed -n 2,6p >"$out/new.top"

hz=$(getconf CLK_TCK)
cpu_round() { # build-dir tag: one load run against a standalone agent that does not poll
  local b=$1 tag=$2 pid addr res ticks quiet=()
  # Builds from before --spin-us never polled.
  "$b/switch_agent/ina-switchd" --help 2>&1 | grep -q -- --spin-us && quiet=(--spin-us 0)
  rm -f "$out/ready"
  "$b/switch_agent/ina-switchd" --listen 127.0.0.1:0 --ready-fd 3 --log-level warn "${quiet[@]}" \
    3>"$out/ready" 2>>"$out/$tag.agent.log" &
  pid=$!
  for _ in $(seq 100); do [ -s "$out/ready" ] && break; sleep 0.1; done
  addr=$(head -1 "$out/ready" 2>/dev/null) || true
  [ -n "$addr" ] || { kill "$pid" 2>/dev/null || true; die "ina-switchd of $tag did not start (see $out/$tag.agent.log)"; }
  res=$(loadgen "$b" -a "$addr" | grep '^RESULT') ||
    { kill "$pid" 2>/dev/null || true; die "load run of $tag failed"; }
  ticks=$(cpu_ticks "$pid")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  # blocks = blocks/s x wall; CPU us per block = ticks / hz / blocks
  awk -v r="$res" -v t="$ticks" -v hz="$hz" 'BEGIN {
    n = split(r, f, " "); for (i = 1; i <= n; ++i) { split(f[i], kv, "="); v[kv[1]] = kv[2] }
    printf "%.2f\n", 1e6 * t / hz / (v["blocks_per_s"] * v["wall_s"]) }' >>"$out/$tag.cpu"
}
echo "== blocks/s: $rounds rounds, builds interleaved"
for r in $(seq 1 "$rounds"); do
  for tag in base new; do
    b=$base; [ $tag = new ] && b=$new
    loadgen "$b" | grep -o 'blocks_per_s=[0-9.]*' | cut -d= -f2 >>"$out/$tag.bps" ||
      die "load run of $tag failed"
  done
done
echo "== agent CPU per block: $rounds rounds, builds interleaved, agent not polling"
for r in $(seq 1 "$rounds"); do
  for tag in base new; do
    b=$base; [ $tag = new ] && b=$new
    cpu_round "$b" "$tag"
  done
done

python3 - "$out" "$ir_b" "$blk_b" "$ir_n" "$blk_n" "$rev" <<'PY'
import statistics, sys
out, ir_b, blk_b, ir_n, blk_n, rev = sys.argv[1], *map(int, sys.argv[2:6]), sys.argv[6]
bps = {t: [float(x) for x in open(f"{out}/{t}.bps")] for t in ("base", "new")}
cpu = {t: [float(x) for x in open(f"{out}/{t}.cpu")] for t in ("base", "new")}
ipb_b, ipb_n = ir_b / blk_b, ir_n / blk_n
mb, mn = statistics.median(bps["base"]), statistics.median(bps["new"])
cb, cn = statistics.median(cpu["base"]), statistics.median(cpu["new"])
print(f"| build | instructions per block | blocks/s (median) | agent CPU us per block (median) | blocks/s of each round |")
print(f"|---|---:|---:|---:|---|")
print(f"| {rev} (base) | {ipb_b:,.0f} | {mb:,.0f} | {cb:.1f} | {' '.join(f'{x:.0f}' for x in bps['base'])} |")
print(f"| this build | {ipb_n:,.0f} | {mn:,.0f} | {cn:.1f} | {' '.join(f'{x:.0f}' for x in bps['new'])} |")
print(f"\nnew/base: instructions per block {ipb_n / ipb_b:.2f}x, blocks/s {mn / mb:.2f}x, "
      f"agent CPU per block {cn / cb:.2f}x")
for t in ("base", "new"):
    print(f"\nwhere the {t} agent's instructions go (top 5):")
    print(open(f"{out}/{t}.top").read().rstrip())
PY

#!/bin/sh
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# Run ina_kernel_bench and print a Markdown table: every reduce kernel's
# throughput as a percentage of memcpy of the same size, measured in the same
# run. Bytes are memory traffic: memcpy counts src read + dst written (2x the
# buffer), a reduce counts src read + dst read + dst written (3x the buffer);
# "src GB/s" is the rate at which a kernel absorbs contributions (1x).
#
# usage: kernels.sh [ina_kernel_bench arguments...]
#   e.g. kernels.sh --benchmark_filter='memcpy|float|double' --ina_sizes=64K,64M,1G
# The binary: $INA_KERNEL_BENCH, else ./ina_kernel_bench, else the one next
# to this script. Default minimum time per benchmark: 0.2 s (override with
# --benchmark_min_time=...). On a busy machine add --benchmark_repetitions=5:
# the table then shows each benchmark's median.
set -eu

bench=${INA_KERNEL_BENCH:-}
if [ -z "$bench" ]; then
    for b in ./ina_kernel_bench "$(dirname "$0")/ina_kernel_bench"; do
        if [ -x "$b" ]; then bench=$b; break; fi
    done
fi
if [ -z "$bench" ] || [ ! -x "$bench" ]; then
    echo "kernels.sh: ina_kernel_bench not found: run from bench/engine of a build dir" \
         "(it needs Google Benchmark: libbenchmark-dev) or set INA_KERNEL_BENCH" >&2
    exit 2
fi
command -v python3 >/dev/null || { echo "kernels.sh: needs python3" >&2; exit 2; }

json=$(mktemp)
trap 'rm -f "$json"' EXIT INT TERM
"$bench" --benchmark_min_time=0.2 "$@" --benchmark_format=json >"$json"

python3 - "$json" <<'PY'
import json, sys

with open(sys.argv[1]) as f:
    doc = json.load(f)
ctx = doc.get("context", {})
# With --benchmark_repetitions=R, use each benchmark's median over the R runs.
median = {b["run_name"] for b in doc["benchmarks"] if b.get("aggregate_name") == "median"}
memcpy, rows = {}, []
for b in doc["benchmarks"]:
    if "error_occurred" in b or "bytes_per_second" not in b:
        continue
    name = b.get("run_name", b["name"])
    if name in median and b.get("aggregate_name") != "median":
        continue
    if name not in median and b.get("run_type", "iteration") != "iteration":
        continue
    parts = name.split("/")
    bps = b["bytes_per_second"]
    if parts[0] == "memcpy":
        memcpy[parts[1]] = bps
    elif parts[0] == "reduce":
        rows.append((parts[1], parts[2], parts[3], bps))

print(f"Host: {ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs at "
      f"{ctx.get('mhz_per_cpu', '?')} MHz; one core; library build "
      f"{ctx.get('library_build_type', '?')}\n")
print("| size | memcpy GB/s (2x bytes) |")
print("|---:|---:|")
for size, bps in memcpy.items():
    print(f"| {size} | {bps / 1e9:.2f} |")
print()
print("| kernel | size | GB/s (3x bytes) | % of memcpy | src GB/s |")
print("|---|---:|---:|---:|---:|")
for dtype, op, size, bps in rows:
    ref = memcpy.get(size)
    pct = f"{100.0 * bps / ref:.0f}%" if ref else "n/a"
    print(f"| {dtype.replace('_', ' ')} {op} | {size} | {bps / 1e9:.2f} | {pct} | {bps / 3e9:.2f} |")
PY

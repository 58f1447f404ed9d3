#!/bin/sh
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# Sweep ina_loadgen over procs x jobs x sizes x modes, REPEAT runs each, and
# print a Markdown table of the medians (a shared or small machine makes single
# runs noisy) plus each configuration's blocks/s relative to the first job
# count of the same (size, procs, mode): "blocks/s at 4 jobs vs 1 job".
#
# usage: loadgen.sh [-p "2 4"] [-j "1 4"] [-s "64K 1M"] [-m "blocking overlap"]
#                   [-r REPEAT] [-B BYTES_PER_RUN] [-- ina_loadgen options...]
#   -B  bytes per rank and job per run (default 256M): N = B / S calls, at
#       least 10, so every size runs about as long.
# Options after -- go to every ina_loadgen run (e.g. -- -w 16 --agent H:P).
# The binary: $INA_LOADGEN, else ./ina_loadgen, else next to this script.
set -eu

procs="2 4"; jobs="1 4"; sizes="64K 1M"; modes="blocking overlap"; repeat=3
per_run=256M
while [ $# -gt 0 ]; do
    case $1 in
    -p) procs=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    -s) sizes=$2; shift 2 ;;
    -m) modes=$2; shift 2 ;;
    -r) repeat=$2; shift 2 ;;
    -B) per_run=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "loadgen.sh: unknown option $1 (see -h)" >&2; exit 2 ;;
    esac
done

lg=${INA_LOADGEN:-}
if [ -z "$lg" ]; then
    for b in ./ina_loadgen "$(dirname "$0")/ina_loadgen"; do
        if [ -x "$b" ]; then lg=$b; break; fi
    done
fi
if [ -z "$lg" ] || [ ! -x "$lg" ]; then
    echo "loadgen.sh: ina_loadgen not found: run from bench/engine of a build dir or set INA_LOADGEN" >&2
    exit 2
fi
command -v python3 >/dev/null || { echo "loadgen.sh: needs python3" >&2; exit 2; }

bytes() { # 64K -> 65536
    python3 -c 'import sys; s=sys.argv[1]; m={"K":10,"M":20,"G":30}.get(s[-1:].upper(), 0); print(int(s[:-1] if m else s) << m)' "$1"
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT INT TERM
per=$(bytes "$per_run")
for s in $sizes; do
    n=$((per / $(bytes "$s")))
    [ "$n" -ge 10 ] || n=10
    for p in $procs; do
        for j in $jobs; do
            for m in $modes; do
                flag=""
                [ "$m" = overlap ] && flag=--overlap
                i=0
                while [ "$i" -lt "$repeat" ]; do
                    # shellcheck disable=SC2086 # $flag is empty or one word
                    if ! "$lg" -p "$p" -j "$j" -s "$s" -n "$n" $flag "$@" | grep '^RESULT' >>"$out"; then
                        echo "loadgen.sh: run failed: $lg -p $p -j $j -s $s -n $n $flag $*" >&2
                        exit 1
                    fi
                    i=$((i + 1))
                done
            done
        done
    done
done

python3 - "$out" <<'PY'
import collections, statistics, sys

runs = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    d = dict(kv.split("=", 1) for kv in line.split()[1:])
    key = (int(d["bytes"]), int(d["procs"]), d["mode"], int(d["jobs"]))
    if key not in runs:
        order.append(key)
    runs[key].append(d)

def med(key, field):
    return statistics.median(float(r[field]) for r in runs[key])

first_jobs = {}
for key in order:
    first_jobs.setdefault(key[:3], key)
print("| bytes | procs | jobs | mode | window | block | blocks/s | vs first jobs | MB/s in |"
      " allreduces/s | p50 us | p99 us | blocks/s of each run |")
print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for key in order:
    r0 = runs[key][0]
    base = med(first_jobs[key[:3]], "blocks_per_s")
    bps = med(key, "blocks_per_s")
    each = " ".join(f"{float(r['blocks_per_s']):.0f}" for r in runs[key])
    print(f"| {key[0]} | {key[1]} | {key[3]} | {key[2]} | {r0['window']} | {r0['block']} |"
          f" {bps:.0f} | {bps / base:.2f}x | {med(key, 'bytes_per_s') / 1e6:.0f} |"
          f" {med(key, 'allreduces_per_s'):.1f} | {med(key, 'p50_us'):.0f} | {med(key, 'p99_us'):.0f} |"
          f" {each} |")
PY

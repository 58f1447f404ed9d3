#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#
# The performance report: measures, at this checkout's build, everything the
# headline of docs/PERFORMANCE.md shows, and writes one Markdown report
# (printed at the end, and OUT/report.md): the machine, the commit, the date,
# then per section the exact command that reproduces it and, per size, ina
# against tuned (Open MPI's default, --mca coll ^ina) and ring (tuned forced
# to its ring allreduce), as time per call and busbw, with the time ratios.
# It runs the existing scripts and only reads what they write:
#
#   node       one node, 4 ranks, every collective bench/node.sh covers
#              (ina's node stage; allreduce also against ring)
#   agent      one node, 4 ranks, allreduce with the node stage off: every
#              rank through the agent over TCP, what each node does across
#              nodes (bench/node.sh --mca ...; coll_ina_required 1, so that a
#              refused offload fails instead of timing the fallback as ina)
#   fabric4x1  emulated fabric, 4 hosts x 1 rank (bench/fabric/run.sh)
#   fabric4x2  the same, 4 hosts x 2 ranks (the node stage on each host)
#   tree       4 hosts x 1 rank under 2 leaf agents and a spine (--leaves 2)
#   stripe     4 hosts x 1 rank, every call striped over 2 agents (--agents 2),
#              against ina over one of them (ina1)
#
#   sudo bench/report.sh [--quick] [--out DIR] [--builddir DIR] [--rate 100mbit]
#                        [--sizes 8:16777216] [--iters 50] [--rounds 5] [--repeat 3]
#                        [--sections node,agent,fabric4x1,fabric4x2,tree,stripe]
#
# --quick: a smoke run (sizes 8:1048576, one round or repeat, few
# iterations) to check the script, not to quote: about a minute on a 2-core
# machine, where the defaults take some 30-40 minutes. --sizes: the
# allreduce sizes (doubling) of every section; the other collectives on one
# node run at 8 B, 64 KiB and 4 MiB (8 B and 64 KiB with --quick). --rounds:
# bench/node.sh's rounds; --repeat: bench/fabric/run.sh's sweeps (median);
# --iters: both scripts' iterations (run.sh runs fewer for big sizes).
# The fabric sections need root (network namespaces); --sections node,agent
# runs without. Nothing here asserts on time: the machine may be shared, and
# the report names its load average before and after. A section that fails
# is reported as failed (with its log) and the others still run; the exit
# status is then 1.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top/bench/lib.sh"

quick=0 out=$top/results/report builddir=$top/build rate=100mbit
sizes='' iters='' rounds='' repeat=''
sections=node,agent,fabric4x1,fabric4x2,tree,stripe
args=("$@")
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1; shift ;;
    --out) out=${2:?}; shift 2 ;;
    --builddir) builddir=${2:?}; shift 2 ;;
    --rate) rate=${2:?}; shift 2 ;;
    --sizes) sizes=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --repeat) repeat=${2:?}; shift 2 ;;
    --sections) sections=${2:?}; shift 2 ;;
    -h | --help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (--help lists them)" ;;
  esac
done
if [ "$quick" = 1 ]; then
  : "${sizes:=8:1048576}" "${iters:=5}" "${rounds:=1}" "${repeat:=1}"
  coll_sizes="8 65536"
else
  : "${sizes:=8:16777216}" "${iters:=50}" "${rounds:=5}" "${repeat:=3}"
  coll_sizes="8 65536 4194304"
fi
[[ $sizes =~ ^[0-9]+:[0-9]+$ ]] || die "--sizes wants MIN:MAX in bytes"
for n in "$iters" "$rounds" "$repeat"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "--iters, --rounds and --repeat want counts >= 1"
done
IFS=, read -ra want <<<"$sections"
fabric=0
for s in "${want[@]}"; do
  case $s in
    node | agent) ;;
    fabric4x1 | fabric4x2 | tree | stripe) fabric=1 ;;
    *) die "--sections: unknown section '$s' (node, agent, fabric4x1, fabric4x2, tree, stripe)" ;;
  esac
done
builddir=$(cd "$builddir" 2>/dev/null && pwd) || die "no build directory $builddir"
need_build "$builddir" examples/ina_bench
need_build "$builddir" switch_agent/ina-switchd
need_tool python3 python3
need_tool ompi_info openmpi-bin
if [ "$fabric" = 1 ] && [ "$(id -u)" != 0 ]; then
  die "the fabric sections need root (network namespaces): sudo $0 ${args[*]}, or --sections node,agent"
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/sections.tsv" "$out/report.md"

# rel PATH: PATH relative to the repository where it lies inside it, for
# commands a reader can paste from the repository's root.
rel() { case $1 in "$top"/*) echo "${1#"$top"/}" ;; *) echo "$1" ;; esac; }
bd=$(rel "$builddir")

# The machine, the code, the date.
{
  printf 'date\t%s\n' "$(date -u '+%F %H:%M UTC')"
  printf 'commit\t%s\n' "$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)"
  printf 'rev\t%s\n' "$(git -C "$top" rev-parse HEAD 2>/dev/null || echo unknown)"
  # The build's own source tree (configure's abs_top_srcdir), when it is not this checkout.
  src=$(sed -n 's/^abs_top_srcdir = //p' "$builddir/Makefile" 2>/dev/null | head -1)
  if [ -n "$src" ] && src=$(cd "$src" 2>/dev/null && pwd) && [ "$src" != "$top" ]; then
    printf 'buildsrc\t%s at %s\n' "$src" "$(git -C "$src" describe --always --dirty 2>/dev/null || echo unknown)"
  fi
  printf 'builddir\t%s\n' "$bd"
  printf 'cpu\t%s\n' "$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)"
  printf 'cores\t%s\n' "$(nproc)"
  printf 'memory\t%s\n' "$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
  printf 'kernel\t%s\n' "$(uname -r)"
  printf 'ompi\t%s\n' "$(ompi_info --parsable 2>/dev/null | awk -F: '$1 == "ompi" && $2 == "version" && $3 == "full" { print $4; exit }')"
  if command -v ucx_info >/dev/null; then
    printf 'ucx\t%s\n' "$(ucx_info -v 2>/dev/null | sed -n 's/^# *Library version: *//p' | head -1)"
  fi
  printf 'load_before\t%s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
  printf 'invocation\tbench/report.sh %s\n' "${args[*]}"
  printf 'quick\t%s\n' "$quick"
} >"$out/meta.tsv"

failed=0
# section KEY LABEL TITLE DESCRIPTION CSV SYSTEMS COLLECTIVES -- COMMAND...:
# run COMMAND (its output in OUT/KEY.log) and note the section for the
# report (LABEL: its row in the headline).
# CSV: what the command writes (node.sh's collective,system,... or run.sh's
# system,...); SYSTEMS: its systems in column order; COLLECTIVES: those to
# show (node.sh's CSV) or "allreduce".
section() {
  local key=$1 label=$2 title=$3 what=$4 csv=$5 systems=$6 colls=$7 rc=0 t0 shown
  shift 8
  shown=$(for a in "$@"; do rel "$a"; done | awk '{ printf "%s%s", (NR > 1 ? " " : ""), ($0 ~ /[ "]/ ? "\"" $0 "\"" : $0) }')
  case $1 in */fabric/run.sh) shown="sudo $shown" ;; esac
  echo "report.sh: [$key] $shown" >&2
  t0=$(date +%s)
  "$@" >"$out/$key.log" 2>&1 || rc=$?
  [ "$rc" = 0 ] || { failed=1; echo "report.sh: [$key] failed (exit $rc), see $out/$key.log" >&2; tail -n 5 "$out/$key.log" >&2; }
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$key" "$label" "$title" "$what" "$shown" "$csv" "$systems" \
    "$colls" "$rc" "$(($(date +%s) - t0))" "$out/$key.log" >>"$out/sections.tsv"
}

t_start=$(date +%s)
fab=(--rate "$rate" --sizes "$sizes" --iters "$iters" --repeat "$repeat" --builddir "$builddir")
run_sh=$top/bench/fabric/run.sh
for s in "${want[@]}"; do
  case $s in
    node)
      section node "one node (node stage)" "One node, 4 ranks: every collective" \
        "ina's node stage (the node's ranks combine in shared memory, no agent) against tuned, and for allreduce against tuned's ring too (ring is an allreduce algorithm); rounds interleaved, median per size." \
        "$out/node.csv" ina,tuned,ring "allreduce reduce bcast allgather barrier" -- \
        "$top/bench/node.sh" --np 4 --ring --rounds "$rounds" --iters "$iters" --allreduce-sizes "$sizes" \
        --sizes "$coll_sizes" --builddir "$builddir" --csv "$out/node.csv" ;;
    agent)
      section agent "one node, through the agent" "One node, 4 ranks, through the agent (node stage off)" \
        "Every rank a member at the agent ina starts on the node, over UCX's TCP: the path each node takes across nodes, on one machine, where it competes with shared memory." \
        "$out/agent.csv" ina,tuned,ring allreduce -- \
        "$top/bench/node.sh" --np 4 --ring --colls allreduce --rounds "$rounds" --iters "$iters" \
        --allreduce-sizes "$sizes" --builddir "$builddir" --csv "$out/agent.csv" \
        --mca "--mca coll_ina_node_stage 0 --mca coll_ina_required 1 --mca coll_ina_agent_path $builddir/switch_agent/ina-switchd" ;;
    fabric4x1)
      section fabric4x1 "fabric, 4 hosts x 1 rank" "Emulated fabric, 4 hosts x 1 rank, links $rate" \
        "One switch with one agent; every byte crosses rate-limited links between network namespaces." \
        "$out/fabric-4x1/allreduce.csv" tuned,ring,ina allreduce -- \
        "$run_sh" --hosts 4 --ppn 1 --systems tuned,ring,ina "${fab[@]}" --out "$out/fabric-4x1" ;;
    fabric4x2)
      section fabric4x2 "fabric, 4 hosts x 2 ranks" "Emulated fabric, 4 hosts x 2 ranks, links $rate" \
        "As above with two ranks per host: ina combines each host's ranks first (the node stage), so a host link carries S each way." \
        "$out/fabric-4x2/allreduce.csv" tuned,ring,ina allreduce -- \
        "$run_sh" --hosts 4 --ppn 2 --systems tuned,ring,ina "${fab[@]}" --out "$out/fabric-4x2" ;;
    tree)
      section tree "tree: 2 leaves, a spine" "A tree of agents: 4 hosts x 1 rank under 2 leaves and a spine, links $rate" \
        "Two hosts per leaf switch, each leaf's uplink limited like a host link (2:1); each leaf agent sends one partial per block up." \
        "$out/tree/allreduce.csv" tuned,ring,ina allreduce -- \
        "$run_sh" --hosts 4 --ppn 1 --leaves 2 --systems tuned,ring,ina "${fab[@]}" --out "$out/tree" ;;
    stripe)
      section stripe "stripe over 2 agents" "A stripe over two agents: 4 hosts x 1 rank, links $rate" \
        "Each agent behind a link of its own limited like a host link; ina stripes every call over both, ina1 uses one of them (same run)." \
        "$out/stripe/allreduce.csv" tuned,ina1,ina allreduce -- \
        "$run_sh" --hosts 4 --ppn 1 --agents 2 --systems tuned,ina1,ina "${fab[@]}" --out "$out/stripe" ;;
  esac
done
{
  printf 'load_after\t%s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
  printf 'seconds\t%s\n' "$(($(date +%s) - t_start))"
} >>"$out/meta.tsv"

# The report, from what the scripts wrote.
python3 - "$out" "$top" >"$out/report.md" <<'PY'
import csv, os, re, sys

out, top = sys.argv[1], sys.argv[2]
meta = {}
for line in open(os.path.join(out, "meta.tsv")):
    k, _, v = line.rstrip("\n").partition("\t")
    meta[k] = v
F = ("key", "label", "title", "what", "command", "csv", "systems", "colls", "rc", "seconds", "log")
sections = [dict(zip(F, l.rstrip("\n").split("\t"))) for l in open(os.path.join(out, "sections.tsv"))]


def shown(path):
    return os.path.relpath(path, top) if path.startswith(top + "/") else path


def size(b):
    b = int(b)
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"


def us(v):
    return "-" if v is None else (f"{v:.1f}" if v < 1000 else f"{v:.0f}")


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


def load(sec):
    """{collective: {system: {bytes: (usec, busbw)}}} from a section's CSV."""
    data = {}
    if sec["rc"] != "0" or not os.path.exists(sec["csv"]):
        return data
    with open(sec["csv"]) as f:
        for r in csv.DictReader(f):
            c = r.get("collective", "allreduce")
            data.setdefault(c, {}).setdefault(r["system"], {})[int(r["bytes"])] = (
                float(r["avg_usec"]), float(r["busbw_MBps"]))
    return data


def table(d, systems):
    """Time, busbw and the ratios to ina per size, systems in the given order."""
    systems = [s for s in systems if s in d]
    others = [s for s in systems if s != "ina"] if "ina" in systems else []
    sizes = sorted({b for s in systems for b in d[s]})
    head = ["size"] + [f"{s} us" for s in systems] + [f"{s} busbw MB/s" for s in systems] \
        + [f"{s}/ina time" for s in others]
    rows = ["| " + " | ".join(head) + " |", "| " + " | ".join(["---:"] * len(head)) + " |"]
    for b in sizes:
        t = {s: d[s].get(b, (None, None)) for s in systems}
        cells = [size(b) if b else "-"] + [us(t[s][0]) for s in systems] \
            + ["-" if t[s][1] is None or not b else f"{t[s][1]:.1f}" for s in systems] \
            + [ratio(t[s][0], t["ina"][0]) for s in others]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


P = print
quick = meta.get("quick") == "1"
P("# ina performance report" + (" (quick run: a smoke test, not figures to quote)" if quick else ""))
P()
P(f"- Date: {meta['date']}; the whole run took {int(meta['seconds']) // 60} min {int(meta['seconds']) % 60} s.")
P(f"- Commit: `{meta['commit']}` ({meta['rev']})" + (f"; the build's source: {meta['buildsrc']}" if "buildsrc" in meta else "")
  + f"; build `{meta['builddir']}`.")
mach = f"- Machine: {meta['cpu'] or 'CPU model unknown'}, {meta['cores']} cores, {meta['memory']}, Linux {meta['kernel']}, Open MPI {meta['ompi']}"
if meta.get("ucx"):
    mach += f", UCX {meta['ucx']}"
P(mach + f"; load average {meta['load_before']} before, {meta['load_after']} after.")
P(f"- Command: `{meta['invocation'].strip()}`")
P()
P("Times are microseconds per call (ina_bench: each rank's mean over the iterations, "
  "then the mean over ranks; median of the rounds or sweeps). busbw follows nccl-tests "
  "(allreduce: bytes / time x 2(n-1)/n; allgather: the gathered bytes / time x (n-1)/n; "
  "reduce, bcast: bytes / time). X/ina above 1: ina is faster. tuned: Open MPI's default "
  "choice (`--mca coll ^ina`); ring: tuned forced to its ring allreduce; ina1: ina over one "
  "of the two agents. What these mean for an in-network reduction: docs/PERFORMANCE.md, "
  "\"What the numbers mean\".")
P()

# The headline: allreduce ratios per setting at every third size from the largest.
data = {s["key"]: load(s) for s in sections}
ar = [(s, data[s["key"]].get("allreduce")) for s in sections if data[s["key"]].get("allreduce")]
allsizes = sorted({b for _, d in ar for sysd in d.values() for b in sysd})
if allsizes:
    pick = allsizes[::-1][::3][::-1]
    if allsizes[0] not in pick:
        pick = [allsizes[0]] + pick
    P("## Headline: MPI_Allreduce, ina's time and the others' time over it (above 1: ina is faster)")
    P()
    P("| setting | | " + " | ".join(size(b) for b in pick) + " |")
    P("| --- | --- | " + " | ".join("---:" for _ in pick) + " |")
    for s, d in ar:
        ina = d.get("ina", {})
        P(f"| {s['label']} | ina us | " + " | ".join(us(ina.get(b, (None,))[0]) for b in pick) + " |")
        for o in [x for x in s["systems"].split(",") if x in d and x != "ina"]:
            cells = [ratio(d[o].get(b, (None,))[0], ina.get(b, (None,))[0]) for b in pick]
            P(f"| | {o}/ina | " + " | ".join(cells) + " |")
    P()
node = data.get("node", {})
colls = [c for c in ("reduce", "bcast", "allgather", "barrier") if c in node]
if colls:
    P("## Headline: the other collectives on one node, 4 ranks (tuned/ina time)")
    P()
    P("| collective | size | ina us | tuned us | tuned/ina |")
    P("| --- | ---: | ---: | ---: | ---: |")
    for c in colls:
        for b in sorted(node[c].get("ina", {})):
            i = node[c]["ina"][b][0]
            t = node[c].get("tuned", {}).get(b, (None,))[0]
            P(f"| {c} | {'-' if c == 'barrier' else size(b)} | {us(i)} | {us(t)} | {ratio(t, i)} |")
    P()

for s in sections:
    P(f"## {s['title']}")
    P()
    P(s["what"])
    P()
    P("Reproduce (from the repository's root):")
    P()
    P(f"    {s['command']}")
    P()
    if s["rc"] != "0":
        P(f"**Failed** (exit {s['rc']}); its output: `{shown(s['log'])}`.")
        P()
        continue
    d = data[s["key"]]
    # The tables in a <details> block: a page that embeds the report stays short.
    P("<details><summary>Time and busbw per size</summary>")
    P()
    for c in s["colls"].split():
        if c not in d:
            continue
        if len(s["colls"].split()) > 1:
            P(f"{c}:")
            P()
        P(table(d[c], s["systems"].split(",")))
        P()
    P("</details>")
    P()
    notes = []
    try:
        for l in open(s["log"]):
            m = re.match(r"run\.sh: (measured link rate .*|\w+ counters: .*)", l.strip())
            if m:
                notes.append(m.group(1))
    except OSError:
        pass
    if notes:
        P("From the run: " + "; ".join(notes) + ".")
        P()
    P(f"Took {s['seconds']} s; its output: `{shown(s['log'])}`.")
    P()
PY
cat "$out/report.md"
echo "report.sh: wrote $out/report.md" >&2
exit "$failed"

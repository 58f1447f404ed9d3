#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#
# What one allreduce costs the rank's CPU, counted in instructions rather
# than timed: ina's blocking MPI_Allreduce against a started persistent one
# (MPI_Allreduce_init once per size, then MPI_Start + MPI_Wait; Open MPI
# 4.1: MPIX_Allreduce_init). A rank spins in its waits, so its CPU time is
# its latency; instructions under callgrind (rank 0 runs under valgrind,
# the others natively) separate the two and do not depend on the noise of a
# shared machine. Rank 0, slowed some fifty times by valgrind, is the last
# to reach each call, so its waits are short, though never gone (one
# round trip to the agent for the verdict, one for the result): the call
# column includes them.
#
# Per call, for each form (median of the runs, min-max in brackets):
#   call      instructions in the collective: MPI_Allreduce, or MPI_Start
#             plus MPI_Wait, everything below them included;
#   rounds    of those, the engine's looks at its link to the agent
#             (Client::round: the waits for the verdict and the result, and
#             taking in what arrived), the same code in both forms;
#   own path  the rest (call - rounds): the rank's own work for the call,
#             with the waits' loops (on one node, where no call reaches the
#             agent, the node stage's waits for the other local ranks too);
#   set-up    of those, the description and the engine's cut into blocks
#             (mca_coll_ina_allreduce_plan; at the agent, the engine's
#             Job::plan): per call for a blocking call, once per
#             MPI_Allreduce_init for a started one;
#   data      of the own path, the reduction kernels (ina_reduce) and the
#             copies (memcpy): the work on the call's bytes, the same in
#             both forms except for how the node stage shares it among the
#             local ranks (whoever is there first does more of it);
#   control   own path - data: what the form itself costs the rank;
#   polls     engine rounds per call;
#   plans, cuts   how many of each per call (counted, not assumed).
#
#   bench/persistent_cost.sh [--builddir build] [--runs 3] [--np 4]
#                            [--sizes 8,4096,65536] [--iters 1000]
#                            [--mca "--mca coll_ina_node_stage 0"]
#                            [--from DIR]
#
# --mca: more mpirun arguments (e.g. without the node stage: every rank a
# member of a job at the embedded agent). --from: only summarise the runs an
# earlier invocation left in DIR (same --runs and --sizes). Never asserts
# on cost.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top/bench/lib.sh"
b=$top/build runs=3 np=4 sizes=8,4096,65536 iters=1000 mca='' from=''
while [ $# -gt 0 ]; do
  case $1 in
    --builddir) b=$(cd "${2:?}" && pwd); shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --np) np=${2:?}; shift 2 ;;
    --sizes) sizes=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --mca) mca=${2?}; shift 2 ;;
    --from) from=$(cd "${2:?}" && pwd); shift 2 ;;
    *) die "unknown option '$1'" ;;
  esac
done
IFS=, read -r -a sz <<<"$sizes"
if [ -n "$from" ]; then
  out=$from
else
  need_build "$b" examples/ina_bench
  need_tool valgrind valgrind
  allow_root
  out=$(mktemp -d /tmp/ina-persistent-cost.XXXXXX)
  export_component "$b"
  common=(--oversubscribe --mca mpi_yield_when_idle 1 --mca coll ina
          --mca coll_ina_agent_path "$b/switch_agent/ina-switchd")
  for r in $(seq "$runs"); do
    for s in "${sz[@]}"; do
      for form in blocking persistent; do
        flag=()
        [ "$form" = persistent ] && flag=(-P)
        bench=("$b/examples/ina_bench" -b allreduce -m "$s:$s" -i "$iters" -w 10 -c "${flag[@]}")
        # shellcheck disable=SC2086 # the caller's options, word-split on purpose
        mpirun "${common[@]}" $mca \
          -np 1 valgrind -q --tool=callgrind --separate-callers=16 --callgrind-out-file="$out/$form.$s.$r.cg" "${bench[@]}" \
          : -np $((np - 1)) "${bench[@]}" >"$out/$form.$s.$r.txt" 2>&1 ||
          die "the $form run of $s B failed (run $r): $out/$form.$s.$r.txt"
        grep -q '^# check: ok' "$out/$form.$s.$r.txt" || die "wrong results: $out/$form.$s.$r.txt"
      done
    done
    echo "== run $r of $runs done"
  done
fi

echo
echo "allreduce int sum, np=$np${mca:+ ($mca)}, rank 0's instructions per call,"
echo "median of $runs runs [min-max]; $iters calls a run"
python3 - "$out" "$runs" "$sizes" <<'PY'
import collections, re, statistics, sys
out, runs, sizes = sys.argv[1], int(sys.argv[2]), [int(s) for s in sys.argv[3].split(',')]

def load(path):
    """Self cost per function, and calls and inclusive cost per call edge."""
    names, self_ir = {}, collections.Counter()
    calls, edge_ir = collections.Counter(), collections.Counter()
    fn = cfn = None
    pending = False
    def name(s):
        m = re.match(r'\((\d+)\)(?: (.*))?$', s)
        if not m:
            return s
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names[m.group(1)]
    for line in open(path):
        if line.startswith('fn='):
            fn = name(line[3:].rstrip('\n'))
        elif line.startswith('cfn='):
            cfn = name(line[4:].rstrip('\n'))
        elif line.startswith('calls='):
            pending = int(line[6:].split()[0])
        elif line[:1].isdigit() or line[:1] in '+-*':
            f = line.split()
            ir = int(f[1]) if len(f) > 1 else 0
            if pending is not False:
                calls[(fn, cfn)] += pending
                edge_ir[(fn, cfn)] += ir
                pending = False
            else:
                self_ir[fn] += ir
    return self_ir, calls, edge_ir

def per_call(path, entries):
    """Per call: all of it, the engine's rounds in it, its set-up, counts."""
    _, calls, edge_ir = load(path)
    # --separate-callers: a function is named with its callers, f'caller'...
    n = call = rounds = nrounds = setup = plans = cuts = data = 0
    for (a, c), ir in edge_ir.items():
        base, *chain = c.split("'")
        inside = any(e in chain for e in entries)
        if base in entries and chain[:1] == ['main']:
            call += ir
            n += calls[(a, c)] if base == entries[0] else 0
        elif inside and base.startswith('ina::client::Client::round(') \
                and not a.startswith('ina::client::Client::round('):
            rounds += ir
            nrounds += calls[(a, c)]
        elif inside and base.startswith('mca_coll_ina_allreduce_plan'):
            setup += ir
            plans += calls[(a, c)]
        elif inside and base.startswith('ina::client::Job::plan('):
            setup += ir
            cuts += calls[(a, c)]
        if inside and (base == 'ina_reduce' or re.match(r'_*memcpy', base)) \
                and 'ina_reduce' not in chain \
                and not any(e.startswith('ina::client::Client::round(') for e in chain):
            data += ir
    own = call - rounds
    return [v / n for v in (call, rounds, own, setup, data, own - data, nrounds, plans, cuts)]

def fmt(v):
    return f"{statistics.median(v):>8.0f} [{min(v):.0f}-{max(v):.0f}]"

cols = ('call', 'rounds', 'own path', 'set-up', 'data', 'control')
print(f"{'bytes':>8} {'form':>11}" + ''.join(f" {c:>22}" for c in cols) +
      f" {'polls':>6} {'plans':>6} {'cuts':>6}")
for s in sizes:
    for form, entries in (('blocking', ['PMPI_Allreduce']),
                          ('persistent', ['PMPI_Start', 'PMPI_Wait'])):
        rows = [per_call(f"{out}/{form}.{s}.{r}.cg", entries) for r in range(1, runs + 1)]
        med = [statistics.median(x[i] for x in rows) for i in range(9)]
        print(f"{s:>8} {form:>11}" + ''.join(f" {fmt([x[i] for x in rows]):>22}" for i in range(6))
              + f" {med[6]:>6.2f} {med[7]:>6.2f} {med[8]:>6.2f}")
PY
echo "(runs in $out)"

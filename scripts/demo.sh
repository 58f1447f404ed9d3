#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# The main job: set up (scripts/setup.sh), then run an unchanged MPI program,
# MPI_Allreduce of floats over a range of sizes, three ways in one go, and
# print them side by side with verified results:
#   ina          `--mca coll ina`: on one node the node stage does it all in
#                shared memory (no agent is needed, none is started);
#   ina agent    the same with the node stage off: every rank streams to the
#                agent, which is started for you (what each node does across
#                nodes);
#   Open MPI     `--mca coll ^ina` (tuned).
#   NP=4 (ranks), SIZES=4:16777216 (bytes), ITERS=20
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"

np=${NP:-4}
sizes=${SIZES:-4:16777216}
iters=${ITERS:-20}
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
demo=$top/build/examples/ina_allreduce_demo
common=(-np "$np" --oversubscribe --mca mpi_yield_when_idle 1)
if [ "$(id -u)" != 0 ]; then
  # In the environment: Open MPI 5.0's launcher would hand a --mca
  # component path to PMIx too.
  export OMPI_MCA_mca_base_component_path="SYS_DEFAULT:$HOME/.openmpi/components"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== mpirun ${common[*]} --mca coll ina $demo"
mpirun "${common[@]}" --mca coll ina --mca coll_ina_verbose 1 "$demo" -m "$sizes" -i "$iters" \
  >"$out/ina" 2>"$out/ina.err" || { cat "$out/ina" "$out/ina.err"; exit 1; }
echo "== mpirun ${common[*]} --mca coll ina --mca coll_ina_node_stage 0 $demo   (through the agent)"
mpirun "${common[@]}" --mca coll ina --mca coll_ina_node_stage 0 --mca coll_ina_verbose 1 "$demo" \
  -m "$sizes" -i "$iters" >"$out/agent" 2>"$out/agent.err" || { cat "$out/agent" "$out/agent.err"; exit 1; }
echo "== mpirun ${common[*]} --mca coll ^ina $demo   (Open MPI's own: tuned)"
mpirun "${common[@]}" --mca coll ^ina "$demo" -m "$sizes" -i "$iters" \
  >"$out/ompi" 2>"$out/ompi.err" || { cat "$out/ompi" "$out/ompi.err"; exit 1; }

grep -h "offloaded" "$out/ina.err" | sed -n '1p' || true
grep -h "offloaded" "$out/agent.err" | sed -n '1p' || true
echo
printf "%12s %12s %12s %14s %10s %12s %10s\n" bytes "ina usec" "agent usec" "Open MPI usec" \
  "OMPI/ina" "OMPI/agent" verified
join <(grep -v '^#' "$out/ina" | awk '{print $1, $2, $3}') \
     <(grep -v '^#' "$out/agent" | awk '{print $1, $2, $3}') |
  join - <(grep -v '^#' "$out/ompi" | awk '{print $1, $2, $3}') |
  awk '{ printf "%12s %12.1f %12.1f %14.1f %10.2f %12.2f %10s\n", $1, $2, $4, $6, $6 / $2,
         $6 / $4, ($3 == "ok" && $5 == "ok" && $7 == "ok") ? "ok" : "WRONG" }'
echo "(time ratio > 1: faster than Open MPI; all runs on this machine, same sizes, same data)"
echo "ina: the node stage (the node's ranks combine in shared memory; no agent on one node)."
echo "agent: every rank's bytes through ina-switchd over TCP, as across nodes; on one"
echo "node that loses to shared memory by design. Across link-bound fabrics, see"
echo "bench/fabric (emulated links) and docs/PERFORMANCE.md."

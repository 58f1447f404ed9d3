#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# Many jobs sharing one agent, under the scheduler's time-division policy
# (tdm) and the others: J concurrent mpirun jobs, each on hosts of its own
# in the emulated fabric (bench/fabric), share one ina-switchd. Each job
# models data-parallel training (examples/ina_train: compute T_j, then
# MPI_Allreduce of S_j bytes, K times). For each policy of the agent, for
# the hosts alone (coll ^ina) and for each job alone with the agent to
# itself: per-job mean iteration time and completion time (JCT).
# The agent's pool is one job's window (--pool-x 1: switch memory for one
# job at line rate, the case tdm is designed for), then 4 windows (--pool-x 4).
# Results: OUT/tenancy.txt (table and ratios), OUT/tenancy.svg, OUT/*.log.
# Run as root. See bench/tenancy/README.md.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../fabric/fabric.sh
. "$repo/bench/fabric/fabric.sh"
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$repo/bench/lib.sh"

usage() {
    cat <<EOF2
usage: $0 [options]
  --jobs LIST      jobs as BYTES:COMPUTE_MS, comma-separated (3 or more for the
                   comparison in docs/perf-history/sharing-an-agent.md), default $jobs_default
  --hosts-per-job H  emulated hosts (one rank each) per job, default 4
  --rate R         link rate per direction, default 100mbit
  --iters K        iterations per job, default 20
  --window W       every job's window (Segs per lease: coll_ina_window and the
                   agent's --max-window), default 8
  --pool-x LIST    agent pool sizes in windows, default 1,4
  --policies LIST  agent policies, default fcfs,exclusive,partition,tdm
  --builddir DIR   build tree (default: $repo/build)
  --out DIR        results directory, default $here/results
  --timeout S      limit for each run, default 600 seconds
EOF2
}

die() { # not lib.sh's: the messages start with "tenancy", not "run.sh"
    printf 'tenancy: %s\n' "$*" >&2
    exit 1
}

jobs_default=1048576:300,524288:150,2097152:900
jobs_list=$jobs_default hpj=4 rate=100mbit iters=20 window=8 poolx=1,4 policies=fcfs,exclusive,partition,tdm
builddir=$repo/build out=$here/results limit=600
while (($#)); do
    case $1 in
    --jobs) jobs_list=${2:?}; shift 2 ;;
    --hosts-per-job) hpj=${2:?}; shift 2 ;;
    --rate) rate=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --window) window=${2:?}; shift 2 ;;
    --pool-x) poolx=${2:?}; shift 2 ;;
    --policies) policies=${2:?}; shift 2 ;;
    --builddir) builddir=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --timeout) limit=${2:?}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
    esac
done
((EUID == 0)) || die "needs root (network namespaces)"
IFS=, read -r -a jobs <<<"$jobs_list"
IFS=, read -r -a pools <<<"$poolx"
IFS=, read -r -a pols <<<"$policies"
njobs=${#jobs[@]}
((njobs >= 1)) || die "--jobs wants at least one job"
for j in "${jobs[@]}"; do [[ $j =~ ^[0-9]+:[0-9]+$ ]] || die "bad job '$j' (BYTES:COMPUTE_MS)"; done
train=$builddir/examples/ina_train
agent=$builddir/switch_agent/ina-switchd
compdir=$builddir/ompi_coll_ina/.libs
for f in "$train" "$agent" "$compdir/mca_coll_ina.so"; do [[ -e $f ]] || die "missing $f (build first)"; done
for tool in ip socat gnuplot mpirun; do command -v "$tool" >/dev/null || die "needs $tool"; done
[[ $rate =~ ^([0-9]+)(kbit|mbit|gbit)$ ]] || die "--rate wants NUMBER{kbit|mbit|gbit}"
case ${BASH_REMATCH[2]} in
kbit) rate_bps=$((10#${BASH_REMATCH[1]} * 1000)) ;;
mbit) rate_bps=$((10#${BASH_REMATCH[1]} * 1000000)) ;;
gbit) rate_bps=$((10#${BASH_REMATCH[1]} * 1000000000)) ;;
esac
burst=$((rate_bps / 8 / 1000)) # 1 ms of the rate, at least 2 frames (as bench/fabric)
((burst >= 3028)) || burst=3028
mkdir -p "$out"
hosts=$((njobs * hpj))

fab_lock || die "another fabric benchmark is running"
cleanup() {
    local rc=$?
    fab_agent_down
    fab_down
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One PMIx port (and relay) per job.
ports=()
for ((p = 43000 + RANDOM % 2000; p < 65000 && ${#ports[@]} < njobs; p += 7)); do
    ss -Hltn "sport = :$p" | grep -q . || ports+=("$p")
done
((${#ports[@]} == njobs)) || die "no free TCP ports for the PMIx relays"
fab_down
fab_up "$hosts" "$rate" "$burst" 20ms 0 0
for ((j = 0; j < njobs; j++)); do fab_relay_up "$hpj" "${ports[j]}" $((j * hpj)); done

allow_root
export INAFAB_PPN=1 INAFAB_PREFIX=$FAB_PREFIX
# shellcheck disable=SC2054 # "tcp,self" is one MCA value
mpi_common=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1
    --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include "$FAB_HOST_IF" -x UCX_TLS=tcp)
export_component "$builddir" # for the ina jobs (the others say coll ^ina)
ina_args=(--mca coll ina
    --mca coll_ina_agent "$FAB_AGENT_ADDR:$FAB_AGENT_PORT" --mca coll_ina_test_node_size 1
    --mca coll_ina_window "$window")
agent_args=(--max-window "$window")
((hosts + 1 > $(nproc))) && agent_args+=(--spin-yield)

# run_jobs LABEL SYSTEM [JOB...]: the given jobs (indices; default all) at
# once, each its own mpirun on its own hosts; SYSTEM host or ina. Appends
# "LABEL train ..." lines to $out/runs.txt.
run_jobs() {
    local label=$1 sys=$2 j bytes ms log pids=() rc=0
    shift 2
    local -a which=("$@")
    ((${#which[@]})) || which=($(seq 0 $((njobs - 1))))
    for j in "${which[@]}"; do
        IFS=: read -r bytes ms <<<"${jobs[j]}"
        log=$out/$label-job$j.log
        local -a sa=(--mca coll ^ina)
        [[ $sys == ina ]] && sa=("${ina_args[@]}")
        PMIX_MCA_ptl_tcp_ipv4_port=${ports[j]} INAFAB_FIRST_HOST=$((j * hpj)) \
            timeout --kill-after=10 "$limit" mpirun -np "$hpj" "${mpi_common[@]}" "${sa[@]}" \
            "$repo/bench/fabric/rank.sh" "$train" -s "$bytes" -t "$ms" -k "$iters" -n "j$j" \
            >"$log" 2>&1 9>&- &
        pids+=($!)
    done
    for j in "${!pids[@]}"; do wait "${pids[j]}" || rc=$?; done
    for j in "${which[@]}"; do
        grep -q '^train .* check ok$' "$out/$label-job$j.log" ||
            { tail -n 20 "$out/$label-job$j.log" >&2; die "$label: job $j failed (exit $rc)"; }
        sed -n "s/^train /$label /p" "$out/$label-job$j.log" >>"$out/runs.txt"
    done
}

with_agent() { # POLICY SEGS LOG: start the agent
    fab_agent_up switch "$(fab_ns_switch)" "$FAB_AGENT_ADDR" "$agent" "$3" --policy "$1" \
        --segs "$2" "${agent_args[@]}"
}

: >"$out/runs.txt"
echo "tenancy: $njobs jobs x $hpj hosts, links $rate, window $window, $iters iterations"
echo "tenancy: hosts only"
run_jobs host host
for ((j = 0; j < njobs; j++)); do
    echo "tenancy: job $j alone with the agent"
    with_agent tdm "$window" "$out/agent-solo$j.log"
    run_jobs "solo" ina "$j"
    fab_agent_down
done
for x in "${pools[@]}"; do
    for pol in "${pols[@]}"; do
        echo "tenancy: policy $pol, pool $x window(s)"
        with_agent "$pol" $((x * window)) "$out/agent-$pol-x$x.log"
        run_jobs "$pol-x$x" ina
        fab_agent_down
        grep -h "decisions:" "$out/agent-$pol-x$x.log" | sed "s/^/    $pol-x$x /" || true
    done
done

# The table: per system and job, iteration time, its ratio to the job alone
# with the agent, JCT, offloaded share; then mean JCT and the ratios.
awk -v njobs="$njobs" '
{ sys = $1; j = substr($2, 2); it[sys, j] = $10; jct[sys, j] = $14; off[sys, j] = $16
  den[sys, j] = $18; if (!(sys in seen)) { seen[sys] = 1; order[++n] = sys } }
END {
  printf "%-14s", "system"; for (j = 0; j < njobs; j++) printf " | job%d iter_ms (x solo) jct_s offl%%", j
  printf " | mean jct_s\n"
  for (k = 1; k <= n; k++) {
    s = order[k]; if (s == "solo") continue; sum = 0
    printf "%-14s", s
    for (j = 0; j < njobs; j++) {
      calls = off[s, j] + den[s, j]; share = calls > 0 ? 100 * off[s, j] / calls : 0
      printf " | %8.1f (%4.2f) %6.2f %4.0f", it[s, j], it[s, j] / it["solo", j], jct[s, j], share
      sum += jct[s, j]
    }
    mean[s] = sum / njobs; printf " | %6.2f\n", mean[s]
  }
  printf "%-14s", "solo"
  for (j = 0; j < njobs; j++) printf " | %8.1f (1.00) %6.2f  100", it["solo", j], jct["solo", j]
  printf "\n\nmean JCT ratios (higher: tdm better):\n"
  for (k = 1; k <= n; k++) {
    s = order[k]; if (s ~ /^tdm/ || s == "solo") continue
    split(s, p, "-"); t = "tdm-" p[2]; if (p[2] == "") t = "tdm-x1"
    if ((t in mean) && mean[t] > 0) printf "  %s / %s = %.2f\n", s, t, mean[s] / mean[t]
  }
}' "$out/runs.txt" | tee "$out/tenancy.txt"

# The plot: mean iteration time of each job per system.
awk '{ print $1, substr($2, 2), $10 }' "$out/runs.txt" >"$out/tenancy.dat"
gnuplot <<EOF2 || echo "tenancy: gnuplot failed (the table stands)"
set terminal svg size 900,480
set output "$out/tenancy.svg"
set title "Mean iteration time per job ($njobs jobs, $rate links, window $window)"
set ylabel "ms"
set style data histograms
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set key outside
set xtics rotate by -30
plot for [j=0:$((njobs - 1))] "< awk '\$2 == " . j . "' $out/tenancy.dat" using 3:xtic(1) title "job " . j
EOF2
echo "tenancy: results in $out (tenancy.txt, tenancy.svg, runs.txt, logs)"

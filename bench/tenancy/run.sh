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
  --queue T        how long a packet may wait in a port (tbf latency), default
                   20ms; a window of many Segs sent at once needs more room
  --iters K        iterations per job, default 20
  --repeat R       rounds of every system, one after the other; the table has
                   each figure's mean over the rounds and its spread
                   (max/min), default 1
  --window W       every job's window (Segs per lease: coll_ina_window and the
                   agent's --max-window), default 8
  --pool-x LIST    agent pool sizes in windows, default 1,4
  --delay-us N     the agent sends every message N us late (ina-switchd
                   --bench-delay-us: an emulated propagation delay), default 0
  --seg-size B     bytes per Seg (ina-switchd --seg-size), default the agent's
  --regime-bytes B the regime check's allreduce (one job alone, the whole pool,
                   then a third of it), default 8388608
  --regime-only    run the regime check alone
  --host-model M   what the agent's policies take a denied call to cost on the
                   hosts (tdm's score, waiting): measured (the default: the
                   model's link rate, --host-gbps, set from the regime check's
                   host allreduce) or agent (the agent's own measured rate, as
                   ina-switchd does by default)
  --policies LIST  agent policies, default fcfs,exclusive,partition,tdm,tdm-nowait,auto;
                   suffixes, in this order: -nowait (tdm, auto: --tdm-wait false;
                   +wait: true, their default), -nohints (--host-hints false:
                   without the ranks' host costs), -noguard (--harm-guard false:
                   the policy without the harm guard), e.g. auto-nohints-noguard
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
jobs_list=$jobs_default hpj=4 rate=100mbit queue=20ms repeat=1 iters=20 window=8 poolx=1,4 policies=fcfs,exclusive,partition,tdm,tdm-nowait,auto
builddir=$repo/build out=$here/results limit=600 delay_us=0 seg_size='' regime_bytes=8388608 regime_only=0
host_model=measured
while (($#)); do
    case $1 in
    --jobs) jobs_list=${2:?}; shift 2 ;;
    --hosts-per-job) hpj=${2:?}; shift 2 ;;
    --rate) rate=${2:?}; shift 2 ;;
    --queue) queue=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --repeat) repeat=${2:?}; shift 2 ;;
    --window) window=${2:?}; shift 2 ;;
    --pool-x) poolx=${2:?}; shift 2 ;;
    --delay-us) delay_us=${2:?}; shift 2 ;;
    --seg-size) seg_size=${2:?}; shift 2 ;;
    --regime-bytes) regime_bytes=${2:?}; shift 2 ;;
    --regime-only) regime_only=1; shift ;;
    --host-model) host_model=${2:?}; shift 2 ;;
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
fab_up "$hosts" "$rate" "$burst" "$queue" 0 0
for ((j = 0; j < njobs; j++)); do fab_relay_up "$hpj" "${ports[j]}" $((j * hpj)); done

allow_root
export INAFAB_PPN=1 INAFAB_PREFIX=$FAB_PREFIX
# shellcheck disable=SC2054 # "tcp,self" is one MCA value
mpi_common=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1
    --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include "$FAB_HOST_IF" -x UCX_TLS=tcp)
export_component "$builddir" # for the ina jobs (the others say coll ^ina)
# ina_args_for LEASE: the ina jobs' arguments, their calls' window LEASE.
ina_args_for() {
    ina_args=(--mca coll ina
        --mca coll_ina_agent "$FAB_AGENT_ADDR:$FAB_AGENT_PORT" --mca coll_ina_test_node_size 1
        --mca coll_ina_window "$1")
}
ina_args_for "$window"
agent_args=(--max-window "$window")
((hosts + 1 > $(nproc))) && agent_args+=(--spin-yield)
((delay_us > 0)) && agent_args+=(--bench-delay-us "$delay_us")
[[ -n $seg_size ]] && agent_args+=(--seg-size "$seg_size")
override='' # run_jobs: BYTES:COMPUTE_MS of every job, instead of its own

# run_jobs LABEL SYSTEM [JOB...]: the given jobs (indices; default all) at
# once, each its own mpirun on its own hosts; SYSTEM host or ina. Appends
# "LABEL train ..." lines to $out/runs.txt.
run_jobs() {
    local label=$1 sys=$2 j bytes ms log pids=() rc=0
    shift 2
    local -a which=("$@")
    ((${#which[@]})) || which=($(seq 0 $((njobs - 1))))
    for j in "${which[@]}"; do
        IFS=: read -r bytes ms <<<"${override:-${jobs[j]}}"
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
        sed -n "s/^train /$label /p" "$out/$label-job$j.log" | sed "s/\$/ round $round/" >>"$out/runs.txt"
    done
}

with_agent() { # POLICY[+wait|-nowait][-nohints][-noguard] SEGS LOG: start the agent
    local extra=() policy=$1
    if [[ $policy == *-noguard ]]; then
        extra+=(--harm-guard false)
        policy=${policy%-noguard}
    fi
    if [[ $policy == *-nohints ]]; then
        extra+=(--host-hints false)
        policy=${policy%-nohints}
    fi
    if [[ $policy == *+wait ]]; then
        extra+=(--tdm-wait true)
        policy=${policy%+wait}
    elif [[ $policy == *-nowait ]]; then
        extra+=(--tdm-wait false)
        policy=${policy%-nowait}
    fi
    fab_agent_up switch "$(fab_ns_switch)" "$FAB_AGENT_ADDR" "$agent" "$3" --policy "$policy" \
        --segs "$2" "${extra[@]}" "${agent_args[@]}"
}

: >"$out/runs.txt"
echo "tenancy: $njobs jobs x $hpj hosts, links $rate, window $window, $iters iterations," \
    "agent delay ${delay_us} us${seg_size:+, Segs of $seg_size bytes}"

# The regime: one job's allreduces of --regime-bytes alone, back to back
# (no compute), with the whole pool of one window and with a third of it
# (pool and window), and on the hosts; its rate against the links'. Where
# the pool is scarce (the round trip a window must cover is long:
# --delay-us) the whole pool reaches about line rate and a third about a
# third; where it is plentiful a third streams at line rate too.
third=$(((window + 2) / 3))
override=$regime_bytes:0
round=0
: >"$out/regime-runs.txt"
for cfg in "whole:$window" "third:$third" "host:0"; do
    IFS=: read -r name lease <<<"$cfg"
    echo "tenancy: regime: job 0 alone, ${name}"
    if [[ $name == host ]]; then
        run_jobs "regime-$name" host 0
    else
        ina_args_for "$lease"
        fab_agent_up switch "$(fab_ns_switch)" "$FAB_AGENT_ADDR" "$agent" "$out/agent-regime-$name.log" \
            --policy tdm --segs "$lease" "${agent_args[@]}"
        run_jobs "regime-$name" ina 0
        fab_agent_down
    fi
done
override=''
ina_args_for "$window"
grep '^regime-' "$out/runs.txt" >"$out/regime-runs.txt"
sed -i '/^regime-/d' "$out/runs.txt"
awk -v bps="$rate_bps" -v w="$window" -v t="$third" '
{ sys = $1; bytes = $6; ms = $12; mbs = bytes / (ms / 1000) / 1e6; how = ""
  if (sys == "regime-whole") how = " (pool and window " w " Segs)"
  if (sys == "regime-third") how = " (pool and window " t " Segs)"
  printf "%-14s allreduce of %d bytes: %8.2f ms, %6.2f MB/s, %3.0f%% of a link (%.2f MB/s)%s\n",
         sys, bytes, ms, mbs, 100 * mbs / (bps / 8 / 1e6), bps / 8 / 1e6, how }' \
    "$out/regime-runs.txt" | tee "$out/regime.txt"
((regime_only)) && exit 0
# The host model (ina-switchd --host-gbps): its ring allreduce takes
# 2(n-1)/n S beta, so beta is the host run's time over 2(n-1)/n S.
case $host_model in
  measured)
    host_gbps=$(awk -v n="$hpj" '{ s = $6; ms = $12; beta = ms / 1000 / (2 * (n - 1) / n * s)
                                   printf "%.6f", 8 / beta / 1e9 }' <(grep '^regime-host ' "$out/regime-runs.txt"))
    echo "tenancy: host model: --host-gbps $host_gbps (from the hosts' allreduce above)"
    agent_args+=(--host-gbps "$host_gbps") ;;
  agent) ;;
  *) die "--host-model: measured or agent" ;;
esac
echo "tenancy: hosts only"
# Every system once per round, rounds one after the other (--repeat), so
# that a slow spell of the machine spreads over all of them and the spread
# of each shows the noise.
for ((round = 1; round <= repeat; round++)); do
    echo "tenancy: round $round of $repeat: hosts only"
    run_jobs host host
    for ((j = 0; j < njobs; j++)); do
        echo "tenancy: job $j alone with the agent"
        with_agent tdm "$window" "$out/agent-solo$j-r$round.log"
        run_jobs "solo" ina "$j"
        fab_agent_down
    done
    for x in "${pools[@]}"; do
        for pol in "${pols[@]}"; do
            echo "tenancy: policy $pol, pool $x window(s)"
            with_agent "$pol" $((x * window)) "$out/agent-$pol-x$x-r$round.log"
            run_jobs "$pol-x$x" ina
            fab_agent_down
            grep -hE "decisions:|harm guard" "$out/agent-$pol-x$x-r$round.log" | sed "s/^/    $pol-x$x /" || true
        done
    done
done

# The table: per system and job, iteration time, its ratio to the job alone
# with the agent and to the hosts alone, JCT, offloaded share (each the mean
# over the rounds); then each system's mean JCT, its spread over the rounds
# (min..max of the rounds' means), the slowest job against the hosts alone,
# and the mean-JCT ratios to tdm.
awk -v njobs="$njobs" '
{ sys = $1; j = substr($2, 2); r = $NF
  it[sys, j] += $10; jct[sys, j] += $14; off[sys, j] += $16; den[sys, j] += $18; cnt[sys, j]++
  rj[sys, r] += $14; rn[sys, r]++; if (!((sys, r) in rseen)) { rseen[sys, r] = 1; rounds[sys] = rounds[sys] " " r }
  if (!(sys in seen)) { seen[sys] = 1; order[++n] = sys } }
END {
  for (k = 1; k <= n; k++) for (j = 0; j < njobs; j++) {
    s = order[k]; c = cnt[s, j]; it[s, j] /= c; jct[s, j] /= c }
  printf "%-14s", "system"
  for (j = 0; j < njobs; j++) printf " | job%d iter_ms (x solo, x host) jct_s offl%%", j
  printf " | mean jct_s (rounds min..max) | slowest job x host\n"
  for (k = 1; k <= n; k++) {
    s = order[k]; if (s == "solo") continue; sum = 0; worst = 0
    printf "%-14s", s
    for (j = 0; j < njobs; j++) {
      calls = off[s, j] + den[s, j]; share = calls > 0 ? 100 * off[s, j] / calls : 0
      xh = it[s, j] / it["host", j]; worst = xh > worst ? xh : worst
      printf " | %8.1f (%4.2f, %4.2f) %6.2f %4.0f", it[s, j], it[s, j] / it["solo", j], xh, jct[s, j], share
      sum += jct[s, j]
    }
    mean[s] = sum / njobs; lo = 1e30; hi = 0
    m = split(rounds[s], rs, " ")
    for (q = 1; q <= m; q++) { v = rj[s, rs[q]] / rn[s, rs[q]]; lo = v < lo ? v : lo; hi = v > hi ? v : hi }
    printf " | %6.2f (%.2f..%.2f) | %4.2f\n", mean[s], lo, hi, worst
  }
  printf "%-14s", "solo"
  for (j = 0; j < njobs; j++) printf " | %8.1f (1.00, %4.2f) %6.2f  100", it["solo", j], it["solo", j] / it["host", j], jct["solo", j]
  printf "\n\nmean JCT ratios (higher: tdm better):\n"
  for (k = 1; k <= n; k++) {
    s = order[k]; if (s ~ /^tdm/ || s == "solo") continue
    split(s, p, "-"); t = "tdm-" p[2]; if (p[2] == "") t = "tdm-x1"
    if ((t in mean) && mean[t] > 0) printf "  %s / %s = %.2f\n", s, t, mean[s] / mean[t]
  }
}' "$out/runs.txt" | tee "$out/tenancy.txt"
cat "$out/regime.txt" >>"$out/tenancy.txt"

# The plot: mean iteration time of each job per system.
awk '{ k = $1 " " substr($2, 2); sum[k] += $10; c[k]++; if (!(k in o)) { o[k] = 1; ord[++n] = k } }
END { for (i = 1; i <= n; i++) print ord[i], sum[ord[i]] / c[ord[i]] }' "$out/runs.txt" >"$out/tenancy.dat"
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

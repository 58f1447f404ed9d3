#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# Two jobs side by side on the hosts' grid (the hyper-square of run.sh
# --grid): each on a partition of whole groups that ina-switchctl place
# chose, then the same two jobs interleaved (alternate hosts), each alone
# and both at once, for each system (grid: ina's host algorithm for the
# grid; tuned: Open MPI's own). Per size, each job's time per call in each
# case and the ratios, and which grid ports each run used.
# See bench/fabric/README.md, "Jobs side by side on the grid". Run as root.
set -euo pipefail
export LC_NUMERIC=C # EPOCHREALTIME and awk's numbers with a decimal point

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=fabric.sh
. "$here/fabric.sh"
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$repo/bench/lib.sh"

usage() {
    cat <<EOF
usage: $0 [options]
  --grid GXxGY     the hosts' grid, GX x GY groups of four hosts (4 x GX x GY
                   hosts, at least 2 groups), as run.sh --grid; default 2x2
  --nodes N        hosts per job (whole groups: ina-switchctl place rounds up),
                   default half the grid's hosts
  --rate R         link rate per direction, NUMBER{kbit|mbit|gbit}, default 25mbit
  --burst B        token bucket of every link, default 1 ms at the link rate
  --queue T        tbf latency: how long a packet may wait in a port, default 200ms
  --sizes MIN:MAX  allreduce sizes in bytes (doubling), default 4194304:16777216
  --iters K        timed iterations of every size (plus 1 warm-up), default 3
  --repeat R       rounds (every run R times, the median reported), default 1
  --systems LIST   comma-separated: grid (coll ina, its host algorithm for the
                   grid, no agent: coll_ina_host grid), tuned (--mca coll ^ina);
                   default grid,tuned
  --builddir DIR   build tree with examples/ina_bench, switch_agent/ina-switchctl
                   and ompi_coll_ina/.libs (default: $repo/build)
  --out DIR        results directory, default $here/results/partitions
  --timeout S      limit for each mpirun, default 900 seconds
  --cleanup        only remove what an interrupted earlier run left behind
EOF
}

grid=2x2 nodes='' rate=25mbit burst='' queue=200ms sizes=4194304:16777216 iters=3 repeat=1
systems=grid,tuned builddir='' out=$here/results/partitions limit=900 cleanup_only=0
while (($#)); do
    case $1 in
    --grid) grid=${2:?}; shift 2 ;;
    --nodes) nodes=${2:?}; shift 2 ;;
    --rate) rate=${2:?}; shift 2 ;;
    --burst) burst=${2:?}; shift 2 ;;
    --queue) queue=${2:?}; shift 2 ;;
    --sizes) sizes=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --repeat) repeat=${2:?}; shift 2 ;;
    --systems) systems=${2:?}; shift 2 ;;
    --builddir) builddir=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --timeout) limit=${2:?}; shift 2 ;;
    --cleanup) cleanup_only=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
    esac
done

[[ $grid =~ ^([0-9]{1,2})x([0-9]{1,2})$ ]] || die "--grid wants GXxGY, e.g. 2x2"
gx=$((10#${BASH_REMATCH[1]})) gy=$((10#${BASH_REMATCH[2]}))
((gx >= 1 && gy >= 1 && gx * gy >= 2 && 4 * gx * gy <= 248)) ||
    die "--grid wants GX, GY >= 1, at least 2 groups (one a job) and 4 x GX x GY <= 248 hosts"
cols=$((2 * gx)) rows=$((2 * gy)) hosts=$((4 * gx * gy))
[[ -n $nodes ]] || nodes=$((hosts / 2))
fab_in_range "$nodes" 1 $((hosts / 2)) || die "--nodes wants 1..$((hosts / 2)) (two jobs on $hosts hosts)"
nodes=$((10#$nodes))
fab_in_range "$iters" 1 1000000 || die "--iters wants a count >= 1"
iters=$((10#$iters))
fab_in_range "$repeat" 1 100 || die "--repeat wants 1..100"
repeat=$((10#$repeat))
fab_in_range "$limit" 1 86400 || die "--timeout wants seconds"
read -r min_bytes max_bytes < <(fab_sizes "$sizes") ||
    die "--sizes wants MIN:MAX in bytes, 4 <= MIN <= MAX <= 1073741824 (float elements)"
rate_bps=$(fab_rate_bps "$rate") || die "--rate wants NUMBER{kbit|mbit|gbit}, e.g. 25mbit"
((rate_bps >= 100000)) || die "--rate: at least 100kbit"
[[ -n $burst ]] || burst=$(fab_default_burst "$rate_bps")
IFS=, read -ra active <<<"$systems"
((${#active[@]})) || die "--systems: name at least one system"
run_grid=0
for s in "${active[@]}"; do
    case $s in
    tuned) ;;
    grid) run_grid=1 ;;
    *) die "--systems: unknown system '$s' (grid, tuned)" ;;
    esac
done

((EUID == 0)) || die "must run as root (it creates network namespaces and links): sudo $0 $*"
lacking=$(fab_missing_tools ip:iproute2 tc:iproute2 ss:iproute2 socat:socat mpirun:openmpi-bin \
    flock:util-linux timeout:coreutils sysctl:procps)
[[ -z $lacking ]] || die "$lacking"

# The lock of every fabric benchmark (run.sh's too): one set of namespaces.
fab_lock || die "another fabric benchmark (run.sh, partitions.sh) is running (lock /run/lock/$FAB_PREFIX.lock)"

if ((cleanup_only)); then
    fab_down
    echo "partitions.sh: removed leftovers (namespaces $FAB_PREFIX-*, relays)"
    exit 0
fi

if [[ -z $builddir ]]; then
    builddir=$(fab_builddir "$repo") ||
        die "no build tree found ($repo/build); build ina (scripts/setup.sh) or pass --builddir"
fi
bench=$builddir/examples/ina_bench
switchctl=$builddir/switch_agent/ina-switchctl
compdir=$builddir/ompi_coll_ina/.libs
[[ -x $bench ]] || die "$bench not found: build ina or pass --builddir"
[[ -x $switchctl ]] || die "$switchctl not found: build ina or pass --builddir"
if ((run_grid)); then
    [[ -e $compdir/mca_coll_ina.so ]] || die "$compdir/mca_coll_ina.so not found (or leave grid out of --systems)"
    export_component "$builddir" # for grid (tuned says coll ^ina)
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)

cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    fab_mpirun_stop
    fab_down
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# The placements: a fresh state file, the grid's squares as the cluster's
# topology, job A then job B; each gets the host file the tool prints.
topology=$out/topology state=$out/placement.state
{
    echo "# bench/fabric/partitions.sh --grid $grid: the hosts' grid, no agent"
    fab_grid_squares "$gx" "$gy"
} >"$topology"
rm -f "$state"
declare -A hosts_of=() # JOB (pA, pB: partitioned; iA, iB: interleaved) -> h<i>,...
for j in A B; do
    rc=0
    "$switchctl" place --topology "$topology" --state "$state" --nodes "$nodes" --job "$j" \
        >"$out/hosts-$j" 2>"$out/place-$j.err" || rc=$?
    ((rc == 0)) || die "ina-switchctl place --nodes $nodes --job $j failed (exit $rc): $(cat "$out/place-$j.err")"
    mapfile -t hl < <(grep -v '^#' "$out/hosts-$j")
    for h in "${hl[@]}"; do [[ $h =~ ^h[0-9]+$ ]] || die "ina-switchctl place printed host '$h' ($out/hosts-$j)"; done
    hosts_of[p$j]=$(IFS=,; echo "${hl[*]}")
done
# Interleaved: the same hosts, in order, taken in turn by A and by B.
mapfile -t union < <(tr , '\n' <<<"${hosts_of[pA]},${hosts_of[pB]}" | sort -t h -k 2n)
ia=() ib=()
for ((k = 0; k < ${#union[@]}; k++)); do
    if ((k % 2 == 0)); then ia+=("${union[k]}"); else ib+=("${union[k]}"); fi
done
hosts_of[iA]=$(IFS=,; echo "${ia[*]}")
hosts_of[iB]=$(IFS=,; echo "${ib[*]}")
declare -A nranks=()
for j in pA pB iA iB; do
    nranks[$j]=$(tr , '\n' <<<"${hosts_of[$j]}" | wc -l)
done
((nranks[pA] == nranks[pB] && nranks[iA] == nranks[iB])) || die "the two jobs differ in size (${hosts_of[pA]} / ${hosts_of[pB]})"

# One PMIx port for job A's mpirun, one for B's, each relayed into every
# host's namespace (a job's ranks reach its own mpirun whatever its hosts).
mapfile -t ports < <(fab_free_ports 2) || true
((${#ports[@]} == 2)) || die "no two free TCP ports for the PMIx relays"
declare -A port_of=([A]=${ports[0]} [B]=${ports[1]})

fab_down # leftovers of an interrupted run
fab_up "$hosts" "$rate" "$burst" "$queue"
fab_grid_up "$cols" "$rows" "$rate" "$burst" "$queue"
fab_relay_up "$hosts" "${port_of[A]}"
fab_relay_up "$hosts" "${port_of[B]}"

allow_root
export INAFAB_PPN=1 INAFAB_PREFIX=$FAB_PREFIX
# Ranks talk over the grid addresses, routed over the grid's links.
fab_mpi_args "$FAB_GRID_IF" "$FAB_HOST_IF"
nports=$((2 * $(fab_grid_links "$cols" "$rows" | wc -l)))

echo "partitions.sh: $hosts hosts on a hyper-square of ${gx}x$gy groups ($cols x $rows hosts, $nports grid ports), links $rate (burst $burst, queue $queue), build $builddir"
echo "partitions.sh: load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
for j in A B; do
    echo "partitions.sh: ina-switchctl place --nodes $nodes --job $j: $(sed -n 's/^# job [^:]*: //p' "$out/hosts-$j"); slurm $(sed -n 's/^# slurm: //p' "$out/hosts-$j")"
    echo "partitions.sh:   partitioned job $j: ${hosts_of[p$j]}"
done
for j in A B; do echo "partitions.sh:   interleaved job $j: ${hosts_of[i$j]}"; done
echo "partitions.sh: interleaved, each job holds part of every group and no whole one: coll ina's grid algorithm does not apply, it falls back to tuned's"

# MPI arguments of each system, and of each job (its ranks' hosts).
sys_args() {
    case $1 in
    tuned) args=(--mca coll ^ina) ;;
    # Open MPI's default coll selection with ina stacked on top of it
    # (coll_ina_enable; priority 90, above tuned's), so that a call ina
    # leaves runs tuned's algorithm, as on a cluster (with --mca coll ina
    # alone it would run basic's, which ina then hosts). coll_ina_test_hosts names each rank's
    # emulated host (every namespace has this machine's name); verbose 10
    # says whether the grid lies under MPI_COMM_WORLD (cid 0) and why not.
    grid) args=(--mca coll_ina_enable 1 --mca coll_ina_test_node_size 1 --mca coll_ina_verbose 10
        --mca coll_ina_host grid --mca coll_ina_topology "$topology"
        --mca coll_ina_test_hosts "$2") ;;
    esac
}

# run SYSTEM LAYOUT JOB...: JOB (A, B) of LAYOUT (p, i) at once, one mpirun
# each; appends to the result files: runs.csv, ports.txt (the bytes each
# grid port sent during the run), drops.txt, overlap.txt, algs.txt.
runs_csv=$out/partitions-runs.csv
run() {
    local sys=$1 lay=$2 j k who who_name t0 dt log ports_before drops_before
    shift 2
    local -a jobs=("$@") pids=() logs=() starts=() ends=()
    who=$(IFS=; echo "${jobs[*]}")
    ports_before=$(fab_grid_port_bytes)
    drops_before=$(fab_port_drops)
    t0=$EPOCHREALTIME
    for j in "${jobs[@]}"; do
        sys_args "$sys" "${hosts_of[$lay$j]}"
        log=$out/logs/$sys-$lay-$who-$j-r$rep.log
        starts+=("$EPOCHREALTIME")
        fab_mpirun_start "$limit" "$log" "PMIX_MCA_ptl_tcp_ipv4_port=${port_of[$j]}" \
            "INAFAB_HOSTS=${hosts_of[$lay$j]}" -np "${nranks[$lay$j]}" "${FAB_MPI_ARGS[@]}" \
            "${args[@]}" "$here/rank.sh" "$bench" -b allreduce -d float -o sum -c \
            -m "$min_bytes:$max_bytes" -i "$iters" -w 1
        pids+=("$FAB_MPIRUN_PID") logs+=("$log")
    done
    for k in "${!pids[@]}"; do
        fab_mpirun_finish "${pids[k]}" "${logs[k]}" ||
            die "$sys, job ${jobs[k]}: mpirun failed or results were not verified; full output in ${logs[k]}"
        ends+=("$(stat -c %.6Y "${logs[k]}")") # its last output: the job's end
    done
    dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    if [[ $who == AB ]]; then who_name="A and B at once"; else who_name="job $who alone"; fi
    echo "partitions.sh: [$rep/$repeat] $sys, $(lay_name "$lay"), $who_name: $dt s"
    for k in "${!jobs[@]}"; do
        awk -v p="$sys,$lay,$who,${jobs[k]},$rep" '$1 ~ /^[0-9]+$/ && NF == 6 { print p "," $1 "," $3 }' \
            "${logs[k]}" >>"$runs_csv"
        [[ $sys == grid ]] || continue
        # The first rank's word on MPI_COMM_WORLD: on a grid, or why not.
        { grep -m1 -o 'cid 0: on a grid of [0-9]* x [0-9]* nodes\|cid 0: no grid for the host algorithms: .*' \
            "${logs[k]}" || echo "cid 0: (the component said nothing of a grid)"; } |
            sed "s/^cid 0: /$sys $lay ${jobs[k]} /" >>"$out/algs.txt"
    done
    if ((${#jobs[@]} == 2)); then # how long the two ran at once, of each one's run
        awk -v s="$sys" -v l="$lay" -v a0="${starts[0]}" -v a1="${ends[0]}" -v b0="${starts[1]}" -v b1="${ends[1]}" 'BEGIN {
            o = (a1 < b1 ? a1 : b1) - (a0 > b0 ? a0 : b0); if (o < 0) o = 0
            printf "%s %s %.3f %.3f\n", s, l, o / (a1 - a0), o / (b1 - b0) }' >>"$out/overlap.txt"
    fi
    # What each grid port sent during the run, and the packets ports dropped.
    fab_grid_port_bytes | awk -v p="$sys $lay $who" 'NR == FNR { b[$1, $2] = $3; next }
        { print p, $1, $2, $3 - b[$1, $2] }' <(echo "$ports_before") - >>"$out/ports.txt"
    fab_port_drops | awk -v p="$sys $lay $who" 'NR == FNR { b[$1, $2] = $3; next }
        { d += $3 - b[$1, $2] } END { print p, d + 0 }' <(echo "$drops_before") - >>"$out/drops.txt"
}
lay_name() { if [[ $1 == p ]]; then echo partitioned; else echo interleaved; fi; }

rm -rf "$out/logs"
mkdir -p "$out/logs"
echo "system,layout,run,job,round,bytes,avg_usec" >"$runs_csv"
: >"$out/ports.txt"
: >"$out/drops.txt"
: >"$out/overlap.txt"
: >"$out/algs.txt"
# Round by round, every run in turn, so that a change of load on the
# machine hits all of them alike: each job alone, then both at once, on
# the partitions, then interleaved.
for ((rep = 1; rep <= repeat; rep++)); do
    for lay in p i; do
        for set in A B AB; do
            for sys in "${active[@]}"; do
                if [[ $set == AB ]]; then run "$sys" "$lay" A B; else run "$sys" "$lay" "$set"; fi
            done
        done
    done
done

# Which algorithm ran (grid): partitioned on the grid, interleaved not.
if ((run_grid)); then
    sort -u "$out/algs.txt" | while read -r sys lay j what; do
        echo "partitions.sh: $sys, $(lay_name "$lay") job $j, MPI_COMM_WORLD: $what"
    done
    awk '$2 == "p" && !/on a grid/ { bad = 1 } $2 == "i" && /on a grid/ { bad = 1 } END { exit bad }' \
        "$out/algs.txt" || echo "partitions.sh: WARNING: not the algorithms expected (the grid on the partitions, tuned's interleaved)"
fi

# The tables: per system, each job's median time per call in each run, and
# the ratios; then what the grid's links carried.
md=$out/partitions.md
awk -F, -v R="$repeat" -v systems="${active[*]}" '
    NR == 1 { next }
    { k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $6; n[k]++; v[k, n[k]] = $7
      if (!($6 in seen)) { seen[$6] = 1; size[ns++] = $6 } }
    function median(k,    i, j, t, m) {
        m = n[k]; if (!m) return ""
        for (i = 1; i <= m; i++) a[i] = v[k, i]
        for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return a[int((m + 1) / 2)]
    }
    function ms(x) { return x == "" ? "-" : sprintf("%.1f", x / 1000) }
    function ratio(x, y) { return (x == "" || y == "" || y <= 0) ? "-" : sprintf("%.2f", x / y) }
    function span(name, x) { if (x == "-") return; x += 0
        if (!(name in lo) || x < lo[name]) lo[name] = x; if (!(name in hi) || x > hi[name]) hi[name] = x }
    END {
        nsys = split(systems, sys, " ")
        for (q = 1; q <= nsys; q++) {
            s = sys[q]
            printf "### %s: time per call (ms)%s\n\n", s, (R > 1 ? ", median of " R " rounds" : "")
            printf "| bytes | job | P alone | P both | P both/alone | I alone | I both | I both/P alone | I both/P both | I alone/P alone | I both/I alone |\n"
            printf "| ---: | :---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
            for (z = 0; z < ns; z++) for (jj = 1; jj <= 2; jj++) {
                b = size[z]; j = jj == 1 ? "A" : "B"
                pa = median(s SUBSEP "p" SUBSEP j SUBSEP j SUBSEP b); pb = median(s SUBSEP "p" SUBSEP "AB" SUBSEP j SUBSEP b)
                ia = median(s SUBSEP "i" SUBSEP j SUBSEP j SUBSEP b); ib = median(s SUBSEP "i" SUBSEP "AB" SUBSEP j SUBSEP b)
                r1 = ratio(pb, pa); r2 = ratio(ib, pa); r3 = ratio(ib, pb); r4 = ratio(ia, pa); r5 = ratio(ib, ia)
                span(s " P both/alone", r1); span(s " I both/P alone", r2); span(s " I both/P both", r3)
                span(s " I alone/P alone", r4); span(s " I both/I alone", r5)
                printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", b, j, ms(pa), ms(pb), r1, ms(ia), ms(ib), r2, r3, r4, r5
            }
            printf "\n"
        }
        printf "P: each job on the partition ina-switchctl place gave it (whole groups); I: interleaved, job A on alternate hosts\n"
        printf "of both partitions, job B on the others (no whole group: tuned'"'"'s algorithm even with coll ina). alone: the job\n"
        printf "alone on the fabric; both: A and B at the same time. A ratio above 1: the first is slower.\n\n"
        for (q = 1; q <= nsys; q++) {
            s = sys[q]
            if ((s " P both/alone") in lo)
                printf "- %s: partitioned, both at once / alone: %.2f..%.2f (%s 1.1x)\n", s, lo[s " P both/alone"], hi[s " P both/alone"],
                    hi[s " P both/alone"] <= 1.1 ? "within" : "NOT within"
            if ((s " I both/P alone") in lo)
                printf "- %s: interleaved, both at once / partitioned alone: %.2f..%.2f; / partitioned both at once: %.2f..%.2f\n",
                    s, lo[s " I both/P alone"], hi[s " I both/P alone"], lo[s " I both/P both"], hi[s " I both/P both"]
            if ((s " I alone/P alone") in lo)
                printf "- %s: of which the layout (interleaved alone / partitioned alone): %.2f..%.2f; the sharing (interleaved both / alone): %.2f..%.2f\n",
                    s, lo[s " I alone/P alone"], hi[s " I alone/P alone"], lo[s " I both/I alone"], hi[s " I both/I alone"]
        }
    }' "$runs_csv" >"$md"

# The links: per run (summed over the rounds), the bytes the grid ports
# sent, against a ring whose every step is one link (2(H-1) x S per call of
# H hosts); the ports used (at least a tenth of the busiest port's bytes:
# a port that only carried TCP acknowledgements stays under that); and the
# share of the bytes that crossed ports the other job used when alone.
calls_bytes=0
for ((s = min_bytes; s <= max_bytes; s *= 2)); do calls_bytes=$((calls_bytes + s * (iters + 1) * repeat)); done
{
    echo
    echo "### The grid's links (bytes every grid port sent, all rounds; $nports ports)"
    echo
    echo "| system | layout | run | MB | x one-hop ring | ports used | on the other job's ports | packets dropped |"
    echo "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"
    awk -v calls="$calls_bytes" -v h="${nranks[pA]}" -v systems="${active[*]}" '
        NR == FNR { d[$1, $2, $3] += $4; next }
        { k = $1 SUBSEP $2 SUBSEP $3; b[k, $4 ">" $5] += $6; tot[k] += $6; if ($6 > mx[k]) mx[k] = $6; port[$4 ">" $5] = 1 }
        END {
            nsys = split(systems, sys, " ")
            for (q = 1; q <= nsys; q++) for (l = 1; l <= 2; l++) {
                s = sys[q]; lay = l == 1 ? "p" : "i"
                # The ports each job used alone (over all rounds).
                for (jj = 1; jj <= 2; jj++) {
                    j = jj == 1 ? "A" : "B"; k = s SUBSEP lay SUBSEP j
                    for (p in port) used[j, p] = (b[k, p] >= 0.1 * mx[k] && mx[k] > 0)
                }
                for (w = 1; w <= 3; w++) {
                    who = w == 1 ? "A" : w == 2 ? "B" : "AB"; k = s SUBSEP lay SUBSEP who
                    if (!(k in tot)) continue
                    nu = 0; other = 0
                    for (p in port) {
                        if (b[k, p] >= 0.1 * mx[k] && mx[k] > 0) nu++
                        if (who == "A" && used["B", p]) other += b[k, p]
                        if (who == "B" && used["A", p]) other += b[k, p]
                    }
                    jobs = who == "AB" ? 2 : 1
                    printf "| %s | %s | %s | %.1f | %.2f | %d | %s | %d |\n", s, lay == "p" ? "partitioned" : "interleaved",
                        who == "AB" ? "A and B at once" : who " alone", tot[k] / 1e6,
                        tot[k] / (2 * (h - 1) * calls * jobs), nu,
                        (who == "AB" ? "-" : sprintf("%.1f%%", (tot[k] > 0 ? 100 * other / tot[k] : 0))), d[s, lay, who]
                }
                shared = 0
                for (p in port) if (used["A", p] && used["B", p]) shared++
                printf "| %s | %s | ports both jobs used alone | | | %d | | |\n", s, lay == "p" ? "partitioned" : "interleaved", shared
            }
        }' "$out/drops.txt" "$out/ports.txt"
    echo
    echo "A port: one direction of a grid link (h<i> to its neighbour h<j>). x one-hop ring: the bytes against a ring"
    echo "whose every step is one link, 2(H-1) x S per call of H = ${nranks[pA]} hosts. A port counts as used where it carried"
    echo "at least a tenth of the run's busiest port (acknowledgements alone stay under that)."
    awk '{ a[$1 " " $2] = (a[$1 " " $2] == "" || $3 < a[$1 " " $2]) ? $3 : a[$1 " " $2]
           b[$1 " " $2] = (b[$1 " " $2] == "" || $4 < b[$1 " " $2]) ? $4 : b[$1 " " $2] }
         END { for (k in a) { split(k, w, " ")
               printf "A and B at once, %s %s: they ran together for %.0f%% of A'"'"'s run and %.0f%% of B'"'"'s (start-up included; the least of the rounds)\n",
                   w[1], w[2] == "p" ? "partitioned" : "interleaved", 100 * a[k], 100 * b[k] } }' "$out/overlap.txt" | sort
} >>"$md"
{
    echo "system,layout,run,port,bytes"
    awk '{ s[$1 "," $2 "," $3 "," $4 ">" $5] += $6 } END { for (k in s) print k "," s[k] }' "$out/ports.txt" | sort
} >"$out/ports.csv"

echo
cat "$md"
echo
echo "partitions.sh: wrote $md, $runs_csv, $out/ports.csv (logs: $out/logs, hosts: $out/hosts-A, $out/hosts-B)"

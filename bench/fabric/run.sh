#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# Emulated-fabric benchmark: MPI_Allreduce (or, with --coll, another
# collective) through ina vs Open MPI's own collectives, over real kernel
# networking between emulated hosts on this machine (network namespaces, a
# bridge, rate-limited veth links).
# See bench/fabric/README.md. Run as root.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=fabric.sh
. "$here/fabric.sh"
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$repo/bench/lib.sh"

usage() {
    cat <<EOF
usage: $0 [options]
  --coll NAME      the collective every system runs: allreduce (default),
                   reduce, allgather, bcast or reduce_scatter_block (float sum
                   where it reduces, root rank 0 where it has one; results
                   checked); results in NAME.csv, NAME.md and NAME.png;
                   other than allreduce's, the logs are NAME-SYSTEM.log,
                   NAME-link.log, NAME-agent.log ...
  --hosts N        emulated hosts (network namespaces), default 4
  --ppn P          MPI ranks per host, default 1
  --leaves L       L >= 2: a tree of agents: the hosts split in blocks over L
                   leaf switches, each with its agent, under a spine switch
                   with the root agent; each leaf's uplink is limited like a
                   host link (--rate). Default 0: one switch, one agent
  --spines S       with --leaves, S >= 2 dividing L: one level more: the leaves
                   split in blocks of L/S under S spine switches, each with its
                   agent, under a core switch with the root agent; each spine's
                   uplink is limited like a host link too. Default 0: one spine
  --agents A       A >= 1: A agents on the one switch, each behind its own link
                   limited like a host link (a model of A switches or planes);
                   system ina stripes every call over all of them, ina1 uses
                   agent 0 alone (same run). Default 0: one agent, unlimited
  --grid GXxGY     the hosts' own direct-connect fabric, a hyper-square of GX x GY
                   groups of four hosts (4 x GX x GY hosts, --hosts follows):
                   every host linked to its grid neighbours by links limited
                   like a host link (--rate), host traffic routed over them by
                   shortest paths; the switch and its agent stay for ina
  --rate R         link rate per direction, NUMBER{kbit|mbit|gbit}, default 500mbit
  --burst B        token bucket of every link (tc size syntax), default 1 ms at
                   the link rate (at least 2 frames)
  --queue T        tbf latency: how long a packet may wait in a port, default 20ms
  --sizes MIN:MAX  sizes in bytes (doubling), default 8:67108864: each rank's
                   vector (allreduce, reduce), the root's (bcast), each rank's
                   block (allgather: the gathered vector is ranks x that;
                   reduce_scatter_block: each rank's input vector is)
  --form F         how every system makes its calls: blocking (default),
                   nonblocking (MPI_I<coll> then MPI_Wait: Open MPI's libnbc for
                   tuned and ring, the grid's rings driven by ina's progress
                   callback for grid), persistent (MPI_<coll>_init once per
                   size, then MPI_Start and MPI_Wait)
  --iters K        iterations for sizes up to 64 KiB (fewer for larger), default 100
  --repeat R       run the whole sweep R times, report the median, default 1
  --systems LIST   comma-separated, in this order: tuned (Open MPI's default
                   choice), ring (tuned forced to its bandwidth-optimal
                   algorithm for --coll, the best host algorithm for big
                   messages: coll_tuned_<coll>_algorithm allreduce 4 ring,
                   allgather 4 ring, bcast 3 and reduce 3 pipeline (a chain
                   in rank order, $ring_seg-byte segments),
                   reduce_scatter_block 3 recursive halving: tuned has no
                   ring for it, and it sends what a ring does, (n-1)/n of the
                   vector per rank), ina1 (with --agents: ina over agent 0
                   alone), ina_P (ina, each size's call a persistent request
                   made once with MPI_<Coll>_init and started per call),
                   ina; with --grid also grid (ina's host algorithm for the
                   grid, no agent) and ina_denied (ina with the agent
                   denying every call, so every call takes the grid
                   algorithm); default tuned,ring,ina
  --builddir DIR   build tree with examples/ina_bench, switch_agent/ina-switchd
                   and ompi_coll_ina/.libs (default: $repo/build)
  --out DIR        results directory, default $here/results
  --timeout S      limit for each mpirun, default 900 seconds
  --agent-args A   extra ina-switchd arguments, one word each (e.g. "--spin-us 0");
                   --spin-yield is added where hosts x ppn + 1 exceed the cores
  --cleanup        only remove what an interrupted earlier run left behind
EOF
}

# tuned's pipelined bcast and reduce (system ring): segments below the tcp
# btl's eager limit (64 KiB), so a chain of 16 hosts fills in 14 x 32 KiB.
ring_seg=32768
coll=allreduce hosts=4 hosts_given=0 grid='' ppn=1 leaves=0 spines=0 agents=0 rate=500mbit burst='' queue=20ms sizes=8:67108864 iters=100 repeat=1
systems=tuned,ring,ina form=blocking builddir='' out=$here/results limit=900 cleanup_only=0 agent_args=()
while (($#)); do
    case $1 in
    --coll) coll=${2:?}; shift 2 ;;
    --hosts) hosts=${2:?} hosts_given=1; shift 2 ;;
    --grid) grid=${2:?}; shift 2 ;;
    --ppn) ppn=${2:?}; shift 2 ;;
    --leaves) leaves=${2:?}; shift 2 ;;
    --spines) spines=${2:?}; shift 2 ;;
    --agents) agents=${2:?}; shift 2 ;;
    --rate) rate=${2:?}; shift 2 ;;
    --burst) burst=${2:?}; shift 2 ;;
    --queue) queue=${2:?}; shift 2 ;;
    --sizes) sizes=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --repeat) repeat=${2:?}; shift 2 ;;
    --systems) systems=${2:?}; shift 2 ;;
    --form) form=${2:?}; shift 2 ;;
    --builddir) builddir=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --timeout) limit=${2:?}; shift 2 ;;
    --agent-args) read -r -a agent_args <<<"${2?}"; shift 2 ;;
    --cleanup) cleanup_only=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
    esac
done

case $coll in
allreduce | reduce | allgather | bcast | reduce_scatter_block) ;;
*) die "--coll wants allreduce, reduce, allgather, bcast or reduce_scatter_block, not '$coll'" ;;
esac
case $form in
blocking) form_args=() ;;
nonblocking) form_args=(-N) ;;
persistent) form_args=(-P) ;;
*) die "--form wants blocking, nonblocking or persistent, not '$form'" ;;
esac
fab_in_range "$hosts" 2 250 || die "--hosts wants 2..250"
fab_in_range "$ppn" 1 64 || die "--ppn wants 1..64"
if ! fab_in_range "$leaves" 0 "$hosts" || ((leaves == 1)); then die "--leaves wants 0 or 2..hosts"; fi
fab_in_range "$agents" 0 16 || die "--agents wants 0..16"
((leaves == 0 || agents == 0)) || die "--leaves and --agents do not combine (yet)"
if ! fab_in_range "$spines" 0 14 || ((10#$spines == 1)); then die "--spines wants 0 or 2..14"; fi
spines=$((10#$spines))
if ((spines)); then
    ((leaves >= 2)) || die "--spines needs --leaves"
    ((leaves % spines == 0)) || die "--spines wants a divisor of --leaves ($leaves)"
    # Agent addresses .(200 + leaf) and .(240 + spine) above the hosts' .1 .. .N.
    ((hosts <= 199 && leaves <= 40)) || die "--spines: at most 199 hosts and 40 leaves"
fi
# The hyper-square: GX x GY groups, a grid of cols x rows hosts.
gx=0 gy=0 cols=0 rows=0
if [[ -n $grid ]]; then
    [[ $grid =~ ^([0-9]{1,2})x([0-9]{1,2})$ ]] || die "--grid wants GXxGY, e.g. 2x2"
    gx=$((10#${BASH_REMATCH[1]})) gy=$((10#${BASH_REMATCH[2]}))
    ((gx >= 1 && gy >= 1 && 4 * gx * gy <= 248)) || die "--grid wants GX, GY >= 1 and 4 x GX x GY <= 248 hosts"
    cols=$((2 * gx)) rows=$((2 * gy))
    ((hosts_given == 0 || 10#$hosts == 4 * gx * gy)) || die "--grid $grid has $((4 * gx * gy)) hosts, not --hosts $hosts"
    hosts=$((4 * gx * gy))
    ((10#$leaves == 0 && spines == 0 && 10#$agents == 0)) || die "--grid does not combine with --leaves, --spines or --agents"
fi
fab_in_range "$iters" 1 1000000 || die "--iters wants a count >= 1"
fab_in_range "$repeat" 1 100 || die "--repeat wants 1..100"
fab_in_range "$limit" 1 86400 || die "--timeout wants seconds"
read -r min_bytes max_bytes < <(fab_sizes "$sizes") ||
    die "--sizes wants MIN:MAX in bytes, 4 <= MIN <= MAX <= 1073741824 (float elements)"
rate_bps=$(fab_rate_bps "$rate") || die "--rate wants NUMBER{kbit|mbit|gbit}, e.g. 500mbit"
((rate_bps >= 100000)) || die "--rate: at least 100kbit"
[[ -n $burst ]] || burst=$(fab_default_burst "$rate_bps")
IFS=, read -ra active <<<"$systems"
run_ina=0 run_grid=0 run_denied=0 # an agent; the component without one; the agent drained
for s in "${active[@]}"; do
    case $s in
    tuned | ring) ;;
    ina) run_ina=1 ;;
    ina1) ((agents >= 1)) || die "--systems: ina1 needs --agents"; run_ina=1 ;;
    ina_P) run_ina=1 ;;
    grid) ((cols)) || die "--systems: grid needs --grid"; run_grid=1 ;;
    ina_denied) ((cols)) || die "--systems: ina_denied needs --grid"; run_ina=1 run_denied=1 ;;
    *) die "--systems: unknown system '$s' (tuned, ring, ina1, ina_P, ina, grid, ina_denied)" ;;
    esac
done
((${#active[@]})) || die "--systems: name at least one system"

((EUID == 0)) || die "must run as root (it creates network namespaces and links): sudo $0 $*"

tools=(ip:iproute2 tc:iproute2 ss:iproute2 socat:socat gnuplot:gnuplot-nox
    mpirun:openmpi-bin flock:util-linux timeout:coreutils)
((cols)) && tools+=(sysctl:procps) # the grid's hosts forward
lacking=$(fab_missing_tools "${tools[@]}")
[[ -z $lacking ]] || die "$lacking"

fab_lock || die "another run.sh is running (lock /run/lock/$FAB_PREFIX.lock)"

if ((cleanup_only)); then
    fab_down
    echo "run.sh: removed leftovers (namespaces $FAB_PREFIX-*, relays, agent)"
    exit 0
fi

if [[ -z $builddir ]]; then
    builddir=$(fab_builddir "$repo") ||
        die "no build tree found ($repo/build); build ina (scripts/setup.sh) or pass --builddir"
fi
bench=$builddir/examples/ina_bench
agent=$builddir/switch_agent/ina-switchd
switchctl=$builddir/switch_agent/ina-switchctl
compdir=$builddir/ompi_coll_ina/.libs
[[ -x $bench ]] || die "$bench not found: build ina or pass --builddir"
"$bench" --help 2>/dev/null | grep -q "[[| ]${coll}[]|]" ||
    die "$bench has no -b $coll: build examples/ina_bench of this tree"
if ((run_ina)); then
    [[ -x $agent ]] || die "$agent not found (or leave ina out of --systems)"
fi
if ((run_denied)); then
    [[ -x $switchctl ]] || die "$switchctl not found (or leave ina_denied out of --systems)"
fi
if ((run_ina || run_grid)); then
    [[ -e $compdir/mca_coll_ina.so ]] || die "$compdir/mca_coll_ina.so not found (or leave ina out of --systems)"
    export_component "$builddir" # for the ina runs (the others say coll ^ina)
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
ranks=$((hosts * ppn))
# allgather, reduce_scatter_block: every rank holds ranks blocks of the
# size (and the component a copy): keep all ranks within half the memory.
if [[ $coll == allgather || $coll == reduce_scatter_block ]]; then
    need_mb=$((2 * ranks * ranks * max_bytes >> 20))
    avail_mb=$(awk '$1 == "MemAvailable:" { print int($2 / 1024) }' /proc/meminfo)
    ((need_mb <= avail_mb / 2)) ||
        die "--coll $coll: $ranks ranks x $ranks blocks of $max_bytes bytes, twice, are $need_mb MiB; $avail_mb MiB available: lower --sizes' MAX"
fi
# What the collective is: its MPI name and operation for the title, what
# the size means and busbw for the table and the plot, what the ring system
# forces tuned to, and the least bytes a host algorithm puts on the grid's
# links per call of S bytes (every byte over one link: a one-hop ring or
# chain; bytes_per_s x S) and what that is.
case $coll in
allreduce)
    coll_title="MPI_Allreduce (float sum)" size_col=bytes
    coll_note="busbw = bytes / time x 2(n-1)/n (n = $ranks ranks). tuned: Open MPI's default algorithm choice; ring: tuned's ring allreduce. A time ratio above 1 means ina is faster."
    plot_bw="bus bandwidth = bytes / time x 2(n-1)/n" plot_x="message size (bytes per rank)" plot_ina=1
    plot_ring="Open MPI tuned, ring algorithm"
    ring_args=(--mca coll_tuned_allreduce_algorithm 4)
    bytes_per_s=$((2 * (hosts - 1)))
    bytes_what="a one-hop ring (2(H-1) x S per call, H = $hosts hosts)" ;;
reduce)
    coll_title="MPI_Reduce (float sum, root 0)" size_col=bytes
    coll_note="bytes: each rank's vector; busbw = bytes / time (n = $ranks ranks). tuned: Open MPI's default algorithm choice; ring: tuned's pipelined reduce (algorithm 3: a chain in rank order, $ring_seg-byte segments). A time ratio above 1 means ina is faster."
    plot_bw="bus bandwidth = bytes / time" plot_x="message size (bytes per rank)" plot_ina=0
    plot_ring="Open MPI tuned, pipelined chain (reduce 3)"
    ring_args=(--mca coll_tuned_reduce_algorithm 3 --mca coll_tuned_reduce_algorithm_segmentsize "$ring_seg")
    bytes_per_s=$((hosts - 1))
    bytes_what="a one-hop chain ((H-1) x S per call: S out of every host but the root's over one link, H = $hosts hosts)" ;;
bcast)
    coll_title="MPI_Bcast (float, root 0)" size_col=bytes
    coll_note="bytes: the root's vector; busbw = bytes / time (n = $ranks ranks). tuned: Open MPI's default algorithm choice; ring: tuned's pipelined bcast (algorithm 3: a chain in rank order, $ring_seg-byte segments). A time ratio above 1 means ina is faster."
    plot_bw="bus bandwidth = bytes / time" plot_x="message size (bytes, at the root)" plot_ina=0
    plot_ring="Open MPI tuned, pipelined chain (bcast 3)"
    ring_args=(--mca coll_tuned_bcast_algorithm 3 --mca coll_tuned_bcast_algorithm_segmentsize "$ring_seg")
    bytes_per_s=$((hosts - 1))
    bytes_what="a one-hop chain ((H-1) x S per call: S into every host but the root's over one link, H = $hosts hosts)" ;;
allgather)
    coll_title="MPI_Allgather (float)" size_col="block bytes"
    coll_note="block bytes: each rank's block (the gathered vector is n blocks); busbw = n x bytes / time x (n-1)/n (n = $ranks ranks). tuned: Open MPI's default algorithm choice; ring: tuned's ring allgather (algorithm 4). A time ratio above 1 means ina is faster."
    plot_bw="bus bandwidth = n x bytes / time x (n-1)/n" plot_x="block size (bytes per rank; n blocks gathered)" plot_ina=0
    plot_ring="Open MPI tuned, ring algorithm (allgather 4)"
    ring_args=(--mca coll_tuned_allgather_algorithm 4)
    bytes_per_s=$(((hosts - 1) * ranks))
    bytes_what="a one-hop ring ((H-1) x N x S per call: into every host the other hosts' blocks over one link, H = $hosts hosts, N = $ranks ranks)" ;;
reduce_scatter_block)
    coll_title="MPI_Reduce_scatter_block (float sum)" size_col="block bytes"
    coll_note="block bytes: each rank's block of the result (each rank's input is n blocks); busbw = n x bytes / time x (n-1)/n (n = $ranks ranks). tuned: Open MPI's default algorithm choice; ring: tuned's recursive-halving reduce_scatter_block (algorithm 3; tuned has none called ring for it). A time ratio above 1 means ina is faster."
    plot_bw="bus bandwidth = n x bytes / time x (n-1)/n" plot_x="block size (bytes per rank; n blocks reduced)" plot_ina=0
    plot_ring="Open MPI tuned, recursive halving (reduce_scatter_block 3)"
    ring_args=(--mca coll_tuned_reduce_scatter_block_algorithm 3)
    bytes_per_s=$(((hosts - 1) * ranks))
    bytes_what="a one-hop ring ((H-1) x N x S per call: out of every host the other hosts' blocks of its vector over one link, H = $hosts hosts, N = $ranks ranks)" ;;
esac
# allreduce's files keep their names; another collective's logs are
# prefixed with it, so that runs of several collectives can share --out.
pfx=
[[ $coll == allreduce ]] || pfx=$coll-

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

# A free port for mpirun's PMIx server, relayed into every host namespace.
pmix_port=$(fab_free_ports 1) || die "no free TCP port for the PMIx relay"

fab_down # leftovers of an interrupted run
fab_up "$hosts" "$rate" "$burst" "$queue" "$leaves" "$agents" "$spines"
((cols)) && fab_grid_up "$cols" "$rows" "$rate" "$burst" "$queue"
fab_relay_up "$hosts" "$pmix_port"

allow_root
export PMIX_MCA_ptl_tcp_ipv4_port=$pmix_port INAFAB_PPN=$ppn INAFAB_PREFIX=$FAB_PREFIX
# Every byte between ranks crosses the emulated links, on fab0; with a
# grid, on the grid addresses (grid0), routed over the grid links, while
# the component's connection to the agent stays on fab0.
if ((cols)); then fab_mpi_args "$FAB_GRID_IF" "$FAB_HOST_IF"; else fab_mpi_args "$FAB_HOST_IF"; fi

# mpi NP LOGFILE MPIRUN-ARGS... -- BENCH-ARGS...: run ina_bench in the fabric.
mpi() {
    local np=$1 log=$2 part=$2.part rc=0
    shift 2
    local -a margs=()
    while (($#)) && [[ $1 != -- ]]; do margs+=("$1"); shift; done
    shift
    fab_mpirun_start "$limit" "$part" -np "$np" "${FAB_MPI_ARGS[@]}" "${margs[@]}" \
        "$here/rank.sh" "$bench" "$@"
    fab_mpirun_finish "$FAB_MPIRUN_PID" "$part" || rc=$?
    cat "$part" >>"$log"
    rm -f "$part"
    ((rc == 0)) || die "mpirun failed or results were not verified (exit $rc); full output in $log"
}

# Measure one link: a 2-host broadcast is one flow host0 -> switch -> host1
# (with a grid, host0 -> host1 over the grid link between them);
# the receiver's time (max over ranks) is when the last byte arrived.
shape="$hosts hosts x $ppn ranks"
if ((cols)); then
    shape+=" on a hyper-square of ${gx}x$gy groups"
elif ((spines >= 2)); then
    shape+=", $leaves leaves, $spines spines, 1 core"
elif ((leaves >= 2)); then
    shape+=" on $leaves leaf switches under a spine"
fi
((agents >= 1)) && shape+=", $agents agent(s) behind links of their own"
echo "run.sh: $shape, links $rate (burst $burst, queue $queue), build $builddir"
if ((cols)); then
    # How far apart the hosts of a rank-order ring are on the grid.
    fab_grid_hops "$cols" "$rows" | awk -v n="$hosts" -v c="$cols" -v r="$rows" -v net="$FAB_GRID_NET" -v ifn="$FAB_GRID_IF" '
        $2 == ($1 + 1) % n { s += $4; if ($4 > mx) mx = $4; if (mn == "" || $4 < mn) mn = $4 }
        END { printf "run.sh: grid of %d x %d hosts (h<i> at column i mod %d, row i div %d; address %s.ROW.(COLUMN+1) on %s);", c, r, c, c, net, ifn
              printf " a rank-order ring of the hosts crosses %d links per round, %d..%d per step, %.2f on average\n", s, mn, mx, s / n }'
fi
link_log=$out/${pfx}link.log
: >"$link_log"
# About half a second of data per broadcast, 1..32 MiB.
link_bytes=$((rate_bps / 16))
((link_bytes >= 1 << 20)) || link_bytes=$((1 << 20))
((link_bytes <= 1 << 25)) || link_bytes=$((1 << 25))
INAFAB_PPN=1 mpi 2 "$link_log" --mca coll ^ina -- -b bcast -m "$link_bytes" -i 3 -w 1 -c
link_mbit=$(awk '$1 ~ /^[0-9]+$/ && NF == 6 { printf "%.0f", $1 * 8 / $4 }' "$link_log")
echo "run.sh: measured link rate ${link_mbit} Mbit/s (configured $rate)"

# Size bands, so that big sizes run few iterations: up to 64 KiB, to 1 MiB, above.
bands=() b_lo='' b_hi='' b_cls=''
for ((s = min_bytes; s <= max_bytes; s *= 2)); do
    if ((s <= 65536)); then cls=0; elif ((s <= 1048576)); then cls=1; else cls=2; fi
    if [[ $cls != "$b_cls" ]]; then
        [[ -n $b_lo ]] && bands+=("$b_cls $b_lo $b_hi")
        b_cls=$cls b_lo=$s
    fi
    b_hi=$s
done
bands+=("$b_cls $b_lo $b_hi")
band_iters=("$iters" $((iters / 10 > 3 ? iters / 10 : 3)) $((iters / 25 > 3 ? iters / 25 : 3)))
band_warmup=($((iters / 10 > 2 ? iters / 10 : 2)) 2 1)

# MPI arguments of each system. tuned: Open MPI's own collectives as they
# come (tuned picks the algorithm per size). ring: tuned forced to its ring
# allreduce (algorithm 4), which moves the fewest bytes per link of the host
# algorithms and is what a link-bound fabric favours (or, with --coll, the
# algorithm of that collective that does: ring_args). ina: ina alone (other
# collectives from basic/libnbc), offload required so that a refused offload
# fails instead of silently measuring the fallback; verbose 1 prints the
# offload counters at the end.
sys_args() {
    bench_args=()
    case $1 in
    tuned) args=(--mca coll ^ina) ;;
    ring) args=(--mca coll ^ina --mca coll_tuned_use_dynamic_rules 1 "${ring_args[@]}") ;;
    # The emulated hosts are network namespaces of one machine, which Open
    # MPI's runtime reports as one node: coll_ina_test_node_size tells ina the
    # emulated layout (ranks in blocks of ppn per host, as rank.sh places
    # them), or its node stage would serve the whole job in shared memory
    # and no byte would cross the emulated links.
    ina | ina1 | ina_P) args=(--mca coll ina --mca coll_ina_test_node_size "$ppn" --mca coll_ina_required 1 --mca coll_ina_verbose 1)
        [[ $1 == ina_P ]] && bench_args=(-P)
        if [[ $1 == ina1 ]]; then
            args+=(--mca coll_ina_agent "$(fab_stripe_agent_addr 0):$FAB_AGENT_PORT")
        else
            args+=("${ina_agent_args[@]}")
        fi ;;
    # The grid's systems: the component reads the grid from its topology
    # file and runs the calls no agent takes with its host algorithm for the
    # grid (coll_ina_host grid). ina_denied: the agent of the file, drained
    # (it denies every call: each one asks it, then runs on the host;
    # coll_ina_required still fails an agent that cannot be reached). grid:
    # a file with the grid and no agent, so no call asks one.
    ina_denied) args=(--mca coll ina --mca coll_ina_test_node_size "$ppn" --mca coll_ina_required 1
        --mca coll_ina_verbose 1 --mca coll_ina_host grid "${ina_agent_args[@]}") ;;
    grid) args=(--mca coll ina --mca coll_ina_test_node_size "$ppn" --mca coll_ina_verbose 1
        --mca coll_ina_host grid --mca coll_ina_topology "$out/topology-grid"
        --mca coll_ina_test_hosts "$rank_hosts_list") ;;
    esac
    bench_args+=("${form_args[@]}")
}

# Which agent the ranks talk to: the one agent, or with leaves a topology
# file naming the tree, and each rank's emulated host name (h<i>, which the
# runtime cannot tell: every namespace has this machine's name). The tree's
# agents: leaf<l> under spine (or with spines, under spine<s>, those under
# core).
leaf_parent() {
    if ((spines >= 2)); then echo "spine$(fab_spine_of "$1" "$leaves" "$spines")"; else echo spine; fi
}
rank_hosts=()
for ((r = 0; r < ranks; r++)); do rank_hosts+=("h$((r / ppn))"); done
rank_hosts_list=$(IFS=,; echo "${rank_hosts[*]}")
if ((cols)); then
    # The grid, and for ina the switch's agent serving every host; grid's
    # file has the grid alone (no agent).
    topology=$out/topology
    {
        echo "# bench/fabric/run.sh --grid $grid"
        echo "agent switch $FAB_AGENT_ADDR:$FAB_AGENT_PORT"
        hl=()
        for ((i = 0; i < hosts; i++)); do hl+=("h$i"); done
        echo "hosts switch $(IFS=,; echo "${hl[*]}")"
        fab_grid_squares "$gx" "$gy"
    } >"$topology"
    {
        echo "# bench/fabric/run.sh --grid $grid, no agent"
        fab_grid_squares "$gx" "$gy"
    } >"$out/topology-grid"
    ina_agent_args=(--mca coll_ina_topology "$topology" --mca coll_ina_test_hosts "$rank_hosts_list")
elif ((leaves >= 2)); then
    topology=$out/topology
    {
        if ((spines >= 2)); then
            echo "# bench/fabric/run.sh --leaves $leaves --spines $spines"
            echo "agent core $FAB_AGENT_ADDR:$FAB_AGENT_PORT"
            for ((sp = 0; sp < spines; sp++)); do
                echo "agent spine$sp $(fab_spine_agent_addr "$sp"):$FAB_AGENT_PORT parent core"
            done
        else
            echo "# bench/fabric/run.sh --leaves $leaves"
            echo "agent spine $FAB_AGENT_ADDR:$FAB_AGENT_PORT"
        fi
        for ((l = 0; l < leaves; l++)); do
            echo "agent leaf$l $(fab_leaf_agent_addr "$l"):$FAB_AGENT_PORT parent $(leaf_parent "$l")"
        done
        for ((i = 0; i < hosts; i++)); do
            echo "hosts leaf$(fab_leaf_of "$i" "$hosts" "$leaves") h$i"
        done
    } >"$topology"
    ina_agent_args=(--mca coll_ina_topology "$topology" --mca coll_ina_test_hosts "$rank_hosts_list")
elif ((agents >= 1)); then
    # Striped: every call over all the agents, block k to agent k mod A.
    list=()
    for ((k = 0; k < agents; k++)); do list+=("$(fab_stripe_agent_addr "$k"):$FAB_AGENT_PORT"); done
    ina_agent_args=(--mca coll_ina_agent "$(IFS=,; echo "${list[*]}")")
else
    ina_agent_args=(--mca coll_ina_agent "$FAB_AGENT_ADDR:$FAB_AGENT_PORT")
fi

# The collective (float sum where it reduces), results checked; the systems
# take turns band by band,
# so that a change of load on the machine hits all of them alike.
# The emulated switch shares this machine's cores with the hosts' ranks (a
# real one has its own): where they outnumber the cores, its agent yields
# between polls, as ina's embedded agent and ranks do on an oversubscribed node.
nagents=$((leaves >= 2 ? leaves + spines + 1 : agents >= 1 ? agents : 1))
if ((hosts * ppn + nagents > $(nproc))); then agent_args=(--spin-yield "${agent_args[@]}"); fi
rm -f "$out/$pfx"agent*.log
if ((run_ina)); then
    if ((leaves >= 2)); then
        # Parents first: an agent with --parent connects to it as it starts.
        if ((spines >= 2)); then
            fab_agent_up core "$(fab_ns_core)" "$FAB_AGENT_ADDR" "$agent" "$out/${pfx}agent-core.log" \
                "${agent_args[@]}"
            for ((sp = 0; sp < spines; sp++)); do
                fab_agent_up "spine$sp" "$(fab_ns_spine_n "$sp")" "$(fab_spine_agent_addr "$sp")" \
                    "$agent" "$out/${pfx}agent-spine$sp.log" --parent "$FAB_AGENT_ADDR:$FAB_AGENT_PORT" \
                    "${agent_args[@]}"
            done
        else
            fab_agent_up spine "$(fab_ns_spine)" "$FAB_AGENT_ADDR" "$agent" "$out/${pfx}agent-spine.log" \
                "${agent_args[@]}"
        fi
        for ((l = 0; l < leaves; l++)); do
            if ((spines >= 2)); then
                up=$(fab_spine_agent_addr "$(fab_spine_of "$l" "$leaves" "$spines")")
            else
                up=$FAB_AGENT_ADDR
            fi
            fab_agent_up "leaf$l" "$(fab_ns_leaf "$l")" "$(fab_leaf_agent_addr "$l")" "$agent" \
                "$out/${pfx}agent-leaf$l.log" --parent "$up:$FAB_AGENT_PORT" "${agent_args[@]}"
        done
    elif ((agents >= 1)); then
        for ((k = 0; k < agents; k++)); do
            fab_agent_up "a$k" "$(fab_ns_agent "$k")" "$(fab_stripe_agent_addr "$k")" "$agent" \
                "$out/${pfx}agent-a$k.log" "${agent_args[@]}"
        done
    else
        # ina_denied drains the agent through its control socket.
        control=()
        ((run_denied)) && control=(--control "$FAB_STATE/agent-switch.sock")
        fab_agent_up switch "$(fab_ns_switch)" "$FAB_AGENT_ADDR" "$agent" "$out/${pfx}agent.log" \
            "${control[@]}" "${agent_args[@]}"
    fi
fi
# agent_drain drain|resume: with ina_denied, the agent denies every new call
# (drain) during its sweeps and serves again (resume) during the others'.
agent_drain() {
    ((run_denied)) || return 0
    "$switchctl" --socket "$FAB_STATE/agent-switch.sock" "$1" >>"$out/${pfx}agent.log" 2>&1 ||
        die "ina-switchctl $1 failed (see $out/${pfx}agent.log)"
}
for sys in tuned ring ina1 ina_P ina grid ina_denied; do rm -f "$out/$pfx$sys.log"; done
declare -A drops=() # "SYSTEM NS/DEV" -> packets dropped
declare -A grid_bytes=() call_bytes=() # with a grid, per system: bytes its links carried, bytes of the calls
for ((rep = 1; rep <= repeat; rep++)); do
    for band in "${bands[@]}"; do
        read -r cls lo hi <<<"$band"
        for sys in "${active[@]}"; do
            echo "run.sh: [$rep/$repeat] $sys $coll $lo..$hi bytes, ${band_iters[cls]} iterations"
            sys_args "$sys"
            if [[ $sys == ina_denied ]]; then agent_drain drain; else agent_drain resume; fi
            before=$(fab_port_drops)
            ((cols)) && gb=$(fab_grid_bytes)
            mpi "$ranks" "$out/$pfx$sys.log" "${args[@]}" -- "${bench_args[@]}" -b "$coll" -d float -o sum -c \
                -m "$lo:$hi" -i "${band_iters[cls]}" -w "${band_warmup[cls]}"
            if ((cols)); then
                grid_bytes[$sys]=$((${grid_bytes[$sys]:-0} + $(fab_grid_bytes) - gb))
                for ((sz = lo; sz <= hi; sz *= 2)); do
                    call_bytes[$sys]=$((${call_bytes[$sys]:-0} + sz * (band_iters[cls] + band_warmup[cls])))
                done
            fi
            # Packets the ports dropped during this sweep, per system and port.
            while read -r ns dev d; do
                key="$sys ${ns#"$FAB_PREFIX"-}/$dev"
                drops[$key]=$((${drops[$key]:-0} + d - $(awk -v n="$ns" -v v="$dev" '$1 == n && $2 == v { d = $3 } END { print d + 0 }' <<<"$before")))
            done < <(fab_port_drops)
        done
    done
done
# Where the rate-limited ports overflowed (tbf drops: TCP then resends and
# slows down), per system: a link that drops is one a flow overran.
for sys in "${active[@]}"; do
    line=
    while read -r key; do
        [[ ${key%% *} == "$sys" ]] && ((drops[$key] > 0)) && line+=" ${key#* }=${drops[$key]}"
    done < <(printf '%s\n' "${!drops[@]}" | sort)
    echo "run.sh: $sys: packets dropped at rate-limited ports:${line:- none}"
done
# With a grid: what its links carried per system (every byte once per link
# it crossed), against the least a host algorithm sends, every step over one
# link (allreduce: a ring, 2(H-1) x S per call over H hosts; the others:
# bytes_what above): a rank-order ring or chain shows its steps' mean
# length, ina's agent traffic does not cross the grid.
if ((cols)); then
    for sys in "${active[@]}"; do
        awk -v s="$sys" -v b="${grid_bytes[$sys]}" -v c="${call_bytes[$sys]}" -v k="$bytes_per_s" \
            -v what="$bytes_what" 'BEGIN {
            r = c > 0 ? b / (k * c) : 0
            printf "run.sh: %s: grid links carried %.1f MB, %.2f x %s\n", s, b / 1e6, r, what }'
    done
fi
# The component's counters (coll_ina_verbose 1), summed over its reports.
# Each report reads "offloaded N (per collective...), fallback M (...)";
# a call ina's grid algorithm ran counts as a fallback there. Where
# ina_bench reports the grid's calls ("# coll_ina grid of N nodes: K of this
# size's C calls ran on its rings"), their sums are added.
for sys in ina1 ina_P ina grid ina_denied; do
    [[ -r $out/$pfx$sys.log ]] || continue
    off=$({ grep -o 'offloaded [0-9]*' "$out/$pfx$sys.log" || true; } | awk '{ s += $2 } END { print s + 0 }')
    fb=$({ grep -o 'fallback [0-9]*' "$out/$pfx$sys.log" || true; } | awk '{ s += $2 } END { print s + 0 }')
    on_grid=$(awk '/^# coll_ina grid of / { k += $7; c += $11; n++ }
        END { if (n) printf ", %d of the %d timed and warm-up calls ran on the grid'"'"'s rings", k, c }' "$out/$pfx$sys.log")
    echo "run.sh: $sys counters: $off calls offloaded, $fb fell back$on_grid"
done
if ((run_ina)); then
    fab_agent_down
    # What each host's link carried up to the agent (BLOCK payload bytes,
    # from the agent's counters at exit): S per call per host with the node
    # stage, ppn x S without it. With leaves, what each leaf's uplink carried:
    # one partial per block up (partials_up, block_bytes_up) and one RESULT
    # per block down (parent_results), and the spine's blocks_in = their sum.
    # With spines, each spine's uplink likewise, one level up, and the core's
    # blocks_in = the spines' partials.
    # With striped agents, each agent's share (agent a0's includes ina1's).
    for log in "$out/$pfx"agent*.log; do
        name=$(basename "$log" .log)
        grep -o 'block bytes in: .*' "$log" | sed "s/^/run.sh: $name: /" || true
        grep -o ' blocks_in=[0-9]*' "$log" | sed "s/^ /run.sh: $name: /" || true
        ((leaves >= 2)) || continue
        grep -o 'tree: .*' "$log" | sed "s/^/run.sh: $name: /" || true
        grep -o 'block_bytes_up=[0-9]* .*result_bytes_down=[0-9]*' "$log" |
            sed "s/^/run.sh: $name: uplink /" || true
    done
fi

# Results: CSV, Markdown table (printed too), PNG plot. With --repeat, the
# run with the median time per system and size (the lower median for an even
# count); every run stays in COLL-runs.csv (allreduce-runs.csv ...).
csv=$out/$coll.csv md=$out/$coll.md png=$out/$coll.png runs=$out/$coll-runs.csv
{
    echo "system,bytes,avg_usec,busbw_MBps"
    for sys in "${active[@]}"; do
        awk -v s="$sys" '$1 ~ /^[0-9]+$/ && NF == 6 { printf "%s,%s,%s,%s\n", s, $1, $3, $6 }' "$out/$pfx$sys.log"
    done
} >"$runs"
{
    echo "system,bytes,avg_usec,busbw_MBps"
    for sys in "${active[@]}"; do
        grep "^$sys," "$runs" | sort -t, -k2,2n -k3,3g |
            awk -F, '$2 != b { if (n) print r[int((n + 1) / 2)]; b = $2; n = 0 }
                { r[++n] = $0 } END { if (n) print r[int((n + 1) / 2)] }'
    done
} >"$csv"

title="$coll_title, $shape, links $rate per direction (measured ${link_mbit} Mbit/s)"
# Columns: time and busbw per system, then each host system's time over ina's.
awk -F, -v title="$title" -v systems="${active[*]}" -v size_col="$size_col" -v note="$coll_note" '
    NR > 1 { t[$1, $2] = $3; b[$1, $2] = $4; if (!($2 in seen)) { seen[$2] = 1; size[k++] = $2 } }
    function f(v) { return v == "" ? "-" : v }
    END {
        ns = split(systems, sys, " "); has_ina = systems ~ /(^| )ina( |$)/
        printf "### %s\n\n| %s |", title, size_col
        for (j = 1; j <= ns; j++) printf " %s avg us |", sys[j]
        for (j = 1; j <= ns; j++) printf " %s busbw MB/s |", sys[j]
        for (j = 1; j <= ns; j++) if (has_ina && sys[j] != "ina") printf " %s/ina time |", sys[j]
        printf "\n| ---: |"
        for (j = 1; j <= ns * 2; j++) printf " ---: |"
        for (j = 1; j <= ns; j++) if (has_ina && sys[j] != "ina") printf " ---: |"
        printf "\n"
        for (i = 0; i < k; i++) {
            s = size[i]
            printf "| %s |", s
            for (j = 1; j <= ns; j++) printf " %s |", f(t[sys[j], s])
            for (j = 1; j <= ns; j++) printf " %s |", f(b[sys[j], s])
            for (j = 1; j <= ns; j++) {
                if (!has_ina || sys[j] == "ina") continue
                r = (t[sys[j], s] != "" && t["ina", s] > 0) ? sprintf("%.2f", t[sys[j], s] / t["ina", s]) : "-"
                printf " %s |", r
            }
            printf "\n"
        }
        printf "\n%s\n", note
    }' "$csv" >"$md"

gnuplot -e "csv='$csv'; png='$png'; systems='${active[*]}'; link_MBps=$link_mbit/8.0; nranks=$ranks; ppn=$ppn; plot_title='$title'; bw_title='$plot_bw'; x_title='$plot_x'; ina_bound=$plot_ina; ring_title='$plot_ring'" \
    "$here/plot.gp" || die "gnuplot failed"

echo
cat "$md"
echo
echo "run.sh: wrote $csv, $md, $png (logs: $out/*.log)"

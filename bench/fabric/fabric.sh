# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Emulated fabric for bench/fabric/run.sh: sourced, not run.
#
# N "hosts" are network namespaces ${FAB_PREFIX}-h0 .. -h{N-1}; a switch
# namespace ${FAB_PREFIX}-sw holds a Linux bridge. Each host has one veth
# (fab0 on the host side, hI on the switch side, a bridge port) limited by a
# token bucket (tbf) on the egress of both ends, so host->switch and
# switch->host each run at the configured rate. The aggregation agent lives
# in the switch namespace behind its own, unlimited veth (ag0), like an agent
# running on the switch: its aggregate bandwidth is the sum of the host links.
#
# With leaves (fab_up's LEAVES >= 2): the hosts are split in blocks over L
# leaf switches ${FAB_PREFIX}-sw0 .. -sw{L-1}, each a bridge with its own
# agent (a leaf of the agent tree); every leaf's bridge has one uplink veth
# to the spine switch ${FAB_PREFIX}-sp, rate-limited like a host link both
# ways, and the spine holds the root agent. Everything stays one L2 subnet,
# so host-to-host traffic between leaves crosses the spine links too.
#
# With spines as well (fab_up's SPINES >= 2, LEAVES a multiple of it): one
# level more. The leaves are split in blocks of LEAVES/SPINES over S spine
# switches ${FAB_PREFIX}-sp0 .. -sp{S-1}, each a bridge with its own agent
# (a child of the core's, a parent of its leaves'); every spine's bridge has
# one uplink veth to the core switch ${FAB_PREFIX}-core, rate-limited like a
# host link both ways, and the core holds the root agent. Still one L2
# subnet: traffic between spines crosses the leaf and the spine uplinks.
#
# With striped agents (fab_up's AGENTS >= 1): one switch as above, but its
# agents are A separate "switches" or planes: agent k lives in namespace
# ${FAB_PREFIX}-ag<k> behind its own veth to the bridge, rate-limited like a
# host link both ways, so one agent's link carries at most what one host's
# does and A agents together carry A times that.
#
# With a hyper-square (fab_grid_up, after fab_up): the hosts' own links, a
# grid of groups of four nodes A, B, C, D linked A-B, A-C, D-B, D-C, and
# neighbouring groups linked node to node of the same letter. As a grid of
# COLS x ROWS nodes (both even): host i sits at column i mod COLS, row i div
# COLS; in every row (column) position x is linked to x + 2 and, x even, to
# x + 1, so each row and each column is a ring of one-hop links (out along
# the odd positions, back along the even ones). Each link is a veth pair,
# g<j> in host i's namespace <-> g<i> in host j's, limited like a host link
# both ways. Every host has a grid address (a /32 on grid0, one end of a
# veth pair whose other end, grid0p, stays unused: an interface of its
# own that MPI can be told to use, as a dummy would be), forwards for its
# neighbours and has a /32 route to every other host's grid address via the
# first hop of a shortest path. The switch stays as in the flat layout, for
# the hosts' traffic to the agent.
#
# Everything is named with FAB_PREFIX, so fab_down can remove what a crashed
# earlier run left behind without touching anything else on the machine.

FAB_PREFIX=${FAB_PREFIX:-inafab}
FAB_STATE=${FAB_STATE:-/run/$FAB_PREFIX}
# Addresses exist only inside our namespaces: hosts .1 .. .N, the agent (or
# the root's: the spine's, or with spines the core's) .254, leaf l's agent
# .(200 + l), spine s's agent (with spines) .(240 + s), striped agent k
# .(254 - k). With spines, run.sh keeps them apart: N <= 199, L <= 40, S <= 14.
FAB_SUBNET=10.77.0
FAB_AGENT_ADDR=$FAB_SUBNET.254
FAB_AGENT_PORT=17300
FAB_HOST_IF=fab0
# The hyper-square's addresses: host i at 10.78.ROW.(COLUMN + 1) on grid0.
FAB_GRID_NET=10.78
FAB_GRID_IF=grid0

fab_ns_host() { printf '%s-h%d' "$FAB_PREFIX" "$1"; }
fab_ns_switch() { printf '%s-sw' "$FAB_PREFIX"; }
fab_ns_leaf() { printf '%s-sw%d' "$FAB_PREFIX" "$1"; }
fab_ns_spine() { printf '%s-sp' "$FAB_PREFIX"; }
# With spines: spine s and the core above them.
fab_ns_spine_n() { printf '%s-sp%d' "$FAB_PREFIX" "$1"; }
fab_ns_core() { printf '%s-core' "$FAB_PREFIX"; }
fab_host_addr() { printf '%s.%d' "$FAB_SUBNET" $(($1 + 1)); }
fab_leaf_agent_addr() { printf '%s.%d' "$FAB_SUBNET" $((200 + $1)); }
fab_spine_agent_addr() { printf '%s.%d' "$FAB_SUBNET" $((240 + $1)); }
fab_ns_agent() { printf '%s-ag%d' "$FAB_PREFIX" "$1"; }
fab_stripe_agent_addr() { printf '%s.%d' "$FAB_SUBNET" $((254 - $1)); }
# fab_leaf_of HOST HOSTS LEAVES: the leaf switch of host HOST (blocks).
fab_leaf_of() { echo $(($1 * $3 / $2)); }
# fab_spine_of LEAF LEAVES SPINES: the spine switch of leaf LEAF (blocks).
fab_spine_of() { echo $(($1 * $3 / $2)); }

# fab_grid_addr HOST COLS: the grid address of host HOST.
fab_grid_addr() { printf '%s.%d.%d' "$FAB_GRID_NET" $(($1 / $2)) $(($1 % $2 + 1)); }

fab_log() { printf 'fabric: %s\n' "$*" >&2; }

# Helpers for the scripts that drive the fabric (run.sh, partitions.sh).

# fab_in_range VALUE MIN MAX: VALUE is a decimal integer in [MIN, MAX].
fab_in_range() { [[ $1 =~ ^[0-9]{1,9}$ ]] && ((10#$1 >= $2 && 10#$1 <= $3)); }

# fab_rate_bps RATE: a link rate NUMBER{kbit|mbit|gbit} (tc's units) in
# bits per second; fails on anything else.
fab_rate_bps() {
    [[ $1 =~ ^([0-9]{1,6})(kbit|mbit|gbit)$ ]] || return 1
    case ${BASH_REMATCH[2]} in
    kbit) echo $((10#${BASH_REMATCH[1]} * 1000)) ;;
    mbit) echo $((10#${BASH_REMATCH[1]} * 1000000)) ;;
    gbit) echo $((10#${BASH_REMATCH[1]} * 1000000000)) ;;
    esac
}

# fab_default_burst BPS: the links' token bucket unless told otherwise, 1 ms
# at line rate: small enough that a message waits for tokens like on a real
# link, big enough for the kernel's timers to keep the rate (2 frames at least).
fab_default_burst() {
    local b=$(($1 / 8 / 1000))
    ((b >= 3028)) || b=3028
    echo "$b"
}

# fab_sizes MIN:MAX: "MIN MAX", the byte sizes of a sweep (float elements,
# 4 .. 1 GiB); fails on anything else.
fab_sizes() {
    [[ $1 =~ ^([0-9]{1,10}):([0-9]{1,10})$ ]] || return 1
    local lo=$((10#${BASH_REMATCH[1]})) hi=$((10#${BASH_REMATCH[2]}))
    ((lo >= 4 && hi >= lo && hi <= 1 << 30)) || return 1
    echo "$lo $hi"
}

# fab_missing_tools COMMAND:PACKAGE...: nothing when every COMMAND is
# installed, else "missing C...: apt-get install P..." (each package once).
fab_missing_tools() {
    local t
    local -a missing=() packages=()
    for t in "$@"; do
        command -v "${t%%:*}" >/dev/null && continue
        missing+=("${t%%:*}")
        [[ " ${packages[*]} " == *" ${t#*:} "* ]] || packages+=("${t#*:}")
    done
    ((${#missing[@]} == 0)) || echo "missing ${missing[*]}: apt-get install ${packages[*]}"
}

# fab_builddir REPO: the build tree with examples/ina_bench, REPO/build or
# REPO/../build (scripts/setup.sh makes the first); fails if neither has it.
fab_builddir() {
    local d
    for d in "$1/build" "$1/../build"; do
        [[ -x $d/examples/ina_bench ]] && { (cd "$d" && pwd); return 0; }
    done
    return 1
}

# fab_free_ports N: N free TCP ports of the root namespace, one a line, for
# mpirun's PMIx servers (one each: fab_relay_up); fails if there are fewer.
fab_free_ports() {
    local n=$1 p k=0
    for ((p = 41000 + RANDOM % 2000; p < 65000 && k < n; p += 7)); do
        ss -Hltn "sport = :$p" | grep -q . && continue
        echo "$p"
        k=$((k + 1))
    done
    ((k == n))
}

# fab_mpi_args RANK_IF [AGENT_IF]: FAB_MPI_ARGS, the mpirun options every run
# in the fabric takes. Every byte between ranks crosses the emulated links:
# TCP only (no shared memory: the namespaces share one kernel and /dev/shm)
# on RANK_IF ($FAB_HOST_IF, or with a grid $FAB_GRID_IF, routed over the grid
# links); the component's connection to the agent over TCP, with AGENT_IF on
# that interface alone.
fab_mpi_args() {
    # shellcheck disable=SC2054 # "tcp,self" is one MCA value
    FAB_MPI_ARGS=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1
        --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include "$1"
        -x UCX_TLS=tcp)
    [[ -z ${2:-} ]] || FAB_MPI_ARGS+=(-x "UCX_NET_DEVICES=$2")
}

# fab_mpirun_start LIMIT OUTPUT [VAR=VALUE...] MPIRUN-ARG...: mpirun in the
# background, in the environment given (e.g. one job's PMIx port and
# hosts), killed after LIMIT seconds, stdout and stderr to OUTPUT; its pid
# (timeout's) in FAB_MPIRUN_PID and among FAB_MPIRUN_PIDS until
# fab_mpirun_finish. In the background so that a signal reaches the
# caller's trap at once, and so that several jobs can run side by side.
FAB_MPIRUN_PIDS=()
fab_mpirun_start() {
    local limit=$1 output=$2
    local -a envs=()
    shift 2
    while (($#)) && [[ $1 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do envs+=("$1"); shift; done
    timeout --kill-after=10 "$limit" env "${envs[@]}" mpirun "$@" >"$output" 2>&1 9>&- &
    FAB_MPIRUN_PID=$!
    FAB_MPIRUN_PIDS+=("$FAB_MPIRUN_PID")
}

# fab_mpirun_finish PID OUTPUT: wait for the mpirun fab_mpirun_start started
# as PID; fails (its exit status, or 1, with OUTPUT's tail on stderr) unless
# it succeeded and verified its results (ina_bench -c: "# check: ok").
fab_mpirun_finish() {
    local pid=$1 output=$2 rc=0 i
    wait "$pid" || rc=$?
    for i in "${!FAB_MPIRUN_PIDS[@]}"; do
        [[ ${FAB_MPIRUN_PIDS[i]} != "$pid" ]] || unset 'FAB_MPIRUN_PIDS[i]'
    done
    grep -q '^# check: ok' "$output" || ((rc)) || rc=1
    ((rc == 0)) || tail -n 20 "$output" >&2
    return "$rc"
}

# fab_mpirun_stop: stop every mpirun still running (an interrupted run).
fab_mpirun_stop() {
    local pid
    for pid in "${FAB_MPIRUN_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${FAB_MPIRUN_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    FAB_MPIRUN_PIDS=()
}

# One run at a time: fab_down removes every namespace named $FAB_PREFIX-*.
# The lock is fd 9; whatever we start in the background closes it (9>&-), so
# that a process left over by a killed run cannot hold the lock.
fab_lock() {
    mkdir -p /run/lock
    exec 9>"/run/lock/$FAB_PREFIX.lock"
    flock -n 9
}

# Stops a process we started (by pid), after checking that the pid still runs
# the program we expect (a pid file of a crashed run may be stale or reused).
fab_kill_pid() {
    local pid=$1 comm=$2 i
    [[ $pid =~ ^[0-9]+$ ]] || return 0
    [[ -r /proc/$pid/comm && $(<"/proc/$pid/comm") == "$comm" ]] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 20; i++)); do
        [[ -e /proc/$pid ]] || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}

# Every process inside one of our namespaces was started by us (socat relays,
# ina-switchd, ranks of an interrupted mpirun): stop them by pid.
fab_kill_ns_pids() {
    local ns=$1 pid i
    local -a pids
    mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
    ((${#pids[@]})) || return 0
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for ((i = 0; i < 20; i++)); do
        mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
        ((${#pids[@]})) || return 0
        sleep 0.1
    done
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}

# Idempotent: removes our namespaces (with their veths, bridge and qdiscs),
# the processes inside them and the root-namespace relay. Agents first, in
# fab_agent_down's order (children before parents), as after a normal run.
fab_down() {
    local ns pid child f
    fab_agent_down
    for f in "$FAB_STATE"/relay-*.pid; do
        [[ -r $f ]] || continue
        pid=$(<"$f")
        # socat forks one child per relayed connection; stop those too.
        if [[ $pid =~ ^[0-9]+$ ]]; then
            for child in $(pgrep -P "$pid" 2>/dev/null); do fab_kill_pid "$child" socat; done
        fi
        fab_kill_pid "$pid" socat
    done
    while read -r ns _; do
        [[ $ns == "$FAB_PREFIX"-* ]] || continue
        fab_kill_ns_pids "$ns"
        ip netns del "$ns" 2>/dev/null || fab_log "warning: cannot delete namespace $ns"
    done < <(ip netns list 2>/dev/null)
    rm -rf "$FAB_STATE"
}

# fab_port_drops: one line "NS DEV DROPPED" per rate-limited port of ours,
# the packets its tbf dropped so far (a port's buffer overflowed: QUEUE).
fab_port_drops() {
    local ns
    while read -r ns _; do
        [[ $ns == "$FAB_PREFIX"-* ]] || continue
        tc -n "$ns" -s qdisc show 2>/dev/null | awk -v ns="$ns" '
            $1 == "qdisc" { dev = ($2 == "tbf") ? $5 : ""; next }
            dev != "" && /dropped/ {
                for (i = 1; i < NF; i++) if ($i == "(dropped") { d = $(i + 1); sub(",", "", d); print ns, dev, d }
                dev = ""
            }'
    done < <(ip netns list 2>/dev/null)
}

# fab_tbf NS DEV RATE BURST QUEUE: limit DEV's egress in NS; QUEUE is the
# longest time a packet may wait (the port's buffer depth, as time).
fab_tbf() {
    tc -n "$1" qdisc replace dev "$2" root tbf rate "$3" burst "$4" latency "$5"
}

# fab_switch NS [AGENT_ADDR]: a switch namespace with a bridge and, with an
# address, an agent port (ag0, no tbf: the agent sees every link of its
# switch at full rate).
fab_switch() {
    local ns=$1 addr=${2:-}
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$ns" link add br0 type bridge stp_state 0
    ip -n "$ns" link set br0 up
    [[ -n $addr ]] || return 0
    ip -n "$ns" link add ag0 type veth peer name ag0-br
    ip -n "$ns" link set ag0-br master br0 up
    ip -n "$ns" addr add "$addr/24" dev ag0
    ip -n "$ns" link set ag0 up
}

# fab_uplink NS UP_NS PORT RATE BURST QUEUE: the uplink of switch NS to
# switch UP_NS, a veth between their bridges, upl (NS side) <-> PORT (UP_NS
# side), rate-limited both ways like a host link.
fab_uplink() {
    local ns=$1 up=$2 port=$3
    ip -n "$ns" link add upl type veth peer name "$port" netns "$up"
    ip -n "$ns" link set upl master br0 up
    ip -n "$up" link set "$port" master br0 up
    fab_tbf "$ns" upl "$4" "$5" "$6"
    fab_tbf "$up" "$port" "$4" "$5" "$6"
}

# fab_up HOSTS RATE BURST QUEUE [LEAVES [AGENTS [SPINES]]]: namespaces,
# bridges, rate-limited links, agent ports; LEAVES >= 2: leaf switches under
# a spine, or with SPINES >= 2 under S spines (blocks of LEAVES/SPINES) under
# a core; AGENTS >= 1: that many agents behind rate-limited links of their own.
fab_up() {
    local hosts=$1 rate=$2 burst=$3 queue=$4 leaves=${5:-0} agents=${6:-0} spines=${7:-0}
    local sw up i l s k ns
    mkdir -p "$FAB_STATE"
    if ((leaves >= 2)); then
        if ((spines >= 2)); then
            fab_switch "$(fab_ns_core)" "$FAB_AGENT_ADDR"
            for ((s = 0; s < spines; s++)); do
                # Spine s's uplink: upl (spine side) <-> s<s> (core side).
                fab_switch "$(fab_ns_spine_n "$s")" "$(fab_spine_agent_addr "$s")"
                fab_uplink "$(fab_ns_spine_n "$s")" "$(fab_ns_core)" "s$s" "$rate" "$burst" "$queue"
            done
        else
            fab_switch "$(fab_ns_spine)" "$FAB_AGENT_ADDR"
        fi
        for ((l = 0; l < leaves; l++)); do
            sw=$(fab_ns_leaf "$l")
            if ((spines >= 2)); then
                up=$(fab_ns_spine_n "$(fab_spine_of "$l" "$leaves" "$spines")")
            else
                up=$(fab_ns_spine)
            fi
            fab_switch "$sw" "$(fab_leaf_agent_addr "$l")"
            # The leaf's uplink: upl (leaf side) <-> l<l> (spine side).
            fab_uplink "$sw" "$up" "l$l" "$rate" "$burst" "$queue"
        done
    elif ((agents >= 1)); then
        fab_switch "$(fab_ns_switch)"
        for ((k = 0; k < agents; k++)); do
            ns=$(fab_ns_agent "$k")
            ip netns add "$ns"
            ip -n "$ns" link set lo up
            ip -n "$(fab_ns_switch)" link add "a$k" type veth peer name ag0 netns "$ns"
            ip -n "$(fab_ns_switch)" link set "a$k" master br0 up
            ip -n "$ns" addr add "$(fab_stripe_agent_addr "$k")/24" dev ag0
            ip -n "$ns" link set ag0 up
            fab_tbf "$ns" ag0 "$rate" "$burst" "$queue"
            fab_tbf "$(fab_ns_switch)" "a$k" "$rate" "$burst" "$queue"
        done
    else
        fab_switch "$(fab_ns_switch)" "$FAB_AGENT_ADDR"
    fi
    for ((i = 0; i < hosts; i++)); do
        if ((leaves >= 2)); then sw=$(fab_ns_leaf "$(fab_leaf_of "$i" "$hosts" "$leaves")"); else sw=$(fab_ns_switch); fi
        ns=$(fab_ns_host "$i")
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        ip -n "$sw" link add "h$i" type veth peer name "$FAB_HOST_IF" netns "$ns"
        ip -n "$sw" link set "h$i" master br0 up
        ip -n "$ns" addr add "$(fab_host_addr "$i")/24" dev "$FAB_HOST_IF"
        ip -n "$ns" link set "$FAB_HOST_IF" up
        fab_tbf "$ns" "$FAB_HOST_IF" "$rate" "$burst" "$queue"
        fab_tbf "$sw" "h$i" "$rate" "$burst" "$queue"
    done
}

# fab_wait_listen NS ADDR:PORT [SECONDS]: wait until a TCP listener is up.
fab_wait_listen() {
    local ns=$1 addr=$2 tries=$((${3:-10} * 10))
    while ((tries-- > 0)); do
        if ip netns exec "$ns" ss -Hltn "src $addr" 2>/dev/null | grep -q .; then
            return 0
        fi
        sleep 0.1
    done
    fab_log "nothing listens on $addr in $ns"
    return 1
}

# fab_relay_up HOSTS PORT [FIRST]: mpirun's PMIx server listens on
# 127.0.0.1:PORT of the root namespace only. Each host namespace (hosts
# FIRST.. FIRST+HOSTS-1, FIRST default 0) gets a listener on its own
# 127.0.0.1:PORT that forwards through a unix socket (a file, so it crosses
# namespaces) to the root namespace's port. One relay per PORT: several
# mpiruns (each its own port) can run side by side on disjoint hosts.
fab_relay_up() {
    local hosts=$1 port=$2 first=${3:-0} sock=$FAB_STATE/pmix-$2.sock i ns
    socat "UNIX-LISTEN:$sock,fork,unlink-early,mode=600" "TCP4:127.0.0.1:$port" \
        </dev/null >/dev/null 2>>"$FAB_STATE/relay.log" 9>&- &
    echo $! >"$FAB_STATE/relay-$port.pid"
    for ((i = first; i < first + hosts; i++)); do
        ns=$(fab_ns_host "$i")
        ip netns exec "$ns" socat "TCP4-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" \
            "UNIX-CONNECT:$sock" </dev/null >/dev/null 2>>"$FAB_STATE/relay.log" 9>&- &
    done
    for ((i = first; i < first + hosts; i++)); do
        fab_wait_listen "$(fab_ns_host "$i")" "127.0.0.1:$port" || return 1
    done
}

# fab_agent_up NAME NS ADDR AGENT_BINARY LOGFILE [ARG...]: start ina-switchd
# NAME in namespace NS listening on ADDR:$FAB_AGENT_PORT with the extra
# arguments and wait until it reports that it listens (--ready-fd).
fab_agent_up() {
    local name=$1 ns=$2 addr=$3 bin=$4 log=$5 tries=100
    local ready=$FAB_STATE/agent-$name.ready pidf=$FAB_STATE/agent-$name.pid
    shift 5
    rm -f "$ready"
    # Clients reach the agent over TCP only (the links are what we measure).
    ip netns exec "$ns" env UCX_TLS=tcp "$bin" \
        --listen "$addr:$FAB_AGENT_PORT" --ready-fd 3 --log-level info "$@" \
        3>"$ready" </dev/null >>"$log" 2>&1 9>&- &
    echo $! >"$pidf"
    echo "$name" >>"$FAB_STATE/agents" # the start order, for fab_agent_down
    while ((tries-- > 0)); do
        [[ -s $ready ]] && return 0
        [[ -e /proc/$(<"$pidf") ]] || break
        sleep 0.1
    done
    fab_log "ina-switchd $name did not start (see $log)"
    return 1
}

# fab_agent_stop PIDFILE: stop the agent of one pid file, if it runs.
fab_agent_stop() {
    local f=$1 pid
    [[ -r $f ]] || return 0
    pid=$(<"$f")
    fab_kill_pid "$pid" ina-switchd
    wait "$pid" 2>/dev/null || true # reap it when it is our child
    rm -f "$f"
}

# Stops every agent, the last started first. An agent with --parent connects
# to its parent when it starts, so parents start first (the root, then each
# level down) and stopping in reverse stops children before their parents:
# no agent sees its parent go first. Striped agents a0.. are independent.
# Then any agent whose start was not recorded, in name order.
fab_agent_down() {
    local f name
    local -a order=()
    if [[ -r $FAB_STATE/agents ]]; then mapfile -t order < <(tac "$FAB_STATE/agents"); fi
    for name in "${order[@]}"; do fab_agent_stop "$FAB_STATE/agent-$name.pid"; done
    for f in "$FAB_STATE"/agent-*.pid; do fab_agent_stop "$f"; done
    rm -f "$FAB_STATE/agents"
}

# fab_grid_links COLS ROWS: the hyper-square's links, one line "I J" (I < J)
# per link between hosts I and J (host i at column i mod COLS, row i div
# COLS): in a row, x to x + 2 (the same letter in the next group) and, x
# even, x to x + 1 (inside a group); in a column likewise.
fab_grid_links() {
    local cols=$1 rows=$2 i x y
    for ((i = 0; i < cols * rows; i++)); do
        x=$((i % cols)) y=$((i / cols))
        ((x % 2 == 0 && x + 1 < cols)) && echo "$i $((i + 1))"
        ((x + 2 < cols)) && echo "$i $((i + 2))"
        ((y % 2 == 0 && y + 1 < rows)) && echo "$i $((i + cols))"
        ((y + 2 < rows)) && echo "$i $((i + 2 * cols))"
    done
    return 0
}

# fab_grid_hops COLS ROWS: one line "SRC DST NEXT DIST" per ordered pair of
# hosts: NEXT, the first hop of SRC's route to DST, and DIST the links of
# the route. A row's links form a ladder: the even positions (letters A, C)
# and the odd ones (B, D) each a chain from group to group, and the two
# joined inside every group (the ends of the ladder close its outer ring).
# Routes go in dimension order, a shortest path: along the row to DST's
# column, then along that column; in a row (column), first inside the
# group to DST's side if it differs, then along that side from group to
# group. Each hop's own route to DST continues the same path.
fab_grid_hops() {
    local cols=$1 rows=$2 n=$(($1 * $2)) s d sx sy dx dy gs gd dist next
    for ((s = 0; s < n; s++)); do
        sx=$((s % cols)) sy=$((s / cols))
        for ((d = 0; d < n; d++)); do
            ((d != s)) || continue
            dx=$((d % cols)) dy=$((d / cols))
            gs=$((sx / 2)) gd=$((dx / 2))
            dist=$((gs > gd ? gs - gd : gd - gs))
            ((sx % 2 == dx % 2)) || dist=$((dist + 1))
            gs=$((sy / 2)) gd=$((dy / 2))
            dist=$((dist + (gs > gd ? gs - gd : gd - gs)))
            ((sy % 2 == dy % 2)) || dist=$((dist + 1))
            if ((sx % 2 != dx % 2)); then
                next=$((s + (sx % 2 ? -1 : 1)))
            elif ((sx != dx)); then
                next=$((s + (dx > sx ? 2 : -2)))
            elif ((sy % 2 != dy % 2)); then
                next=$((s + (sy % 2 ? -cols : cols)))
            else
                next=$((s + (dy > sy ? 2 * cols : -2 * cols)))
            fi
            echo "$s $d $next $dist"
        done
    done
}

# fab_grid_up COLS ROWS RATE BURST QUEUE: the hyper-square over the host
# namespaces fab_up made (COLS x ROWS of them): grid addresses, links,
# forwarding and routes.
fab_grid_up() {
    local cols=$1 rows=$2 rate=$3 burst=$4 queue=$5 n=$(($1 * $2)) i j ns s d next
    local -a batch=()
    for ((i = 0; i < n; i++)); do
        ns=$(fab_ns_host "$i")
        ip -n "$ns" link add "$FAB_GRID_IF" type veth peer name "${FAB_GRID_IF}p"
        ip -n "$ns" addr add "$(fab_grid_addr "$i" "$cols")/32" dev "$FAB_GRID_IF"
        ip -n "$ns" link set "${FAB_GRID_IF}p" up
        ip -n "$ns" link set "$FAB_GRID_IF" up
        # A host forwards its neighbours' traffic; a route's two directions
        # may take different shortest paths, so no reverse-path filter.
        ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
            net.ipv4.conf.default.rp_filter=0
    done
    while read -r i j; do
        ip -n "$(fab_ns_host "$i")" link add "g$j" type veth peer name "g$i" netns "$(fab_ns_host "$j")"
        for s in "$i:$j" "$j:$i"; do
            ns=$(fab_ns_host "${s%:*}")
            ip -n "$ns" link set "g${s#*:}" up
            fab_tbf "$ns" "g${s#*:}" "$rate" "$burst" "$queue"
        done
    done < <(fab_grid_links "$cols" "$rows")
    # Unnumbered links: the next hop is the neighbour's grid address, on
    # the link (onlink); it answers ARP for it on any of its interfaces.
    while read -r s d next _; do
        batch[s]+="route add $(fab_grid_addr "$d" "$cols")/32 via $(fab_grid_addr "$next" "$cols") dev g$next onlink src $(fab_grid_addr "$s" "$cols")"$'\n'
    done < <(fab_grid_hops "$cols" "$rows")
    for ((i = 0; i < n; i++)); do
        printf '%s' "${batch[i]}" | ip -n "$(fab_ns_host "$i")" -batch -
    done
}

# fab_grid_port_bytes: one line "I J BYTES" per grid port, the bytes host
# I's port to its neighbour J (g<J> in h<I>) sent so far.
fab_grid_port_bytes() {
    local ns
    while read -r ns _; do
        [[ $ns == "$FAB_PREFIX"-h* ]] || continue
        ip -n "$ns" -s -o link show 2>/dev/null | awk -v i="${ns#"$FAB_PREFIX"-h}" '
            { name = $2; sub(/:$/, "", name); sub(/@.*/, "", name) }
            name !~ /^g[0-9]+$/ { next }
            # "TX: bytes packets ... \\ BYTES PACKETS ...": the first number after TX:.
            { for (k = 1; k <= NF; k++) if ($k == "TX:") break
              for (; k <= NF; k++) if ($k ~ /^[0-9]+$/) { print i, substr(name, 2), $k; break } }'
    done < <(ip netns list 2>/dev/null)
}

# fab_grid_bytes: the bytes all grid ports of all hosts sent so far (each
# byte counted once per link it crossed).
fab_grid_bytes() {
    fab_grid_port_bytes | awk '{ s += $3 } END { printf "%.0f\n", s }'
}

# fab_grid_squares GX GY: the topology file's lines for the hyper-square of
# GX x GY groups over hosts h<i> (fab_grid_up's layout), one a group:
# "square X Y A B C D", the hosts at columns 2X, 2X + 1 of row 2Y, then of
# row 2Y + 1.
fab_grid_squares() {
    local gx=$1 gy=$2 cols=$((2 * $1)) x y a
    for ((y = 0; y < gy; y++)); do
        for ((x = 0; x < gx; x++)); do
            a=$((2 * y * cols + 2 * x))
            echo "square $x $y h$a h$((a + 1)) h$((a + cols)) h$((a + cols + 1))"
        done
    done
}

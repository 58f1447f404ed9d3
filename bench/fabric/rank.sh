#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# Per-rank launcher used by run.sh as mpirun's program: runs the rest of the
# command line inside the network namespace of this rank's emulated host.
# Ranks are placed in blocks of INAFAB_PPN per host: on the hosts
# INAFAB_HOSTS lists (comma-separated names h<i>, in rank order: a job on
# any set of hosts, e.g. one chosen by ina-switchctl place), or else on
# consecutive hosts from host INAFAB_FIRST_HOST on (default 0). Either way
# several jobs can run side by side on disjoint hosts.
set -eu
rank=${OMPI_COMM_WORLD_RANK:?rank.sh must be started by mpirun}
ppn=${INAFAB_PPN:-1}
host=h$((${INAFAB_FIRST_HOST:-0} + rank / ppn))
if [[ -n ${INAFAB_HOSTS:-} ]]; then
    IFS=, read -r -a list <<<"$INAFAB_HOSTS"
    host=${list[rank / ppn]:-}
    if [[ ! $host =~ ^h[0-9]+$ ]]; then
        echo "rank.sh: INAFAB_HOSTS=$INAFAB_HOSTS names no host h<i> for rank $rank ($ppn a host)" >&2
        exit 1
    fi
fi
exec ip netns exec "${INAFAB_PREFIX:-inafab}-$host" "$@"

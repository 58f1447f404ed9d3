#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# Per-rank launcher used by run.sh as mpirun's program: runs the rest of the
# command line inside the network namespace of this rank's emulated host
# (ranks are placed in blocks of INAFAB_PPN per host, from host
# INAFAB_FIRST_HOST on: several jobs side by side on disjoint hosts).
set -eu
rank=${OMPI_COMM_WORLD_RANK:?rank.sh must be started by mpirun}
ppn=${INAFAB_PPN:-1}
exec ip netns exec "${INAFAB_PREFIX:-inafab}-h$((${INAFAB_FIRST_HOST:-0} + rank / ppn))" "$@"

# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Helpers shared by the bench/ scripts: sourced, not run. A script finds it
# from its own location, e.g. top=$(cd "$(dirname "$0")/.." && pwd) and
# . "$top/bench/lib.sh".

# die MESSAGE...: print "SCRIPT: MESSAGE" on stderr (SCRIPT: the running
# script's file name) and exit 1.
die() { echo "${0##*/}: $*" >&2; exit 1; }

# need_build DIR FILE: die unless the build tree DIR has the executable FILE
# (a path inside it, e.g. examples/ina_bench).
need_build() {
  [ -x "$1/$2" ] || die "no build in $1: run scripts/setup.sh first"
}

# need_tool COMMAND PACKAGE: die unless COMMAND is installed (from the
# Debian package PACKAGE).
need_tool() {
  command -v "$1" >/dev/null || die "needs $1 (apt-get install $2)"
}

# allow_root: let mpirun run as root (it refuses to by default); nothing
# for any other user.
allow_root() {
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
}

# MPI runs load the coll ina component of build tree BUILD, found first
# (before an installed copy: of two components with one name Open MPI keeps
# the first it finds), through the environment rather than an mpirun --mca
# option: Open MPI 5.0's launcher would hand a --mca component path to PMIx
# too. A run that says --mca coll ^ina leaves the component out.
# export_component BUILD: for every command the script runs from now on.
export_component() {
  export OMPI_MCA_mca_base_component_path="$1/ompi_coll_ina/.libs:SYS_DEFAULT"
}
# with_component BUILD COMMAND [ARG...]: for COMMAND alone (not for one
# run with &: $! would then be a subshell's pid, not COMMAND's).
with_component() {
  OMPI_MCA_mca_base_component_path="$1/ompi_coll_ina/.libs:SYS_DEFAULT" "${@:2}"
}

# cpu_ticks PID: the CPU time process PID used so far (user + system, from
# /proc/PID/stat), in clock ticks (getconf CLK_TCK a second).
cpu_ticks() {
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

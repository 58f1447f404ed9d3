#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# Installs what ina needs from Debian 12's packages, builds it out of tree in
# build/, and installs it (as root: ina-switchd into /usr/local/bin, the
# component into Open MPI's own component dir; otherwise under $HOME, see
# README). Safe to run again.
#   --fuzz  also install clang and its libFuzzer for the fuzzers of
#           tests/fuzz, and gdb, with which an MPI scenario about to time
#           out prints its ranks' stacks (scripts/check.sh asks for it)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# rdma-core and the verbs providers: UCX takes InfiniBand/RoCE where the
# host has it (docs/RDMA.md says how to see which transport it chose).
# libinih, libsystemd, libmicrohttpd, nlohmann-json: ina-switchd's
# configuration file, readiness, metrics endpoint and control replies;
# curl and prometheus (promtool): the tests fetch and check the metrics.
pkgs=(build-essential autoconf automake libtool pkg-config
      libopenmpi-dev openmpi-bin libucx-dev ucx-utils libhwloc-dev check procps
      rdma-core ibverbs-providers librdmacm1
      libinih-dev libsystemd-dev libmicrohttpd-dev nlohmann-json3-dev curl prometheus)
case "${1:-}" in
  --fuzz) pkgs+=(clang libclang-rt-dev gdb) ;;
  "") ;;
  *) echo "usage: setup.sh [--fuzz]" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "== installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    echo "missing Debian packages: ${missing[*]}" >&2
    echo "install them as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

echo "== building ina in $top/build"
autoreconf -fi >/dev/null
mkdir -p build
cd build
if [ "$(id -u)" = 0 ]; then
  conf=(--prefix=/usr/local)
else
  conf=(--prefix="$HOME/.local" --with-ompi-component-dir="$HOME/.openmpi/components")
fi
# Reconfigure only when needed (a changed configure script or new options).
if [ ! -f config.status ] || [ ../configure -nt config.status ] ||
   ! grep -qF -- "${conf[*]}" config.log; then
  # shellcheck disable=SC2086 # extra configure options, word-split on purpose
  ../configure -q "${conf[@]}" ${INA_CONFIGURE_ARGS:-}
fi
make -j"$(nproc)" >/dev/null
make install >/dev/null
echo "== installed: $(sed -n 's/^bindir = //p' Makefile | sed "s|\${exec_prefix}|$(sed -n 's/^prefix = //p' Makefile)|")/ina-switchd," \
     "and mca_coll_ina.so in $(sed -n 's/^mcacomponentdir = //p' Makefile)"

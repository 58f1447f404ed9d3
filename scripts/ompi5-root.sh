#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# A Debian 13 system in a chroot, with Debian's Open MPI 5.0 and everything
# ina builds and tests with, to build and test ina against the 5.0 series
# beside the machine's own Open MPI 4.1. As root on Debian 12, with Debian's
# mirror reachable.
#   scripts/ompi5-root.sh make        make it (once; kept for later runs)
#   scripts/ompi5-root.sh run CMD...  run CMD there, in this tree (mounted at
#                                     /ina), as root
#   scripts/ompi5-root.sh remove      unmount and delete it
# The chroot lives in $INA_OMPI5_ROOT (default /var/cache/ina/trixie); its
# Open MPI source tree (the internal headers libopenmpi-dev leaves out,
# configure --with-ompi-source) in /usr/src/openmpi there.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
root=${INA_OMPI5_ROOT:-/var/cache/ina/trixie}
[ "$(id -u)" = 0 ] || { echo "ompi5-root.sh: run as root (mmdebstrap, chroot)" >&2; exit 2; }

# What scripts/setup.sh installs on Debian 12 (gdb: a scenario about to time
# out prints its ranks' stacks), less what only the fuzzers,
# the metrics checks and RDMA hardware need.
pkgs=build-essential,autoconf,automake,libtool,pkg-config,libopenmpi-dev,openmpi-bin,libucx-dev
pkgs+=,ucx-utils,libhwloc-dev,check,procps,libinih-dev,libsystemd-dev,libmicrohttpd-dev
pkgs+=,nlohmann-json3-dev,curl,prometheus,dpkg-dev,ca-certificates,gdb

mount_all() {
  mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
  # UCX lists /sys/class/net; Open MPI's shared memory wants /dev/shm.
  mountpoint -q "$root/sys" || mount --rbind /sys "$root/sys"
  mountpoint -q "$root/dev" || mount --rbind /dev "$root/dev"
  mkdir -p "$root/dev/shm" "$root/ina"
  mountpoint -q "$root/dev/shm" || mount -t tmpfs tmpfs "$root/dev/shm"
  mountpoint -q "$root/ina" || mount --bind "$top" "$root/ina"
}
umount_all() {
  for m in ina dev/shm dev sys proc; do
    mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m"
  done
  return 0
}

make_root() {
  if [ -f "$root/.ina-ready" ]; then
    # Made before with another package list: what is missing now.
    if [ "$(cat "$root/.ina-ready")" != "$pkgs" ]; then
      echo "== installing into $root: ${pkgs//,/ }"
      chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
        sh -c "apt-get update -q && apt-get install -y -q --no-install-recommends ${pkgs//,/ }" \
        >/dev/null || { echo "FAIL: apt-get install in $root"; exit 1; }
      echo "$pkgs" >"$root/.ina-ready"
    fi
    return 0
  fi
  command -v mmdebstrap >/dev/null ||
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends mmdebstrap; }
  rm -rf "$root"
  mkdir -p "$(dirname "$root")"
  local log
  log=$(mktemp /tmp/ina-ompi5-root.XXXXXX)
  echo "== making a Debian 13 chroot in $root (minutes; log $log)"
  # deb-src too: the Open MPI source tree of the very version installed.
  # shellcheck disable=SC2016 # the hooks' $1 is mmdebstrap's
  mmdebstrap --variant=apt --include="$pkgs" --components=main \
    --customize-hook='sed -n "s/^deb /deb-src /p" "$1/etc/apt/sources.list" > "$1/etc/apt/sources.list.d/src.list"' \
    --customize-hook='chroot "$1" apt-get update -q' \
    --customize-hook='mkdir -p "$1/usr/src/ompi" && chroot "$1" sh -c "cd /usr/src/ompi && apt-get source -q --download-only openmpi && dpkg-source -x --no-check openmpi_*.dsc tree"' \
    trixie "$root" >"$log" 2>&1 ||
    { tail -30 "$log"; echo "FAIL: mmdebstrap"; rm -rf "$root"; exit 1; }
  ln -sfn ompi/tree "$root/usr/src/openmpi"
  echo "$pkgs" >"$root/.ina-ready"
  rm -f "$log"
}

case "${1:-}" in
  make)
    make_root
    # shellcheck disable=SC2016 # dpkg-query's fields
    chroot "$root" dpkg-query -W -f='${Package} ${Version}\n' libopenmpi-dev libucx-dev libpmix-dev
    ;;
  run)
    shift
    make_root
    # Runs side by side share the mounts: the last one out unmounts. Runs
    # from another tree wait until its runs are over (the chroot has one
    # /ina: a run must never build or test another tree's sources).
    exec 9>"$root.lock"
    flock -s 9
    said=0
    while mountpoint -q "$root/ina" &&
          [ "$(stat -c %d:%i "$root/ina")" != "$(stat -c %d:%i "$top")" ]; do
      if [ $said = 0 ]; then
        echo "== $root/ina is $(findmnt -n -o SOURCE "$root/ina") in another run: waiting for it" >&2
        said=1
      fi
      flock -u 9
      if flock -xn 9; then
        # Nobody runs there any more (its last one out could not unmount).
        umount -l "$root/ina"
      else
        sleep 5
      fi
      flock -s 9
    done
    mount_all
    trap 'flock -u 9; if flock -xn 9; then umount_all; fi' EXIT
    chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      /bin/bash -c 'cd /ina && "$@"' bash "$@"
    ;;
  remove)
    umount_all
    rm -rf "$root"
    ;;
  *)
    echo "usage: ompi5-root.sh make | run CMD... | remove" >&2
    exit 2
    ;;
esac

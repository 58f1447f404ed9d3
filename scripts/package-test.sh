#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# The Debian packages, end to end (not part of make check: it downloads a
# Debian system and takes minutes). As root on Debian 12, with Debian's
# mirror reachable:
#   1. builds ina-switchd and openmpi-coll-ina from this tree
#      (dpkg-buildpackage -b -us -uc, in a copy of the tree): for Debian 12
#      here, against Open MPI 4.1; with --dist trixie, for Debian 13 against
#      Open MPI 5.0, in the chroot of scripts/ompi5-root.sh (its Open MPI
#      source tree gives the internal headers libopenmpi-dev 5.0.7 lacks:
#      configure --with-ompi-source, through INA_CONFIGURE_ARGS);
#   2. checks them with lintian (no errors allowed);
#   3. makes a fresh Debian system of that release in a chroot (mmdebstrap)
#      with Open MPI only, installs the packages there, and runs an MPI job
#      through ina (coll_ina_required: an error unless the calls were
#      offloaded; every result checked), and the installed daemon with
#      ina-switchctl;
#   4. purges the packages and checks that nothing of them is left.
# usage: scripts/package-test.sh [--dist bookworm|trixie] [--keep]
#   (--keep: leave the work dir)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
keep=0
dist=bookworm
while [ $# -gt 0 ]; do
  case $1 in
    --keep) keep=1; shift ;;
    --dist) dist=${2:-}; shift 2 ;;
    *) echo "usage: package-test.sh [--dist bookworm|trixie] [--keep]" >&2; exit 2 ;;
  esac
done
case $dist in
  bookworm) release="Debian 12" libompi=libopenmpi3 ;;
  trixie) release="Debian 13" libompi=libopenmpi40 ;;
  *) echo "package-test.sh: --dist bookworm or trixie" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "package-test.sh: run as root (apt-get, chroot)" >&2; exit 2; }

export DEBIAN_FRONTEND=noninteractive
need=(debhelper dh-autoreconf lintian mmdebstrap dpkg-dev fakeroot)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

work=$(mktemp -d /tmp/ina-package-test.XXXXXX)
root="$work/root"
o5=${INA_OMPI5_ROOT:-/var/cache/ina/trixie}
cleanup() {
  for m in dev/shm dev/pts dev proc sys; do
    mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m"
  done
  if [ "$keep" = 0 ]; then rm -rf "$work" "$o5/tmp/ina-package-test"; else echo "kept $work"; fi
}
trap cleanup EXIT

# Where the packages are built: here, or (trixie) in the Open MPI 5.0 chroot,
# whose /tmp/ina-package-test is $build there.
if [ "$dist" = bookworm ]; then
  build=$work
  in_build() { (cd "$build" && bash -c "$1"); }
  # The build dependencies, as debian/control names them.
  (cd "$top" && apt-get build-dep -y -q ./ >/dev/null)
else
  "$top/scripts/ompi5-root.sh" make >/dev/null
  build=$o5/tmp/ina-package-test
  rm -rf "$build" && mkdir -p "$build"
  in_build() { "$top/scripts/ompi5-root.sh" run bash -c "cd /tmp/ina-package-test && $1"; }
fi

echo "== 1. building the packages for $release in $build"
src="$build/ina-0.1.0"
mkdir -p "$src"
# The tree as git sees it (tracked and new files, nothing ignored or built).
(cd "$top" && git ls-files -z -co --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$src"
conf=""
if [ "$dist" = trixie ]; then
  in_build "apt-get install -y -q --no-install-recommends ${need[*]/mmdebstrap/} >/dev/null &&
            cd ina-0.1.0 && apt-get build-dep -y -q ./ >/dev/null" ||
    { echo "FAIL: build dependencies in $o5"; exit 1; }
  conf=--with-ompi-source=/usr/src/openmpi
fi
in_build "cd ina-0.1.0 && INA_CONFIGURE_ARGS=$conf DEB_BUILD_OPTIONS=parallel=$(nproc) \
          dpkg-buildpackage -b -us -uc >../build.log 2>&1" ||
  { tail -40 "$build/build.log"; echo "FAIL: dpkg-buildpackage"; exit 1; }
[ "$build" = "$work" ] || cp "$build"/*.deb "$build"/*.changes "$build"/*.buildinfo "$work/"
ls "$work"/*.deb
echo "openmpi-coll-ina depends on: $(dpkg-deb -f "$work"/openmpi-coll-ina_*.deb Depends)"

echo "== 2. lintian"
in_build "lintian --fail-on error ina_*.changes" ||
  { echo "FAIL: lintian found errors"; exit 1; }

echo "== 3. a fresh $release with Open MPI (mmdebstrap)"
mmdebstrap --variant=apt --include=openmpi-bin,$libompi,procps,systemd \
  "$dist" "$root" >"$work/mmdebstrap.log" 2>&1 ||
  { tail -20 "$work/mmdebstrap.log"; echo "FAIL: mmdebstrap"; exit 1; }
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mkdir -p "$root/dev/shm"
mountpoint -q "$root/dev/shm" || mount -t tmpfs tmpfs "$root/dev/shm"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }

# An MPI program that knows nothing of ina, built against the same Open MPI
# the chroot has (where the packages were built).
in_build "mpicc -O2 -Iina-0.1.0 -o ina_allreduce_demo ina-0.1.0/examples/ina_allreduce_demo.c" ||
  { echo "FAIL: mpicc"; exit 1; }
cp "$build/ina_allreduce_demo" "$root/usr/local/bin/ina_allreduce_demo"

# What the system holds before (apt's own state and logs aside).
snapshot() {
  in_root find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
    -o -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache -o -path /var/log \
    -o -path /var/lib/systemd -o -path /debs \) -prune -o -print | sort
}
snapshot >"$work/before"
# shellcheck disable=SC2016 # dpkg-query's fields
packages() { in_root dpkg-query -W -f='${db:Status-Status} ${Package}\n' | sed -n 's/^installed //p' | sort; }
packages >"$work/packages.before"

mkdir -p "$root/debs"
cp "$work"/ina-switchd_*.deb "$work"/openmpi-coll-ina_*.deb "$root/debs/"
in_root apt-get update -q >"$work/install.log" 2>&1 # (mmdebstrap leaves no package lists)
in_root apt-get install -y -q /debs/ina-switchd_0.1.0_amd64.deb /debs/openmpi-coll-ina_0.1.0_amd64.deb \
  >>"$work/install.log" 2>&1 || { tail -20 "$work/install.log"; echo "FAIL: install"; exit 1; }
# shellcheck disable=SC2016 # dpkg-query expands them
echo "installed: $(in_root dpkg-query -W -f='${Package} ${Version}, ' ina-switchd openmpi-coll-ina)"

echo "== 4. an MPI job through ina (the embedded agent: /usr/bin/ina-switchd)"
path=()
if [ "$dist" = trixie ]; then
  # Debian 13's mpirun (PRRTE 3.0) hands the processes PMIx's component
  # path as Open MPI's (OMPI_MCA_mca_base_component_path), which hides
  # every component installed beside Open MPI's: name Open MPI's own again,
  # as a user must (README).
  path=("OMPI_MCA_mca_base_component_path=$(in_build "ompi_info --parsable --path pkglibdir" |
    sed -n 's/^path:pkglibdir://p')")
fi
in_root "${path[@]}" mpirun --allow-run-as-root --oversubscribe -np 4 --mca coll ina --mca coll_ina_required 1 \
  --mca coll_ina_node_stage 0 --mca coll_ina_verbose 1 \
  /usr/local/bin/ina_allreduce_demo -m 8:4194304 -i 3 >"$work/mpi.out" 2>"$work/mpi.err" ||
  { cat "$work/mpi.out" "$work/mpi.err"; echo "FAIL: the MPI job"; exit 1; }
cat "$work/mpi.out"
grep -q WRONG "$work/mpi.out" && { echo "FAIL: a wrong result"; exit 1; }
grep -q " ok" "$work/mpi.out" || { echo "FAIL: no result checked"; exit 1; }
grep -h "offloaded" "$work/mpi.err" | head -1
grep -q "offloaded [1-9]" "$work/mpi.err" || { cat "$work/mpi.err"; echo "FAIL: nothing offloaded"; exit 1; }

echo "== 5. the installed daemon with its configuration file, and ina-switchctl"
mkdir -p "$root/run/ina"
in_root /bin/sh -c 'ina-switchd --listen 127.0.0.1:0 & echo $! > /run/ina/pid' 2>"$work/agent.log"
for _ in $(seq 50); do [ -S "$root/run/ina/ina-switchd.sock" ] && break; sleep 0.1; done
in_root ina-switchctl status | tee "$work/status"
grep -q "^config: */etc/ina/ina-switchd.conf" "$work/status" ||
  { echo "FAIL: the agent did not read /etc/ina/ina-switchd.conf"; exit 1; }
# shellcheck disable=SC2016 # the chroot's shell expands it
in_root /bin/sh -c 'kill $(cat /run/ina/pid)'
sleep 0.5
rm -rf "$root/run/ina"
man_ok=1
for page in ina-switchd.8 ina-switchctl.8 coll_ina.7; do
  sec=${page##*.}
  [ -f "$root/usr/share/man/man$sec/$page.gz" ] || { echo "missing man page $page"; man_ok=0; }
done
[ "$man_ok" = 1 ] || { echo "FAIL: man pages"; exit 1; }
# The unit as systemd reads it (syntax, sandboxing settings, the binary).
if ! out=$(in_root systemd-analyze verify --man=no ina-switchd.service 2>&1) || [ -n "$out" ]; then
  echo "$out"; echo "FAIL: systemd-analyze verify ina-switchd.service"; exit 1
fi
echo "systemd-analyze verify ina-switchd.service: clean"
in_root systemctl is-enabled ina-switchd.service

echo "== 6. purge: nothing may be left"
# (with what apt installed for them: rdma-core, the verbs providers, ...)
in_root apt-get purge --autoremove -y -q ina-switchd openmpi-coll-ina >"$work/purge.log" 2>&1 ||
  { tail -20 "$work/purge.log"; echo "FAIL: purge"; exit 1; }
# Packages the install brought in that autoremove keeps (Debian 13: what
# a package of the base system recommends, e.g. udev's libraries pulled
# by rdma-core) go too: what is left must be the system as it was.
mapfile -t extra < <(comm -13 "$work/packages.before" <(packages))
[ ${#extra[@]} = 0 ] || echo "purging what the install brought in and autoremove kept: ${extra[*]}"
[ ${#extra[@]} = 0 ] || in_root apt-get purge --autoremove -y -q "${extra[@]}" >>"$work/purge.log" 2>&1 ||
  { tail -20 "$work/purge.log"; echo "FAIL: purge"; exit 1; }
snapshot >"$work/after"
if ! diff -u "$work/before" "$work/after"; then
  echo "FAIL: the packages left files behind (or removed some of the system's)"
  exit 1
fi
echo "package-test: PASS (built, lintian clean, installed, MPI job offloaded and exact, purged clean)"

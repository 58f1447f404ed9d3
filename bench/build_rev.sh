#!/bin/bash
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#
# Build git revision REV of this repository beside the checkout, for the
# same-run comparisons (compare.sh, agent_cost.sh): a detached worktree in
# DIR/base, configured with prefix DIR/prefix (never installed), built in
# DIR/base/build, which is printed on the last line of stdout.
#
#   bench/build_rev.sh REV DIR
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top/bench/lib.sh"
[ $# -eq 2 ] || die "usage: $0 REV DIR"
rev=$1 dir=$2
git -C "$top" rev-parse --verify -q "$rev^{commit}" >/dev/null || die "unknown revision '$rev'"
mkdir -p "$dir"
src=$dir/base
if [ ! -d "$src" ]; then
  git -C "$top" worktree add -q --detach "$src" "$rev"
else
  git -C "$src" checkout -q --detach "$rev"
fi
echo "== building $rev in $src/build" >&2
(cd "$src" && autoreconf -fi >/dev/null 2>&1 && mkdir -p build && cd build &&
 { [ -f config.status ] || ../configure -q --prefix="$dir/prefix" >/dev/null; } &&
 make -j"$(nproc)" >/dev/null) || die "building $rev failed"
echo "$src/build"

#!/bin/sh
# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#
# ina-switchctl place end to end (no agent): jobs placed one after the
# other through the state file, its host file and Slurm list, a grid full,
# a release and the groups taken again, and the refusals with their exit
# status. The choice itself is tested in test_grid_place.
set -u
ctl=${INA_SWITCHCTL:?INA_SWITCHCTL names the ina-switchctl to test}
dir=$(mktemp -d "${TMPDIR:-/tmp}/ina-grid-place-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail() {
    echo "grid_place_cli: $*" >&2
    exit 1
}

cat >"$dir/topology" <<'END'
agent a 10.0.0.1:17300
hosts a n[01-16]
square 1 1 n13 n14 n15 n16
square 0 0 n01 n02 n03 n04
square 0 1 n09 n10 n11 n12
square 1 0 n05 n06 n07 n08
END
state=$dir/state
# place ARGS...: run it, stdout in $dir/out, stderr in $dir/err, status in $rc.
place() {
    "$ctl" place --topology "$dir/topology" --state "$state" "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
}
hosts() { grep -v '^#' "$dir/out" | tr '\n' ' '; }
slurm() { sed -n 's/^# slurm: //p' "$dir/out"; }

# A first job on a state file not there yet: two groups, the top row.
place --nodes 8 --job a
[ "$rc" = 0 ] || fail "a: exit $rc: $(cat "$dir/err")"
[ "$(hosts)" = "n01 n02 n05 n06 n03 n04 n07 n08 " ] || fail "a: hosts $(hosts)"
[ "$(slurm)" = "n[01-08]" ] || fail "a: slurm list $(slurm)"
# A second, unnamed: it gets a name, the next free group.
place --nodes 3
[ "$rc" = 0 ] || fail "job1: exit $rc: $(cat "$dir/err")"
[ "$(hosts)" = "n09 n10 n11 n12 " ] || fail "job1: hosts $(hosts)"
grep -q '^# job job1: 1x1 groups at (0, 1), 4 nodes' "$dir/out" || fail "job1: $(cat "$dir/out")"
printf '%s\n' '# ina-switchctl place: NAME GX GY W H [WEIGHT], rectangles of groups' \
    'a 0 0 2 1' 'job1 0 1 1 1' >"$dir/want"
cmp -s "$state" "$dir/want" || fail "state after two jobs: $(cat "$state")"

# No room for two groups: exit 3, the state as it was.
place --nodes 8 --job c
[ "$rc" = 3 ] || fail "c on a full grid: exit $rc"
grep -q 'no free rectangle of 2 group(s) (8 nodes) on the 2x2 groups' "$dir/err" ||
    fail "c: $(cat "$dir/err")"
cmp -s "$state" "$dir/want" || fail "state after a refusal: $(cat "$state")"
place --nodes 4 --job a
[ "$rc" = 1 ] && grep -q 'job "a" is already placed' "$dir/err" || fail "a twice: exit $rc"

# Released, its groups are free again: c takes them in the same command.
place --release a --nodes 6 --job c --weight 2
[ "$rc" = 0 ] || fail "release a, place c: exit $rc: $(cat "$dir/err")"
grep -q '^# released a: 2x1 groups at (0, 0)' "$dir/out" || fail "release: $(cat "$dir/out")"
[ "$(slurm)" = "n[01-08]" ] || fail "c: slurm list $(slurm)"
printf '%s\n' '# ina-switchctl place: NAME GX GY W H [WEIGHT], rectangles of groups' \
    'job1 0 1 1 1' 'c 0 0 2 1 2' >"$dir/want"
cmp -s "$state" "$dir/want" || fail "state after release: $(cat "$state")"
place --release job1
[ "$rc" = 0 ] || fail "release job1: exit $rc"
place --release job1
[ "$rc" = 1 ] && grep -q 'no job "job1"' "$dir/err" || fail "release twice: exit $rc"

# Wrong files and usage.
echo 'c 0 0 2 1 2 extra' >>"$state"
place --nodes 4
[ "$rc" = 1 ] && grep -q "state: line 3: want" "$dir/err" || fail "bad state: $(cat "$dir/err")"
echo 'agent a 1.2.3.4:1' >"$dir/topology"
state=$dir/other
place --nodes 4
[ "$rc" = 1 ] && grep -q 'describes no grid' "$dir/err" || fail "no grid: $(cat "$dir/err")"
"$ctl" place --state "$state" --nodes 4 2>/dev/null
[ $? = 2 ] || fail "place without --topology: not a usage error"
"$ctl" --nodes 4 status 2>/dev/null
[ $? = 2 ] || fail "--nodes with status: not a usage error"
echo "grid_place_cli: ok"

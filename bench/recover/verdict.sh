# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Sourced by bench/recover's scripts: what one run of tests/mpi/test_recover
# came to. verdict RC LOG prints hang (past the time limit), wrong (a check
# failed), failed (any other non-zero exit: an MPI error) or pass;
# recovered LOG prints how many calls the ranks recovered; delay KIND LOG
# prints "KIND AFTER OWN" from the run's `fault: ...` line (none without);
# delays FILE WHAT prints the distribution of AFTER - OWN over FILE's lines.
verdict() {
    if (($1 == 124 || $1 == 137)); then
        echo hang
    elif grep -q 'check failed' "$2"; then
        echo wrong
    elif (($1 != 0)); then
        echo failed
    else
        echo pass
    fi
}
recovered() {
    local n
    n=$(sed -n 's/^test_recover: \([0-9]*\) calls recovered.*/\1/p' "$1")
    echo "${n:-0}"
}
delay() {
    sed -n "s/^fault: .* ended \([0-9]*\) ms after the fault; the same call \([0-9]*\) ms before$/$1 \1 \2/p" "$2"
}
delays() {
    [ -s "$1" ] || return 0
    awk '{ print $2 - $3 }' "$1" | sort -n | awk -v what="$2" '
        { d[NR] = $1 }
        END { printf "%s to end of the struck call, beyond its own time (ms): %d runs, " \
                     "min %d, median %d, 90%% %d, max %d\n", what, NR, d[1], d[int((NR + 1) / 2)],
                     d[int(NR * 0.9 + 0.999)], d[NR] }'
}

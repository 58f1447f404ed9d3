# Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Sourced by bench/recover's scripts: what one run of tests/mpi/test_recover
# came to. verdict RC LOG prints hang (past the time limit), wrong (a check
# failed), failed (any other non-zero exit: an MPI error) or pass;
# recovered LOG prints how many calls the ranks recovered.
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

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// coll_ina_topology: the scenario maps world ranks [0, L) to leaf agent 0,
// [L, 2L) to leaf agent 1, ... (coll_ina_test_hosts names their hosts).
// A communicator within one leaf offloads to that leaf's agent; one that
// spans leaves runs the host algorithms on every rank (the tree of agents
// is not built yet) with the right result. The runner checks in each
// agent's counters that it served its leaf's communicator only.
//
// usage: test_topology -l L [-f]   (-f: no call may be offloaded: a bad topology)
#include "ina_mpi_test.h"

#include <unistd.h>

using namespace inatest;

namespace {

long checks = 0;

// Allreduce, bcast and allgather on `comm`, checked against values computed
// here; `offloaded` is whether ina must have offloaded all three.
void exercise(MPI_Comm comm, bool offloaded, const char *what, Counters &counters)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    const long long before = counters.offloaded(comm);
    std::vector<long> in(1000), out(1000);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<long>(i) * (r + 1);
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(in.size()), MPI_LONG, MPI_SUM, comm);
    bool ok = true;
    for (size_t i = 0; i < out.size(); ++i) {
        ok = ok && out[i] == static_cast<long>(i) * n * (n + 1) / 2;
    }
    ++checks;
    INA_CHECK(ok, "%s: allreduce result wrong", what);
    std::vector<int> b(500, r == n - 1 ? 7 : 0);
    MPI_Bcast(b.data(), static_cast<int>(b.size()), MPI_INT, n - 1, comm);
    ++checks;
    INA_CHECK(b[0] == 7 && b[499] == 7, "%s: bcast result wrong", what);
    std::vector<int> g(static_cast<size_t>(n) * 3);
    int mine[3] = {r, r * 2, r * 3};
    MPI_Allgather(mine, 3, MPI_INT, g.data(), 3, MPI_INT, comm);
    ok = true;
    for (int k = 0; k < n; ++k) ok = ok && g[3 * k] == k && g[3 * k + 2] == 3 * k;
    ++checks;
    INA_CHECK(ok, "%s: allgather result wrong", what);
    const long long got = counters.offloaded(comm) - before;
    ++checks;
    INA_CHECK(got == (offloaded ? 3 : 0), "%s: %lld calls offloaded, want %d", what, got,
              offloaded ? 3 : 0);
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int leaf_size = 0, c;
    bool none = false;
    while ((c = getopt(argc, argv, "l:f")) != -1) {
        if (c == 'l') leaf_size = std::atoi(optarg);
        if (c == 'f') none = true;
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (leaf_size <= 0) {
        if (rank == 0) std::fprintf(stderr, "usage: test_topology -l ranks_per_leaf\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    Counters counters;
    const bool one_leaf = size <= leaf_size;
    exercise(MPI_COMM_WORLD, one_leaf && !none, "MPI_COMM_WORLD", counters);
    MPI_Comm leaf;
    MPI_Comm_split(MPI_COMM_WORLD, rank / leaf_size, rank, &leaf);
    exercise(leaf, !none, "the ranks of one leaf", counters);
    MPI_Comm_free(&leaf);

    counters.close();
    int code = finish("test_topology", checks);
    MPI_Finalize();
    return code;
}

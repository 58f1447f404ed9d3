// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// coll_ina_topology: the scenario maps world ranks [0, L) to leaf agent 0,
// [L, 2L) to leaf agent 1, ... (coll_ina_test_hosts names their hosts), or
// with -i rank r to leaf r mod (size / L). A communicator within one leaf
// offloads to that leaf's agent. One that spans leaves runs the host
// algorithms on every rank unless the leaves have a parent (-t, a tree of
// agents, docs/HIERARCHY.md): then it offloads through the tree, but for
// an allgather over leaves whose ranks are not consecutive (-i), which runs
// on the host. Results are checked against values computed here, float sums
// bit-exact in the tree's order. The runner checks in each agent's counters
// what it served.
//
// usage: test_topology -l L [-i] [-t] [-f]   (-f: no call may be offloaded: a bad topology)
#include "ina_mpi_test.h"

#include <unistd.h>

using namespace inatest;

namespace {

long checks = 0;

// What a communicator's calls must do.
struct Expect {
    long long leaves;    // coll_ina_job_leaves: 0 (no job), 1, or a tree's leaves
    bool offload;        // its calls offloaded
    bool allgather;      // the allgather offloaded too
    const char *what;
};

// Allreduce (long and double sums), bcast and allgather on `comm`, checked
// against values computed here (the double sum bit-exact in ina's order when
// offloaded, ina_mpi_test.h fold_tree); each call offloaded iff `e` says so.
void exercise(MPI_Comm comm, const Expect &e, Counters &counters)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    const bool offload = e.offload;
    long long before = counters.offloaded(comm);
    auto expect_calls = [&](int want, const char *call) {
        const long long got = counters.offloaded(comm) - before;
        ++checks;
        INA_CHECK(got == want, "%s: %s: %lld calls offloaded, want %d", e.what, call, got, want);
        before += got;
    };
    std::vector<long> in(1000), out(1000);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<long>(i) * (r + 1);
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(in.size()), MPI_LONG, MPI_SUM, comm);
    bool ok = true;
    for (size_t i = 0; i < out.size(); ++i) {
        ok = ok && out[i] == static_cast<long>(i) * n * (n + 1) / 2;
    }
    ++checks;
    INA_CHECK(ok, "%s: allreduce result wrong", e.what);
    expect_calls(offload ? 1 : 0, "allreduce");

    std::vector<double> din(3000), dout(3000), dref(3000);
    fill_input(din, Op::Sum, r, 77);
    MPI_Allreduce(din.data(), dout.data(), static_cast<int>(din.size()), MPI_DOUBLE, MPI_SUM, comm);
    if (offload) {
        reference(dref, Op::Sum, comm, 77);
        size_t bad = 0;
        for (size_t i = 0; i < dout.size(); ++i) bad += !same_bits(dout[i], dref[i]);
        ++checks;
        INA_CHECK(bad == 0, "%s: double sum: %zu of %zu differ from ina's order", e.what, bad,
                  dout.size());
    }
    expect_calls(offload ? 1 : 0, "double allreduce");

    for (int root : {0, n - 1}) {
        std::vector<int> b(500, r == root ? 7 + root : 0);
        MPI_Bcast(b.data(), static_cast<int>(b.size()), MPI_INT, root, comm);
        ++checks;
        INA_CHECK(b[0] == 7 + root && b[499] == 7 + root, "%s: bcast from %d wrong", e.what, root);
        expect_calls(offload ? 1 : 0, "bcast");
    }

    std::vector<int> g(static_cast<size_t>(n) * 3);
    int mine[3] = {r, r * 2, r * 3};
    MPI_Allgather(mine, 3, MPI_INT, g.data(), 3, MPI_INT, comm);
    ok = true;
    for (int k = 0; k < n; ++k) ok = ok && g[3 * k] == k && g[3 * k + 2] == 3 * k;
    ++checks;
    INA_CHECK(ok, "%s: allgather result wrong", e.what);
    expect_calls(offload && e.allgather ? 1 : 0, "allgather");

    const long long leaves = counters.job_leaves(comm);
    ++checks;
    INA_CHECK(leaves == e.leaves, "%s: coll_ina_job_leaves %lld, want %lld", e.what, leaves,
              e.leaves);
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int leaf_size = 0, c;
    bool none = false, tree = false, interleaved = false;
    while ((c = getopt(argc, argv, "l:fti")) != -1) {
        if (c == 'l') leaf_size = std::atoi(optarg);
        if (c == 'f') none = true;
        if (c == 't') tree = true;
        if (c == 'i') interleaved = true;
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (leaf_size <= 0 || size % leaf_size != 0) {
        if (rank == 0) std::fprintf(stderr, "usage: test_topology -l ranks_per_leaf\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    Counters counters;
    const int nleaves = size / leaf_size;
    const long long world_leaves = none ? 0 : nleaves == 1 ? 1 : tree ? nleaves : 0;
    exercise(MPI_COMM_WORLD,
             {world_leaves, world_leaves > 0, !interleaved || nleaves == 1,
              "MPI_COMM_WORLD"},
             counters);
    const int my_leaf = interleaved ? rank % nleaves : rank / leaf_size;
    MPI_Comm leaf;
    MPI_Comm_split(MPI_COMM_WORLD, my_leaf, rank, &leaf);
    exercise(leaf, {none ? 0 : 1, !none, true, "the ranks of one leaf"}, counters);
    MPI_Comm_free(&leaf);
    if (nleaves > 2) {
        // Two leaves of a larger tree: its own job at the spine.
        MPI_Comm two;
        MPI_Comm_split(MPI_COMM_WORLD, my_leaf < 2 ? 0 : MPI_UNDEFINED, rank, &two);
        if (two != MPI_COMM_NULL) {
            const long long leaves = none ? 0 : tree ? 2 : 0;
            exercise(two, {leaves, leaves > 0, !interleaved, "the ranks of two leaves"},
                     counters);
            MPI_Comm_free(&two);
        }
    }

    counters.close();
    int code = finish("test_topology", checks);
    MPI_Finalize();
    return code;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A rank killed outright (SIGKILL: no MPI_Abort, no atexit, no destructor)
// while ina's node stage holds shared memory: the job must end, and leave no
// /dev/shm/ina-* segment and no ina-switchd behind (run-mpi.sh checks both
// afterwards). On a duplicate of MPI_COMM_WORLD (one node) the ranks run a
// few collectives, checked, so its segment exists; they split MPI_COMM_WORLD
// by parity and run a collective on each half; then the last rank kills
// itself while the others wait in MPI_Barrier on MPI_COMM_WORLD.
//
// usage: test_kill [-f] [-m]
//   -f: the last rank dies right after the split, before its half's first
//   collective, while its partners are inside that call: where the node
//   stage sets its segment up lazily, one that not every local rank has
//   attached, still named in /dev/shm, is left to the runtime's cleanup.
//   -m: the layout spreads MPI_COMM_WORLD over several (pretend) nodes
//   (coll_ina_test_node_size), so the node stage also streams to the agent
//   when the rank dies; without -m it must be one node.
#include "ina_mpi_test.h"

#include <unistd.h>

#include <csignal>

using namespace inatest;

namespace {

long checks = 0;

// A few collectives on `comm`, checked; `level` must have counted them.
void some_collectives(MPI_Comm comm, WorkLevel &level, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const size_t n = 20000;
    std::vector<double> in(n), out(n), ref(n);
    fill_input(in, Op::Sum, rank, 77);
    reference(ref, Op::Sum, comm, 77);
    MPI_Allreduce(in.data(), out.data(), (int)n, MPI_DOUBLE, MPI_SUM, comm);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += !same_bits(out[i], ref[i]);

    std::vector<uint8_t> bc(5000), bc_ref(5000);
    for (size_t i = 0; i < bc.size(); ++i) bc_ref[i] = static_cast<uint8_t>(mix(78 + i));
    if (rank == size - 1) bc = bc_ref;
    MPI_Bcast(bc.data(), (int)bc.size(), MPI_BYTE, size - 1, comm);
    for (size_t i = 0; i < bc.size(); ++i) bad += bc[i] != bc_ref[i];

    MPI_Barrier(comm);

    std::vector<int> all(size, -1);
    MPI_Allgather(&rank, 1, MPI_INT, all.data(), 1, MPI_INT, comm);
    for (int r = 0; r < size; ++r) bad += all[r] != r;

    ++checks;
    INA_CHECK(bad == 0, "%s: %zu wrong values", what, bad);
    checks += level.expect(4, what);
}

// Every check so far passed on every rank, or the job ends here with a clear
// message instead of the kill the scenario waits for.
void agree_or_abort(const char *when)
{
    int mine = failures(), any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any != 0) {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0) std::fprintf(stderr, "test_kill: checks failed %s\n", when);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    bool fresh = false, multi = false;
    int opt;
    while ((opt = getopt(argc, argv, "fm")) != -1) {
        if (opt == 'f') fresh = true;
        if (opt == 'm') multi = true;
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Counters counters;

    MPI_Comm all;
    MPI_Comm_dup(MPI_COMM_WORLD, &all);
    WorkLevel level(counters, all);
    ++checks;
    if (multi) {
        INA_CHECK(counters.nodes(all) > 1,
                  "the duplicate of MPI_COMM_WORLD is on %lld node(s), not several: the "
                  "node stage's uplink is not under test", counters.nodes(all));
    } else {
        INA_CHECK(level.node_only_expected() || counters.node_only(all) < 0,
                  "the duplicate of MPI_COMM_WORLD spans %lld nodes: the node stage is not "
                  "under test", counters.nodes(all));
    }
    some_collectives(all, level, "MPI_COMM_WORLD duplicate");
    agree_or_abort("on the duplicate of MPI_COMM_WORLD");

    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hsize;
    MPI_Comm_size(half, &hsize);
    const bool dies = rank == size - 1;
    if (!(fresh && dies) && hsize >= 2) { // ina declines a single-rank communicator
        // With -f the last rank's partners wait in here for it, in the first
        // call on their half; only the other half comes through.
        WorkLevel hlevel(counters, half);
        some_collectives(half, hlevel, "half of MPI_COMM_WORLD");
    }
    if (!fresh) {
        agree_or_abort("on the halves");
    } else if (failures() != 0) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (dies) {
        std::fprintf(stderr, "test_kill: rank %d kills itself (SIGKILL)%s\n", rank,
                     fresh ? " before its half's first collective" : "");
        std::fflush(stderr);
        std::raise(SIGKILL);
    }
    // The others wait in a collective that will never complete.
    MPI_Barrier(MPI_COMM_WORLD);
    counters.close();
    MPI_Finalize();
    return 0;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// MPI_Comm_idup with several creations in flight, completed in a different
// order on every rank: one creation of each of three parents, started in a
// different interleaving on every rank, with a non-blocking allreduce of the
// world beside them; then four creations of the world. Open MPI activates
// such communicators from its progress engine, in whatever order each rank
// gets there: a job setup that ran collectives in module enable deadlocked
// here. Every new communicator's first call must be offloaded and right.
//
// Not here: several creations of each of several parents at once. Open MPI
// 4.1 then posts its own context-id reductions (MAX, then MIN, per
// creation) on a parent in an order that differs between ranks
// (open-mpi/ompi#2025); its host algorithms combine the mismatched calls
// silently, the agent refuses them (docs/ARCHITECTURE.md, "Known limits").
#include "ina_mpi_test.h"

#include <unistd.h>

#include <algorithm>
#include <random>

using namespace inatest;

namespace {

struct Round {
    std::vector<MPI_Comm> parents;
    std::vector<int> per_parent; // creations of each parent
    bool beside;                 // an iallreduce of the world among them
};

long run_round(const Round &rd, int round, int rank, int size, Counters &counters)
{
    long checks = 0;
    // The order of issue: each parent's creations in their order, the
    // parents interleaved differently on every rank and round.
    std::vector<int> order;
    for (size_t p = 0; p < rd.parents.size(); ++p) order.insert(order.end(), rd.per_parent[p], p);
    std::mt19937 rng(static_cast<unsigned>(1000 * round + rank));
    std::shuffle(order.begin(), order.end(), rng);

    std::vector<MPI_Comm> made(order.size(), MPI_COMM_NULL);
    std::vector<MPI_Request> reqs(order.size() + 1, MPI_REQUEST_NULL);
    long in = rank + round, sum = 0;
    bool posted = !rd.beside;
    for (size_t i = 0; i < order.size(); ++i) {
        MPI_Comm_idup(rd.parents[order[i]], &made[i], &reqs[i]);
        // The allreduce goes in after the world's first creation.
        if (!posted && rd.parents[order[i]] == MPI_COMM_WORLD) {
            MPI_Iallreduce(&in, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &reqs[order.size()]);
            posted = true;
        }
    }
    // Completed in another order on every rank.
    std::vector<size_t> wait_order(reqs.size());
    for (size_t i = 0; i < wait_order.size(); ++i) wait_order[i] = i;
    std::shuffle(wait_order.begin(), wait_order.end(), rng);
    for (size_t i : wait_order) MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);

    if (rd.beside) {
        const long want =
            static_cast<long>(size) * (size - 1) / 2 + static_cast<long>(size) * round;
        ++checks;
        INA_CHECK(sum == want, "round %d: iallreduce beside the idups gave %ld, want %ld", round,
                  sum, want);
    }
    // Use and free the new communicators, each parent's in the order created.
    for (size_t p = 0; p < rd.parents.size(); ++p) {
        for (size_t i = 0; i < made.size(); ++i) {
            if (order[i] != static_cast<int>(p)) continue;
            int r, n;
            MPI_Comm_rank(made[i], &r);
            MPI_Comm_size(made[i], &n);
            long v = r + 1L + round, out = 0;
            MPI_Allreduce(&v, &out, 1, MPI_LONG, MPI_SUM, made[i]);
            const long w = static_cast<long>(n) * (n + 1) / 2 + static_cast<long>(n) * round;
            ++checks;
            INA_CHECK(out == w, "round %d, a communicator of parent %zu: %ld, want %ld", round, p,
                      out, w);
            ++checks;
            INA_CHECK(counters.offloaded(made[i]) == 1,
                      "round %d, a communicator of parent %zu: coll_ina_offloaded_calls %lld, "
                      "want 1",
                      round, p, counters.offloaded(made[i]));
            MPI_Comm_free(&made[i]);
        }
    }
    return checks;
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rounds = 20, c;
    while ((c = getopt(argc, argv, "n:")) != -1) {
        if (c == 'n') rounds = std::atoi(optarg);
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Counters counters;
    long checks = 0;

    // Three parents: the world, a duplicate of it, and halves of it.
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    const Round mixed{{MPI_COMM_WORLD, dup, half}, {1, 1, 1}, true};
    const Round one_parent{{MPI_COMM_WORLD}, {4}, false};
    for (int round = 0; round < rounds; ++round) {
        checks += run_round(mixed, round, rank, size, counters);
        checks += run_round(one_parent, round, rank, size, counters);
    }
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);

    counters.close();
    int code = finish("test_idup", checks);
    MPI_Finalize();
    return code;
}

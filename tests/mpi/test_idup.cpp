// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// MPI_Comm_idup with several creations in flight, completed in a different
// order on every rank. Three kinds of rounds:
// - one creation of each of three parents, started in a different
//   interleaving on every rank, with a non-blocking allreduce of the world
//   beside them;
// - four creations of the world;
// - four creations of each of two parents with the same members in another
//   order (the world, and a split of it with the ranks reversed), eight in
//   flight at once.
// Open MPI activates such communicators from its progress engine, in
// whatever order each rank gets there: a job setup that ran collectives in
// module enable deadlocked here. With several creations of one parent in
// flight, Open MPI's own context-id reductions on that parent are posted in
// an order that differs between ranks; offloaded, they crossed and gave the
// ranks different context ids for one communicator, which hung (2 runs of 4):
// ina leaves them to the host (coll_ina_allreduce.c). Every new
// communicator's first call, an allreduce of 1000-1119 longs, must be
// offloaded and right.
//
// Not here: several creations of each of several parents issued in an order
// that differs between ranks. Open MPI 4.1 alone (--mca coll ^ina) hangs on
// it (8 runs of 8): docs/ARCHITECTURE.md, "Known limits".
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
    bool shuffle;                // the parents interleaved differently on every rank
};

long run_round(const Round &rd, int round, int rank, int size, Counters &counters)
{
    long checks = 0;
    // The order of issue: each parent's creations in their order, the
    // parents interleaved differently on every rank and round (shuffle), or
    // in turn, alike on every rank.
    std::vector<int> order;
    const int most = *std::max_element(rd.per_parent.begin(), rd.per_parent.end());
    for (int k = 0; k < most; ++k) {
        for (size_t p = 0; p < rd.parents.size(); ++p) {
            if (k < rd.per_parent[p]) order.push_back(static_cast<int>(p));
        }
    }
    std::mt19937 rng(static_cast<unsigned>(1000 * round + rank));
    if (rd.shuffle) std::shuffle(order.begin(), order.end(), rng);

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
        size_t nth = 0; // this creation's place among its parent's, alike on every rank
        for (size_t i = 0; i < made.size(); ++i) {
            if (order[i] != static_cast<int>(p)) continue;
            int r, n;
            MPI_Comm_rank(made[i], &r);
            MPI_Comm_size(made[i], &n);
            // 1000-1119 elements, another count for each communicator.
            const size_t count = 1000 + (37 * static_cast<size_t>(round) + 11 * nth++ + p) % 120;
            std::vector<long> v(count), out(count, -1);
            for (size_t k = 0; k < count; ++k) v[k] = r + 1L + round + static_cast<long>(k);
            MPI_Allreduce(v.data(), out.data(), static_cast<int>(count), MPI_LONG, MPI_SUM,
                          made[i]);
            size_t wrong = 0;
            for (size_t k = 0; k < count; ++k) {
                const long w = static_cast<long>(n) * (n + 1) / 2 +
                               static_cast<long>(n) * (round + static_cast<long>(k));
                wrong += out[k] != w;
            }
            ++checks;
            INA_CHECK(wrong == 0, "round %d, a communicator of parent %zu: %zu of %zu wrong", round,
                      p, wrong, count);
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
    MPI_Comm dup, half, reversed;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &reversed);
    const Round mixed{{MPI_COMM_WORLD, dup, half}, {1, 1, 1}, true, true};
    const Round one_parent{{MPI_COMM_WORLD}, {4}, false, false};
    const Round same_members{{MPI_COMM_WORLD, reversed}, {4, 4}, false, false};
    for (int round = 0; round < rounds; ++round) {
        checks += run_round(mixed, round, rank, size, counters);
        checks += run_round(one_parent, round, rank, size, counters);
        checks += run_round(same_members, round, rank, size, counters);
    }
    MPI_Comm_free(&reversed);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);

    counters.close();
    int code = finish("test_idup", checks);
    MPI_Finalize();
    return code;
}

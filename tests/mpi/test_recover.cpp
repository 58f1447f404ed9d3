// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The agent dies (SIGKILL) in the middle of a run (issue 12): every call
// still completes with MPI_SUCCESS and the exact result on every rank. The
// ranks finish the calls the agent left among themselves
// (coll_ina_recover), and run the host algorithm for the calls after.
//
// Each round runs, on MPI_COMM_WORLD: MPI_Allreduce (int64 SUM, several
// blocks; and double SUM in place, values whose sums are exact in any
// order), MPI_Reduce (int32 MAX, the root moving), MPI_Bcast (bytes, the
// root moving), MPI_Allgather (int32), MPI_Reduce_scatter_block (int32 SUM,
// in place every other round), MPI_Iallreduce (int64 SUM) with an MPI_Wait,
// and MPI_Barrier. Every result is checked against a reference
// computed here from the inputs every rank can regenerate.
//
// usage: test_recover [-r ROUNDS] [-k PID -t MS] [-e]
//   -k PID -t MS: rank 0 kills process PID (the agent) MS ms after the
//   first round starts (a random moment of the run); without it the agent
//   is expected to die by itself (ina-switchd --test-die-after-results).
//   -e: some call must have been recovered (the agent died mid-run).
#include "ina_mpi_test.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

using namespace inatest;

namespace {

long checks = 0;

int64_t i64(int rank, int round, size_t i) { return (int64_t) (rank + 1) * 1000003 + round * 7 + (int64_t) i; }
double dbl(int rank, int round, size_t i) { return (double) ((rank * 31 + round * 17 + (int) i) % 1024); }

void round_of_calls(int round, int rank, int size)
{
    // Allreduce, int64 SUM, 5 blocks of 64 KiB and a bit.
    const size_t n1 = 41000;
    std::vector<int64_t> a(n1), b(n1);
    for (size_t i = 0; i < n1; ++i) a[i] = i64(rank, round, i);
    MPI_Allreduce(a.data(), b.data(), (int) n1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < n1; ++i) {
        int64_t want = 0;
        for (int r = 0; r < size; ++r) want += i64(r, round, i);
        if (b[i] != want) {
            INA_CHECK(b[i] == want, "round %d allreduce [%zu]: %" PRId64 ", want %" PRId64, round, i, b[i], want);
            break;
        }
    }
    ++checks;
    // Allreduce in place, double SUM of small integers: exact in any order.
    const size_t n2 = 30000;
    std::vector<double> d(n2);
    for (size_t i = 0; i < n2; ++i) d[i] = dbl(rank, round, i);
    MPI_Allreduce(MPI_IN_PLACE, d.data(), (int) n2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < n2; ++i) {
        double want = 0;
        for (int r = 0; r < size; ++r) want += dbl(r, round, i);
        if (d[i] != want) {
            INA_CHECK(d[i] == want, "round %d in-place allreduce [%zu]: %g, want %g", round, i, d[i], want);
            break;
        }
    }
    ++checks;
    // Reduce, int32 MAX, the root moving.
    const int root = round % size;
    const size_t n3 = 50000;
    std::vector<int32_t> c(n3), out(n3, -1);
    for (size_t i = 0; i < n3; ++i) c[i] = (int32_t) ((rank * 7919 + i * 13 + round) % 100003);
    MPI_Reduce(c.data(), out.data(), (int) n3, MPI_INT32_T, MPI_MAX, root, MPI_COMM_WORLD);
    if (rank == root) {
        for (size_t i = 0; i < n3; ++i) {
            int32_t want = INT32_MIN;
            for (int r = 0; r < size; ++r) want = std::max(want, (int32_t) ((r * 7919 + i * 13 + round) % 100003));
            if (out[i] != want) {
                INA_CHECK(out[i] == want, "round %d reduce [%zu]: %d, want %d", round, i, out[i], want);
                break;
            }
        }
        ++checks;
    }
    // Bcast of bytes from another root.
    const int broot = (round + 1) % size;
    std::vector<unsigned char> bytes(200000);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = rank == broot ? (unsigned char) (i * 31 + round) : 0;
    MPI_Bcast(bytes.data(), (int) bytes.size(), MPI_BYTE, broot, MPI_COMM_WORLD);
    for (size_t i = 0; i < bytes.size(); ++i) {
        if (bytes[i] != (unsigned char) (i * 31 + round)) {
            INA_CHECK(false, "round %d bcast [%zu]: %u", round, i, bytes[i]);
            break;
        }
    }
    ++checks;
    // Allgather of int32.
    const size_t n4 = 20000;
    std::vector<int32_t> mine(n4), all(n4 * size, -1);
    for (size_t i = 0; i < n4; ++i) mine[i] = (int32_t) (rank * 1000000 + round * 1000 + i);
    MPI_Allgather(mine.data(), (int) n4, MPI_INT32_T, all.data(), (int) n4, MPI_INT32_T, MPI_COMM_WORLD);
    for (int r = 0; r < size; ++r) {
        for (size_t i = 0; i < n4; ++i) {
            if (all[r * n4 + i] != (int32_t) (r * 1000000 + round * 1000 + i)) {
                INA_CHECK(false, "round %d allgather rank %d [%zu]: %d", round, r, i, all[r * n4 + i]);
                r = size;
                break;
            }
        }
    }
    ++checks;
    // Reduce_scatter_block, int32 SUM, in place every other round.
    const size_t n5 = 9000;
    std::vector<int32_t> rs(n5 * size), part(n5, -1);
    for (size_t i = 0; i < rs.size(); ++i) rs[i] = (int32_t) (rank * 100 + round * 3 + (int) (i % 977));
    if (round % 2 == 0) {
        MPI_Reduce_scatter_block(rs.data(), part.data(), (int) n5, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
    } else {
        MPI_Reduce_scatter_block(MPI_IN_PLACE, rs.data(), (int) n5, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
        std::copy(rs.begin(), rs.begin() + (long) n5, part.begin());
    }
    for (size_t i = 0; i < n5; ++i) {
        const size_t g = rank * n5 + i;
        int32_t want = 0;
        for (int r = 0; r < size; ++r) want += (int32_t) (r * 100 + round * 3 + (int) (g % 977));
        if (part[i] != want) {
            INA_CHECK(part[i] == want, "round %d reduce_scatter_block [%zu]: %d, want %d", round, i, part[i], want);
            break;
        }
    }
    ++checks;
    // Iallreduce, int64 SUM, then wait.
    std::vector<int64_t> e(n1), f(n1);
    for (size_t i = 0; i < n1; ++i) e[i] = i64(rank, round + 1000, i);
    MPI_Request req;
    MPI_Iallreduce(e.data(), f.data(), (int) n1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (size_t i = 0; i < n1; ++i) {
        int64_t want = 0;
        for (int r = 0; r < size; ++r) want += i64(r, round + 1000, i);
        if (f[i] != want) {
            INA_CHECK(f[i] == want, "round %d iallreduce [%zu]", round, i);
            break;
        }
    }
    ++checks;
    MPI_Barrier(MPI_COMM_WORLD);
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rounds = 12, c, ms = -1;
    long pid = 0;
    bool expect = false;
    while ((c = getopt(argc, argv, "r:k:t:e")) != -1) {
        if (c == 'r') rounds = std::atoi(optarg);
        if (c == 'e') expect = true;
        if (c == 'k') pid = std::atol(optarg);
        if (c == 't') ms = std::atoi(optarg);
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Counters counters;
    std::thread killer;
    if (rank == 0 && pid > 0 && ms >= 0) {
        killer = std::thread([pid, ms] {
            std::this_thread::sleep_for(std::chrono::milliseconds(ms));
            kill((pid_t) pid, SIGKILL);
        });
    }
    for (int round = 0; round < rounds; ++round) {
        round_of_calls(round, rank, size);
    }
    if (killer.joinable()) killer.join();
    const long long recovered = counters.recovered(MPI_COMM_WORLD);
    const long long offloaded = counters.offloaded(MPI_COMM_WORLD);
    long long all_recovered = 0;
    MPI_Allreduce(&recovered, &all_recovered, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        std::printf("test_recover: %lld calls recovered over all ranks, %lld offloaded on rank 0\n",
                    all_recovered, offloaded);
    }
    ++checks;
    INA_CHECK(!expect || all_recovered > 0, "the agent was lost, but no call was recovered");
    counters.close();
    int code = finish("test_recover", checks);
    MPI_Finalize();
    return code;
}

/* Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause */
// ina's MPI_T counters of a communicator must be found whatever coll
// component is stacked above ina (the scenarios put one there: coll/sync,
// which wraps the rooted collectives, or coll/monitoring, which wraps every
// slot). The offloadable collectives are called a known number of times,
// values are checked against references computed here, and each per-kind
// counter must show exactly those calls (barriers: at least those, a
// component above may add its own), the total the sum of the kinds, no
// fallback. A duplicate of the communicator gets counters of its own.
//
// usage: test_counters [-r rounds]
#include "ina_mpi_test.h"

#include <unistd.h>

using namespace inatest;

namespace {

long checks = 0;

const char *const kKinds[] = {"allreduce", "reduce", "bcast", "barrier", "allgather",
                              "reduce_scatter"};
enum { ALLREDUCE, REDUCE, BCAST, BARRIER, ALLGATHER, REDUCE_SCATTER, KINDS };

long long kind_counter(Counters &c, MPI_Comm comm, int kind)
{
    std::string name = std::string("coll_ina_offloaded_") + kKinds[kind];
    return c.read(name.c_str(), comm);
}

template <typename T>
void check_vec(const std::vector<T> &got, const std::vector<T> &want, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < want.size(); ++i) bad += !same_bits(got[i], want[i]);
    ++checks;
    INA_CHECK(bad == 0, "%s: %zu wrong of %zu", what, bad, want.size());
}

// One round of every offloadable collective; calls[k] counts them per kind.
void round_of_calls(MPI_Comm comm, int rank, int size, int round, long long calls[KINDS])
{
    const uint64_t seed = 100 + static_cast<uint64_t>(round) * 10;
    const size_t n = 10000 + round;
    const int root = round % size;

    std::vector<double> in(n), out(n), ref(n);
    fill_input(in, Op::Sum, rank, seed);
    reference(ref, Op::Sum, comm, seed);
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm);
    check_vec(out, ref, "Allreduce");
    ++calls[ALLREDUCE];

    MPI_Request req;
    std::vector<double> iout(n);
    MPI_Iallreduce(in.data(), iout.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    check_vec(iout, ref, "Iallreduce");
    ++calls[ALLREDUCE];

    std::vector<int> rin(n), rout(n, -1), rref(n);
    fill_input(rin, Op::Max, rank, seed + 1);
    reference(rref, Op::Max, comm, seed + 1);
    MPI_Reduce(rin.data(), rout.data(), static_cast<int>(n), MPI_INT, MPI_MAX, root, comm);
    if (rank == root) check_vec(rout, rref, "Reduce");
    ++calls[REDUCE];

    std::vector<uint8_t> buf(3 * n), bref(3 * n);
    for (size_t i = 0; i < bref.size(); ++i) bref[i] = static_cast<uint8_t>(mix(seed + 2 + i));
    if (rank == root) buf = bref;
    MPI_Bcast(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, root, comm);
    check_vec(buf, bref, "Bcast");
    ++calls[BCAST];

    MPI_Barrier(comm);
    ++calls[BARRIER];

    std::vector<int> mine(n), all(n * size), aref(n * size);
    fill_input(mine, Op::Sum, rank, seed + 3);
    for (int r = 0; r < size; ++r) {
        std::vector<int> theirs(n);
        fill_input(theirs, Op::Sum, r, seed + 3);
        std::copy(theirs.begin(), theirs.end(), aref.begin() + r * n);
    }
    MPI_Allgather(mine.data(), static_cast<int>(n), MPI_INT, all.data(), static_cast<int>(n),
                  MPI_INT, comm);
    check_vec(all, aref, "Allgather");
    ++calls[ALLGATHER];

    std::vector<long> sin(n * size), sout(n), sref(n * size);
    fill_input(sin, Op::Bxor, rank, seed + 4);
    reference(sref, Op::Bxor, comm, seed + 4);
    MPI_Reduce_scatter_block(sin.data(), sout.data(), static_cast<int>(n), MPI_LONG, MPI_BXOR, comm);
    check_vec(sout, std::vector<long>(sref.begin() + rank * n, sref.begin() + (rank + 1) * n),
              "Reduce_scatter_block");
    ++calls[REDUCE_SCATTER];

    std::vector<int> counts(size);
    for (int r = 0; r < size; ++r) counts[r] = static_cast<int>(n / 2) + r;
    size_t total = 0, off = 0;
    for (int r = 0; r < size; ++r) {
        if (r == rank) off = total;
        total += counts[r];
    }
    std::vector<float> fin(total), fout(counts[rank]), fref(total);
    fill_input(fin, Op::Min, rank, seed + 5);
    reference(fref, Op::Min, comm, seed + 5);
    MPI_Reduce_scatter(fin.data(), fout.data(), counts.data(), MPI_FLOAT, MPI_MIN, comm);
    check_vec(fout, std::vector<float>(fref.begin() + off, fref.begin() + off + counts[rank]),
              "Reduce_scatter");
    ++calls[REDUCE_SCATTER];
}

void expect_counts(Counters &c, MPI_Comm comm, const long long calls[KINDS], const char *when)
{
    long long sum = 0;
    for (int k = 0; k < KINDS; ++k) {
        long long got = kind_counter(c, comm, k);
        sum += got;
        ++checks;
        if (k == BARRIER) {
            INA_CHECK(got >= calls[k], "%s: offloaded_%s %lld, want at least %lld", when,
                      kKinds[k], got, calls[k]);
        } else {
            INA_CHECK(got == calls[k], "%s: offloaded_%s %lld, want %lld", when, kKinds[k], got,
                      calls[k]);
        }
    }
    checks += 2;
    INA_CHECK(c.offloaded(comm) == sum, "%s: offloaded_calls %lld, kinds add up to %lld", when,
              c.offloaded(comm), sum);
    INA_CHECK(c.fallbacks(comm) == 0, "%s: fallback_calls %lld", when, c.fallbacks(comm));
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rounds = 5, opt;
    while ((opt = getopt(argc, argv, "r:")) != -1) {
        if (opt == 'r') rounds = std::atoi(optarg);
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Counters counters;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);

    long long calls[KINDS] = {};
    expect_counts(counters, comm, calls, "after MPI_Comm_dup");
    for (int round = 0; round < rounds; ++round) {
        round_of_calls(comm, rank, size, round, calls);
        char when[32];
        std::snprintf(when, sizeof(when), "round %d", round);
        expect_counts(counters, comm, calls, when);
    }

    // A duplicate has counters of its own, starting at zero; the parent's
    // move only with the parent's calls. (Creating the duplicate runs
    // allreduces of its own on the parent: the context id agreement.)
    for (int k = 0; k < 3; ++k) {
        MPI_Comm dup;
        MPI_Comm_dup(comm, &dup);
        for (int kind = 0; kind < KINDS; ++kind) {
            long long now = kind_counter(counters, comm, kind);
            ++checks;
            INA_CHECK(now >= calls[kind], "parent after MPI_Comm_dup: offloaded_%s %lld -> %lld",
                      kKinds[kind], calls[kind], now);
            calls[kind] = now;
        }
        long long dcalls[KINDS] = {};
        expect_counts(counters, dup, dcalls, "new duplicate");
        round_of_calls(dup, rank, size, 100 + k, dcalls);
        expect_counts(counters, dup, dcalls, "duplicate after a round");
        expect_counts(counters, comm, calls, "parent after the duplicate's round");
        MPI_Comm_free(&dup);
    }

    counters.close();
    MPI_Comm_free(&comm);
    int code = finish("test_counters", checks);
    MPI_Finalize();
    return code;
}

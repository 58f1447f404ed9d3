// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The hyper-square's host algorithm (coll_ina_host, ompi_coll_ina/
// coll_ina_grid.c): the scenario's topology file describes a grid of
// groups of four hosts, and no agent serves the job, so every MPI_Allreduce
// runs on the hosts. On a communicator that covers whole groups (the world,
// and with -g G each group's ranks) the grid's rings run it; on one that
// does not (the even ranks) the algorithm ina replaced does. Every result is
// checked: integers equal to a reference computed here from inputs every
// rank regenerates; floating-point results bit-identical on every rank and
// between two runs of the same call, and within a rounding bound of the
// reference (the rings fold in their own order). Over int32, int64, uint8,
// float and double, SUM, MAX, MIN, PROD, BAND/BOR/BXOR (integers), vector
// lengths from 1 element to more than every ring's pieces, in place and not.
// The pvars say which algorithm ran: coll_ina_grid_nodes (nodes under the
// communicator) and coll_ina_grid_calls.
//
// usage: test_grid -n NODES [-g RANKS_PER_GROUP]
//   -n: nodes the world covers (coll_ina_grid_nodes on MPI_COMM_WORLD)
//   -g: world ranks [k*G, (k+1)*G) fill group k: the split by group covers
//       one group (4 nodes) each
#include "ina_mpi_test.h"

#include <unistd.h>

#include <cmath>
#include <limits>

using namespace inatest;

namespace {

long checks = 0;
long allreduces = 0; // MPI_Allreduce calls of the communicator under test

template <typename T> MPI_Datatype mpi_type();
template <> MPI_Datatype mpi_type<int32_t>() { return MPI_INT32_T; }
template <> MPI_Datatype mpi_type<int64_t>() { return MPI_INT64_T; }
template <> MPI_Datatype mpi_type<uint8_t>() { return MPI_UINT8_T; }
template <> MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }
template <> MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }

// Rank r's element i, varied, but never overflowing at 16 ranks: MPI does
// not say what an overflowing integer reduction gives (Open MPI 4.1.4's
// vector kernels saturate uint8 sums where its scalar ones wrap).
template <typename T> T value(int r, size_t i, MPI_Op op)
{
    if (op == MPI_PROD) {
        return static_cast<T>(static_cast<size_t>(r) % 4 == i % 4 ? 2 : 1); // at most 2^4
    }
    if constexpr (std::is_floating_point_v<T>) {
        return static_cast<T>(1.0 / (3.0 + r + static_cast<double>(i % 17)) +
                              static_cast<double>(i % 5));
    } else {
        return static_cast<T>((r * 37 + i * 11 + 5) % (sizeof(T) == 1 ? 15 : 97));
    }
}

template <typename T> T combine(T a, T b, MPI_Op op)
{
    if (op == MPI_SUM) return static_cast<T>(a + b);
    if (op == MPI_PROD) return static_cast<T>(a * b);
    if (op == MPI_MAX) return std::max(a, b);
    if (op == MPI_MIN) return std::min(a, b);
    if constexpr (std::is_integral_v<T>) {
        if (op == MPI_BAND) return static_cast<T>(a & b);
        if (op == MPI_BOR) return static_cast<T>(a | b);
        if (op == MPI_BXOR) return static_cast<T>(a ^ b);
    }
    return a;
}

const char *op_name(MPI_Op op)
{
    return op == MPI_SUM ? "SUM" : op == MPI_PROD ? "PROD" : op == MPI_MAX ? "MAX"
         : op == MPI_MIN ? "MIN" : op == MPI_BAND ? "BAND" : op == MPI_BOR ? "BOR" : "BXOR";
}

// One allreduce of n elements on `comm` (twice, the second in place when
// `in_place`), checked as the header says.
template <typename T>
void check_allreduce(MPI_Comm comm, size_t n, MPI_Op op, bool in_place, const char *what)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    std::vector<T> in(n), out(n), again(n);
    for (size_t i = 0; i < n; ++i) {
        in[i] = value<T>(r, i, op);
    }
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), mpi_type<T>(), op, comm);
    allreduces += 2; // and the second run, below
    again = in;
    if (in_place) {
        MPI_Allreduce(MPI_IN_PLACE, again.data(), static_cast<int>(n), mpi_type<T>(), op, comm);
    } else {
        std::vector<T> src = in;
        MPI_Allreduce(src.data(), again.data(), static_cast<int>(n), mpi_type<T>(), op, comm);
    }
    ++checks;
    INA_CHECK(std::memcmp(out.data(), again.data(), n * sizeof(T)) == 0,
              "%s: %s of %zu elements: a second run gave other bits", what, op_name(op), n);
    // Every rank's bits alike: rank 0's result to all, compared.
    std::vector<T> first = out;
    MPI_Bcast(first.data(), static_cast<int>(n * sizeof(T)), MPI_BYTE, 0, comm);
    ++checks;
    INA_CHECK(std::memcmp(out.data(), first.data(), n * sizeof(T)) == 0,
              "%s: %s of %zu elements: rank %d's bits differ from rank 0's", what, op_name(op),
              n, r);
    for (size_t i = 0; i < n; ++i) {
        T ref = value<T>(0, i, op);
        double mag = std::fabs(static_cast<double>(ref));
        for (int q = 1; q < p; ++q) {
            ref = combine<T>(ref, value<T>(q, i, op), op);
            mag += std::fabs(static_cast<double>(value<T>(q, i, op)));
        }
        bool ok;
        if constexpr (std::is_floating_point_v<T>) {
            const double tol = 4.0 * p * std::numeric_limits<T>::epsilon() * (mag + 1.0);
            ok = std::fabs(static_cast<double>(out[i]) - static_cast<double>(ref)) <= tol;
        } else {
            ok = out[i] == ref;
        }
        if (!ok) {
            ++checks;
            INA_CHECK(ok, "%s: %s of %zu elements, element %zu: %g, want %g", what, op_name(op),
                      n, i, static_cast<double>(out[i]), static_cast<double>(ref));
            return;
        }
    }
    ++checks;
}

template <typename T> void matrix(MPI_Comm comm, const char *what, bool bits)
{
    int p;
    MPI_Comm_size(comm, &p);
    std::vector<MPI_Op> ops = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD};
    if (bits) {
        ops.insert(ops.end(), {MPI_BAND, MPI_BOR, MPI_BXOR});
    }
    // 1 element (most pieces empty), fewer than the ring's pieces, uneven,
    // and more than 64 KiB (the grid's default threshold).
    const size_t sizes[] = {1, 3, static_cast<size_t>(p) + 1, 1000, 70000 / sizeof(T) + 13};
    for (MPI_Op op : ops) {
        for (size_t n : sizes) {
            check_allreduce<T>(comm, n, op, n % 2 == 1, what);
        }
    }
}

void all_types(MPI_Comm comm, const char *what)
{
    matrix<int32_t>(comm, what, true);
    matrix<int64_t>(comm, what, true);
    matrix<uint8_t>(comm, what, true);
    matrix<float>(comm, what, false);
    matrix<double>(comm, what, false);
}

// The grid's nodes under `comm`, and the calls it ran since `before`: every
// MPI_Allreduce made since (allreduces, reset by the caller), or none.
void expect_grid(Counters &k, MPI_Comm comm, long long nodes, long long before, bool ran,
                 const char *what)
{
    const long long got_nodes = k.read("coll_ina_grid_nodes", comm, MPI_T_PVAR_CLASS_SIZE);
    const long long calls = k.read("coll_ina_grid_calls", comm);
    const long long want = ran ? allreduces : 0;
    ++checks;
    INA_CHECK(got_nodes == nodes, "%s: coll_ina_grid_nodes %lld, want %lld", what, got_nodes,
              nodes);
    ++checks;
    INA_CHECK(calls - before == want, "%s: the grid ran %lld calls, want %lld", what,
              calls - before, want);
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int nodes = 0, per_group = 0, c;
    while ((c = getopt(argc, argv, "n:g:")) != -1) {
        if (c == 'n') nodes = std::atoi(optarg);
        if (c == 'g') per_group = std::atoi(optarg);
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Counters k;

    long long before = k.read("coll_ina_grid_calls", MPI_COMM_WORLD);
    allreduces = 0;
    all_types(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    expect_grid(k, MPI_COMM_WORLD, nodes, before, nodes > 0, "MPI_COMM_WORLD");

    if (per_group > 0 && size > per_group) {
        MPI_Comm group;
        MPI_Comm_split(MPI_COMM_WORLD, rank / per_group, rank, &group);
        before = k.read("coll_ina_grid_calls", group);
        allreduces = 0;
        all_types(group, "one group");
        expect_grid(k, group, 4, before, true, "one group");
        MPI_Comm_free(&group);
    }
    // The even ranks cover no whole group: the algorithm ina replaced.
    MPI_Comm even;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &even);
    if (rank % 2 == 0) {
        before = k.read("coll_ina_grid_calls", even);
        allreduces = 0;
        matrix<int32_t>(even, "the even ranks", true);
        matrix<double>(even, "the even ranks", false);
        expect_grid(k, even, 0, before, false, "the even ranks");
    }
    MPI_Comm_free(&even);

    k.close();
    const int code = finish("test_grid", checks);
    MPI_Finalize();
    return code;
}

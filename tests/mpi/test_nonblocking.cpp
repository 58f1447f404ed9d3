// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Non-blocking collectives offloaded for real: several outstanding on one
// communicator (Iallreduce, Ireduce, Iallgather, Ibcast, Ibarrier) completed
// together, mixed with blocking calls, and on two communicators at once,
// waited in a different order than posted. The ranks compute between post
// and wait. Values against references computed here; every call offloaded,
// by the node stage alone on a one-node communicator, else by the agent.
#include "ina_mpi_test.h"

using namespace inatest;

namespace {

long checks = 0;

template <typename T>
size_t count_bad(const std::vector<T> &got, const std::vector<T> &want)
{
    size_t bad = 0;
    for (size_t i = 0; i < want.size(); ++i) bad += !same_bits(got[i], want[i]);
    return bad;
}

// Busy work between post and wait (the result is printed so it is not elided).
double compute(int n)
{
    double x = 0;
    for (int i = 1; i <= n; ++i) x += 1.0 / (static_cast<double>(i) * i);
    return x;
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Counters counters;
    MPI_Comm a, b;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    double sink = 0;
    WorkLevel level_a(counters, a), level_b(counters, b);
    char what[64];

    for (int round = 0; round < 5; ++round) {
        const size_t n = 70001 + round;
        const uint64_t seed = 500 + round * 10;
        const int root_r = size - 1, root_b = size / 2;

        std::vector<double> ar_in(n), ar_out(n), ar_ref(n);
        fill_input(ar_in, Op::Sum, rank, seed);
        reference(ar_ref, Op::Sum, a, seed);
        std::vector<int> rd_in(4099), rd_out(4099, -1), rd_ref(4099);
        fill_input(rd_in, Op::Sum, rank, seed + 1);
        reference(rd_ref, Op::Sum, a, seed + 1);
        std::vector<int> ag_in(3001), ag_out(3001 * size), ag_ref(3001 * size);
        fill_input(ag_in, Op::Sum, rank, seed + 2);
        for (int r = 0; r < size; ++r) {
            std::vector<int> t(3001);
            fill_input(t, Op::Sum, r, seed + 2);
            std::copy(t.begin(), t.end(), ag_ref.begin() + r * 3001);
        }
        std::vector<uint8_t> bc(100000), bc_ref(100000);
        for (size_t i = 0; i < bc.size(); ++i) bc_ref[i] = static_cast<uint8_t>(mix(seed + 3 + i));
        if (rank == root_b) bc = bc_ref;

        MPI_Request req[5];
        MPI_Iallreduce(ar_in.data(), ar_out.data(), (int)n, MPI_DOUBLE, MPI_SUM, a, &req[0]);
        MPI_Ireduce(rd_in.data(), rd_out.data(), 4099, MPI_INT, MPI_SUM, root_r, a, &req[1]);
        MPI_Iallgather(ag_in.data(), 3001, MPI_INT, ag_out.data(), 3001, MPI_INT, a, &req[2]);
        MPI_Ibcast(bc.data(), (int)bc.size(), MPI_BYTE, root_b, a, &req[3]);
        MPI_Ibarrier(a, &req[4]);
        sink += compute(200000 * (rank + 1));
        // A blocking collective on the same communicator while they are outstanding.
        long one = 1, total = 0;
        MPI_Allreduce(&one, &total, 1, MPI_LONG, MPI_SUM, a);
        MPI_Waitall(5, req, MPI_STATUSES_IGNORE);

        checks += 5;
        INA_CHECK(total == size, "blocking allreduce among outstanding ones: %ld", total);
        INA_CHECK(count_bad(ar_out, ar_ref) == 0, "round %d Iallreduce wrong", round);
        INA_CHECK(rank != root_r || count_bad(rd_out, rd_ref) == 0, "round %d Ireduce wrong", round);
        INA_CHECK(count_bad(ag_out, ag_ref) == 0, "round %d Iallgather wrong", round);
        INA_CHECK(count_bad(bc, bc_ref) == 0, "round %d Ibcast wrong", round);
        std::snprintf(what, sizeof(what), "round %d: 5 outstanding + 1 blocking", round);
        checks += level_a.expect(6, what);

        // Two communicators at once, waited in reverse order.
        std::vector<float> x(20000), y(20000), xo(20000), yo(20000), xr(20000), yr(20000);
        fill_input(x, Op::Sum, rank, seed + 4);
        fill_input(y, Op::Max, rank, seed + 5);
        reference(xr, Op::Sum, a, seed + 4);
        reference(yr, Op::Max, b, seed + 5);
        MPI_Request r2[2];
        MPI_Iallreduce(x.data(), xo.data(), 20000, MPI_FLOAT, MPI_SUM, a, &r2[0]);
        MPI_Iallreduce(y.data(), yo.data(), 20000, MPI_FLOAT, MPI_MAX, b, &r2[1]);
        sink += compute(10000);
        MPI_Wait(&r2[1], MPI_STATUS_IGNORE);
        int done = 0;
        while (!done) MPI_Test(&r2[0], &done, MPI_STATUS_IGNORE);
        checks += 2;
        INA_CHECK(count_bad(xo, xr) == 0, "round %d: comm a Iallreduce wrong", round);
        INA_CHECK(count_bad(yo, yr) == 0, "round %d: comm b Iallreduce wrong", round);
        std::snprintf(what, sizeof(what), "round %d: comm a Iallreduce", round);
        checks += level_a.expect(1, what);
        std::snprintf(what, sizeof(what), "round %d: comm b Iallreduce", round);
        checks += level_b.expect(1, what);
    }
    // A datatype of the application's own, freed while the call is in
    // flight: MPI keeps it for the request in fields of Open MPI's
    // non-blocking request, which ina's requests must therefore extend.
    for (int round = 0; round < 3; ++round) {
        MPI_Datatype quad;
        MPI_Type_contiguous(4, MPI_INT, &quad);
        MPI_Type_commit(&quad);
        const int root = round % size, n = 5000 + round;
        std::vector<int> q(4 * static_cast<size_t>(n)), q_ref(q.size());
        for (size_t i = 0; i < q.size(); ++i) q_ref[i] = static_cast<int>(mix(900 + round + i));
        if (rank == root) q = q_ref;
        MPI_Request r;
        MPI_Ibcast(q.data(), n, quad, root, a, &r);
        MPI_Type_free(&quad);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        ++checks;
        INA_CHECK(count_bad(q, q_ref) == 0, "round %d: Ibcast of a derived type wrong", round);
        std::snprintf(what, sizeof(what), "round %d: Ibcast of a derived type", round);
        checks += level_a.expect(1, what);
    }
    ++checks;
    INA_CHECK(counters.fallbacks(a) == 0 && counters.fallbacks(b) == 0,
              "fallbacks: %lld / %lld", counters.fallbacks(a), counters.fallbacks(b));
    if (sink < 0) std::printf("%g\n", sink);

    counters.close();
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
    int code = finish("test_nonblocking", checks);
    MPI_Finalize();
    return code;
}

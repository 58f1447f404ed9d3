// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Communicator churn must not leak agent resources: 1000 communicators alive
// at once, each used in turn (every one gets its own job at the agent), then
// 1000 dup/use/free cycles. Every call is checked and must be offloaded.
// -n N: N cycles; -a A: A alive at once (default N). bench/soak runs it long.
#include "ina_mpi_test.h"

#include <unistd.h>

using namespace inatest;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = 1000, a = -1, c;
    while ((c = getopt(argc, argv, "n:a:")) != -1) {
        if (c == 'n') n = std::atoi(optarg);
        if (c == 'a') a = std::atoi(optarg);
    }
    a = a < 0 ? n : a;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Counters counters;
    long checks = 0;

    auto use = [&](MPI_Comm comm, int k) {
        long v[3] = {rank + k, 2L * rank, 1}, out[3];
        MPI_Allreduce(v, out, 3, MPI_LONG, MPI_SUM, comm);
        long s = static_cast<long>(size) * (size - 1) / 2;
        ++checks;
        INA_CHECK(out[0] == s + static_cast<long>(size) * k && out[1] == 2 * s && out[2] == size,
                  "comm %d: got %ld %ld %ld", k, out[0], out[1], out[2]);
        ++checks;
        INA_CHECK(counters.offloaded(comm) == 1, "comm %d: offloaded counter %lld", k,
                  counters.offloaded(comm));
    };

    std::vector<MPI_Comm> alive(a);
    for (int k = 0; k < a; ++k) MPI_Comm_dup(MPI_COMM_WORLD, &alive[k]);
    for (int k = 0; k < a; ++k) use(alive[k], k);
    for (int k = 0; k < a; ++k) MPI_Comm_free(&alive[k]);

    for (int k = 0; k < n; ++k) {
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        use(comm, k);
        MPI_Comm_free(&comm);
    }

    counters.close();
    int code = finish("test_comm_loop", checks);
    MPI_Finalize();
    return code;
}

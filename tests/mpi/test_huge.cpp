// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// An MPI_Allreduce whose byte size exceeds 2 GiB (int count, 8-byte type),
// in place, through ina: every element checked (exact small integers).
#include "ina_mpi_test.h"

using namespace inatest;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Counters counters;
    const size_t n = (size_t{1} << 28) + 4099; // 2 GiB + 32 KiB of doubles
    long checks = 0;
    std::vector<double> buf(n);
    for (size_t i = 0; i < n; ++i) buf[i] = static_cast<double>((i % 1021) + rank);
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM,
                           MPI_COMM_WORLD);
    size_t bad = 0;
    const double ranks = static_cast<double>(size) * (size - 1) / 2;
    for (size_t i = 0; i < n; ++i) {
        bad += buf[i] != static_cast<double>(i % 1021) * size + ranks;
    }
    checks += 3;
    INA_CHECK(rc == MPI_SUCCESS, "rc=%d", rc);
    INA_CHECK(bad == 0, "%zu of %zu elements wrong", bad, n);
    INA_CHECK(counters.offloaded(MPI_COMM_WORLD) == 1, "offloaded counter %lld",
              counters.offloaded(MPI_COMM_WORLD));
    counters.close();
    int code = finish("test_huge", checks);
    MPI_Finalize();
    return code;
}

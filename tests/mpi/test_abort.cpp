// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A job that dies with MPI_Abort in the middle of its work must leave no
// ina-switchd behind (the runner checks the process table afterwards).
#include "ina_mpi_test.h"

#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int v = rank, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size * (size - 1) / 2) {
        std::fprintf(stderr, "wrong sum %d\n", sum);
    }
    if (rank == size - 1) {
        std::fprintf(stderr, "test_abort: rank %d aborting on purpose\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    // The others wait in a collective that will never complete.
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}

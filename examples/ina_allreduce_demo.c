/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * ina_allreduce_demo: the "main job" of the README. A plain MPI program (it
 * knows nothing of ina): MPI_Allreduce of floats with MPI_SUM over a range of
 * sizes, each result verified against a reference every rank computes on its
 * own, timed over a few iterations. Run it once with `--mca coll ina` and once
 * with Open MPI's own collectives (scripts/demo.sh does both and prints the
 * ratio).
 *
 * usage: ina_allreduce_demo [-m MIN_BYTES:MAX_BYTES] [-i ITERATIONS]
 * Prints one line per size: bytes, average microseconds, "ok" or "WRONG".
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ina_example.h"

/* Small integers: every float sum is exact whatever the order, so the
 * reference is the same for ina and for Open MPI's own algorithms. */
static float value(int rank, size_t i)
{
    return (float)((rank * 31 + (int)(i % 97)) % 64);
}

int main(int argc, char **argv)
{
    size_t min_bytes = 4, max_bytes = 16u << 20;
    int iters = 20, rank, size, c, wrong_total = 0;

    ina_example_info(argc, argv, "ina_allreduce_demo",
                     "usage: mpirun [...] ina_allreduce_demo [-m MIN_BYTES:MAX_BYTES] [-i ITERATIONS]\n"
                     "MPI_Allreduce of floats (MPI_SUM) from MIN to MAX bytes (powers of 4),\n"
                     "each result checked; prints bytes, average microseconds, ok or WRONG.\n");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((c = getopt(argc, argv, "m:i:")) != -1) {
        if ('m' == c) {
            char *colon = strchr(optarg, ':');
            min_bytes = strtoull(optarg, NULL, 0);
            max_bytes = colon ? strtoull(colon + 1, NULL, 0) : min_bytes;
        } else if ('i' == c) {
            iters = atoi(optarg);
        }
    }
    if (min_bytes < sizeof(float)) {
        min_bytes = sizeof(float);
    }

    size_t max_count = max_bytes / sizeof(float);
    float *send = malloc(max_count * sizeof(float));
    float *recv = malloc(max_count * sizeof(float));
    if (NULL == send || NULL == recv) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (0 == rank) {
        printf("# ina_allreduce_demo: %d ranks, MPI_FLOAT MPI_SUM, %d iterations\n", size, iters);
        printf("# %12s %14s %8s\n", "bytes", "avg_usec", "result");
    }
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
        size_t count = bytes / sizeof(float);
        for (size_t i = 0; i < count; ++i) {
            send[i] = value(rank, i);
        }
        MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* warm-up */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int it = 0; it < iters; ++it) {
            MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        }
        double local = (MPI_Wtime() - t0) / iters, slowest;
        MPI_Reduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

        int wrong = 0, any_wrong;
        for (size_t i = 0; i < count && !wrong; ++i) {
            float want = 0.0f;
            for (int r = 0; r < size; ++r) {
                want += value(r, i);
            }
            wrong = recv[i] != want;
        }
        MPI_Allreduce(&wrong, &any_wrong, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        wrong_total += any_wrong;
        if (0 == rank) {
            printf("  %12zu %14.1f %8s\n", bytes, slowest * 1e6, any_wrong ? "WRONG" : "ok");
        }
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return wrong_total ? 1 : 0;
}

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * ina_bench: an OSU-style collective benchmark (our own code). It is plain
 * MPI and prints the same table whichever coll component runs it, so one
 * script can run it through ina and through Open MPI's own collectives and
 * compare. It never asserts on time.
 *
 * usage: ina_bench [-b allreduce|reduce|allgather|reduce_scatter_block|bcast|barrier]
 *                  [-m MIN:MAX] [-i ITERS] [-w WARMUP] [-d int|float|double|int64|uint8]
 *                  [-o sum|prod|min|max|band|bor|bxor] [-p] (in place) [-c] (check)
 *                  [-s SEC] (sleep SEC seconds after each size: idle CPU measurements)
 *                  [-P] (persistent: MPI_*_init once per size, then MPI_Start and
 *                  MPI_Wait each iteration; Open MPI 4.1: its MPIX_*_init)
 *                  [-N] (non-blocking: MPI_I<coll>, then MPI_Wait)
 *
 * Columns: bytes (per rank's buffer; allgather and reduce_scatter_block:
 * each rank's block, one of the n blocks of the gathered or reduced vector),
 * min/avg/max latency in microseconds over ranks (each rank's average over
 * ITERS), algorithm bandwidth (bytes / avg time; allgather and
 * reduce_scatter_block: the n blocks' bytes / avg time) and bus bandwidth
 * (nccl-tests convention: allreduce x 2(n-1)/n, allgather and
 * reduce_scatter_block x (n-1)/n, reduce and bcast x 1), in MB/s.
 * With -c every iteration's result is verified (values are small integers, so
 * float sums are exact in any order) and a wrong value fails the run.
 * Where the ina component maps MPI_COMM_WORLD onto the hosts' grid (MPI_T:
 * coll_ina_grid_nodes), each size adds a line "# coll_ina grid of N nodes: K
 * of this size's C calls ran on its rings" (coll_ina_grid_calls, rank 0's).
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ina_example.h"

#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
#include <mpi-ext.h> /* MPIX_*_init: Open MPI 4.1's persistent collectives */
#define MPI_Allreduce_init MPIX_Allreduce_init
#define MPI_Reduce_init MPIX_Reduce_init
#define MPI_Allgather_init MPIX_Allgather_init
#define MPI_Reduce_scatter_block_init MPIX_Reduce_scatter_block_init
#define MPI_Bcast_init MPIX_Bcast_init
#define MPI_Barrier_init MPIX_Barrier_init
#endif

typedef enum {
    B_ALLREDUCE, B_REDUCE, B_ALLGATHER, B_REDUCE_SCATTER_BLOCK, B_BCAST, B_BARRIER
} bench_t;

typedef struct {
    const char *name;
    MPI_Datatype type;
    size_t size;
} dtype_t;

static const dtype_t dtypes[] = {
    {"int", MPI_INT, sizeof(int)},           {"float", MPI_FLOAT, sizeof(float)},
    {"double", MPI_DOUBLE, sizeof(double)},  {"int64", MPI_INT64_T, sizeof(int64_t)},
    {"uint8", MPI_UINT8_T, sizeof(uint8_t)},
};

typedef struct {
    const char *name;
    MPI_Op op;
} op_t;

static const op_t ops[] = {
    {"sum", MPI_SUM}, {"prod", MPI_PROD}, {"min", MPI_MIN}, {"max", MPI_MAX},
    {"band", MPI_BAND}, {"bor", MPI_BOR}, {"bxor", MPI_BXOR},
};

/* Input element i of rank r, as a small integer (exact in every type). */
static long input(int r, size_t i, const char *op)
{
    if (0 == strcmp(op, "prod")) {
        return (r + (long)i) % 2 + 1; /* 1 or 2: products stay exact for few ranks */
    }
    return (r * 7 + (long)(i % 13)) % 16;
}

static void store(void *buf, size_t i, const dtype_t *dt, long v)
{
    if (dt->type == MPI_INT) ((int *)buf)[i] = (int)v;
    else if (dt->type == MPI_FLOAT) ((float *)buf)[i] = (float)v;
    else if (dt->type == MPI_DOUBLE) ((double *)buf)[i] = (double)v;
    else if (dt->type == MPI_INT64_T) ((int64_t *)buf)[i] = v;
    else ((uint8_t *)buf)[i] = (uint8_t)v;
}

static long load(const void *buf, size_t i, const dtype_t *dt)
{
    if (dt->type == MPI_INT) return ((const int *)buf)[i];
    if (dt->type == MPI_FLOAT) return (long)((const float *)buf)[i];
    if (dt->type == MPI_DOUBLE) return (long)((const double *)buf)[i];
    if (dt->type == MPI_INT64_T) return (long)((const int64_t *)buf)[i];
    return ((const uint8_t *)buf)[i];
}

static long combine(const char *op, long a, long b, const dtype_t *dt)
{
    long v;
    if (0 == strcmp(op, "sum")) v = a + b;
    else if (0 == strcmp(op, "prod")) v = a * b;
    else if (0 == strcmp(op, "min")) v = b < a ? b : a;
    else if (0 == strcmp(op, "max")) v = b > a ? b : a;
    else if (0 == strcmp(op, "band")) v = a & b;
    else if (0 == strcmp(op, "bor")) v = a | b;
    else v = a ^ b;
    return dt->type == MPI_UINT8_T ? (long)(uint8_t)v : v;
}

/* The ina component's MPI_T counters on MPI_COMM_WORLD, read as
 * tests/mpi/ina_mpi_test.h does: -1 where it has not registered `name`. */
static long long ina_pvar(MPI_T_pvar_session session, const char *name, int cls)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_T_pvar_handle handle;
    unsigned long long value = 0;
    int index, n = 0, rc;
    if (MPI_SUCCESS != MPI_T_pvar_get_index(name, cls, &index) ||
        MPI_SUCCESS != MPI_T_pvar_handle_alloc(session, index, &comm, &handle, &n)) {
        return -1;
    }
    rc = MPI_T_pvar_read(session, handle, &value);
    MPI_T_pvar_handle_free(session, &handle);
    return MPI_SUCCESS == rc ? (long long)value : -1;
}

#define INA_BENCH_USAGE                                                                        \
    "usage: ina_bench [-b allreduce|reduce|allgather|reduce_scatter_block|bcast|barrier]\n"    \
    "                 [-m MIN:MAX] [-i ITERS] [-w WARMUP] [-d int|float|double|int64|uint8]\n" \
    "                 [-o sum|prod|min|max|band|bor|bxor] [-p] [-c] [-s SEC] [-P] [-N]\n"

static void usage(void)
{
    fputs(INA_BENCH_USAGE, stderr);
}

int main(int argc, char **argv)
{
    bench_t bench = B_ALLREDUCE;
    const char *bench_name = "allreduce";
    size_t min_bytes = 8, max_bytes = 4u << 20;
    int iters = 100, warmup = 10, in_place = 0, check = 0, pause = 0, persistent = 0, nonblocking = 0, c, rank,
        size, errors = 0;
    const dtype_t *dt = &dtypes[1];
    const op_t *op = &ops[0];

    ina_example_info(argc, argv, "ina_bench", INA_BENCH_USAGE);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((c = getopt(argc, argv, "b:m:i:w:d:o:pcs:PNh")) != -1) {
        switch (c) {
        case 'b':
            bench_name = optarg;
            if (0 == strcmp(optarg, "allreduce")) bench = B_ALLREDUCE;
            else if (0 == strcmp(optarg, "reduce")) bench = B_REDUCE;
            else if (0 == strcmp(optarg, "allgather")) bench = B_ALLGATHER;
            else if (0 == strcmp(optarg, "reduce_scatter_block")) bench = B_REDUCE_SCATTER_BLOCK;
            else if (0 == strcmp(optarg, "bcast")) bench = B_BCAST;
            else if (0 == strcmp(optarg, "barrier")) bench = B_BARRIER;
            else { if (0 == rank) usage(); MPI_Finalize(); return 2; }
            break;
        case 'm': {
            char *colon = strchr(optarg, ':');
            min_bytes = strtoull(optarg, NULL, 0);
            max_bytes = colon ? strtoull(colon + 1, NULL, 0) : min_bytes;
            break;
        }
        case 'i': iters = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 'd': {
            size_t k, n = sizeof(dtypes) / sizeof(dtypes[0]);
            for (k = 0; k < n && strcmp(dtypes[k].name, optarg); ++k) {}
            if (k == n) { if (0 == rank) usage(); MPI_Finalize(); return 2; }
            dt = &dtypes[k];
            break;
        }
        case 'o': {
            size_t k, n = sizeof(ops) / sizeof(ops[0]);
            for (k = 0; k < n && strcmp(ops[k].name, optarg); ++k) {}
            if (k == n) { if (0 == rank) usage(); MPI_Finalize(); return 2; }
            op = &ops[k];
            break;
        }
        case 'p': in_place = 1; break;
        case 'c': check = 1; break;
        case 's': pause = atoi(optarg); break;
        case 'P': persistent = 1; break;
        case 'N': nonblocking = 1; break;
        default: if (0 == rank) usage(); MPI_Finalize(); return 'h' == c ? 0 : 2;
        }
    }
    /* Which calls ina's host algorithm for the grid ran (none without it). */
    int provided;
    MPI_T_pvar_session session;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    long long grid_nodes = ina_pvar(session, "coll_ina_grid_nodes", MPI_T_PVAR_CLASS_SIZE);
    if (min_bytes < dt->size) min_bytes = dt->size;
    if (B_BARRIER == bench) min_bytes = max_bytes = 0;

    /* allgather: rbuf holds the n blocks; reduce_scatter_block: sbuf does (and
     * rbuf too in place, where the n blocks go in and this rank's comes out). */
    const int blocks = B_ALLGATHER == bench || B_REDUCE_SCATTER_BLOCK == bench;
    size_t max_count = max_bytes / dt->size;
    size_t one = max_count ? max_count : 1;
    size_t sbuf_elems = (B_REDUCE_SCATTER_BLOCK == bench ? (size_t)size : 1) * one;
    size_t rbuf_elems =
        (B_ALLGATHER == bench || (B_REDUCE_SCATTER_BLOCK == bench && in_place) ? (size_t)size : 1) *
        one;
    char *sbuf = calloc(sbuf_elems, dt->size);
    char *rbuf = calloc(rbuf_elems, dt->size);
    if (NULL == sbuf || NULL == rbuf) {
        fprintf(stderr, "ina_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (0 == rank) {
        printf("# ina_bench %s%s: %d ranks, %s %s%s, %d iterations (+%d warm-up)%s\n",
               bench_name,
               persistent ? " (persistent: started)" : nonblocking ? " (non-blocking: waited)" : "",
               size, dt->name, op->name,
               in_place ? ", in place" : "", iters, warmup, check ? ", results checked" : "");
        printf("# %12s %12s %12s %12s %14s %14s\n", "bytes", "min_usec", "avg_usec", "max_usec",
               "algbw_MB/s", "busbw_MB/s");
    }

    for (size_t bytes = min_bytes;; bytes = bytes ? bytes * 2 : 1) {
        size_t count = bytes / dt->size;
        /* Elements of each rank's input: n blocks for reduce_scatter_block. */
        size_t scount = (B_REDUCE_SCATTER_BLOCK == bench ? (size_t)size : 1) * count;
        int root = 0;
        double t_sum = 0.0;
        const void *src = in_place ? MPI_IN_PLACE : sbuf;
        MPI_Request preq = MPI_REQUEST_NULL;
        long long grid_before = -1;
        if (grid_nodes > 0) {
            grid_before = ina_pvar(session, "coll_ina_grid_calls", MPI_T_PVAR_CLASS_COUNTER);
        }
        if (persistent) {
            /* Planned once per size; the buffers' contents change per start. */
            switch (bench) {
            case B_ALLREDUCE:
                MPI_Allreduce_init(src, rbuf, (int)count, dt->type, op->op, MPI_COMM_WORLD,
                                   MPI_INFO_NULL, &preq);
                break;
            case B_REDUCE:
                MPI_Reduce_init(in_place && rank != root ? sbuf : src, rbuf, (int)count, dt->type,
                                op->op, root, MPI_COMM_WORLD, MPI_INFO_NULL, &preq);
                break;
            case B_ALLGATHER:
                MPI_Allgather_init(src, (int)count, dt->type, rbuf, (int)count, dt->type,
                                   MPI_COMM_WORLD, MPI_INFO_NULL, &preq);
                break;
            case B_REDUCE_SCATTER_BLOCK:
                MPI_Reduce_scatter_block_init(src, rbuf, (int)count, dt->type, op->op,
                                              MPI_COMM_WORLD, MPI_INFO_NULL, &preq);
                break;
            case B_BCAST:
                MPI_Bcast_init(sbuf, (int)count, dt->type, root, MPI_COMM_WORLD, MPI_INFO_NULL,
                               &preq);
                break;
            case B_BARRIER:
                MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &preq);
                break;
            }
        }
        for (int it = -warmup; it < iters; ++it) {
            for (size_t i = 0; i < scount; ++i) store(sbuf, i, dt, input(rank, i, op->name));
            if (in_place && (B_ALLREDUCE == bench || B_REDUCE == bench ||
                             B_REDUCE_SCATTER_BLOCK == bench)) {
                memcpy(rbuf, sbuf, scount * dt->size);
            }
            if (in_place && B_ALLGATHER == bench) {
                memcpy(rbuf + (size_t)rank * count * dt->size, sbuf, count * dt->size);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (persistent) {
                MPI_Start(&preq);
                MPI_Wait(&preq, MPI_STATUS_IGNORE);
            } else if (nonblocking) {
                MPI_Request req = MPI_REQUEST_NULL;
                switch (bench) {
                case B_ALLREDUCE:
                    MPI_Iallreduce(src, rbuf, (int)count, dt->type, op->op, MPI_COMM_WORLD, &req);
                    break;
                case B_REDUCE:
                    MPI_Ireduce(in_place && rank != root ? sbuf : src, rbuf, (int)count, dt->type,
                                op->op, root, MPI_COMM_WORLD, &req);
                    break;
                case B_ALLGATHER:
                    MPI_Iallgather(src, (int)count, dt->type, rbuf, (int)count, dt->type,
                                   MPI_COMM_WORLD, &req);
                    break;
                case B_REDUCE_SCATTER_BLOCK:
                    MPI_Ireduce_scatter_block(src, rbuf, (int)count, dt->type, op->op,
                                              MPI_COMM_WORLD, &req);
                    break;
                case B_BCAST:
                    MPI_Ibcast(sbuf, (int)count, dt->type, root, MPI_COMM_WORLD, &req);
                    break;
                case B_BARRIER:
                    MPI_Ibarrier(MPI_COMM_WORLD, &req);
                    break;
                }
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            } else switch (bench) {
            case B_ALLREDUCE:
                MPI_Allreduce(src, rbuf, (int)count, dt->type, op->op, MPI_COMM_WORLD);
                break;
            case B_REDUCE:
                MPI_Reduce(in_place && rank != root ? sbuf : src, rbuf, (int)count, dt->type,
                           op->op, root, MPI_COMM_WORLD);
                break;
            case B_ALLGATHER:
                MPI_Allgather(src, (int)count, dt->type, rbuf, (int)count, dt->type, MPI_COMM_WORLD);
                break;
            case B_REDUCE_SCATTER_BLOCK:
                MPI_Reduce_scatter_block(src, rbuf, (int)count, dt->type, op->op, MPI_COMM_WORLD);
                break;
            case B_BCAST:
                MPI_Bcast(sbuf, (int)count, dt->type, root, MPI_COMM_WORLD);
                break;
            case B_BARRIER:
                MPI_Barrier(MPI_COMM_WORLD);
                break;
            }
            double t = MPI_Wtime() - t0;
            if (it >= 0) t_sum += t;

            if (check && count > 0) {
                for (size_t i = 0; i < count; ++i) {
                    if (B_ALLREDUCE == bench || (B_REDUCE == bench && rank == root) ||
                        B_REDUCE_SCATTER_BLOCK == bench) {
                        /* reduce_scatter_block: this rank's block of the vectors */
                        size_t at =
                            (B_REDUCE_SCATTER_BLOCK == bench ? (size_t)rank * count : 0) + i;
                        long want = input(0, at, op->name);
                        for (int r = 1; r < size; ++r)
                            want = combine(op->name, want, input(r, at, op->name), dt);
                        errors += load(rbuf, i, dt) != want;
                    } else if (B_ALLGATHER == bench) {
                        for (int r = 0; r < size; ++r)
                            errors += load(rbuf, (size_t)r * count + i, dt) !=
                                      (dt->type == MPI_UINT8_T ? (long)(uint8_t)input(r, i, op->name)
                                                                : input(r, i, op->name));
                    } else if (B_BCAST == bench) {
                        errors += load(sbuf, i, dt) != input(root, i, op->name);
                    }
                }
            }
        }
        if (persistent) {
            MPI_Request_free(&preq);
        }
        if (grid_before >= 0 && 0 == rank) {
            long long after = ina_pvar(session, "coll_ina_grid_calls", MPI_T_PVAR_CLASS_COUNTER);
            printf("# coll_ina grid of %lld nodes: %lld of this size's %d calls ran on its rings\n",
                   grid_nodes, after - grid_before, iters + warmup);
        }
        double avg = t_sum / (iters > 0 ? iters : 1), tmin, tmax, tsum;
        MPI_Reduce(&avg, &tmin, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&avg, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&avg, &tsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            double tavg = tsum / size;
            double data = (double)count * dt->size * (blocks ? size : 1);
            double factor = B_ALLREDUCE == bench ? 2.0 * (size - 1) / size
                            : blocks ? (double)(size - 1) / size : 1.0;
            double algbw = tavg > 0 ? data / tavg / 1e6 : 0.0;
            printf("  %12zu %12.2f %12.2f %12.2f %14.1f %14.1f\n", count * dt->size, tmin * 1e6,
                   tavg * 1e6, tmax * 1e6, algbw, algbw * factor);
            fflush(stdout);
        }
        if (pause > 0) {
            if (0 == rank) {
                printf("# sleeping %d s\n", pause);
                fflush(stdout);
            }
            sleep((unsigned)pause); /* every rank idle between collectives */
        }
        if (bytes >= max_bytes) break;
    }

    int all_errors = 0;
    MPI_Allreduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (check && 0 == rank) {
        printf("# check: %s (%d wrong values)\n", all_errors ? "FAILED" : "ok", all_errors);
    }
    free(sbuf);
    free(rbuf);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize(); /* before MPI_Finalize tears the component down */
    MPI_Finalize();
    return all_errors ? 1 : 0;
}

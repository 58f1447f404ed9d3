/* Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * A model of data-parallel training for scheduling benchmarks
 * (bench/tenancy): K iterations of "compute for T ms" (a sleep: the hosts'
 * CPUs stay free for the other jobs), then MPI_Allreduce of S bytes
 * (int32 SUM, checked against the sum computed here on every rank). Plain
 * MPI: ina is chosen at mpirun time.
 *
 * usage: ina_train -s BYTES -t MS -k ITERS [-n NAME] [-w WARMUP]
 *
 * Rank 0 prints one line:
 *   train NAME iters K bytes S compute_ms T iter_ms MEAN allreduce_ms MEAN jct_s TOTAL
 *         offloaded N denied D check ok|FAILED
 * iter_ms: mean wall time of an iteration (compute + allreduce); jct_s: the
 * job's completion time from the first iteration to the last (after the
 * warm-up iterations, which are not counted); offloaded/denied: the MPI_T
 * counters coll_ina_offloaded_calls and coll_ina_fallback_denied of
 * MPI_COMM_WORLD over the measured iterations (0 without ina).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ina_example.h"

static int pvar_index(const char *name)
{
    int n = 0, i;
    MPI_T_pvar_get_num(&n);
    for (i = 0; i < n; ++i) {
        char nm[128], desc[512];
        int nl = sizeof(nm), dl = sizeof(desc), verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_SUCCESS == MPI_T_pvar_get_info(i, nm, &nl, &verb, &cls, &dt, &en, desc, &dl,
                                               &bind, &ro, &cont, &atomic) &&
            0 == strcmp(nm, name)) {
            return i;
        }
    }
    return -1;
}

/* A counter of MPI_COMM_WORLD, 0 if ina does not provide it. */
static unsigned long long read_counter(MPI_T_pvar_session s, const char *name)
{
    unsigned long long v = 0;
    MPI_T_pvar_handle h;
    MPI_Comm comm = MPI_COMM_WORLD;
    int count, idx = pvar_index(name);
    if (idx < 0 || MPI_SUCCESS != MPI_T_pvar_handle_alloc(s, idx, &comm, &h, &count)) {
        return 0;
    }
    MPI_T_pvar_read(s, h, &v);
    MPI_T_pvar_handle_free(s, &h);
    return v;
}

static double now_s(void)
{
    return MPI_Wtime();
}

static void sleep_ms(double ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t) (ms / 1000);
    ts.tv_nsec = (long) ((ms - ts.tv_sec * 1000.0) * 1e6);
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int main(int argc, char **argv)
{
    long bytes = 1 << 20, iters = 20, warmup = 2;
    double compute_ms = 100;
    const char *name = "job";
    int rank, size, c, provided, bad = 0, all_bad = 0;
    long count, i, it;
    int32_t *in, *out;
    double t0, t_ar = 0, t_end;
    unsigned long long off0, off1, den0, den1, vw0, vw1, dh0, dh1;
    MPI_T_pvar_session session;

    ina_example_info(argc, argv, "ina_train",
                     "usage: mpirun [...] ina_train -s BYTES -t MS -k ITERS [-n NAME] [-w WARMUP]\n");
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((c = getopt(argc, argv, "s:t:k:n:w:h")) != -1) {
        switch (c) {
        case 's': bytes = atol(optarg); break;
        case 't': compute_ms = atof(optarg); break;
        case 'k': iters = atol(optarg); break;
        case 'n': name = optarg; break;
        case 'w': warmup = atol(optarg); break;
        default:
            if (0 == rank) {
                fprintf(stderr, "usage: ina_train -s BYTES -t MS -k ITERS [-n NAME] [-w WARMUP]\n");
            }
            MPI_Finalize();
            return 2;
        }
    }
    count = bytes / 4 > 0 ? bytes / 4 : 1;
    in = malloc(sizeof(*in) * (size_t) count);
    out = malloc(sizeof(*out) * (size_t) count);
    if (NULL == in || NULL == out) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_T_pvar_session_create(&session);
    off0 = den0 = vw0 = dh0 = 0;
    t0 = 0;
    for (it = -warmup; it < iters; ++it) {
        double a;
        if (0 == it) {
            off0 = read_counter(session, "coll_ina_offloaded_calls");
            den0 = read_counter(session, "coll_ina_fallback_denied");
            vw0 = read_counter(session, "coll_ina_verdict_wait_ns");
            dh0 = read_counter(session, "coll_ina_denied_host_ns");
            t0 = now_s();
        }
        for (i = 0; i < count; ++i) {
            in[i] = (int32_t) ((rank + 1) * 7 + i % 1000 + it);
        }
        sleep_ms(compute_ms);
        a = now_s();
        MPI_Allreduce(in, out, (int) count, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
        if (it >= 0) {
            t_ar += now_s() - a;
        }
        for (i = 0; i < count; i += 1 + count / 64) {
            /* sum over r of (r+1)*7 + i%1000 + it */
            int64_t want = 7LL * size * (size + 1) / 2 + (int64_t) size * (i % 1000 + it);
            bad += out[i] != (int32_t) want;
        }
    }
    t_end = now_s();
    off1 = read_counter(session, "coll_ina_offloaded_calls");
    den1 = read_counter(session, "coll_ina_fallback_denied");
    vw1 = read_counter(session, "coll_ina_verdict_wait_ns");
    dh1 = read_counter(session, "coll_ina_denied_host_ns");
    MPI_T_pvar_session_free(&session);
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        double jct = t_end - t0;
        const unsigned long long denied = den1 - den0;
        /* Rank 0's mean wait for a verdict per call, and host algorithm per
         * denied call (0 without ina). */
        printf("train %s iters %ld bytes %ld compute_ms %.1f iter_ms %.2f allreduce_ms %.2f "
               "jct_s %.3f offloaded %llu denied %llu verdict_ms %.2f denied_host_ms %.2f "
               "check %s\n",
               name, iters, bytes, compute_ms, 1e3 * jct / (double) iters,
               1e3 * t_ar / (double) iters, jct, off1 - off0, denied,
               1e-6 * (double) (vw1 - vw0) / (double) iters,
               denied > 0 ? 1e-6 * (double) (dh1 - dh0) / (double) denied : 0.0,
               0 == all_bad ? "ok" : "FAILED");
    }
    free(in);
    free(out);
    MPI_T_finalize();
    MPI_Finalize();
    return 0 == all_bad ? 0 : 1;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// MPI_THREAD_MULTIPLE: two threads run collectives on two communicators at
// the same time. ina's decision (docs/ARCHITECTURE.md): a process initialised with
// MPI_THREAD_MULTIPLE does not offload (the engine serves one caller at a
// time), so every call must fall back, with correct results.
#include "ina_mpi_test.h"

#include <thread>

using namespace inatest;

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long checks = 1;
    INA_CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    Counters counters;
    MPI_Comm comms[2];
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);

    int bad[2] = {0, 0};
    auto work = [&](int t) {
        for (int it = 0; it < 50; ++it) {
            std::vector<long> in(1000), out(1000), ref(1000);
            fill_input(in, Op::Sum, rank, 100 * t + it);
            reference(ref, Op::Sum, size, 100 * t + it);
            MPI_Allreduce(in.data(), out.data(), 1000, MPI_LONG, MPI_SUM, comms[t]);
            bad[t] += out != ref;
        }
    };
    std::thread t1(work, 1);
    work(0);
    t1.join();
    checks += 4;
    INA_CHECK(bad[0] == 0 && bad[1] == 0, "wrong results: %d / %d", bad[0], bad[1]);
    for (int t = 0; t < 2; ++t) {
        long long off = counters.offloaded(comms[t]), fb = counters.fallbacks(comms[t]);
        INA_CHECK(off == 0, "comm %d offloaded %lld under THREAD_MULTIPLE", t, off);
        INA_CHECK(fb == 50, "comm %d fallbacks %lld, want 50", t, fb);
    }
    counters.close();
    MPI_Comm_free(&comms[0]);
    MPI_Comm_free(&comms[1]);
    int code = finish("test_threads", checks);
    MPI_Finalize();
    return code;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// MPI_Allreduce through ina: every predefined C integer and floating type ×
// every op MPI defines for it × counts (0, 1, odd, multi-block, large) ×
// in-place. Each result is checked element by element against the rank-order
// reference (bit-exact, floats included: the agent reduces in rank order),
// compared across ranks, and the MPI_T counters must show that every call was
// offloaded (a pass through the fallback does not count), by the node stage
// alone on a one-node communicator and by the agent otherwise.
//
// usage: test_allreduce [-l LARGE_BYTES] [-q] [-f]
//   -q: fewer counts (for large np); -f: the agent is unreachable on purpose,
//   so every call must fall back (and still be exact). A one-node job never
//   needs the agent, so -f wants the agent path: ranks on several (emulated,
//   coll_ina_test_node_size) nodes or coll_ina_node_stage 0.
#include "ina_mpi_test.h"

#include <unistd.h>

using namespace inatest;

namespace {

long checks = 0;
long expected_offloads = 0;

template <typename T>
void run_one(MPI_Comm comm, MPI_Datatype dt, const char *tname, const OpInfo &op, size_t count,
             bool in_place, uint64_t seed)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    std::vector<T> send(count), recv(count), ref(count);
    fill_input(send, op.op, rank, seed);
    reference(ref, op.op, comm, seed);

    int rc;
    if (in_place) {
        recv = send;
        rc = MPI_Allreduce(MPI_IN_PLACE, recv.data(), static_cast<int>(count), dt, op.mpi, comm);
    } else {
        rc = MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), dt, op.mpi, comm);
    }
    ++checks;
    INA_CHECK(rc == MPI_SUCCESS, "%s %s count=%zu rc=%d", tname, op.name, count, rc);
    if (count > 0) {
        ++expected_offloads;
    }

    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) {
        if (!same_bits(recv[i], ref[i])) {
            if (bad++ < 3) {
                INA_CHECK(false, "%s %s count=%zu inplace=%d [%zu] got %s want %s", tname, op.name,
                          count, in_place, i, show(recv[i]).c_str(), show(ref[i]).c_str());
            }
        }
    }
    ++checks;
    INA_CHECK(bad == 0, "%s %s count=%zu inplace=%d: %zu wrong elements", tname, op.name, count,
              in_place, bad);

    // Every rank holds the same bits (long double: its 10 significant bytes).
    uint64_t d = 0;
    for (size_t i = 0; i < count; ++i) {
        d = d * 31 + digest(&recv[i], std::is_same_v<T, long double> ? 10 : sizeof(T));
    }
    uint64_t dmin, dmax;
    MPI_Allreduce(&d, &dmin, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&d, &dmax, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    ++checks;
    INA_CHECK(dmin == dmax, "%s %s count=%zu: ranks disagree", tname, op.name, count);
}

template <typename T>
void sweep(MPI_Comm comm, MPI_Datatype dt, const char *tname, const std::vector<size_t> &counts,
           size_t large_bytes, uint64_t &seed)
{
    for (const OpInfo &op : all_ops()) {
        if (!op_defined<T>(op.op)) {
            continue;
        }
        for (size_t count : counts) {
            for (bool in_place : {false, true}) {
                run_one<T>(comm, dt, tname, op, count, in_place, ++seed);
            }
        }
    }
    if (large_bytes > 0) {
        // One large call per type, SUM (the op that matters for bandwidth).
        run_one<T>(comm, dt, tname, all_ops()[0], large_bytes / sizeof(T), false, ++seed);
    }
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    size_t large_bytes = 0;
    bool quick = false, expect_fallback = false;
    int c;
    while ((c = getopt(argc, argv, "l:qf")) != -1) {
        if (c == 'l') {
            large_bytes = std::strtoull(optarg, nullptr, 0);
        } else if (c == 'q') {
            quick = true;
        } else if (c == 'f') {
            expect_fallback = true;
        }
    }
    std::vector<size_t> counts = quick ? std::vector<size_t>{0, 1, 7, 20000}
                                       : std::vector<size_t>{0, 1, 2, 7, 1023, 20000, 70001};
    Counters counters;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    WorkLevel level(counters, comm);
    if (expect_fallback) {
        ++checks;
        INA_CHECK(!level.node_only_expected(),
                  "-f: this communicator is for the node stage, which needs no agent; run it "
                  "on several nodes (coll_ina_test_node_size) or with coll_ina_node_stage 0");
    }
    uint64_t seed = 1;

    sweep<signed char>(comm, MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", counts, 0, seed);
    sweep<unsigned char>(comm, MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", counts, 0, seed);
    sweep<short>(comm, MPI_SHORT, "MPI_SHORT", counts, 0, seed);
    sweep<unsigned short>(comm, MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", counts, 0, seed);
    sweep<int>(comm, MPI_INT, "MPI_INT", counts, large_bytes, seed);
    sweep<unsigned>(comm, MPI_UNSIGNED, "MPI_UNSIGNED", counts, 0, seed);
    sweep<long>(comm, MPI_LONG, "MPI_LONG", counts, 0, seed);
    sweep<unsigned long>(comm, MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", counts, 0, seed);
    sweep<long long>(comm, MPI_LONG_LONG, "MPI_LONG_LONG", counts, 0, seed);
    sweep<unsigned long long>(comm, MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", counts, 0, seed);
    sweep<int8_t>(comm, MPI_INT8_T, "MPI_INT8_T", counts, 0, seed);
    sweep<uint8_t>(comm, MPI_UINT8_T, "MPI_UINT8_T", counts, 0, seed);
    sweep<int16_t>(comm, MPI_INT16_T, "MPI_INT16_T", counts, 0, seed);
    sweep<uint16_t>(comm, MPI_UINT16_T, "MPI_UINT16_T", counts, 0, seed);
    sweep<int32_t>(comm, MPI_INT32_T, "MPI_INT32_T", counts, 0, seed);
    sweep<uint32_t>(comm, MPI_UINT32_T, "MPI_UINT32_T", counts, 0, seed);
    sweep<int64_t>(comm, MPI_INT64_T, "MPI_INT64_T", counts, 0, seed);
    sweep<uint64_t>(comm, MPI_UINT64_T, "MPI_UINT64_T", counts, 0, seed);
    sweep<float>(comm, MPI_FLOAT, "MPI_FLOAT", counts, large_bytes, seed);
    sweep<double>(comm, MPI_DOUBLE, "MPI_DOUBLE", counts, large_bytes, seed);
    sweep<long double>(comm, MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", counts, 0, seed);

    long long fb = counters.fallbacks(comm);
    long want_off = expect_fallback ? 0 : expected_offloads;
    long want_fb = expect_fallback ? expected_offloads : 0;
    checks += level.expect(want_off, "every MPI_Allreduce of the sweep");
    ++checks;
    INA_CHECK(fb == want_fb, "fallback calls: counter %lld, expected %ld", fb, want_fb);

    MPI_Comm_free(&comm);
    counters.close();
    int code = finish("test_allreduce", checks);
    MPI_Finalize();
    return code;
}

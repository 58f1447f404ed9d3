// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The NBX pattern (Hoefler et al.): synchronous sends to a few peers, then
// MPI_Ibarrier once they completed, while receiving whatever arrives. Legal
// MPI that deadlocks if the non-blocking barrier does not progress for real,
// so it proves `--mca coll ina` alone gives non-blocking collectives a true
// implementation. Also checks MPI_Iallreduce and a blocking sweep of the
// collectives ina does not offload.
#include "ina_mpi_test.h"

using namespace inatest;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long checks = 0;

    for (int round = 0; round < 20; ++round) {
        // Each rank sends to (rank+1) and (rank+3) mod size, values known to all.
        int dests[2] = {(rank + 1) % size, (rank + 3) % size};
        int payload[2] = {rank * 100 + round, rank * 100 + round + 1};
        MPI_Request sreq[2];
        for (int j = 0; j < 2; ++j) MPI_Issend(&payload[j], 1, MPI_INT, dests[j], 100 + round, MPI_COMM_WORLD, &sreq[j]);
        long received_sum = 0;
        int received = 0;
        MPI_Request barrier = MPI_REQUEST_NULL;
        bool done = false;
        while (!done) {
            int flag;
            MPI_Status st;
            MPI_Iprobe(MPI_ANY_SOURCE, 100 + round, MPI_COMM_WORLD, &flag, &st);
            if (flag) {
                int v;
                MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, 100 + round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                received_sum += v;
                ++received;
            }
            if (barrier == MPI_REQUEST_NULL) {
                int all;
                MPI_Testall(2, sreq, &all, MPI_STATUSES_IGNORE);
                if (all) MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
            } else {
                int bflag;
                MPI_Test(&barrier, &bflag, MPI_STATUS_IGNORE);
                done = bflag != 0;
            }
        }
        // Who sent to me: s with (s+1)%size==rank (its payload[0]) or (s+3)%size==rank (payload[1]).
        long want = 0;
        int want_n = 0;
        for (int s = 0; s < size; ++s) {
            if ((s + 1) % size == rank) { want += s * 100 + round; ++want_n; }
            if ((s + 3) % size == rank) { want += s * 100 + round + 1; ++want_n; }
        }
        ++checks;
        INA_CHECK(received == want_n && received_sum == want, "round %d: got %d msgs sum %ld, want %d sum %ld",
                  round, received, received_sum, want_n, want);
    }

    // Several outstanding non-blocking collectives, completed together.
    int a = rank, b = 2 * rank, ra = -1, rb = -1, bc = rank == 0 ? 4242 : 0;
    MPI_Request reqs[3];
    MPI_Iallreduce(&a, &ra, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[0]);
    MPI_Iallreduce(&b, &rb, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &reqs[1]);
    MPI_Ibcast(&bc, 1, MPI_INT, 0, MPI_COMM_WORLD, &reqs[2]);
    MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE);
    checks += 3;
    INA_CHECK(ra == size * (size - 1) / 2, "iallreduce sum %d", ra);
    INA_CHECK(rb == 2 * (size - 1), "iallreduce max %d", rb);
    INA_CHECK(bc == 4242, "ibcast %d", bc);

    // Blocking collectives ina leaves to Open MPI.
    std::vector<int> all(size), gat(size), a2a_in(size), a2a_out(size);
    int mine = rank * rank;
    MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Gather(&mine, 1, MPI_INT, gat.data(), 1, MPI_INT, size - 1, MPI_COMM_WORLD);
    for (int r = 0; r < size; ++r) a2a_in[r] = rank * size + r;
    MPI_Alltoall(a2a_in.data(), 1, MPI_INT, a2a_out.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int scan = 0, red = 0;
    MPI_Scan(&rank, &scan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(&rank, &red, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < size; ++r) {
        checks += 2;
        INA_CHECK(all[r] == r * r, "allgather[%d]=%d", r, all[r]);
        INA_CHECK(a2a_out[r] == r * size + rank, "alltoall[%d]=%d", r, a2a_out[r]);
        if (rank == size - 1) { ++checks; INA_CHECK(gat[r] == r * r, "gather[%d]=%d", r, gat[r]); }
    }
    checks += 1;
    INA_CHECK(scan == rank * (rank + 1) / 2, "scan %d", scan);
    if (rank == 0) { ++checks; INA_CHECK(red == size * (size - 1) / 2, "reduce %d", red); }

    int code = finish("test_nbx", checks);
    MPI_Finalize();
    return code;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Two applications sharing one agent (docs/ARCHITECTURE.md, "Sharing an
// agent among jobs"). One mpirun plays both: the first half of the ranks
// sets coll_ina_tenant=A before MPI_Init, the second half B, and each half
// works on its own communicator (a job of its tenant at the agent).
// Synchronisation between the halves is point to point only (a collective
// of the world would be a third job; the scenario keeps MPI_Comm_split's
// small collectives on the host with coll_ina_min_bytes).
//
// Round "held": rank 0 posts an MPI_Iallreduce on A's communicator; the
// other A ranks post theirs only later, so the call stays open at the agent
// (granted at its first block: known when rank 0's post returns). Then B
// calls MPI_Allreduce: another tenant's call holds the agent, so it is
// denied (reason busy) on every B rank alike and runs on the host, exact.
// Then A completes, exact and offloaded.
// (Under exclusive, B's first call is already denied: A's first took the
// agent.) Under partition the two calls run side by side instead, each
// on a lease of half the pool (the agent's leased_segs, checked by the
// scenario, tells the lease sizes). Round "after": B calls again with
// nothing open.
//   -p tdm:        offloaded (nothing held; A's next call is not predictable
//                  after one call);
//   -p exclusive:  denied busy again: A still holds the agent (the scenario
//                  sets --exclusive-idle-ms far beyond the test's length);
//   -p partition:  offloaded, on half the pool.
// Every rank checks its results against the sum computed here and its
// communicator's MPI_T counters (offloaded, denied by reason); the agent's
// counters are checked by the scenario. With -h N, the host costs of the
// denied calls (HOST_COST, coll_ina_host_cost_hint): B's rank 0, member 0
// of B's job, sent N (one per denied blocking call, 0 to an agent of an
// older protocol), every other rank none, and no rank dropped one. With
// -t A,B, the whole calls' times (CALL_TIME, coll_ina_call_time_min_bytes):
// A's rank 0 sent A (one per blocking call of A's that reached the agent),
// B's rank 0 sent B, every other rank none, and none was dropped. With
// -g N, every B rank ran N calls on the hosts' grid (coll_ina_grid_calls:
// B's hosts a group of the topology's grid, coll_ina_host grid), every A
// rank none.
//
// usage: test_tenancy -p tdm|exclusive|partition [-h N] [-t A,B] [-g N]
#include "ina_mpi_test.h"

#include <cstdlib>
#include <cstring>
#include <string>

using namespace inatest;

namespace {

long checks = 0;
constexpr int kCount = 4096; // 32 KiB of int64: a few blocks

std::vector<int64_t> input(int rank, int64_t salt)
{
    std::vector<int64_t> v(kCount);
    for (int i = 0; i < kCount; ++i) {
        v[static_cast<size_t>(i)] = (rank + 1) * 1000003LL + i * 7LL + salt;
    }
    return v;
}

// The sum over the ranks of `comm` (world ranks first..first+n-1).
void check_sum(const std::vector<int64_t> &got, int first, int n, int64_t salt,
               const char *what)
{
    size_t bad = 0;
    for (int i = 0; i < kCount; ++i) {
        int64_t want = 0;
        for (int r = first; r < first + n; ++r) {
            want += input(r, salt)[static_cast<size_t>(i)];
        }
        bad += got[static_cast<size_t>(i)] != want;
    }
    ++checks;
    INA_CHECK(bad == 0, "%s: %zu of %d elements wrong", what, bad, kCount);
}

struct Snapshot {
    long long offloaded, denied, busy, outscored;
};

Snapshot snap(Counters &c, MPI_Comm comm)
{
    return {c.offloaded(comm), c.read("coll_ina_fallback_denied", comm),
            c.read("coll_ina_denied_busy", comm), c.read("coll_ina_denied_outscored", comm)};
}

void expect(Counters &c, MPI_Comm comm, const Snapshot &before, long long off, long long busy,
            const char *what)
{
    const Snapshot now = snap(c, comm);
    checks += 4;
    INA_CHECK(now.offloaded - before.offloaded == off, "%s: offloaded +%lld, want +%lld", what,
              now.offloaded - before.offloaded, off);
    INA_CHECK(now.denied - before.denied == busy, "%s: denied +%lld, want +%lld", what,
              now.denied - before.denied, busy);
    INA_CHECK(now.busy - before.busy == busy, "%s: denied busy +%lld, want +%lld", what,
              now.busy - before.busy, busy);
    INA_CHECK(now.outscored == before.outscored, "%s: denied outscored +%lld", what,
              now.outscored - before.outscored);
}

} // namespace

int main(int argc, char **argv)
{
    std::string policy;
    long long host_costs = -1; // -h: what B's rank 0 sent (-1: not checked)
    long long times_a = -1, times_b = -1; // -t: CALL_TIMEs A's and B's rank 0 sent
    long long grid_b = -1; // -g: calls each B rank ran on the grid's rings
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "-p") == 0) {
            policy = argv[i + 1];
        } else if (std::strcmp(argv[i], "-g") == 0) {
            grid_b = std::atoll(argv[i + 1]);
        } else if (std::strcmp(argv[i], "-h") == 0) {
            host_costs = std::atoll(argv[i + 1]);
        } else if (std::strcmp(argv[i], "-t") == 0 &&
                   std::sscanf(argv[i + 1], "%lld,%lld", &times_a, &times_b) != 2) {
            times_a = times_b = -1;
        }
    }
    // The tenant before MPI_Init: the launcher tells each process its rank.
    const char *wr = std::getenv("OMPI_COMM_WORLD_RANK");
    const char *ws = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (wr != nullptr && ws != nullptr) {
        setenv("OMPI_MCA_coll_ina_tenant", std::atoi(wr) < std::atoi(ws) / 2 ? "A" : "B", 1);
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if ((policy != "tdm" && policy != "exclusive" && policy != "partition") || size < 4 ||
        size % 2 != 0) {
        if (rank == 0) {
            std::fprintf(stderr,
                         "usage: test_tenancy -p tdm|exclusive|partition (an even np >= 4)\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int half = size / 2;
    const bool in_a = rank < half;
    MPI_Comm mine;
    MPI_Comm_split(MPI_COMM_WORLD, in_a ? 0 : 1, rank, &mine);
    Counters c;

    // Each side's first call, A's first, then B's, so that neither is open
    // while the other asks: A's is offloaded; B's too under tdm, while
    // under exclusive A's first offload took the agent.
    const Snapshot s0 = snap(c, mine);
    for (int side = 0; side < 2; ++side) {
        if (in_a == (side == 0)) {
            auto in = input(rank, 1), out = in;
            MPI_Allreduce(in.data(), out.data(), kCount, MPI_INT64_T, MPI_SUM, mine);
            check_sum(out, in_a ? 0 : half, half, 1, "first call");
        }
        signal_ranks(rank, side == 0 ? 0 : half, half, side == 0 ? half : 0, half, 10 + side);
    }
    const bool b_held_off = !in_a && policy == "exclusive";
    expect(c, mine, s0, b_held_off ? 0 : 1, b_held_off ? 1 : 0, "first call");

    // Round "held".
    const Snapshot s1 = snap(c, mine);
    auto ain = input(rank, 2), aout = ain;
    MPI_Request held = MPI_REQUEST_NULL;
    if (rank == 0) {
        MPI_Iallreduce(ain.data(), aout.data(), kCount, MPI_INT64_T, MPI_SUM, mine, &held);
    }
    signal_ranks(rank, 0, 1, half, half, 20); // A's call is granted and open
    if (!in_a) {
        auto in = input(rank, 3), out = in;
        ++checks;
        INA_CHECK(MPI_Allreduce(in.data(), out.data(), kCount, MPI_INT64_T, MPI_SUM, mine) ==
                      MPI_SUCCESS,
                  "held: B's MPI_Allreduce failed");
        if (policy == "partition") {
            check_sum(out, half, half, 3, "held: B's call, beside A's");
            expect(c, mine, s1, 1, 0, "held: B's call (partition: its share of the pool)");
        } else {
            check_sum(out, half, half, 3, "held: B's call, on the host");
            expect(c, mine, s1, 0, 1, "held: B's call");
        }
    }
    signal_ranks(rank, half, half, 1, half - 1, 21); // B is done: A's other ranks join
    if (in_a) {
        if (rank != 0) {
            MPI_Iallreduce(ain.data(), aout.data(), kCount, MPI_INT64_T, MPI_SUM, mine, &held);
        }
        MPI_Wait(&held, MPI_STATUS_IGNORE);
        check_sum(aout, 0, half, 2, "held: A's call");
        expect(c, mine, s1, 1, 0, "held: A's call");
    }
    signal_ranks(rank, 0, half, half, half, 22); // A's call is over

    // Round "after".
    if (!in_a) {
        const Snapshot s2 = snap(c, mine);
        auto in = input(rank, 4), out = in;
        MPI_Allreduce(in.data(), out.data(), kCount, MPI_INT64_T, MPI_SUM, mine);
        check_sum(out, half, half, 4, "after: B's call");
        if (policy != "exclusive") {
            expect(c, mine, s2, 1, 0, "after: B's call (nothing held)");
        } else {
            expect(c, mine, s2, 0, 1, "after: B's call (exclusive: A holds the agent)");
        }
    }
    // A frees its communicator only now: the holder's last job gone frees
    // the agent at once (exclusive), which B's round "after" must not see.
    signal_ranks(rank, half, half, 0, half, 23);
    if (host_costs >= 0) {
        const long long want = rank == half ? host_costs : 0;
        const long long sent = c.read("coll_ina_host_costs_sent", mine);
        const long long dropped = c.read("coll_ina_host_costs_dropped", mine);
        checks += 2;
        INA_CHECK(sent == want, "host costs sent: %lld, want %lld", sent, want);
        INA_CHECK(dropped == 0, "host costs dropped: %lld", dropped);
    }
    if (times_a >= 0) {
        const long long want = rank == 0 ? times_a : rank == half ? times_b : 0;
        const long long sent = c.read("coll_ina_call_times_sent", mine);
        const long long dropped = c.read("coll_ina_call_times_dropped", mine);
        checks += 2;
        INA_CHECK(sent == want, "call times sent: %lld, want %lld", sent, want);
        INA_CHECK(dropped == 0, "call times dropped: %lld", dropped);
    }
    if (grid_b >= 0) {
        const long long want = in_a ? 0 : grid_b;
        const long long ran = c.read("coll_ina_grid_calls", mine);
        ++checks;
        INA_CHECK(ran == want, "calls on the grid's rings: %lld, want %lld", ran, want);
    }
    MPI_Comm_free(&mine);
    c.close();
    const int rc = finish("test_tenancy", checks);
    MPI_Finalize();
    return rc;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A job striped over two agents (coll_ina_agent=A0,A1), one of which
// denies a call: the call is offloaded only if every agent with a part of
// it granted, so every rank falls back alike, the results are right, and
// calls are offloaded again afterwards (docs/HIERARCHY.md, "Striping").
//
// The denial is made deterministic with the agents' pools (the scenario
// starts agent 0 with two leases of Segs and agent 1 with one, and sets
// coll_ina_window to two leases: each agent gets half of it): calls of another communicator, posted by
// ranks 0..P-2 and not yet by the last rank, hold their leases while the
// world's call asks for its own.
//   round "agent 1 denies": one call of 8 blocks holds half of agent 0's
//     pool and all of agent 1's; the world's MPI_Allreduce (8 blocks) is
//     granted by agent 0, denied by agent 1;
//   round "agent 0 denies": two calls of one block (agent 0 only) hold all
//     of agent 0's pool; the world's MPI_Iallreduce is denied by agent 0,
//     granted by agent 1.
// The last rank waits (a message from every other rank) until those calls
// were granted before it calls the world's collective, and posts its own
// part of them after it: they complete then.
//
// usage: test_stripe [-k PID]
//   -k PID: instead, one of the agents (process PID) is lost in the middle
//   of a call: rank 0 kills it once the other ranks' MPI_Iallreduce was
//   granted, before its own part. The call must end, with the component's
//   explanation (an offloaded collective failed while in progress) and
//   MPI_ERR_OTHER, which MPI_ERRORS_ARE_FATAL turns into the job's end: no
//   hang.
#include "ina_mpi_test.h"

#include <unistd.h>

#include <csignal>

using namespace inatest;

namespace {

long checks = 0;

constexpr int kBlockBytes = 8192; // small calls (<= 8 KiB) are one block
constexpr int kOneBlock = kBlockBytes / 8;
constexpr int kEightBlocks = 8 * kOneBlock; // 64 KiB: 8 blocks of 8 KiB

std::vector<int64_t> input(int rank, int count, int64_t salt)
{
    std::vector<int64_t> v(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
        v[static_cast<size_t>(i)] = (rank + 1) * 1000003LL + i * 7LL + salt;
    }
    return v;
}

std::vector<int64_t> sum_of_all(int size, int count, int64_t salt)
{
    std::vector<int64_t> s(static_cast<size_t>(count), 0);
    for (int r = 0; r < size; ++r) {
        const auto v = input(r, count, salt);
        for (int i = 0; i < count; ++i) {
            s[static_cast<size_t>(i)] += v[static_cast<size_t>(i)];
        }
    }
    return s;
}

void check_sum(const std::vector<int64_t> &got, int size, int64_t salt, const char *what)
{
    const auto want = sum_of_all(size, static_cast<int>(got.size()), salt);
    size_t bad = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        bad += got[i] != want[i];
    }
    ++checks;
    INA_CHECK(bad == 0, "%s: %zu of %zu elements wrong", what, bad, want.size());
}

struct Snapshot {
    long long offloaded, denied, fallbacks, no_resources, host_ns;
};

Snapshot snap(Counters &c, MPI_Comm comm)
{
    return {c.offloaded(comm), c.read("coll_ina_fallback_denied", comm), c.fallbacks(comm),
            c.read("coll_ina_denied_no_resources", comm), c.read("coll_ina_denied_host_ns", comm)};
}

// The calls since `before` were `off` offloaded and `denied` denied ones.
void expect(Counters &c, MPI_Comm comm, const Snapshot &before, long long off,
            long long denied, const char *what)
{
    const Snapshot now = snap(c, comm);
    checks += 3;
    INA_CHECK(now.offloaded - before.offloaded == off, "%s: offloaded +%lld, want +%lld", what,
              now.offloaded - before.offloaded, off);
    INA_CHECK(now.denied - before.denied == denied, "%s: denied +%lld, want +%lld", what,
              now.denied - before.denied, denied);
    INA_CHECK(now.fallbacks - before.fallbacks == denied, "%s: fallbacks +%lld, want +%lld",
              what, now.fallbacks - before.fallbacks, denied);
    // The reason travels with the DENY: the pool (the holding calls are of
    // this application, which does not compete with itself).
    checks += 2;
    INA_CHECK(now.no_resources - before.no_resources == denied,
              "%s: denied for no resources +%lld, want +%lld", what,
              now.no_resources - before.no_resources, denied);
    INA_CHECK((now.host_ns > before.host_ns) == (denied > 0),
              "%s: host time of denied calls %lld -> %lld", what, before.host_ns, now.host_ns);
}

// Ranks but the last: tell the last rank that the holding calls are granted.
// The last rank: wait for every other rank's word.
void hold_point(int rank, int size)
{
    int token = 1;
    if (rank == size - 1) {
        for (int r = 0; r < size - 1; ++r) {
            MPI_Recv(&token, 1, MPI_INT, r, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else {
        MPI_Send(&token, 1, MPI_INT, size - 1, 77, MPI_COMM_WORLD);
    }
}

// The world's call is denied by agent 1: another communicator's 8-block
// call holds agent 1's whole pool.
void round_agent1_denies(Counters &c, MPI_Comm other, int rank, int size, int64_t salt)
{
    const bool last = rank == size - 1;
    auto hin = input(rank, kEightBlocks, salt), hout = hin;
    auto win = input(rank, kEightBlocks, salt + 1), wout = win;
    MPI_Request hold = MPI_REQUEST_NULL;
    const Snapshot other0 = snap(c, other), world0 = snap(c, MPI_COMM_WORLD);

    if (!last) {
        MPI_Iallreduce(hin.data(), hout.data(), kEightBlocks, MPI_INT64_T, MPI_SUM, other, &hold);
    }
    hold_point(rank, size);
    ++checks;
    INA_CHECK(MPI_Allreduce(win.data(), wout.data(), kEightBlocks, MPI_INT64_T, MPI_SUM,
                            MPI_COMM_WORLD) == MPI_SUCCESS,
              "agent 1 denies: MPI_Allreduce failed");
    if (last) {
        MPI_Iallreduce(hin.data(), hout.data(), kEightBlocks, MPI_INT64_T, MPI_SUM, other, &hold);
    }
    MPI_Wait(&hold, MPI_STATUS_IGNORE);
    check_sum(wout, size, salt + 1, "agent 1 denies: the world's MPI_Allreduce");
    check_sum(hout, size, salt, "agent 1 denies: the holding MPI_Iallreduce");
    expect(c, MPI_COMM_WORLD, world0, 0, 1, "agent 1 denies: the world's call");
    expect(c, other, other0, 1, 0, "agent 1 denies: the holding call");
}

// The world's non-blocking call is denied by agent 0: two one-block calls
// of another communicator hold agent 0's whole pool.
void round_agent0_denies(Counters &c, MPI_Comm other, int rank, int size, int64_t salt)
{
    const bool last = rank == size - 1;
    auto h1 = input(rank, kOneBlock, salt), h2 = input(rank, kOneBlock, salt + 1);
    auto w = input(rank, kEightBlocks, salt + 2);
    std::vector<int64_t> o1(h1.size()), o2(h2.size()), wo(w.size());
    MPI_Request reqs[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    const Snapshot other0 = snap(c, other), world0 = snap(c, MPI_COMM_WORLD);

    auto post_holds = [&] {
        MPI_Iallreduce(h1.data(), o1.data(), kOneBlock, MPI_INT64_T, MPI_SUM, other, &reqs[0]);
        MPI_Iallreduce(h2.data(), o2.data(), kOneBlock, MPI_INT64_T, MPI_SUM, other, &reqs[1]);
    };
    if (!last) {
        post_holds();
    }
    hold_point(rank, size);
    ++checks;
    INA_CHECK(MPI_Iallreduce(w.data(), wo.data(), kEightBlocks, MPI_INT64_T, MPI_SUM,
                             MPI_COMM_WORLD, &reqs[2]) == MPI_SUCCESS,
              "agent 0 denies: MPI_Iallreduce failed");
    if (last) {
        post_holds();
    }
    ++checks;
    INA_CHECK(MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS,
              "agent 0 denies: MPI_Waitall failed");
    check_sum(wo, size, salt + 2, "agent 0 denies: the world's MPI_Iallreduce");
    check_sum(o1, size, salt, "agent 0 denies: the first holding call");
    check_sum(o2, size, salt + 1, "agent 0 denies: the second holding call");
    expect(c, MPI_COMM_WORLD, world0, 0, 1, "agent 0 denies: the world's call");
    expect(c, other, other0, 2, 0, "agent 0 denies: the holding calls");
}

// Nobody holds anything: the world's calls are offloaded, one block or many.
void round_free(Counters &c, int rank, int size, int64_t salt)
{
    const Snapshot world0 = snap(c, MPI_COMM_WORLD);
    for (int count : {kOneBlock, kEightBlocks, 3 * kEightBlocks + 5}) {
        auto in = input(rank, count, salt + count), out = in;
        ++checks;
        INA_CHECK(MPI_Allreduce(in.data(), out.data(), count, MPI_INT64_T, MPI_SUM,
                                MPI_COMM_WORLD) == MPI_SUCCESS,
                  "free: MPI_Allreduce failed");
        check_sum(out, size, salt + count, "free: MPI_Allreduce");
    }
    expect(c, MPI_COMM_WORLD, world0, 3, 0, "free: the world's calls");
}

// One agent lost mid-call (-k): does not return when the job ends as it
// must. Ranks 1.. post the call (granted: known when the post returns) and
// tell rank 0, which kills the agent before it posts its own part: the
// call cannot have completed at that agent.
void lose_an_agent(pid_t agent, int rank, int size)
{
    const int count = 1 << 20; // 8 MiB of int64
    auto in = input(rank, count, 5), out = in;
    MPI_Request req;
    int token = 1;
    if (rank != 0) {
        MPI_Iallreduce(in.data(), out.data(), count, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Send(&token, 1, MPI_INT, 0, 78, MPI_COMM_WORLD);
    } else {
        for (int r = 1; r < size; ++r) {
            MPI_Recv(&token, 1, MPI_INT, r, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        std::printf("test_stripe: rank 0 kills agent %d (SIGKILL) in the middle of a call\n",
                    static_cast<int>(agent));
        std::fflush(stdout);
        kill(agent, SIGKILL);
        MPI_Iallreduce(in.data(), out.data(), count, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD, &req);
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    ++checks;
    INA_CHECK(false, "lost agent: the call returned MPI_SUCCESS on rank %d", rank);
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc == 3 && std::strcmp(argv[1], "-k") == 0) {
        lose_an_agent(static_cast<pid_t>(std::atoi(argv[2])), rank, size);
        const int rc = finish("test_stripe -k", checks);
        MPI_Finalize();
        return rc;
    }
    {
        Counters c;
        MPI_Comm other;
        MPI_Comm_dup(MPI_COMM_WORLD, &other);
        checks += 2;
        INA_CHECK(c.job_agents(MPI_COMM_WORLD) == 2, "coll_ina_job_agents of the world: %lld",
                  c.job_agents(MPI_COMM_WORLD));
        INA_CHECK(c.job_agents(other) == 2, "coll_ina_job_agents of a duplicate: %lld",
                  c.job_agents(other));
        ++checks;
        INA_CHECK(Counters::cvar("coll_ina_window") == 16,
                  "the scenario must set coll_ina_window to 16 (8 per agent: a lease of the "
                  "agents' pools)");
        for (int round = 0; round < 2; ++round) {
            round_free(c, rank, size, 100 * round);
            round_agent1_denies(c, other, rank, size, 100 * round + 10);
            round_agent0_denies(c, other, rank, size, 100 * round + 20);
        }
        round_free(c, rank, size, 1000);
        MPI_Comm_free(&other);
        c.close();
    }
    const int rc = finish("test_stripe", checks);
    MPI_Finalize();
    return rc;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// MPI Sessions (MPI-4, Open MPI 5): the program never calls MPI_Init, so
// there is no MPI_COMM_WORLD. Two sessions are opened side by side, each
// makes a communicator from the process set "mpi://WORLD"
// (MPI_Group_from_session_pset, MPI_Comm_create_from_group), and the
// collectives ina offloads run on both in turn, every result checked
// against a reference computed here and every call counted as offloaded at
// the level the layout calls for (node stage on one node, else the agent:
// the job's secret and the agent's address then come without WORLD). The
// first session is finalized while the second goes on; then, with every
// session finalized, a third one is opened and used (MPI lets a process
// start again once all its sessions ended).
//   -r ROUNDS   rounds of calls on each communicator (default 20)
#include "ina_mpi_test.h"

#include <unistd.h>

#include <cstdlib>
#include <numeric>

using namespace inatest;

namespace {

long checks = 0;
int rounds = 20;

// One session and its communicator over every process of the job.
struct SessionComm {
    MPI_Session session = MPI_SESSION_NULL;
    MPI_Comm comm = MPI_COMM_NULL;
    int rank = -1, size = 0;

    explicit SessionComm(const char *tag)
    {
        // A step that failed leaves nothing to go on with: say so and end
        // (the launcher ends the others), never a crash in the next step.
        const auto must = [](int rc, const char *what) {
            INA_CHECK(rc == MPI_SUCCESS, "%s: %d", what, rc);
            if (rc != MPI_SUCCESS) {
                std::exit(1);
            }
        };
        must(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session), "MPI_Session_init");
        MPI_Group group;
        must(MPI_Group_from_session_pset(session, "mpi://WORLD", &group),
             "MPI_Group_from_session_pset");
        must(MPI_Comm_create_from_group(group, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm),
             "MPI_Comm_create_from_group");
        MPI_Group_free(&group);
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        check_rank() = rank;
    }
    ~SessionComm() { end(); }
    SessionComm(const SessionComm &) = delete;
    SessionComm &operator=(const SessionComm &) = delete;

    void end()
    {
        if (comm != MPI_COMM_NULL) {
            MPI_Comm_free(&comm);
        }
        if (session != MPI_SESSION_NULL) {
            int rc = MPI_Session_finalize(&session);
            INA_CHECK(rc == MPI_SUCCESS, "MPI_Session_finalize: %d", rc);
        }
    }
};

// Input of `rank` at index i in round `round`: integers small enough that
// every sum below is exact in int and in double, in any order.
long long value(int rank, size_t i, int round)
{
    return static_cast<long long>((mix(static_cast<uint64_t>(rank) * 1000003u + i * 31u +
                                       static_cast<uint64_t>(round)) %
                                   2001u)) -
           1000;
}

// One round of every offloaded kind on `s`; returns the calls made.
long long round_of_calls(SessionComm &s, int round)
{
    const size_t n = 1000 + static_cast<size_t>(round % 7) * 17;
    std::vector<int> in(n), out(n), want(n, 0);
    std::vector<double> din(n), dout(n), dwant(n, 0.0);
    for (size_t i = 0; i < n; ++i) {
        in[i] = static_cast<int>(value(s.rank, i, round));
        din[i] = static_cast<double>(value(s.rank, i, round + 1));
        for (int r = 0; r < s.size; ++r) {
            want[i] += static_cast<int>(value(r, i, round));
            dwant[i] += static_cast<double>(value(r, i, round + 1));
        }
    }
    size_t bad = 0;
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_INT, MPI_SUM, s.comm);
    for (size_t i = 0; i < n; ++i) bad += out[i] != want[i];
    MPI_Allreduce(MPI_IN_PLACE, din.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, s.comm);
    for (size_t i = 0; i < n; ++i) bad += !same_bits(din[i], dwant[i]);
    const int root = round % s.size;
    std::fill(out.begin(), out.end(), 0);
    MPI_Reduce(in.data(), out.data(), static_cast<int>(n), MPI_INT, MPI_SUM, root, s.comm);
    if (s.rank == root) {
        for (size_t i = 0; i < n; ++i) bad += out[i] != want[i];
    }
    std::vector<int> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = s.rank == root ? in[i] : -1;
    MPI_Bcast(b.data(), static_cast<int>(n), MPI_INT, root, s.comm);
    for (size_t i = 0; i < n; ++i) bad += b[i] != static_cast<int>(value(root, i, round));
    std::vector<int> all(n * static_cast<size_t>(s.size));
    MPI_Allgather(in.data(), static_cast<int>(n), MPI_INT, all.data(), static_cast<int>(n),
                  MPI_INT, s.comm);
    for (int r = 0; r < s.size; ++r) {
        for (size_t i = 0; i < n; ++i) {
            bad += all[static_cast<size_t>(r) * n + i] != static_cast<int>(value(r, i, round));
        }
    }
    MPI_Barrier(s.comm);
    INA_CHECK(bad == 0, "round %d: %zu wrong values", round, bad);
    ++checks;
    return 6;
}

// Every rank's failures and checks summed over `s`; rank 0 prints the line.
int finish_on(SessionComm &s, const char *name)
{
    int local = failures(), total = 0;
    long all_checks = 0;
    MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, s.comm);
    MPI_Allreduce(&checks, &all_checks, 1, MPI_LONG, MPI_SUM, s.comm);
    if (s.rank == 0) {
        std::printf("%s: %ld checks, %d failures: %s\n", name, all_checks, total,
                    total == 0 ? "PASS" : "FAIL");
    }
    return total == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv)
{
    for (int opt; (opt = getopt(argc, argv, "r:")) != -1;) {
        if (opt == 'r') {
            rounds = std::atoi(optarg);
        }
    }
    // Until a communicator gives one: the launcher's rank, for check lines.
    const char *launch_rank = std::getenv("OMPI_COMM_WORLD_RANK");
    check_rank() = launch_rank != nullptr ? std::atoi(launch_rank) : 0;
    int flag = 1;
    MPI_Initialized(&flag);
    INA_CHECK(flag == 0, "MPI_Initialized says MPI was initialized");
    int rc = 0;
    {
        SessionComm a("ina.test.sessions.a"), b("ina.test.sessions.b");
        INA_CHECK(a.rank == b.rank && a.size == b.size, "two sessions disagree on the layout");
        Counters counters;
        WorkLevel la(counters, a.comm), lb(counters, b.comm);
        for (int r = 0; r < rounds; ++r) {
            checks += la.expect(round_of_calls(a, r), "session a");
            checks += lb.expect(round_of_calls(b, r + 1000), "session b");
        }
        // The first session ends; the second goes on.
        a.end();
        for (int r = 0; r < rounds; ++r) {
            checks += lb.expect(round_of_calls(b, r + 2000), "session b alone");
        }
        counters.close();
        rc = finish_on(b, "test_sessions (two sessions)");
    }
    // Every session has ended: a new one starts MPI again.
    {
        SessionComm c("ina.test.sessions.c");
        Counters counters;
        WorkLevel lc(counters, c.comm);
        for (int r = 0; r < rounds; ++r) {
            checks += lc.expect(round_of_calls(c, r + 3000), "session c");
        }
        counters.close();
        rc |= finish_on(c, "test_sessions (a session after all ended)");
    }
    return rc;
}

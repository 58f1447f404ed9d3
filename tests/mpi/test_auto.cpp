// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Three applications sharing one agent under `--policy auto` (the pool
// divided by what each job needs while the needs fit, else time divided:
// switch_agent/sched/tdm.h). One mpirun plays all three: each third of the
// ranks sets coll_ina_tenant (A, B, C) before MPI_Init and works on its own
// communicator, a job of its tenant at the agent. The three run their calls
// at once, unsynchronised: small and large MPI_Allreduce and MPI_Iallreduce
// and MPI_Bcast, so the agent grants, shrinks and denies as the policy
// decides. Whatever it decides, every result is exact (against sums and
// values computed here), and every call was either offloaded or denied and
// run on the host (the communicator's MPI_T counters add up to the calls).
// Synchronisation between the tenants is point to point only.
// With -o N (the harm guard, under a policy that would deny a tenant every
// call): every tenant had at least N calls offloaded.
//
// usage: test_auto [-r ROUNDS] [-o N]
#include "ina_mpi_test.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace inatest;

namespace {

long checks = 0;

int64_t value(int rank, size_t i, int salt)
{
    return (rank + 1) * 1000003LL + static_cast<int64_t>(i) * 7 + salt * 131LL;
}

// The sum over world ranks first..first+n-1.
void check_sum(const std::vector<int64_t> &got, int first, int n, int salt, const char *what,
               int round)
{
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        int64_t want = 0;
        for (int r = first; r < first + n; ++r) {
            want += value(r, i, salt);
        }
        bad += got[i] != want;
    }
    ++checks;
    INA_CHECK(bad == 0, "round %d, %s of %zu: %zu elements wrong", round, what, got.size(), bad);
}

} // namespace

int main(int argc, char **argv)
{
    int rounds = 12;
    int least = -1; // -o: the fewest calls offloaded per tenant
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "-r") == 0) {
            rounds = std::atoi(argv[i + 1]);
        } else if (std::strcmp(argv[i], "-o") == 0) {
            least = std::atoi(argv[i + 1]);
        }
    }
    const char *wr = std::getenv("OMPI_COMM_WORLD_RANK");
    const char *ws = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (wr != nullptr && ws != nullptr && std::atoi(ws) >= 3) {
        static const char *const kTenant[] = {"A", "B", "C"};
        setenv("OMPI_MCA_coll_ina_tenant", kTenant[std::atoi(wr) * 3 / std::atoi(ws)], 1);
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 6 || size % 3 != 0 || rounds < 1) {
        if (rank == 0) {
            std::fprintf(stderr, "usage: test_auto [-r ROUNDS] (np a multiple of 3, >= 6)\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int third = size / 3;
    const int tenant = rank / third;
    const int first = tenant * third;
    MPI_Comm mine;
    MPI_Comm_split(MPI_COMM_WORLD, tenant, rank, &mine);
    int me;
    MPI_Comm_rank(mine, &me);
    Counters c;
    const long long off0 = c.offloaded(mine);
    const long long den0 = c.read("coll_ina_fallback_denied", mine);
    // Every tenant's job is open before any calls: the pool is divided
    // among three from the first call on.
    for (int t = 0; t < 3; ++t) {
        signal_ranks(rank, t * third, third, 0, size, 30 + t);
    }

    // Sizes in elements of int64: a few blocks to many leases' worth (the
    // scenario's blocks are 4 KiB: 512 elements).
    static const size_t kSizes[] = {512, 24576, 3000, 65536, 8192};
    long calls = 0;
    // Denied calls in a row (every member of a job hears the same verdict).
    long long denied_before = den0;
    int streak = 0, longest = 0;
    auto count_denials = [&] {
        const long long d = c.read("coll_ina_fallback_denied", mine);
        streak = d > denied_before ? streak + 1 : 0;
        longest = std::max(longest, streak);
        denied_before = d;
    };
    for (int round = 0; round < rounds; ++round) {
        const size_t n = kSizes[(round + tenant) % 5];
        const int salt = round * 3 + tenant;
        std::vector<int64_t> in(n), out(n);
        for (size_t i = 0; i < n; ++i) {
            in[i] = value(rank, i, salt);
        }
        if (round % 3 == 1) {
            MPI_Request req;
            MPI_Iallreduce(in.data(), out.data(), static_cast<int>(n), MPI_INT64_T, MPI_SUM, mine,
                           &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            check_sum(out, first, third, salt, "MPI_Iallreduce", round);
        } else {
            MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_INT64_T, MPI_SUM, mine);
            check_sum(out, first, third, salt, "MPI_Allreduce", round);
        }
        ++calls;
        count_denials();
        if (round % 4 == 3) {
            // A broadcast from the round's root: its values, everywhere.
            const int root = round % third;
            std::vector<int64_t> b(n);
            for (size_t i = 0; i < n; ++i) {
                b[i] = me == root ? value(first + root, i, salt + 1) : -1;
            }
            MPI_Bcast(b.data(), static_cast<int>(n), MPI_INT64_T, root, mine);
            size_t bad = 0;
            for (size_t i = 0; i < n; ++i) {
                bad += b[i] != value(first + root, i, salt + 1);
            }
            ++checks;
            INA_CHECK(bad == 0, "round %d, MPI_Bcast of %zu: %zu elements wrong", round, n, bad);
            ++calls;
            count_denials();
        }
    }

    // Each call offloaded, or denied by the agent and run on the host.
    const long long off = c.offloaded(mine) - off0;
    const long long den = c.read("coll_ina_fallback_denied", mine) - den0;
    ++checks;
    INA_CHECK(off + den == calls, "tenant %c: %lld offloaded + %lld denied, want %ld calls",
              'A' + tenant, off, den, calls);
    if (least >= 0) {
        ++checks;
        INA_CHECK(off >= least, "tenant %c: %lld calls offloaded (at least %d)", 'A' + tenant,
                  off, least);
    }
    if (me == 0) {
        std::printf("tenant %c: %lld of %ld calls offloaded, at most %d in a row denied\n",
                    'A' + tenant, off, calls, longest);
    }
    // All done before any job goes: a job freed while another tenant still
    // calls would be a legitimate change of regime, but not this test's.
    for (int t = 0; t < 3; ++t) {
        signal_ranks(rank, t * third, third, 0, size, 40 + t);
    }
    MPI_Comm_free(&mine);
    c.close();
    const int rc = finish("test_auto", checks);
    MPI_Finalize();
    return rc;
}

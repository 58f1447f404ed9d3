// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The client engine's failure paths against a real ina-switchd ($INA_SWITCHD):
//  1. DENY (the scheduler's answer): a 4-Seg agent; job A (2 ranks) holds the whole pool
//     while job B (1 rank) calls: B is denied; A's calls denied earlier are
//     denied again on A's late rank (the DENY it remembered), at the same MIDs;
//     once A completes, B is granted again. Every granted result is checked.
//  2. No progress: a 2-rank job whose rank 1 has not called yet: rank 0 gives
//     up after progress_timeout_ms with INA_ERR_LOST, its next call falls
//     back (unreachable); rank 1's call of that MID then ends with INA_ERR_PROTO
//     (the agent aborted it when rank 0 vanished), and nothing hangs.
// Outcomes never depend on speed: loops run until the awaited state appears,
// with generous bounds that only catch a hang.
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine_harness.h"
#include "ina_client.h"

namespace {

using ina_test::connect_or_die;
using ina_test::reap_children;
using ina_test::verdict;

constexpr int kChildAlarmS = 120;
constexpr uint32_t kCount = 20000; // int32 elements: 10 blocks of 8 KiB

struct Shared {
    pthread_barrier_t barrier; // every process of the group
    pthread_barrier_t pair;    // A1 and B only (A0 is inside its call)
    ina_job_params_t job_a;
    uint64_t a_denied;  // A's calls denied before the granted one (rank 0's view)
};

Shared *make_shared(unsigned participants)
{
    void *p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) {
        std::perror("mmap");
        std::exit(1);
    }
    auto *s = static_cast<Shared *>(p);
    std::memset(s, 0, sizeof(*s));
    pthread_barrierattr_t a;
    pthread_barrierattr_init(&a);
    pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&s->barrier, &a, participants);
    pthread_barrier_init(&s->pair, &a, 2);
    pthread_barrierattr_destroy(&a);
    return s;
}

// One blocking allreduce (sum) of kCount int32: its verdict().
int allreduce(ina_job_t *job, const std::vector<int32_t> &in, std::vector<int32_t> &out,
              ina_cqe_t &cqe)
{
    return verdict(
        ina_job_allreduce(job, in.data(), out.data(), kCount, INA_DT_INT32, INA_OP_SUM, &cqe),
        cqe);
}

// The jobs of this test, by index: A (two ranks), B (one), the stalled one.
constexpr uint32_t kJobA = 0, kJobB = 1, kJobStall = 2;

// Input of rank r: r + 1 + i; the sum over `k` ranks is known in closed form.
void fill(std::vector<int32_t> &v, uint32_t r)
{
    for (size_t i = 0; i < v.size(); ++i) {
        v[i] = static_cast<int32_t>(r + 1 + i);
    }
}

bool check_sum(const std::vector<int32_t> &v, uint32_t k)
{
    for (size_t i = 0; i < v.size(); ++i) {
        int64_t want = static_cast<int64_t>(k) * (k + 1) / 2 + static_cast<int64_t>(k) * i;
        if (v[i] != static_cast<int32_t>(want)) {
            std::fprintf(stderr, "element %zu: %d, want %lld\n", i, v[i],
                         static_cast<long long>(want));
            return false;
        }
    }
    return true;
}

// Job A, rank 0: retry until one call is granted (it then waits for rank 1).
int a0_main(const char *addr, Shared *sh)
{
    alarm(kChildAlarmS);
    ina_client_t *c = connect_or_die(addr, "A0", 60000);
    const uint32_t nodes[2] = {0, 0};
    ina_job_t *job = ina_test::open_job_or_die(c, kJobA, 0, 2, nodes, 4, 0, &sh->job_a);
    pthread_barrier_wait(&sh->barrier); // 1: A opened here
    pthread_barrier_wait(&sh->barrier); // 2: everyone opened
    std::vector<int32_t> in(kCount), out(kCount);
    fill(in, 0);
    ina_cqe_t cqe;
    int rc;
    uint64_t expect_mid = 0;
    while ((rc = allreduce(job, in, out, cqe)) == INA_FALLBACK_DENIED) {
        if (cqe.mid != expect_mid++) {
            std::fprintf(stderr, "A0: denied call has mid %llu\n",
                         static_cast<unsigned long long>(cqe.mid));
            return 1;
        }
        __atomic_store_n(&sh->a_denied, expect_mid, __ATOMIC_RELEASE);
    }
    bool ok = rc == INA_OK && cqe.mid == expect_mid && check_sum(out, 2);
    if (!ok) {
        std::fprintf(stderr, "A0: granted call rc %d mid %llu\n", rc,
                     static_cast<unsigned long long>(cqe.mid));
    }
    ina_job_leave(job);
    ina_client_disconnect(c);
    return ok ? 0 : 1;
}

// Job A, rank 1: joins, waits until B was denied (A then holds the pool),
// replays the MIDs A0 had denied (each must be denied at once), then completes A.
int a1_main(const char *addr, Shared *sh)
{
    alarm(kChildAlarmS);
    ina_client_t *c = connect_or_die(addr, "A1", 60000);
    const uint32_t nodes[2] = {0, 0};
    ina_job_params_t p{};
    pthread_barrier_wait(&sh->barrier); // 1
    ina_job_t *job = ina_test::open_job_or_die(c, kJobA, 1, 2, nodes, 4, 0, &p);
    pthread_barrier_wait(&sh->barrier); // 2
    pthread_barrier_wait(&sh->pair); // 3: B was denied
    bool ok = true;
    std::vector<int32_t> in(kCount), out(kCount);
    fill(in, 1);
    ina_cqe_t cqe;
    const uint64_t denied = __atomic_load_n(&sh->a_denied, __ATOMIC_ACQUIRE);
    for (uint64_t m = 0; m < denied; ++m) {
        int rc = allreduce(job, in, out, cqe);
        if (rc != INA_FALLBACK_DENIED || cqe.mid != m) {
            std::fprintf(stderr, "A1: call %llu: rc %d (want INA_FALLBACK_DENIED, like rank 0)\n",
                         static_cast<unsigned long long>(m), rc);
            ok = false;
        }
    }
    // In place this time: the result must still be the sum.
    fill(out, 1);
    int rc = allreduce(job, out, out, cqe);
    if (rc != INA_OK || cqe.mid != denied || !check_sum(out, 2)) {
        std::fprintf(stderr, "A1: granted call rc %d\n", rc);
        ok = false;
    }
    std::printf("job A: %llu call(s) denied on rank 0 were denied on rank 1 at the same MIDs, "
                "then the granted call matched: %s\n",
                static_cast<unsigned long long>(denied), ok ? "ok" : "FAILED");
    std::fflush(stdout);
    pthread_barrier_wait(&sh->pair); // 4: A done
    ina_job_leave(job);
    ina_client_disconnect(c);
    return ok ? 0 : 1;
}

// Job B (one rank): call until denied, then, once A is done, granted again.
int b_main(const char *addr, Shared *sh)
{
    alarm(kChildAlarmS);
    ina_client_t *c = connect_or_die(addr, "B", 60000);
    const uint32_t node = 1;
    ina_job_params_t p{};
    ina_job_t *job = ina_test::open_job_or_die(c, kJobB, 0, 1, &node, 4, 0, &p);
    pthread_barrier_wait(&sh->barrier); // 1
    pthread_barrier_wait(&sh->barrier); // 2
    int rc;
    std::vector<int32_t> in(kCount), out(kCount);
    fill(in, 0);
    ina_cqe_t cqe;
    bool ok = true;
    uint64_t calls = 0;
    for (; calls < 1000000; ++calls) {
        rc = allreduce(job, in, out, cqe);
        if (rc == INA_FALLBACK_DENIED) {
            break;
        }
        if (rc != INA_OK || !check_sum(out, 1)) {
            std::fprintf(stderr, "B: call %llu rc %d\n", static_cast<unsigned long long>(calls), rc);
            ok = false;
            break;
        }
    }
    const bool denied = rc == INA_FALLBACK_DENIED && cqe.status == INA_PROTO_ERR_NO_RESOURCES &&
                        cqe.mid == calls;
    std::printf("job B: denied (%s) while job A holds every Seg, after %llu granted calls: %s\n",
                ina_proto_status_name(cqe.status), static_cast<unsigned long long>(calls),
                denied ? "ok" : "FAILED");
    std::fflush(stdout);
    ok = ok && denied;
    pthread_barrier_wait(&sh->pair); // 3
    pthread_barrier_wait(&sh->pair); // 4
    // A has completed: its lease is back (the agent may release it a little
    // later than A's RESULTs arrive, so a DENY here is retried).
    bool granted = false;
    for (int i = 0; i < 100000 && !granted; ++i) {
        rc = allreduce(job, in, out, cqe);
        granted = rc == INA_OK && check_sum(out, 1);
        if (rc != INA_OK && rc != INA_FALLBACK_DENIED) {
            break;
        }
    }
    std::printf("job B: granted again after job A completed: %s\n", granted ? "ok" : "FAILED");
    ina_job_leave(job);
    ina_client_disconnect(c);
    return ok && granted ? 0 : 1;
}

// Rank 0 of a job whose rank 1 never calls: INA_ERR_LOST after the timeout.
int stall_main(const char *addr, Shared *sh, uint32_t rank)
{
    alarm(kChildAlarmS);
    ina_client_t *c = connect_or_die(addr, "stall", rank == 0 ? 300 : 60000);
    const uint32_t nodes[2] = {0, 0};
    ina_job_params_t p{};
    ina_job_t *job = ina_test::open_job_or_die(c, kJobStall, rank, 2, nodes, 4, 0, &p);
    pthread_barrier_wait(&sh->barrier);
    pthread_barrier_wait(&sh->barrier);
    bool ok = true;
    if (rank == 0) {
        std::vector<int32_t> in(kCount), out(kCount);
        fill(in, 0);
        ina_cqe_t cqe;
        int rc = allreduce(job, in, out, cqe);
        int rc2 = allreduce(job, in, out, cqe);
        ok = rc == INA_ERR_LOST && rc2 == INA_FALLBACK_UNREACHABLE && !ina_client_alive(c);
        std::printf("no progress for progress_timeout_ms: INA_ERR_LOST (got %d), then "
                    "INA_FALLBACK_UNREACHABLE (got %d): %s\n",
                    rc, rc2, ok ? "ok" : "FAILED");
        std::fflush(stdout);
    }
    pthread_barrier_wait(&sh->barrier); // rank 1 calls only after rank 0 gave up
    if (rank == 1) {
        // Rank 0 vanished in the middle of mid 0: the agent aborts that call,
        // whether or not this rank's blocks already arrived: INA_ERR_PROTO.
        std::vector<int32_t> in(kCount), out(kCount);
        fill(in, 1);
        ina_cqe_t cqe;
        int rc = allreduce(job, in, out, cqe);
        ok = rc == INA_ERR_PROTO && cqe.mid == 0 && cqe.status == INA_PROTO_ERR_NOT_MEMBER;
        std::printf("survivor of a member that died mid-call: INA_ERR_PROTO/%s (got %d/%s): %s\n",
                    ina_proto_status_name(INA_PROTO_ERR_NOT_MEMBER), rc,
                    ina_proto_status_name(cqe.status), ok ? "ok" : "FAILED");
    }
    ina_job_leave(job);
    ina_client_disconnect(c);
    return ok ? 0 : 1;
}

template <typename F> pid_t spawn_child(F f)
{
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int rc = f();
        std::fflush(stdout); // _Exit flushes nothing
        std::_Exit(rc);
    }
    return pid;
}

} // namespace

int main()
{
    const char *agent = std::getenv("INA_SWITCHD");
    if (agent == nullptr || access(agent, X_OK) != 0) {
        std::printf("SKIP: INA_SWITCHD not set or not executable\n");
        return 77;
    }
    char addr[128];
    char err[512];
    int pid = -1;
    // Four Segs: one lease of window 4 takes the whole pool.
    const char *log = std::getenv("INA_TEST_AGENT_LOG"); // e.g. debug
    // (fcfs, bare: the denial tested is the pool's, not another job's call
    // holding the agent, nor the harm guard's.)
    const char *const args[] = {"--policy", "fcfs", "--harm-guard", "false", "--seg-size", "8192", "--segs", "4", "--max-window", "4",
                                "--log-level", log != nullptr ? log : "warn", nullptr};
    if (ina_agent_spawn(agent, "127.0.0.1", args, addr, sizeof(addr), &pid, err, sizeof(err)) !=
        INA_OK) {
        std::fprintf(stderr, "FAIL: ina_agent_spawn: %s\n", err);
        return 1;
    }
    std::printf("agent pid %d at %s (4 Segs of 8 KiB)\n", pid, addr);
    int failed = 0;
    {
        Shared *sh = make_shared(3);
        std::vector<pid_t> pids;
        pids.push_back(spawn_child([&] { return a0_main(addr, sh); }));
        pids.push_back(spawn_child([&] { return a1_main(addr, sh); }));
        pids.push_back(spawn_child([&] { return b_main(addr, sh); }));
        failed += reap_children(pids, "engine_faults");
    }
    {
        Shared *sh = make_shared(2);
        std::vector<pid_t> pids;
        pids.push_back(spawn_child([&] { return stall_main(addr, sh, 0); }));
        pids.push_back(spawn_child([&] { return stall_main(addr, sh, 1); }));
        failed += reap_children(pids, "engine_faults");
    }
    ina_agent_stop(pid, 5000);
    std::printf("%s: %d failure(s)\n", failed == 0 ? "PASS" : "FAIL", failed);
    return failed == 0 ? 0 : 1;
}

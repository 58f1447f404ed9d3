// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A tree of real agents: a spine ina-switchd and two leaves started with
// --parent, four rank processes (two per leaf) that open one job by key
// (ina_job_open, INA_JOB_OPEN_TREE) and run every collective through it, each rank waiting
// a random while before each call so that the leaves and the spine see the
// blocks in a different interleaving every round. Every call must be
// offloaded and every result exact: integers equal to the host's, doubles
// bit-identical to the tree's association, (r0 + r1) + (r2 + r3).
// Then leaves that disagree on the window (--max-window): the spine refuses
// the second leaf's job, and every rank of both leaves falls back alike.
// Then the spine denies: another job, opened at the spine itself, holds its
// whole pool (--segs 8) in a call left open; every call of the tree is
// denied on all four ranks alike, and offloaded again once that call ends.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine_harness.h"
#include "engine_tree_round.h"

namespace {

using namespace ina_test;

constexpr uint32_t kRanks = 4;
constexpr uint32_t kPerLeaf = 2;
constexpr int kRounds = 6;

struct Shared {
    pthread_barrier_t barrier;
};

double value(uint32_t r, uint64_t i, int round)
{
    return 1.0 / (3.0 + r + round) + 1e-7 * static_cast<double>(i % 1000);
}

// Fail the rank with a message.
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "rank %u: ", rank);                                               \
            std::fprintf(stderr, __VA_ARGS__);                                                     \
            std::fprintf(stderr, "\n");                                                            \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

ina_job_t *open_tree_job(ina_client_t *c, uint32_t rank, uint32_t window, ina_job_params_t *p)
{
    const ina_job_key_t key = group_job_key(0, kRanks);
    const uint32_t nodes[kPerLeaf] = {0, 1};
    ina_job_t *job = nullptr;
    ina_job_open_params_t op{};
    op.mask = INA_JOB_OPEN_SHAPE | INA_JOB_OPEN_TREE;
    op.key = &key;
    op.nmembers = kPerLeaf;
    op.node_of_member = nodes;
    op.rank = rank % kPerLeaf;
    op.window = window;
    op.block_bytes = 4096;
    op.leaf = rank / kPerLeaf;
    op.nleaves = kRanks / kPerLeaf;
    op.comm_rank = rank;
    op.comm_size = kRanks;
    int rc = ina_job_open(c, &op, p, &job);
    if (rc != INA_OK) {
        std::fprintf(stderr, "rank %u: ina_job_open (tree) failed: rc %d\n", rank, rc);
        std::_Exit(4);
    }
    return job;
}

int rank_main(const char *addr, Shared *sh, uint32_t rank)
{
    ina_client_t *c = connect_or_die(addr, "rank " + std::to_string(rank));
    ina_job_params_t p{};
    ina_job_t *job = open_tree_job(c, rank, 8, &p);
    std::mt19937 rng(1234 + rank);
    TreeRound t;
    t.rank = rank;
    t.nranks = kRanks;
    t.reduce_root = 2;
    t.bcast_root = 3; // on the second leaf
    t.value = value;
    t.tree_sum = [](uint64_t i, int round) {
        return (value(0, i, round) + value(1, i, round)) +
               (value(2, i, round) + value(3, i, round));
    };
    for (int round = 0; round < kRounds; ++round) {
        if (tree_round(job, t, round, rng) != 0) {
            return 1;
        }
    }
    pthread_barrier_wait(&sh->barrier);
    ina_job_leave(job);
    ina_client_disconnect(c);
    return 0;
}

// Leaves that grant different windows: every rank falls back on every call.
int mismatch_main(const char *addr, Shared *sh, uint32_t rank)
{
    ina_client_t *c = connect_or_die(addr, "rank " + std::to_string(rank));
    ina_job_params_t p{};
    ina_job_t *job = open_tree_job(c, rank, 8, &p);
    std::vector<int32_t> x(1000, static_cast<int32_t>(rank)), y(1000);
    for (int i = 0; i < 3; ++i) {
        ina_coll_desc_t d{INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, x.data(), y.data(), 1000};
        ina_cqe_t cqe{};
        int rc = ina_job_run(job, &d, &cqe);
        EXPECT(verdict(rc, cqe) == INA_FALLBACK_DENIED, "call %d: verdict %d (status %s)", i,
               verdict(rc, cqe), ina_proto_status_name(cqe.status));
    }
    pthread_barrier_wait(&sh->barrier);
    ina_job_leave(job);
    ina_client_disconnect(c);
    return 0;
}

// While the spine's pool is held by another job: every call denied on every
// rank; once the parent process ended that call (between barriers 2 and 3),
// offloaded and exact again. A rank that fails still meets every barrier.
struct HogShared {
    pthread_barrier_t barrier; // the ranks and the parent process
};

int spine_deny_ranks(const char *addr, HogShared *sh, uint32_t rank)
{
    pthread_barrier_wait(&sh->barrier); // 1: the pool is held
    ina_client_t *c = connect_or_die(addr, "rank " + std::to_string(rank));
    ina_job_params_t p{};
    ina_job_t *job = open_tree_job(c, rank, 8, &p);
    std::vector<int64_t> x(3000, static_cast<int64_t>(rank) + 1), y(3000);
    ina_coll_desc_t d{INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, x.data(), y.data(), 3000};
    int bad = 0;
    for (int i = 0; i < 3; ++i) {
        ina_cqe_t cqe{};
        int rc = ina_job_run(job, &d, &cqe);
        if (verdict(rc, cqe) != INA_FALLBACK_DENIED || cqe.status != INA_PROTO_ERR_NO_RESOURCES) {
            std::fprintf(stderr, "rank %u: call %d while the spine is full: verdict %d (%s)\n",
                         rank, i, verdict(rc, cqe), ina_proto_status_name(cqe.status));
            bad = 1;
        }
    }
    pthread_barrier_wait(&sh->barrier); // 2: the parent gives the pool back
    pthread_barrier_wait(&sh->barrier); // 3: given back
    if (run_coll(job, d, INA_OFFLOADED) != 0 || y[0] != 10 || y[2999] != 10) {
        std::fprintf(stderr, "rank %u: the call after the pool came back: not offloaded or "
                             "wrong (%lld)\n", rank, static_cast<long long>(y[0]));
        bad = 1;
    }
    ina_job_leave(job);
    ina_client_disconnect(c);
    return bad;
}

// The parent's side: job 99 at the spine, two members, window 8 (the
// spine's whole pool); member 0's call is granted and stays open until
// member 1 sends its part.
int spine_deny_hog(const char *spine, HogShared *sh)
{
    ina_client_t *h0 = connect_or_die(spine, "hog 0");
    ina_client_t *h1 = connect_or_die(spine, "hog 1");
    const uint32_t nodes[2] = {0, 1};
    ina_job_params_t hp{};
    ina_job_t *hog0 = open_job_or_die(h0, 99, 0, 2, nodes, 8, 4096, &hp);
    ina_job_t *hog1 = open_job_or_die(h1, 99, 1, 2, nodes, 8, 4096, &hp);
    std::vector<int32_t> in(8 * 1024, 1), out0(in.size()), out1(in.size());
    ina_coll_desc_t d0{INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, in.data(), out0.data(),
                       in.size()};
    ina_coll_desc_t d1 = d0;
    d1.rbuf = out1.data();
    ina_call_t *held = nullptr, *other = nullptr;
    int bad = post(hog0, &d0, &held) == INA_OFFLOADED && hp.window == 8 ? 0 : 1;
    pthread_barrier_wait(&sh->barrier); // 1
    pthread_barrier_wait(&sh->barrier); // 2
    bad += post(hog1, &d1, &other) == INA_OFFLOADED ? 0 : 1;
    ina_cqe_t cqe{};
    for (ina_call_t *call : {held, other}) {
        if (call != nullptr) {
            bad += ina_call_wait(call, &cqe) == INA_OK && cqe.outcome == INA_OFFLOADED ? 0 : 1;
            ina_call_free(call);
        }
    }
    bad += out0[0] == 2 && out1[in.size() - 1] == 2 ? 0 : 1;
    pthread_barrier_wait(&sh->barrier); // 3
    ina_job_leave(hog0);
    ina_job_leave(hog1);
    ina_client_disconnect(h0);
    ina_client_disconnect(h1);
    if (bad != 0) {
        std::fprintf(stderr, "FAIL: the other job at the spine (%d)\n", bad);
    }
    return bad;
}

struct Agents {
    int pids[3] = {-1, -1, -1};
    char spine[64] = "", leaf[2][64] = {"", ""};
    ~Agents()
    {
        for (int pid : pids) {
            if (pid > 0) {
                ina_agent_stop(pid, 5000);
            }
        }
    }
};

bool start_tree(Agents &a, const char *bin, const char *leaf1_window, const char *spine_segs)
{
    char err[256] = "";
    // fcfs without the harm guard: a denial here is the pool's (another job
    // holding it), the same whichever policy; the policies and the guard
    // (which would make a job denied twice wait) have tests of their own.
    const char *spine_args[] = {"--log-level", "info", "--segs", spine_segs, "--policy", "fcfs",
                                "--harm-guard", "false", nullptr};
    if (ina_agent_spawn(bin, "127.0.0.1", spine_args, a.spine, sizeof(a.spine), &a.pids[0], err,
                        sizeof(err)) != INA_OK) {
        std::fprintf(stderr, "FAIL: spine: %s\n", err);
        return false;
    }
    for (int l = 0; l < 2; ++l) {
        const char *args[] = {"--parent", a.spine, "--log-level", "info", "--max-window",
                              l == 1 ? leaf1_window : "8", "--policy", "fcfs", nullptr};
        if (ina_agent_spawn(bin, "127.0.0.1", args, a.leaf[l], sizeof(a.leaf[l]), &a.pids[1 + l],
                            err, sizeof(err)) != INA_OK) {
            std::fprintf(stderr, "FAIL: leaf %d: %s\n", l, err);
            return false;
        }
    }
    return true;
}

int run_group(Agents &a, int (*fn)(const char *, Shared *, uint32_t), const char *what)
{
    Shared *sh = map_shared<Shared>(kRanks);
    std::vector<pid_t> pids;
    for (uint32_t r = 0; r < kRanks; ++r) {
        pid_t pid = fork();
        if (pid == 0) {
            std::_Exit(fn(a.leaf[r / kPerLeaf], sh, r));
        }
        pids.push_back(pid);
    }
    int failed = reap_children(pids, what);
    unmap_shared(sh);
    return failed;
}

} // namespace

int main()
{
    const char *bin = std::getenv("INA_SWITCHD");
    if (bin == nullptr) {
        std::fprintf(stderr, "SKIP: INA_SWITCHD not set\n");
        return 77;
    }
    signal(SIGPIPE, SIG_IGN);
    int failed = 0;
    {
        Agents a;
        if (!start_tree(a, bin, "8", "1024")) {
            return 1;
        }
        failed += run_group(a, rank_main, "tree");
        std::printf("tree of 3 agents, %d rounds of every collective on 4 ranks: %s\n", kRounds,
                    failed == 0 ? "ok" : "FAILED");
    }
    {
        Agents a;
        if (!start_tree(a, bin, "4", "1024")) {
            return 1;
        }
        const int f = run_group(a, mismatch_main, "mismatched leaves");
        std::printf("leaves with different windows: every call falls back on every rank: %s\n",
                    f == 0 ? "ok" : "FAILED");
        failed += f;
    }
    {
        Agents a;
        if (!start_tree(a, bin, "8", "8")) {
            return 1;
        }
        // The ranks fork before the parent connects (no client state
        // crosses a fork).
        HogShared *sh = map_shared<HogShared>(kRanks + 1);
        std::vector<pid_t> pids;
        for (uint32_t r = 0; r < kRanks; ++r) {
            pid_t pid = fork();
            if (pid == 0) {
                std::_Exit(spine_deny_ranks(a.leaf[r / kPerLeaf], sh, r));
            }
            pids.push_back(pid);
        }
        int f = spine_deny_hog(a.spine, sh);
        f += reap_children(pids, "spine denies");
        unmap_shared(sh);
        std::printf("the spine denies (its pool held by another job): every call denied on "
                    "every rank, then offloaded again: %s\n",
                    f == 0 ? "ok" : "FAILED");
        failed += f;
    }
    return failed == 0 ? 0 : 1;
}

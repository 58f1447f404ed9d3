// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A tree of real agents three levels deep: a core ina-switchd, two spines
// started with --parent core, three leaves (leaf 0 under spine 0, leaves 1
// and 2 under spine 1), and four rank processes: rank 0 on leaf 0, rank 1 on
// leaf 1, ranks 2 and 3 on leaf 2. Each rank opens the job by key with its
// place at every level (ina_topology_place: leaf 0 is the only leaf of the
// job under spine 0, and still goes up), and runs every collective through
// it, waiting a random while before each call so that every level sees the
// blocks in a new interleaving each round. Every call must be offloaded and
// every result exact: integers equal to the host's, doubles bit-identical to
// the association of this tree, r0 + (r1 + (r2 + r3)), which is neither the
// flat order nor that of the leaves under one parent.
// Then two leaves under one spine that place it differently: the spine
// refuses the second description of its job, and every rank falls back
// alike.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
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
constexpr int kRounds = 5;
constexpr int kCore = 0, kSpines = 2, kLeaves = 3;
constexpr int kAgents = 1 + kSpines + kLeaves;

// Where each rank sits: its leaf, its rank there, and the leaf's members.
constexpr uint32_t kLeafOf[kRanks] = {0, 1, 2, 2};
constexpr uint32_t kRankAtLeaf[kRanks] = {0, 0, 0, 1};
constexpr uint32_t kLeafMembers[kLeaves] = {1, 1, 2};
// The levels as ina_topology_plan numbers them (level-major): leaves, then
// spines.
constexpr uint32_t kGroups[2 * kRanks] = {0, 1, 2, 2, /* spines: */ 0, 1, 1, 1};

struct Shared {
    pthread_barrier_t barrier;
};

double value(uint32_t r, uint64_t i, int round)
{
    return 1.0 / (3.0 + r + round) + 1e-7 * static_cast<double>(i % 1000);
}

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "rank %u: ", rank);                                               \
            std::fprintf(stderr, __VA_ARGS__);                                                     \
            std::fprintf(stderr, "\n");                                                            \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

// `lie`: rank 1 places spine 1 among three spines at the core, not two.
ina_job_t *open_deep_job(ina_client_t *c, uint32_t rank, ina_job_params_t *p, uint32_t tag,
                         bool lie)
{
    const ina_job_key_t key = group_job_key(tag, kRanks);
    ina_proto_tree_level_t place[2];
    ina_topology_place(kGroups, kRanks, 2, rank, place);
    if (lie && rank == 1) {
        place[1].groups = 3;
    }
    std::vector<uint32_t> nodes(kLeafMembers[kLeafOf[rank]]);
    for (uint32_t i = 0; i < nodes.size(); ++i) {
        nodes[i] = i;
    }
    ina_job_t *job = nullptr;
    ina_job_open_params_t op{};
    op.mask = INA_JOB_OPEN_SHAPE | INA_JOB_OPEN_TREE;
    op.key = &key;
    op.nmembers = static_cast<uint32_t>(nodes.size());
    op.node_of_member = nodes.data();
    op.rank = kRankAtLeaf[rank];
    op.window = 8;
    op.block_bytes = 4096;
    op.leaf = place[0].group;
    op.nleaves = place[0].groups;
    op.above = place + 1;
    op.nabove = 1;
    op.comm_rank = rank;
    op.comm_size = kRanks;
    const int rc = ina_job_open(c, &op, p, &job);
    if (rc != INA_OK) {
        std::fprintf(stderr, "rank %u: ina_job_open (deep tree) failed: rc %d\n", rank, rc);
        std::_Exit(4);
    }
    return job;
}

int rank_main(const char *addr, Shared *sh, uint32_t rank)
{
    ina_client_t *c = connect_or_die(addr, "rank " + std::to_string(rank));
    ina_job_params_t p{};
    ina_job_t *job = open_deep_job(c, rank, &p, 7, false);
    std::mt19937 rng(4321 + rank);
    TreeRound t;
    t.rank = rank;
    t.nranks = kRanks;
    t.reduce_root = 1;
    t.bcast_root = 0; // the leaf alone under its spine
    t.value = value;
    t.tree_sum = [](uint64_t i, int round) {
        return value(0, i, round) +
               (value(1, i, round) + (value(2, i, round) + value(3, i, round)));
    };
    for (int round = 0; round < kRounds; ++round) {
        if (tree_round(job, t, round, rng) != 0) {
            return 1;
        }
    }
    // The inputs must tell this tree's order from the flat one somewhere.
    size_t differ = 0;
    for (uint64_t i = 0; i < t.n; ++i) {
        const double flat =
            ((value(0, i, 0) + value(1, i, 0)) + value(2, i, 0)) + value(3, i, 0);
        const double tree = t.tree_sum(i, 0);
        differ += std::memcmp(&flat, &tree, sizeof(double)) != 0;
    }
    EXPECT(differ > 0, "the inputs do not tell the tree's order from the flat one");
    pthread_barrier_wait(&sh->barrier);
    ina_job_leave(job);
    ina_client_disconnect(c);
    return 0;
}

// Leaves 1 and 2, under spine 1, give spine 1 two different places at the
// core (rank 1 says spine 1 is one of three): spine 1 refuses the second
// leaf's job (MISMATCH), so the tree never completes; every call falls back
// (DENIED) on every rank of every leaf alike.
int mismatch_main(const char *addr, Shared *sh, uint32_t rank)
{
    ina_client_t *c = connect_or_die(addr, "rank " + std::to_string(rank));
    ina_job_params_t p{};
    ina_job_t *job = open_deep_job(c, rank, &p, 8, true);
    std::vector<int32_t> x(1000, static_cast<int32_t>(rank)), y(1000);
    for (int i = 0; i < 3; ++i) {
        const ina_coll_desc_t d =
            coll_desc(INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, x.data(), y.data(), 1000);
        ina_cqe_t cqe{};
        const int rc = ina_job_run(job, &d, &cqe);
        EXPECT(verdict(rc, cqe) == INA_FALLBACK_DENIED, "call %d: verdict %d (status %s)", i,
               verdict(rc, cqe), ina_proto_status_name(cqe.status));
    }
    pthread_barrier_wait(&sh->barrier);
    ina_job_leave(job);
    ina_client_disconnect(c);
    return 0;
}

struct Agents {
    int pids[kAgents] = {-1, -1, -1, -1, -1, -1};
    char addr[kAgents][64] = {};
    ~Agents()
    {
        // Children first: no agent sees its parent vanish.
        for (int i = kAgents - 1; i >= 0; --i) {
            if (pids[i] > 0) {
                ina_agent_stop(pids[i], 5000);
            }
        }
    }
    const char *leaf(uint32_t l) const { return addr[1 + kSpines + l]; }
};

bool start_tree(Agents &a, const char *bin)
{
    char err[256] = "";
    const char *core_args[] = {"--log-level", "info", "--policy", "fcfs", nullptr};
    if (ina_agent_spawn(bin, "127.0.0.1", core_args, a.addr[kCore], sizeof(a.addr[kCore]),
                        &a.pids[kCore], err, sizeof(err)) != INA_OK) {
        std::fprintf(stderr, "FAIL: core: %s\n", err);
        return false;
    }
    for (int i = 1; i < kAgents; ++i) {
        // Spines under the core; leaf 0 under spine 0, leaves 1 and 2 under
        // spine 1.
        const int parent = i <= kSpines ? kCore : i == 1 + kSpines ? 1 : 2;
        const char *args[] = {"--parent", a.addr[parent], "--log-level", "info", "--policy",
                              "fcfs", nullptr};
        if (ina_agent_spawn(bin, "127.0.0.1", args, a.addr[i], sizeof(a.addr[i]), &a.pids[i], err,
                            sizeof(err)) != INA_OK) {
            std::fprintf(stderr, "FAIL: agent %d: %s\n", i, err);
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
        const pid_t pid = fork();
        if (pid == 0) {
            std::_Exit(fn(a.leaf(kLeafOf[r]), sh, r));
        }
        pids.push_back(pid);
    }
    const int failed = reap_children(pids, what);
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
        if (!start_tree(a, bin)) {
            return 1;
        }
        failed += run_group(a, rank_main, "deep tree");
        std::printf("tree of 6 agents on 3 levels, %d rounds of every collective on 4 ranks: %s\n",
                    kRounds, failed == 0 ? "ok" : "FAILED");
    }
    {
        Agents a;
        if (!start_tree(a, bin)) {
            return 1;
        }
        const int f = run_group(a, mismatch_main, "places that disagree");
        std::printf("two leaves place their spine differently: every call falls back: %s\n",
                    f == 0 ? "ok" : "FAILED");
        failed += f;
    }
    return failed == 0 ? 0 : 1;
}

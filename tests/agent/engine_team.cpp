// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The engine's one door (team/ina_team.h) from the outside: forked "ranks"
// each make a team and run their calls as tasks, with every strategy the
// team can choose:
//   - one agent (a real ina-switchd): blocking, non-blocking and persistent
//     tasks, exact against a reference; after the team left its job, a call
//     falls back ("unreachable"), never an error;
//   - the node stage alone (the ranks share memory, no agent): small and
//     large calls, a persistent task posted again;
//   - the node stage whose large segment cannot be made: such calls fall
//     back with the team's own reason, small ones are still offloaded.
// Tasks come back to the team: a call after the first allocates none.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine_harness.h"
#include "ina_client.h"
#include "ina_node.h"
#include "ina_team.h"

namespace {

constexpr int kChildAlarmS = 120; // a hung child dies; the parent reports it
constexpr uint32_t kRanks = 3;

struct Shared {
    pthread_barrier_t barrier;
};

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "rank %u: %s:%d: check failed: %s\n", rank, __FILE__, __LINE__,   \
                         #cond);                                                                   \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

// Rank r's element i of call `round`; the sum over ranks is the reference.
int32_t value(uint32_t r, size_t i, int round)
{
    return static_cast<int32_t>((r + 1) * 1000 + i * 7 + round * 13) - 5000;
}

int32_t sum(size_t i, int round)
{
    int32_t s = 0;
    for (uint32_t r = 0; r < kRanks; ++r) {
        s += value(r, i, round);
    }
    return s;
}

ina_task_params_t allreduce(const int32_t *in, int32_t *out, size_t count, uint64_t flags)
{
    ina_task_params_t p{};
    p.flags = flags;
    p.desc.coll = INA_COLL_ALLREDUCE;
    p.desc.op = INA_OP_SUM;
    p.desc.dtype = INA_DT_INT32;
    p.desc.sbuf = in;
    p.desc.rbuf = out;
    p.desc.count = count;
    p.bytes = count * sizeof(int32_t);
    return p;
}

// Post, verdict, and (offloaded) test to the end, as the component does
// (its waits progress MPI; here there is nothing else to move).
ina_task_result_t run(ina_task_t *task)
{
    ina_task_result_t r{};
    if (ina_task_post(task) != INA_OK) {
        r.rc = INA_ERR_INVALID;
        return r;
    }
    while (ina_task_verdict(task, &r) == 0) {
    }
    if (r.rc != INA_OK || r.outcome != INA_OFFLOADED) {
        return r;
    }
    while (ina_task_test(task, &r) == 0) {
    }
    return r;
}

bool offloaded(const ina_task_result_t &r)
{
    return r.rc == INA_OK && r.outcome == INA_OFFLOADED;
}

// One call of `count` elements on `team`, round `round`: offloaded and exact.
int one_call(ina_team_t *team, uint32_t rank, size_t count, int round, uint64_t flags)
{
    std::vector<int32_t> in(count), out(count, -1);
    for (size_t i = 0; i < count; ++i) {
        in[i] = value(rank, i, round);
    }
    const ina_task_params_t p = allreduce(in.data(), out.data(), count, flags);
    ina_task_t *task = nullptr;
    CHECK(ina_task_init(team, &p, &task) == INA_OK);
    const ina_task_result_t r = run(task);
    ina_task_finalize(task);
    CHECK(offloaded(r));
    for (size_t i = 0; i < count; ++i) {
        CHECK(out[i] == sum(i, round));
    }
    return 0;
}

// A persistent task posted `starts` times, new inputs each time.
int persistent(ina_team_t *team, uint32_t rank, size_t count, int starts)
{
    std::vector<int32_t> in(count), out(count);
    const ina_task_params_t p = allreduce(in.data(), out.data(), count, INA_TASK_PERSISTENT);
    ina_task_t *task = nullptr;
    CHECK(ina_task_init(team, &p, &task) == INA_OK);
    for (int round = 0; round < starts; ++round) {
        for (size_t i = 0; i < count; ++i) {
            in[i] = value(rank, i, 100 + round);
            out[i] = -1;
        }
        const ina_task_result_t r = run(task);
        CHECK(offloaded(r));
        for (size_t i = 0; i < count; ++i) {
            CHECK(out[i] == sum(i, 100 + round));
        }
    }
    ina_task_finalize(task);
    return 0;
}

int agent_rank(const char *addr, Shared *sh, uint32_t rank)
{
    alarm(kChildAlarmS);
    ina_client_t *c = ina_test::connect_or_die(addr, "rank " + std::to_string(rank));
    ina_job_params_t jp{};
    const std::vector<uint32_t> nodes = {0, 1, 2}; // a host each
    ina_job_t *job = ina_test::open_job_or_die(c, 0, rank, kRanks, nodes.data(), 8, 1024, &jp);
    ina_team_params_t tp{};
    ina_team_t *team = nullptr;
    CHECK(ina_team_create(&tp, &team) == INA_OK);
    CHECK(!ina_team_joined(team));
    ina_team_join_t join{};
    join.mask = INA_TEAM_JOB;
    join.job = job;
    CHECK(ina_team_join(team, &join) == INA_OK);
    CHECK(ina_team_joined(team));
    CHECK(ina_team_reachable(team));

    // Blocking, then non-blocking, small and several blocks.
    for (size_t count : {size_t{1}, size_t{1000}, size_t{5000}}) {
        CHECK(one_call(team, rank, count, 1, 0) == 0);
        CHECK(one_call(team, rank, count, 2, INA_TASK_NONBLOCKING) == 0);
    }
    CHECK(persistent(team, rank, 3000, 4) == 0);

    // A task given back is the next one handed out.
    std::vector<int32_t> a(4), b(4);
    ina_task_params_t p = allreduce(a.data(), b.data(), 4, 0);
    ina_task_t *t1 = nullptr, *t2 = nullptr;
    CHECK(ina_task_init(team, &p, &t1) == INA_OK);
    ina_task_finalize(t1);
    CHECK(ina_task_init(team, &p, &t2) == INA_OK);
    CHECK(t1 == t2);
    ina_task_finalize(t2);

    // Without a job, a call falls back, alike on every rank, and says who.
    pthread_barrier_wait(&sh->barrier);
    ina_team_leave(team);
    CHECK(!ina_team_joined(team));
    CHECK(ina_task_init(team, &p, &t1) == INA_OK);
    const ina_task_result_t r = run(t1);
    ina_task_finalize(t1);
    CHECK(r.rc == INA_OK && r.outcome == INA_FALLBACK_UNREACHABLE);
    CHECK(r.who != nullptr && std::strcmp(r.who, "the agent") == 0);
    ina_team_destroy(team);
    ina_client_disconnect(c);
    return 0;
}

ina_team_t *node_team(uint32_t rank, const std::string &name, size_t segment_bytes)
{
    static std::vector<uint32_t> node_of(kRanks, 0);
    ina_team_params_t tp{};
    tp.mask = INA_TEAM_NODE;
    tp.node.config.name = name.c_str();
    tp.node.config.nlocal = kRanks;
    tp.node.config.index = rank;
    tp.node.config.size = kRanks;
    tp.node.config.rank = rank;
    tp.node.config.node_of = node_of.data();
    tp.node.config.small_bytes = 2048;
    tp.node.config.attach_timeout_ms = 30000;
    tp.node.small_chunk_bytes = 8192;
    tp.node.segment_bytes = segment_bytes;
    tp.node.chunk_bytes = 64 * 1024;
    tp.node.nlocal_max = kRanks;
    ina_team_t *team = nullptr;
    return ina_team_create(&tp, &team) == INA_OK ? team : nullptr;
}

int node_rank(const std::string &name, uint32_t rank)
{
    alarm(kChildAlarmS);
    ina_team_t *team = node_team(rank, name, 1u << 20);
    CHECK(team != nullptr);
    CHECK(one_call(team, rank, 16, 1, 0) == 0);     // the small group
    CHECK(one_call(team, rank, 100000, 2, 0) == 0); // the large one
    CHECK(one_call(team, rank, 100000, 3, INA_TASK_NONBLOCKING) == 0);
    CHECK(persistent(team, rank, 16, 3) == 0);
    CHECK(persistent(team, rank, 50000, 3) == 0);
    ina_team_destroy(team);
    return 0;
}

int no_segment_rank(const std::string &name, uint32_t rank)
{
    alarm(kChildAlarmS);
    // Too small for any step of the large group.
    ina_team_t *team = node_team(rank, name, 1);
    CHECK(team != nullptr);
    std::vector<int32_t> in(100000, 1), out(100000);
    const ina_task_params_t p = allreduce(in.data(), out.data(), in.size(), 0);
    ina_task_t *task = nullptr;
    CHECK(ina_task_init(team, &p, &task) == INA_OK);
    const ina_task_result_t r = run(task);
    ina_task_finalize(task);
    CHECK(r.rc == INA_OK && r.outcome == INA_FALLBACK_UNREACHABLE);
    CHECK(r.reason != nullptr);
    CHECK(one_call(team, rank, 16, 4, 0) == 0); // the small group still serves
    ina_team_destroy(team);
    return 0;
}

template <typename F> int ranks(const char *what, F body)
{
    std::vector<pid_t> pids;
    std::fflush(stdout);
    for (uint32_t r = 0; r < kRanks; ++r) {
        pid_t p = fork();
        if (p == 0) {
            const int rc = body(r);
            std::fflush(stdout);
            std::_Exit(rc);
        }
        pids.push_back(p);
    }
    const int failed = ina_test::reap_children(pids, what);
    std::printf("%s: %s\n", what, failed == 0 ? "ok" : "FAILED");
    return failed;
}

} // namespace

int main()
{
    int failed = 0;
    const std::string stem = "/ina-test-team-" + std::to_string(getpid()) + "-";
    failed += ranks("node stage alone", [&](uint32_t r) { return node_rank(stem + "a", r); });
    failed += ranks("node stage without its large segment",
                    [&](uint32_t r) { return no_segment_rank(stem + "b", r); });

    const char *agent = std::getenv("INA_SWITCHD");
    if (agent == nullptr || access(agent, X_OK) != 0) {
        std::printf("one agent: skipped (INA_SWITCHD not set)\n");
        return failed == 0 ? 0 : 1;
    }
    char addr[128], err[512];
    int pid = -1;
    const char *const args[] = {"--seg-size", "8192",        "--max-window", "16",   "--segs",
                                "256",        "--log-level", "warn",         nullptr};
    if (ina_agent_spawn(agent, "127.0.0.1", args, addr, sizeof(addr), &pid, err, sizeof(err)) !=
        INA_OK) {
        std::fprintf(stderr, "FAIL: ina_agent_spawn: %s\n", err);
        return 1;
    }
    Shared *sh = ina_test::map_shared<Shared>(kRanks);
    failed += ranks("one agent", [&](uint32_t r) { return agent_rank(addr, sh, r); });
    ina_test::unmap_shared(sh);
    ina_agent_stop(pid, 5000);
    return failed == 0 ? 0 : 1;
}

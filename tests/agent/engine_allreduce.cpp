// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The client engine (libina_client) against a real ina-switchd ($INA_SWITCHD):
// the agent is started with ina_agent_spawn, K processes (2, 3, 4, 8) each
// connect their own client, rank 0 creates the job and hands its parameters
// to the others through shared memory, all join and run allreduces over many
// dtype/op/count values (0, 1, odd, multi-block, MiBs; in place too). Every
// rank checks its result against a reference it computes itself with
// ina_reduce over every rank's deterministic input, in rank order.
// Then: a killed agent yields INA_FALLBACK_UNREACHABLE on every rank; ina_agent_stop
// and failed spawns leave no process behind.
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "engine_harness.h"
#include "ina_client.h"
#include "ina_geometry.h"
#include "ina_reduce.h"

namespace {

constexpr uint32_t kSegBytes = 8192;
constexpr int kChildAlarmS = 120; // a hung child dies; the parent reports it

struct Case {
    unsigned dtype;
    unsigned op;
    uint64_t count;
    bool in_place;
};

// Identical on every rank: all ranks issue the same calls in the same order.
const Case kCases[] = {
    {INA_DT_INT32, INA_OP_SUM, 0, false},
    {INA_DT_INT32, INA_OP_SUM, 1, false},
    {INA_DT_DOUBLE, INA_OP_SUM, 1001, false},
    {INA_DT_FLOAT, INA_OP_MAX, 3 * (kSegBytes / 4) + 7, false},
    {INA_DT_INT64, INA_OP_BXOR, 5000, true},
    {INA_DT_UINT8, INA_OP_PROD, 100000, false},
    {INA_DT_INT16, INA_OP_MIN, 77777, true},
    {INA_DT_LONG_DOUBLE, INA_OP_SUM, 2049, false},
    {INA_DT_UINT32, INA_OP_LAND, 9000, false},
    {INA_DT_INT32, INA_OP_SUM, 0, true},
    {INA_DT_INT8, INA_OP_LXOR, 12345, false},
    {INA_DT_UINT16, INA_OP_BOR, 4097, true},
    {INA_DT_FLOAT, INA_OP_SUM, 1u << 20, false}, // 4 MiB
    {INA_DT_DOUBLE, INA_OP_PROD, 300001, true},  // 2.3 MiB in place
    {INA_DT_UINT64, INA_OP_MAX, 1, true},
};

// Bytes of a long double that carry its value (x87: 10 of 16).
constexpr size_t kLongDoubleBytes =
    std::numeric_limits<long double>::digits == 64 ? 10 : sizeof(long double);

uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Deterministic input of `rank` for case `ci`.
void fill_input(void *buf, const Case &c, size_t ci, uint32_t rank)
{
    const size_t esz = ina_proto_dtype_size(c.dtype);
    auto *out = static_cast<uint8_t *>(buf);
    for (uint64_t i = 0; i < c.count; ++i) {
        uint64_t h = mix((static_cast<uint64_t>(ci) << 48) ^ (static_cast<uint64_t>(rank) << 40) ^ i);
        if (c.op == INA_OP_LAND || c.op == INA_OP_LOR || c.op == INA_OP_LXOR) {
            h = (h % 3 == 0) ? 0 : h; // zeros make logical ops interesting
        }
        double d;
        if (c.op == INA_OP_PROD) {
            d = 1.0 + (static_cast<double>(h % 2001) - 1000.0) / 4096.0;
        } else {
            d = (static_cast<double>(h % 2000001) - 1000000.0) / 64.0 + 1.0 / 3.0;
        }
        uint8_t *e = out + i * esz;
        switch (c.dtype) {
        case INA_DT_FLOAT: {
            float f = static_cast<float>(d);
            std::memcpy(e, &f, sizeof(f));
            break;
        }
        case INA_DT_DOUBLE:
            std::memcpy(e, &d, sizeof(d));
            break;
        case INA_DT_LONG_DOUBLE: {
            long double ld = static_cast<long double>(d) / 3.0L; // uses the extra precision
            std::memset(e, 0, esz); // padding of the x87 format: defined bytes
            std::memcpy(e, &ld, kLongDoubleBytes);
            break;
        }
        default:
            std::memcpy(e, &h, esz); // low bytes (little endian)
            break;
        }
    }
}

bool same_element(unsigned dtype, const uint8_t *a, const uint8_t *b, size_t esz)
{
    if (dtype == INA_DT_LONG_DOUBLE) {
        long double x, y; // padding bytes of the x87 format carry no value
        std::memcpy(&x, a, sizeof(x));
        std::memcpy(&y, b, sizeof(y));
        return x == y;
    }
    return std::memcmp(a, b, esz) == 0;
}

// Shared between the processes of one group.
struct Shared {
    pthread_barrier_t barrier;
    ina_job_params_t params;
    bool by_key; // every rank opens the job itself (ina_job_open), staggered, no barrier
};

Shared *make_shared(unsigned participants)
{
    Shared *s = ina_test::map_shared<Shared>(participants);
    return s;
}

void free_shared(Shared *s)
{
    ina_test::unmap_shared(s);
}

using ina_test::connect_or_die;
using ina_test::reap_children;
using ina_test::verdict;
using ina_test::verbose;

// Every rank opens the job by key; the barrier makes sure every member
// opened it before any block flows.
ina_job_t *open_job(ina_client_t *c, Shared *sh, uint32_t rank, uint32_t k,
                    uint32_t requested_window)
{
    std::vector<uint32_t> nodes(k);
    for (uint32_t i = 0; i < k; ++i) {
        nodes[i] = i / 2; // two ranks per node: exercises Node/Rank bitmaps
    }
    ina_job_params_t p{};
    ina_job_t *job =
        ina_test::open_job_or_die(c, 0, rank, k, nodes.data(), requested_window, 1u << 30, &p);
    if (rank == 0) {
        sh->params = p;
    }
    pthread_barrier_wait(&sh->barrier);
    return job;
}

// Every rank opens the job by key on its own, a little later than the rank
// before, and calls at once: the agent holds the first call until the last
// rank opened. Nobody waits for anybody here.
ina_job_t *open_by_key(ina_client_t *c, uint32_t rank, uint32_t k, ina_job_params_t *params)
{
    std::vector<uint32_t> nodes(k);
    for (uint32_t i = 0; i < k; ++i) {
        nodes[i] = i / 2;
    }
    ina_job_key_t key;
    ina_job_key_init(&key);
    ina_job_key_add(&key, "engine-key", 10);
    ina_job_key_add(&key, &k, sizeof(k));
    ina_job_key_seal(&key, ina_test::test_secret());
    usleep(20000 * rank);
    ina_job_t *job = nullptr;
    ina_job_open_params_t op{};
    op.mask = INA_JOB_OPEN_SHAPE; // more than the agent has: clamped to it
    op.key = &key;
    op.nmembers = k;
    op.node_of_member = nodes.data();
    op.rank = rank;
    op.window = 1000;
    op.block_bytes = 1u << 30;
    int rc = ina_job_open(c, &op, params, &job);
    if (rc != INA_OK) {
        std::fprintf(stderr, "rank %u: ina_job_open failed: rc %d\n", rank, rc);
        std::_Exit(4);
    }
    return job;
}

// One rank of a group running every case. Returns the exit status.
int rank_main(const char *addr, Shared *sh, uint32_t rank, uint32_t k)
{
    alarm(kChildAlarmS);
    ina_client_t *c = connect_or_die(addr, "rank " + std::to_string(rank));
    ina_agent_info_t info;
    ina_client_agent_info(c, &info);
    ina_job_params_t opened{};
    ina_job_t *job = sh->by_key ? open_by_key(c, rank, k, &opened)
                                : open_job(c, sh, rank, k, 1000);
    const ina_job_params_t &p = sh->by_key ? opened : sh->params;
    int bad = 0;
    // The window is clamped to the agent's maximum, the block to a Seg.
    if (p.window == 0 || p.window > info.max_window || p.block_bytes != info.seg_bytes ||
        p.block_bytes != kSegBytes || p.nmembers != k) {
        std::fprintf(stderr, "rank %u: unexpected job params: window %u (max %u) block %u\n",
                     rank, p.window, info.max_window, p.block_bytes);
        ++bad;
    }

    uint64_t expect_mid = 0;
    for (size_t ci = 0; ci < sizeof(kCases) / sizeof(kCases[0]); ++ci) {
        const Case &cs = kCases[ci];
        const size_t esz = ina_proto_dtype_size(cs.dtype);
        const size_t bytes = static_cast<size_t>(cs.count) * esz;
        std::vector<uint8_t> ref(bytes + 1), other(bytes + 1), sbuf(bytes + 1), rbuf(bytes + 1);
        // Reference: every rank's input reduced in rank order.
        fill_input(ref.data(), cs, ci, 0);
        for (uint32_t r = 1; r < k; ++r) {
            fill_input(other.data(), cs, ci, r);
            if (ina_reduce(cs.op, cs.dtype, ref.data(), other.data(), cs.count) != 0) {
                std::fprintf(stderr, "rank %u: ina_reduce refused case %zu\n", rank, ci);
                return 5;
            }
        }
        fill_input(sbuf.data(), cs, ci, rank);
        void *send = sbuf.data();
        void *recv = rbuf.data();
        if (cs.in_place) {
            send = recv;
            fill_input(rbuf.data(), cs, ci, rank);
        } else {
            std::memset(rbuf.data(), 0xa5, rbuf.size());
        }
        ina_cqe_t cqe;
        int rc = verdict(ina_job_allreduce(job, send, recv, cs.count, cs.dtype, cs.op, &cqe), cqe);
        // Cut by the engine's per-call rule (ina_geometry.h).
        const uint64_t block = ina::call_block_bytes(bytes, p.block_bytes);
        const uint64_t blocks = (bytes + block - 1) / block;
        bool ok = rc == INA_OK && cqe.rc == INA_OK && cqe.blocks == blocks &&
                  (cs.count == 0 || cqe.mid == expect_mid);
        if (!ok) {
            std::fprintf(stderr,
                         "rank %u case %zu: rc %d status %u mid %llu (want %llu) blocks %llu "
                         "(want %llu)\n",
                         rank, ci, rc, cqe.status, static_cast<unsigned long long>(cqe.mid),
                         static_cast<unsigned long long>(expect_mid),
                         static_cast<unsigned long long>(cqe.blocks),
                         static_cast<unsigned long long>(blocks));
        }
        expect_mid += cs.count > 0 ? 1 : 0; // count 0 consumes no MID
        uint64_t wrong = 0, first = 0;
        for (uint64_t i = 0; ok && i < cs.count; ++i) {
            if (!same_element(cs.dtype, &rbuf[i * esz], &ref[i * esz], esz)) {
                if (wrong++ == 0) {
                    first = i;
                }
            }
        }
        if (wrong != 0) {
            std::fprintf(stderr, "rank %u case %zu (%s %s n=%llu%s): %llu wrong elements, first %llu\n",
                         rank, ci, ina_proto_dtype_name(cs.dtype), ina_proto_op_name(cs.op),
                         static_cast<unsigned long long>(cs.count), cs.in_place ? " in place" : "",
                         static_cast<unsigned long long>(wrong),
                         static_cast<unsigned long long>(first));
            ok = false;
        }
        // Bytes past the result and, out of place, the send buffer stay untouched.
        const uint8_t guard = cs.in_place ? 0 : 0xa5;
        if (rbuf[bytes] != guard) {
            std::fprintf(stderr, "rank %u case %zu: wrote past the receive buffer\n", rank, ci);
            ok = false;
        }
        if (!cs.in_place) {
            fill_input(other.data(), cs, ci, rank);
            if (std::memcmp(other.data(), sbuf.data(), bytes) != 0) {
                std::fprintf(stderr, "rank %u case %zu: send buffer modified\n", rank, ci);
                ok = false;
            }
        }
        if (!ok) {
            ++bad;
        } else if (rank == 0) {
            std::printf("  K=%u %-11s %-4s n=%-8llu %-8s blocks=%-4llu ok\n", k,
                        ina_proto_dtype_name(cs.dtype), ina_proto_op_name(cs.op),
                        static_cast<unsigned long long>(cs.count),
                        cs.in_place ? "in-place" : "", static_cast<unsigned long long>(blocks));
            std::fflush(stdout);
        }
    }
    ina_job_leave(job);
    ina_client_disconnect(c);
    return bad == 0 ? 0 : 1;
}

int run_group(const char *addr, uint32_t k, bool by_key = false)
{
    Shared *sh = make_shared(k);
    sh->by_key = by_key;
    std::vector<pid_t> pids;
    std::fflush(stdout);
    for (uint32_t r = 0; r < k; ++r) {
        pid_t pid = fork();
        if (pid == 0) {
            int rc = rank_main(addr, sh, r, k);
            std::fflush(stdout); // _Exit flushes nothing
            std::_Exit(rc);
        }
        pids.push_back(pid);
    }
    int failed = reap_children(pids, "allreduce group");
    free_shared(sh);
    std::printf("K=%u%s: %zu calls per rank checked against the rank-ordered reference: %s\n",
                k, by_key ? " (job opened by key, ranks staggered)" : "",
                sizeof(kCases) / sizeof(kCases[0]), failed == 0 ? "ok" : "FAILED");
    return failed;
}

// Agent killed between calls: every rank must see INA_FALLBACK_UNREACHABLE.
int lost_rank_main(const char *addr, Shared *sh, uint32_t rank, uint32_t k)
{
    alarm(kChildAlarmS);
    ina_client_t *c = connect_or_die(addr, "rank " + std::to_string(rank));
    ina_job_t *job = open_job(c, sh, rank, k, 4);
    std::vector<int32_t> in(3000, static_cast<int32_t>(rank + 1)), out(3000, 0);
    ina_cqe_t cqe;
    int rc = verdict(
        ina_job_allreduce(job, in.data(), out.data(), in.size(), INA_DT_INT32, INA_OP_SUM, &cqe),
        cqe);
    const int32_t want = static_cast<int32_t>(k * (k + 1) / 2);
    bool ok = rc == INA_OK && out[0] == want && out[2999] == want;
    pthread_barrier_wait(&sh->barrier); // the parent kills the agent now
    pthread_barrier_wait(&sh->barrier);
    // Wait until this client noticed (the test must not depend on how fast).
    for (int i = 0; i < 20000 && ina_client_progress(c); ++i) {
        usleep(1000);
    }
    rc = verdict(
        ina_job_allreduce(job, in.data(), out.data(), in.size(), INA_DT_INT32, INA_OP_SUM, &cqe),
        cqe);
    if (rc != INA_FALLBACK_UNREACHABLE) {
        std::fprintf(stderr, "rank %u: after the agent died: %d, want INA_FALLBACK_UNREACHABLE\n",
                     rank, rc);
        ok = false;
    }
    ina_job_leave(job);
    ina_client_disconnect(c);
    return ok ? 0 : 1;
}

bool process_gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

} // namespace

int main()
{
    const char *agent = std::getenv("INA_SWITCHD");
    if (agent == nullptr || access(agent, X_OK) != 0) {
        std::printf("SKIP: INA_SWITCHD not set or not executable\n");
        return 77;
    }
    int failed = 0;
    char addr[128];
    char err[512];
    int pid = -1;
    const char *log = std::getenv("INA_TEST_AGENT_LOG"); // e.g. debug
    const char *const args[] = {"--seg-size", "8192", "--max-window", "16", "--segs", "256",
                                "--log-level", log != nullptr ? log : "warn", nullptr};
    int rc = ina_agent_spawn(agent, "127.0.0.1", args, addr, sizeof(addr), &pid, err, sizeof(err));
    if (rc != INA_OK) {
        std::fprintf(stderr, "FAIL: ina_agent_spawn: %s\n", err);
        return 1;
    }
    std::printf("agent pid %d at %s\n", pid, addr);
    for (uint32_t k : {2u, 3u, 4u, 8u}) {
        failed += run_group(addr, k);
    }
    // Opened by key: the first call starts before the last rank opened, is
    // held by the agent, and every call is still offloaded and exact (a
    // denied call would fail the case: the test expects INA_OK).
    failed += run_group(addr, 3, true);

    // Kill the agent between two calls of a 3-rank job.
    {
        const uint32_t k = 3;
        Shared *sh = make_shared(k + 1);
        std::vector<pid_t> pids;
        std::fflush(stdout);
        for (uint32_t r = 0; r < k; ++r) {
            pid_t p = fork();
            if (p == 0) {
                int rc = lost_rank_main(addr, sh, r, k);
                std::fflush(stdout);
                std::_Exit(rc);
            }
            pids.push_back(p);
        }
        pthread_barrier_wait(&sh->barrier); // opened
        pthread_barrier_wait(&sh->barrier); // first call done
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        pthread_barrier_wait(&sh->barrier);
        int f = reap_children(pids, "lost agent");
        free_shared(sh);
        std::printf("agent killed before a call: INA_FALLBACK_UNREACHABLE on all %u ranks: %s\n", k,
                    f == 0 ? "ok" : "FAILED");
        failed += f;
    }

    // Connecting to the dead agent's address fails with a reason, not a hang.
    {
        std::fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            alarm(kChildAlarmS);
            ina_client_config_t cfg{addr, 5000, 5000, 0, 0, nullptr, nullptr};
            ina_client_t *c = nullptr;
            char why[256] = "";
            int crc = ina_client_connect(&cfg, &c, why, sizeof(why));
            bool ok = crc == INA_ERR_UNREACHABLE && c == nullptr && why[0] != '\0';
            std::printf("connect to a dead agent: rc %d \"%s\": %s\n", crc, why,
                        ok ? "ok" : "FAILED");
            std::fflush(stdout);
            std::_Exit(ok ? 0 : 1);
        }
        failed += reap_children({p}, "connect to a dead agent");
    }

    // ina_agent_stop leaves neither a process nor a zombie.
    rc = ina_agent_spawn(agent, "127.0.0.1", nullptr, addr, sizeof(addr), &pid, err, sizeof(err));
    if (rc != INA_OK) {
        std::fprintf(stderr, "FAIL: second ina_agent_spawn: %s\n", err);
        ++failed;
    } else {
        ina_agent_stop(pid, 5000);
        int st;
        bool reaped = waitpid(pid, &st, WNOHANG) < 0 && errno == ECHILD;
        bool ok = process_gone(pid) && reaped;
        std::printf("ina_agent_stop: pid %d gone and reaped: %s\n", pid, ok ? "ok" : "FAILED");
        failed += ok ? 0 : 1;
    }

    // A program that exits instead of reporting an address: clear error, no zombie.
    rc = ina_agent_spawn("/bin/false", "127.0.0.1", nullptr, addr, sizeof(addr), &pid, err,
                         sizeof(err));
    bool ok = rc != INA_OK && pid == -1 && std::strstr(err, "exited with status 1") != nullptr;
    std::printf("spawn of a program that exits early fails with \"%s\": %s\n", err,
                ok ? "ok" : "FAILED");
    failed += ok ? 0 : 1;
    rc = ina_agent_spawn("/nonexistent/ina-switchd", "127.0.0.1", nullptr, addr, sizeof(addr),
                         &pid, err, sizeof(err));
    ok = rc != INA_OK && pid == -1;
    std::printf("spawn of a missing program fails with \"%s\": %s\n", err, ok ? "ok" : "FAILED");
    failed += ok ? 0 : 1;

    // No child of this test is left, running or zombie.
    int st;
    ok = waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD;
    std::printf("no stray child process: %s\n", ok ? "ok" : "FAILED");
    failed += ok ? 0 : 1;

    std::printf("%s: %d failure(s)\n", failed == 0 ? "PASS" : "FAIL", failed);
    return failed == 0 ? 0 : 1;
}

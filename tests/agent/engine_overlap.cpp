// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Overlap through the engine's progress thread (config progress_thread): a
// rank that computes between post and wait must not hold the others back.
// K processes (2, 4) post two non-blocking calls of many windows each (an
// 8 MiB int32 ALLREDUCE, a 3 MiB BCAST; window 8 x 8 KiB blocks) and hand
// them to the thread (ina_call_background). Then one rank, the sleeper, stays
// out of the engine: it blocks in read() on a pipe until every other rank
// wrote one byte there, which each does only once both its calls completed
// with the right values. Without the thread the sleeper would send no block
// past its first window and the others could never complete (the test would
// hang into its alarm): completion itself is the evidence, no timing is
// measured. The sleeper then waits for its own calls and checks them too.
// Each group runs twice: the last rank sleeps, then rank 0 (the job creator).
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "engine_harness.h"
#include "ina_client.h"

namespace {

constexpr int kChildAlarmS = 120;         // a hung child dies; the parent reports it
constexpr uint64_t kReduceCount = 2u << 20; // int32: 8 MiB, 1024 blocks of 8 KiB
constexpr uint64_t kBcastBytes = 3u << 20;  // 384 blocks
constexpr uint32_t kWindow = 8;
constexpr uint32_t kBlock = 8192;
constexpr int kRounds = 2;

struct Shared {
    pthread_barrier_t barrier;
    ina_job_params_t params;
};

Shared *make_shared(unsigned participants)
{
    return ina_test::map_shared<Shared>(participants);
}

void free_shared(Shared *s)
{
    ina_test::unmap_shared(s);
}

int32_t reduce_input(uint32_t rank, uint64_t i)
{
    return static_cast<int32_t>((rank + 1) * (i % 1000 + 1) + i);
}

int32_t reduce_expect(uint32_t k, uint64_t i)
{
    return static_cast<int32_t>(k * (k + 1) / 2 * (i % 1000 + 1) + k * i);
}

uint8_t bcast_byte(int round, uint64_t i)
{
    return static_cast<uint8_t>(i * 7 + 3 + round);
}

// Both calls of one round on one rank: buffers, descriptors, checks.
struct Round {
    std::vector<int32_t> sbuf, rbuf;
    std::vector<uint8_t> bbuf;
    ina_coll_desc_t reduce{}, bcast{};

    Round(uint32_t rank, uint32_t root, int round)
        : sbuf(kReduceCount), rbuf(kReduceCount, -1), bbuf(kBcastBytes, 0)
    {
        for (uint64_t i = 0; i < kReduceCount; ++i) {
            sbuf[i] = reduce_input(rank, i);
        }
        if (rank == root) {
            for (uint64_t i = 0; i < kBcastBytes; ++i) {
                bbuf[i] = bcast_byte(round, i);
            }
        }
        reduce.coll = INA_COLL_ALLREDUCE;
        reduce.op = INA_OP_SUM;
        reduce.dtype = INA_DT_INT32;
        reduce.sbuf = sbuf.data();
        reduce.rbuf = rbuf.data();
        reduce.count = kReduceCount;
        bcast.coll = INA_COLL_BCAST;
        bcast.op = INA_OP_REPLACE;
        bcast.dtype = INA_DT_UINT8;
        bcast.rbuf = bbuf.data();
        bcast.count = kBcastBytes;
        bcast.root = root;
    }

    bool check(uint32_t rank, uint32_t k, int round) const
    {
        for (uint64_t i = 0; i < kReduceCount; ++i) {
            if (rbuf[i] != reduce_expect(k, i)) {
                std::fprintf(stderr, "rank %u round %d: allreduce element %llu = %d, want %d\n",
                             rank, round, static_cast<unsigned long long>(i), rbuf[i],
                             reduce_expect(k, i));
                return false;
            }
        }
        for (uint64_t i = 0; i < kBcastBytes; ++i) {
            if (bbuf[i] != bcast_byte(round, i)) {
                std::fprintf(stderr, "rank %u round %d: bcast byte %llu = %u, want %u\n", rank,
                             round, static_cast<unsigned long long>(i), bbuf[i],
                             bcast_byte(round, i));
                return false;
            }
        }
        return true;
    }
};

bool wait_ok(ina_call_t *call, uint64_t want_mid, uint32_t rank, const char *what)
{
    ina_cqe_t cqe;
    int rc = ina_call_wait(call, &cqe);
    ina_call_free(call);
    if (rc != INA_OK || cqe.mid != want_mid) {
        std::fprintf(stderr, "rank %u: %s: rc %d status %s mid %llu (want %llu)\n", rank, what,
                     rc, ina_proto_status_name(cqe.status),
                     static_cast<unsigned long long>(cqe.mid),
                     static_cast<unsigned long long>(want_mid));
        return false;
    }
    return true;
}

int rank_main(const char *addr, Shared *sh, const int (*pipes)[2], uint32_t rank, uint32_t k)
{
    alarm(kChildAlarmS);
    const char *v = std::getenv("INA_TEST_VERBOSE");
    ina_client_config_t cfg{addr, 10000, 30000, v != nullptr ? std::atoi(v) : 0, 1, nullptr, nullptr};
    ina_client_t *c = nullptr;
    char err[256] = "";
    if (ina_client_connect(&cfg, &c, err, sizeof(err)) != INA_OK) {
        std::fprintf(stderr, "rank %u: connect to %s failed: %s\n", rank, addr, err);
        return 2;
    }
    const std::vector<uint32_t> nodes(k, 0);
    ina_job_params_t p{};
    ina_job_t *job = ina_test::open_job_or_die(c, 0, rank, k, nodes.data(), kWindow, kBlock, &p);
    if (rank == 0) {
        sh->params = p;
    }
    pthread_barrier_wait(&sh->barrier);
    if (sh->params.window != kWindow || sh->params.block_bytes != kBlock) {
        std::fprintf(stderr, "rank %u: job has window %u block %u, want %u and %u\n", rank,
                     sh->params.window, sh->params.block_bytes, kWindow, kBlock);
        return 3;
    }
    pthread_barrier_wait(&sh->barrier); // every member joined before any block flows

    bool ok = true;
    uint64_t mid = 0;
    for (int round = 0; round < kRounds; ++round) {
        const uint32_t sleeper = round == 0 ? k - 1 : 0;
        Round r(rank, 1 % k, round);
        ina_call_t *calls[2] = {nullptr, nullptr};
        if (ina_test::post(job, &r.reduce, &calls[0]) != INA_OFFLOADED ||
            ina_test::post(job, &r.bcast, &calls[1]) != INA_OFFLOADED) {
            std::fprintf(stderr, "rank %u round %d: post failed\n", rank, round);
            return 4;
        }
        ina_call_background(calls[0]);
        ina_call_background(calls[1]);
        const int *fds = pipes[round];
        if (rank == sleeper) {
            // Out of the engine until every other rank has both results.
            for (uint32_t got = 0; got < k - 1;) {
                char b;
                ssize_t n = read(fds[0], &b, 1);
                if (n == 1) {
                    ++got;
                } else if (n < 0 && errno != EINTR) {
                    std::perror("read");
                    return 5;
                }
            }
        }
        ok = wait_ok(calls[0], mid, rank, "allreduce") && ok;
        ok = wait_ok(calls[1], mid + 1, rank, "bcast") && ok;
        ok = r.check(rank, k, round) && ok;
        mid += 2;
        if (rank != sleeper) {
            const char b = 1;
            if (write(fds[1], &b, 1) != 1) {
                std::perror("write");
                return 5;
            }
        }
        if (rank == 0) {
            std::printf("K=%u round %d: rank %u stayed out of the engine while the others "
                        "completed 8 MiB allreduce + 3 MiB bcast: %s\n",
                        k, round, sleeper, ok ? "ok" : "FAILED");
            std::fflush(stdout);
        }
        pthread_barrier_wait(&sh->barrier);
    }
    ina_job_leave(job);
    ina_client_disconnect(c); // joins the thread
    return ok ? 0 : 1;
}

int run_group(const char *addr, uint32_t k)
{
    Shared *sh = make_shared(k);
    int pipes[kRounds][2];
    for (auto &p : pipes) {
        if (pipe(p) != 0) {
            std::perror("pipe");
            std::exit(1);
        }
    }
    std::vector<pid_t> pids;
    std::fflush(stdout);
    for (uint32_t r = 0; r < k; ++r) {
        pid_t pid = fork();
        if (pid == 0) {
            int rc = rank_main(addr, sh, pipes, r, k);
            std::fflush(stdout); // _Exit flushes nothing
            std::_Exit(rc);
        }
        pids.push_back(pid);
    }
    int failed = 0;
    for (size_t r = 0; r < pids.size(); ++r) {
        int st = 0;
        while (waitpid(pids[r], &st, 0) < 0 && errno == EINTR) {
        }
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            std::fprintf(stderr, "K=%u: rank %zu %s %d\n", k, r,
                         WIFSIGNALED(st) ? "killed by signal" : "exited with",
                         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
            ++failed;
        }
    }
    for (auto &p : pipes) {
        close(p[0]);
        close(p[1]);
    }
    free_shared(sh);
    return failed;
}

} // namespace

int main()
{
    const char *agent = std::getenv("INA_SWITCHD");
    if (agent == nullptr || access(agent, X_OK) != 0) {
        std::printf("SKIP: INA_SWITCHD not set or not executable\n");
        return 77;
    }
    char addr[128], err[512];
    int pid = -1;
    const char *log = std::getenv("INA_TEST_AGENT_LOG");
    const char *const args[] = {"--seg-size", "8192", "--max-window", "16", "--segs", "64",
                                "--log-level", log != nullptr ? log : "warn", nullptr};
    if (ina_agent_spawn(agent, "127.0.0.1", args, addr, sizeof(addr), &pid, err,
                        sizeof(err)) != INA_OK) {
        std::fprintf(stderr, "FAIL: ina_agent_spawn: %s\n", err);
        return 1;
    }
    std::printf("agent pid %d at %s\n", pid, addr);
    int failed = 0;
    for (uint32_t k : {2u, 4u}) {
        failed += run_group(addr, k);
    }
    ina_agent_stop(pid, 5000);
    std::printf("%s: %d failure(s)\n", failed == 0 ? "PASS" : "FAIL", failed);
    return failed == 0 ? 0 : 1;
}

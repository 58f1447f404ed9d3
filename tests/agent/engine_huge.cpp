// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// One allreduce of more than 2^31 elements and more than 2 GiB per rank
// through ina-switchd ($INA_SWITCHD), in place, on 2 processes. Needs about
// 5 GiB of memory and a few tens of seconds, so it runs only when
// INA_TEST_HUGE=1 (otherwise it reports SKIP). Each rank checks every element
// against the closed-form sum of both ranks' inputs.
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "engine_harness.h"
#include "ina_client.h"

namespace {

constexpr uint64_t kCount = (UINT64_C(1) << 31) + 4099; // uint8 elements: > 2 GiB
constexpr uint32_t kRanks = 2;

struct Shared {
    pthread_barrier_t barrier;
    ina_job_params_t params;
};

inline uint8_t input(uint64_t i, uint32_t rank)
{
    return static_cast<uint8_t>((i >> 12) * 131 + i * 7 + rank * 29);
}

int rank_main(const char *addr, Shared *sh, uint32_t rank)
{
    alarm(600);
    ina_client_t *c = ina_test::connect_or_die(addr, "rank " + std::to_string(rank), 60000);
    const uint32_t nodes[kRanks] = {0, 0};
    ina_job_params_t p{};
    ina_job_t *job = ina_test::open_job_or_die(c, 0, rank, kRanks, nodes, 16, 1u << 20, &p);
    if (rank == 0) {
        sh->params = p;
    }
    pthread_barrier_wait(&sh->barrier);

    std::unique_ptr<uint8_t[]> buf(new (std::nothrow) uint8_t[kCount]);
    if (!buf) {
        std::fprintf(stderr, "rank %u: cannot allocate %llu bytes\n", rank,
                     static_cast<unsigned long long>(kCount));
        return 4;
    }
    for (uint64_t i = 0; i < kCount; ++i) {
        buf[i] = input(i, rank);
    }
    ina_cqe_t cqe;
    int rc = ina_test::verdict(
        ina_job_allreduce(job, buf.get(), buf.get(), kCount, INA_DT_UINT8, INA_OP_SUM, &cqe), cqe);
    uint64_t wrong = 0;
    for (uint64_t i = 0; rc == INA_OK && i < kCount; ++i) {
        uint8_t want = static_cast<uint8_t>(input(i, 0) + input(i, 1));
        wrong += buf[i] != want;
    }
    const uint64_t blocks = (kCount + sh->params.block_bytes - 1) / sh->params.block_bytes;
    bool ok = rc == INA_OK && wrong == 0 && cqe.blocks == blocks;
    if (rank == 0 || !ok) {
        std::printf("rank %u: %llu uint8 in place (%llu blocks of %u bytes): rc %d, %llu wrong: "
                    "%s\n",
                    rank, static_cast<unsigned long long>(kCount),
                    static_cast<unsigned long long>(cqe.blocks), sh->params.block_bytes, rc,
                    static_cast<unsigned long long>(wrong), ok ? "ok" : "FAILED");
    }
    ina_job_leave(job);
    ina_client_disconnect(c);
    return ok ? 0 : 1;
}

} // namespace

int main()
{
    const char *agent = std::getenv("INA_SWITCHD");
    const char *huge = std::getenv("INA_TEST_HUGE");
    if (agent == nullptr || access(agent, X_OK) != 0 || huge == nullptr || std::atoi(huge) == 0) {
        std::printf("SKIP: needs INA_SWITCHD and INA_TEST_HUGE=1 (about 5 GiB of memory)\n");
        return 77;
    }
    char addr[128];
    char err[512];
    int pid = -1;
    const char *const args[] = {"--seg-size", "1048576", "--segs", "32", "--max-window", "16",
                                nullptr};
    if (ina_agent_spawn(agent, "127.0.0.1", args, addr, sizeof(addr), &pid, err, sizeof(err)) !=
        INA_OK) {
        std::fprintf(stderr, "FAIL: ina_agent_spawn: %s\n", err);
        return 1;
    }
    void *p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) {
        ina_agent_stop(pid, 5000);
        return 1;
    }
    auto *sh = static_cast<Shared *>(p);
    pthread_barrierattr_t a;
    pthread_barrierattr_init(&a);
    pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&sh->barrier, &a, kRanks);
    int failed = 0;
    pid_t kids[kRanks];
    std::fflush(stdout);
    for (uint32_t r = 0; r < kRanks; ++r) {
        kids[r] = fork();
        if (kids[r] == 0) {
            int rc = rank_main(addr, sh, r);
            std::fflush(stdout);
            std::_Exit(rc);
        }
    }
    for (pid_t k : kids) {
        int st = 0;
        while (waitpid(k, &st, 0) < 0 && errno == EINTR) {
        }
        failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    ina_agent_stop(pid, 5000);
    std::printf("%s: %d failure(s)\n", failed == 0 ? "PASS" : "FAIL", failed);
    return failed == 0 ? 0 : 1;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Pieces every engine test (engine_*.cpp) shares: a block of memory shared by
// the forked "rank" processes of one group, with a process-shared barrier, a
// client connection that ends the process with a message if it fails, the
// reaping of the rank processes, and a call's fate as one number.
#ifndef INA_ENGINE_HARNESS_H
#define INA_ENGINE_HARNESS_H

#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "ina_client.h"

namespace ina_test {

// Maps a T (value-initialised) shared with the processes forked afterwards and
// initialises its process-shared `barrier` member for `participants`.
template <typename T> T *map_shared(unsigned participants)
{
    void *p = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        std::perror("mmap");
        std::exit(1);
    }
    T *s = new (p) T{};
    pthread_barrierattr_t a;
    pthread_barrierattr_init(&a);
    pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&s->barrier, &a, participants);
    pthread_barrierattr_destroy(&a);
    return s;
}

template <typename T> void unmap_shared(T *s)
{
    pthread_barrier_destroy(&s->barrier);
    s->~T();
    munmap(s, sizeof(T));
}

// INA_TEST_VERBOSE=N passes N to the engine's log.
inline int verbose()
{
    const char *v = std::getenv("INA_TEST_VERBOSE");
    return v != nullptr ? std::atoi(v) : 0;
}

// The rendezvous threshold the clients of this process (and of the ranks it
// forks afterwards) ask for in HELLO: 0 never. INA_TEST_RNDV=N sets it
// from the environment; a test may set it for a pass of its own.
inline int &rndv_bytes()
{
    static int v = [] {
        const char *e = std::getenv("INA_TEST_RNDV");
        return e != nullptr ? std::atoi(e) : 0;
    }();
    return v;
}

inline ina_client_t *connect_or_die(const char *addr, const std::string &who,
                                    int progress_timeout_ms = 30000)
{
    ina_client_config_t cfg{}; // the rest as by default
    cfg.agent_addr = addr;
    cfg.connect_timeout_ms = 10000;
    cfg.progress_timeout_ms = progress_timeout_ms;
    cfg.verbose = verbose();
    cfg.rndv_bytes = rndv_bytes();
    ina_client_t *c = nullptr;
    char err[256] = "";
    int rc = ina_client_connect(&cfg, &c, err, sizeof(err));
    if (rc != INA_OK) {
        std::fprintf(stderr, "%s: connect to %s failed (rc %d): %s\n", who.c_str(), addr, rc, err);
        std::_Exit(2);
    }
    return c;
}

// Groups of ranks a test process has reaped so far: the ranks of one group
// are forked with the same count, the next group's with another, so that a
// group never opens the job of one the agent may still be freeing.
inline uint32_t &groups_reaped()
{
    static uint32_t n = 0;
    return n;
}

// Job `index` of this group of ranks (the same key on every rank: their
// parent, its group count, the group's size and the index), opened by key
// as `rank`; the process exits on failure. `params` gets what the agent
// granted (the same on every rank).
// The secret the ranks of a test share (as an MPI job's processes share
// the launcher's): what seals their jobs' capabilities.
inline const uint8_t *test_secret()
{
    static const uint8_t secret[16] = {'e', 'n', 'g', 'i', 'n', 'e', ' ', 't',
                                       'e', 's', 't', ' ', 'k', 'e', 'y', '!'};
    return secret;
}

// The key of job `index` of this group of `n` ranks (alike on every rank).
inline ina_job_key_t group_job_key(uint32_t index, uint32_t n)
{
    static const char tag[] = "ina engine test";
    const uint64_t parent = static_cast<uint64_t>(getppid());
    ina_job_key_t key;
    ina_job_key_init(&key);
    ina_job_key_add(&key, tag, sizeof(tag));
    ina_job_key_add(&key, &parent, sizeof(parent));
    ina_job_key_add(&key, &groups_reaped(), sizeof(uint32_t));
    ina_job_key_add(&key, &n, sizeof(n));
    ina_job_key_add(&key, &index, sizeof(index));
    ina_job_key_seal(&key, test_secret());
    return key;
}

inline ina_job_t *open_job_or_die(ina_client_t *c, uint32_t index, uint32_t rank, uint32_t n,
                                  const uint32_t *nodes, uint32_t window, uint32_t block,
                                  ina_job_params_t *params)
{
    const ina_job_key_t key = group_job_key(index, n);
    ina_job_t *job = nullptr;
    ina_job_open_params_t op{};
    op.mask = INA_JOB_OPEN_SHAPE;
    op.key = &key;
    op.nmembers = n;
    op.node_of_member = nodes;
    op.rank = rank;
    op.window = window;
    op.block_bytes = block;
    int rc = ina_job_open(c, &op, params, &job);
    if (rc != INA_OK) {
        std::fprintf(stderr, "rank %u: opening job %u failed: rc %d\n", rank, index, rc);
        std::_Exit(4);
    }
    return job;
}

// Wait for every child; returns the number that failed.
inline int reap_children(const std::vector<pid_t> &pids, const char *what)
{
    ++groups_reaped();
    int failed = 0;
    for (size_t r = 0; r < pids.size(); ++r) {
        int st = 0;
        while (waitpid(pids[r], &st, 0) < 0 && errno == EINTR) {
        }
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            std::fprintf(stderr, "%s: rank %zu %s %d\n", what, r,
                         WIFSIGNALED(st) ? "killed by signal" : "exited with",
                         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
            ++failed;
        }
    }
    return failed;
}

// A call's fate as one number: the engine error (< 0) or, with INA_OK, the
// outcome (INA_OFFLOADED == 0, INA_FALLBACK_DENIED, INA_FALLBACK_UNREACHABLE).
inline int verdict(int rc, const ina_cqe_t &cqe)
{
    return rc != INA_OK ? rc : static_cast<int>(cqe.outcome);
}

// ina_job_post, with its fate as verdict() gives it.
inline int post(ina_job_t *job, const ina_coll_desc_t *d, ina_call_t **call)
{
    ina_outcome_t outcome = INA_OFFLOADED;
    int rc = ina_job_post(job, d, call, &outcome);
    return rc != INA_OK ? rc : static_cast<int>(outcome);
}

} // namespace ina_test

#endif // INA_ENGINE_HARNESS_H

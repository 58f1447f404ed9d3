// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// One round of every collective through a tree's job, for the tests of
// trees of real agents (engine_tree.cpp, engine_deep_tree.cpp): the same
// calls and checks whatever the tree's shape, which gives only the order in
// which the agents fold a double sum and the roots.
#ifndef INA_ENGINE_TREE_ROUND_H
#define INA_ENGINE_TREE_ROUND_H

#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "engine_harness.h"

namespace ina_test {

// A call run to its end: 0 if its fate was `want`, else that fate (100: it
// was offloaded where `want` was not).
inline int run_coll(ina_job_t *job, const ina_coll_desc_t &d, int want)
{
    ina_cqe_t cqe{};
    const int rc = ina_job_run(job, &d, &cqe);
    const int v = verdict(rc, cqe);
    return v == want ? 0 : (v == 0 ? 100 : v);
}

// A call's description, the fields not named zero.
inline ina_coll_desc_t coll_desc(unsigned coll, unsigned op, unsigned dtype, const void *sbuf,
                                 void *rbuf, uint64_t count, uint32_t root = 0)
{
    ina_coll_desc_t d{};
    d.coll = coll;
    d.op = op;
    d.dtype = dtype;
    d.sbuf = sbuf;
    d.rbuf = rbuf;
    d.count = count;
    d.root = root;
    return d;
}

struct TreeRound {
    uint32_t rank = 0, nranks = 0;
    uint32_t reduce_root = 0, bcast_root = 0;
    // Rank r's double at element i in round `round`, and the tree's sum of
    // every rank's, folded as the agents fold it (bit for bit).
    std::function<double(uint32_t r, uint64_t i, int round)> value;
    std::function<double(uint64_t i, int round)> tree_sum;
    // Doubles per allreduce, bytes per rank of the allgather and bcast.
    uint64_t n = 20000;
    uint32_t chunk = 3000;
};

// Round `round` on `job`, each call after a random pause of up to 3 ms
// (so that every level sees the blocks in another interleaving): ALLREDUCE
// of doubles (the tree's sum), ALLREDUCE SUM of int64 in place, REDUCE MAX
// of int64 to reduce_root, ALLGATHER of `chunk` bytes per rank (each
// agent's ranks are one range of a block), BCAST from bcast_root, BARRIER.
// Every call must be offloaded and every result exact. 0, or 1 with the
// first failure on stderr.
inline int tree_round(ina_job_t *job, const TreeRound &t, int round, std::mt19937 &rng)
{
    const uint32_t rank = t.rank;
    auto fail = [rank, round](const char *fmt, ...) {
        std::fprintf(stderr, "rank %u: round %d: ", rank, round);
        va_list ap;
        va_start(ap, fmt);
        std::vfprintf(stderr, fmt, ap);
        va_end(ap);
        std::fprintf(stderr, "\n");
        return 1;
    };
    auto pause = [&] { usleep(static_cast<useconds_t>(rng() % 3000)); };
    const uint64_t n = t.n;
    std::vector<double> x(n), y(n);
    std::vector<int64_t> xi(n), yi(n);
    std::vector<uint8_t> mine(t.chunk), all(size_t{t.chunk} * t.nranks);

    for (uint64_t i = 0; i < n; ++i) {
        x[i] = t.value(rank, i, round);
    }
    pause();
    ina_coll_desc_t d = coll_desc(INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_DOUBLE, x.data(), y.data(), n);
    if (run_coll(job, d, INA_OFFLOADED) != 0) {
        return fail("double allreduce not offloaded");
    }
    for (uint64_t i = 0; i < n; ++i) {
        const double want = t.tree_sum(i, round);
        if (std::memcmp(&y[i], &want, sizeof(double)) != 0) {
            return fail("double sum element %llu %.17g, want the tree's %.17g",
                        static_cast<unsigned long long>(i), y[i], want);
        }
    }

    for (uint64_t i = 0; i < n; ++i) {
        xi[i] = static_cast<int64_t>(rank * 1000003 + i * 7 + round);
    }
    pause();
    d = coll_desc(INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, xi.data(), xi.data(), n);
    if (run_coll(job, d, INA_OFFLOADED) != 0) {
        return fail("int64 allreduce not offloaded");
    }
    for (uint64_t i = 0; i < n; ++i) {
        int64_t want = 0;
        for (uint32_t r = 0; r < t.nranks; ++r) {
            want += static_cast<int64_t>(r * 1000003 + i * 7 + round);
        }
        if (xi[i] != want) {
            return fail("int64 sum element %llu", static_cast<unsigned long long>(i));
        }
    }

    for (uint64_t i = 0; i < n; ++i) {
        xi[i] = static_cast<int64_t>((rank * 31 + i * 17 + round) % 101);
    }
    std::fill(yi.begin(), yi.end(), -1);
    pause();
    d = coll_desc(INA_COLL_REDUCE, INA_OP_MAX, INA_DT_INT64, xi.data(), yi.data(), n,
                  t.reduce_root);
    if (run_coll(job, d, INA_OFFLOADED) != 0) {
        return fail("reduce not offloaded");
    }
    for (uint64_t i = 0; rank == t.reduce_root && i < n; ++i) {
        int64_t want = 0;
        for (uint32_t r = 0; r < t.nranks; ++r) {
            want = std::max<int64_t>(want, (r * 31 + i * 17 + round) % 101);
        }
        if (yi[i] != want) {
            return fail("reduce element %llu", static_cast<unsigned long long>(i));
        }
    }

    for (uint32_t i = 0; i < t.chunk; ++i) {
        mine[i] = static_cast<uint8_t>(rank * 59 + i + round);
    }
    pause();
    d = coll_desc(INA_COLL_ALLGATHER, INA_OP_REPLACE, INA_DT_UINT8, mine.data(), all.data(),
                  t.chunk);
    if (run_coll(job, d, INA_OFFLOADED) != 0) {
        return fail("allgather not offloaded");
    }
    for (uint32_t r = 0; r < t.nranks; ++r) {
        for (uint32_t i = 0; i < t.chunk; ++i) {
            if (all[size_t{r} * t.chunk + i] != static_cast<uint8_t>(r * 59 + i + round)) {
                return fail("allgather chunk %u byte %u", r, i);
            }
        }
    }

    for (uint32_t i = 0; i < t.chunk; ++i) {
        mine[i] = rank == t.bcast_root ? static_cast<uint8_t>(i * 13 + round) : 0;
    }
    pause();
    d = coll_desc(INA_COLL_BCAST, INA_OP_REPLACE, INA_DT_UINT8, nullptr, mine.data(), t.chunk,
                  t.bcast_root);
    if (run_coll(job, d, INA_OFFLOADED) != 0) {
        return fail("bcast not offloaded");
    }
    for (uint32_t i = 0; i < t.chunk; ++i) {
        if (mine[i] != static_cast<uint8_t>(i * 13 + round)) {
            return fail("bcast byte %u", i);
        }
    }

    pause();
    d = coll_desc(INA_COLL_BARRIER, INA_OP_REPLACE, INA_DT_UINT8, nullptr, nullptr, 0);
    return run_coll(job, d, INA_OFFLOADED) != 0 ? fail("barrier not offloaded") : 0;
}

} // namespace ina_test

#endif

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Every offloadable collective through the client engine (libina_client) and a
// real ina-switchd ($INA_SWITCHD). K processes (2, 3, 4, 8) each connect a
// client and join two jobs: A (window 16, 8 KiB blocks) and B (window 4,
// 2 KiB blocks: many blocks per call, parts and chunks straddle them).
//  1. Blocking: ALLREDUCE, REDUCE, REDUCE_SCATTER (uneven recvcounts, zeros),
//     BCAST, ALLGATHER and BARRIER, in place where MPI allows it, roots 0,
//     last and middle, counts 0, 1, odd, multi-block; reductions also over
//     MINLOC/MAXLOC pairs, long double, complex and bool.
//  2. Non-blocking: batches of calls posted on A and B alternately, with
//     blocking calls interleaved, then completed by wait (in reverse order) or
//     by polling ina_call_test.
// Every rank checks its whole receive buffer (and the bytes past it, and an
// out-of-place send buffer) against an image it computes itself from every
// rank's deterministic input: ina_reduce in rank order for reductions, the
// definition of BCAST/ALLGATHER for data moves; BARRIER against a shared
// arrival counter. The MID of every call is checked (count 0 takes none).
//  3. DENY at post: on a 2-lease agent, rank 0 posts three calls while the
//     other ranks wait: two are granted, the third is denied; the others then
//     post the same three and see the same verdicts (remembered early), and the
//     granted ones complete with the right values on every rank.
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "engine_harness.h"
#include "ina_client.h"
#include "ina_reduce.h"

namespace {

constexpr int kChildAlarmS = 120; // a hung child dies; the parent reports it
constexpr uint32_t kMaxRanks = 8;
constexpr uint8_t kGarbage = 0xa5;
constexpr size_t kGuard = 64; // bytes past every receive buffer that must stay untouched

enum Root { kRoot0, kRootLast, kRootMiddle };
// kFreeEarly: posted and freed at once (a programming error the engine
// survives by completing the call inside ina_call_free; it says so on
// stderr, expected in this test's log).
enum Mode { kBlocking, kNonBlocking, kNonBlockingPoll, kFreeEarly };

struct Case {
    unsigned coll;
    unsigned dtype;
    unsigned op;
    uint64_t count; // REDUCE_SCATTER: base of the uneven recvcounts
    Root root;
    bool in_place;
    int job;        // 0 = A, 1 = B
    Mode mode;
};

// Blocking cases on both jobs.
const Case kBlockingCases[] = {
    {INA_COLL_ALLREDUCE, INA_DT_INT32, INA_OP_SUM, 0, kRoot0, false, 0, kBlocking},
    {INA_COLL_ALLREDUCE, INA_DT_INT32, INA_OP_SUM, 1, kRoot0, false, 0, kBlocking},
    {INA_COLL_ALLREDUCE, INA_DT_DOUBLE, INA_OP_SUM, 3001, kRoot0, true, 1, kBlocking},
    {INA_COLL_ALLREDUCE, INA_DT_FLOAT, INA_OP_MAX, 4097, kRoot0, false, 1, kBlocking},
    {INA_COLL_REDUCE, INA_DT_INT64, INA_OP_SUM, 2000, kRoot0, false, 0, kBlocking},
    {INA_COLL_REDUCE, INA_DT_DOUBLE, INA_OP_SUM, 3000, kRootLast, true, 1, kBlocking},
    {INA_COLL_REDUCE, INA_DT_INT32, INA_OP_BXOR, 1, kRootMiddle, false, 0, kBlocking},
    {INA_COLL_REDUCE, INA_DT_UINT16, INA_OP_MIN, 9999, kRootMiddle, true, 0, kBlocking},
    {INA_COLL_REDUCE_SCATTER, INA_DT_INT32, INA_OP_SUM, 1000, kRoot0, false, 0, kBlocking},
    {INA_COLL_REDUCE_SCATTER, INA_DT_DOUBLE, INA_OP_SUM, 700, kRoot0, true, 1, kBlocking},
    {INA_COLL_REDUCE_SCATTER, INA_DT_INT8, INA_OP_MAX, 1, kRoot0, false, 1, kBlocking},
    {INA_COLL_REDUCE_SCATTER, INA_DT_INT32, INA_OP_SUM, 0, kRoot0, false, 0, kBlocking},
    {INA_COLL_BCAST, INA_DT_UINT8, INA_OP_REPLACE, 1, kRoot0, false, 0, kBlocking},
    {INA_COLL_BCAST, INA_DT_UINT8, INA_OP_REPLACE, 100000, kRootLast, false, 0, kBlocking},
    {INA_COLL_BCAST, INA_DT_UINT8, INA_OP_REPLACE, 8193, kRootMiddle, false, 1, kBlocking},
    {INA_COLL_BCAST, INA_DT_UINT8, INA_OP_REPLACE, 0, kRoot0, false, 1, kBlocking},
    {INA_COLL_ALLGATHER, INA_DT_UINT8, INA_OP_REPLACE, 1, kRoot0, false, 0, kBlocking},
    {INA_COLL_ALLGATHER, INA_DT_UINT8, INA_OP_REPLACE, 3000, kRoot0, false, 0, kBlocking},
    {INA_COLL_ALLGATHER, INA_DT_UINT8, INA_OP_REPLACE, 20001, kRoot0, true, 1, kBlocking},
    {INA_COLL_ALLGATHER, INA_DT_UINT8, INA_OP_REPLACE, 777, kRoot0, true, 1, kBlocking},
    {INA_COLL_ALLGATHER, INA_DT_UINT8, INA_OP_REPLACE, 0, kRoot0, false, 0, kBlocking},
    {INA_COLL_BARRIER, INA_DT_UINT8, INA_OP_REPLACE, 0, kRoot0, false, 0, kBlocking},
    {INA_COLL_BARRIER, INA_DT_UINT8, INA_OP_REPLACE, 0, kRoot0, false, 1, kBlocking},
    // The wider type/op matrix: pairs (ties resolved by the smallest index),
    // long double, complex (rank order), bool.
    {INA_COLL_ALLREDUCE, INA_DT_DOUBLE_INT, INA_OP_MINLOC, 3000, kRoot0, false, 1, kBlocking},
    {INA_COLL_REDUCE, INA_DT_FLOAT_INT, INA_OP_MAXLOC, 5000, kRootMiddle, false, 0, kBlocking},
    {INA_COLL_ALLREDUCE, INA_DT_LONG_DOUBLE_INT, INA_OP_MINLOC, 777, kRoot0, true, 1, kBlocking},
    {INA_COLL_REDUCE_SCATTER, INA_DT_SHORT_INT, INA_OP_MAXLOC, 400, kRoot0, false, 1, kBlocking},
    {INA_COLL_ALLREDUCE, INA_DT_LONG_DOUBLE, INA_OP_SUM, 2049, kRoot0, false, 0, kBlocking},
    {INA_COLL_REDUCE_SCATTER, INA_DT_DOUBLE_COMPLEX, INA_OP_SUM, 300, kRoot0, true, 0, kBlocking},
    {INA_COLL_ALLREDUCE, INA_DT_LONG_DOUBLE_COMPLEX, INA_OP_PROD, 500, kRoot0, false, 1, kBlocking},
    {INA_COLL_REDUCE, INA_DT_FLOAT_COMPLEX, INA_OP_PROD, 4000, kRootLast, false, 0, kBlocking},
    {INA_COLL_ALLREDUCE, INA_DT_BOOL, INA_OP_LXOR, 10001, kRoot0, true, 1, kBlocking},
    {INA_COLL_ALLREDUCE, INA_DT_2INT, INA_OP_MAXLOC, 1, kRoot0, false, 0, kBlocking},
    {INA_COLL_ALLREDUCE, INA_DT_LONG_INT, INA_OP_MINLOC, 2500, kRoot0, false, 0, kBlocking},
};

// One batch: everything posted (blocking ones run in between), then completed.
const Case kBatch[] = {
    {INA_COLL_ALLREDUCE, INA_DT_INT32, INA_OP_SUM, 50000, kRoot0, false, 0, kNonBlocking},
    {INA_COLL_ALLGATHER, INA_DT_UINT8, INA_OP_REPLACE, 5000, kRoot0, true, 1, kNonBlocking},
    {INA_COLL_REDUCE_SCATTER, INA_DT_FLOAT, INA_OP_SUM, 1500, kRoot0, false, 0, kNonBlockingPoll},
    {INA_COLL_BCAST, INA_DT_UINT8, INA_OP_REPLACE, 30000, kRootMiddle, false, 1, kBlocking},
    {INA_COLL_REDUCE, INA_DT_DOUBLE, INA_OP_PROD, 7000, kRootLast, true, 0, kNonBlocking},
    {INA_COLL_BARRIER, INA_DT_UINT8, INA_OP_REPLACE, 0, kRoot0, false, 1, kNonBlocking},
    {INA_COLL_ALLREDUCE, INA_DT_INT64, INA_OP_BXOR, 0, kRoot0, false, 1, kNonBlocking},
    {INA_COLL_BCAST, INA_DT_UINT8, INA_OP_REPLACE, 12345, kRoot0, false, 0, kNonBlockingPoll},
    {INA_COLL_ALLREDUCE, INA_DT_FLOAT, INA_OP_SUM, 2500, kRoot0, true, 0, kBlocking},
    {INA_COLL_ALLGATHER, INA_DT_UINT8, INA_OP_REPLACE, 999, kRoot0, false, 0, kNonBlocking},
    {INA_COLL_REDUCE_SCATTER, INA_DT_INT16, INA_OP_BOR, 333, kRoot0, true, 1, kNonBlocking},
    {INA_COLL_BARRIER, INA_DT_UINT8, INA_OP_REPLACE, 0, kRoot0, false, 0, kBlocking},
    {INA_COLL_REDUCE, INA_DT_UINT8, INA_OP_SUM, 40000, kRoot0, false, 1, kNonBlockingPoll},
    {INA_COLL_ALLGATHER, INA_DT_UINT8, INA_OP_REPLACE, 4321, kRoot0, false, 0, kFreeEarly},
    {INA_COLL_ALLREDUCE, INA_DT_INT32, INA_OP_SUM, 6000, kRoot0, false, 1, kNonBlocking},
};

uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// MINLOC/MAXLOC pairs as MPI lays them out (ina_proto.h).
template <typename V> struct Pair {
    V v;
    int i;
};

template <typename V> void put_pair(uint8_t *e, size_t esz, V v, int i)
{
    Pair<V> p;
    std::memset(static_cast<void *>(&p), 0, sizeof(p)); // defined padding
    p.v = v;
    p.i = i;
    std::memcpy(e, &p, esz);
}

// Bytes of a long double that carry its value (x87: 10 of 16); the rest
// are zeroed so that buffers compare bytewise.
constexpr size_t kLongDoubleBytes =
    std::numeric_limits<long double>::digits == 64 ? 10 : sizeof(long double);

void put_ld(uint8_t *e, long double v)
{
    std::memset(e, 0, sizeof(long double));
    std::memcpy(e, &v, kLongDoubleBytes);
}

// Deterministic input of `rank` for case number `ci`: n elements of dtype.
void fill_input(uint8_t *out, const Case &c, size_t ci, uint32_t rank, uint64_t n)
{
    const size_t esz = ina_proto_dtype_size(c.dtype);
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t h = mix((static_cast<uint64_t>(ci) << 48) ^ (static_cast<uint64_t>(rank) << 40) ^ i);
        double d = c.op == INA_OP_PROD ? 1.0 + (static_cast<double>(h % 2001) - 1000.0) / 4096.0
                                       : (static_cast<double>(h % 2000001) - 1000000.0) / 64.0 +
                                             1.0 / 3.0;
        const double d2 = c.op == INA_OP_PROD ? 1.0 - static_cast<double>((h >> 20) % 1001) / 8192.0
                                              : static_cast<double>((h >> 20) % 4001) / 16.0;
        // Pairs: few distinct values, so that ties (smallest index wins) occur.
        const int small = static_cast<int>(h % 8) - 4;
        const int index = static_cast<int>((h >> 32) % 100000);
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
        case INA_DT_LONG_DOUBLE:
            put_ld(e, static_cast<long double>(d) / 3.0L); // uses the extra precision
            break;
        case INA_DT_BOOL:
            e[0] = static_cast<uint8_t>(h % 3 == 0);
            break;
        case INA_DT_FLOAT_COMPLEX: {
            float f[2] = {static_cast<float>(d), static_cast<float>(d2)};
            std::memcpy(e, f, sizeof(f));
            break;
        }
        case INA_DT_DOUBLE_COMPLEX: {
            double v[2] = {d, d2};
            std::memcpy(e, v, sizeof(v));
            break;
        }
        case INA_DT_LONG_DOUBLE_COMPLEX:
            put_ld(e, static_cast<long double>(d) / 3.0L);
            put_ld(e + sizeof(long double), static_cast<long double>(d2) / 7.0L);
            break;
        case INA_DT_FLOAT_INT:
            put_pair<float>(e, esz, static_cast<float>(small) / 2.0f, index);
            break;
        case INA_DT_DOUBLE_INT:
            put_pair<double>(e, esz, small / 4.0, index);
            break;
        case INA_DT_LONG_INT:
            put_pair<long>(e, esz, small, index);
            break;
        case INA_DT_2INT:
            put_pair<int>(e, esz, small, index);
            break;
        case INA_DT_SHORT_INT:
            put_pair<short>(e, esz, static_cast<short>(small), index);
            break;
        case INA_DT_LONG_DOUBLE_INT: {
            Pair<long double> p;
            std::memset(static_cast<void *>(&p), 0, sizeof(p));
            put_ld(reinterpret_cast<uint8_t *>(&p.v), small / 8.0L);
            p.i = index;
            std::memcpy(e, &p, esz);
            break;
        }
        default:
            std::memcpy(e, &h, esz); // integers and bytes: the low bytes
            break;
        }
    }
}

uint32_t root_of(const Case &c, uint32_t k)
{
    return c.root == kRoot0 ? 0 : c.root == kRootLast ? k - 1 : k / 2;
}

// Uneven recvcounts with zeros (for base > 0): every member's part starts and
// ends at different places in the blocks.
std::vector<uint64_t> recvcounts_of(const Case &c, uint32_t k)
{
    std::vector<uint64_t> rc(k, 0);
    for (uint32_t r = 0; r < k && c.count > 0; ++r) {
        rc[r] = r % 3 == 1 ? 0 : c.count + r * 129;
    }
    return rc;
}

// Shared between the processes of one group.
struct Shared {
    pthread_barrier_t barrier;
    ina_job_params_t params[2];
    std::atomic<uint32_t> arrived[64]; // BARRIER checks: members that entered barrier i
    int verdict[3];                    // DENY test: rank 0's post results
    uint64_t verdict_mid[3];
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

// Every rank opens the `njobs` jobs by key; the barrier makes sure every
// member opened them before any block flows.
void open_jobs(ina_client_t *c, Shared *sh, uint32_t rank, uint32_t k, int njobs,
                     const uint32_t *windows, const uint32_t *blocks, ina_job_t **jobs)
{
    std::vector<uint32_t> nodes(k);
    for (uint32_t i = 0; i < k; ++i) {
        nodes[i] = i / 2; // two ranks per node: exercises Node/Rank bitmaps
    }
    for (int j = 0; j < njobs; ++j) {
        ina_job_params_t p{};
        jobs[j] = ina_test::open_job_or_die(c, static_cast<uint32_t>(j), rank, k, nodes.data(),
                                            windows[j], blocks[j], &p);
        if (rank == 0) {
            sh->params[j] = p;
        }
    }
    pthread_barrier_wait(&sh->barrier);
}

// One call's buffers, its descriptor and the image its receive buffer (and,
// out of place, its send buffer) must show once it completed.
struct Prepared {
    Case c;
    size_t ci = 0;
    std::vector<uint64_t> recvcounts;
    std::vector<uint8_t> sbuf, rbuf;      // rbuf has kGuard bytes past the result
    std::vector<uint8_t> expect_r, expect_s;
    ina_coll_desc_t desc{};
    int barrier_index = -1;
    bool moves_data = true; // consumes a MID
};

// Reduce every rank's input of n elements in rank order (the agent's order
// for non-order-free types; any order gives the same bits for the others).
std::vector<uint8_t> reduce_all(const Case &c, size_t ci, uint32_t k, uint64_t n)
{
    const size_t esz = ina_proto_dtype_size(c.dtype);
    std::vector<uint8_t> ref(n * esz), other(n * esz);
    fill_input(ref.data(), c, ci, 0, n);
    for (uint32_t r = 1; r < k; ++r) {
        fill_input(other.data(), c, ci, r, n);
        if (ina_reduce(c.op, c.dtype, ref.data(), other.data(), n) != 0) {
            std::fprintf(stderr, "ina_reduce refused %s %s\n", ina_proto_op_name(c.op),
                         ina_proto_dtype_name(c.dtype));
            std::_Exit(5);
        }
    }
    return ref;
}

std::unique_ptr<Prepared> prepare(const Case &c, size_t ci, uint32_t rank, uint32_t k,
                                  int *barriers)
{
    auto p = std::make_unique<Prepared>();
    p->c = c;
    p->ci = ci;
    const size_t esz = ina_proto_dtype_size(c.dtype);
    const uint32_t root = root_of(c, k);
    ina_coll_desc_t &d = p->desc;
    d.coll = c.coll;
    d.op = c.op;
    d.dtype = c.dtype;
    d.count = c.count;
    d.root = root;
    switch (c.coll) {
    case INA_COLL_ALLREDUCE:
    case INA_COLL_REDUCE: {
        const size_t bytes = c.count * esz;
        const bool at_root = c.coll == INA_COLL_ALLREDUCE || rank == root;
        const bool in_place = c.in_place && at_root; // MPI_IN_PLACE only where a result lands
        p->sbuf.resize(bytes);
        fill_input(p->sbuf.data(), c, ci, rank, c.count);
        p->rbuf.assign(bytes + kGuard, kGarbage);
        p->expect_r = p->rbuf;
        if (in_place) {
            std::memcpy(p->rbuf.data(), p->sbuf.data(), bytes);
        }
        if (at_root) {
            std::vector<uint8_t> ref = reduce_all(c, ci, k, c.count);
            std::copy(ref.begin(), ref.end(), p->expect_r.begin());
        } else {
            p->expect_r = p->rbuf; // non-roots receive nothing
        }
        p->expect_s = p->sbuf;
        d.sbuf = in_place ? p->rbuf.data() : p->sbuf.data();
        d.rbuf = p->rbuf.data();
        p->moves_data = c.count > 0;
        break;
    }
    case INA_COLL_REDUCE_SCATTER: {
        p->recvcounts = recvcounts_of(c, k);
        uint64_t total = 0, first = 0;
        for (uint32_t r = 0; r < k; ++r) {
            if (r == rank) {
                first = total;
            }
            total += p->recvcounts[r];
        }
        const uint64_t mine = p->recvcounts[rank];
        p->sbuf.resize(total * esz);
        fill_input(p->sbuf.data(), c, ci, rank, total);
        std::vector<uint8_t> ref = reduce_all(c, ci, k, total);
        if (c.in_place) {
            // MPI_IN_PLACE: the whole input in rbuf, this rank's part lands at its start.
            p->rbuf.assign(total * esz + kGuard, kGarbage);
            std::copy(p->sbuf.begin(), p->sbuf.end(), p->rbuf.begin());
        } else {
            p->rbuf.assign(mine * esz + kGuard, kGarbage);
        }
        p->expect_r = p->rbuf;
        std::copy(ref.begin() + static_cast<long>(first * esz),
                  ref.begin() + static_cast<long>((first + mine) * esz), p->expect_r.begin());
        p->expect_s = p->sbuf;
        d.sbuf = c.in_place ? p->rbuf.data() : p->sbuf.data();
        d.rbuf = p->rbuf.data();
        d.recvcounts = p->recvcounts.data();
        p->moves_data = total > 0;
        break;
    }
    case INA_COLL_BCAST: {
        p->rbuf.assign(c.count + kGuard, kGarbage);
        std::vector<uint8_t> data(c.count);
        fill_input(data.data(), c, ci, root, c.count);
        p->expect_r = p->rbuf;
        std::copy(data.begin(), data.end(), p->expect_r.begin());
        if (rank == root) {
            p->rbuf = p->expect_r;
        }
        d.rbuf = p->rbuf.data();
        p->moves_data = c.count > 0;
        break;
    }
    case INA_COLL_ALLGATHER: {
        p->sbuf.resize(c.count);
        fill_input(p->sbuf.data(), c, ci, rank, c.count);
        p->rbuf.assign(c.count * k + kGuard, kGarbage);
        p->expect_r = p->rbuf;
        std::vector<uint8_t> chunk(c.count);
        for (uint32_t r = 0; r < k; ++r) {
            fill_input(chunk.data(), c, ci, r, c.count);
            std::copy(chunk.begin(), chunk.end(), p->expect_r.begin() + static_cast<long>(r * c.count));
        }
        if (c.in_place) {
            std::copy(p->sbuf.begin(), p->sbuf.end(), p->rbuf.begin() + static_cast<long>(rank * c.count));
        }
        p->expect_s = p->sbuf;
        d.sbuf = c.in_place ? nullptr : p->sbuf.data();
        d.rbuf = p->rbuf.data();
        p->moves_data = c.count > 0;
        break;
    }
    case INA_COLL_BARRIER:
    default:
        p->barrier_index = (*barriers)++;
        break;
    }
    return p;
}

std::string describe(const Prepared &p, uint32_t k)
{
    char line[160];
    std::snprintf(line, sizeof(line), "K=%u job %c %-14s %-6s %-4s n=%-6llu%s%s%s", k,
                  p.c.job == 0 ? 'A' : 'B', ina_proto_coll_name(p.c.coll),
                  ina_proto_dtype_name(p.c.dtype), ina_proto_op_name(p.c.op),
                  static_cast<unsigned long long>(p.c.count),
                  p.c.coll == INA_COLL_REDUCE || p.c.coll == INA_COLL_BCAST
                      ? (p.c.root == kRoot0 ? " root=0" : p.c.root == kRootLast ? " root=last"
                                                                                 : " root=mid")
                      : "",
                  p.c.in_place ? " in-place" : "",
                  p.c.mode == kBlocking       ? ""
                  : p.c.mode == kNonBlocking  ? " nb-wait"
                  : p.c.mode == kFreeEarly    ? " nb-freed"
                                              : " nb-test");
    return line;
}

// Check a completed call: rc, MID, the receive buffer image, the send buffer.
bool check(const Prepared &p, const ina_cqe_t &cqe, int rc, uint64_t expect_mid, uint32_t rank,
           uint32_t k, Shared *sh)
{
    bool ok = true;
    const std::string what = describe(p, k);
    // rc: what the entry point returned; offloaded means INA_OK and INA_OFFLOADED.
    if (verdict(rc, cqe) != INA_OFFLOADED || (p.moves_data && cqe.mid != expect_mid)) {
        std::fprintf(stderr, "rank %u %s: rc %d cqe.rc %d outcome %d status %s mid %llu (want %llu)\n",
                     rank, what.c_str(), rc, cqe.rc, cqe.outcome,
                     ina_proto_status_name(cqe.status),
                     static_cast<unsigned long long>(cqe.mid),
                     static_cast<unsigned long long>(expect_mid));
        return false;
    }
    if (p.barrier_index >= 0) {
        // Complete only once every member entered the barrier.
        const uint32_t n = sh->arrived[p.barrier_index].load();
        if (n != k) {
            std::fprintf(stderr, "rank %u %s: completed with %u of %u members arrived\n", rank,
                         what.c_str(), n, k);
            ok = false;
        }
        if (cqe.blocks != 1) {
            std::fprintf(stderr, "rank %u %s: %llu blocks, want 1\n", rank, what.c_str(),
                         static_cast<unsigned long long>(cqe.blocks));
            ok = false;
        }
        return ok;
    }
    if (p.rbuf != p.expect_r) {
        size_t first = 0, wrong = 0;
        for (size_t i = 0; i < p.rbuf.size(); ++i) {
            if (p.rbuf[i] != p.expect_r[i] && wrong++ == 0) {
                first = i;
            }
        }
        std::fprintf(stderr, "rank %u %s: %zu wrong bytes in rbuf (%zu with %zu guard), first at %zu\n",
                     rank, what.c_str(), wrong, p.rbuf.size(), kGuard, first);
        ok = false;
    }
    if (!p.c.in_place && p.sbuf != p.expect_s) {
        std::fprintf(stderr, "rank %u %s: send buffer modified\n", rank, what.c_str());
        ok = false;
    }
    return ok;
}

// Phases 1 and 2 on one rank. Returns the exit status.
int rank_main(const char *addr, Shared *sh, uint32_t rank, uint32_t k)
{
    alarm(kChildAlarmS);
    ina_client_t *c = connect_or_die(addr, "rank " + std::to_string(rank));
    ina_job_t *jobs[2] = {nullptr, nullptr};
    const uint32_t windows[2] = {1000, 4};  // A: clamped to the agent's maximum
    const uint32_t blocks[2] = {0, 2048};   // A: one Seg; B: 2 KiB
    open_jobs(c, sh, rank, k, 2, windows, blocks, jobs);
    uint64_t next_mid[2] = {0, 0};
    int barriers = 0;
    int bad = 0;

    // Runs one prepared call to completion (blocking) and checks it.
    auto run_blocking = [&](Prepared &p) {
        if (p.barrier_index >= 0) {
            sh->arrived[p.barrier_index].fetch_add(1);
        }
        ina_cqe_t cqe;
        int rc = ina_job_run(jobs[p.c.job], &p.desc, &cqe);
        const uint64_t want = next_mid[p.c.job];
        next_mid[p.c.job] += p.moves_data ? 1 : 0;
        if (!check(p, cqe, rc, want, rank, k, sh)) {
            ++bad;
        } else if (rank == 0) {
            std::printf("  %s ok\n", describe(p, k).c_str());
            std::fflush(stdout);
        }
    };

    // 1. Blocking, every collective on both jobs.
    for (size_t ci = 0; ci < sizeof(kBlockingCases) / sizeof(kBlockingCases[0]); ++ci) {
        std::unique_ptr<Prepared> p = prepare(kBlockingCases[ci], ci, rank, k, &barriers);
        run_blocking(*p);
    }

    // 2. Non-blocking batches (twice: the second reuses recycled call objects).
    for (int round = 0; round < 2; ++round) {
        struct Posted {
            std::unique_ptr<Prepared> p;
            ina_call_t *call;
            uint64_t mid;
        };
        std::vector<Posted> posted;
        const size_t base = 100 + 50 * static_cast<size_t>(round);
        for (size_t i = 0; i < sizeof(kBatch) / sizeof(kBatch[0]); ++i) {
            std::unique_ptr<Prepared> p = prepare(kBatch[i], base + i, rank, k, &barriers);
            if (kBatch[i].mode == kBlocking) {
                run_blocking(*p);
                continue;
            }
            if (p->barrier_index >= 0) {
                sh->arrived[p->barrier_index].fetch_add(1);
            }
            ina_call_t *call = nullptr;
            int rc = ina_test::post(jobs[p->c.job], &p->desc, &call);
            if (rc != INA_OK || call == nullptr) {
                std::fprintf(stderr, "rank %u %s: post rc %d\n", rank, describe(*p, k).c_str(), rc);
                ++bad;
                continue;
            }
            const uint64_t mid = next_mid[p->c.job];
            next_mid[p->c.job] += p->moves_data ? 1 : 0;
            if (p->c.mode == kFreeEarly) {
                // Freed while outstanding: the buffers must hold the result on return.
                ina_call_free(call);
                ina_cqe_t done{};
                done.rc = INA_OK;
                done.mid = mid;
                if (!check(*p, done, INA_OK, mid, rank, k, sh)) {
                    ++bad;
                } else if (rank == 0) {
                    std::printf("  %s ok\n", describe(*p, k).c_str());
                }
                continue;
            }
            posted.push_back(Posted{std::move(p), call, mid});
        }
        // Complete them: polled ones by ina_call_test, the others by waiting
        // in reverse posting order (a later call completes after earlier ones).
        for (Posted &x : posted) {
            if (x.p->c.mode != kNonBlockingPoll) {
                continue;
            }
            ina_cqe_t cqe;
            while (ina_call_test(x.call, &cqe) == 0) {
                sched_yield(); // 8 polling ranks share 2 cores with the agent
            }
            if (!check(*x.p, cqe, cqe.rc, x.mid, rank, k, sh)) {
                ++bad;
            } else if (rank == 0) {
                std::printf("  %s ok\n", describe(*x.p, k).c_str());
            }
            ina_call_free(x.call);
            x.call = nullptr;
        }
        for (auto it = posted.rbegin(); it != posted.rend(); ++it) {
            if (it->call == nullptr) {
                continue;
            }
            ina_cqe_t cqe;
            int rc = ina_call_wait(it->call, &cqe);
            // A completed call stays complete.
            ina_cqe_t again;
            if (ina_call_test(it->call, &again) != 1 || again.rc != cqe.rc || again.mid != cqe.mid) {
                std::fprintf(stderr, "rank %u: ina_call_test after wait disagrees\n", rank);
                ++bad;
            }
            if (!check(*it->p, cqe, rc, it->mid, rank, k, sh)) {
                ++bad;
            } else if (rank == 0) {
                std::printf("  %s ok\n", describe(*it->p, k).c_str());
            }
            ina_call_free(it->call);
        }
        std::fflush(stdout);
    }
    ina_job_leave(jobs[0]);
    ina_job_leave(jobs[1]);
    ina_client_disconnect(c);
    return bad == 0 ? 0 : 1;
}

template <typename F> int run_group(uint32_t k, const char *what, F rank_fn)
{
    Shared *sh = make_shared(k);
    std::vector<pid_t> pids;
    std::fflush(stdout);
    for (uint32_t r = 0; r < k; ++r) {
        pid_t pid = fork();
        if (pid == 0) {
            int rc = rank_fn(sh, r);
            std::fflush(stdout); // _Exit flushes nothing
            std::_Exit(rc);
        }
        pids.push_back(pid);
    }
    int failed = reap_children(pids, what);
    free_shared(sh);
    return failed;
}

// 3. DENY at post. The agent has 8 Segs and leases of 4: two calls at a time.
constexpr uint64_t kDenyCount = 20000; // int32: 10 blocks of 8 KiB, more than a window

void deny_input(std::vector<int32_t> &v, uint32_t rank, int call)
{
    for (size_t i = 0; i < v.size(); ++i) {
        v[i] = static_cast<int32_t>((rank + 1) * (call + 1) + i);
    }
}

bool deny_check(const std::vector<int32_t> &v, uint32_t k, int call)
{
    for (size_t i = 0; i < v.size(); ++i) {
        int64_t want = static_cast<int64_t>(k) * (k + 1) / 2 * (call + 1) + static_cast<int64_t>(k) * i;
        if (v[i] != static_cast<int32_t>(want)) {
            std::fprintf(stderr, "call %d element %zu: %d, want %lld\n", call, i, v[i],
                         static_cast<long long>(want));
            return false;
        }
    }
    return true;
}

int deny_rank_main(const char *addr, Shared *sh, uint32_t rank, uint32_t k)
{
    alarm(kChildAlarmS);
    ina_client_t *c = connect_or_die(addr, "rank " + std::to_string(rank));
    ina_job_t *job = nullptr;
    const uint32_t window = 4, block = 0;
    open_jobs(c, sh, rank, k, 1, &window, &block, &job);
    bool ok = true;
    std::vector<std::vector<int32_t>> in(3, std::vector<int32_t>(kDenyCount)),
        out(3, std::vector<int32_t>(kDenyCount, -1));
    ina_call_t *calls[3] = {nullptr, nullptr, nullptr};
    ina_coll_desc_t d[3];
    for (int i = 0; i < 3; ++i) {
        deny_input(in[i], rank, i);
        d[i] = ina_coll_desc_t{};
        d[i].coll = INA_COLL_ALLREDUCE;
        d[i].op = INA_OP_SUM;
        d[i].dtype = INA_DT_INT32;
        d[i].sbuf = in[i].data();
        d[i].rbuf = out[i].data();
        d[i].count = kDenyCount;
    }
    // Rank 0 goes first, alone: its calls 0 and 1 take both leases and cannot
    // complete (the others have not sent anything), so call 2 must be denied.
    if (rank == 0) {
        for (int i = 0; i < 3; ++i) {
            sh->verdict[i] = ina_test::post(job, &d[i], &calls[i]);
        }
    }
    pthread_barrier_wait(&sh->barrier);
    const int want[3] = {INA_OFFLOADED, INA_OFFLOADED, INA_FALLBACK_DENIED};
    if (rank != 0) {
        for (int i = 0; i < 3; ++i) {
            int rc = ina_test::post(job, &d[i], &calls[i]);
            if (rc != sh->verdict[i]) {
                std::fprintf(stderr, "rank %u: call %d posted with %d, rank 0 got %d\n", rank, i,
                             rc, sh->verdict[i]);
                ok = false;
            }
        }
    }
    for (int i = 0; i < 3; ++i) {
        if (sh->verdict[i] != want[i]) {
            std::fprintf(stderr, "rank %u: call %d verdict %d, want %d\n", rank, i,
                         sh->verdict[i], want[i]);
            ok = false;
        }
    }
    if (calls[2] != nullptr) {
        std::fprintf(stderr, "rank %u: a denied post returned a call\n", rank);
        ok = false;
    }
    for (int i = 0; i < 2; ++i) {
        if (calls[i] == nullptr) {
            ok = false;
            continue;
        }
        ina_cqe_t cqe;
        int rc = ina_call_wait(calls[i], &cqe);
        if (rc != INA_OK || cqe.mid != static_cast<uint64_t>(i) || !deny_check(out[i], k, i)) {
            std::fprintf(stderr, "rank %u: granted call %d: rc %d mid %llu\n", rank, i, rc,
                         static_cast<unsigned long long>(cqe.mid));
            ok = false;
        }
        ina_call_free(calls[i]);
    }
    // The denied call's output was never touched (the caller falls back).
    if (std::count(out[2].begin(), out[2].end(), -1) != static_cast<long>(kDenyCount)) {
        std::fprintf(stderr, "rank %u: the denied call wrote its receive buffer\n", rank);
        ok = false;
    }
    if (rank == 0) {
        std::printf("K=%u: calls 0, 1 granted and call 2 denied at post on every rank, "
                    "granted results right: %s\n",
                    k, ok ? "ok" : "FAILED");
        std::fflush(stdout);
    }
    ina_job_leave(job);
    ina_client_disconnect(c);
    return ok ? 0 : 1;
}

// With the clients' rendezvous threshold (ina_test::rndv_bytes) for blocks too.
int spawn_agent(const char *agent, const char *segs, const char *max_window, char *addr,
                size_t addrlen, int *pid)
{
    char err[512];
    const char *log = std::getenv("INA_TEST_AGENT_LOG"); // e.g. debug
    const std::string rndv = std::to_string(ina_test::rndv_bytes());
    // Several jobs' calls overlap here on purpose: the policy that grants
    // whenever a lease is free, bare (the scheduling policies and the harm
    // guard have tests of their own).
    const char *const args[] = {"--policy", "fcfs", "--harm-guard", "false", "--seg-size", "8192", "--max-window", max_window, "--segs", segs,
                                "--rndv-bytes", rndv.c_str(),
                                "--log-level", log != nullptr ? log : "warn", nullptr};
    int rc = ina_agent_spawn(agent, "127.0.0.1", args, addr, addrlen, pid, err, sizeof(err));
    if (rc != INA_OK) {
        std::fprintf(stderr, "FAIL: ina_agent_spawn: %s\n", err);
    }
    return rc;
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
    int pid = -1;
    if (spawn_agent(agent, "256", "16", addr, sizeof(addr), &pid) != INA_OK) {
        return 1;
    }
    std::printf("agent pid %d at %s\n", pid, addr);
    for (uint32_t k : {2u, 3u, 4u, kMaxRanks}) {
        int f = run_group(k, "collectives", [&](Shared *sh, uint32_t r) {
            return rank_main(addr, sh, r, k);
        });
        std::printf("K=%u: every collective, blocking and non-blocking on two jobs: %s\n", k,
                    f == 0 ? "ok" : "FAILED");
        failed += f;
    }
    ina_agent_stop(pid, 5000);

    // Again with rendezvous from 4 KiB on, both ways: job A's 8 KiB blocks
    // (and results) land straight in a Seg buffer and in the receive buffer,
    // its short last blocks and job B's 2 KiB ones stay eager, and
    // REDUCE_SCATTER parts cut from a result land in the channel's buffer.
    const int eager_only = ina_test::rndv_bytes();
    ina_test::rndv_bytes() = 4096;
    if (spawn_agent(agent, "256", "16", addr, sizeof(addr), &pid) != INA_OK) {
        return 1;
    }
    for (uint32_t k : {3u, kMaxRanks}) {
        int f = run_group(k, "collectives", [&](Shared *sh, uint32_t r) {
            return rank_main(addr, sh, r, k);
        });
        std::printf("K=%u, rendezvous from 4096 B: every collective on two jobs: %s\n", k,
                    f == 0 ? "ok" : "FAILED");
        failed += f;
    }
    ina_agent_stop(pid, 5000);
    ina_test::rndv_bytes() = eager_only;

    if (spawn_agent(agent, "8", "4", addr, sizeof(addr), &pid) != INA_OK) {
        return 1;
    }
    for (uint32_t k : {2u, 3u}) {
        failed += run_group(k, "deny at post", [&](Shared *sh, uint32_t r) {
            return deny_rank_main(addr, sh, r, k);
        });
    }
    ina_agent_stop(pid, 5000);

    std::printf("%s: %d failure(s)\n", failed == 0 ? "PASS" : "FAIL", failed);
    return failed == 0 ? 0 : 1;
}

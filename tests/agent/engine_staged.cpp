// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Staged calls (ina_job_post_staged) through the client engine and a real
// ina-switchd ($INA_SWITCHD): the caller produces each block when it is
// ready and takes each block's RESULT through callbacks, as the node stage
// does with shared memory. K processes each connect a client; rank 0 creates
// the jobs, everyone joins.
//  0. The geometry of a staged plan (CallGeometry::plan_total) cuts a total
//     exactly as plan() does for the same result vector (no agent needed).
//  1. ALLREDUCE (INT64 SUM, FLOAT SUM; ragged last block, many more blocks
//     than the window) where every rank's blocks become ready progressively:
//     a gate the test loop opens one block per round between ina_call_test
//     calls, blocks produced into a ring of a few block buffers that a block
//     reuses only once the RESULT of the block before it in that buffer came
//     back and was copied out; the result callback writes into the ring.
//  2. BCAST-like (the root sends data, the others CREDIT with WANT_RESULT),
//     ALLGATHER-like (each member sends its piece of the blocks its chunk
//     overlaps, CREDITs the others), REDUCE (only the root wants results: the
//     others get ACK-only RESULTs, result(sid, NULL, 0)), and a call of
//     total 0 (completes at once, no MID, no callback).
//  3. BARRIER staged (total 0, one block), against an arrival counter.
//  4. ina_call_decision: 0 on every rank while no rank's first block is
//     ready (checked on every call, with a barrier before any gate opens),
//     then 1 with INA_OFFLOADED; 1 at once on an ordinary posted call.
//  5. DENY (an agent with 8 Segs, leases of 4): rank 0 alone holds both
//     leases with two ordinary calls on job X; a staged call on job Y is
//     then denied: ina_call_decision says INA_FALLBACK_DENIED on every rank,
//     the call completes with that outcome (no result callback) and is
//     freed; a second staged call posted by rank 0 first is denied at the
//     others' post (early verdict: outcome DENIED, no call). Then the X
//     calls complete with the right values everywhere.
//  6. A slow producer: clients with a 300 ms progress timeout; after the
//     first blocks every rank has nothing in flight and one rank keeps its
//     gate closed for 3 timeouts (the others wait for it), polling
//     ina_call_test every millisecond: the call completes OK (no false
//     "no progress").
//  7. Bad blocks from the callback (count > block elements, a partial
//     reduction block, count > 0 with data NULL): the call fails with
//     INA_ERR_PROTO (status MALFORMED), decision and test report it, no
//     crash, the job can be left.
//  8. ina_call_free of an outstanding staged call (every block produced):
//     the engine completes it inside the free (and says so on stderr, as
//     for any call), every RESULT reached the callback, values right.
//  9. Agent lost: rank 0 has blocks of call P in flight, the other ranks sent
//     nothing; call Q is posted everywhere with its gate closed; rank 0 kills
//     the agent. P ends with INA_ERR_LOST on rank 0 and falls back
//     (unreachable) where nothing was sent; Q's decision is
//     INA_FALLBACK_UNREACHABLE everywhere; a later staged post falls back at
//     once with no call.
// Values are checked against references computed here from every rank's
// deterministic input.
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine_harness.h"
#include "ina_client.h"
#include "ina_geometry.h"

namespace {

constexpr int kChildAlarmS = 120; // a hung child dies; the parent reports it
constexpr uint8_t kGarbage = 0xa5;
constexpr int kSlowTimeoutMs = 300;

using Clock = std::chrono::steady_clock;
using ina_test::connect_or_die;
using ina_test::reap_children;

// Shared between the processes of one group.
struct Shared {
    pthread_barrier_t barrier;
    ina_job_params_t params[3];
    std::atomic<uint32_t> arrived[8]; // BARRIER checks
    std::atomic<int> slow_open;       // slow producer: the slow rank opened its gate
    int deny_verdict[2];              // DENY test: rank 0's posts on job X
};

Shared *make_shared(unsigned participants)
{
    Shared *s = ina_test::map_shared<Shared>(participants);
    return s;
}

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

uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// A staged collective as this test drives it.
struct Case {
    const char *name;
    unsigned coll;
    unsigned op;
    unsigned dtype;
    uint64_t total;  // elements of the result vector (ALLGATHER: chunk * k, set at run)
    uint64_t chunk;  // ALLGATHER: bytes of each member's chunk
    int job;         // index into the rank's jobs
    uint32_t ring;   // block buffers of the producer ring
    bool root_last;  // REDUCE/BCAST: root k - 1, else 0
};

// Input element g of member r for case ci (exact in any summation order:
// FLOAT values are small multiples of 1/4).
void input(const Case &c, size_t ci, uint32_t r, uint64_t g, uint8_t *e)
{
    const uint64_t h = mix((static_cast<uint64_t>(ci) << 48) ^ (static_cast<uint64_t>(r) << 40) ^ g);
    switch (c.dtype) {
    case INA_DT_INT64: {
        const int64_t v = static_cast<int64_t>(h % 2000001) - 1000000;
        std::memcpy(e, &v, sizeof(v));
        break;
    }
    case INA_DT_FLOAT: {
        const float v = static_cast<float>(static_cast<int>(h % 4001) - 2000) / 4.0f;
        std::memcpy(e, &v, sizeof(v));
        break;
    }
    case INA_DT_DOUBLE: {
        const double v = static_cast<double>(static_cast<int64_t>(h % 2000001) - 1000000) / 8.0;
        std::memcpy(e, &v, sizeof(v));
        break;
    }
    default: // UINT8
        e[0] = static_cast<uint8_t>(h);
        break;
    }
}

// acc = acc op v, element-wise for one element.
void fold(const Case &c, uint8_t *acc, const uint8_t *v)
{
    switch (c.dtype) {
    case INA_DT_INT64: {
        int64_t a, b;
        std::memcpy(&a, acc, 8);
        std::memcpy(&b, v, 8);
        a = c.op == INA_OP_MAX ? std::max(a, b) : a + b;
        std::memcpy(acc, &a, 8);
        break;
    }
    case INA_DT_FLOAT: {
        float a, b;
        std::memcpy(&a, acc, 4);
        std::memcpy(&b, v, 4);
        a = c.op == INA_OP_MAX ? std::max(a, b) : a + b;
        std::memcpy(acc, &a, 4);
        break;
    }
    case INA_DT_DOUBLE: {
        double a, b;
        std::memcpy(&a, acc, 8);
        std::memcpy(&b, v, 8);
        a = c.op == INA_OP_MAX ? std::max(a, b) : a + b;
        std::memcpy(acc, &a, 8);
        break;
    }
    default:
        std::fprintf(stderr, "fold: dtype %u not in this test\n", c.dtype);
        std::_Exit(5);
    }
}

// What one member sends for one block.
struct Piece {
    uint32_t offset;
    uint32_t count;
    bool want;
};

// One rank's side of one staged call: the producer ring, the callbacks and
// what came back. The state words are atomics: the callbacks may run on the
// engine's progress thread (not in this test, but that is the contract).
class Stage {
public:
    enum : int { kFree, kReady, kSent, kResult };
    // Bad blocks (phase 7).
    enum Bad { kGood, kTooLong, kPartial, kNullData };

    Stage(const Case &c, size_t ci, uint32_t rank, uint32_t k, uint32_t block_bytes)
        : c_(c), ci_(ci), rank_(rank), k_(k), esz_(ina_proto_dtype_size(c.dtype)),
          per_(block_bytes / esz_), total_(c.total),
          nblocks_(c.coll == INA_COLL_BARRIER ? 1 : (total_ + per_ - 1) / per_),
          root_(c.root_last ? k - 1 : 0), ring_(c.ring), buf_(c.ring),
          state_(new std::atomic<int>[c.ring]), slot_sid_(c.ring, 0), res_count_(c.ring, 0),
          res_null_(c.ring, false), out_(total_ * esz_, kGarbage)
    {
        for (uint32_t i = 0; i < ring_; ++i) {
            buf_[i].assign(block_bytes, 0);
            state_[i].store(kFree);
        }
    }

    ina_staged_desc_t desc()
    {
        ina_staged_desc_t d{};
        d.coll = c_.coll;
        d.op = c_.op;
        d.dtype = c_.dtype;
        d.total = total_;
        d.ops.arg = this;
        d.ops.block = &Stage::block_cb;
        d.ops.result = &Stage::result_cb;
        return d;
    }

    uint64_t nblocks() const { return nblocks_; }
    uint32_t block_count(uint64_t sid) const
    {
        const uint64_t first = sid * per_;
        return static_cast<uint32_t>(std::min<uint64_t>(per_, total_ - first));
    }

    // Blocks below the gate may be produced.
    void open_to(uint64_t gate) { gate_ = std::min(gate, nblocks_); }
    uint64_t gate() const { return gate_; }
    void set_bad(uint64_t sid, Bad how)
    {
        bad_sid_ = sid;
        bad_ = how;
    }

    // One round of the producer: copy out every RESULT that came back (its
    // buffer is free again), then produce at most one block under the gate.
    void step()
    {
        for (uint32_t s = 0; s < ring_; ++s) {
            if (state_[s].load(std::memory_order_acquire) == kResult) {
                consume(s);
            }
        }
        if (next_ < gate_) {
            const uint32_t s = static_cast<uint32_t>(next_ % ring_);
            if (state_[s].load(std::memory_order_acquire) == kFree) {
                produce(s, next_++);
            }
        }
    }

    // Every block's RESULT was copied out.
    uint64_t consumed() const { return consumed_; }
    uint64_t nulls() const { return nulls_; }
    uint64_t callbacks() const { return callbacks_.load(); }
    int errors() const { return errors_; }

    // What this member sends for block sid (the node stage's choice, made
    // here from the collective's definition).
    Piece piece(uint64_t sid) const
    {
        const uint32_t n = block_count(sid);
        switch (c_.coll) {
        case INA_COLL_ALLREDUCE:
            return Piece{0, n, true};
        case INA_COLL_REDUCE:
            return Piece{0, n, rank_ == root_};
        case INA_COLL_BCAST:
            return rank_ == root_ ? Piece{0, n, false} : Piece{0, 0, true};
        case INA_COLL_ALLGATHER: {
            const uint64_t first = sid * per_, end = first + n;
            const uint64_t lo = std::max<uint64_t>(first, rank_ * c_.chunk);
            const uint64_t hi = std::min<uint64_t>(end, (rank_ + 1) * c_.chunk);
            if (hi <= lo) {
                return Piece{0, 0, true};
            }
            return Piece{static_cast<uint32_t>(lo - first), static_cast<uint32_t>(hi - lo), true};
        }
        default: // BARRIER
            return Piece{0, 0, true};
        }
    }

    // The result vector this member must have received (the parts it asked for).
    std::vector<uint8_t> expected() const
    {
        std::vector<uint8_t> ref(total_ * esz_, kGarbage);
        std::vector<uint8_t> e(esz_);
        for (uint64_t g = 0; g < total_; ++g) {
            uint8_t *dst = ref.data() + g * esz_;
            const uint64_t sid = g / per_;
            if (!piece(sid).want) {
                continue;
            }
            switch (c_.coll) {
            case INA_COLL_ALLREDUCE:
            case INA_COLL_REDUCE:
                input(c_, ci_, 0, g, dst);
                for (uint32_t r = 1; r < k_; ++r) {
                    input(c_, ci_, r, g, e.data());
                    fold(c_, dst, e.data());
                }
                break;
            case INA_COLL_BCAST:
                input(c_, ci_, root_, g, dst);
                break;
            case INA_COLL_ALLGATHER:
                input(c_, ci_, static_cast<uint32_t>(g / c_.chunk), g, dst);
                break;
            default:
                break;
            }
        }
        return ref;
    }

    const std::vector<uint8_t> &out() const { return out_; }

private:
    void produce(uint32_t s, uint64_t sid)
    {
        const Piece p = piece(sid);
        uint8_t *b = buf_[s].data();
        std::memset(b, 0, buf_[s].size());
        for (uint32_t j = 0; j < p.count; ++j) {
            input(c_, ci_, rank_, sid * per_ + p.offset + j, b + (p.offset + j) * esz_);
        }
        slot_sid_[s] = sid;
        state_[s].store(kReady, std::memory_order_release);
    }

    void consume(uint32_t s)
    {
        const uint64_t sid = slot_sid_[s];
        const Piece p = piece(sid);
        if (res_null_[s]) {
            ++nulls_;
            if (p.want && c_.coll != INA_COLL_BARRIER) {
                std::fprintf(stderr, "rank %u %s: sid %llu wanted but came without data\n",
                             rank_, c_.name, static_cast<unsigned long long>(sid));
                ++errors_;
            }
        } else if (!p.want || res_count_[s] != block_count(sid)) {
            std::fprintf(stderr, "rank %u %s: sid %llu: %u elements (want %u, asked %d)\n",
                         rank_, c_.name, static_cast<unsigned long long>(sid), res_count_[s],
                         block_count(sid), p.want);
            ++errors_;
        } else {
            // The RESULT was written into the ring by the callback: copy it out.
            std::memcpy(out_.data() + sid * per_ * esz_, buf_[s].data(), res_count_[s] * esz_);
        }
        ++consumed_;
        state_[s].store(kFree, std::memory_order_release);
    }

    static int block_cb(void *arg, uint64_t sid, ina_stage_block_t *b)
    {
        auto *st = static_cast<Stage *>(arg);
        const uint32_t s = static_cast<uint32_t>(sid % st->ring_);
        if (st->state_[s].load(std::memory_order_acquire) != kReady || st->slot_sid_[s] != sid) {
            return 0; // not produced yet
        }
        if (sid < st->asked_next_) {
            std::fprintf(stderr, "rank %u %s: block %llu asked after %llu was sent\n", st->rank_,
                         st->c_.name, static_cast<unsigned long long>(sid),
                         static_cast<unsigned long long>(st->asked_next_));
            ++st->errors_;
        }
        st->asked_next_ = sid + 1;
        const Piece p = st->piece(sid);
        b->data = p.count > 0 ? st->buf_[s].data() : nullptr; // a CREDIT needs none
        b->offset = p.offset;
        b->count = p.count;
        b->want_result = p.want ? 1 : 0;
        if (sid == st->bad_sid_) {
            switch (st->bad_) {
            case kTooLong:
                b->data = st->buf_[s].data();
                b->offset = 0;
                b->count = st->block_count(sid) + 1;
                break;
            case kPartial:
                b->count = st->block_count(sid) - 1;
                break;
            case kNullData:
                b->data = nullptr;
                b->count = 1;
                break;
            case kGood:
                break;
            }
        }
        st->state_[s].store(kSent, std::memory_order_release);
        return 1;
    }

    static void result_cb(void *arg, uint64_t sid, const void *data, uint32_t count)
    {
        auto *st = static_cast<Stage *>(arg);
        st->callbacks_.fetch_add(1);
        const uint32_t s = static_cast<uint32_t>(sid % st->ring_);
        if (st->state_[s].load(std::memory_order_acquire) != kSent || st->slot_sid_[s] != sid) {
            std::fprintf(stderr, "rank %u %s: result of sid %llu not in flight (slot %u state %d)\n",
                         st->rank_, st->c_.name, static_cast<unsigned long long>(sid), s,
                         st->state_[s].load());
            ++st->errors_;
            return;
        }
        st->res_null_[s] = data == nullptr;
        st->res_count_[s] = count;
        if (data == nullptr && count != 0) {
            ++st->errors_;
        }
        if (data != nullptr) {
            std::memcpy(st->buf_[s].data(), data, static_cast<size_t>(count) * st->esz_);
        }
        st->state_[s].store(kResult, std::memory_order_release);
    }

    const Case c_;
    const size_t ci_;
    const uint32_t rank_, k_;
    const size_t esz_;
    const uint64_t per_, total_, nblocks_;
    const uint32_t root_;
    const uint32_t ring_;
    std::vector<std::vector<uint8_t>> buf_;
    std::unique_ptr<std::atomic<int>[]> state_;
    std::vector<uint64_t> slot_sid_;
    std::vector<uint32_t> res_count_;
    std::vector<bool> res_null_;
    std::vector<uint8_t> out_;
    uint64_t gate_ = 0, next_ = 0, asked_next_ = 0;
    uint64_t consumed_ = 0, nulls_ = 0;
    std::atomic<uint64_t> callbacks_{0};
    int errors_ = 0;
    uint64_t bad_sid_ = UINT64_MAX;
    Bad bad_ = kGood;
};

// Phases 1 to 4: the cases on jobs A (window 16, 8 KiB blocks) and B
// (window 4, 2 KiB blocks).
const Case kCases[] = {
    {"allreduce int64 sum ragged", INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, 1000 * 50 + 77, 0, 1, 3, false},
    {"allreduce float sum ragged", INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_FLOAT, 512 * 40 + 1, 0, 1, 6, false},
    {"allreduce int64 sum 1 elem", INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, 1, 0, 0, 3, false},
    {"allreduce float sum 5 blocks", INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_FLOAT, 2048 * 5, 0, 0, 3, false},
    {"allreduce int64 sum 60 blocks", INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, 1024 * 60 - 3, 0, 0, 20, false},
    {"bcast root 0", INA_COLL_BCAST, INA_OP_REPLACE, INA_DT_UINT8, 2048 * 9 + 5, 0, 1, 3, false},
    {"bcast root last", INA_COLL_BCAST, INA_OP_REPLACE, INA_DT_UINT8, 8192 * 3 + 100, 0, 0, 2, true},
    {"allgather", INA_COLL_ALLGATHER, INA_OP_REPLACE, INA_DT_UINT8, 0, 3001, 1, 3, false},
    {"allgather 1 byte", INA_COLL_ALLGATHER, INA_OP_REPLACE, INA_DT_UINT8, 0, 1, 0, 3, false},
    {"reduce double max root last", INA_COLL_REDUCE, INA_OP_MAX, INA_DT_DOUBLE, 256 * 11 + 3, 0, 1, 3, true},
    {"reduce int64 sum root 0", INA_COLL_REDUCE, INA_OP_SUM, INA_DT_INT64, 1024 * 2 + 1, 0, 0, 3, false},
    {"barrier", INA_COLL_BARRIER, INA_OP_SUM, INA_DT_INT64, 0, 0, 0, 1, false},
    {"barrier", INA_COLL_BARRIER, INA_OP_REPLACE, INA_DT_UINT8, 0, 0, 1, 1, false},
    {"allreduce total 0", INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, 0, 0, 0, 3, false},
};

// Post one staged call with every gate closed, check that no rank learns a
// decision before any block is ready, then open the gate one block per
// round and test it to completion. Returns whether it checked out.
bool run_case(const Case &c0, size_t ci, ina_job_t *job, const ina_job_params_t &params,
              uint32_t rank, uint32_t k, Shared *sh, uint64_t *next_mid, int *barriers)
{
    Case c = c0;
    if (c.coll == INA_COLL_ALLGATHER) {
        c.total = c.chunk * k;
    }
    Stage st(c, ci, rank, k, params.block_bytes);
    const bool empty = c.total == 0 && c.coll != INA_COLL_BARRIER;
    int barrier = -1;
    if (c.coll == INA_COLL_BARRIER) {
        barrier = (*barriers)++;
        sh->arrived[barrier].fetch_add(1);
    }
    ina_staged_desc_t d = st.desc();
    ina_call_t *call = nullptr;
    ina_outcome_t outcome = INA_FALLBACK_UNREACHABLE;
    int rc = ina_job_post_staged(job, &d, &call, &outcome);
    bool ok = true;
    if (rc != INA_OK || outcome != INA_OFFLOADED || call == nullptr) {
        std::fprintf(stderr, "rank %u %s: post rc %d outcome %d\n", rank, c.name, rc, outcome);
        pthread_barrier_wait(&sh->barrier);
        return false;
    }
    ina_cqe_t cqe{};
    // 4. Undecided while no rank's first block is ready (GRANT goes to every
    // member at the first block of any: hence the barrier).
    if (!empty) {
        for (int i = 0; i < 5; ++i) {
            if (ina_call_decision(call, &cqe) != 0) {
                std::fprintf(stderr, "rank %u %s: decided (rc %d outcome %d) before any block\n",
                             rank, c.name, cqe.rc, cqe.outcome);
                ok = false;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    pthread_barrier_wait(&sh->barrier);
    bool decided = false;
    for (;;) {
        st.open_to(st.gate() + 1);
        st.step();
        if (!decided) {
            if (ina_call_decision(call, &cqe) == 1) {
                decided = true;
                if (cqe.rc != INA_OK || cqe.outcome != INA_OFFLOADED) {
                    std::fprintf(stderr, "rank %u %s: decision rc %d outcome %d\n", rank, c.name,
                                 cqe.rc, cqe.outcome);
                    ok = false;
                }
            }
            continue;
        }
        if (ina_call_test(call, &cqe) == 1) {
            break;
        }
        sched_yield(); // K ranks and the agent share few cores
    }
    st.step(); // the last RESULTs
    const uint64_t want_mid = *next_mid;
    *next_mid += empty ? 0 : 1;
    if (cqe.rc != INA_OK || cqe.outcome != INA_OFFLOADED || (!empty && cqe.mid != want_mid) ||
        cqe.blocks != st.nblocks()) {
        std::fprintf(stderr, "rank %u %s: rc %d outcome %d mid %llu (want %llu) blocks %llu (want %llu)\n",
                     rank, c.name, cqe.rc, cqe.outcome, static_cast<unsigned long long>(cqe.mid),
                     static_cast<unsigned long long>(want_mid),
                     static_cast<unsigned long long>(cqe.blocks),
                     static_cast<unsigned long long>(st.nblocks()));
        ok = false;
    }
    if (st.errors() != 0 || st.consumed() != st.nblocks() || st.callbacks() != st.nblocks()) {
        std::fprintf(stderr, "rank %u %s: %d errors, %llu of %llu results (%llu callbacks)\n",
                     rank, c.name, st.errors(), static_cast<unsigned long long>(st.consumed()),
                     static_cast<unsigned long long>(st.nblocks()),
                     static_cast<unsigned long long>(st.callbacks()));
        ok = false;
    }
    // ACK-only RESULTs where this member asked for none.
    uint64_t want_nulls = 0;
    for (uint64_t sid = 0; sid < st.nblocks(); ++sid) {
        want_nulls += !st.piece(sid).want || c.coll == INA_COLL_BARRIER ? 1 : 0;
    }
    if (st.nulls() != want_nulls) {
        std::fprintf(stderr, "rank %u %s: %llu ACK-only results, want %llu\n", rank, c.name,
                     static_cast<unsigned long long>(st.nulls()),
                     static_cast<unsigned long long>(want_nulls));
        ok = false;
    }
    if (barrier >= 0 && sh->arrived[barrier].load() != k) {
        std::fprintf(stderr, "rank %u %s: completed with %u of %u members arrived\n", rank,
                     c.name, sh->arrived[barrier].load(), k);
        ok = false;
    }
    if (st.out() != st.expected()) {
        const std::vector<uint8_t> ref = st.expected();
        size_t wrong = 0, first = 0;
        for (size_t i = 0; i < ref.size(); ++i) {
            if (ref[i] != st.out()[i] && wrong++ == 0) {
                first = i;
            }
        }
        std::fprintf(stderr, "rank %u %s: %zu wrong bytes of %zu, first at %zu\n", rank, c.name,
                     wrong, ref.size(), first);
        ok = false;
    }
    ina_call_free(call);
    if (rank == 0) {
        std::printf("  K=%u %-30s job %c n=%-6llu blocks %-3llu ring %u: %s\n", k, c.name,
                    'A' + c.job, static_cast<unsigned long long>(c.total),
                    static_cast<unsigned long long>(st.nblocks()), c.ring, ok ? "ok" : "FAILED");
        std::fflush(stdout);
    }
    return ok;
}

// An ordinary call posted with ina_job_post is decided at post:
// ina_call_decision says so at once. Returns whether it checked out.
bool ordinary_decision(ina_job_t *job, uint32_t rank, uint32_t k, uint64_t *next_mid)
{
    const uint64_t n = 3000;
    std::vector<int64_t> in(n), out(n, -1);
    for (uint64_t i = 0; i < n; ++i) {
        in[i] = static_cast<int64_t>(rank * 7 + i);
    }
    ina_coll_desc_t d{};
    d.coll = INA_COLL_ALLREDUCE;
    d.op = INA_OP_SUM;
    d.dtype = INA_DT_INT64;
    d.sbuf = in.data();
    d.rbuf = out.data();
    d.count = n;
    ina_call_t *call = nullptr;
    bool ok = ina_test::post(job, &d, &call) == INA_OFFLOADED && call != nullptr;
    ina_cqe_t cqe{};
    if (ok && (ina_call_decision(call, &cqe) != 1 || cqe.rc != INA_OK ||
               cqe.outcome != INA_OFFLOADED || cqe.mid != *next_mid)) {
        std::fprintf(stderr, "rank %u: ordinary call: decision rc %d outcome %d\n", rank, cqe.rc,
                     cqe.outcome);
        ok = false;
    }
    if (call != nullptr) {
        ok = ina_call_wait(call, &cqe) == INA_OK && ok;
        ina_call_free(call);
    }
    for (uint64_t i = 0; i < n && ok; ++i) {
        const int64_t want = static_cast<int64_t>(7 * k * (k - 1) / 2 + k * i);
        if (out[i] != want) {
            std::fprintf(stderr, "rank %u: ordinary call element %llu: %lld, want %lld\n", rank,
                         static_cast<unsigned long long>(i), static_cast<long long>(out[i]),
                         static_cast<long long>(want));
            ok = false;
        }
    }
    ++*next_mid;
    if (rank == 0) {
        std::printf("  K=%u ordinary call: decided at post: %s\n", k, ok ? "ok" : "FAILED");
    }
    return ok;
}

// 7. A bad block fails the call: decision and test say INA_ERR_PROTO with
// status MALFORMED; nothing is sent for it.
bool bad_block(const Case &c0, Stage::Bad how, uint64_t bad_sid, size_t ci, ina_job_t *job,
               const ina_job_params_t &params, uint32_t rank, uint32_t k, Shared *sh)
{
    Case c = c0;
    if (c.coll == INA_COLL_ALLGATHER) {
        c.total = c.chunk * k;
    }
    Stage st(c, ci, rank, k, params.block_bytes);
    st.set_bad(bad_sid, how);
    st.open_to(st.nblocks());
    st.step();
    ina_staged_desc_t d = st.desc();
    ina_call_t *call = nullptr;
    ina_outcome_t outcome = INA_FALLBACK_UNREACHABLE;
    int rc = ina_job_post_staged(job, &d, &call, &outcome);
    bool ok = rc == INA_OK && outcome == INA_OFFLOADED && call != nullptr;
    // The decision: the error, or (a bad block after good ones) a GRANT
    // that came first; then the CQE: the error.
    ina_cqe_t dec{}, cqe{};
    while (ok && ina_call_decision(call, &dec) == 0) {
        st.step();
        sched_yield();
    }
    while (ok && ina_call_test(call, &cqe) == 0) {
        st.step();
        sched_yield();
    }
    const bool dec_ok = (dec.rc == INA_ERR_PROTO && dec.status == INA_PROTO_ERR_MALFORMED) ||
                        (bad_sid > 0 && dec.rc == INA_OK && dec.outcome == INA_OFFLOADED);
    if (!ok || !dec_ok || cqe.rc != INA_ERR_PROTO || cqe.status != INA_PROTO_ERR_MALFORMED) {
        std::fprintf(stderr, "rank %u %s bad block at sid %llu: post rc %d, decision rc %d "
                             "outcome %d, cqe rc %d status %s\n",
                     rank, c.name, static_cast<unsigned long long>(bad_sid), rc, dec.rc,
                     dec.outcome, cqe.rc, ina_proto_status_name(cqe.status));
        ok = false;
    }
    if (call != nullptr) {
        ina_call_free(call);
    }
    pthread_barrier_wait(&sh->barrier);
    if (rank == 0) {
        std::printf("  K=%u bad block (%s) in %s at sid %llu: call failed with %d (%s): %s\n", k,
                    how == Stage::kTooLong ? "count > block" : how == Stage::kPartial
                                                                   ? "partial reduction block"
                                                                   : "data NULL",
                    c.name, static_cast<unsigned long long>(bad_sid), cqe.rc,
                    ina_proto_status_name(cqe.status), ok ? "ok" : "FAILED");
        std::fflush(stdout);
    }
    return ok;
}

// 8. Freed while outstanding, with every block already produced.
bool free_early(ina_job_t *job, const ina_job_params_t &params, uint32_t rank, uint32_t k,
                uint64_t *next_mid)
{
    const Case c = {"allreduce freed early", INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64,
                    1024 * 5 - 7, 0, 0, 5, false};
    Stage st(c, 150, rank, k, params.block_bytes);
    st.open_to(st.nblocks());
    for (uint64_t i = 0; i < st.nblocks(); ++i) {
        st.step(); // the ring holds every block: none waits for a RESULT
    }
    ina_staged_desc_t d = st.desc();
    ina_call_t *call = nullptr;
    ina_outcome_t outcome = INA_FALLBACK_UNREACHABLE;
    bool ok = ina_job_post_staged(job, &d, &call, &outcome) == INA_OK &&
              outcome == INA_OFFLOADED && call != nullptr;
    if (call != nullptr) {
        ina_call_free(call); // a caller's bug the engine survives: completes the call first
    }
    ++*next_mid;
    const uint64_t callbacks = st.callbacks(); // all of them before the free returned
    st.step();
    ok = ok && callbacks == st.nblocks() && st.errors() == 0 && st.consumed() == st.nblocks() &&
         st.out() == st.expected();
    if (!ok) {
        std::fprintf(stderr, "rank %u: freed early: %llu of %llu results at free, %d errors\n",
                     rank, static_cast<unsigned long long>(callbacks),
                     static_cast<unsigned long long>(st.nblocks()), st.errors());
    }
    if (rank == 0) {
        std::printf("  K=%u staged call freed while outstanding: completed inside the free: %s\n",
                    k, ok ? "ok" : "FAILED");
        std::fflush(stdout);
    }
    return ok;
}

// Phases 1-4, 7 and 8 on one rank. Returns the exit status.
int rank_main(const char *addr, Shared *sh, uint32_t rank, uint32_t k)
{
    alarm(kChildAlarmS);
    ina_client_t *c = connect_or_die(addr, "rank " + std::to_string(rank));
    ina_job_t *jobs[3] = {nullptr, nullptr, nullptr};
    const uint32_t windows[3] = {16, 4, 16};
    const uint32_t blocks[3] = {8192, 2048, 2048};
    open_jobs(c, sh, rank, k, 3, windows, blocks, jobs);
    uint64_t next_mid[3] = {0, 0, 0};
    int barriers = 0;
    int bad = 0;
    for (size_t ci = 0; ci < sizeof(kCases) / sizeof(kCases[0]); ++ci) {
        const Case &cs = kCases[ci];
        if (!run_case(cs, ci, jobs[cs.job], sh->params[cs.job], rank, k, sh, &next_mid[cs.job],
                      &barriers)) {
            ++bad;
        }
        if (ci == 2 && !ordinary_decision(jobs[0], rank, k, &next_mid[0])) {
            ++bad;
        }
    }
    if (!free_early(jobs[0], sh->params[0], rank, k, &next_mid[0])) {
        ++bad;
    }
    // The job goes on after it.
    if (!run_case(kCases[2], 160, jobs[0], sh->params[0], rank, k, sh, &next_mid[0], &barriers)) {
        ++bad;
    }
    // 7. On job C, which is left afterwards (the agent keeps the lease of a
    // call whose members stopped in the middle until then).
    const Case ag = {"allgather", INA_COLL_ALLGATHER, INA_OP_REPLACE, INA_DT_UINT8, 0, 3001, 2, 3, false};
    const Case ar = {"allreduce", INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, 1000, 0, 2, 3, false};
    const Case bc = {"bcast", INA_COLL_BCAST, INA_OP_REPLACE, INA_DT_UINT8, 5000, 0, 2, 3, false};
    bad += bad_block(ag, Stage::kTooLong, 2, 200, jobs[2], sh->params[2], rank, k, sh) ? 0 : 1;
    bad += bad_block(ar, Stage::kPartial, 0, 201, jobs[2], sh->params[2], rank, k, sh) ? 0 : 1;
    bad += bad_block(bc, Stage::kNullData, 1, 202, jobs[2], sh->params[2], rank, k, sh) ? 0 : 1;
    for (ina_job_t *j : jobs) {
        ina_job_leave(j);
    }
    ina_client_disconnect(c);
    return bad == 0 ? 0 : 1;
}

// 5. DENY on an agent with 8 Segs and leases of 4.
int deny_rank_main(const char *addr, Shared *sh, uint32_t rank, uint32_t k)
{
    alarm(kChildAlarmS);
    ina_client_t *c = connect_or_die(addr, "rank " + std::to_string(rank));
    ina_job_t *jobs[2] = {nullptr, nullptr};
    const uint32_t windows[2] = {4, 4};
    const uint32_t blocks[2] = {0, 0};
    open_jobs(c, sh, rank, k, 2, windows, blocks, jobs);
    bool ok = true;
    // Job X: two ordinary calls of more than a window each; rank 0 posts them
    // alone, so they hold both leases until the others post theirs.
    const uint64_t n = 20000; // int32: 10 blocks of 8 KiB
    std::vector<std::vector<int32_t>> in(2, std::vector<int32_t>(n)), out(2, std::vector<int32_t>(n, -1));
    ina_coll_desc_t d[2];
    ina_call_t *xcalls[2] = {nullptr, nullptr};
    for (int i = 0; i < 2; ++i) {
        for (uint64_t e = 0; e < n; ++e) {
            in[i][e] = static_cast<int32_t>((rank + 1) * (i + 1) + e);
        }
        d[i] = ina_coll_desc_t{};
        d[i].coll = INA_COLL_ALLREDUCE;
        d[i].op = INA_OP_SUM;
        d[i].dtype = INA_DT_INT32;
        d[i].sbuf = in[i].data();
        d[i].rbuf = out[i].data();
        d[i].count = n;
    }
    if (rank == 0) {
        for (int i = 0; i < 2; ++i) {
            sh->deny_verdict[i] = ina_test::post(jobs[0], &d[i], &xcalls[i]);
        }
    }
    pthread_barrier_wait(&sh->barrier);
    if (sh->deny_verdict[0] != INA_OFFLOADED || sh->deny_verdict[1] != INA_OFFLOADED) {
        std::fprintf(stderr, "rank %u: job X calls not granted at rank 0 (%d, %d)\n", rank,
                     sh->deny_verdict[0], sh->deny_verdict[1]);
        ok = false;
    }

    // Job Y: a staged call, posted everywhere with the gate closed, then opened.
    const Case cy = {"allreduce", INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, 5000, 0, 1, 3, false};
    {
        Stage st(cy, 300, rank, k, sh->params[1].block_bytes);
        ina_staged_desc_t sd = st.desc();
        ina_call_t *call = nullptr;
        ina_outcome_t outcome = INA_FALLBACK_UNREACHABLE;
        int rc = ina_job_post_staged(jobs[1], &sd, &call, &outcome);
        ina_cqe_t cqe{};
        if (rc != INA_OK || outcome != INA_OFFLOADED || call == nullptr ||
            ina_call_decision(call, &cqe) != 0) {
            std::fprintf(stderr, "rank %u: staged post on Y: rc %d outcome %d\n", rank, rc,
                         outcome);
            std::_Exit(6);
        }
        pthread_barrier_wait(&sh->barrier);
        st.open_to(st.nblocks());
        while (ina_call_decision(call, &cqe) == 0) {
            st.step();
            sched_yield();
        }
        const int decision = ina_test::verdict(cqe.rc, cqe);
        if (decision != INA_FALLBACK_DENIED || cqe.status != INA_PROTO_ERR_NO_RESOURCES ||
            cqe.mid != 0) {
            std::fprintf(stderr, "rank %u: staged call on Y: decision %d status %s, want denied\n",
                         rank, decision, ina_proto_status_name(cqe.status));
            ok = false;
        }
        while (ina_call_test(call, &cqe) == 0) {
            st.step();
            sched_yield();
        }
        if (cqe.rc != INA_OK || cqe.outcome != INA_FALLBACK_DENIED || st.callbacks() != 0) {
            std::fprintf(stderr, "rank %u: denied staged call completed with rc %d outcome %d, "
                                 "%llu result callbacks\n",
                         rank, cqe.rc, cqe.outcome,
                         static_cast<unsigned long long>(st.callbacks()));
            ok = false;
        }
        ina_call_free(call);
    }
    pthread_barrier_wait(&sh->barrier);
    // A second staged call on Y: rank 0 first (denied: the leases are still
    // held), then the others, who know the verdict at post.
    {
        Stage st(cy, 301, rank, k, sh->params[1].block_bytes);
        st.open_to(st.nblocks());
        st.step();
        ina_staged_desc_t sd = st.desc();
        ina_call_t *call = nullptr;
        ina_outcome_t outcome = INA_OFFLOADED;
        ina_cqe_t cqe{};
        if (rank == 0) {
            int rc = ina_job_post_staged(jobs[1], &sd, &call, &outcome);
            if (rc != INA_OK || call == nullptr) {
                std::fprintf(stderr, "rank 0: second staged post on Y: rc %d\n", rc);
                ok = false;
            } else {
                while (ina_call_decision(call, &cqe) == 0) {
                    st.step();
                    sched_yield();
                }
                if (cqe.rc != INA_OK || cqe.outcome != INA_FALLBACK_DENIED) {
                    std::fprintf(stderr, "rank 0: second staged call: rc %d outcome %d\n", cqe.rc,
                                 cqe.outcome);
                    ok = false;
                }
                while (ina_call_test(call, &cqe) == 0) {
                    sched_yield();
                }
                ina_call_free(call);
            }
        }
        pthread_barrier_wait(&sh->barrier);
        if (rank != 0) {
            // The DENY reached this rank before its post (rank 0 waited for
            // it, and the agent sends it to every member at once): give it
            // time to be delivered, as the post polls what is pending.
            int rc = INA_OK;
            for (int tries = 0; tries < 100; ++tries) {
                ina_client_progress(c);
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            rc = ina_job_post_staged(jobs[1], &sd, &call, &outcome);
            if (rc != INA_OK || outcome != INA_FALLBACK_DENIED || call != nullptr ||
                st.callbacks() != 0) {
                std::fprintf(stderr, "rank %u: second staged post on Y: rc %d outcome %d call %p\n",
                             rank, rc, outcome, static_cast<void *>(call));
                ok = false;
                if (call != nullptr) {
                    ina_call_wait(call, &cqe);
                    ina_call_free(call);
                }
            }
        }
    }
    // The X calls complete everywhere, with the right values.
    if (rank != 0) {
        for (int i = 0; i < 2; ++i) {
            if (ina_test::post(jobs[0], &d[i], &xcalls[i]) != INA_OFFLOADED) {
                ok = false;
            }
        }
    }
    for (int i = 0; i < 2; ++i) {
        if (xcalls[i] == nullptr) {
            ok = false;
            continue;
        }
        ina_cqe_t cqe;
        if (ina_call_wait(xcalls[i], &cqe) != INA_OK) {
            ok = false;
        }
        ina_call_free(xcalls[i]);
        for (uint64_t e = 0; e < n; ++e) {
            const int64_t want = static_cast<int64_t>(k) * (k + 1) / 2 * (i + 1) +
                                 static_cast<int64_t>(k) * static_cast<int64_t>(e);
            if (out[i][e] != static_cast<int32_t>(want)) {
                std::fprintf(stderr, "rank %u: X call %d element %llu: %d\n", rank, i,
                             static_cast<unsigned long long>(e), out[i][e]);
                ok = false;
                break;
            }
        }
    }
    if (rank == 0) {
        std::printf("  K=%u staged call denied: decision and CQE say DENIED on every rank, "
                    "early DENY at post, granted calls right: %s\n",
                    k, ok ? "ok" : "FAILED");
        std::fflush(stdout);
    }
    for (ina_job_t *j : jobs) {
        ina_job_leave(j);
    }
    ina_client_disconnect(c);
    return ok ? 0 : 1;
}

// 6. A slow producer with nothing in flight.
int slow_rank_main(const char *addr, Shared *sh, uint32_t rank, uint32_t k)
{
    alarm(kChildAlarmS);
    ina_client_t *c = connect_or_die(addr, "rank " + std::to_string(rank), kSlowTimeoutMs);
    ina_job_t *job = nullptr;
    const uint32_t window = 4, block = 2048;
    open_jobs(c, sh, rank, k, 1, &window, &block, &job);
    const Case cs = {"allreduce slow producer", INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64,
                     256 * 40 + 9, 0, 0, 3, false};
    Stage st(cs, 400, rank, k, sh->params[0].block_bytes);
    const uint64_t first = 10; // blocks before the stall
    const uint32_t slow = k - 1;
    ina_staged_desc_t d = st.desc();
    ina_call_t *call = nullptr;
    ina_outcome_t outcome = INA_FALLBACK_UNREACHABLE;
    int rc = ina_job_post_staged(job, &d, &call, &outcome);
    if (rc != INA_OK || outcome != INA_OFFLOADED || call == nullptr) {
        std::fprintf(stderr, "rank %u: slow producer post rc %d outcome %d\n", rank, rc, outcome);
        return 1;
    }
    st.open_to(first);
    ina_cqe_t cqe{};
    Clock::time_point stall_start{};
    bool stalled = false, reopened = false;
    long stalled_ms = 0;
    for (;;) {
        st.step();
        if (!reopened && st.consumed() >= first) {
            // Every block sent so far is acked here: nothing in flight.
            if (rank == slow) {
                if (!stalled) {
                    stalled = true;
                    stall_start = Clock::now();
                }
                if (Clock::now() - stall_start >= std::chrono::milliseconds(3 * kSlowTimeoutMs)) {
                    stalled_ms = static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                       Clock::now() - stall_start)
                                                       .count());
                    sh->slow_open.store(1);
                    st.open_to(st.nblocks());
                    reopened = true;
                }
            } else if (sh->slow_open.load() != 0) {
                st.open_to(st.nblocks());
                reopened = true;
            }
        }
        if (ina_call_test(call, &cqe) == 1) {
            break;
        }
        // Poll often: a long gap between rounds would restart the engine's
        // no-progress clock by itself and hide the bug this test is about.
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    st.step();
    bool ok = cqe.rc == INA_OK && cqe.outcome == INA_OFFLOADED && st.errors() == 0 &&
              st.consumed() == st.nblocks() && st.out() == st.expected() &&
              ina_client_alive(c) != 0;
    if (!ok) {
        std::fprintf(stderr, "rank %u: slow producer call: rc %d outcome %d, %llu of %llu "
                             "results, %d errors, client %s\n",
                     rank, cqe.rc, cqe.outcome, static_cast<unsigned long long>(st.consumed()),
                     static_cast<unsigned long long>(st.nblocks()), st.errors(),
                     ina_client_alive(c) ? "alive" : "gave up");
    }
    ina_call_free(call);
    if (rank == slow) {
        std::printf("  K=%u rank %u held its gate %ld ms with nothing in flight (progress "
                    "timeout %d ms): %s\n",
                    k, rank, stalled_ms, kSlowTimeoutMs, ok ? "ok" : "FAILED");
        std::fflush(stdout);
    }
    ina_job_leave(job);
    ina_client_disconnect(c);
    return ok ? 0 : 1;
}

// 9. The agent dies (killed by rank 0) in the middle of staged calls.
int lost_rank_main(const char *addr, int agent_pid, Shared *sh, uint32_t rank, uint32_t k)
{
    alarm(kChildAlarmS);
    ina_client_t *c = connect_or_die(addr, "rank " + std::to_string(rank), 5000);
    ina_job_t *job = nullptr;
    const uint32_t window = 4, block = 2048;
    open_jobs(c, sh, rank, k, 1, &window, &block, &job);
    const Case cp = {"allreduce P", INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, 256 * 20, 0, 0, 4, false};
    const Case cq = {"allreduce Q", INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, 256 * 10, 0, 0, 4, false};
    Stage sp(cp, 500, rank, k, sh->params[0].block_bytes);
    Stage sq(cq, 501, rank, k, sh->params[0].block_bytes);
    ina_staged_desc_t dp = sp.desc(), dq = sq.desc();
    ina_call_t *p = nullptr, *q = nullptr;
    ina_outcome_t op = INA_FALLBACK_UNREACHABLE, oq = INA_FALLBACK_UNREACHABLE;
    if (ina_job_post_staged(job, &dp, &p, &op) != INA_OK || op != INA_OFFLOADED || p == nullptr ||
        ina_job_post_staged(job, &dq, &q, &oq) != INA_OK || oq != INA_OFFLOADED || q == nullptr) {
        std::fprintf(stderr, "rank %u: agent lost: posts failed\n", rank);
        std::_Exit(6);
    }
    bool ok = true;
    ina_cqe_t cqe{};
    if (rank == 0) {
        // P's first window goes out and is granted; it cannot complete (the
        // others send nothing), so it stays in flight.
        sp.open_to(sp.nblocks());
        while (ina_call_decision(p, &cqe) == 0) {
            sp.step();
            sched_yield();
        }
        for (int i = 0; i < 8; ++i) {
            sp.step();
            ina_client_progress(c);
        }
        if (cqe.rc != INA_OK || cqe.outcome != INA_OFFLOADED) {
            std::fprintf(stderr, "rank 0: P not granted: rc %d outcome %d\n", cqe.rc, cqe.outcome);
            ok = false;
        }
    }
    pthread_barrier_wait(&sh->barrier);
    if (rank == 0) {
        kill(agent_pid, SIGKILL);
    }
    const auto deadline = Clock::now() + std::chrono::seconds(30); // only catches a hang
    ina_cqe_t dq_cqe{}, cp_cqe{}, cq_cqe{};
    int dq_done = 0, p_done = 0, q_done = 0;
    while ((dq_done == 0 || p_done == 0 || q_done == 0) && Clock::now() < deadline) {
        if (dq_done == 0) {
            dq_done = ina_call_decision(q, &dq_cqe);
        }
        if (p_done == 0) {
            p_done = ina_call_test(p, &cp_cqe);
        }
        if (q_done == 0) {
            q_done = ina_call_test(q, &cq_cqe);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const int want_p = rank == 0 ? static_cast<int>(INA_ERR_LOST) : static_cast<int>(INA_FALLBACK_UNREACHABLE);
    if (dq_done == 0 || p_done == 0 || q_done == 0 ||
        ina_test::verdict(dq_cqe.rc, dq_cqe) != INA_FALLBACK_UNREACHABLE ||
        ina_test::verdict(cq_cqe.rc, cq_cqe) != INA_FALLBACK_UNREACHABLE ||
        ina_test::verdict(cp_cqe.rc, cp_cqe) != want_p) {
        std::fprintf(stderr, "rank %u: agent lost: Q decision %d (%d), P %d (%d, want %d), Q %d (%d)\n",
                     rank, dq_done, ina_test::verdict(dq_cqe.rc, dq_cqe), p_done,
                     ina_test::verdict(cp_cqe.rc, cp_cqe), want_p, q_done,
                     ina_test::verdict(cq_cqe.rc, cq_cqe));
        ok = false;
    }
    if (p_done != 0) {
        ina_call_free(p);
    }
    if (q_done != 0) {
        ina_call_free(q);
    }
    // Later calls fall back at post.
    Stage sr(cq, 502, rank, k, sh->params[0].block_bytes);
    ina_staged_desc_t dr = sr.desc();
    ina_call_t *r = nullptr;
    ina_outcome_t orr = INA_OFFLOADED;
    if (ina_job_post_staged(job, &dr, &r, &orr) != INA_OK || orr != INA_FALLBACK_UNREACHABLE ||
        r != nullptr) {
        std::fprintf(stderr, "rank %u: post after the loss: outcome %d call %p\n", rank, orr,
                     static_cast<void *>(r));
        ok = false;
    }
    if (rank == 0) {
        std::printf("  K=%u agent lost: P lost where in flight, unreachable elsewhere; Q and later "
                    "posts fall back: %s\n",
                    k, ok ? "ok" : "FAILED");
        std::fflush(stdout);
    }
    ina_job_leave(job);
    ina_client_disconnect(c);
    return ok ? 0 : 1;
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
    ina_test::unmap_shared(sh);
    return failed;
}

int spawn_agent(const char *agent, const char *segs, const char *max_window, char *addr,
                size_t addrlen, int *pid)
{
    char err[512];
    const char *log = std::getenv("INA_TEST_AGENT_LOG"); // e.g. debug
    // Several jobs' calls overlap here on purpose: the policy that grants
    // whenever a lease is free, bare (the scheduling policies and the harm
    // guard have tests of their own).
    const char *const args[] = {"--policy", "fcfs", "--harm-guard", "false", "--seg-size", "8192", "--max-window", max_window, "--segs", segs,
                                "--log-level", log != nullptr ? log : "warn", nullptr};
    int rc = ina_agent_spawn(agent, "127.0.0.1", args, addr, addrlen, pid, err, sizeof(err));
    if (rc != INA_OK) {
        std::fprintf(stderr, "FAIL: ina_agent_spawn: %s\n", err);
    }
    return rc;
}

// 0. plan_total cuts like plan for the same result vector.
int geometry_checks()
{
    int failed = 0;
    struct G {
        unsigned coll;
        size_t esz;
        uint64_t count;
        uint32_t block;
    };
    const G gs[] = {{INA_COLL_ALLREDUCE, 8, 50077, 2048}, {INA_COLL_ALLREDUCE, 4, 1, 8192},
                    {INA_COLL_REDUCE, 8, 2049, 8192},     {INA_COLL_BCAST, 1, 18437, 2048},
                    {INA_COLL_ALLREDUCE, 16, 0, 2048},    {INA_COLL_BARRIER, 1, 0, 2048}};
    for (const G &g : gs) {
        ina::CallShape s;
        s.coll = g.coll;
        s.elem_size = g.esz;
        s.count = g.count;
        s.nmembers = 3;
        s.block_bytes = g.block;
        ina::CallGeometry a, b;
        const bool pa = a.plan(s);
        const bool pb = b.plan_total(g.coll, g.esz, g.count, g.block);
        bool same = pa && pb && a.total() == b.total() && a.nblocks() == b.nblocks() &&
                    a.elems_per_block() == b.elems_per_block() && a.empty() == b.empty();
        for (uint64_t sid = 0; same && sid < a.nblocks(); ++sid) {
            same = a.block_first(sid) == b.block_first(sid) &&
                   a.block_count(sid) == b.block_count(sid);
        }
        if (!same) {
            std::fprintf(stderr, "plan_total(%s, %zu, %llu, %u) differs from plan\n",
                         ina_proto_coll_name(g.coll), g.esz,
                         static_cast<unsigned long long>(g.count), g.block);
            ++failed;
        }
    }
    // ALLGATHER's result vector is the chunks: plan_total of k * chunk.
    {
        ina::CallShape s;
        s.coll = INA_COLL_ALLGATHER;
        s.count = 3001;
        s.nmembers = 3;
        s.rank = 1;
        s.block_bytes = 2048;
        ina::CallGeometry a, b;
        if (!a.plan(s) || !b.plan_total(INA_COLL_ALLGATHER, 1, 3 * 3001, 2048) ||
            a.nblocks() != b.nblocks() || a.block_count(a.nblocks() - 1) != b.block_count(b.nblocks() - 1)) {
            std::fprintf(stderr, "plan_total(ALLGATHER) differs from plan\n");
            ++failed;
        }
    }
    ina::CallGeometry g;
    if (g.plan_total(INA_COLL_BARRIER, 1, 5, 2048) || g.plan_total(INA_COLL_ALLREDUCE, 8, 10, 4) ||
        g.plan_total(INA_COLL_COUNT, 1, 10, 2048) || !g.plan_total(INA_COLL_BARRIER, 1, 0, 16) ||
        g.nblocks() != 1 || g.block_count(0) != 0) {
        std::fprintf(stderr, "plan_total accepts or cuts a bad shape\n");
        ++failed;
    }
    std::printf("geometry: plan_total cuts as plan: %s\n", failed == 0 ? "ok" : "FAILED");
    return failed;
}

} // namespace

int main()
{
    int failed = geometry_checks();
    const char *agent = std::getenv("INA_SWITCHD");
    if (agent == nullptr || access(agent, X_OK) != 0) {
        std::printf("SKIP: INA_SWITCHD not set or not executable\n");
        return failed == 0 ? 77 : 1;
    }
    char addr[128];
    int pid = -1;
    if (spawn_agent(agent, "256", "16", addr, sizeof(addr), &pid) != INA_OK) {
        return 1;
    }
    std::printf("agent pid %d at %s\n", pid, addr);
    for (uint32_t k : {2u, 3u, 4u}) {
        int f = run_group(k, "staged", [&](Shared *sh, uint32_t r) {
            return rank_main(addr, sh, r, k);
        });
        std::printf("K=%u: staged calls: %s\n", k, f == 0 ? "ok" : "FAILED");
        failed += f;
    }
    for (uint32_t k : {2u, 3u}) {
        int f = run_group(k, "slow producer", [&](Shared *sh, uint32_t r) {
            return slow_rank_main(addr, sh, r, k);
        });
        failed += f;
    }
    ina_agent_stop(pid, 5000);

    if (spawn_agent(agent, "8", "4", addr, sizeof(addr), &pid) != INA_OK) {
        return 1;
    }
    for (uint32_t k : {2u, 3u}) {
        failed += run_group(k, "staged deny", [&](Shared *sh, uint32_t r) {
            return deny_rank_main(addr, sh, r, k);
        });
    }
    ina_agent_stop(pid, 5000);

    for (uint32_t k : {2u, 3u}) {
        if (spawn_agent(agent, "64", "16", addr, sizeof(addr), &pid) != INA_OK) {
            return 1;
        }
        failed += run_group(k, "agent lost", [&](Shared *sh, uint32_t r) {
            return lost_rank_main(addr, pid, sh, r, k);
        });
        ina_agent_stop(pid, 5000); // reaps the killed agent
    }

    std::printf("%s: %d failure(s)\n", failed == 0 ? "PASS" : "FAIL", failed);
    return failed == 0 ? 0 : 1;
}

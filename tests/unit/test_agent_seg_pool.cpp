// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Unit tests of the aggregation core's parts (aggregation/): Seg pool leases,
// Rank/Node bitmaps, rank-ordered float reduction, the placing collectives
// (BCAST, ALLGATHER, BARRIER) and their consistency rules, who wants the
// result, and per-MID call bookkeeping. (The scheduler's tests are in
// test_agent_sched.cpp, the Aggregator's in test_aggregator.cpp.)
#include <check.h>
#include "check_main.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "ina_reduce.h"
#include "job.h"
#include "seg_pool.h"

using namespace ina::agg;

namespace {

// A reduction block carrying the whole block (ALLREDUCE, WANT_RESULT).
Block whole(uint32_t rank, uint32_t sid, unsigned op, unsigned dtype, uint32_t count,
            uint64_t total, const void *data, unsigned coll = INA_COLL_ALLREDUCE, bool want = true)
{
    return Block{rank, sid, static_cast<uint8_t>(coll), static_cast<uint8_t>(op),
                 static_cast<uint8_t>(dtype), want, 0, count, count, total, data};
}

// A placed piece (BCAST/ALLGATHER/BARRIER: REPLACE on bytes); count 0 = CREDIT.
Block piece(unsigned coll, uint32_t rank, uint32_t sid, uint32_t offset, uint32_t count,
            uint32_t block_elems, uint64_t total, const void *data, bool want = true)
{
    return Block{rank,   sid,   static_cast<uint8_t>(coll), INA_OP_REPLACE, INA_DT_UINT8,
                 want,   offset, count, block_elems, total, data};
}

} // namespace

START_TEST(test_lease_release_exhaustion)
{
    SegPool pool(8, 256);
    ck_assert_uint_eq(pool.size(), 8);
    std::vector<uint32_t> a, b, c;
    ck_assert(pool.acquire(4, a));
    ck_assert(pool.acquire(4, b));
    ck_assert_uint_eq(pool.free_segs(), 0);
    ck_assert(!pool.acquire(1, c)); // exhausted
    std::vector<uint32_t> all(a);
    all.insert(all.end(), b.begin(), b.end());
    std::sort(all.begin(), all.end());
    for (uint32_t i = 0; i < 8; ++i) {
        ck_assert_uint_eq(all[i], i); // every Seg leased exactly once
    }
    pool.release(a);
    ck_assert_uint_eq(pool.free_segs(), 4);
    ck_assert(!pool.acquire(5, c)); // all or nothing
    ck_assert_uint_eq(pool.free_segs(), 4);
    ck_assert(pool.acquire(4, c));
    std::sort(c.begin(), c.end());
    std::sort(a.begin(), a.end());
    ck_assert(c == a); // the released Segs came back
    ck_assert(!pool.acquire(0, c));
}
END_TEST

START_TEST(test_bitmaps_several_ranks_per_node)
{
    // 6 ranks on 3 nodes: node 7 holds ranks 0,1,2; node 3 ranks 3,4; node 9 rank 5.
    const uint32_t node_ids[6] = {7, 7, 7, 3, 3, 9};
    Topology topo(node_ids, 6);
    ck_assert_uint_eq(topo.nnodes(), 3);
    SegPool pool(2, 64 * sizeof(int32_t));
    std::vector<uint32_t> lease;
    ck_assert(pool.acquire(2, lease));
    const uint32_t seg = lease[1];

    std::vector<std::vector<int32_t>> data(6, std::vector<int32_t>(64));
    std::vector<int32_t> ref(64, 0);
    for (int r = 0; r < 6; ++r) {
        for (int i = 0; i < 64; ++i) {
            data[r][i] = (r + 1) * 1000 + i * (r % 2 ? -3 : 5);
            ref[i] += data[r][i];
        }
    }
    auto block = [&](uint32_t r) {
        return whole(r, 5, INA_OP_SUM, INA_DT_INT32, 64, 128, data[r].data());
    };
    // order: 0, 3, 5 (node 9 done), 1, 4 (node 3 done), 2 (node 7 done = complete)
    ck_assert(pool.contribute(seg, topo, block(0)) == SegOutcome::kStored);
    ck_assert_uint_eq(pool.ranks_pending(seg), 5);
    ck_assert(!pool.rank_pending(seg, 0));
    ck_assert(pool.rank_pending(seg, 1));
    ck_assert_uint_eq(pool.nodes_pending(seg), 3);
    ck_assert(pool.contribute(seg, topo, block(0)) == SegOutcome::kDuplicate);
    ck_assert(pool.contribute(seg, topo, block(3)) == SegOutcome::kStored);
    ck_assert(pool.contribute(seg, topo, block(5)) == SegOutcome::kStored);
    ck_assert_uint_eq(pool.nodes_pending(seg), 2);
    ck_assert(!pool.node_pending(seg, topo.node_of(5)));
    ck_assert(pool.node_pending(seg, topo.node_of(3)));
    // Another SID on a busy Seg, or a different shape, is refused untouched.
    Block other = block(1);
    other.sid = 7;
    ck_assert(pool.contribute(seg, topo, other) == SegOutcome::kBusy);
    other = block(1);
    other.count = other.block_elems = 32;
    ck_assert(pool.contribute(seg, topo, other) == SegOutcome::kMismatch);
    other = block(1);
    other.coll = INA_COLL_REDUCE;
    ck_assert(pool.contribute(seg, topo, other) == SegOutcome::kMismatch);
    other = block(1);
    other.total = 129;
    ck_assert(pool.contribute(seg, topo, other) == SegOutcome::kMismatch);
    other = block(1);
    other.op = INA_OP_MAX;
    ck_assert(pool.contribute(seg, topo, other) == SegOutcome::kMismatch);
    // A reduction needs the whole block: a CREDIT or a part is refused.
    other = block(1);
    other.count = 0;
    ck_assert(pool.contribute(seg, topo, other) == SegOutcome::kNotWhole);
    other = block(1);
    other.offset = 8;
    other.count = 56;
    ck_assert(pool.contribute(seg, topo, other) == SegOutcome::kNotWhole);
    ck_assert(pool.rank_pending(seg, 1));
    ck_assert_uint_eq(pool.ranks_pending(seg), 3);
    ck_assert(pool.contribute(seg, topo, block(1)) == SegOutcome::kStored);
    ck_assert(pool.contribute(seg, topo, block(4)) == SegOutcome::kStored);
    ck_assert_uint_eq(pool.nodes_pending(seg), 1);
    ck_assert(pool.node_pending(seg, topo.node_of(2)));
    ck_assert_uint_eq(pool.ranks_pending(seg), 1);
    ck_assert(pool.contribute(seg, topo, block(2)) == SegOutcome::kComplete);
    ck_assert_uint_eq(pool.nodes_pending(seg), 0);

    uint32_t buf = pool.take_result(seg);
    ck_assert(!pool.busy(seg)); // released at once
    ck_assert_int_eq(std::memcmp(pool.buffers().data(buf), ref.data(), 64 * sizeof(int32_t)), 0);
    // The Seg serves the next SID while the result is still referenced.
    ck_assert(pool.contribute(seg, topo, block(0)) == SegOutcome::kStored);
    pool.buffers().unref(buf);
    pool.release(lease); // drops the half-filled Seg too
    ck_assert_uint_eq(pool.buffers().free_count(), pool.buffers().allocated());

    Block big = block(0);
    big.count = big.block_elems = 65;
    ck_assert(pool.acquire(1, lease));
    ck_assert(pool.contribute(lease[0], topo, big) == SegOutcome::kTooBig);
}
END_TEST

// Whether the rank arriving at position i of `order` is early for a Seg
// reduced in rank order: some lower rank has not arrived yet.
static bool order_before(const std::vector<uint32_t> &order, uint32_t i, uint32_t r)
{
    for (uint32_t lower = 0; lower < r; ++lower) {
        if (std::find(order.begin(), order.begin() + i, lower) == order.begin() + i) {
            return true;
        }
    }
    return false;
}

// Every arrival order of 4 ranks (2 per node) must give the bits of
// ((r0 op r1) op r2) op r3 computed with ina_reduce. owned: each block
// arrives as the agent's rendezvous receive hands it over, in a buffer of
// the pool (Block::own) that the Seg may keep instead of copying from.
template <typename T>
static void check_permutations(unsigned op, unsigned dtype, const std::vector<std::vector<T>> &in,
                               bool owned = false)
{
    const uint32_t n = 4;
    const uint32_t count = static_cast<uint32_t>(in[0].size());
    const uint32_t node_ids[n] = {0, 0, 1, 1};
    Topology topo(node_ids, n);
    std::vector<T> ref(in[0]);
    for (uint32_t r = 1; r < n; ++r) {
        ina_reduce(op, dtype, ref.data(), in[r].data(), count);
    }
    SegPool pool(1, count * sizeof(T));
    std::vector<uint32_t> lease;
    ck_assert(pool.acquire(1, lease));
    std::vector<uint32_t> order = {0, 1, 2, 3};
    int perms = 0;
    bool order_matters = false;
    do {
        for (uint32_t i = 0; i < n; ++i) {
            uint32_t r = order[i];
            BufRef own;
            const void *data = in[r].data();
            if (owned) {
                own = BufRef(pool.buffers(), pool.buffers().get());
                std::memcpy(own.data(), in[r].data(), count * sizeof(T));
                data = own.data();
            }
            Block b = whole(r, 0, op, dtype, count, count, data);
            b.own = owned ? &own : nullptr;
            SegOutcome o = pool.contribute(lease[0], topo, b);
            ck_assert(o == (i + 1 == n ? SegOutcome::kComplete : SegOutcome::kStored));
            if (owned) {
                // Kept (the first one, or an early one staged) or read from:
                // either way the caller's reference is the only one left, or none.
                const bool kept = !own;
                ck_assert(kept == (i == 0 || r != 0 && order_before(order, i, r)));
            }
        }
        uint32_t buf = pool.take_result(lease[0]);
        ck_assert_msg(std::memcmp(pool.buffers().data(buf), ref.data(), count * sizeof(T)) == 0,
                      "permutation %u%u%u%u differs from the rank-order reference", order[0],
                      order[1], order[2], order[3]);
        pool.buffers().unref(buf);
        // What arrival-order reduction would have given: proves the data is order sensitive.
        std::vector<T> naive(in[order[0]]);
        for (uint32_t i = 1; i < n; ++i) {
            ina_reduce(op, dtype, naive.data(), in[order[i]].data(), count);
        }
        order_matters |= std::memcmp(naive.data(), ref.data(), count * sizeof(T)) != 0;
        ++perms;
    } while (std::next_permutation(order.begin(), order.end()));
    ck_assert_int_eq(perms, 24);
    ck_assert_msg(order_matters, "test data does not depend on the order");
    // Staging buffers were all returned and are reused, not reallocated per block.
    ck_assert_uint_eq(pool.buffers().free_count(), pool.buffers().allocated());
    // (Owned: the block in flight has one of its own besides.)
    ck_assert_uint_le(pool.buffers().allocated(), owned ? n + 1 : n);
}

START_TEST(test_owned_blocks_kept_not_copied)
{
    std::vector<std::vector<float>> in(4, std::vector<float>(33));
    for (int i = 0; i < 33; ++i) {
        in[0][i] = 1.0e8f + static_cast<float>(i);
        in[1][i] = 3.3f * static_cast<float>(i + 1);
        in[2][i] = -1.0e8f;
        in[3][i] = 0.1f + 1.7f * static_cast<float>(i);
    }
    check_permutations<float>(INA_OP_SUM, INA_DT_FLOAT, in, true);
}
END_TEST

START_TEST(test_ordered_float_sum_all_permutations)
{
    std::vector<std::vector<float>> in(4, std::vector<float>(33));
    for (int i = 0; i < 33; ++i) {
        in[0][i] = 1.0e8f + static_cast<float>(i);
        in[1][i] = 3.3f * static_cast<float>(i + 1);
        in[2][i] = -1.0e8f;
        in[3][i] = 0.1f + 1.7f * static_cast<float>(i);
    }
    check_permutations<float>(INA_OP_SUM, INA_DT_FLOAT, in);
}
END_TEST

START_TEST(test_ordered_double_sum_all_permutations)
{
    std::vector<std::vector<double>> in(4, std::vector<double>(17));
    for (int i = 0; i < 17; ++i) {
        in[0][i] = 1.0e17 + i;
        in[1][i] = 0.3 * (i + 1);
        in[2][i] = -1.0e17;
        in[3][i] = 1.0 / (i + 3);
    }
    check_permutations<double>(INA_OP_SUM, INA_DT_DOUBLE, in);
}
END_TEST

START_TEST(test_job_membership_and_retire)
{
    SegPool pool(8, 64);
    Member p0, p1, p2, stranger;
    Job job(42, 4, JobKey{}, {1, 2, 3}, 4, TreeDesc{}, &p0);
    ck_assert(!job.dead());
    ck_assert(job.orphaned_by(&p0));
    ck_assert_int_eq(job.join(0, &p0), INA_PROTO_OK);
    ck_assert(!job.orphaned_by(&p0));
    ck_assert_int_eq(job.join(1, &p1), INA_PROTO_OK);
    ck_assert_int_eq(job.join(1, &stranger), INA_PROTO_ERR_NOT_MEMBER);
    ck_assert_int_eq(job.join(3, &stranger), INA_PROTO_ERR_MALFORMED);
    ck_assert_int_eq(job.join(2, &p2), INA_PROTO_OK);
    ck_assert(job.is_member(1, &p1));
    ck_assert(!job.is_member(1, &p0));
    ck_assert_uint_eq(job.joined(), 3);

    // MID 0 granted and still in flight, MID 1 denied, MID 2 granted and done.
    Call &c0 = job.add_call(0);
    c0.granted = true;
    ck_assert(pool.acquire(4, c0.lease));
    Call &c1 = job.add_call(1);
    c1.finished = true;
    Call &c2 = job.add_call(2);
    c2.granted = true;
    c2.finished = true;
    for (uint32_t r = 0; r < 3; ++r) {
        job.note_mid(r, 3);
    }
    // Every member posted MID 3 (non-blocking calls): the finished calls
    // below it are forgotten, the one still in flight keeps its record and
    // its lease.
    job.retire();
    ck_assert(job.find_call(0) == &c0);
    ck_assert_uint_eq(pool.free_segs(), 4);
    ck_assert(job.find_call(1) == nullptr);
    ck_assert(job.find_call(2) == nullptr);
    ck_assert(job.is_retired(1));
    ck_assert(!job.is_retired(3));
    c0.finished = true;
    pool.release(c0.lease);
    job.retire();
    ck_assert(job.find_call(0) == nullptr);
    ck_assert_uint_eq(job.live_calls(), 0);
    // A member that has not moved on holds back the forgetting.
    Call &c3 = job.add_call(3);
    c3.finished = true;
    job.note_mid(0, 4);
    job.note_mid(1, 4);
    job.retire();
    ck_assert(job.find_call(3) != nullptr); // rank 2 has not moved past MID 3
    ck_assert(job.leave(2, &p2));
    job.retire();
    ck_assert(job.find_call(3) == nullptr); // the leaver no longer holds it back
    ck_assert_uint_eq(job.live_calls(), 0);
    ck_assert(!job.leave(2, &p2));
    ck_assert(job.leave(0, &p0));
    ck_assert(job.leave(1, &p1));
    ck_assert(job.dead());
}
END_TEST

// Abort of open calls when a member leaves: only granted unfinished calls
// and deferred ones.
START_TEST(test_job_abort_open_calls)
{
    SegPool pool(8, 64);
    Member p0, p1;
    Job job(7, 2, JobKey{}, {1, 2}, 2, TreeDesc{}, &p0);
    ck_assert_int_eq(job.join(0, &p0), INA_PROTO_OK);
    ck_assert_int_eq(job.join(1, &p1), INA_PROTO_OK);
    for (uint64_t mid = 0; mid < 5; ++mid) {
        Call &c = job.add_call(mid);
        c.granted = mid < 2 || mid == 3; // MID 2 denied, MID 4 deferred
        c.deferred = mid == 4;
        c.finished = mid == 2 || mid == 3;
        if (mid < 2) {
            ck_assert(pool.acquire(2, c.lease));
        }
    }
    ck_assert_uint_eq(pool.free_segs(), 4);
    // Granted unfinished and deferred calls end; the records keep the leases
    // for the caller to give back.
    std::vector<uint64_t> mids = job.abort_open_calls();
    ck_assert_uint_eq(mids.size(), 3);
    ck_assert_uint_eq(mids[0], 0);
    ck_assert_uint_eq(mids[1], 1);
    ck_assert_uint_eq(mids[2], 4);
    for (uint64_t mid : mids) {
        ck_assert(job.find_call(mid)->finished);
        pool.release(job.find_call(mid)->lease);
    }
    ck_assert_uint_eq(pool.free_segs(), 8);
    ck_assert(job.abort_open_calls().empty());
}
END_TEST

// Which members want the payload is recorded per Seg; a member that does
// not want it costs no reference on the result buffer.
START_TEST(test_want_result_bits)
{
    const uint32_t node_ids[5] = {0, 0, 1, 1, 2};
    Topology topo(node_ids, 5);
    SegPool pool(1, 16 * sizeof(int64_t));
    std::vector<uint32_t> lease;
    ck_assert(pool.acquire(1, lease));
    std::vector<std::vector<int64_t>> in(5, std::vector<int64_t>(16));
    std::vector<int64_t> ref(16, 0);
    for (uint32_t r = 0; r < 5; ++r) {
        for (uint32_t i = 0; i < 16; ++i) {
            in[r][i] = static_cast<int64_t>(r * 100 + i) - 7;
            ref[i] += in[r][i];
        }
    }
    // REDUCE to root 3: only rank 3 wants the block.
    for (uint32_t r : {4u, 3u, 0u, 2u, 1u}) {
        Block b = whole(r, 0, INA_OP_SUM, INA_DT_INT64, 16, 16, in[r].data(), INA_COLL_REDUCE,
                        r == 3);
        ck_assert(pool.contribute(lease[0], topo, b) ==
                  (r == 1 ? SegOutcome::kComplete : SegOutcome::kStored));
    }
    ck_assert_uint_eq(pool.wanted(lease[0]), 1);
    uint32_t buf = pool.take_result(lease[0]);
    ck_assert(!pool.busy(lease[0]));
    for (uint32_t r = 0; r < 5; ++r) {
        ck_assert(pool.wants(lease[0], r) == (r == 3)); // readable after take_result
    }
    ck_assert_int_eq(std::memcmp(pool.buffers().data(buf), ref.data(), sizeof(int64_t) * 16), 0);
    pool.buffers().hold(buf, pool.wanted(lease[0]));
    pool.buffers().unref(buf);
    ck_assert_uint_eq(pool.buffers().free_count(), pool.buffers().allocated());
    // Nobody wants it (every member gets an ACK only): the buffer goes back at once.
    for (uint32_t r = 0; r < 5; ++r) {
        Block b = whole(r, 1, INA_OP_SUM, INA_DT_INT64, 16, 32, in[r].data(), INA_COLL_REDUCE,
                        false);
        pool.contribute(lease[0], topo, b);
    }
    ck_assert_uint_eq(pool.wanted(lease[0]), 0);
    buf = pool.take_result(lease[0]);
    pool.buffers().hold(buf, 0);
    ck_assert_uint_eq(pool.buffers().free_count(), pool.buffers().allocated());
}
END_TEST

// BCAST: one root brings the whole block, the others CREDITs; a second root,
// a partial root block and a block nobody brought data for are refused and
// leave the Seg as it was.
START_TEST(test_bcast_rules)
{
    const uint32_t node_ids[4] = {0, 1, 2, 3};
    Topology topo(node_ids, 4);
    SegPool pool(1, 256);
    std::vector<uint32_t> lease;
    ck_assert(pool.acquire(1, lease));
    const uint32_t seg = lease[0];
    std::vector<uint8_t> root(200), other(200);
    for (size_t i = 0; i < root.size(); ++i) {
        root[i] = static_cast<uint8_t>(i * 7 + 1);
        other[i] = static_cast<uint8_t>(~root[i]);
    }
    const uint32_t sc = 200;
    ck_assert(pool.contribute(seg, topo, piece(INA_COLL_BCAST, 1, 0, 0, 0, sc, 1000, nullptr)) ==
              SegOutcome::kStored);
    ck_assert(pool.contribute(seg, topo, piece(INA_COLL_BCAST, 2, 0, 0, 100, sc, 1000,
                                               root.data())) == SegOutcome::kNotWhole);
    ck_assert(pool.contribute(seg, topo, piece(INA_COLL_BCAST, 2, 0, 0, sc, sc, 1000,
                                               root.data(), false)) == SegOutcome::kStored);
    // Rank 3 claims to be a root too: refused, rank 3 still pending.
    ck_assert(pool.contribute(seg, topo, piece(INA_COLL_BCAST, 3, 0, 0, sc, sc, 1000,
                                               other.data())) == SegOutcome::kOverlap);
    ck_assert(pool.rank_pending(seg, 3));
    ck_assert_uint_eq(pool.ranks_pending(seg), 2);
    // The same rank, sent right, is taken: the Seg stayed usable.
    ck_assert(pool.contribute(seg, topo, piece(INA_COLL_BCAST, 3, 0, 0, 0, sc, 1000, nullptr)) ==
              SegOutcome::kStored);
    ck_assert(pool.contribute(seg, topo, piece(INA_COLL_BCAST, 0, 0, 0, 0, sc, 1000, nullptr)) ==
              SegOutcome::kComplete);
    ck_assert_uint_eq(pool.wanted(seg), 3);
    ck_assert(!pool.wants(seg, 2)); // the root asked for an ACK only
    uint32_t buf = pool.take_result(seg);
    ck_assert_int_eq(std::memcmp(pool.buffers().data(buf), root.data(), sc), 0);
    pool.buffers().unref(buf);

    // All CREDITs: the last one would complete a block nobody filled.
    for (uint32_t r = 0; r < 3; ++r) {
        ck_assert(pool.contribute(seg, topo, piece(INA_COLL_BCAST, r, 1, 0, 0, sc, 1000,
                                                   nullptr)) == SegOutcome::kStored);
    }
    ck_assert(pool.contribute(seg, topo, piece(INA_COLL_BCAST, 3, 1, 0, 0, sc, 1000, nullptr)) ==
              SegOutcome::kUncovered);
    ck_assert(pool.rank_pending(seg, 3));
    // Its root arrives last after all: complete and exact.
    ck_assert(pool.contribute(seg, topo, piece(INA_COLL_BCAST, 3, 1, 0, sc, sc, 1000,
                                               other.data())) == SegOutcome::kComplete);
    buf = pool.take_result(seg);
    ck_assert_int_eq(std::memcmp(pool.buffers().data(buf), other.data(), sc), 0);
    pool.buffers().unref(buf);
    ck_assert_uint_eq(pool.buffers().free_count(), pool.buffers().allocated());
}
END_TEST

// ALLGATHER: pieces of any size land at their offsets in any order, whatever
// the 64-bit word boundaries of the coverage bitmap; overlaps and gaps are
// refused without touching the Seg.
START_TEST(test_allgather_pieces)
{
    const uint32_t n = 7;
    std::vector<uint32_t> node_ids(n);
    std::iota(node_ids.begin(), node_ids.end(), 0u);
    Topology topo(node_ids.data(), n);
    SegPool pool(1, 1024);
    std::vector<uint32_t> lease;
    ck_assert(pool.acquire(1, lease));
    const uint32_t seg = lease[0];
    std::mt19937 rng(5);
    int overlaps = 0, gaps = 0;
    for (int round = 0; round < 200; ++round) {
        // Cut [0, sc) into pieces at random points (some empty: CREDITs).
        const uint32_t sc = 1 + rng() % 1000;
        std::vector<uint32_t> cuts = {0, sc};
        for (uint32_t i = 0; i + 1 < n; ++i) {
            cuts.push_back(rng() % (sc + 1));
        }
        std::sort(cuts.begin(), cuts.end());
        std::vector<uint8_t> ref(sc);
        for (auto &b : ref) {
            b = static_cast<uint8_t>(rng());
        }
        std::vector<uint32_t> order(n);
        std::iota(order.begin(), order.end(), 0u);
        std::shuffle(order.begin(), order.end(), rng);
        for (uint32_t i = 0; i < n; ++i) {
            const uint32_t r = order[i];
            const uint32_t off = cuts[r], cnt = cuts[r + 1] - cuts[r];
            if (cnt > 0) {
                // The piece grown by one element on either side: where that
                // element is already placed, it is an overlap and refused.
                for (int side = 0; side < 2; ++side) {
                    if ((side == 0 && off == 0) || (side == 1 && off + cnt == sc)) {
                        continue;
                    }
                    const uint32_t o = side == 0 ? off - 1 : off;
                    const uint32_t extra = side == 0 ? off - 1 : off + cnt;
                    bool placed = false;
                    for (uint32_t j = 0; j < i; ++j) {
                        placed |= cuts[order[j]] <= extra && extra < cuts[order[j] + 1];
                    }
                    if (placed) {
                        ck_assert(pool.contribute(seg, topo,
                                                  piece(INA_COLL_ALLGATHER, r, round, o, cnt + 1,
                                                        sc, 100000, ref.data() + o)) ==
                                  SegOutcome::kOverlap);
                        ++overlaps;
                    }
                }
            }
            if (i + 1 == n && cnt > 0) {
                // The last member sending one element short leaves a gap.
                ck_assert(pool.contribute(seg, topo,
                                          piece(INA_COLL_ALLGATHER, r, round, off, cnt - 1, sc,
                                                100000, ref.data() + off)) ==
                          SegOutcome::kUncovered);
                ++gaps;
            }
            SegOutcome o = pool.contribute(
                seg, topo,
                piece(INA_COLL_ALLGATHER, r, round, off, cnt, sc, 100000, ref.data() + off));
            ck_assert(o == (i + 1 == n ? SegOutcome::kComplete : SegOutcome::kStored));
        }
        uint32_t buf = pool.take_result(seg);
        ck_assert_msg(std::memcmp(pool.buffers().data(buf), ref.data(), sc) == 0,
                      "round %d: gathered block differs", round);
        pool.buffers().unref(buf);
    }
    ck_assert_int_gt(overlaps, 300); // the refusals above really ran
    ck_assert_int_gt(gaps, 100);
    ck_assert_uint_le(pool.buffers().allocated(), 2);
}
END_TEST

// BARRIER: one empty block, every member a CREDIT; completes without a buffer.
START_TEST(test_barrier_block)
{
    const uint32_t node_ids[3] = {4, 4, 5};
    Topology topo(node_ids, 3);
    SegPool pool(2, 64);
    std::vector<uint32_t> lease;
    ck_assert(pool.acquire(2, lease));
    for (int rep = 0; rep < 3; ++rep) {
        for (uint32_t r : {2u, 0u, 1u}) {
            SegOutcome o = pool.contribute(lease[0], topo,
                                           piece(INA_COLL_BARRIER, r, 0, 0, 0, 0, 0, nullptr));
            ck_assert(o == (r == 1 ? SegOutcome::kComplete : SegOutcome::kStored));
        }
        ck_assert_uint_eq(pool.wanted(lease[0]), 3);
        ck_assert_uint_eq(pool.take_result(lease[0]), kNoIndex);
    }
    ck_assert_uint_eq(pool.buffers().allocated(), 0);
    // A BARRIER block on a Seg that holds an ALLREDUCE block of the same SID
    // (one member running another collective) is a mismatch.
    int32_t v[4] = {1, 2, 3, 4};
    ck_assert(pool.contribute(lease[1], topo, whole(0, 1, INA_OP_SUM, INA_DT_INT32, 4, 8, v)) ==
              SegOutcome::kStored);
    ck_assert(pool.contribute(lease[1], topo, piece(INA_COLL_BARRIER, 1, 1, 0, 0, 0, 0, nullptr)) ==
              SegOutcome::kMismatch);
    pool.release(lease);
    ck_assert_uint_eq(pool.buffers().free_count(), pool.buffers().allocated());
}
END_TEST

int main()
{
    return ina_test::run_suite("agent_core", "core",
                               {test_lease_release_exhaustion,
                                test_bitmaps_several_ranks_per_node,
                                test_ordered_float_sum_all_permutations,
                                test_ordered_double_sum_all_permutations,
                                test_owned_blocks_kept_not_copied,
                                test_job_membership_and_retire,
                                test_job_abort_open_calls,
                                test_want_result_bits,
                                test_bcast_rules,
                                test_allgather_pieces,
                                test_barrier_block});
}

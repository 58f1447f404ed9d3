// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Unit tests of the block geometry of every offloadable collective
// (ina::CallGeometry): which slice of its buffer a rank sends for block sid,
// with which flags, and where each block's RESULT lands.
//
// The main check is a model run: for random shapes, every member's geometry
// drives a model of the agent that applies the wire rules of ina_proto.h
// (reductions: every member brings the whole block; BCAST: exactly the root
// brings it; ALLGATHER: contributions tile the block without overlap), then
// every member places the blocks it asked for. Each member's receive buffer is
// compared with the MPI result computed directly from the definition of the
// collective, and every byte outside the result must stay untouched (written
// at most once inside it). Explicit cases pin the arithmetic for uneven
// recvcounts, chunks straddling blocks and calls beyond 2^32 bytes.
#include <check.h>
#include "check_main.h"

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "ina_geometry.h"

using ina::BlockResult;
using ina::BlockSend;
using ina::CallGeometry;
using ina::CallShape;

// Check records every passing ck_assert (a write per assertion): the model's
// inner loops test plainly and call Check only to report a failure.
#define EXPECT(c)                                                                          \
    do {                                                                                   \
        if (!(c)) {                                                                        \
            ck_abort_msg("line %d: %s", __LINE__, #c);                                     \
        }                                                                                  \
    } while (0)
#define EXPECT_EQ(a, b) EXPECT((a) == (b))
#define EXPECT_LE(a, b) EXPECT((a) <= (b))
#define EXPECT_GT(a, b) EXPECT((a) > (b))

namespace {

constexpr uint64_t kUntouched = 0xdeadbeefcafef00dull;

// Input element i of member r (distinct per member and index).
uint64_t input(uint32_t r, uint64_t i)
{
    return (static_cast<uint64_t>(r) + 1) * 1000003u + i * 7919u;
}

struct Model {
    CallShape shape;
    std::vector<uint64_t> recvcounts;
};

// Run one call through the geometry of every member and the model agent;
// check each member's output against the MPI definition.
void model_run(const Model &m)
{
    const CallShape &base = m.shape;
    const uint32_t n = base.nmembers;
    std::vector<CallGeometry> g(n);
    for (uint32_t r = 0; r < n; ++r) {
        CallShape s = base;
        s.rank = r;
        s.recvcounts = m.recvcounts.empty() ? nullptr : m.recvcounts.data();
        EXPECT(g[r].plan(s));
    }
    const uint64_t total = g[0].total();
    const uint64_t per = g[0].elems_per_block();
    EXPECT_EQ(per, base.block_bytes / base.elem_size);
    const bool reduce = base.coll == INA_COLL_ALLREDUCE || base.coll == INA_COLL_REDUCE ||
                        base.coll == INA_COLL_REDUCE_SCATTER;

    // Every member's inputs and outputs, in elements (byte offsets are
    // divided by the element size, and must divide exactly).
    std::vector<std::vector<uint64_t>> src(n), out(n);
    std::vector<std::vector<unsigned>> writes(n);
    uint64_t out_len = 0;
    switch (base.coll) {
    case INA_COLL_REDUCE_SCATTER:
        out_len = 0;
        break; // per member below
    case INA_COLL_BARRIER:
        out_len = 0;
        break;
    default:
        out_len = total;
        break;
    }
    for (uint32_t r = 0; r < n; ++r) {
        // Source: the reduction's input, the root's bytes, or this member's chunk.
        uint64_t src_len = base.coll == INA_COLL_ALLGATHER ? base.count : total;
        src[r].resize(src_len);
        for (uint64_t i = 0; i < src_len; ++i) {
            src[r][i] = input(r, i);
        }
        uint64_t len = base.coll == INA_COLL_REDUCE_SCATTER ? m.recvcounts[r] : out_len;
        out[r].assign(len + 3, kUntouched); // 3 guard elements past the result
        writes[r].assign(len + 3, 0);
        if (base.coll == INA_COLL_ALLGATHER && base.in_place) {
            // The chunk is already in place; results must not write it.
            for (uint64_t i = 0; i < base.count; ++i) {
                out[r][r * base.count + i] = input(r, i);
            }
        }
    }

    std::vector<uint64_t> seg;
    std::vector<unsigned> cover;
    EXPECT_EQ(g[0].nblocks(),
                      base.coll == INA_COLL_BARRIER ? 1 : (total + per - 1) / per);
    for (uint64_t sid = 0; sid < g[0].nblocks(); ++sid) {
        const uint32_t block_elems = g[0].block_count(sid);
        EXPECT_EQ(block_elems, sid + 1 < g[0].nblocks() ? per : total - sid * per);
        seg.assign(block_elems, 0);
        cover.assign(block_elems, 0);
        unsigned data_members = 0;
        for (uint32_t r = 0; r < n; ++r) {
            EXPECT_EQ(g[r].block_count(sid), block_elems); // all members agree
            const BlockSend b = g[r].send(sid);
            EXPECT(b.want_result == g[r].wants(sid));
            EXPECT_LE(static_cast<uint64_t>(b.offset) + b.count, block_elems);
            if (b.count == 0) {
                continue; // a CREDIT
            }
            ++data_members;
            EXPECT_EQ(b.src % base.elem_size, 0);
            const uint64_t s0 = b.src / base.elem_size;
            EXPECT_LE(s0 + b.count, src[r].size());
            if (reduce) {
                // The agent requires the whole block from every member.
                EXPECT_EQ(b.offset, 0);
                EXPECT_EQ(b.count, block_elems);
            }
            for (uint32_t i = 0; i < b.count; ++i) {
                if (reduce) {
                    seg[i] += src[r][s0 + i];
                } else {
                    seg[b.offset + i] = src[r][s0 + i];
                }
                ++cover[b.offset + i];
            }
        }
        // The agent's completion rules.
        if (reduce) {
            EXPECT_EQ(data_members, block_elems > 0 ? n : 0);
        } else if (base.coll == INA_COLL_BCAST) {
            EXPECT_EQ(data_members, 1);
        } else if (base.coll == INA_COLL_BARRIER) {
            EXPECT_EQ(data_members, 0);
            EXPECT_EQ(block_elems, 0);
        }
        if (!reduce) {
            for (uint32_t i = 0; i < block_elems; ++i) {
                EXPECT_EQ(cover[i], 1); // no overlap, no hole
            }
        }
        // Each member places the pieces of the block it asked for.
        for (uint32_t r = 0; r < n; ++r) {
            const BlockResult res = g[r].result(sid);
            if (!g[r].wants(sid)) {
                EXPECT_EQ(res.npieces, 0);
            }
            for (unsigned p = 0; p < res.npieces; ++p) {
                const BlockResult::Piece &pc = res.piece[p];
                EXPECT_GT(pc.count, 0);
                EXPECT_LE(static_cast<uint64_t>(pc.from) + pc.count, block_elems);
                EXPECT_EQ(pc.dst % base.elem_size, 0);
                const uint64_t d0 = pc.dst / base.elem_size;
                EXPECT_LE(d0 + pc.count, out[r].size() - 3);
                for (uint32_t i = 0; i < pc.count; ++i) {
                    out[r][d0 + i] = seg[pc.from + i];
                    ++writes[r][d0 + i];
                }
            }
        }
    }

    // The MPI definition of each collective, element by element.
    for (uint32_t r = 0; r < n; ++r) {
        const uint64_t len = out[r].size() - 3;
        for (uint64_t i = 0; i < len + 3; ++i) {
            uint64_t want = kUntouched;
            bool written = i < len;
            if (i < len) {
                switch (base.coll) {
                case INA_COLL_ALLREDUCE:
                case INA_COLL_REDUCE:
                case INA_COLL_REDUCE_SCATTER: {
                    const uint64_t j = base.coll == INA_COLL_REDUCE_SCATTER
                                           ? g[r].part_first() + i
                                           : i;
                    want = 0;
                    for (uint32_t q = 0; q < n; ++q) {
                        want += input(q, j);
                    }
                    if (base.coll == INA_COLL_REDUCE && r != base.root) {
                        want = kUntouched; // non-roots receive nothing
                        written = false;
                    }
                    break;
                }
                case INA_COLL_BCAST:
                    want = r == base.root ? kUntouched : input(base.root, i);
                    written = r != base.root; // the root's buffer is the source
                    break;
                case INA_COLL_ALLGATHER: {
                    const uint64_t owner = i / base.count;
                    want = input(static_cast<uint32_t>(owner), i % base.count);
                    // In place, the own chunk is input and never rewritten.
                    written = !(base.in_place && owner == r);
                    break;
                }
                default:
                    break;
                }
            }
            if (out[r][i] != want) {
                ck_abort_msg("%s rank %u of %u elem %llu: got %llx want %llx",
                          ina_proto_coll_name(base.coll), r, n,
                          static_cast<unsigned long long>(i),
                          static_cast<unsigned long long>(out[r][i]),
                             static_cast<unsigned long long>(want));
            }
            EXPECT_EQ(writes[r][i], written ? 1u : 0u);
        }
    }
}

uint32_t pick_block(std::mt19937_64 &rng, size_t esz)
{
    // Multiples of 16 (the job's rule), from one element up to a few.
    uint32_t b = static_cast<uint32_t>(16 * (1 + rng() % 6));
    return b < esz ? static_cast<uint32_t>(esz) : b;
}

} // namespace

START_TEST(test_model_random)
{
    std::mt19937_64 rng(20261122);
    const size_t sizes[] = {1, 2, 4, 8, 16, 32};
    for (int round = 0; round < 3000; ++round) {
        Model m;
        CallShape &s = m.shape;
        s.coll = static_cast<unsigned>(rng() % INA_COLL_COUNT);
        s.nmembers = 1 + static_cast<uint32_t>(rng() % 9);
        s.root = static_cast<uint32_t>(rng() % s.nmembers);
        const bool bytes = s.coll == INA_COLL_BCAST || s.coll == INA_COLL_ALLGATHER ||
                           s.coll == INA_COLL_BARRIER;
        s.elem_size = bytes ? 1 : sizes[rng() % 6];
        s.block_bytes = pick_block(rng, s.elem_size);
        s.count = rng() % 4 == 0 ? rng() % 3 : rng() % 200;
        s.in_place = s.coll == INA_COLL_ALLGATHER && rng() % 2 == 0;
        if (s.coll == INA_COLL_REDUCE_SCATTER) {
            for (uint32_t r = 0; r < s.nmembers; ++r) {
                // Uneven, with zeros: parts start and end anywhere in blocks.
                m.recvcounts.push_back(rng() % 3 == 0 ? 0 : rng() % 40);
            }
        }
        if (s.coll == INA_COLL_BARRIER) {
            s.count = 0;
        }
        model_run(m);
    }
}
END_TEST

// Hand-checked numbers for uneven recvcounts: parts 5, 0, 11, 2 of int32 in
// 16-byte blocks (4 elements): the vector 0..17 is cut 0-3 4-7 8-11 12-15 16-17.
START_TEST(test_reduce_scatter_uneven)
{
    const uint64_t rc[4] = {5, 0, 11, 2};
    CallShape s;
    s.coll = INA_COLL_REDUCE_SCATTER;
    s.elem_size = 4;
    s.nmembers = 4;
    s.recvcounts = rc;
    s.block_bytes = 16;
    CallGeometry g;
    s.rank = 2; // part [5, 16)
    ck_assert(g.plan(s));
    ck_assert_uint_eq(g.total(), 18);
    ck_assert_uint_eq(g.nblocks(), 5);
    ck_assert_uint_eq(g.block_count(4), 2);
    ck_assert_uint_eq(g.part_first(), 5);
    ck_assert_uint_eq(g.part_count(), 11);
    ck_assert(!g.wants(0) && g.wants(1) && g.wants(2) && g.wants(3) && !g.wants(4));
    // Every member sends every block whole, from its offset in sbuf.
    BlockSend b = g.send(3);
    ck_assert(b.offset == 0 && b.count == 4 && b.src == 48 && b.want_result);
    b = g.send(4);
    ck_assert(b.offset == 0 && b.count == 2 && b.src == 64 && !b.want_result);
    // Block 1 = elements 4..7: 5..7 are ours, at part offsets 0..2.
    BlockResult r = g.result(1);
    ck_assert_uint_eq(r.npieces, 1);
    ck_assert(r.piece[0].from == 1 && r.piece[0].count == 3 && r.piece[0].dst == 0);
    r = g.result(3); // 12..15 -> part offsets 7..10, bytes 28..43
    ck_assert(r.npieces == 1 && r.piece[0].from == 0 && r.piece[0].count == 4 &&
              r.piece[0].dst == 28);
    ck_assert_uint_eq(g.result(4).npieces, 0);
    // Rank 1 has an empty part: an ACK_ONLY for every block.
    s.rank = 1;
    ck_assert(g.plan(s));
    for (uint64_t sid = 0; sid < 5; ++sid) {
        ck_assert(!g.wants(sid) && !g.send(sid).want_result && g.result(sid).npieces == 0);
        ck_assert_uint_eq(g.send(sid).count, g.block_count(sid));
    }
    // Rank 3: [16, 18) = the whole last block.
    s.rank = 3;
    ck_assert(g.plan(s));
    r = g.result(4);
    ck_assert(g.wants(4) && r.npieces == 1 && r.piece[0].from == 0 && r.piece[0].count == 2 &&
              r.piece[0].dst == 0);
    ck_assert(!g.wants(3));
}
END_TEST

// Allgather chunks of 10 bytes in 16-byte blocks over 3 members: chunk 1 is
// [10, 20) = bytes 10..15 of block 0 and 0..3 of block 1.
START_TEST(test_allgather_straddle)
{
    CallShape s;
    s.coll = INA_COLL_ALLGATHER;
    s.elem_size = 1;
    s.count = 10;
    s.nmembers = 3;
    s.rank = 1;
    s.block_bytes = 16;
    CallGeometry g;
    ck_assert(g.plan(s));
    ck_assert_uint_eq(g.total(), 30);
    ck_assert_uint_eq(g.nblocks(), 2);
    BlockSend b = g.send(0);
    ck_assert(b.offset == 10 && b.count == 6 && b.src == 0 && b.want_result);
    b = g.send(1);
    ck_assert(b.offset == 0 && b.count == 4 && b.src == 6 && b.want_result);
    // Out of place: the whole block lands in rbuf at its offset.
    BlockResult r = g.result(1);
    ck_assert(r.npieces == 1 && r.piece[0].from == 0 && r.piece[0].count == 14 &&
              r.piece[0].dst == 16);
    // In place: the pieces around the own chunk [10, 20).
    s.in_place = true;
    ck_assert(g.plan(s));
    r = g.result(0);
    ck_assert(r.npieces == 1 && r.piece[0].from == 0 && r.piece[0].count == 10 &&
              r.piece[0].dst == 0);
    r = g.result(1);
    ck_assert(r.npieces == 1 && r.piece[0].from == 4 && r.piece[0].count == 10 &&
              r.piece[0].dst == 20);
    // A chunk strictly inside one block: two pieces around it.
    s.count = 4;
    s.nmembers = 4;
    s.rank = 2; // [8, 12) of block 0 = [0, 16)
    ck_assert(g.plan(s));
    ck_assert_uint_eq(g.nblocks(), 1);
    r = g.result(0);
    ck_assert(r.npieces == 2 && r.piece[0].from == 0 && r.piece[0].count == 8 &&
              r.piece[1].from == 12 && r.piece[1].count == 4 && r.piece[1].dst == 12);
    // A member whose chunk misses a block sends a CREDIT but still wants it.
    s.count = 20;
    s.nmembers = 2;
    s.rank = 1; // [20, 40): blocks 1, 2
    s.in_place = false;
    ck_assert(g.plan(s));
    b = g.send(0);
    ck_assert(b.count == 0 && b.want_result);
}
END_TEST

START_TEST(test_roots_and_barrier)
{
    CallShape s;
    s.coll = INA_COLL_REDUCE;
    s.elem_size = 8;
    s.count = 5;
    s.nmembers = 3;
    s.root = 2;
    s.block_bytes = 16;
    CallGeometry g;
    s.rank = 0;
    ck_assert(g.plan(s));
    ck_assert_uint_eq(g.nblocks(), 3);
    BlockSend b = g.send(2);
    ck_assert(b.count == 1 && b.src == 32 && !b.want_result);
    ck_assert_uint_eq(g.result(2).npieces, 0);
    s.rank = 2;
    ck_assert(g.plan(s));
    BlockResult r = g.result(1);
    ck_assert(g.send(1).want_result && r.npieces == 1 && r.piece[0].dst == 16 &&
              r.piece[0].count == 2);

    s.coll = INA_COLL_BCAST;
    s.elem_size = 1;
    s.count = 40;
    s.root = 1;
    s.rank = 1;
    ck_assert(g.plan(s));
    b = g.send(2);
    ck_assert(b.count == 8 && b.offset == 0 && b.src == 32 && !b.want_result);
    s.rank = 0;
    ck_assert(g.plan(s));
    b = g.send(2);
    ck_assert(b.count == 0 && b.want_result);
    r = g.result(2);
    ck_assert(r.npieces == 1 && r.piece[0].dst == 32 && r.piece[0].count == 8);

    s.coll = INA_COLL_BARRIER;
    s.count = 0;
    ck_assert(g.plan(s));
    ck_assert(!g.empty());
    ck_assert_uint_eq(g.nblocks(), 1);
    ck_assert_uint_eq(g.block_count(0), 0);
    ck_assert_uint_eq(g.total(), 0);
    b = g.send(0);
    ck_assert(b.count == 0 && b.want_result);
    ck_assert_uint_eq(g.result(0).npieces, 0);

    // Count 0 of a data collective: no block, no MID.
    s.coll = INA_COLL_ALLREDUCE;
    s.elem_size = 4;
    ck_assert(g.plan(s));
    ck_assert(g.empty());
}
END_TEST

// More than 2^32 bytes: 64-bit offsets everywhere, 32-bit only inside a block.
START_TEST(test_huge)
{
    CallGeometry g;
    CallShape s;
    s.coll = INA_COLL_ALLREDUCE;
    s.elem_size = 8;
    s.count = 3ull << 31; // 48 GiB of doubles in 64 KiB blocks
    s.nmembers = 2;
    s.block_bytes = 65536;
    ck_assert(g.plan(s));
    ck_assert_uint_eq(g.nblocks(), s.count / 8192);
    const uint64_t last = g.nblocks() - 1;
    ck_assert_uint_eq(g.send(last).src, (s.count - 8192) * 8);
    ck_assert_uint_eq(g.result(last).piece[0].dst, (s.count - 8192) * 8);
    ck_assert_uint_gt(g.send(last).src, UINT64_C(1) << 32);

    // 2^31 + 5 bytes in 16-byte blocks: partial last block.
    s.elem_size = 1;
    s.count = (1ull << 31) + 5;
    s.block_bytes = 16;
    ck_assert(g.plan(s));
    ck_assert_uint_eq(g.nblocks(), (1ull << 27) + 1);
    ck_assert_uint_eq(g.block_count(g.nblocks() - 1), 5);
    ck_assert_uint_eq(g.send(g.nblocks() - 1).src, 1ull << 31);

    // Reduce-scatter with 2^33-element parts: part-relative offsets > 2^32.
    const uint64_t big = 1ull << 33;
    const uint64_t rc[3] = {big, big + 3, 7};
    s = CallShape{};
    s.coll = INA_COLL_REDUCE_SCATTER;
    s.elem_size = 4;
    s.nmembers = 3;
    s.rank = 1;
    s.recvcounts = rc;
    s.block_bytes = 65536; // 16384 elements
    ck_assert(g.plan(s));
    ck_assert_uint_eq(g.total(), 2 * big + 10);
    const uint64_t sid = (2 * big) / 16384; // the block holding the part's end
    BlockResult r = g.result(sid);
    ck_assert_uint_eq(r.npieces, 1);
    ck_assert_uint_eq(r.piece[0].from, 0);
    ck_assert_uint_eq(r.piece[0].count, 3);
    ck_assert_uint_eq(r.piece[0].dst, (2 * big - big) * 4);
    ck_assert(!g.wants(sid - (big / 16384) - 1)); // inside rank 0's part

    // Allgather of 5 GiB chunks on 4 members: rank 3's chunk starts at 15 GiB.
    s = CallShape{};
    s.coll = INA_COLL_ALLGATHER;
    s.count = 5ull << 30;
    s.nmembers = 4;
    s.rank = 3;
    s.block_bytes = 1u << 20;
    s.in_place = true;
    ck_assert(g.plan(s));
    const uint64_t first_sid = (15ull << 30) >> 20;
    BlockSend b = g.send(first_sid);
    ck_assert(b.offset == 0 && b.count == (1u << 20) && b.src == 0);
    b = g.send(g.nblocks() - 1);
    ck_assert_uint_eq(b.src, (5ull << 30) - (1u << 20));
    ck_assert_uint_eq(g.result(first_sid).npieces, 0); // all own bytes, in place
    r = g.result(first_sid - 1);
    ck_assert(r.npieces == 1 && r.piece[0].dst == (15ull << 30) - (1u << 20));
}
END_TEST

START_TEST(test_refused_shapes)
{
    CallGeometry g;
    CallShape s;
    s.coll = INA_COLL_ALLREDUCE;
    s.elem_size = 32;
    s.count = 10;
    s.nmembers = 2;
    s.block_bytes = 16; // smaller than one element
    ck_assert(!g.plan(s));
    s.block_bytes = 48; // one element per block, 16 bytes unused
    ck_assert(g.plan(s));
    ck_assert_uint_eq(g.nblocks(), 10);
    ck_assert_uint_eq(g.send(9).src, 9 * 32);

    s.coll = INA_COLL_REDUCE;
    s.root = 2; // out of range
    ck_assert(!g.plan(s));
    s.coll = INA_COLL_BCAST;
    ck_assert(!g.plan(s));
    s.root = 0;
    s.rank = 2;
    ck_assert(!g.plan(s));
    s.rank = 0;
    s.coll = INA_COLL_COUNT;
    ck_assert(!g.plan(s));

    s.coll = INA_COLL_REDUCE_SCATTER;
    s.recvcounts = nullptr;
    ck_assert(!g.plan(s));
    const uint64_t overflow[2] = {UINT64_MAX, 1};
    s.recvcounts = overflow;
    ck_assert(!g.plan(s));

    s.coll = INA_COLL_ALLGATHER;
    s.elem_size = 1;
    s.nmembers = 3;
    s.count = UINT64_MAX / 2;
    ck_assert(!g.plan(s));

    // More than 2^32 blocks (the wire's SID is 32 bits).
    s.coll = INA_COLL_ALLREDUCE;
    s.nmembers = 1;
    s.count = (1ull << 32) * 16 + 16;
    s.block_bytes = 16;
    ck_assert(!g.plan(s));
    s.count = (1ull << 32) * 16 - 16; // 2^32 - 1 blocks: fine
    ck_assert(g.plan(s));
    ck_assert_uint_eq(g.nblocks(), UINT32_MAX);
}
END_TEST

// The per-call block size (ina::call_block_bytes): small calls one block,
// larger ones 4 to 8 that pipeline (blocks of 8 KiB or more where the call
// allows 4 of them), never above the job's block.
START_TEST(test_call_block_rule)
{
    using ina::call_block_bytes;
    const uint32_t job = 65536;
    // Up to 8 KiB: one block holds the call.
    for (uint64_t t : {0ull, 1ull, 8ull, 4096ull, 8192ull}) {
        ck_assert_uint_ge(call_block_bytes(t, job), t);
    }
    // Just above: no block below 4 KiB (3 blocks for 12 KiB).
    ck_assert_uint_eq(call_block_bytes(8193, job), 4096);
    ck_assert_uint_eq(call_block_bytes(12288, job), 4096);
    // Up to 32 KiB: four blocks, multiples of 64 bytes.
    ck_assert_uint_eq(call_block_bytes(16384, job), 4096);
    ck_assert_uint_eq(call_block_bytes(20000, job), 5056);
    ck_assert_uint_eq(call_block_bytes(32768, job), 8192);
    // 32-64 KiB: blocks of 8 KiB (4 to 8 of them).
    ck_assert_uint_eq(call_block_bytes(49152, job), 8192);
    ck_assert_uint_eq(call_block_bytes(65536, job), 8192);
    // Above: eight blocks.
    ck_assert_uint_eq(call_block_bytes(100000, job), 12544);
    ck_assert_uint_eq(call_block_bytes(131072, job), 16384);
    ck_assert_uint_eq(call_block_bytes(262144, job), 32768);
    // Large: the job's block.
    ck_assert_uint_eq(call_block_bytes(524288, job), job);
    ck_assert_uint_eq(call_block_bytes(1ull << 40, job), job);
    // A small job block is the bound even for small calls.
    ck_assert_uint_eq(call_block_bytes(8, 16), 16);
    ck_assert_uint_eq(call_block_bytes(20000, 48), 48);
    // Every size: within bounds, a multiple of every element size unless it
    // is the job's block, a call above 8 KiB gets several blocks, at most 8
    // (or as many job blocks as it takes), and none below 8 KiB once the call
    // has 4 of them.
    for (uint64_t t = 1; t < (1u << 22); t = t * 3 / 2 + 1) {
        const uint32_t b = call_block_bytes(t, job);
        ck_assert_uint_le(b, job);
        ck_assert(b == job || b % 64 == 0);
        const uint64_t nblocks = (t + b - 1) / b;
        ck_assert(t <= 8192 ? nblocks == 1 : nblocks >= 2);
        ck_assert_uint_le(nblocks, t <= 8 * uint64_t{job} ? 8 : t / job + 1);
        ck_assert(t < 4 * 8192 || b >= 8192);
    }
}
END_TEST

int main()
{
    return ina_test::run_suite("client_geom", "geometry",
                               {test_model_random,
                                test_reduce_scatter_uneven,
                                test_allgather_straddle,
                                test_roots_and_barrier,
                                test_huge,
                                test_refused_shapes,
                                test_call_block_rule});
}

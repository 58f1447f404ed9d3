// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Seg pool: leases, Rank/Node bitmaps and the reduction of blocks into Segs.
#include "seg_pool.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <unordered_map>

#include "ina_reduce.h"

namespace ina::agg {

namespace {
constexpr size_t kAlign = 64; // cache line: the kernels stream through these

// reserve() with geometric growth (a plain reserve(n + 1) would copy every time).
template <typename V> void make_room(V &v, size_t n)
{
    if (v.capacity() < n) {
        v.reserve(std::max(n, 2 * v.capacity()));
    }
}
} // namespace

BufferPool::BufferPool(size_t buf_bytes) : bytes_(buf_bytes) {}

uint32_t BufferPool::get()
{
    if (free_.empty()) {
        // Room first, so that nothing can throw once the memory is ours; and
        // room on the free list for every buffer, so unref() never allocates.
        const size_t n = bufs_.size() + 1;
        make_room(bufs_, n);
        make_room(refs_, n);
        make_room(free_, n);
        size_t sz = (bytes_ + kAlign - 1) / kAlign * kAlign;
        auto *p = static_cast<std::byte *>(std::aligned_alloc(kAlign, sz));
        if (p == nullptr) {
            throw std::bad_alloc();
        }
        bufs_.emplace_back(p);
        refs_.push_back(0);
        free_.push_back(static_cast<uint32_t>(n - 1));
    }
    uint32_t idx = free_.back();
    free_.pop_back();
    refs_[idx] = 1;
    return idx;
}

void BufferPool::hold(uint32_t idx, uint32_t refs)
{
    refs_[idx] = refs;
    if (refs == 0) {
        free_.push_back(idx);
    }
}

void BufferPool::unref(uint32_t idx) noexcept
{
    if (--refs_[idx] == 0) {
        free_.push_back(idx);
    }
}

Topology::Topology(const uint32_t *node_ids, uint32_t nranks) : node_of_rank_(nranks)
{
    // Dense node indices in order of first appearance.
    std::unordered_map<uint32_t, uint32_t> dense;
    for (uint32_t r = 0; r < nranks; ++r) {
        auto it = dense.emplace(node_ids[r], static_cast<uint32_t>(dense.size())).first;
        if (it->second == ranks_per_node_.size()) {
            ranks_per_node_.push_back(0);
        }
        node_of_rank_[r] = it->second;
        ++ranks_per_node_[it->second];
    }
}

SegPool::SegPool(uint32_t nsegs, size_t seg_bytes) : segs_(nsegs), buffers_(seg_bytes)
{
    free_.reserve(nsegs);
    // Hand out low indices first (pop from the back).
    for (uint32_t i = nsegs; i-- > 0;) {
        free_.push_back(i);
    }
}

bool SegPool::acquire(uint32_t n, std::vector<uint32_t> &lease)
{
    if (n == 0 || n > free_.size()) {
        return false;
    }
    lease.assign(free_.end() - n, free_.end());
    std::reverse(lease.begin(), lease.end());
    free_.resize(free_.size() - n);
    return true;
}

void SegPool::release(const std::vector<uint32_t> &lease)
{
    for (uint32_t idx : lease) {
        reset(segs_[idx]);
        free_.push_back(idx);
    }
}

namespace {

// ALLGATHER coverage: one bit per element of the block, tested and set a word
// at a time (a 64 KiB block costs 1024 word operations, far below its copy).
// Both take a non-empty range [lo, hi).
uint64_t word_mask(uint32_t word, uint32_t lo, uint32_t hi)
{
    uint64_t m = ~uint64_t{0};
    if (word == lo / 64) {
        m &= ~uint64_t{0} << (lo % 64);
    }
    if (word == (hi - 1) / 64) {
        m &= ~uint64_t{0} >> (63 - (hi - 1) % 64);
    }
    return m;
}

bool any_set(const std::vector<uint64_t> &bits, uint32_t lo, uint32_t hi)
{
    for (uint32_t w = lo / 64; w <= (hi - 1) / 64; ++w) {
        if (bits[w] & word_mask(w, lo, hi)) {
            return true;
        }
    }
    return false;
}

bool any_unset(const std::vector<uint64_t> &bits, uint32_t lo, uint32_t hi)
{
    for (uint32_t w = lo / 64; w <= (hi - 1) / 64; ++w) {
        const uint64_t m = word_mask(w, lo, hi);
        if ((bits[w] & m) != m) {
            return true;
        }
    }
    return false;
}

void set_range(std::vector<uint64_t> &bits, uint32_t lo, uint32_t hi)
{
    for (uint32_t w = lo / 64; w <= (hi - 1) / 64; ++w) {
        bits[w] |= word_mask(w, lo, hi);
    }
}

} // namespace

bool coll_reduces(unsigned coll)
{
    return coll == INA_COLL_ALLREDUCE || coll == INA_COLL_REDUCE || coll == INA_COLL_REDUCE_SCATTER;
}

void SegPool::init(Seg &s, const Topology &topo, const Block &b, uint32_t adopt)
{
    // Bookkeeping first, the buffer last: if anything throws, the Seg is
    // still not busy, i.e. empty. assign() keeps the capacity, so nothing is
    // allocated once a Seg served a job this size.
    s.reduce = coll_reduces(b.coll);
    s.ordered = s.reduce && !ina_reduce_order_free(b.op, b.dtype);
    s.coll = b.coll;
    s.op = b.op;
    s.dtype = b.dtype;
    s.sid = b.sid;
    s.block_elems = b.block_elems;
    s.total = b.total;
    s.rank_bits.assign(topo.nranks(), true);
    s.node_bits.assign(topo.nnodes(), true);
    s.node_left.assign(topo.ranks_per_node().begin(), topo.ranks_per_node().end());
    s.ranks_left = topo.nranks();
    s.nodes_left = topo.nnodes();
    s.want_bits.assign(topo.nranks(), false);
    s.nwant = 0;
    s.next_rank = 0;
    if (s.ordered) {
        s.staged.assign(topo.nranks(), kNoIndex);
    }
    s.placed = 0;
    if (b.coll == INA_COLL_ALLGATHER) {
        s.placed_bits.assign((b.block_elems + 63) / 64, 0);
    }
    s.buf = adopt != kNoIndex ? adopt : b.block_elems > 0 ? buffers_.get() : kNoIndex;
    s.busy = true;
}

void SegPool::reset(Seg &s)
{
    if (!s.busy) {
        return;
    }
    if (s.buf != kNoIndex) {
        buffers_.unref(s.buf);
        s.buf = kNoIndex;
    }
    if (s.ordered) {
        for (uint32_t &st : s.staged) {
            if (st != kNoIndex) {
                buffers_.unref(st);
                st = kNoIndex;
            }
        }
    }
    s.busy = false;
}

void SegPool::fold(Seg &s, const void *src)
{
    std::byte *dst = buffers_.data(s.buf);
    if (s.next_rank == 0 && s.ordered && s.staged.size() > 1 && s.staged[1] != kNoIndex &&
        dst != src) {
        // Rank 1 came early and waits in a buffer of ours: that buffer
        // becomes the Seg's and rank 0 folds in from the left (rank 0 OP
        // rank 1, the rank order), instead of being copied in first.
        std::swap(s.buf, s.staged[1]);
        buffers_.unref(s.staged[1]); // the Seg's unused buffer
        s.staged[1] = kNoIndex;
        ina_reduce_left(s.op, s.dtype, buffers_.data(s.buf), src, s.block_elems);
        s.next_rank = 2;
        return;
    }
    if (s.next_rank == 0) {
        if (dst != src) { // else the Seg adopted the received buffer
            std::memcpy(dst, src, s.block_elems * ina_proto_dtype_size(s.dtype));
        }
    } else {
        ina_reduce(s.op, s.dtype, dst, src, s.block_elems);
    }
    ++s.next_rank;
}

void SegPool::place(Seg &s, const Block &b)
{
    if (b.count == 0) {
        return; // a CREDIT: takes part, brings nothing
    }
    const size_t esz = ina_proto_dtype_size(s.dtype);
    std::byte *dst = buffers_.data(s.buf) + static_cast<size_t>(b.offset) * esz;
    if (dst != b.data) { // else the Seg adopted the root's received buffer
        std::memcpy(dst, b.data, static_cast<size_t>(b.count) * esz);
    }
    s.placed += b.count;
    if (s.coll == INA_COLL_ALLGATHER) {
        set_range(s.placed_bits, b.offset, b.offset + b.count);
    }
}

SegOutcome SegPool::check_piece(const Seg &s, bool fresh, uint32_t nranks, const Block &b,
                                bool whole) const
{
    if (coll_reduces(b.coll)) {
        // Every member brings the whole block (the validator says so too; the
        // Seg does not rely on it).
        return b.offset == 0 && b.count == b.block_elems ? SegOutcome::kStored
                                                       : SegOutcome::kNotWhole;
    }
    const uint32_t placed = fresh ? 0 : s.placed;
    if (b.count != 0) {
        if (b.coll == INA_COLL_BCAST) {
            // One root brings the whole block; everybody else sends a CREDIT.
            if (b.offset != 0 || b.count != b.block_elems) {
                return SegOutcome::kNotWhole;
            }
            if (placed != 0) {
                return SegOutcome::kOverlap;
            }
        } else if (b.coll == INA_COLL_ALLGATHER && !fresh &&
                   any_set(s.placed_bits, b.offset, b.offset + b.count)) {
            return SegOutcome::kOverlap;
        }
    }
    // The last member: without overlaps, covering exactly = the counts add up.
    const uint32_t left = fresh ? nranks : s.ranks_left;
    if (whole && left == 1 && placed + b.count != b.block_elems) {
        return SegOutcome::kUncovered;
    }
    return SegOutcome::kStored;
}

SegOutcome SegPool::contribute(uint32_t seg, const Topology &topo, const Block &b, bool whole)
{
    Seg &s = segs_[seg];
    const size_t esz = ina_proto_dtype_size(b.dtype);
    if (static_cast<size_t>(b.block_elems) * esz > seg_bytes() || esz == 0) {
        return SegOutcome::kTooBig;
    }
    const bool fresh = !s.busy;
    if (!fresh) {
        if (s.sid != b.sid) {
            return SegOutcome::kBusy;
        }
        if (s.coll != b.coll || s.op != b.op || s.dtype != b.dtype ||
            s.block_elems != b.block_elems || s.total != b.total) {
            return SegOutcome::kMismatch;
        }
        if (!s.rank_bits[b.rank]) {
            return SegOutcome::kDuplicate;
        }
    }
    const SegOutcome rule = check_piece(s, fresh, topo.nranks(), b, whole);
    if (rule != SegOutcome::kStored) {
        return rule;
    }
    // An early block (ordered mode) needs a staging buffer: take it (and a
    // fresh Seg's buffer) before any state changes, so running out of memory
    // leaves the Seg consistent. A block received into a buffer of this pool
    // brings its own: the Seg keeps that one rather than copy out of it.
    const bool ordered =
        fresh ? coll_reduces(b.coll) && !ina_reduce_order_free(b.op, b.dtype) : s.ordered;
    const bool early = ordered && b.rank != (fresh ? 0 : s.next_rank);
    const bool owned = b.own != nullptr && *b.own && b.count > 0 &&
                       b.own->data() == static_cast<const std::byte *>(b.data);
    // Whole-block data that initialises a fresh Seg: the first reduction
    // contribution, or the BCAST root's block.
    const bool first = fresh && (coll_reduces(b.coll) ? !early : b.coll == INA_COLL_BCAST);
    const uint32_t stage = !early ? kNoIndex : owned ? b.own->release() : buffers_.get();
    const uint32_t adopt = owned && first ? b.own->release() : kNoIndex;
    if (fresh) {
        try {
            init(s, topo, b, adopt);
        } catch (...) {
            for (uint32_t idx : {stage, adopt}) {
                if (idx != kNoIndex) {
                    buffers_.unref(idx);
                }
            }
            throw;
        }
    }
    s.rank_bits[b.rank] = false;
    --s.ranks_left;
    if (b.want) {
        s.want_bits[b.rank] = true;
        ++s.nwant;
    }

    if (!s.reduce) {
        place(s, b);
    } else if (!s.ordered) {
        // Order-free (integers): reduce on arrival; the first one initialises
        // (next_rank then just counts contributions).
        fold(s, b.data);
    } else if (b.rank == s.next_rank) {
        // In order: fold it, then every staged block that is now in order.
        fold(s, b.data);
        while (s.next_rank < topo.nranks() && s.staged[s.next_rank] != kNoIndex) {
            uint32_t st = s.staged[s.next_rank];
            s.staged[s.next_rank] = kNoIndex;
            fold(s, buffers_.data(st));
            buffers_.unref(st);
        }
    } else {
        // Early: park it (a copy, or the received buffer itself) until the
        // ranks before it arrived.
        if (buffers_.data(stage) != b.data) {
            std::memcpy(buffers_.data(stage), b.data, static_cast<size_t>(b.block_elems) * esz);
        }
        s.staged[b.rank] = stage;
    }

    uint32_t node = topo.node_of(b.rank);
    if (--s.node_left[node] == 0) {
        s.node_bits[node] = false;
        --s.nodes_left;
    }
    return s.nodes_left == 0 ? SegOutcome::kComplete : SegOutcome::kStored;
}

bool SegPool::covered(uint32_t seg, uint32_t &offset, uint32_t &count) const
{
    const Seg &s = segs_[seg];
    offset = 0;
    count = s.reduce ? s.block_elems : s.placed;
    if (s.reduce || s.placed == 0 || s.coll != INA_COLL_ALLGATHER) {
        return true; // whole, or nothing, or BCAST's single piece (at offset 0)
    }
    // The first element placed; the pieces cover one range iff the `placed`
    // elements from there on are all set.
    uint32_t w = 0;
    while (s.placed_bits[w] == 0) {
        ++w;
    }
    offset = w * 64 + static_cast<uint32_t>(__builtin_ctzll(s.placed_bits[w]));
    const uint32_t end = offset + s.placed;
    return end <= s.block_elems && !any_unset(s.placed_bits, offset, end);
}

uint32_t SegPool::take_result(uint32_t seg)
{
    Seg &s = segs_[seg];
    uint32_t buf = s.buf;
    s.buf = kNoIndex;
    s.busy = false;
    return buf;
}

} // namespace ina::agg

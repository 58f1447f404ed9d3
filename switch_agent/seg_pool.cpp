// Seg pool: leases, Rank/Node bitmaps and the reduction of blocks into Segs.
#include "seg_pool.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <unordered_map>

#include "ina_reduce.h"

namespace ina {

namespace {
constexpr size_t kAlign = 64; // cache line: the kernels stream through these
}

BufferPool::BufferPool(size_t buf_bytes) : bytes_(buf_bytes) {}

uint32_t BufferPool::get()
{
    if (free_.empty()) {
        size_t sz = (bytes_ + kAlign - 1) / kAlign * kAlign;
        auto *p = static_cast<std::byte *>(std::aligned_alloc(kAlign, sz));
        if (p == nullptr) {
            throw std::bad_alloc();
        }
        bufs_.emplace_back(p);
        refs_.push_back(0);
        free_.push_back(static_cast<uint32_t>(bufs_.size() - 1));
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

void BufferPool::unref(uint32_t idx)
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

void SegPool::init(Seg &s, const Topology &topo, const Block &b)
{
    s.buf = buffers_.get(); // first: may throw, the Seg is still empty then
    s.busy = true;
    s.ordered = !ina_reduce_order_free(b.op, b.dtype);
    s.op = b.op;
    s.dtype = b.dtype;
    s.sid = b.sid;
    s.count = b.count;
    s.total = b.total;
    // assign() keeps the capacity: no allocation once a Seg served a job this size.
    s.rank_bits.assign(topo.nranks(), true);
    s.node_bits.assign(topo.nnodes(), true);
    s.node_left.assign(topo.ranks_per_node().begin(), topo.ranks_per_node().end());
    s.ranks_left = topo.nranks();
    s.nodes_left = topo.nnodes();
    s.next_rank = 0;
    if (s.ordered) {
        s.staged.assign(topo.nranks(), kNoIndex);
    }
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
    if (s.next_rank == 0) {
        std::memcpy(dst, src, s.count * ina_proto_dtype_size(s.dtype));
    } else {
        ina_reduce(s.op, s.dtype, dst, src, s.count);
    }
    ++s.next_rank;
}

SegOutcome SegPool::contribute(uint32_t seg, const Topology &topo, const Block &b)
{
    Seg &s = segs_[seg];
    size_t bytes = static_cast<size_t>(b.count) * ina_proto_dtype_size(b.dtype);
    if (bytes > seg_bytes()) {
        return SegOutcome::kTooBig;
    }
    if (!s.busy) {
        init(s, topo, b);
    } else if (s.sid != b.sid) {
        return SegOutcome::kBusy;
    } else if (s.op != b.op || s.dtype != b.dtype || s.count != b.count || s.total != b.total) {
        return SegOutcome::kMismatch;
    }
    if (!s.rank_bits[b.rank]) {
        return SegOutcome::kDuplicate;
    }
    // An early block (ordered mode) needs a staging buffer: take it before any
    // state changes, so running out of memory leaves the Seg consistent.
    const bool early = s.ordered && b.rank != s.next_rank;
    const uint32_t stage = early ? buffers_.get() : kNoIndex;
    s.rank_bits[b.rank] = false;
    --s.ranks_left;

    if (!s.ordered) {
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
        // Early: park a copy until the ranks before it arrived.
        std::memcpy(buffers_.data(stage), b.data, bytes);
        s.staged[b.rank] = stage;
    }

    uint32_t node = topo.node_of(b.rank);
    if (--s.node_left[node] == 0) {
        s.node_bits[node] = false;
        --s.nodes_left;
    }
    return s.nodes_left == 0 ? SegOutcome::kComplete : SegOutcome::kStored;
}

uint32_t SegPool::take_result(uint32_t seg)
{
    Seg &s = segs_[seg];
    uint32_t buf = s.buf;
    s.buf = kNoIndex;
    s.busy = false;
    return buf;
}

} // namespace ina

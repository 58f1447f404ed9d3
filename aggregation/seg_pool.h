// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Seg buffer units: the aggregation memory, cut into Segs that calls lease
// `window` at a time (a member's window of blocks in flight never exceeds its
// lease, so block sid always finds Seg sid % window free). A Seg aggregates one block: the first contribution initialises it,
// later ones are reduced in (reductions) or copied to their offset (BCAST,
// ALLGATHER: the gather in the switch) and clear their Rank bit (and their
// Node bit when the node's last rank arrived); an empty Node bitmap means
// complete. The Seg also records which members want the completed block.
#ifndef INA_AGG_SEG_POOL_H
#define INA_AGG_SEG_POOL_H

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "ina_proto.h"

namespace ina::agg {

constexpr uint32_t kNoIndex = UINT32_MAX;

// Fixed-size payload buffers on a free list. A Seg takes one while it is busy;
// a completed Seg hands its buffer to the RESULT sends, which return it when the
// last one completes (refcount). Buffers are allocated only when the free list
// is empty, so the steady state allocates nothing.
class BufferPool {
public:
    explicit BufferPool(size_t buf_bytes);
    BufferPool(const BufferPool &) = delete;
    BufferPool &operator=(const BufferPool &) = delete;

    uint32_t get();                       // a free buffer, refcount 1
    void hold(uint32_t idx, uint32_t refs); // set the refcount (RESULT fan-out)
    void ref(uint32_t idx) { ++refs_[idx]; } // one more reference
    // Back to the free list at 0. Never allocates (the free list has room for
    // every buffer), so a destructor may call it.
    void unref(uint32_t idx) noexcept;
    std::byte *data(uint32_t idx) { return bufs_[idx].get(); }
    const std::byte *data(uint32_t idx) const { return bufs_[idx].get(); }
    size_t buf_bytes() const { return bytes_; }
    size_t allocated() const { return bufs_.size(); }
    size_t free_count() const { return free_.size(); }

private:
    struct FreeDeleter {
        void operator()(std::byte *p) const { std::free(p); }
    };
    size_t bytes_;
    std::vector<std::unique_ptr<std::byte[], FreeDeleter>> bufs_;
    std::vector<uint32_t> refs_;
    std::vector<uint32_t> free_;
};

// One counted reference on a BufferPool buffer (a completed block's result on
// its way to a member): move-only, gives the reference back when destroyed or
// reset. The pool must outlive it.
class BufRef {
public:
    BufRef() noexcept = default;
    // Adopts one reference the caller holds on `idx`.
    BufRef(BufferPool &pool, uint32_t idx) noexcept : pool_(&pool), idx_(idx) {}
    BufRef(BufRef &&o) noexcept : pool_(o.pool_), idx_(o.idx_) { o.pool_ = nullptr; }
    BufRef &operator=(BufRef &&o) noexcept
    {
        if (this != &o) {
            reset();
            pool_ = o.pool_;
            idx_ = o.idx_;
            o.pool_ = nullptr;
        }
        return *this;
    }
    BufRef(const BufRef &) = delete;
    BufRef &operator=(const BufRef &) = delete;
    ~BufRef() { reset(); }

    void reset() noexcept
    {
        if (pool_ != nullptr) {
            pool_->unref(idx_);
            pool_ = nullptr;
        }
    }
    // Another reference on the same buffer (none if this one is empty).
    BufRef share() const
    {
        if (pool_ == nullptr) {
            return BufRef();
        }
        pool_->ref(idx_);
        return BufRef(*pool_, idx_);
    }
    // Hand the reference over to the caller (who now owes its unref): the
    // index, and this one is empty (kNoIndex if it was empty already).
    uint32_t release() noexcept
    {
        if (pool_ == nullptr) {
            return kNoIndex;
        }
        pool_ = nullptr;
        return idx_;
    }
    explicit operator bool() const noexcept { return pool_ != nullptr; }
    const std::byte *data() const noexcept { return pool_ ? pool_->data(idx_) : nullptr; }
    std::byte *data() noexcept { return pool_ ? pool_->data(idx_) : nullptr; }
    uint32_t index() const noexcept { return pool_ ? idx_ : UINT32_MAX; }

private:
    BufferPool *pool_ = nullptr;
    uint32_t idx_ = 0;
};

// Members of a job grouped by node: ranks with equal node id share a node
// (the Rank bitmap is per member, the Node bitmap per distinct node id).
class Topology {
public:
    Topology(const uint32_t *node_ids, uint32_t nranks);
    uint32_t nranks() const { return static_cast<uint32_t>(node_of_rank_.size()); }
    uint32_t nnodes() const { return static_cast<uint32_t>(ranks_per_node_.size()); }
    uint32_t node_of(uint32_t rank) const { return node_of_rank_[rank]; }
    const std::vector<uint32_t> &ranks_per_node() const { return ranks_per_node_; }

private:
    std::vector<uint32_t> node_of_rank_;   // dense node index of each rank
    std::vector<uint32_t> ranks_per_node_; // members on each dense node
};

// One member's BLOCK as the Seg sees it (wire fields, already validated).
struct Block {
    uint32_t rank;
    uint32_t sid;
    uint8_t coll;       // ina_proto_coll_t
    uint8_t op;
    uint8_t dtype;
    bool want;          // INA_PROTO_F_WANT_RESULT: send this member the payload
    uint32_t offset;    // element offset of the payload inside the block
    uint32_t count;     // payload elements (0 = CREDIT)
    uint32_t block_elems; // elements of the whole block
    uint64_t total;     // elements of the call's result vector
    const void *data;
    // The buffer `data` lies in, when the transport received the payload into
    // a buffer of this pool (a zero-copy receive): the Seg may keep it
    // instead of copying from it (as the block's first contribution, a staged
    // early one, or a BCAST root's block). Empty or null: data is borrowed.
    BufRef *own = nullptr;
};

// Whether coll reduces members' data (else it places bytes: BCAST/ALLGATHER/BARRIER).
bool coll_reduces(unsigned coll);

enum class SegOutcome {
    kStored,    // contribution taken, Seg still waits for others
    kComplete,  // Node bitmap empty: read wants(), then take_result()
    kDuplicate, // this rank already contributed to this block
    kMismatch,  // coll/op/dtype/block_elems/total differ from the Seg's
    kNotWhole,  // reduction without data over the whole block, or partial BCAST data
    kOverlap,   // a second BCAST root, or ALLGATHER pieces that overlap
    kUncovered, // the last member arrived and the placed pieces leave a gap
    kBusy,      // the Seg holds another SID
    kTooBig     // block larger than a Seg
};

class SegPool {
public:
    SegPool(uint32_t nsegs, size_t seg_bytes);
    SegPool(const SegPool &) = delete;
    SegPool &operator=(const SegPool &) = delete;

    uint32_t size() const { return static_cast<uint32_t>(segs_.size()); }
    uint32_t free_segs() const { return static_cast<uint32_t>(free_.size()); }
    size_t seg_bytes() const { return buffers_.buf_bytes(); }

    // Lease n Segs (all or nothing). lease[i] serves SIDs with sid % n == i.
    bool acquire(uint32_t n, std::vector<uint32_t> &lease);
    // Return a lease; Segs still busy (aborted call) are emptied first.
    void release(const std::vector<uint32_t> &lease);

    // Apply one member's block. Every refusal (all outcomes but kStored and
    // kComplete) leaves the Seg exactly as it was: one bad block from one
    // member never spoils the block for the others. `whole`: the members'
    // pieces of a BCAST/ALLGATHER block must cover it (kUncovered if not);
    // false at a leaf of a tree, whose members bring only their part.
    SegOutcome contribute(uint32_t seg, const Topology &topo, const Block &b, bool whole = true);
    // After kComplete, until the Seg takes its next block: the range of
    // elements its members brought (a reduction: the whole block; BCAST: the
    // block or nothing; ALLGATHER: where the pieces lie). False when the
    // pieces are not one range (a leaf then cannot send them up as one).
    bool covered(uint32_t seg, uint32_t &offset, uint32_t &count) const;
    // After kComplete: who asked for the payload. Stays readable after
    // take_result() until the Seg takes its next block.
    bool wants(uint32_t seg, uint32_t rank) const { return segs_[seg].want_bits[rank]; }
    uint32_t wanted(uint32_t seg) const { return segs_[seg].nwant; }
    // After kComplete: detach the result buffer (refcount 1; kNoIndex for an
    // empty block) and empty the Seg at once, so the next SID can use it
    // while the result is being sent.
    uint32_t take_result(uint32_t seg);

    BufferPool &buffers() { return buffers_; }
    const BufferPool &buffers() const { return buffers_; }

    // Introspection (tests, logs).
    bool busy(uint32_t seg) const { return segs_[seg].busy; }
    uint32_t ranks_pending(uint32_t seg) const { return segs_[seg].ranks_left; }
    uint32_t nodes_pending(uint32_t seg) const { return segs_[seg].nodes_left; }
    bool rank_pending(uint32_t seg, uint32_t rank) const { return segs_[seg].rank_bits[rank]; }
    bool node_pending(uint32_t seg, uint32_t node) const { return segs_[seg].node_bits[node]; }

private:
    struct Seg {
        bool busy = false;
        bool reduce = false;  // reduction coll (else bytes are placed)
        bool ordered = false; // reduce in rank order (non order-free op/dtype)
        uint8_t coll = 0;
        uint8_t op = 0;
        uint8_t dtype = 0;
        uint32_t sid = 0;
        uint32_t block_elems = 0;
        uint64_t total = 0;
        uint32_t buf = kNoIndex;           // none for an empty block (BARRIER)
        std::vector<bool> rank_bits;       // 1 = rank still to contribute
        std::vector<bool> node_bits;       // 1 = node still to complete
        std::vector<uint32_t> node_left;   // ranks still to contribute per node
        uint32_t ranks_left = 0;
        uint32_t nodes_left = 0;
        std::vector<bool> want_bits;       // 1 = rank set WANT_RESULT
        uint32_t nwant = 0;
        uint32_t next_rank = 0;            // ordered: Seg holds ranks [0, next_rank)
        std::vector<uint32_t> staged;      // ordered: staging buffer per rank
        uint32_t placed = 0;               // placing colls: elements written so far
        std::vector<uint64_t> placed_bits; // ALLGATHER: 1 bit per element written
    };

    // The collective's rule for one piece, against the Seg's current state.
    SegOutcome check_piece(const Seg &s, bool fresh, uint32_t nranks, const Block &b,
                           bool whole) const;
    // `adopt`: a buffer (already holding b's data) to use as the Seg's.
    void init(Seg &s, const Topology &topo, const Block &b, uint32_t adopt);
    void reset(Seg &s);
    // Apply the next contribution in order; rank 0 takes over rank 1's staged
    // buffer when there is one (folding in from the left), else initialises.
    void fold(Seg &s, const void *src);
    void place(Seg &s, const Block &b);

    std::vector<Seg> segs_;
    std::vector<uint32_t> free_;
    BufferPool buffers_;
};

} // namespace ina::agg

#endif

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Block geometry of one offloaded collective call, without any UCX: how the
// call's result vector is cut into blocks (SIDs), what this rank sends for
// each block, and where each block's RESULT lands in its receive buffer.
// Pure arithmetic, unit-tested on its own (tests/unit/test_client_geom.cpp).
//
// Rules (common/ina_proto.h, "Collectives"): the result vector of a call is
//   ALLREDUCE/REDUCE  `count` elements;   REDUCE_SCATTER  sum(recvcounts);
//   BCAST  `count` bytes;   ALLGATHER  nmembers * count bytes (rank r's chunk
//   at r * count);   BARRIER  empty, but exactly one block (sid 0, 0 elements).
// Block sid covers [sid * per_block, min((sid + 1) * per_block, total)) with
// per_block = block_bytes / element size. A staged call (plan_total) gives its
// total directly and is cut the same way; its caller decides what each member
// sends and asks for, block by block.
//
// All offsets are 64-bit: a call may exceed 2^32 bytes; only the positions
// inside one block (at most INA_PROTO_MAX_SEG_BYTES) are 32-bit.
#ifndef INA_GEOMETRY_H
#define INA_GEOMETRY_H

#include <cstddef>
#include <cstdint>

#include "ina_proto.h"

namespace ina {

// The block size of one call: the rule the engine (and the node stage's
// streams) cut calls by, so that every call of more than a few KiB
// pipelines and a small one is one message each way.
//   - a call of at most kSmallCallBytes is one block: one BLOCK up, one
//     RESULT down; more messages would only add the agent's per-message
//     cost (a header, a lookup, a send, a wake-up);
//   - a larger call is cut into kPipelineBlocks blocks, so that the first
//     results come down while later blocks still go up (one block would
//     move all of the call up, then all of it down; the call pays about one
//     block's trip on top of its bytes, so more blocks pay less);
//   - but no smaller than kPipelineMinBlock, where a block's own cost
//     outweighs what a finer pipeline saves, unless the call would then get
//     fewer than kPipelineMinBlocks blocks: 8-32 KiB calls go as 4 blocks of
//     at least kMinBlockBytes (3 or 4 for 8-16 KiB), 32-64 KiB calls as
//     blocks of 8 KiB, larger ones as 8 blocks (bench/fabric, 4 hosts x 1,
//     100mbit, runs alternating: ring/ina at 64 and 128 KiB 1.23-1.34 and
//     1.20-1.23 with 4 blocks, 1.43-1.51 and 1.26-1.31 with this rule; at 32
//     KiB 8 blocks of 4 KiB gave 1.42, 4 of 8 KiB 1.48-1.59);
//   - no block is larger than the job's block (coll_ina_block_size, at most
//     the agent's Seg): calls of more than kPipelineBlocks job blocks use
//     job blocks, as before.
// Blocks are multiples of 64 bytes (so of every element size) unless the
// job's block is the bound. Every member computes the same size from the
// same call arguments, so all members cut a call alike.
constexpr uint64_t kSmallCallBytes = 8192;
constexpr uint64_t kMinBlockBytes = 4096;
constexpr uint64_t kPipelineBlocks = 8;
constexpr uint64_t kPipelineMinBlock = 8192;
constexpr uint64_t kPipelineMinBlocks = 4;

inline uint32_t call_block_bytes(uint64_t total_bytes, uint32_t job_block)
{
    uint64_t b = kSmallCallBytes;
    if (total_bytes > kSmallCallBytes) {
        const uint64_t fine = (total_bytes + kPipelineBlocks - 1) / kPipelineBlocks;
        const uint64_t few = (total_bytes + kPipelineMinBlocks - 1) / kPipelineMinBlocks;
        b = fine >= kPipelineMinBlock ? fine : few < kPipelineMinBlock ? few : kPipelineMinBlock;
    }
    b = b < kMinBlockBytes ? kMinBlockBytes : (b + 63) / 64 * 64;
    return b < job_block ? static_cast<uint32_t>(b) : job_block;
}

// What the inputs of a call look like to the geometry.
struct CallShape {
    unsigned coll = INA_COLL_ALLREDUCE;
    size_t elem_size = 1;              // bytes of one element of the wire dtype
    uint64_t count = 0;                // see ina_coll_desc_t
    uint32_t nmembers = 1;
    uint32_t rank = 0;
    uint32_t root = 0;                 // REDUCE, BCAST
    const uint64_t *recvcounts = nullptr; // REDUCE_SCATTER: nmembers entries
    bool in_place = false;             // ALLGATHER: this rank's chunk is already in rbuf
    uint32_t block_bytes = 0;          // the job's block size
};

// This rank's BLOCK for one sid.
struct BlockSend {
    uint32_t offset = 0;      // element offset of the payload inside the block
    uint32_t count = 0;       // payload elements; 0 = a CREDIT (no data)
    uint64_t src = 0;         // byte offset of the payload in the source buffer
    bool want_result = false; // INA_PROTO_F_WANT_RESULT
};

// Where a completed block goes: up to two pieces, each `count` elements from
// element `from` of the block to byte `dst` of the receive buffer.
struct BlockResult {
    struct Piece {
        uint32_t from;
        uint32_t count;
        uint64_t dst;
    };
    Piece piece[2];
    unsigned npieces = 0;
};

class CallGeometry {
public:
    // Plan a call. Returns false for shapes the wire cannot carry: a block
    // smaller than one element, a result vector whose size overflows 64 bits
    // or size_t bytes, more blocks than a 32-bit SID names, root or rank out of
    // range, missing recvcounts.
    bool plan(const CallShape &s)
    {
        shape_ = s;
        if (s.coll >= INA_COLL_COUNT || s.elem_size == 0 || s.nmembers == 0 ||
            s.rank >= s.nmembers || s.block_bytes < s.elem_size) {
            return false;
        }
        if ((s.coll == INA_COLL_REDUCE || s.coll == INA_COLL_BCAST) && s.root >= s.nmembers) {
            return false;
        }
        per_block_ = s.block_bytes / s.elem_size;
        part_first_ = 0;
        part_count_ = 0;
        switch (s.coll) {
        case INA_COLL_ALLREDUCE:
        case INA_COLL_REDUCE:
        case INA_COLL_BCAST:
            total_ = s.count;
            break;
        case INA_COLL_REDUCE_SCATTER:
            if (s.recvcounts == nullptr) {
                return false;
            }
            total_ = 0;
            for (uint32_t r = 0; r < s.nmembers; ++r) {
                if (s.recvcounts[r] > UINT64_MAX - total_) {
                    return false;
                }
                if (r == s.rank) {
                    part_first_ = total_;
                    part_count_ = s.recvcounts[r];
                }
                total_ += s.recvcounts[r];
            }
            break;
        case INA_COLL_ALLGATHER:
            if (s.count > UINT64_MAX / s.nmembers) {
                return false;
            }
            total_ = s.count * s.nmembers;
            part_first_ = s.count * s.rank; // this rank's chunk
            part_count_ = s.count;
            break;
        case INA_COLL_BARRIER:
        default:
            total_ = 0;
            break;
        }
        shape_.recvcounts = nullptr; // the caller's array: read only while planning
        return cut();
    }

    // Plan a staged call (ina_job_post_staged): the result vector of `total`
    // elements is given, not derived from the members' buffers; it is cut
    // into blocks exactly as plan() cuts the same total (BARRIER: total 0,
    // one block). What each member sends and asks for is the caller's choice:
    // send(), wants() and result() do not apply to such a plan. Returns false
    // as plan() does, and for a BARRIER whose total is not 0.
    bool plan_total(unsigned coll, size_t elem_size, uint64_t total, uint32_t block_bytes)
    {
        shape_ = CallShape{};
        shape_.coll = coll;
        shape_.elem_size = elem_size;
        shape_.count = total;
        shape_.block_bytes = block_bytes;
        part_first_ = 0;
        part_count_ = 0;
        total_ = total;
        nblocks_ = 0;
        if (coll >= INA_COLL_COUNT || elem_size == 0 || block_bytes < elem_size ||
            (coll == INA_COLL_BARRIER && total != 0)) {
            return false;
        }
        per_block_ = block_bytes / elem_size;
        return cut();
    }

    // Elements of the result vector (the wire's `arg`), and their bytes.
    uint64_t total() const { return total_; }
    uint64_t total_bytes() const { return total_ * shape_.elem_size; }
    unsigned coll() const { return shape_.coll; }
    uint64_t elems_per_block() const { return per_block_; }
    uint64_t nblocks() const { return nblocks_; }
    // A call that moves nothing takes no MID (BARRIER always moves a block).
    bool empty() const { return nblocks_ == 0; }
    // This rank's part of the result (REDUCE_SCATTER) or chunk (ALLGATHER).
    uint64_t part_first() const { return part_first_; }
    uint64_t part_count() const { return part_count_; }

    uint64_t block_first(uint64_t sid) const { return sid * per_block_; }
    // Elements of block sid (the wire's block_elems); the last may be partial.
    uint32_t block_count(uint64_t sid) const
    {
        const uint64_t first = block_first(sid);
        return static_cast<uint32_t>(total_ - first < per_block_ ? total_ - first : per_block_);
    }

    // What this rank sends for block sid.
    BlockSend send(uint64_t sid) const
    {
        BlockSend b;
        const uint64_t first = block_first(sid);
        const uint32_t n = block_count(sid);
        switch (shape_.coll) {
        case INA_COLL_ALLREDUCE:
        case INA_COLL_REDUCE:
        case INA_COLL_REDUCE_SCATTER:
            // Reductions: every member brings the whole block.
            b.count = n;
            b.src = first * shape_.elem_size;
            b.want_result = wants(sid);
            break;
        case INA_COLL_BCAST:
            if (shape_.rank == shape_.root) {
                b.count = n;
                b.src = first; // bytes
            }
            b.want_result = wants(sid);
            break;
        case INA_COLL_ALLGATHER: {
            // The part of this rank's chunk that falls in the block, if any;
            // src is relative to the chunk (sbuf, or rbuf + rank * count).
            const Span ov = overlap(first, n, part_first_, part_count_);
            if (ov.count > 0) {
                b.offset = static_cast<uint32_t>(ov.first - first);
                b.count = static_cast<uint32_t>(ov.count);
                b.src = ov.first - part_first_;
            }
            b.want_result = true;
            break;
        }
        case INA_COLL_BARRIER:
        default:
            b.want_result = true;
            break;
        }
        return b;
    }

    // Whether this rank asks for the payload of block sid (else an ACK_ONLY).
    bool wants(uint64_t sid) const
    {
        switch (shape_.coll) {
        case INA_COLL_REDUCE:
            return shape_.rank == shape_.root;
        case INA_COLL_BCAST:
            return shape_.rank != shape_.root; // the root has the bytes already
        case INA_COLL_REDUCE_SCATTER:
            return overlap(block_first(sid), block_count(sid), part_first_, part_count_).count > 0;
        default:
            return true;
        }
    }

    // Where the payload of block sid goes in the receive buffer.
    BlockResult result(uint64_t sid) const
    {
        BlockResult r;
        if (!wants(sid)) {
            return r;
        }
        const uint64_t first = block_first(sid);
        const uint32_t n = block_count(sid);
        switch (shape_.coll) {
        case INA_COLL_REDUCE_SCATTER: {
            // Only this rank's part, at its position inside the part.
            const Span ov = overlap(first, n, part_first_, part_count_);
            add(r, ov.first - first, ov.count, (ov.first - part_first_) * shape_.elem_size);
            break;
        }
        case INA_COLL_ALLGATHER:
            if (shape_.in_place) {
                // The bytes around this rank's own chunk: the chunk itself is
                // the input and already holds exactly what the agent placed
                // there, so it is never written (nothing to race with a send
                // of it that UCX may not have completed locally yet).
                const uint64_t end = first + n;
                const uint64_t pend = part_first_ + part_count_;
                const uint64_t lo_end = part_first_ < end ? part_first_ : end;
                if (lo_end > first) {
                    add(r, 0, lo_end - first, first);
                }
                const uint64_t hi_first = pend > first ? pend : first;
                if (end > hi_first) {
                    add(r, hi_first - first, end - hi_first, hi_first);
                }
                break;
            }
            add(r, 0, n, first);
            break;
        case INA_COLL_BARRIER:
            break;
        default: // ALLREDUCE, REDUCE (root), BCAST (non-roots): the whole block
            add(r, 0, n, first * shape_.elem_size);
            break;
        }
        return r;
    }

private:
    // Cut total_ into blocks of per_block_ (BARRIER: one empty block).
    bool cut()
    {
        if (total_ > SIZE_MAX / shape_.elem_size) {
            return false;
        }
        if (shape_.coll == INA_COLL_BARRIER) {
            nblocks_ = 1;
        } else {
            nblocks_ = total_ / per_block_ + (total_ % per_block_ != 0 ? 1 : 0);
        }
        return nblocks_ <= UINT32_MAX;
    }

    struct Span {
        uint64_t first;
        uint64_t count;
    };

    static Span overlap(uint64_t a_first, uint64_t a_count, uint64_t b_first, uint64_t b_count)
    {
        const uint64_t lo = a_first > b_first ? a_first : b_first;
        const uint64_t a_end = a_first + a_count;
        const uint64_t b_end = b_first + b_count;
        const uint64_t hi = a_end < b_end ? a_end : b_end;
        return hi > lo ? Span{lo, hi - lo} : Span{lo, 0};
    }

    static void add(BlockResult &r, uint64_t from, uint64_t count, uint64_t dst)
    {
        if (count > 0) {
            r.piece[r.npieces++] = BlockResult::Piece{static_cast<uint32_t>(from),
                                                      static_cast<uint32_t>(count), dst};
        }
    }

    CallShape shape_;
    uint64_t per_block_ = 1;
    uint64_t total_ = 0;
    uint64_t nblocks_ = 0;
    uint64_t part_first_ = 0;
    uint64_t part_count_ = 0;
};

} // namespace ina

#endif // INA_GEOMETRY_H

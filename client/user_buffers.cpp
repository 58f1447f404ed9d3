// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A call's data in the caller's buffers (user_buffers.h).
#include "user_buffers.h"

#include <algorithm>
#include <cstring>

#include "ina_engine.h"

namespace ina::client {

void UserBuffers::start(const ina_coll_desc_t &d)
{
    const CallGeometry &geom = call_.geometry();
    rbuf_ = static_cast<uint8_t *>(d.rbuf);
    switch (d.coll) {
    case INA_COLL_BCAST:
        src_ = rbuf_; // the root's bytes; the others send CREDITs
        break;
    case INA_COLL_ALLGATHER:
        // In place the chunk already sits at its place in rbuf. Results never
        // overwrite it (CallGeometry::result skips it); and a block's RESULT
        // only comes once every member, this one included, sent its piece of
        // that block, so results of other chunks cannot race our sends either.
        src_ = d.sbuf != nullptr ? static_cast<const uint8_t *>(d.sbuf)
                                 : rbuf_ + geom.part_first() * call_.elem_size();
        break;
    case INA_COLL_BARRIER:
        src_ = nullptr;
        break;
    default:
        src_ = static_cast<const uint8_t *>(d.sbuf);
        break;
    }
    // Reductions may run with sbuf == rbuf (ALLREDUCE, REDUCE at the root,
    // REDUCE_SCATTER's MPI_IN_PLACE): a RESULT is written only after this
    // rank sent every block up to and including the one it completes, and
    // every result element lands at or before its own input position (a
    // REDUCE_SCATTER part is written at part-relative offsets), so the
    // input it overwrites has already been sent.
    writes_input_ = (d.coll == INA_COLL_ALLREDUCE || d.coll == INA_COLL_REDUCE ||
                     d.coll == INA_COLL_REDUCE_SCATTER) &&
                    d.sbuf == d.rbuf;
    applied_ = 0;
    landing_ = 0;
    landed_any_ = false;
    saved_.clear();
    if (call_.job()->keeps()) {
        keeper_.keep_inputs(call_, src_); // before any RESULT overwrites them
    }
}

CallData::Next UserBuffers::next_block(uint64_t sid, Block &b)
{
    const BlockSend s = call_.geometry().send(sid);
    b.offset = s.offset;
    b.count = s.count;
    b.want = s.want_result;
    // Straight from the user's buffer: no copy.
    b.payload = s.count > 0 ? src_ + s.src : nullptr;
    return Next::ready;
}

bool UserBuffers::take_result(const ina_proto_hdr_t &h, const void *data, size_t length)
{
    const CallGeometry &geom = call_.geometry();
    const size_t esz = call_.elem_size();
    const uint64_t sid = h.sid;
    if (writes_input_) {
        keeper_.copy(SIZE_MAX); // before a RESULT lands on an input it keeps
    }
    if (!geom.wants(sid)) {
        return true;
    }
    const size_t bytes = static_cast<size_t>(h.block_elems) * esz;
    if (h.block_elems > 0 && ((h.flags & INA_PROTO_F_ACK_ONLY) != 0 || length != bytes)) {
        return false; // the block this rank needs never comes
    }
    const BlockResult r = geom.result(sid);
    const auto *in = static_cast<const uint8_t *>(data);
    for (unsigned i = 0; i < r.npieces; ++i) {
        const BlockResult::Piece &pc = r.piece[i];
        const uint8_t *from = in + static_cast<size_t>(pc.from) * esz;
        if (from != rbuf_ + pc.dst) { // else it landed there (rendezvous)
            save_overwritten(sid, pc.dst, static_cast<size_t>(pc.count) * esz, false);
            std::memcpy(rbuf_ + pc.dst, from, static_cast<size_t>(pc.count) * esz);
        }
    }
    applied_ += r.npieces > 0 ? 1 : 0;
    return true;
}

void *UserBuffers::landing(const ina_proto_hdr_t &h)
{
    const CallGeometry &geom = call_.geometry();
    const uint64_t sid = h.sid;
    if (!geom.wants(sid)) {
        return nullptr; // take_result decides, from the channel's copy
    }
    const BlockResult r = geom.result(sid);
    if (r.npieces != 1 || r.piece[0].from != 0 || r.piece[0].count != h.block_elems) {
        return nullptr; // cut into pieces (REDUCE_SCATTER): copied out as before
    }
    save_overwritten(sid, r.piece[0].dst, static_cast<size_t>(h.block_elems) * call_.elem_size(),
                     true);
    ++landing_;
    landed_any_ = true; // from now on rbuf may hold part of this block
    if (writes_input_) {
        keeper_.copy(SIZE_MAX); // before UCX writes over an input it keeps
    }
    return rbuf_ + r.piece[0].dst;
}

// In place, a REDUCE_SCATTER part is written at part-relative offsets, over
// the input of this and earlier blocks (and any RESULT landing by
// rendezvous over its own): with peers, the input of the blocks a recovery
// may still rebuild (the last window before `sid`) is saved first. Older
// saved blocks are no longer needed by anybody.
void UserBuffers::save_overwritten(uint64_t sid, uint64_t dst, size_t len, bool landing)
{
    // A rendezvous RESULT lands in rbuf piece by piece: if the agent dies
    // in the middle, the block's input is half overwritten though its
    // RESULT never came.
    const Job &job = *call_.job();
    if (!writes_input_ || (call_.coll() != INA_COLL_REDUCE_SCATTER && !landing) ||
        !job.has_peers() || len == 0) {
        return;
    }
    const uint64_t w = job.window();
    const uint64_t oldest = sid > w ? sid - w : 0;
    while (!saved_.empty() && saved_.begin()->first < oldest) {
        saved_.erase(saved_.begin());
    }
    save_inputs_under(dst, len, oldest);
}

void UserBuffers::save_inputs_under(uint64_t dst, size_t len, uint64_t oldest)
{
    const CallGeometry &geom = call_.geometry();
    const size_t esz = call_.elem_size();
    const uint64_t per = geom.block_count(0) * esz; // bytes of a full block
    for (uint64_t b = std::max(oldest, dst / per); b * per < dst + len && b < geom.nblocks(); ++b) {
        if (saved_.count(b) == 0 && has_input(b)) {
            const BlockSend bs = geom.send(b);
            saved_[b].assign(src_ + bs.src, src_ + bs.src + static_cast<size_t>(bs.count) * esz);
        }
    }
}

// ---------------------------------------------------------------- recovery

uint64_t UserBuffers::produced() const
{
    return call_.geometry().nblocks();
}

bool UserBuffers::wants_result(uint64_t sid) const
{
    return call_.geometry().wants(sid);
}

bool UserBuffers::nothing_to_deliver(uint64_t sid) const
{
    return call_.geometry().block_count(sid) == 0; // BARRIER's empty block
}

const uint8_t *UserBuffers::result_in_place(uint64_t sid) const
{
    const CallGeometry &geom = call_.geometry();
    if (!call_.got(sid) || !geom.wants(sid) || rbuf_ == nullptr) {
        return nullptr;
    }
    const BlockResult r = geom.result(sid);
    if (r.npieces != 1 || r.piece[0].from != 0 || r.piece[0].count != geom.block_count(sid)) {
        return nullptr;
    }
    return rbuf_ + r.piece[0].dst;
}

bool UserBuffers::has_input(uint64_t sid) const
{
    if (keeper_.input(sid) != nullptr) {
        return true; // copied at post
    }
    if (!writes_input_ || saved_.count(sid) != 0) {
        return true;
    }
    // In place, a block's RESULT overwrites its own input (and then the
    // RESULT is what the others need); a REDUCE_SCATTER part is written at
    // part-relative offsets, over earlier blocks' input too.
    if (call_.coll() != INA_COLL_REDUCE_SCATTER) {
        return !call_.got(sid);
    }
    // Intact unless a RESULT written so far covered its bytes: those of the
    // recent blocks were saved (save_overwritten) and found above.
    const CallGeometry &geom = call_.geometry();
    const size_t esz = call_.elem_size();
    const uint64_t per = geom.block_count(0) * esz;
    const uint64_t lo = sid * per, hi = lo + geom.block_count(sid) * esz;
    for (uint64_t t = 0; t < geom.nblocks(); ++t) {
        if (!call_.got(t) || !geom.wants(t)) {
            continue;
        }
        const BlockResult r = geom.result(t);
        for (unsigned k = 0; k < r.npieces; ++k) {
            const uint64_t d = r.piece[k].dst, e = d + uint64_t{r.piece[k].count} * esz;
            if (d < hi && lo < e) {
                return false;
            }
        }
    }
    return true;
}

bool UserBuffers::block_for_peer(uint64_t sid, bool result, std::vector<uint8_t> &bytes,
                                 uint32_t *offset, uint32_t *count) const
{
    const CallGeometry &geom = call_.geometry();
    const size_t esz = call_.elem_size();
    if (result) {
        const uint8_t *p = result_in_place(sid);
        if (p == nullptr) {
            return false;
        }
        *offset = 0;
        *count = geom.block_count(sid);
        bytes.assign(p, p + static_cast<size_t>(*count) * esz);
        return true;
    }
    const BlockSend b = geom.send(sid);
    *offset = b.offset;
    *count = b.count;
    bytes.clear();
    if (const std::vector<uint8_t> *kept = keeper_.input(sid)) {
        bytes = *kept; // copied at post
        return true;
    }
    if (auto it = saved_.find(sid); it != saved_.end()) {
        bytes = it->second; // saved before a RESULT overwrote it
        return true;
    }
    if (!has_input(sid)) {
        return false;
    }
    if (b.count > 0) {
        bytes.assign(src_ + b.src, src_ + b.src + static_cast<size_t>(b.count) * esz);
    }
    return true;
}

bool UserBuffers::place_result(uint64_t sid, const uint8_t *data)
{
    const CallGeometry &geom = call_.geometry();
    const size_t esz = call_.elem_size();
    if (geom.wants(sid)) {
        const BlockResult r = geom.result(sid);
        for (unsigned k = 0; k < r.npieces; ++k) {
            const BlockResult::Piece &pc = r.piece[k];
            if (writes_input_) {
                // In place: our STATE promised the input it overwrites to
                // members still rebuilding; keep it for them.
                save_inputs_under(pc.dst, static_cast<size_t>(pc.count) * esz, 0);
            }
            std::memmove(rbuf_ + pc.dst, data + static_cast<size_t>(pc.from) * esz,
                         static_cast<size_t>(pc.count) * esz);
        }
    }
    return true;
}

void UserBuffers::keep_recovered(uint64_t sid, std::vector<uint8_t> *held, KeptCall &k)
{
    std::vector<uint8_t> in, res;
    uint32_t off = 0, cnt = 0;
    BlockSend b;
    if (block_for_peer(sid, false, in, &off, &cnt)) {
        b.offset = off;
        b.count = cnt;
    }
    if (const uint8_t *p = result_in_place(sid)) {
        res.assign(p,
                   p + static_cast<size_t>(call_.geometry().block_count(sid)) * call_.elem_size());
    } else if (held != nullptr) {
        res = std::move(*held);
    }
    k.sent.push_back(b);
    k.input.push_back(std::move(in));
    k.result.push_back(std::move(res));
}

} // namespace ina::client

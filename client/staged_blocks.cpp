// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A staged call's data (staged_blocks.h).
#include "staged_blocks.h"

#include <algorithm>
#include <utility>

#include "ina_engine.h"

namespace ina::client {

void StagedBlocks::start(const ina_stage_ops_t &ops)
{
    Job &job = *call_.job();
    ops_ = ops;
    keeps_ = job.keeps();
    if (keeps_) {
        for (Staged &b : sb_) {
            job.give_spare(std::move(b.copy));
        }
        sb_.assign(call_.geometry().nblocks(), Staged{});
    }
    produced_ = 0;
    max_got_ = 0;
    trimmed_ = 0;
}

bool StagedBlocks::block_ok(uint64_t sid, const ina_stage_block_t &b) const
{
    const uint64_t n = call_.geometry().block_count(sid);
    if (static_cast<uint64_t>(b.offset) + b.count > n || (b.count > 0 && b.data == nullptr)) {
        return false;
    }
    switch (call_.coll()) {
    case INA_COLL_ALLREDUCE:
    case INA_COLL_REDUCE:
    case INA_COLL_REDUCE_SCATTER:
        return b.offset == 0 && b.count == n; // reductions take whole blocks
    default:
        return true;
    }
}

CallData::Next StagedBlocks::next_block(uint64_t sid, Block &out)
{
    ina_stage_block_t b{};
    if (ops_.block(ops_.arg, sid, &b) == 0) {
        return Next::not_ready;
    }
    if (!block_ok(sid, b)) {
        // A programming error of the caller: never put it on the wire.
        call_.job()->client()->log(
            0,
            "job %u mid %llu sid %llu: staged block (offset %u, count %u, data %s) "
            "does not fit the %s block of %u elements; failing the call",
            call_.job()->jid(), static_cast<unsigned long long>(call_.mid()),
            static_cast<unsigned long long>(sid), b.offset, b.count,
            b.data != nullptr ? "set" : "NULL", ina_proto_coll_name(call_.coll()),
            call_.geometry().block_count(sid));
        return Next::refused;
    }
    out.offset = b.offset;
    out.count = b.count;
    out.want = b.want_result != 0;
    out.payload =
        b.count > 0 ? static_cast<const uint8_t *>(b.data) + b.offset * call_.elem_size() : nullptr;
    if (keeps_) {
        sent(sid, b, out.want);
    }
    produced_ = sid + 1;
    return Next::ready;
}

bool StagedBlocks::take_result(const ina_proto_hdr_t &h, const void *data, size_t length)
{
    const uint64_t sid = h.sid;
    const size_t esz = call_.elem_size();
    const void *payload = nullptr;
    uint32_t count = 0;
    if (call_.asked_result(sid) && h.block_elems > 0) {
        const size_t bytes = static_cast<size_t>(h.block_elems) * esz;
        if ((h.flags & INA_PROTO_F_ACK_ONLY) != 0 || length != bytes) {
            return false;
        }
        payload = data;
        count = h.block_elems;
    }
    if (keeps_) {
        // Before the caller overwrites its BLOCK with the RESULT: what
        // another member may still need of this block (ARCHITECTURE.md,
        // "Recovery from a lost agent").
        Staged &b = sb_[sid];
        if (payload != nullptr) {
            b.copy = call_.job()->spare_buffer();
            const auto *p = static_cast<const uint8_t *>(payload);
            b.copy.assign(p, p + static_cast<size_t>(count) * esz);
            b.result = true;
        } else {
            copy_input(sid);
        }
        b.data = nullptr;
        max_got_ = std::max(max_got_, sid + 1);
    }
    ops_.result(ops_.arg, sid, payload, count);
    if (keeps_) {
        trim();
    }
    return true;
}

void StagedBlocks::sent(uint64_t sid, const ina_stage_block_t &b, bool want)
{
    Staged &s = sb_[sid];
    s.data = static_cast<const uint8_t *>(b.data);
    s.offset = b.offset;
    s.count = b.count;
    s.want = want;
    s.result = false;
}

void StagedBlocks::copy_input(uint64_t sid)
{
    Staged &b = sb_[sid];
    if (b.result || !b.copy.empty() || b.count == 0 || b.data == nullptr) {
        return;
    }
    const size_t esz = call_.elem_size();
    b.copy = call_.job()->spare_buffer();
    const uint8_t *p = b.data + static_cast<size_t>(b.offset) * esz;
    b.copy.assign(p, p + static_cast<size_t>(b.count) * esz);
}

void StagedBlocks::trim()
{
    // RESULT (or ACK) of block t here means every member sent t, hence had
    // the RESULT of every block up to t - window: nobody lacks those.
    Job &job = *call_.job();
    const uint64_t w = job.window();
    while (trimmed_ + w < max_got_) {
        job.give_spare(std::move(sb_[trimmed_].copy));
        ++trimmed_;
    }
}

void StagedBlocks::keep_completed(InputKeeper &keeper)
{
    if (!keeps_ || keeper.keeping()) {
        return;
    }
    // The last window's copies, for members that may still lack them.
    KeptCall &kept = keeper.keep_copied(call_);
    for (size_t i = 0; i < kept.sent.size(); ++i) {
        Staged &b = sb_[kept.first + i];
        kept.sent[i] = BlockSend{};
        kept.sent[i].offset = b.offset;
        kept.sent[i].count = b.count; // with a RESULT kept, no input to offer (has_input)
        kept.input[i].clear();
        kept.result[i].clear();
        if (b.result) {
            kept.result[i] = std::move(b.copy);
        } else {
            kept.input[i] = std::move(b.copy);
        }
    }
}

// ---------------------------------------------------------------- recovery

bool StagedBlocks::holds_result(uint64_t sid) const
{
    return call_.got(sid) && sb_[sid].result;
}

bool StagedBlocks::has_input(uint64_t sid) const
{
    if (sid >= produced_) {
        return true; // produced later, as the caller goes on
    }
    const Staged &b = sb_[sid];
    return b.count == 0 || (!b.result && !b.copy.empty()) || (!call_.got(sid) && b.data != nullptr);
}

bool StagedBlocks::block_for_peer(uint64_t sid, bool result, std::vector<uint8_t> &bytes,
                                  uint32_t *offset, uint32_t *count) const
{
    if (sid >= produced_ || sid >= sb_.size()) {
        return false; // not produced yet: fetched later
    }
    const Staged &b = sb_[sid];
    bytes.clear();
    if (result) {
        if (!call_.got(sid) || !b.result) {
            return false;
        }
        *offset = 0;
        *count = call_.geometry().block_count(sid);
        bytes = b.copy;
        return true;
    }
    *offset = b.offset;
    *count = b.count;
    if (b.count == 0) {
        return true; // a CREDIT
    }
    if (!b.result && !b.copy.empty()) {
        bytes = b.copy;
        return true;
    }
    if (call_.got(sid) || b.data == nullptr) {
        return false; // its RESULT overwrote it (and others hold that)
    }
    const size_t esz = call_.elem_size();
    const uint8_t *p = b.data + static_cast<size_t>(b.offset) * esz;
    bytes.assign(p, p + static_cast<size_t>(b.count) * esz);
    return true;
}

CallData::Next StagedBlocks::produce(uint64_t sid)
{
    if (sid >= sb_.size()) {
        // Started while the job kept no blocks (ina_job_keep_blocks off):
        // nothing to rebuild from here; the recovery ends unrecoverable.
        return Next::not_ready;
    }
    ina_stage_block_t b{};
    if (ops_.block(ops_.arg, sid, &b) == 0) {
        return Next::not_ready; // the caller's next block is not ready yet
    }
    if (!block_ok(sid, b)) {
        return Next::refused;
    }
    sent(sid, b, b.want_result != 0);
    produced_ = sid + 1;
    copy_input(sid); // the caller may overwrite it once its result is in
    return Next::ready;
}

bool StagedBlocks::place_result(uint64_t sid, const uint8_t *data)
{
    if (call_.got(sid) || sid >= produced_ || sid >= sb_.size()) {
        return false; // (a RESULT comes only for a block every member produced)
    }
    Staged &b = sb_[sid];
    copy_input(sid); // others may still rebuild from it
    const uint32_t cnt = call_.geometry().block_count(sid);
    const bool give = b.want && cnt > 0;
    ops_.result(ops_.arg, sid, give ? data : nullptr, give ? cnt : 0);
    b.data = nullptr;
    return true;
}

void StagedBlocks::keep_recovered(uint64_t sid, std::vector<uint8_t> *held, KeptCall &k)
{
    Staged &b = sb_[sid];
    BlockSend bs;
    bs.offset = b.offset;
    bs.count = b.count;
    k.sent.push_back(bs);
    std::vector<uint8_t> in, res;
    (b.result ? res : in) = std::move(b.copy);
    if (held != nullptr) {
        res = std::move(*held); // rebuilt or fetched in the recovery
    }
    k.input.push_back(std::move(in));
    k.result.push_back(std::move(res));
}

} // namespace ina::client

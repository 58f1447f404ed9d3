// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Jobs and calls of the client engine (ina_engine.h): posting a collective as
// a work request, streaming its blocks through the sliding window (the RESULT
// of a block is its ACK), placing RESULTs, and the CQE. A staged call takes
// each block from the caller's ops.block when it is ready (the pump stops at
// the first one that is not) and hands each RESULT to ops.result; MIDs,
// window, verdicts and CQE are the same code as for any call.
#include <algorithm>
#include <cstring>

#include "ina_engine.h"

namespace ina::client {

namespace {

// The buffers the call reads and writes on this rank are there.
bool buffers_ok(const ina_coll_desc_t &d, const CallGeometry &g, uint32_t rank)
{
    switch (d.coll) {
    case INA_COLL_ALLREDUCE:
        return d.sbuf != nullptr && d.rbuf != nullptr;
    case INA_COLL_REDUCE:
        return d.sbuf != nullptr && (rank != d.root || d.rbuf != nullptr);
    case INA_COLL_REDUCE_SCATTER:
        return d.sbuf != nullptr && (g.part_count() == 0 || d.rbuf != nullptr);
    case INA_COLL_BCAST:
    case INA_COLL_ALLGATHER:
        return d.rbuf != nullptr;
    default:
        return true;
    }
}

} // namespace

// -------------------------------------------------------------------- Call

Call::Call(Job *job, uint32_t window) : job_(job), window_(window), slots_(window)
{
    for (uint32_t i = 0; i < window; ++i) {
        slots_[i].call = this;
        slots_[i].slot = i;
    }
}

void Call::start(uint64_t mid, const CallGeometry &geom, const ina_coll_desc_t &d, unsigned op,
                 unsigned dtype, const Opening &open)
{
    arm(mid, geom, d.coll, op, dtype, open);
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
                                 : rbuf_ + geom.part_first() * esz_;
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
    if (job_->keeps()) {
        keeper_.keep_inputs(*this, src_); // before any RESULT overwrites them
    }
}

void Call::start_staged(uint64_t mid, const CallGeometry &geom, unsigned coll, unsigned op,
                        unsigned dtype, const ina_stage_ops_t &ops, const Opening &open)
{
    arm(mid, geom, coll, op, dtype, open);
    staged_ = true;
    ops_ = ops;
    job_keeps_ = job_->keeps();
    if (job_keeps_) {
        for (Staged &b : sb_) {
            job_->give_spare(std::move(b.copy));
        }
        sb_.assign(geom.nblocks(), Staged{});
    }
    // The caller's memory, not the engine's: what a failure leaves there is
    // the caller's to judge (the CQE says whether it may fall back).
    src_ = nullptr;
    rbuf_ = nullptr;
    writes_input_ = false;
}

void Call::arm(uint64_t mid, const CallGeometry &geom, unsigned coll, unsigned op, unsigned dtype,
               const Opening &open)
{
    state_ = State::active;
    mid_ = mid;
    geom_ = geom;
    esz_ = ina_proto_dtype_size(dtype);
    staged_ = false;
    any_sent_ = false;
    granted_ = false;
    sends_dropped_ = false;
    background_ = false;
    applied_ = 0;
    landing_ = 0;
    landed_any_ = false;
    given_back_ = false;
    fail_ = Fail::none;
    status_ = INA_PROTO_OK;
    ended_in_flight_ = false;
    window_.start(geom.nblocks(), open.ahead);
    cqe_ = ina_cqe_t{};
    cqe_.mid = mid;
    cqe_.blocks = geom.nblocks();
    got_.assign(geom.nblocks(), false);
    keeper_.reset();
    rescue_.reset();
    saved_.clear();
    produced_ = 0;
    max_got_ = 0;
    trimmed_ = 0;
    deferred_.clear();
    job_keeps_ = false;

    ina_proto_init(&tmpl_, INA_PROTO_BLOCK);
    if (const Client *c = job_->client(); c != nullptr && c->info().protocol != 0) {
        tmpl_.version = static_cast<uint8_t>(c->info().protocol); // the connection's
    }
    tmpl_.jid = job_->jid();
    tmpl_.rank = job_->rank();
    tmpl_.mid = mid;
    tmpl_.window = static_cast<uint16_t>(job_->window());
    tmpl_.coll = static_cast<uint8_t>(coll);
    tmpl_.op = static_cast<uint8_t>(op);
    tmpl_.dtype = static_cast<uint8_t>(dtype);
    tmpl_.arg = geom.total();
    if (open.lease != 0) {
        take_lease(open.lease);
    }
}

// In place, a REDUCE_SCATTER part is written at part-relative offsets, over
// the input of this and earlier blocks (and any RESULT landing by
// rendezvous over its own): with peers, the input of the blocks a recovery
// may still rebuild (the last window before `sid`) is saved first. Older
// saved blocks are no longer needed by anybody.
void Call::save_overwritten(uint64_t sid, uint64_t dst, size_t len, bool landing)
{
    // A rendezvous RESULT lands in rbuf piece by piece: if the agent dies
    // in the middle, the block's input is half overwritten though its
    // RESULT never came.
    if (!writes_input_ || (tmpl_.coll != INA_COLL_REDUCE_SCATTER && !landing) ||
        !job_->has_peers() || len == 0) {
        return;
    }
    const uint64_t w = job_->window();
    const uint64_t oldest = sid > w ? sid - w : 0;
    while (!saved_.empty() && saved_.begin()->first < oldest) {
        saved_.erase(saved_.begin());
    }
    save_inputs_under(dst, len, oldest);
}

void Call::save_inputs_under(uint64_t dst, size_t len, uint64_t oldest)
{
    const uint64_t per = geom_.block_count(0) * esz_; // bytes of a full block
    for (uint64_t b = std::max(oldest, dst / per); b * per < dst + len && b < geom_.nblocks();
         ++b) {
        if (saved_.count(b) == 0 && input_intact(b)) {
            const BlockSend bs = geom_.send(b);
            saved_[b].assign(src_ + bs.src, src_ + bs.src + static_cast<size_t>(bs.count) * esz_);
        }
    }
}

bool Call::take_lease(uint32_t lease)
{
    granted_ = true;
    if (window_.set_lease(lease)) {
        return true;
    }
    job_->client()->log(1, "job %u mid %llu: the agent leased %u Segs (window %u, %llu blocks sent)",
                        tmpl_.jid, static_cast<unsigned long long>(mid_), lease,
                        window_.capacity(), static_cast<unsigned long long>(window_.next_sid()));
    fail(Fail::rejected, INA_PROTO_ERR_MALFORMED);
    return false;
}

void Call::on_grant(uint32_t lease)
{
    if (fail_ == Fail::none && !window_.leased()) {
        take_lease(lease);
    }
    granted_ = true;
}

void Call::start_empty()
{
    state_ = State::retired;
    background_ = false;
    staged_ = false;
    geom_ = CallGeometry{};
    window_.start(0);
    fail_ = Fail::none;
    cqe_ = ina_cqe_t{};
    cqe_.rc = INA_OK;
}

bool Call::finished() const
{
    if (landing_ > 0) {
        return false; // UCX is still writing into the user's buffer
    }
    if (sends_dropped_) {
        return true;
    }
    return window_.sends_pending() == 0 && (window_.complete() || fail_ != Fail::none);
}

bool Call::busy() const
{
    if (finished()) {
        return false;
    }
    // A staged call whose every sent block is acked (and sent) waits for its
    // caller's next block, not for the agent: a slow producer is no reason
    // to give up on a healthy agent.
    return !staged_ || window_.in_flight() > 0 || window_.sends_pending() > 0;
}

ina_cqe_t Call::decision_cqe() const
{
    ina_cqe_t cqe = cqe_;
    if (fail_ != Fail::none) {
        fill_failure(cqe);
    } else {
        cqe.rc = INA_OK;
        cqe.outcome = INA_OFFLOADED;
    }
    cqe.status = status_;
    return cqe;
}

void Call::fail(Fail f, uint8_t status)
{
    if (fail_ == Fail::none) {
        fail_ = f;
        status_ = status;
    }
}

void Call::fill_failure(ina_cqe_t &cqe) const
{
    // In place, rbuf already holding some results is no longer the input:
    // the caller cannot fall back to a host algorithm.
    const bool input_gone = writes_input_ && (applied_ > 0 || landed_any_);
    cqe.rc = INA_OK;
    cqe.outcome = INA_OFFLOADED;
    switch (fail_) {
    case Fail::none:
        break;
    case Fail::denied:
        if (input_gone) {
            cqe.rc = INA_ERR_LOST;
        } else {
            cqe.outcome = INA_FALLBACK_DENIED;
        }
        break;
    case Fail::rejected:
        cqe.rc = input_gone ? INA_ERR_LOST : INA_ERR_PROTO;
        break;
    case Fail::lost:
        // With peers the members finish a lost call together (recovery):
        // a blind fallback here could meet others that hold results.
        if (any_sent_ || job_->has_peers()) {
            cqe.rc = INA_ERR_LOST;
        } else {
            cqe.outcome = INA_FALLBACK_UNREACHABLE;
        }
        break;
    }
}

void Call::retire()
{
    // Complete even if the agent failed after the last RESULT.
    if (window_.complete()) {
        cqe_.rc = INA_OK;
        cqe_.outcome = INA_OFFLOADED;
    } else {
        fill_failure(cqe_);
    }
    cqe_.status = status_;
    state_ = State::retired;
    keeper_.copy(SIZE_MAX); // the caller's input is its own again after this
    if (cqe_.rc == INA_OK && cqe_.outcome == INA_OFFLOADED) {
        if (stage_keeps() && !keeper_.keeping()) {
            stage_keep_completed();
        }
        keeper_.hand_over(*job_);
    } // (a failed call keeps them for its recovery)
    if (cqe_.rc == INA_OK && cqe_.outcome == INA_FALLBACK_DENIED) {
        job_->note_denied(mid_); // what another member recovering it must hear
    }
}

void Call::drop_sends()
{
    sends_dropped_ = true;
    fail(Fail::lost, INA_PROTO_OK);
}

void Call::pump(Client &client)
{
    if (fail_ == Fail::none && !client.alive()) {
        fail(Fail::lost, INA_PROTO_OK);
    }
    while (fail_ == Fail::none && window_.can_send()) {
        const Post p = post_block(client);
        if (p == Post::sent) {
            continue;
        }
        if (p == Post::failed) {
            fail(Fail::lost, INA_PROTO_OK);
        }
        break; // not ready (staged: asked again next time), or refused
    }
    keeper_.copy(1); // while the RESULTs are on their way
}

bool Call::stage_block_ok(uint64_t sid, const ina_stage_block_t &b) const
{
    const uint64_t n = geom_.block_count(sid);
    if (static_cast<uint64_t>(b.offset) + b.count > n || (b.count > 0 && b.data == nullptr)) {
        return false;
    }
    switch (tmpl_.coll) {
    case INA_COLL_ALLREDUCE:
    case INA_COLL_REDUCE:
    case INA_COLL_REDUCE_SCATTER:
        return b.offset == 0 && b.count == n; // reductions take whole blocks
    default:
        return true;
    }
}

Call::Post Call::post_block(Client &client)
{
    const uint64_t sid = window_.next_sid();
    const uint32_t slot = window_.slot_of(sid);
    uint32_t offset, count;
    bool want;
    const void *payload;
    if (!staged_) {
        const BlockSend b = geom_.send(sid);
        offset = b.offset;
        count = b.count;
        want = b.want_result;
        // Straight from the user's buffer: no copy.
        payload = b.count > 0 ? src_ + b.src : nullptr;
    } else {
        ina_stage_block_t b{};
        if (ops_.block(ops_.arg, sid, &b) == 0) {
            return Post::not_ready;
        }
        if (!stage_block_ok(sid, b)) {
            // A programming error of the caller: never put it on the wire.
            client.log(0, "job %u mid %llu sid %llu: staged block (offset %u, count %u, data %s) "
                          "does not fit the %s block of %u elements; failing the call",
                       tmpl_.jid, static_cast<unsigned long long>(mid_),
                       static_cast<unsigned long long>(sid), b.offset, b.count,
                       b.data != nullptr ? "set" : "NULL", ina_proto_coll_name(tmpl_.coll),
                       geom_.block_count(sid));
            fail(Fail::rejected, INA_PROTO_ERR_MALFORMED);
            return Post::refused;
        }
        offset = b.offset;
        count = b.count;
        want = b.want_result != 0;
        payload = b.count > 0 ? static_cast<const uint8_t *>(b.data) + b.offset * esz_ : nullptr;
        if (stage_keeps()) {
            stage_sent(sid, b, want);
        }
        produced_ = sid + 1;
    }
    SlotCtx &sc = slots_[slot];
    sc.hdr = tmpl_;
    sc.hdr.sid = static_cast<uint32_t>(sid);
    sc.hdr.seg = slot;
    sc.hdr.window = static_cast<uint16_t>(window_.window());
    sc.hdr.block_elems = geom_.block_count(sid);
    sc.hdr.offset = offset;
    sc.hdr.count = count; // 0: a CREDIT
    sc.hdr.flags = want ? INA_PROTO_F_WANT_RESULT : 0; // read back by a staged RESULT
    sc.hdr.done = static_cast<uint32_t>(job_->done_mark());

    window_.on_sent();
    switch (client.channel().post(sc.hdr, payload, count * esz_, &sc)) {
    case Channel::Posted::done:
        window_.on_send_done(slot);
        break;
    case Channel::Posted::failed:
        window_.on_send_done(slot);
        client.log(1, "job %u mid %llu sid %llu: send failed", tmpl_.jid,
                   static_cast<unsigned long long>(mid_), static_cast<unsigned long long>(sid));
        return Post::failed;
    case Channel::Posted::pending:
        break;
    }
    any_sent_ = true;
    return Post::sent;
}

void Call::SlotCtx::done(bool ok)
{
    call->window_.on_send_done(slot);
    if (Client *client = call->job_->client()) {
        client->note_event(); // a slot may have become free
        if (!ok) {
            client->log(10, "job %u mid %llu sid %u: send not delivered", hdr.jid,
                        static_cast<unsigned long long>(hdr.mid), hdr.sid);
        }
    }
}

bool Call::matches(const ina_proto_hdr_t &h) const
{
    return h.sid < geom_.nblocks() && h.coll == tmpl_.coll && h.op == tmpl_.op &&
           h.dtype == tmpl_.dtype && h.block_elems == geom_.block_count(h.sid);
}

void Call::on_result(const ina_proto_hdr_t &h, const void *data, size_t length)
{
    Client &client = *job_->client();
    const uint64_t sid = h.sid;
    if (given_back_) {
        return; // the caller falls back: nothing more lands anywhere
    }
    if (!matches(h)) {
        client.log(1, "job %u mid %llu: dropping a RESULT that does not match block %u", h.jid,
                   static_cast<unsigned long long>(h.mid), h.sid);
        return;
    }
    const SendWindow::Ack a = window_.classify(sid);
    if (a != SendWindow::Ack::fresh) {
        client.log(1, "job %u mid %llu: dropping a %s RESULT of sid %u", h.jid,
                   static_cast<unsigned long long>(h.mid),
                   a == SendWindow::Ack::duplicate ? "duplicate" : "never sent", h.sid);
        return;
    }
    // A RESULT means the agent aggregates this call, in the lease it names.
    if (!window_.leased() && !take_lease(h.window)) {
        return;
    }
    granted_ = true;
    if (staged_) {
        on_staged_result(h, data, length);
        return;
    }
    if (writes_input_) {
        keeper_.copy(SIZE_MAX); // before a RESULT lands on an input it keeps
    }
    if (geom_.wants(sid)) {
        const size_t bytes = static_cast<size_t>(h.block_elems) * esz_;
        if (h.block_elems > 0 && ((h.flags & INA_PROTO_F_ACK_ONLY) != 0 || length != bytes)) {
            // The block this rank needs never comes: the call cannot complete.
            client.log(1, "job %u mid %llu sid %u: RESULT without the requested payload",
                       h.jid, static_cast<unsigned long long>(h.mid), h.sid);
            fail(Fail::rejected, INA_PROTO_ERR_MALFORMED);
            return;
        }
        const BlockResult r = geom_.result(sid);
        const auto *in = static_cast<const uint8_t *>(data);
        for (unsigned i = 0; i < r.npieces; ++i) {
            const BlockResult::Piece &pc = r.piece[i];
            const uint8_t *from = in + static_cast<size_t>(pc.from) * esz_;
            if (from != rbuf_ + pc.dst) { // else it landed there (rendezvous)
                save_overwritten(sid, pc.dst, static_cast<size_t>(pc.count) * esz_, false);
                std::memcpy(rbuf_ + pc.dst, from, static_cast<size_t>(pc.count) * esz_);
            }
        }
        applied_ += r.npieces > 0 ? 1 : 0;
    }
    // The RESULT, with or without payload, is the ACK of our block: the
    // window slides by one.
    window_.on_ack(sid);
    got_[sid] = true;
}

void *Call::landing(const ina_proto_hdr_t &h, size_t length)
{
    const uint64_t sid = h.sid;
    if (staged_ || fail_ != Fail::none || !matches(h) || h.block_elems == 0 ||
        (h.flags & INA_PROTO_F_ACK_ONLY) != 0 ||
        length != static_cast<size_t>(h.block_elems) * esz_ ||
        window_.classify(sid) != SendWindow::Ack::fresh || !geom_.wants(sid)) {
        return nullptr; // on_result decides, from the channel's copy
    }
    const BlockResult r = geom_.result(sid);
    if (r.npieces != 1 || r.piece[0].from != 0 || r.piece[0].count != h.block_elems) {
        return nullptr; // cut into pieces (REDUCE_SCATTER): copied out as before
    }
    save_overwritten(sid, r.piece[0].dst, static_cast<size_t>(h.block_elems) * esz_, true);
    ++landing_;
    landed_any_ = true; // from now on rbuf may hold part of this block
    if (writes_input_) {
        keeper_.copy(SIZE_MAX); // before UCX writes over an input it keeps
    }
    return rbuf_ + r.piece[0].dst;
}

void Call::on_landed(const ina_proto_hdr_t &h, void *dst, size_t length, bool ok)
{
    --landing_;
    if (!ok) {
        // The block this rank needs never came whole: the call cannot complete.
        job_->client()->log(1, "job %u mid %llu sid %u: RESULT payload lost in transfer",
                            h.jid, static_cast<unsigned long long>(h.mid), h.sid);
        fail(Fail::lost, INA_PROTO_OK);
        return;
    }
    on_result(h, dst, length); // finds it in place: nothing to copy
}

void Call::on_staged_result(const ina_proto_hdr_t &h, const void *data, size_t length)
{
    // A fresh RESULT: the slot still holds the header of this very block,
    // with the caller's want_result in its flags.
    const uint64_t sid = h.sid;
    const bool want = (slots_[window_.slot_of(sid)].hdr.flags & INA_PROTO_F_WANT_RESULT) != 0;
    const void *payload = nullptr;
    uint32_t count = 0;
    if (want && h.block_elems > 0) {
        const size_t bytes = static_cast<size_t>(h.block_elems) * esz_;
        if ((h.flags & INA_PROTO_F_ACK_ONLY) != 0 || length != bytes) {
            job_->client()->log(1, "job %u mid %llu sid %u: RESULT without the requested payload",
                                h.jid, static_cast<unsigned long long>(h.mid), h.sid);
            fail(Fail::rejected, INA_PROTO_ERR_MALFORMED);
            return;
        }
        payload = data;
        count = h.block_elems;
        ++applied_;
    }
    if (stage_keeps()) {
        // Before the caller overwrites its BLOCK with the RESULT: what
        // another member may still need of this block (ARCHITECTURE.md,
        // "Recovery from a lost agent").
        Staged &b = sb_[sid];
        if (payload != nullptr) {
            b.copy = job_->spare_buffer();
            const auto *p = static_cast<const uint8_t *>(payload);
            b.copy.assign(p, p + static_cast<size_t>(count) * esz_);
            b.result = true;
        } else {
            stage_copy_input(sid);
        }
        b.data = nullptr;
        max_got_ = std::max(max_got_, sid + 1);
    }
    ops_.result(ops_.arg, sid, payload, count);
    window_.on_ack(sid); // the ACK of our block: the window slides by one
    got_[sid] = true;
    if (stage_keeps()) {
        stage_trim();
    }
}

void Call::on_error(uint8_t status, bool in_flight)
{
    if (fail_ == Fail::none) {
        ended_in_flight_ = in_flight;
    }
    const bool tree = status == INA_PROTO_ERR_UPSTREAM || status == INA_PROTO_ERR_NOT_MEMBER;
    fail(status == INA_PROTO_ERR_ABORTED ? Fail::denied
         : job_->part_lost(status)       ? Fail::lost // the members settle it
         // Without recovery, a tree's call this member was never granted
         // falls back, as the DENY a leaf used to send for it.
         : tree && !granted_ && !job_->has_peers() ? Fail::denied
                                                   : Fail::rejected,
         status);
}

void Call::stage_sent(uint64_t sid, const ina_stage_block_t &b, bool want)
{
    Staged &s = sb_[sid];
    s.data = static_cast<const uint8_t *>(b.data);
    s.offset = b.offset;
    s.count = b.count;
    s.want = want;
    s.result = false;
}

void Call::stage_copy_input(uint64_t sid)
{
    Staged &b = sb_[sid];
    if (b.result || !b.copy.empty() || b.count == 0 || b.data == nullptr) {
        return;
    }
    b.copy = job_->spare_buffer();
    const uint8_t *p = b.data + static_cast<size_t>(b.offset) * esz_;
    b.copy.assign(p, p + static_cast<size_t>(b.count) * esz_);
}

void Call::stage_trim()
{
    // RESULT (or ACK) of block t here means every member sent t, hence had
    // the RESULT of every block up to t - window: nobody lacks those.
    const uint64_t w = job_->window();
    while (trimmed_ + w < max_got_) {
        job_->give_spare(std::move(sb_[trimmed_].copy));
        ++trimmed_;
    }
}

void Call::stage_keep_completed()
{
    // The last window's copies, for members that may still lack them.
    KeptCall &kept = keeper_.keep_copied(*this);
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

// --------------------------------------------------------------------- Job

Job::Job(Client *client, const ina_job_params_t &p, uint32_t rank)
    : client_(client), params_(p), rank_(rank), comm_rank_(rank),
      ahead_(std::clamp<uint32_t>(p.ahead, 1, p.window == 0 ? 1 : p.window))
{
}

Job::~Job()
{
    size_t unfreed = 0;
    for (const auto &c : calls_) {
        unfreed += c->state() != Call::State::free ? 1 : 0;
    }
    if (client_ != nullptr) {
        if (unfreed > 0) {
            client_->log(0, "job %u left with %zu call(s) not freed", params_.jid, unfreed);
        }
        client_->detach(this);
    }
}

void Job::orphan()
{
    // The endpoint is about to be closed: nothing more will arrive.
    for (Call *c : active_) {
        c->drop_sends();
    }
    while (!active_.empty()) {
        active_.front()->retire();
        active_.pop_front();
    }
    client_ = nullptr;
}

void Job::leave()
{
    if (client_ == nullptr) {
        return;
    }
    if (!active_.empty()) {
        client_->log(0, "job %u: leaving with %zu call(s) outstanding; finishing them first",
                     params_.jid, active_.size());
        client_->wait([this] { return active_.empty(); });
    }
    if (client_->alive()) {
        ina_proto_hdr_t h;
        ina_proto_init(&h, INA_PROTO_JOB_LEAVE);
        h.jid = params_.jid;
        h.rank = rank_;
        client_->post_detached(h); // the request is reaped by later progress
    }
}

void Job::abort(Call *call)
{
    if (call->state() != Call::State::active || call->failed() || call->all_results()) {
        return; // ended already: the agent has nothing to give back
    }
    call->give_back();
    if (client_ != nullptr && client_->alive()) {
        ina_proto_hdr_t h;
        ina_proto_init(&h, INA_PROTO_CALL_ABORT);
        h.jid = params_.jid;
        h.rank = rank_;
        h.mid = call->mid();
        h.status = INA_PROTO_ERR_ABORTED;
        client_->post_detached(h);
    }
}

ina_call *Job::acquire()
{
    if (!free_.empty()) {
        ina_call *c = free_.back();
        free_.pop_back();
        return c;
    }
    // Throws std::bad_alloc (the C API turns it into INA_ERR_NOMEM).
    calls_.push_back(std::make_unique<ina_call>(this, params_.window));
    return calls_.back().get();
}

void Job::release(Call *call)
{
    if (call->recovering()) {
        // Freed in the middle of its recovery (its caller fell back or
        // failed): the others are told it cannot give what it offered.
        call->rescue_abandon();
    }
    if (call->state() == Call::State::free) {
        if (client_ != nullptr) {
            client_->log(0, "job %u: call freed twice", params_.jid);
        }
        return;
    }
    call->set_free();
    free_.push_back(static_cast<ina_call *>(call));
}

template <typename Start>
int Job::launch(const CallGeometry &g, bool wait_decision, ina_call **out, ina_cqe_t *cqe,
                Start start)
{
    ina_call *c = acquire(); // before the MID: running out of memory consumes none
    if (g.empty()) {
        // Moves nothing: complete at once on every rank alike, no MID.
        c->start_empty();
        *out = c;
        return cqe->rc = INA_OK;
    }
    cqe->blocks = g.nblocks();
    if (client_ != nullptr && g.nblocks() > 1) {
        // Deliver pending verdicts first (they are matched against next_mid_,
        // so before this call consumes it): a DENY already here spares this
        // call's blocks. A call of one block (at most kSmallCallBytes) goes
        // at once: the poll would cost it more than it can save (a syscall on
        // TCP, a fifth of a loopback round trip: bench/engine/rtt.sh), and
        // the agent drops a block of a call it denied, whose DENY this rank
        // then finds at its next poll.
        client_->poll_events();
    }
    // Every rank consumes MIDs in the same order, whatever the outcome.
    const uint64_t mid = next_mid_++;
    cqe->mid = mid;
    // What the verdict of the previous MID said (if this rank heard it).
    Opening open;
    open.ahead = ahead_mid_ == mid ? ahead_ : 1;
    auto early = early_.find(mid);
    if (early != early_.end()) {
        const Early e = early->second;
        early_.erase(early);
        if (e.type != INA_PROTO_GRANT) {
            // Decided before this rank got here: send nothing (the agent drops it).
            free_.push_back(c); // never started
            cqe->status = e.status;
            const bool tree_err = tree_ && (e.status == INA_PROTO_ERR_UPSTREAM ||
                                            e.status == INA_PROTO_ERR_NOT_MEMBER);
            if (e.type == INA_PROTO_DENY || e.status == INA_PROTO_ERR_ABORTED ||
                (tree_err && !has_peers())) {
                cqe->outcome = INA_FALLBACK_DENIED;
                note_denied(mid);
                return cqe->rc = INA_OK;
            }
            if (part_lost(e.status)) {
                // The job lost a part of itself under this call: settled
                // with the other members, like a call the agent lost.
                free_.pop_back();
                start(c, mid, open);
                c->lose();
                c->retire();
                *out = c;
                *cqe = c->cqe();
                return cqe->rc;
            }
            return cqe->rc = INA_ERR_PROTO;
        }
        open.lease = e.lease;
    }
    if ((client_ == nullptr || !client_->alive()) && has_peers()) {
        // The agent is gone, but others may have sent (or got) this call's
        // blocks before it went: the caller recovers it with them.
        start(c, mid, open);
        c->lose();
        c->retire();
        *out = c;
        *cqe = c->cqe();
        return cqe->rc;
    }
    if (client_ == nullptr || !client_->alive()) {
        free_.push_back(c); // never started
        cqe->outcome = INA_FALLBACK_UNREACHABLE;
        return cqe->rc = INA_OK;
    }
    start(c, mid, open);
    active_.push_back(c);
    client_->progress(); // the first window goes out
    if (!wait_decision) {
        *out = c;
        return cqe->rc = INA_OK;
    }
    // Usually one round trip: our own first block makes the agent decide.
    client_->wait([c] { return c->decided(); });
    if (c->failed()) {
        if (c->state() == Call::State::active) {
            // Denied or failed before the caller got it: finish its sends
            // (they read the user's buffer), then take it out of the job's order.
            client_->wait([c] { return c->finished(); });
            auto it = std::find(active_.begin(), active_.end(), c);
            if (it != active_.end()) {
                active_.erase(it);
                c->retire();
            }
        }
        if (c->cqe().rc == INA_ERR_LOST && has_peers()) {
            *cqe = c->cqe(); // the caller recovers it with the other members
            *out = c;
            return cqe->rc;
        }
        if (c->cqe().rc != INA_OK || c->cqe().outcome != INA_OFFLOADED) {
            *cqe = c->cqe();
            release(c);
            return cqe->rc;
        }
    }
    // Granted (or already complete): the caller tests/waits it.
    *out = c;
    return cqe->rc = INA_OK;
}

int Job::plan(const ina_coll_desc_t &d, ina_call_plan &p, bool keep_counts) const
{
    p.desc = d;
    p.op = d.op;
    p.dtype = d.dtype;
    if (d.coll == INA_COLL_BARRIER) {
        p.op = INA_OP_REPLACE; // carries no data: whatever the caller passed
        p.dtype = INA_DT_UINT8;
    }
    if (d.coll >= INA_COLL_COUNT || !ina_proto_coll_valid(d.coll, p.op, p.dtype)) {
        return INA_ERR_INVALID;
    }
    p.recvcounts.clear();
    p.desc.recvcounts = nullptr;
    if (d.coll == INA_COLL_REDUCE_SCATTER && d.recvcounts != nullptr) {
        if (keep_counts) {
            p.recvcounts.assign(d.recvcounts, d.recvcounts + params_.nmembers);
            p.desc.recvcounts = p.recvcounts.data();
        } else {
            p.desc.recvcounts = d.recvcounts;
        }
    }
    CallShape s;
    s.coll = d.coll;
    s.elem_size = ina_proto_dtype_size(p.dtype);
    s.count = d.count;
    s.nmembers = params_.nmembers;
    s.rank = comm_rank_;
    s.root = d.root;
    s.recvcounts = p.desc.recvcounts;
    s.in_place = d.coll == INA_COLL_ALLGATHER && d.sbuf == nullptr;
    s.block_bytes = params_.block_bytes;
    CallGeometry &g = p.geom;
    if (!g.plan(s)) {
        return INA_ERR_INVALID;
    }
    // The call's own block size, from its result vector (ina_geometry.h).
    s.block_bytes = call_block_bytes(g.total() * s.elem_size, params_.block_bytes);
    if (!g.plan(s) || (!g.empty() && !buffers_ok(p.desc, g, comm_rank_))) {
        return INA_ERR_INVALID;
    }
    p.block_bytes = params_.block_bytes;
    p.nmembers = params_.nmembers;
    p.rank = comm_rank_;
    return INA_OK;
}

int Job::post(const ina_coll_desc_t &d, bool wait_decision, ina_call **out, ina_cqe_t *cqe)
{
    ina_call_plan p;
    *out = nullptr;
    *cqe = ina_cqe_t{};
    if (plan(d, p, false) != INA_OK) { // posted now: the caller's counts serve
        return cqe->rc = INA_ERR_INVALID;
    }
    return post(p, wait_decision, out, cqe);
}

int Job::post(ina_call_plan &p, bool wait_decision, ina_call **out, ina_cqe_t *cqe)
{
    *out = nullptr;
    *cqe = ina_cqe_t{};
    if (p.block_bytes != params_.block_bytes || p.nmembers != params_.nmembers ||
        p.rank != comm_rank_) {
        // Cut again from what was planned (its counts: one per member).
        const std::vector<uint64_t> counts = p.recvcounts;
        ina_coll_desc_t d = p.desc;
        d.recvcounts = counts.empty() ? nullptr : counts.data();
        if ((!counts.empty() && counts.size() != params_.nmembers) || plan(d, p) != INA_OK) {
            return cqe->rc = INA_ERR_INVALID;
        }
    }
    return launch(p.geom, wait_decision, out, cqe,
                  [&](ina_call *c, uint64_t mid, const Opening &open) {
                      c->start(mid, p.geom, p.desc, p.op, p.dtype, open);
                  });
}

int Job::post_staged(const ina_staged_desc_t &d, ina_call **out, ina_cqe_t *cqe)
{
    *out = nullptr;
    *cqe = ina_cqe_t{};
    unsigned op = d.op;
    unsigned dtype = d.dtype;
    if (d.coll == INA_COLL_BARRIER) {
        op = INA_OP_REPLACE; // carries no data: whatever the caller passed
        dtype = INA_DT_UINT8;
    }
    if (d.coll >= INA_COLL_COUNT || !ina_proto_coll_valid(d.coll, op, dtype) ||
        d.ops.block == nullptr || d.ops.result == nullptr) {
        return cqe->rc = INA_ERR_INVALID;
    }
    // The caller's cut: its block size, at most the job's (0: the job's).
    const uint32_t block = d.block_bytes != 0 ? d.block_bytes : params_.block_bytes;
    CallGeometry g;
    if (block > params_.block_bytes ||
        !g.plan_total(d.coll, ina_proto_dtype_size(dtype), d.total, block)) {
        return cqe->rc = INA_ERR_INVALID;
    }
    return launch(g, false, out, cqe, [&](ina_call *c, uint64_t mid, const Opening &open) {
        c->start_staged(mid, g, d.coll, op, dtype, d.ops, open);
    });
}

void Job::drive()
{
    for (Call *c : active_) {
        c->pump(*client_);
    }
    while (!active_.empty() && active_.front()->finished()) {
        active_.front()->retire();
        active_.pop_front();
    }
}

bool Job::busy() const
{
    for (const Call *c : active_) {
        if (c->busy()) {
            return true;
        }
    }
    return false;
}

bool Job::background_busy() const
{
    for (const Call *c : active_) { // not retired yet
        if (c->background()) {
            return true;
        }
    }
    return false;
}

void Job::drop_sends()
{
    for (Call *c : active_) {
        c->drop_sends();
    }
}

Call *Job::find(uint64_t mid)
{
    for (Call *c : active_) { // a handful at most
        if (c->mid() == mid) {
            return c;
        }
    }
    return nullptr;
}

void Job::remember(const ina_proto_hdr_t &h)
{
    if (early_.size() >= kMaxEarly && early_.count(h.mid) == 0) {
        client_->log(1, "job %u: too many early verdicts, dropping %s of mid %llu", h.jid,
                     ina_proto_type_name(h.type), static_cast<unsigned long long>(h.mid));
        return;
    }
    if (h.type == INA_PROTO_ERROR) {
        early_[h.mid] = Early{h.type, h.status, 0}; // an abort overrides a GRANT
    } else {
        early_.emplace(h.mid, Early{h.type, h.status, h.window});
    }
}

void Job::hear_ahead(const ina_proto_hdr_t &h)
{
    // Only the word of the latest verdict counts; it is the agent's
    // promise for MID h.mid + 1 alone.
    if (h.mid + 1 >= ahead_mid_) {
        ahead_mid_ = h.mid + 1;
        ahead_ = std::max<uint32_t>(1, std::min<uint32_t>(h.ahead, window()));
    }
}

void Job::hear_certified(const ina_proto_hdr_t &h)
{
    certified_ = std::max(certified_, ina_proto_mark(h.mid, h.done));
    while (!kept_.empty() && kept_.begin()->first < certified_) {
        KeptCall &k = kept_.begin()->second;
        kept_bytes_ -= k.bytes();
        for (auto &v : k.input) {
            if (spare_.size() < kSpareBuffers && v.capacity() > 0) {
                spare_.push_back(std::move(v));
            }
        }
        for (auto &v : k.result) {
            std::vector<uint8_t>().swap(v); // only a recovery fills these
        }
        // The map's node and the record's vectors serve a later call (keep).
        auto node = kept_.extract(kept_.begin());
        if (spare_kept_.size() < kSpareKept) {
            spare_kept_.push_back(std::move(node));
        }
    }
    while (!denied_.empty() && denied_.begin()->first < certified_) {
        denied_.erase(denied_.begin());
    }
}

void Job::keep(KeptCall &&k)
{
    if (k.mid < certified_) {
        return; // certified already: every member holds it
    }
    kept_bytes_ += k.bytes();
    if (spare_kept_.empty() || kept_.count(k.mid) != 0) {
        kept_[k.mid] = std::move(k);
        return;
    }
    // A certified call's node: no allocation; its vectors, emptied but with
    // their room, go back to the caller's record for its next call.
    auto node = std::move(spare_kept_.back());
    spare_kept_.pop_back();
    node.key() = k.mid;
    std::swap(node.mapped(), k);
    kept_.insert(std::move(node));
}

const KeptCall *Job::kept(uint64_t mid) const
{
    auto it = kept_.find(mid);
    return it != kept_.end() ? &it->second : nullptr;
}

void Job::on_result(const ina_proto_hdr_t &h, const void *data, size_t length)
{
    hear_ahead(h);
    hear_certified(h);
    Call *c = find(h.mid);
    if (c == nullptr) {
        client_->log(10, "job %u: dropping RESULT of mid %llu sid %u: no such call", h.jid,
                     static_cast<unsigned long long>(h.mid), h.sid);
        return;
    }
    c->on_result(h, data, length);
}

void *Job::landing(const ina_proto_hdr_t &h, size_t length)
{
    hear_certified(h);
    Call *c = find(h.mid);
    return c == nullptr ? nullptr : c->landing(h, length);
}

void Job::on_landed(const ina_proto_hdr_t &h, void *dst, size_t length, bool ok)
{
    // The call cannot have finished (nor its MID been forgotten) while a
    // landing was in flight.
    if (Call *c = find(h.mid)) {
        c->on_landed(h, dst, length, ok);
    }
}

void Job::on_grant(const ina_proto_hdr_t &h)
{
    hear_ahead(h);
    Call *c = find(h.mid);
    if (c != nullptr) {
        c->on_grant(h.window);
    } else if (h.mid >= next_mid_) {
        remember(h);
    } else {
        client_->log(100, "job %u: GRANT of mid %llu after its call ended", h.jid,
                     static_cast<unsigned long long>(h.mid));
    }
}

void Job::on_deny(const ina_proto_hdr_t &h)
{
    hear_ahead(h);
    Call *c = find(h.mid);
    if (c != nullptr) {
        c->on_deny(h.status);
    } else if (h.mid >= next_mid_) {
        remember(h);
    } else {
        client_->log(10, "job %u: dropping a stale DENY of mid %llu", h.jid,
                     static_cast<unsigned long long>(h.mid));
    }
}

void Job::on_error(const ina_proto_hdr_t &h)
{
    Call *c = find(h.mid);
    if (c != nullptr) {
        client_->log(1, "job %u mid %llu: agent rejected block %u: %s", h.jid,
                     static_cast<unsigned long long>(h.mid), h.sid,
                     ina_proto_status_name(h.status));
        c->on_error(h.status, (h.flags & INA_PROTO_F_IN_FLIGHT) != 0);
    } else if (h.mid >= next_mid_) {
        client_->log(1, "job %u: agent aborted mid %llu before this rank started it: %s", h.jid,
                     static_cast<unsigned long long>(h.mid), ina_proto_status_name(h.status));
        remember(h);
    } else {
        client_->log(10, "job %u: dropping an ERROR of finished mid %llu: %s", h.jid,
                     static_cast<unsigned long long>(h.mid), ina_proto_status_name(h.status));
    }
}

} // namespace ina::client

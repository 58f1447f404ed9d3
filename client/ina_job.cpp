// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Jobs and calls of the client engine (ina_engine.h): posting a collective as
// a work request, streaming its blocks through the sliding window (the RESULT
// of a block is its ACK), handing RESULTs to the call's data (call_data.h:
// the user's buffers, or a staged call's ops), and the CQE. MIDs, window,
// verdicts and CQE are the same code for any call.
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

Call::Call(Job *job, uint32_t window)
    : job_(job), window_(window), slots_(window), user_buffers_(*this, keeper_),
      staged_blocks_(*this), data_(&user_buffers_)
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
    user_buffers_.start(d);
    data_ = &user_buffers_;
}

void Call::start_staged(uint64_t mid, const CallGeometry &geom, unsigned coll, unsigned op,
                        unsigned dtype, const ina_stage_ops_t &ops, const Opening &open)
{
    arm(mid, geom, coll, op, dtype, open);
    staged_blocks_.start(ops);
    data_ = &staged_blocks_;
}

void Call::arm(uint64_t mid, const CallGeometry &geom, unsigned coll, unsigned op, unsigned dtype,
               const Opening &open)
{
    state_ = State::active;
    mid_ = mid;
    geom_ = geom;
    esz_ = ina_proto_dtype_size(dtype);
    any_sent_ = false;
    granted_ = false;
    sends_dropped_ = false;
    background_ = false;
    given_back_ = false;
    agent_denied_ = false;
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
    data_ = &user_buffers_;
    geom_ = CallGeometry{};
    window_.start(0);
    fail_ = Fail::none;
    cqe_ = ina_cqe_t{};
    cqe_.rc = INA_OK;
}

bool Call::finished() const
{
    if (data_->writing()) {
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
    return !data_->caller_produces() || window_.in_flight() > 0 || window_.sends_pending() > 0;
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
    const bool input_gone = data_->input_gone();
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
        data_->keep_completed(keeper_);
        keeper_.hand_over(*job_);
    } // (a failed call keeps them for its recovery)
    if (cqe_.rc == INA_OK && cqe_.outcome == INA_FALLBACK_DENIED) {
        job_->note_denied(mid_); // what another member recovering it must hear
        if (agent_denied_) {
            job_->note_agent_denial(mid_, coll(), geom_.total_bytes());
        }
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

Call::Post Call::post_block(Client &client)
{
    const uint64_t sid = window_.next_sid();
    const uint32_t slot = window_.slot_of(sid);
    CallData::Block b;
    switch (data_->next_block(sid, b)) {
    case CallData::Next::ready:
        break;
    case CallData::Next::not_ready:
        return Post::not_ready;
    case CallData::Next::refused:
        fail(Fail::rejected, INA_PROTO_ERR_MALFORMED);
        return Post::refused;
    }
    SlotCtx &sc = slots_[slot];
    sc.hdr = tmpl_;
    sc.hdr.sid = static_cast<uint32_t>(sid);
    sc.hdr.seg = slot;
    sc.hdr.window = static_cast<uint16_t>(window_.window());
    sc.hdr.block_elems = geom_.block_count(sid);
    sc.hdr.offset = b.offset;
    sc.hdr.count = b.count;                              // 0: a CREDIT
    sc.hdr.flags = b.want ? INA_PROTO_F_WANT_RESULT : 0; // read back by asked_result
    sc.hdr.done = static_cast<uint32_t>(job_->done_mark());

    window_.on_sent();
    switch (client.channel().post(sc.hdr, b.payload, b.count * esz_, &sc)) {
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
    if (!data_->take_result(h, data, length)) {
        // The block this rank needs never comes: the call cannot complete.
        client.log(1, "job %u mid %llu sid %u: RESULT without the requested payload", h.jid,
                   static_cast<unsigned long long>(h.mid), h.sid);
        fail(Fail::rejected, INA_PROTO_ERR_MALFORMED);
        return;
    }
    // The RESULT, with or without payload, is the ACK of our block: the
    // window slides by one.
    window_.on_ack(sid);
    got_[sid] = true;
}

void *Call::landing(const ina_proto_hdr_t &h, size_t length)
{
    if (fail_ != Fail::none || !matches(h) || h.block_elems == 0 ||
        (h.flags & INA_PROTO_F_ACK_ONLY) != 0 ||
        length != static_cast<size_t>(h.block_elems) * esz_ ||
        window_.classify(h.sid) != SendWindow::Ack::fresh) {
        return nullptr; // on_result decides, from the channel's copy
    }
    return data_->landing(h);
}

void Call::on_landed(const ina_proto_hdr_t &h, void *dst, size_t length, bool ok)
{
    data_->landed();
    if (!ok) {
        // The block this rank needs never came whole: the call cannot complete.
        job_->client()->log(1, "job %u mid %llu sid %u: RESULT payload lost in transfer",
                            h.jid, static_cast<unsigned long long>(h.mid), h.sid);
        fail(Fail::lost, INA_PROTO_OK);
        return;
    }
    on_result(h, dst, length); // finds it in place: nothing to copy
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
    flush_peers(); // answers the progress thread composed: the others wait on them
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

void Job::note_agent_denial(uint64_t mid, unsigned coll, uint64_t bytes)
{
    // Calls retire in MID order, but an early DENY is noted at its post:
    // keep the latest call's.
    if (!denial_.set || mid >= denial_.mid) {
        denial_ = Told{true, mid, static_cast<uint8_t>(coll), bytes};
    }
}

int Job::tell(ina_proto_type_t type, unsigned since, Told &w, uint64_t ns)
{
    const Told t = w;
    w = Told{}; // one word per call at most
    // Member 0 speaks for the job, of the latest call posted only (a call
    // that had no part here leaves an older one that is not its own).
    if (!t.set || t.mid + 1 != next_mid_ || rank_ != 0 || ns == 0 || client_ == nullptr ||
        client_->info().protocol < since) {
        return 0;
    }
    ina_proto_hdr_t h;
    ina_proto_init(&h, type);
    h.jid = params_.jid;
    h.rank = rank_;
    h.coll = t.coll;
    ina_proto_timing_set(&h, t.bytes, ns);
    const int rc = client_->post_detached(h);
    return rc == INA_OK ? 1 : rc;
}

int Job::host_cost(uint64_t ns)
{
    return tell(INA_PROTO_HOST_COST, kHostCostProtocol, denial_, ns);
}

int Job::call_time(uint64_t ns)
{
    return tell(INA_PROTO_CALL_TIME, kCallTimeProtocol, posted_, ns);
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
    } else if (call->lost_unrecovered() && has_peers()) {
        // Lost with its agent and given up without a recovery: the caller
        // settled it on the host (a node stage whose other stream fell
        // back, a stripe whose other part did). A member still recovering
        // it must hear "denied" from here, not wait for this one forever.
        if (client_ != nullptr) {
            client_->log(5, "job %u mid %llu: lost and given up by its caller (on the host): "
                            "the others recovering it hear \"denied\"",
                         params_.jid, static_cast<unsigned long long>(call->mid()));
        }
        note_denied(call->mid());
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
    posted_ = Told{true, mid, static_cast<uint8_t>(g.coll()), g.total_bytes()};
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
                if (e.type == INA_PROTO_DENY && e.status != INA_PROTO_ERR_ABORTED) {
                    note_agent_denial(mid, g.coll(), g.total_bytes());
                }
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
    // ASKs about calls certified now: every member holds them.
    while (!asks_.empty() && asks_.begin()->first < certified_) {
        answer_waiting(asks_.begin()->first); // (answers below certified_ always)
    }
}

void Job::keep(KeptCall &&k)
{
    const uint64_t mid = k.mid;
    if (mid < certified_) {
        // certified already: every member holds it
    } else if (spare_kept_.empty() || kept_.count(mid) != 0) {
        kept_bytes_ += k.bytes();
        kept_[mid] = std::move(k);
    } else {
        // A certified call's node: no allocation; its vectors, emptied but
        // with their room, go back to the caller's record for its next call.
        kept_bytes_ += k.bytes();
        auto node = std::move(spare_kept_.back());
        spare_kept_.pop_back();
        node.key() = mid;
        std::swap(node.mapped(), k);
        kept_.insert(std::move(node));
    }
    // A member that lost the call may have asked while it still ran here:
    // this member's word is final now (a recovery's, once it ends: rescued).
    if (rescuing_.count(mid) == 0) {
        answer_waiting(mid);
    }
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

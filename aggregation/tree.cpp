// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The aggregation core in a tree of agents (leaf agents under a spine agent;
// docs/HIERARCHY.md, "Levels and roles"):
//   as a parent, the votes of its child agents (CALL_READY, CALL_ABORT; a
//   rank's CALL_ABORT of a striped call is handled here too): a
//   call of a job opened by child agents is GRANTed only once every child
//   said it holds a lease, so no leaf can deny a call another leaf's members
//   were told granted;
//   as a leaf, the link up (Uplink): a completed Seg is sent up as this
//   leaf's BLOCK of the parent's job instead of being fanned out, its
//   RESULT from the parent is fanned out to the members and only then
//   counts as done (the result is the ACK at every level, so a leaf's
//   window is bounded by its parent's as a rank's is by its agent's), and
//   the members hear GRANT/DENY once the parent decided.
#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "aggregator.h"
#include "log.h"

namespace ina::agg {

// ---------------------------------------------------------------- parent side

Job *Aggregator::child_job(Member &from, const ina_proto_hdr_t &h)
{
    Job *job = member_job(from, h, "a vote for an unknown job");
    if (job != nullptr && !job->children()) {
        reject(&from, h, INA_PROTO_ERR_MISMATCH, "a vote in a job not opened by agents");
        return nullptr;
    }
    if (job != nullptr) {
        job->note_mid(h.rank, h.mid);
    }
    return job;
}

void Aggregator::call_ready(Member &from, const ina_proto_hdr_t &h)
{
    Job *job = child_job(from, h);
    if (job == nullptr) {
        return;
    }
    ++counters_.ready_in;
    Call *call = job->find_call(h.mid);
    if (call == nullptr) {
        job->retire();
        if (job->is_retired(h.mid)) {
            return; // a vote on a call forgotten long ago
        }
        call = &start_call(*job, h);
        decide(*job, *call, h.mid);
    } else if (!call->finished && (call->coll != h.coll || call->op != h.op ||
                                   call->dtype != h.dtype || call->total != h.arg)) {
        reject(&from, h, INA_PROTO_ERR_MISMATCH, "CALL_READY differs from the call's");
        settle();
        return;
    }
    if (!call->ready[h.rank]) {
        call->ready[h.rank] = true;
        ++call->nready;
    }
    if (call->granted && !call->finished && !call->grant_told &&
        call->nready == job->nmembers()) {
        agreed(*job, *call, h.mid);
    }
    settle();
}

void Aggregator::call_abort(Member &from, const ina_proto_hdr_t &h)
{
    // From a child agent (its leaf denied the call, or lost a member), or,
    // in a job of ranks, from a rank whose call is striped over several
    // agents one of which denied it (status ABORTED): either way nobody can
    // complete the call here any more.
    Job *job = nullptr;
    if (h.status == INA_PROTO_ERR_ABORTED) {
        job = member_job(from, h, "a CALL_ABORT for an unknown job");
        if (job != nullptr) {
            job->note_mid(h.rank, h.mid);
        }
    } else {
        job = child_job(from, h);
    }
    if (job == nullptr) {
        return;
    }
    ++counters_.abort_in;
    const auto st = static_cast<ina_proto_status_t>(h.status);
    Call *call = job->find_call(h.mid);
    if (!job->children() && (call == nullptr || !call->finished)) {
        ++counters_.stripe_aborts; // ended here by the first member's word
        ++job->stats().stripe_aborts;
    }
    if (call == nullptr) {
        job->retire();
        if (job->is_retired(h.mid)) {
            return;
        }
        // Denied before any other member got here: they learn it at once
        // (or, opening later, at their first message of it).
        call = &start_call(*job, h);
        call->total = 0;
        deny(*job, *call, h.mid, st);
    } else if (!call->finished) {
        INA_INFO("job %u mid %" PRIu64 ": %s %u aborted the call (%s)", job->jid(), h.mid,
                 job->children() ? "child" : "rank", h.rank, ina_proto_status_name(st));
        abort_call(*job, h.mid, *call, st != INA_PROTO_OK ? st : INA_PROTO_ERR_NO_RESOURCES,
                   job->children() ? "a child agent aborted the call"
                                   : "a member gave the call back (another agent of its "
                                     "stripe denied it)",
                   // Granted: a leaf that lost a member of its own in the
                   // middle of the call.
                   kAbortTellParent | (job->children() ? kAbortInFlight : 0u));
    }
    settle();
}

// ---------------------------------------------------------------- leaf side

void Aggregator::send_up(Job &job, Call &call, const ina_proto_hdr_t &blk, uint32_t seg)
{
    uint32_t offset = 0;
    uint32_t count = 0;
    const bool one_range = pool_.covered(seg, offset, count);
    const bool want = pool_.wanted(seg) > 0;
    const uint32_t buf = pool_.take_result(seg);
    BufRef ref = buf != kNoIndex ? BufRef(pool_.buffers(), buf) : BufRef();
    if (!one_range) {
        // The parent takes one piece per child and block: the members of a
        // leaf must hold one range of an ALLGATHER (the component orders
        // ranks so, docs/HIERARCHY.md).
        abort_call(job, blk.mid, call, INA_PROTO_ERR_MISMATCH,
                   "this leaf's members' pieces of an allgather block are not one range",
                   kAbortTellParent);
        return;
    }
    const size_t esz = ina_proto_dtype_size(blk.dtype);
    Partial p;
    p.hdr = blk;
    p.hdr.done = static_cast<uint32_t>(job.certified()); // the leaf's word for its members
    p.hdr.offset = offset;
    p.hdr.count = count;
    p.hdr.flags = want ? INA_PROTO_F_WANT_RESULT : 0;
    p.buf = std::move(ref);
    p.offset = static_cast<size_t>(offset) * esz;
    p.len = static_cast<size_t>(count) * esz;
    call.up_pending[blk.sid % call.lease.size()] = uint64_t{blk.sid} + 1;
    call.up_wait.push_back(std::move(p));
    flush_up(job, call);
    if (!call.up_wait.empty() && call.up_wait.back().hdr.sid == blk.sid) {
        // Its slot at the parent is still busy: counted, and timed until
        // a RESULT frees the slot.
        call.up_wait.back().waited = true;
        call.up_wait.back().since = Clock::now();
        ++counters_.partials_waited;
    }
}

void Aggregator::flush_up(Job &job, Call &call)
{
    const uint32_t w = job.up_window();
    auto &wait = call.up_wait;
    for (size_t i = 0; i < wait.size();) {
        const uint32_t sid = wait[i].hdr.sid;
        if (call.up_next[sid % w] != sid) {
            ++i; // the parent's slot still holds an older block of ours
            continue;
        }
        // A second reference, not wait[i] itself: if the uplink cannot queue
        // it (std::bad_alloc, which the agent survives), the partial stays
        // whole for the next flush instead of going out later without data.
        const Partial &w = wait[i];
        uplink_->partial(job, Partial{w.hdr, w.buf.share(), w.offset, w.len, {}, false});
        ++counters_.partials_up;
        if (w.waited) {
            counters_.partial_wait_ns += static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - w.since)
                    .count());
        }
        wait.erase(wait.begin() + static_cast<std::ptrdiff_t>(i));
    }
}

void Aggregator::uplink_opened(uint32_t jid, ina_proto_status_t st, uint32_t parent_window)
{
    auto it = jobs_.find(jid);
    if (it == jobs_.end() || it->second->up_state() != Job::UpState::kOpening) {
        return;
    }
    Job &job = *it->second;
    if (st == INA_PROTO_OK && parent_window > 0) {
        job.set_up_state(Job::UpState::kOpen, parent_window);
    } else {
        INA_WARN("job %u: the parent agent refused its job (%s): its calls are denied", jid,
                 ina_proto_status_name(st));
        job.set_up_state(Job::UpState::kFailed);
    }
    lease_back_ = true; // calls waiting for it: ask again now
    settle();
}

void Aggregator::uplink_decision(uint32_t jid, uint64_t mid, bool grant, ina_proto_status_t st)
{
    auto it = jobs_.find(jid);
    if (it == jobs_.end()) {
        return;
    }
    Job &job = *it->second;
    Call *call = job.find_call(mid);
    if (grant) {
        // The parent granted only once every leaf said CALL_READY: every leaf
        // holds its lease, and every member of every leaf hears this same
        // verdict. The members may go.
        if (call != nullptr && call->granted && !call->finished && !call->grant_told) {
            tell_grant(job, *call, mid);
        }
        return;
    }
    if (call == nullptr) {
        job.retire();
        if (job.is_retired(mid)) {
            return;
        }
        // Denied at the parent before a member of ours got here.
        Call &c = job.add_call(mid);
        deny(job, c, mid, st, false);
    } else if (!call->finished) {
        end_call(jid, mid, *call); // our lease (or kept blocks) back
        deny(job, *call, mid, st, false);
    }
    settle();
}

void Aggregator::uplink_result(uint32_t jid, const ina_proto_hdr_t &h, const void *payload,
                               size_t len)
{
    auto it = jobs_.find(jid);
    Call *call = it == jobs_.end() ? nullptr : it->second->find_call(h.mid);
    if (call == nullptr || !call->granted || call->finished) {
        INA_DEBUG("job %u mid %" PRIu64 " sid %u: RESULT from the parent for no open call", jid,
                  h.mid, h.sid);
        return;
    }
    Job &job = *it->second;
    const uint32_t slot = h.sid % static_cast<uint32_t>(call->lease.size());
    const uint32_t seg = call->lease[slot];
    const size_t want_len = pool_.wanted(seg) > 0
                                ? static_cast<size_t>(h.block_elems) * ina_proto_dtype_size(h.dtype)
                                : 0;
    if (call->up_pending[slot] != uint64_t{h.sid} + 1 || h.coll != call->coll ||
        h.op != call->op || h.dtype != call->dtype || len != want_len) {
        abort_call(job, h.mid, *call, INA_PROTO_ERR_MALFORMED,
                   "the parent sent a RESULT that is not of a block this leaf sent",
                   kAbortTellParent);
        settle();
        return;
    }
    call->up_pending[slot] = 0;
    call->up_next[h.sid % job.up_window()] = uint64_t{h.sid} + job.up_window();
    call->grant_told = true; // a RESULT implies the GRANT
    tell_ahead(job, *call, h.mid);
    ++counters_.parent_results;
    BufRef result;
    if (len > 0) {
        result = BufRef(pool_.buffers(), pool_.buffers().get());
        std::memcpy(result.data(), payload, len);
    }
    ina_proto_hdr_t blk;
    ina_proto_init(&blk, INA_PROTO_BLOCK);
    blk.jid = jid;
    blk.mid = h.mid;
    blk.sid = h.sid;
    blk.seg = slot;
    blk.window = static_cast<uint16_t>(call->lease.size());
    blk.ahead = static_cast<uint16_t>(call->ahead);
    blk.coll = call->coll;
    blk.op = call->op;
    blk.dtype = call->dtype;
    blk.block_elems = h.block_elems;
    blk.count = h.block_elems;
    blk.arg = call->total;
    blk.done = h.done; // the parent's certified mark: the least over every leaf
    // The Seg's want bits stay until its next block, which no member sends
    // before this RESULT.
    fan_out(job, blk, seg, result, len);
    call->done += h.block_elems;
    if (call->done >= call->total) {
        end_call(jid, h.mid, *call);
    } else {
        flush_up(job, *call);
    }
    settle();
}

void Aggregator::uplink_error(uint32_t jid, uint64_t mid, ina_proto_status_t st, bool in_flight)
{
    auto it = jobs_.find(jid);
    Call *call = it == jobs_.end() ? nullptr : it->second->find_call(mid);
    if (call == nullptr || call->finished) {
        return;
    }
    INA_INFO("job %u mid %" PRIu64 ": the parent agent ended the call (%s)", jid, mid,
             ina_proto_status_name(st));
    // A part of the tree lost (a sibling leaf gone: NOT_MEMBER): another
    // leaf may hold results, so never a DENY here; a refused partial of
    // ours, before any GRANT, still falls back everywhere alike.
    const bool tree_loss = st == INA_PROTO_ERR_NOT_MEMBER || st == INA_PROTO_ERR_UPSTREAM;
    abort_call(*it->second, mid, *call, st, "the parent agent ended the call",
               (tree_loss ? kAbortNeverDeny : 0u) | (in_flight ? kAbortInFlight : 0u));
    settle();
}

bool Aggregator::is_child_agent(const Member &m) const
{
    return std::any_of(m.memberships_.begin(), m.memberships_.end(), [this](const auto &jr) {
        auto it = jobs_.find(jr.first);
        return it != jobs_.end() && it->second->children();
    });
}

void Aggregator::uplink_lost()
{
    uplink_up_ = false;
    for (auto &kv : jobs_) {
        Job &job = *kv.second;
        if (!job.uplinked() || job.up_state() == Job::UpState::kFailed) {
            continue;
        }
        job.set_up_state(Job::UpState::kFailed);
        for (uint64_t mid : job.open_calls()) {
            abort_call(job, mid, *job.find_call(mid), INA_PROTO_ERR_UPSTREAM,
                       "the parent agent is lost", kAbortNeverDeny | kAbortInFlight);
        }
    }
    lease_back_ = true; // deferred calls: denied now
    settle();
}

} // namespace ina::agg

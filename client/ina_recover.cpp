// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Recovering calls lost with their agent (docs/ARCHITECTURE.md, "Recovery
// from a lost agent"): the members of a job finish such a call among
// themselves, over the caller's point-to-point layer (ina_peer_ops_t), with
// the messages of common/ina_peer_proto.h (ASK, STATE, FETCH, DATA). Here
// the job's part: routing those messages to the calls being recovered
// (call_rescue.h, where the recovery itself is), answering for calls that
// completed, were denied or ended their recovery, and the calls' entry
// points (ina_call_recover_*).
#include <cstddef>
#include <cstring>

#include "ina_engine.h"
#include "ina_peer_proto.h"

namespace ina::client {

using peer::bitmap_bytes;
using peer::header;
using peer::message;
using peer::set_bit;

// ---------------------------------------------------------------- the job: serving

void Job::send_peer(uint32_t to, std::vector<uint8_t> msg)
{
    // Every message starts with a ina_peer_hdr_t: stamp this job's tag and channel in it.
    if (msg.size() >= sizeof(ina_peer_hdr_t)) {
        std::memcpy(msg.data() + offsetof(ina_peer_hdr_t, job), &peer_tag_, sizeof(peer_tag_));
        std::memcpy(msg.data() + offsetof(ina_peer_hdr_t, channel), &peers_.channel,
                    sizeof(peers_.channel));
    }
    if (client_ != nullptr && client_->on_progress_thread()) {
        outbox_.emplace_back(to, std::move(msg)); // the caller's thread sends it
        client_->peers_queued();
        return;
    }
    flush_peers(); // (in order: what waited goes first)
    if (peers_.send(peers_.arg, to, msg.data(), msg.size()) != 0 && client_ != nullptr) {
        client_->log(1, "job %u: recovery message to member %u not sent", jid(), to);
    }
}

void Job::flush_peers()
{
    while (!outbox_.empty()) {
        const auto m = std::move(outbox_.front());
        outbox_.pop_front();
        if (peers_.send(peers_.arg, m.first, m.second.data(), m.second.size()) != 0 &&
            client_ != nullptr) {
            client_->log(1, "job %u: recovery message to member %u not sent", jid(), m.first);
        }
    }
}

void Job::note_denied(uint64_t mid)
{
    if (has_peers()) {
        denied_[mid] = true;
        answer_waiting(mid);
    }
}

bool Job::answer(uint32_t to, uint64_t mid)
{
    std::vector<uint8_t> msg;
    if (auto r = rescuing_.find(mid); r != rescuing_.end()) {
        r->second->describe(msg);
    } else if (auto f = final_.find(mid); f != final_.end()) {
        msg = f->second; // a recovery that ended on the host (or failed): as it was
    } else if (denied_.count(mid) != 0) {
        ina_peer_hdr_t h = header(INA_PEER_STATE, mid);
        h.state = INA_PEER_DENIED;
        msg = message(h, nullptr, 0);
    } else if (const KeptCall *k = kept(mid)) {
        const size_t bm = bitmap_bytes(k->nblocks);
        std::vector<uint8_t> maps(3 * bm, 0);
        for (uint64_t j = 0; j < k->input.size(); ++j) {
            if (!k->result[j].empty()) {
                set_bit(maps.data(), k->first + j);
            }
            if (k->has_input(j)) {
                set_bit(maps.data() + bm, k->first + j);
            }
        }
        ina_peer_hdr_t h = header(INA_PEER_STATE, mid);
        h.state = INA_PEER_COMPLETE;
        h.nblocks = k->nblocks;
        h.len = static_cast<uint32_t>(maps.size());
        msg = message(h, maps.data(), maps.size());
    } else if (mid < certified_) {
        ina_peer_hdr_t h = header(INA_PEER_STATE, mid); // every member holds it: nothing to give
        h.state = INA_PEER_COMPLETE;
        msg = message(h, nullptr, 0);
    } else {
        return false; // not posted here yet, or still running
    }
    send_peer(to, msg);
    return true;
}

void Job::answer_waiting(uint64_t mid)
{
    auto it = asks_.find(mid);
    if (it == asks_.end()) {
        return;
    }
    std::vector<uint32_t> who;
    who.swap(it->second);
    asks_.erase(it);
    for (uint32_t to : who) {
        if (!answer(to, mid)) {
            asks_[mid].push_back(to);
        }
    }
}

void Job::rescuing(uint64_t mid, CallRescue *r)
{
    rescuing_[mid] = r;
    answer_waiting(mid);
}

void Job::rescued(uint64_t mid, std::vector<uint8_t> final_word)
{
    rescuing_.erase(mid);
    if (!final_word.empty()) {
        final_[mid] = std::move(final_word);
    }
    answer_waiting(mid);
}

bool Job::peer_message(uint32_t from, const void *msg, size_t len)
{
    ina_peer_hdr_t h;
    const ina_peer_check_t st = ina_peer_check(msg, len, &h);
    if (st == INA_PEER_CHECK_OK && (h.job != peer_tag_ || h.channel != peers_.channel)) {
        return false; // another job's (a node's other stream, or a job left since)
    }
    if (st != INA_PEER_CHECK_OK || from >= params_.nmembers) {
        if (client_ != nullptr) {
            client_->log(1, "job %u: dropping a %s recovery message from member %u", jid(),
                         st == INA_PEER_CHECK_VERSION ? "foreign-version (another ina build)"
                                                      : "malformed",
                         from);
        }
        return false;
    }
    switch (h.type) {
    case INA_PEER_ASK:
        if (!answer(from, h.mid)) {
            asks_[h.mid].push_back(from);
        }
        return true;
    case INA_PEER_FETCH: {
        if (auto r = rescuing_.find(h.mid); r != rescuing_.end()) {
            if (r->second->fetch_later(h.sid, h.what == INA_PEER_RESULT)) {
                r->second->defer_fetch(from, h.sid, h.what == INA_PEER_RESULT);
            } else {
                r->second->give_block(from, h.sid, h.what == INA_PEER_RESULT);
            }
            return true;
        }
        ina_peer_hdr_t d = header(INA_PEER_DATA, h.mid);
        d.sid = h.sid;
        d.what = h.what;
        std::vector<uint8_t> bytes;
        bool ok = false;
        if (const KeptCall *k = kept(h.mid); k != nullptr && h.sid >= k->first &&
                                             h.sid - k->first < k->input.size()) {
            const size_t j = static_cast<size_t>(h.sid - k->first);
            if (h.what == INA_PEER_RESULT) {
                ok = !k->result[j].empty();
                bytes = k->result[j];
                d.offset = 0;
                d.count = static_cast<uint32_t>(bytes.size() / ina_proto_dtype_size(k->dtype));
            } else {
                ok = k->has_input(j);
                bytes = k->input[j];
                d.offset = k->sent[j].offset;
                d.count = k->sent[j].count;
            }
        }
        d.len = ok ? static_cast<uint32_t>(bytes.size()) : INA_PEER_NONE;
        send_peer(from, message(d, bytes.data(), ok ? bytes.size() : 0));
        return true;
    }
    case INA_PEER_STATE:
    case INA_PEER_DATA:
        if (auto r = rescuing_.find(h.mid); r != rescuing_.end()) {
            r->second->on_peer(from, msg, len);
        } else if (client_ != nullptr) {
            client_->log(1, "job %u: recovery answer for mid %llu, which is not recovering",
                         jid(), static_cast<unsigned long long>(h.mid));
        }
        return true;
    default:
        return true;
    }
}

// ---------------------------------------------------------------- the call's entry points

int Call::recover_start(bool host_ok)
{
    if (!job_->has_peers() || state_ != State::retired || fail_ != Fail::lost || rescue_) {
        return INA_ERR_INVALID;
    }
    rescue_ = std::make_unique<CallRescue>(*this, host_ok);
    rescue_->start();
    return INA_OK;
}

bool Call::recover_test(ina_cqe_t *cqe)
{
    return rescue_ && rescue_->test(cqe);
}

bool Call::recover_decision(ina_cqe_t *cqe)
{
    return rescue_ && rescue_->decision(cqe);
}

void Call::rescue_abandon()
{
    if (rescue_) {
        rescue_->abandon();
    }
}

bool Call::struck() const
{
    return any_sent_ && (status_ == INA_PROTO_OK || (ended_in_flight_ && job_->part_lost(status_)));
}

// ---------------------------------------------------------------- a member without the job

uint32_t peer_tag_of(const ina_job_key_t &key)
{
    uint32_t tag = 0;
    std::memcpy(&tag, key.cap, sizeof(tag));
    return tag;
}

bool answer_absent(uint32_t tag, const ina_peer_ops_t &ops, uint32_t from, const void *msg,
                   size_t len)
{
    ina_peer_hdr_t h;
    if (ina_peer_check(msg, len, &h) != INA_PEER_CHECK_OK || h.job != tag) {
        return false;
    }
    if (h.type != INA_PEER_ASK) {
        return true; // nothing else is asked of a member that never had the job
    }
    ina_peer_hdr_t a = header(INA_PEER_STATE, h.mid);
    a.state = INA_PEER_DENIED;
    a.job = tag;
    a.channel = h.channel;
    const std::vector<uint8_t> m = message(a, nullptr, 0);
    (void) ops.send(ops.arg, from, m.data(), m.size());
    return true;
}

} // namespace ina::client

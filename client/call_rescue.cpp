// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A call's recovery with the other members (call_rescue.h), over the
// caller's point-to-point layer (ina_peer_ops_t), with the messages of
// common/ina_peer_proto.h (ASK, STATE, FETCH, DATA).
//
// From the STATEs every member decides alike: denied anywhere, the host
// algorithm; nothing held anywhere and every member able to, the host
// algorithm; else each lacking block comes from a member that holds it (the
// fetches spread over the holders), or, held nowhere, is rebuilt by one of
// the members that lack it, from every member's BLOCK in rank order with
// the agent's kernels (so its bits are the agent's), and the others fetch
// its RESULT from that one. The rebuilds take turns over those members, as
// a reduce-scatter then an allgather would: each member takes in about
// 2(n-1)/n of the lost blocks, not n-1 times all of them.
#include "call_rescue.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>

#include "ina_engine.h"
#include "ina_reduce.h"

namespace ina::client {

using peer::bit;
using peer::bitmap_bytes;
using peer::header;
using peer::message;
using peer::set_bit;

std::vector<uint8_t> peer::message(const ina_peer_hdr_t &h, const void *payload, size_t len)
{
    std::vector<uint8_t> m(sizeof(h) + len);
    std::memcpy(m.data(), &h, sizeof(h));
    if (len > 0) {
        std::memcpy(m.data() + sizeof(h), payload, len);
    }
    return m;
}

namespace {

constexpr uint32_t kNone = UINT32_MAX; // no member, no block

bool recoverable(unsigned coll)
{
    return coll < INA_COLL_COUNT;
}

// Reduce the pieces of `members` (ascending) into out (cnt elements, `bytes`
// bytes) as the agents fold them: at level 0 the members in order; above,
// the members of each agent of the level below (a leaf, a spine...) folded
// on their own, then those partials in the order of the agents' numbers
// (numbered by first member, as the agents number their children).
// `groups`: level-major, groups[l * n + member] = its agent l steps above
// its leaf.
void fold_level(unsigned op, unsigned dtype, const std::vector<uint32_t> &groups, size_t n,
                uint32_t level, const std::vector<uint32_t> &members,
                const std::vector<CallRescue::Piece> &pieces, uint32_t cnt, size_t bytes,
                std::vector<uint8_t> &out)
{
    if (level == 0) {
        const auto &head = pieces[members.front()].bytes;
        out.assign(head.begin(), head.begin() + static_cast<std::ptrdiff_t>(bytes));
        for (size_t i = 1; i < members.size(); ++i) {
            ina_reduce(op, dtype, out.data(), pieces[members[i]].bytes.data(), cnt);
        }
        return;
    }
    std::map<uint32_t, std::vector<uint32_t>> below; // agent of level - 1 -> its members
    for (uint32_t m : members) {
        below[groups[(level - 1) * n + m]].push_back(m);
    }
    std::vector<uint8_t> part;
    bool first = true;
    for (const auto &kv : below) {
        fold_level(op, dtype, groups, n, level - 1, kv.second, pieces, cnt, bytes,
                   first ? out : part);
        if (!first) {
            ina_reduce(op, dtype, out.data(), part.data(), cnt);
        }
        first = false;
    }
}

// Reduce every member's piece of a block into acc as the agents fold it
// (fold_level; `groups` as Job::groups(), empty: one agent, the members in
// order).
void fold_pieces(unsigned op, unsigned dtype, const std::vector<uint32_t> &groups,
                 const std::vector<CallRescue::Piece> &pieces, uint32_t cnt,
                 std::vector<uint8_t> &acc)
{
    const size_t n = pieces.size();
    const auto levels = static_cast<uint32_t>(
        n != 0 && groups.size() % n == 0 ? groups.size() / n : 0);
    std::vector<uint32_t> all(n);
    std::iota(all.begin(), all.end(), 0u);
    fold_level(op, dtype, groups, n, levels, all, pieces, cnt, acc.size(), acc);
}

} // namespace

CallRescue::CallRescue(Call &call, bool host_ok)
    : call_(call), job_(*call.job()), data_(call.data()), host_ok_(host_ok), n_(job_.nmembers()),
      me_(job_.comm_rank()), // a tree's job: its members are the communicator's
      state_(n_, 0), host_(n_, 0), r_(n_), i_(n_), l_(n_)
{
}

const CallGeometry &CallRescue::geom() const
{
    return call_.geometry();
}

size_t CallRescue::esz() const
{
    return call_.elem_size();
}

// ---------------------------------------------------------------- this member's word

void CallRescue::describe(std::vector<uint8_t> &msg) const
{
    const uint64_t n = geom().nblocks();
    const size_t bm = bitmap_bytes(n);
    std::vector<uint8_t> maps(3 * bm, 0);
    ina_peer_hdr_t h = header(INA_PEER_STATE, call_.mid());
    h.nblocks = n;
    h.flags = static_cast<uint8_t>((host_ok_ ? INA_PEER_F_HOST_OK : 0) |
                                   (call_.struck() ? INA_PEER_F_STRUCK : 0));
    h.state =
        recoverable(call_.coll()) && data_.recoverable() ? INA_PEER_FAILED : INA_PEER_UNRECOVERABLE;
    for (uint64_t sid = 0; sid < n && h.state == INA_PEER_FAILED; ++sid) {
        if (data_.holds_result(sid) || held_.count(sid) != 0) {
            set_bit(maps.data(), sid);
        }
        if (data_.has_input(sid)) {
            set_bit(maps.data() + bm, sid);
        }
        if (!call_.got(sid) && data_.wants_result(sid)) {
            set_bit(maps.data() + 2 * bm, sid);
        }
    }
    h.len = static_cast<uint32_t>(maps.size());
    msg = message(h, maps.data(), maps.size());
}

bool CallRescue::block_for_peer(uint64_t sid, bool result, std::vector<uint8_t> &bytes,
                                uint32_t *offset, uint32_t *count) const
{
    if (sid >= geom().nblocks()) {
        return false;
    }
    if (result) {
        if (auto h = held_.find(sid); h != held_.end()) {
            *offset = 0;
            *count = geom().block_count(sid);
            bytes = h->second;
            return true;
        }
    }
    return data_.block_for_peer(sid, result, bytes, offset, count);
}

void CallRescue::start()
{
    if (Client *c = job_.client()) {
        c->log(5,
               "job %u mid %llu: the agent is lost; recovering the call with the other %u "
               "members",
               job_.jid(), static_cast<unsigned long long>(call_.mid()), n_ - 1);
    }
    job_.rescuing(call_.mid(), this);
    // Our own word first, then everybody else's.
    std::vector<uint8_t> mine;
    describe(mine);
    on_peer(me_, mine.data(), mine.size());
    const std::vector<uint8_t> ask = message(header(INA_PEER_ASK, call_.mid()), nullptr, 0);
    for (uint32_t to = 0; to < n_; ++to) {
        if (to != me_) {
            job_.send_peer(to, ask);
        }
    }
}

void CallRescue::on_peer(uint32_t from, const void *msg, size_t len)
{
    if (done_) {
        return;
    }
    ina_peer_hdr_t h;
    std::memcpy(&h, msg, sizeof(h));
    const auto *payload = static_cast<const uint8_t *>(msg) + sizeof(h);
    if (h.type == INA_PEER_STATE) {
        if (state_[from] != 0) {
            return;
        }
        state_[from] = h.state;
        host_[from] = (h.flags & INA_PEER_F_HOST_OK) != 0;
        struck_ = struck_ || (h.flags & INA_PEER_F_STRUCK) != 0;
        const uint64_t n = geom().nblocks();
        const size_t bm = bitmap_bytes(n);
        if ((h.state == INA_PEER_COMPLETE || h.state == INA_PEER_FAILED) && h.len == 3 * bm &&
            h.nblocks == n) {
            r_[from].assign(payload, payload + bm);
            i_[from].assign(payload + bm, payload + 2 * bm);
            l_[from].assign(payload + 2 * bm, payload + 3 * bm);
        } else if (h.state == INA_PEER_COMPLETE || h.state == INA_PEER_FAILED) {
            r_[from].assign(bm, 0); // holds nothing it can give (certified, or none kept)
            i_[from].assign(bm, 0);
            l_[from].assign(bm, 0);
        }
        if (++states_in_ == n_) {
            plan();
        }
        return;
    }
    // DATA, of a FETCH this member sent.
    if (!planned_ || pending_ == 0) {
        return;
    }
    --pending_;
    auto rb = rebuild_.find(h.sid);
    if (h.len == INA_PEER_NONE) {
        decision_.rc = INA_ERR_LOST; // a member could not give what its STATE offered
        if (Client *c = job_.client()) {
            c->log(5, "job %u mid %llu: member %u could not give block %u's %s", job_.jid(),
                   static_cast<unsigned long long>(call_.mid()), from, h.sid,
                   h.what == INA_PEER_RESULT ? "result" : "input");
        }
    } else if (h.what == INA_PEER_RESULT) {
        if (h.sid < geom().nblocks() &&
            h.len == static_cast<size_t>(geom().block_count(h.sid)) * esz()) {
            if (data_.place_result(h.sid, payload)) {
                call_.mark_got(h.sid);
            }
            hold(h.sid, payload);
        } else {
            decision_.rc = INA_ERR_LOST;
            log("member %u gave block %u's result with %u bytes", from, h.sid, h.len);
        }
    } else if (rb != rebuild_.end() && from < rb->second.size()) {
        Piece &p = rb->second[from];
        p.in = true;
        p.offset = h.offset;
        p.count = h.count;
        p.bytes.assign(payload, payload + h.len);
        rebuild(h.sid); // as soon as it can: others (and the caller's next blocks) wait on it
    } else {
        decision_.rc = INA_ERR_LOST;
        log("member %u gave block %u's input, which nobody asked it for", from, h.sid);
    }
    if (data_.caller_produces()) {
        produce();
    } else if (pending_ == 0) {
        finish();
    }
}

void CallRescue::log(const char *fmt, ...) const
{
    Client *c = job_.client();
    if (c == nullptr) {
        return;
    }
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    c->log(5, "job %u mid %llu: recovery: %s", job_.jid(),
           static_cast<unsigned long long>(call_.mid()), line);
}

void CallRescue::plan()
{
    planned_ = true;
    decision_ = call_.cqe();
    decision_.rc = INA_OK;
    decision_.outcome = INA_OFFLOADED;
    bool denied = false, broken = false, anything = false, all_host = true;
    for (uint32_t j = 0; j < n_; ++j) {
        denied = denied || state_[j] == INA_PEER_DENIED;
        broken = broken || state_[j] == INA_PEER_UNRECOVERABLE;
        all_host = all_host && host_[j] != 0 && state_[j] == INA_PEER_FAILED;
        for (uint8_t b : r_[j]) {
            anything = anything || b != 0;
        }
        anything = anything || state_[j] == INA_PEER_COMPLETE;
    }
    // Nothing held anywhere: a call posted after the loss goes to the host.
    // One the agent had begun (struck in flight) is rebuilt among the
    // members when every input is still there: its result then has the
    // agent's bits whatever moment the loss came at, and the members move
    // 2(n-1)/n of it each, as a host allreduce would.
    bool rebuild_all = struck_;
    for (uint32_t j = 0; j < n_ && rebuild_all; ++j) {
        for (uint64_t sid = 0; sid < geom().nblocks() && rebuild_all; ++sid) {
            rebuild_all = !i_[j].empty() && bit(i_[j].data(), sid);
            if (!rebuild_all && !anything) {
                log("nothing held; struck in flight, but member %u cannot give block "
                    "%llu's input",
                    j, static_cast<unsigned long long>(sid));
            }
        }
    }
    if (!anything && !struck_) {
        log("nothing held, and no member's BLOCKs were at the agent when it was lost");
    }
    if (denied || broken || (!anything && all_host && !rebuild_all)) {
        for (uint32_t j = 0; j < n_ && broken; ++j) {
            if (state_[j] == INA_PEER_UNRECOVERABLE) {
                log("member %u kept nothing to recover it from", j);
            }
        }
        decision_.rc = broken && !denied ? INA_ERR_LOST : INA_OK;
        decision_.outcome = denied ? INA_FALLBACK_DENIED : INA_FALLBACK_UNREACHABLE;
        pending_ = 0;
        finish();
        return;
    }
    // Each block this member lacks comes from a member that holds it whole
    // (the fetches spread over the holders), or, held nowhere, is reduced
    // (or placed) from every member's BLOCK in the agents' order by one of
    // the members that lack it (taking turns block by block), and the
    // others fetch its RESULT from that one, which answers once it has it
    // (rebuild, as the BLOCKs come; staged, this member's own BLOCK of a
    // block not produced yet joins when it is: produce). Every member picks
    // the same rebuilder: a member that got a block in the recovery says it
    // holds it (hold), so the members that lack a block held nowhere look
    // alike from every member.
    const uint64_t n = geom().nblocks();
    std::vector<uint32_t> who;
    for (uint64_t sid = 0; sid < n; ++sid) {
        if (data_.nothing_to_deliver(sid)) {
            call_.mark_got(sid); // BARRIER's empty block: everybody got here
        }
        if (call_.got(sid) || !data_.wants_result(sid)) {
            continue; // here already, or this member wants no payload of it
        }
        uint32_t from = kNone; // where its RESULT comes from
        who.clear();
        for (uint32_t j = 0; j < n_; ++j) {
            if (j != me_ && !r_[j].empty() && bit(r_[j].data(), sid)) {
                who.push_back(j); // holds it
            }
        }
        if (!who.empty()) {
            from = who[(me_ + sid) % who.size()];
        } else {
            for (uint32_t j = 0; j < n_; ++j) {
                if (state_[j] == INA_PEER_FAILED && !l_[j].empty() && bit(l_[j].data(), sid)) {
                    who.push_back(j); // lacks it, as this member does
                }
            }
            const uint32_t builder = who.empty() ? me_ : who[sid % who.size()];
            from = builder != me_ ? builder : kNone;
        }
        ina_peer_hdr_t f = header(INA_PEER_FETCH, call_.mid());
        f.sid = static_cast<uint32_t>(sid);
        if (from != kNone) {
            f.what = INA_PEER_RESULT;
            job_.send_peer(from, message(f, nullptr, 0));
            ++pending_;
            continue;
        }
        auto &pieces = rebuild_[sid];
        pieces.assign(n_, {});
        f.what = INA_PEER_INPUT;
        for (uint32_t j = 0; j < n_; ++j) {
            if (j == me_ && sid < data_.produced()) {
                Piece &p = pieces[j];
                p.in = block_for_peer(sid, false, p.bytes, &p.offset, &p.count);
                if (!p.in) {
                    decision_.rc = INA_ERR_LOST;
                    log("block %llu: nobody holds it and this member's input is gone",
                        static_cast<unsigned long long>(sid));
                }
            } else if (j == me_) {
                // produced later (produce)
            } else if (i_[j].empty() || !bit(i_[j].data(), sid)) {
                decision_.rc = INA_ERR_LOST; // its input is gone: nobody can rebuild the block
                log("block %llu: nobody holds it and member %u (state %u) cannot give "
                    "its input",
                    static_cast<unsigned long long>(sid), j, state_[j]);
            } else {
                job_.send_peer(j, message(f, nullptr, 0));
                ++pending_;
            }
        }
    }
    for (auto it = rebuild_.begin(); it != rebuild_.end();) {
        const uint64_t sid = it++->first; // rebuild may erase it
        rebuild(sid);
    }
    if (data_.caller_produces()) {
        produce();
    } else if (pending_ == 0) {
        finish();
    }
}

bool CallRescue::fetch_later(uint64_t sid, bool result) const
{
    if (done_ || sid >= geom().nblocks()) {
        return false;
    }
    if (!result) {
        return sid >= data_.produced();
    }
    return !call_.got(sid) && data_.wants_result(sid);
}

void CallRescue::defer_fetch(uint32_t from, uint64_t sid, bool result)
{
    deferred_.push_back(Deferred{from, sid, result});
}

void CallRescue::give_block(uint32_t to, uint64_t sid, bool result) const
{
    ina_peer_hdr_t d = header(INA_PEER_DATA, call_.mid());
    d.sid = static_cast<uint32_t>(sid);
    d.what = result ? INA_PEER_RESULT : INA_PEER_INPUT;
    std::vector<uint8_t> bytes;
    const bool ok = block_for_peer(sid, result, bytes, &d.offset, &d.count);
    d.len = ok ? static_cast<uint32_t>(bytes.size()) : INA_PEER_NONE;
    job_.send_peer(to, message(d, bytes.data(), ok ? bytes.size() : 0));
}

void CallRescue::answer_deferred(uint64_t sid, bool result, bool all)
{
    for (auto it = deferred_.begin(); it != deferred_.end();) {
        if (all || (it->sid == sid && it->result == result)) {
            give_block(it->from, it->sid, it->result);
            it = deferred_.erase(it);
        } else {
            ++it;
        }
    }
}

void CallRescue::hold(uint64_t sid, const uint8_t *data)
{
    if (!call_.got(sid)) {
        return;
    }
    // Kept only where another member lacks it (so may fetch it from here)
    // and the caller's buffer does not hold it whole.
    bool others = false;
    for (uint32_t j = 0; j < n_ && !others; ++j) {
        others = j != me_ && !l_[j].empty() && bit(l_[j].data(), sid);
    }
    if (others && data_.result_in_place(sid) == nullptr) {
        held_[sid].assign(data, data + static_cast<size_t>(geom().block_count(sid)) * esz());
    }
    answer_deferred(sid, true);
}

void CallRescue::rebuild(uint64_t sid)
{
    auto rb = rebuild_.find(sid);
    if (rb == rebuild_.end()) {
        return;
    }
    for (const Piece &p : rb->second) {
        if (!p.in) {
            return; // a member's BLOCK still to come
        }
    }
    const uint32_t cnt = geom().block_count(sid);
    std::vector<uint8_t> acc(static_cast<size_t>(cnt) * esz(), 0);
    const bool reduce = call_.coll() == INA_COLL_ALLREDUCE || call_.coll() == INA_COLL_REDUCE ||
                        call_.coll() == INA_COLL_REDUCE_SCATTER;
    for (const Piece &p : rb->second) {
        const size_t bytes = static_cast<size_t>(p.count) * esz();
        if (static_cast<uint64_t>(p.offset) + p.count > cnt || p.bytes.size() != bytes ||
            (reduce && p.count != cnt)) {
            decision_.rc = INA_ERR_LOST;
            log("block %llu: a member's BLOCK does not fit it (offset %u, count %u of %u)",
                static_cast<unsigned long long>(sid), p.offset, p.count, cnt);
            rebuild_.erase(rb);
            return;
        }
        if (!reduce && bytes > 0) {
            std::memcpy(acc.data() + static_cast<size_t>(p.offset) * esz(), p.bytes.data(), bytes);
        }
    }
    if (reduce) {
        fold_pieces(call_.op(), call_.dtype(), job_.groups(), rb->second, cnt, acc);
    }
    rebuild_.erase(rb);
    if (data_.place_result(sid, acc.data())) {
        call_.mark_got(sid);
    }
    hold(sid, acc.data());
}

void CallRescue::produce()
{
    if (done_) {
        return;
    }
    const uint64_t n = geom().nblocks();
    while (data_.produced() < n && decision_.rc == INA_OK) {
        const uint64_t sid = data_.produced();
        const CallData::Next next = data_.produce(sid);
        if (next == CallData::Next::not_ready) {
            break; // the caller's next block is not ready yet
        }
        if (next == CallData::Next::refused) {
            decision_.rc = INA_ERR_PROTO;
            log("block %llu as the caller produced it does not fit the call",
                static_cast<unsigned long long>(sid));
            break;
        }
        answer_deferred(sid, false);
        if (auto rb = rebuild_.find(sid); planned_ && rb != rebuild_.end()) {
            Piece &p = rb->second[me_];
            p.in = block_for_peer(sid, false, p.bytes, &p.offset, &p.count);
            rebuild(sid);
        }
    }
    if (planned_ && !done_ && (decision_.rc != INA_OK || (pending_ == 0 && call_.got_all()))) {
        finish();
    }
}

void CallRescue::abandon()
{
    if (done_) {
        return;
    }
    for (const Deferred &f : deferred_) {
        ina_peer_hdr_t d = header(INA_PEER_DATA, call_.mid());
        d.sid = static_cast<uint32_t>(f.sid);
        d.what = f.result ? INA_PEER_RESULT : INA_PEER_INPUT;
        d.len = INA_PEER_NONE;
        job_.send_peer(f.from, message(d, nullptr, 0));
    }
    deferred_.clear();
    planned_ = true;
    decision_.rc = INA_ERR_LOST;
    log("abandoned: the caller runs the host algorithm instead");
    finish();
}

bool CallRescue::decision(ina_cqe_t *cqe) const
{
    if (!planned_) {
        return false;
    }
    *cqe = done_ ? call_.cqe() : decision_;
    return true;
}

void CallRescue::finish()
{
    std::vector<uint8_t> final_word;
    if (decision_.rc == INA_OK && !rebuild_.empty()) {
        decision_.rc = INA_ERR_LOST; // (every BLOCK came, so every rebuild ran)
        log("block %llu was never rebuilt",
            static_cast<unsigned long long>(rebuild_.begin()->first));
    }
    answer_deferred(0, false, true); // what it can give; a failed call cannot
    if (decision_.rc == INA_OK && decision_.outcome == INA_OFFLOADED) {
        // Keep what a slower member may still ask for: every block some
        // member lacked, as this member can give it now.
        const uint64_t n = geom().nblocks();
        uint64_t lo = n, hi = 0;
        for (uint32_t j = 0; j < n_; ++j) {
            for (uint64_t sid = 0; sid < n && !l_[j].empty(); ++sid) {
                if (bit(l_[j].data(), sid) || rebuild_.count(sid) != 0) {
                    lo = std::min(lo, sid);
                    hi = std::max(hi, sid);
                }
            }
        }
        KeptCall k;
        k.mid = call_.mid();
        k.coll = call_.coll();
        k.op = call_.op();
        k.dtype = call_.dtype();
        k.nblocks = n;
        k.first = lo <= hi ? lo : n;
        for (uint64_t sid = k.first; sid < n && sid <= hi; ++sid) {
            auto h = held_.find(sid); // rebuilt or fetched in the recovery
            data_.keep_recovered(sid, h != held_.end() ? &h->second : nullptr, k);
        }
        job_.keep(std::move(k));
        call_.recovered(INA_OK, INA_OFFLOADED);
    } else {
        // Members that ask later must decide alike: they get this word.
        describe(final_word);
        call_.recovered(decision_.rc, decision_.outcome);
    }
    done_ = true;
    if (Client *c = job_.client()) {
        const ina_cqe_t &cqe = call_.cqe();
        c->log(5, "job %u mid %llu: recovered with the other members: %s", job_.jid(),
               static_cast<unsigned long long>(call_.mid()),
               cqe.rc != INA_OK                     ? "cannot be (the call fails)"
               : cqe.outcome == INA_OFFLOADED       ? "every block in place"
               : cqe.outcome == INA_FALLBACK_DENIED ? "denied somewhere: host algorithm"
                                                    : "nothing held anywhere: host algorithm");
    }
    job_.rescued(call_.mid(), std::move(final_word));
}

bool CallRescue::test(ina_cqe_t *cqe)
{
    if (data_.caller_produces() && !done_) {
        produce();
    }
    if (done_) {
        *cqe = call_.cqe();
        return true;
    }
    return false;
}

} // namespace ina::client

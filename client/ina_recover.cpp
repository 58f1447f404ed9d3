// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Recovering calls lost with their agent (docs/ARCHITECTURE.md, "Recovery
// from a lost agent"): the members of a job finish such a call among
// themselves, over the caller's point-to-point layer (ina_peer_ops_t), with
// the messages of common/ina_peer_proto.h (ASK, STATE, FETCH, DATA).
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
#include <algorithm>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "ina_engine.h"
#include "ina_peer_proto.h"
#include "ina_reduce.h"

namespace ina::client {

namespace {

constexpr uint32_t kNone = UINT32_MAX; // no member, no block

size_t bitmap_bytes(uint64_t n) { return static_cast<size_t>((n + 7) / 8); }
bool bit(const uint8_t *m, uint64_t i) { return (m[i / 8] >> (i % 8)) & 1u; }
void set_bit(uint8_t *m, uint64_t i) { m[i / 8] = static_cast<uint8_t>(m[i / 8] | (1u << (i % 8))); }

std::vector<uint8_t> message(const ina_peer_hdr_t &h, const void *payload, size_t len)
{
    std::vector<uint8_t> m(sizeof(h) + len);
    std::memcpy(m.data(), &h, sizeof(h));
    if (len > 0) {
        std::memcpy(m.data() + sizeof(h), payload, len);
    }
    return m;
}

ina_peer_hdr_t header(ina_peer_type_t type, uint64_t mid)
{
    ina_peer_hdr_t h;
    ina_peer_init(&h, type, mid);
    return h;
}

bool recoverable(unsigned coll) { return coll < INA_COLL_COUNT; }

struct RescuePiece {
    bool in = false;
    uint32_t offset = 0, count = 0;
    std::vector<uint8_t> bytes;
};

// Reduce every member's piece of a block (cnt elements) into acc as the
// agents fold it: each group's (a tree's leaf's) members in order, then the
// groups' partials in order; without groups, the members in order.
void fold_pieces(unsigned op, unsigned dtype, const std::vector<uint32_t> &group,
                 const std::vector<RescuePiece> &pieces, uint32_t cnt, std::vector<uint8_t> &acc)
{
    const uint32_t ngroups =
        group.size() != pieces.size() ? 1 : 1 + *std::max_element(group.begin(), group.end());
    std::vector<uint8_t> part(acc.size());
    bool any = false;
    for (uint32_t g = 0; g < ngroups; ++g) {
        bool first = true;
        for (size_t j = 0; j < pieces.size(); ++j) {
            if ((ngroups == 1 ? 0 : group[j]) != g) {
                continue;
            }
            if (first) {
                std::memcpy(part.data(), pieces[j].bytes.data(), part.size());
            } else {
                ina_reduce(op, dtype, part.data(), pieces[j].bytes.data(), cnt);
            }
            first = false;
        }
        if (first) {
            continue; // a group without members
        }
        if (!any) {
            acc.swap(part);
            part.resize(acc.size());
        } else {
            ina_reduce(op, dtype, acc.data(), part.data(), cnt);
        }
        any = true;
    }
}

} // namespace

// A call's recovery, at the member whose call it is.
struct Call::Rescue {
    bool host_ok = false;
    uint32_t n = 0, me = 0;
    uint32_t states_in = 0;
    std::vector<uint8_t> state;              // per member: PeerState (0: not heard)
    std::vector<uint8_t> host;               // per member: its host_ok
    bool struck = false;                      // some member had sent BLOCKs
    std::vector<std::vector<uint8_t>> r, i, l; // per member: the bitmaps
    bool planned = false;
    uint32_t pending = 0;                     // DATAs awaited
    // Blocks reduced here: sid -> per member its BLOCK (offset, count, bytes).
    using Piece = RescuePiece;
    std::map<uint64_t, std::vector<Piece>> rebuild;
    // RESULTs got in the recovery that other members will fetch from here,
    // where the caller's buffer does not have them whole (rescue_hold).
    std::map<uint64_t, std::vector<uint8_t>> held;
    bool done = false;
    ina_cqe_t cqe{};
};

Call::~Call() = default;

void Call::RescueDelete::operator()(Rescue *r) const { delete r; }

// ---------------------------------------------------------------- this member's word

bool Call::struck() const
{
    return any_sent_ && (status_ == INA_PROTO_OK || (ended_in_flight_ && job_->part_lost(status_)));
}

void Call::describe(std::vector<uint8_t> &msg) const
{
    const uint64_t n = geom_.nblocks();
    const size_t bm = bitmap_bytes(n);
    std::vector<uint8_t> maps(3 * bm, 0);
    ina_peer_hdr_t h = header(INA_PEER_STATE, mid_);
    h.nblocks = n;
    h.flags = static_cast<uint8_t>((rescue_ != nullptr && rescue_->host_ok ? INA_PEER_F_HOST_OK : 0) |
                                   (struck() ? INA_PEER_F_STRUCK : 0));
    h.state =
        recoverable(tmpl_.coll) && data_->recoverable() ? INA_PEER_FAILED : INA_PEER_UNRECOVERABLE;
    for (uint64_t sid = 0; sid < n && h.state == INA_PEER_FAILED; ++sid) {
        if (data_->holds_result(sid) || (rescue_ != nullptr && rescue_->held.count(sid) != 0)) {
            set_bit(maps.data(), sid);
        }
        if (data_->has_input(sid)) {
            set_bit(maps.data() + bm, sid);
        }
        if (!got(sid) && data_->wants_result(sid)) {
            set_bit(maps.data() + 2 * bm, sid);
        }
    }
    h.len = static_cast<uint32_t>(maps.size());
    msg = message(h, maps.data(), maps.size());
}

bool Call::block_for_peer(uint64_t sid, bool result, std::vector<uint8_t> &bytes,
                          uint32_t *offset, uint32_t *count) const
{
    if (sid >= geom_.nblocks()) {
        return false;
    }
    if (result && rescue_ != nullptr) {
        if (auto h = rescue_->held.find(sid); h != rescue_->held.end()) {
            *offset = 0;
            *count = geom_.block_count(sid);
            bytes = h->second;
            return true;
        }
    }
    return data_->block_for_peer(sid, result, bytes, offset, count);
}

// ---------------------------------------------------------------- the job: serving

void Job::send_peer(uint32_t to, std::vector<uint8_t> msg)
{
    // Every message starts with a ina_peer_hdr_t: stamp this job's tag and channel in it.
    if (msg.size() >= sizeof(ina_peer_hdr_t)) {
        std::memcpy(msg.data() + offsetof(ina_peer_hdr_t, job), &peer_tag_, sizeof(peer_tag_));
        std::memcpy(msg.data() + offsetof(ina_peer_hdr_t, channel), &peers_.channel,
                    sizeof(peers_.channel));
    }
    if (peers_.send(peers_.arg, to, msg.data(), msg.size()) != 0 && client_ != nullptr) {
        client_->log(1, "job %u: recovery message to member %u not sent", jid(), to);
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

void Job::rescuing(uint64_t mid, Call *c)
{
    rescuing_[mid] = c;
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

// ---------------------------------------------------------------- the call: recovering

int Call::recover_start(bool host_ok)
{
    if (!job_->has_peers() || state_ != State::retired || fail_ != Fail::lost || rescue_) {
        return INA_ERR_INVALID;
    }
    rescue_.reset(new Rescue());
    Rescue &x = *rescue_;
    x.host_ok = host_ok;
    x.n = job_->nmembers();
    x.me = job_->comm_rank(); // a tree's job: its members are the communicator's
    x.state.assign(x.n, 0);
    x.host.assign(x.n, 0);
    x.r.assign(x.n, {});
    x.i.assign(x.n, {});
    x.l.assign(x.n, {});
    if (Client *c = job_->client()) {
        c->log(5, "job %u mid %llu: the agent is lost; recovering the call with the other %u "
                  "members",
               tmpl_.jid, static_cast<unsigned long long>(mid_), x.n - 1);
    }
    job_->rescuing(mid_, this);
    // Our own word first, then everybody else's.
    std::vector<uint8_t> mine;
    describe(mine);
    on_peer(x.me, mine.data(), mine.size());
    const std::vector<uint8_t> ask = message(header(INA_PEER_ASK, mid_), nullptr, 0);
    for (uint32_t to = 0; to < x.n; ++to) {
        if (to != x.me) {
            job_->send_peer(to, ask);
        }
    }
    return INA_OK;
}

void Call::on_peer(uint32_t from, const void *msg, size_t len)
{
    if (!rescue_ || rescue_->done) {
        return;
    }
    Rescue &x = *rescue_;
    ina_peer_hdr_t h;
    std::memcpy(&h, msg, sizeof(h));
    const auto *payload = static_cast<const uint8_t *>(msg) + sizeof(h);
    if (h.type == INA_PEER_STATE) {
        if (x.state[from] != 0) {
            return;
        }
        x.state[from] = h.state;
        x.host[from] = (h.flags & INA_PEER_F_HOST_OK) != 0;
        x.struck = x.struck || (h.flags & INA_PEER_F_STRUCK) != 0;
        const uint64_t n = geom_.nblocks();
        const size_t bm = bitmap_bytes(n);
        if ((h.state == INA_PEER_COMPLETE || h.state == INA_PEER_FAILED) && h.len == 3 * bm && h.nblocks == n) {
            x.r[from].assign(payload, payload + bm);
            x.i[from].assign(payload + bm, payload + 2 * bm);
            x.l[from].assign(payload + 2 * bm, payload + 3 * bm);
        } else if (h.state == INA_PEER_COMPLETE || h.state == INA_PEER_FAILED) {
            x.r[from].assign(bm, 0); // holds nothing it can give (certified, or none kept)
            x.i[from].assign(bm, 0);
            x.l[from].assign(bm, 0);
        }
        if (++x.states_in == x.n) {
            rescue_plan();
        }
        return;
    }
    // DATA, of a FETCH this member sent.
    if (!x.planned || x.pending == 0) {
        return;
    }
    --x.pending;
    auto rb = x.rebuild.find(h.sid);
    if (h.len == INA_PEER_NONE) {
        x.cqe.rc = INA_ERR_LOST; // a member could not give what its STATE offered
        if (Client *c = job_->client()) {
            c->log(5, "job %u mid %llu: member %u could not give block %u's %s", tmpl_.jid,
                   static_cast<unsigned long long>(mid_), from, h.sid,
                   h.what == INA_PEER_RESULT ? "result" : "input");
        }
    } else if (h.what == INA_PEER_RESULT) {
        if (h.sid < geom_.nblocks() &&
            h.len == static_cast<size_t>(geom_.block_count(h.sid)) * esz_) {
            if (data_->place_result(h.sid, payload)) {
                got_[h.sid] = true;
            }
            rescue_hold(h.sid, payload);
        } else {
            x.cqe.rc = INA_ERR_LOST;
            rescue_log("member %u gave block %u's result with %u bytes", from, h.sid, h.len);
        }
    } else if (rb != x.rebuild.end() && from < rb->second.size()) {
        Rescue::Piece &p = rb->second[from];
        p.in = true;
        p.offset = h.offset;
        p.count = h.count;
        p.bytes.assign(payload, payload + h.len);
        rescue_rebuild(h.sid); // as soon as it can: others (and the caller's next blocks) wait on it
    } else {
        x.cqe.rc = INA_ERR_LOST;
        rescue_log("member %u gave block %u's input, which nobody asked it for", from, h.sid);
    }
    if (data_->caller_produces()) {
        rescue_produce();
    } else if (x.pending == 0) {
        rescue_finish();
    }
}

void Call::rescue_log(const char *fmt, ...) const
{
    Client *c = job_->client();
    if (c == nullptr) {
        return;
    }
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    c->log(5, "job %u mid %llu: recovery: %s", tmpl_.jid, static_cast<unsigned long long>(mid_),
           line);
}

void Call::rescue_plan()
{
    Rescue &x = *rescue_;
    x.planned = true;
    x.cqe = cqe_;
    x.cqe.rc = INA_OK;
    x.cqe.outcome = INA_OFFLOADED;
    bool denied = false, broken = false, anything = false, all_host = true;
    for (uint32_t j = 0; j < x.n; ++j) {
        denied = denied || x.state[j] == INA_PEER_DENIED;
        broken = broken || x.state[j] == INA_PEER_UNRECOVERABLE;
        all_host = all_host && x.host[j] != 0 && x.state[j] == INA_PEER_FAILED;
        for (uint8_t b : x.r[j]) {
            anything = anything || b != 0;
        }
        anything = anything || x.state[j] == INA_PEER_COMPLETE;
    }
    // Nothing held anywhere: a call posted after the loss goes to the host.
    // One the agent had begun (struck in flight) is rebuilt among the
    // members when every input is still there: its result then has the
    // agent's bits whatever moment the loss came at, and the members move
    // 2(n-1)/n of it each, as a host allreduce would.
    bool rebuild_all = x.struck;
    for (uint32_t j = 0; j < x.n && rebuild_all; ++j) {
        for (uint64_t sid = 0; sid < geom_.nblocks() && rebuild_all; ++sid) {
            rebuild_all = !x.i[j].empty() && bit(x.i[j].data(), sid);
            if (!rebuild_all && !anything) {
                rescue_log("nothing held; struck in flight, but member %u cannot give block "
                           "%llu's input",
                           j, static_cast<unsigned long long>(sid));
            }
        }
    }
    if (!anything && !x.struck) {
        rescue_log("nothing held, and no member's BLOCKs were at the agent when it was lost");
    }
    if (denied || broken || (!anything && all_host && !rebuild_all)) {
        for (uint32_t j = 0; j < x.n && broken; ++j) {
            if (x.state[j] == INA_PEER_UNRECOVERABLE) {
                rescue_log("member %u kept nothing to recover it from", j);
            }
        }
        x.cqe.rc = broken && !denied ? INA_ERR_LOST : INA_OK;
        x.cqe.outcome = denied ? INA_FALLBACK_DENIED : INA_FALLBACK_UNREACHABLE;
        x.pending = 0;
        rescue_finish();
        return;
    }
    // Each block this member lacks comes from a member that holds it whole
    // (the fetches spread over the holders), or, held nowhere, is reduced
    // (or placed) from every member's BLOCK in the agents' order by one of
    // the members that lack it (taking turns block by block), and the
    // others fetch its RESULT from that one, which answers once it has it (rescue_rebuild, as the BLOCKs come; staged, this
    // member's own BLOCK of a block not produced yet joins when it is:
    // rescue_produce). Every member picks the same rebuilder: a member that
    // got a block in the recovery says it holds it (rescue_hold), so the
    // members that lack a block held nowhere look alike from every member.
    const uint64_t n = geom_.nblocks();
    std::vector<uint32_t> who;
    for (uint64_t sid = 0; sid < n; ++sid) {
        if (data_->nothing_to_deliver(sid)) {
            got_[sid] = true; // BARRIER's empty block: everybody got here
        }
        if (got(sid) || !data_->wants_result(sid)) {
            continue; // here already, or this member wants no payload of it
        }
        uint32_t from = kNone; // where its RESULT comes from
        who.clear();
        for (uint32_t j = 0; j < x.n; ++j) {
            if (j != x.me && !x.r[j].empty() && bit(x.r[j].data(), sid)) {
                who.push_back(j); // holds it
            }
        }
        if (!who.empty()) {
            from = who[(x.me + sid) % who.size()];
        } else {
            for (uint32_t j = 0; j < x.n; ++j) {
                if (x.state[j] == INA_PEER_FAILED && !x.l[j].empty() && bit(x.l[j].data(), sid)) {
                    who.push_back(j); // lacks it, as this member does
                }
            }
            const uint32_t builder = who.empty() ? x.me : who[sid % who.size()];
            from = builder != x.me ? builder : kNone;
        }
        ina_peer_hdr_t f = header(INA_PEER_FETCH, mid_);
        f.sid = static_cast<uint32_t>(sid);
        if (from != kNone) {
            f.what = INA_PEER_RESULT;
            job_->send_peer(from, message(f, nullptr, 0));
            ++x.pending;
            continue;
        }
        auto &pieces = x.rebuild[sid];
        pieces.assign(x.n, {});
        f.what = INA_PEER_INPUT;
        for (uint32_t j = 0; j < x.n; ++j) {
            if (j == x.me && sid < data_->produced()) {
                Rescue::Piece &p = pieces[j];
                p.in = block_for_peer(sid, false, p.bytes, &p.offset, &p.count);
                if (!p.in) {
                    x.cqe.rc = INA_ERR_LOST;
                    rescue_log("block %llu: nobody holds it and this member's input is gone",
                               static_cast<unsigned long long>(sid));
                }
            } else if (j == x.me) {
                // produced later (rescue_produce)
            } else if (x.i[j].empty() || !bit(x.i[j].data(), sid)) {
                x.cqe.rc = INA_ERR_LOST; // its input is gone: nobody can rebuild the block
                rescue_log("block %llu: nobody holds it and member %u (state %u) cannot give "
                           "its input",
                           static_cast<unsigned long long>(sid), j, x.state[j]);
            } else {
                job_->send_peer(j, message(f, nullptr, 0));
                ++x.pending;
            }
        }
    }
    for (auto it = x.rebuild.begin(); it != x.rebuild.end();) {
        const uint64_t sid = it++->first; // rescue_rebuild may erase it
        rescue_rebuild(sid);
    }
    if (data_->caller_produces()) {
        rescue_produce();
    } else if (x.pending == 0) {
        rescue_finish();
    }
}

// ---------------------------------------------------------------- what others fetch

bool Call::fetch_later(uint64_t sid, bool result) const
{
    if (!rescue_ || rescue_->done || sid >= geom_.nblocks()) {
        return false;
    }
    if (!result) {
        return sid >= data_->produced();
    }
    return !got(sid) && data_->wants_result(sid);
}

void Call::defer_fetch(uint32_t from, uint64_t sid, bool result)
{
    deferred_.push_back(Deferred{from, sid, result});
}

void Call::give_block(uint32_t to, uint64_t sid, bool result) const
{
    ina_peer_hdr_t d = header(INA_PEER_DATA, mid_);
    d.sid = static_cast<uint32_t>(sid);
    d.what = result ? INA_PEER_RESULT : INA_PEER_INPUT;
    std::vector<uint8_t> bytes;
    const bool ok = block_for_peer(sid, result, bytes, &d.offset, &d.count);
    d.len = ok ? static_cast<uint32_t>(bytes.size()) : INA_PEER_NONE;
    job_->send_peer(to, message(d, bytes.data(), ok ? bytes.size() : 0));
}

void Call::answer_deferred(uint64_t sid, bool result, bool all)
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

void Call::rescue_hold(uint64_t sid, const uint8_t *data)
{
    Rescue &x = *rescue_;
    if (!got(sid)) {
        return;
    }
    // Kept only where another member lacks it (so may fetch it from here)
    // and the caller's buffer does not hold it whole.
    bool others = false;
    for (uint32_t j = 0; j < x.n && !others; ++j) {
        others = j != x.me && !x.l[j].empty() && bit(x.l[j].data(), sid);
    }
    if (others && data_->result_in_place(sid) == nullptr) {
        x.held[sid].assign(data, data + static_cast<size_t>(geom_.block_count(sid)) * esz_);
    }
    answer_deferred(sid, true);
}

void Call::rescue_rebuild(uint64_t sid)
{
    Rescue &x = *rescue_;
    auto rb = x.rebuild.find(sid);
    if (rb == x.rebuild.end()) {
        return;
    }
    for (const Rescue::Piece &p : rb->second) {
        if (!p.in) {
            return; // a member's BLOCK still to come
        }
    }
    const uint32_t cnt = geom_.block_count(sid);
    std::vector<uint8_t> acc(static_cast<size_t>(cnt) * esz_, 0);
    const bool reduce = tmpl_.coll == INA_COLL_ALLREDUCE || tmpl_.coll == INA_COLL_REDUCE ||
                        tmpl_.coll == INA_COLL_REDUCE_SCATTER;
    for (const Rescue::Piece &p : rb->second) {
        const size_t bytes = static_cast<size_t>(p.count) * esz_;
        if (static_cast<uint64_t>(p.offset) + p.count > cnt || p.bytes.size() != bytes ||
            (reduce && p.count != cnt)) {
            x.cqe.rc = INA_ERR_LOST;
            rescue_log("block %llu: a member's BLOCK does not fit it (offset %u, count %u of %u)",
                       static_cast<unsigned long long>(sid), p.offset, p.count, cnt);
            x.rebuild.erase(rb);
            return;
        }
        if (!reduce && bytes > 0) {
            std::memcpy(acc.data() + static_cast<size_t>(p.offset) * esz_, p.bytes.data(), bytes);
        }
    }
    if (reduce) {
        fold_pieces(tmpl_.op, tmpl_.dtype, job_->groups(), rb->second, cnt, acc);
    }
    x.rebuild.erase(rb);
    if (data_->place_result(sid, acc.data())) {
        got_[sid] = true;
    }
    rescue_hold(sid, acc.data());
}

// ---------------------------------------------------------------- staged calls

void Call::rescue_produce()
{
    if (!rescue_ || rescue_->done) {
        return;
    }
    Rescue &x = *rescue_;
    const uint64_t n = geom_.nblocks();
    while (data_->produced() < n && x.cqe.rc == INA_OK) {
        const uint64_t sid = data_->produced();
        const CallData::Next next = data_->produce(sid);
        if (next == CallData::Next::not_ready) {
            break; // the caller's next block is not ready yet
        }
        if (next == CallData::Next::refused) {
            x.cqe.rc = INA_ERR_PROTO;
            rescue_log("block %llu as the caller produced it does not fit the call",
                       static_cast<unsigned long long>(sid));
            break;
        }
        answer_deferred(sid, false);
        if (auto rb = x.rebuild.find(sid); x.planned && rb != x.rebuild.end()) {
            Rescue::Piece &p = rb->second[x.me];
            p.in = block_for_peer(sid, false, p.bytes, &p.offset, &p.count);
            rescue_rebuild(sid);
        }
    }
    if (x.planned && !x.done &&
        (x.cqe.rc != INA_OK ||
         (x.pending == 0 && std::find(got_.begin(), got_.end(), false) == got_.end()))) {
        rescue_finish();
    }
}

void Call::rescue_abandon()
{
    if (!rescue_ || rescue_->done) {
        return;
    }
    Rescue &x = *rescue_;
    for (const Deferred &f : deferred_) {
        ina_peer_hdr_t d = header(INA_PEER_DATA, mid_);
        d.sid = static_cast<uint32_t>(f.sid);
        d.what = f.result ? INA_PEER_RESULT : INA_PEER_INPUT;
        d.len = INA_PEER_NONE;
        job_->send_peer(f.from, message(d, nullptr, 0));
    }
    deferred_.clear();
    x.planned = true;
    x.cqe.rc = INA_ERR_LOST;
    rescue_log("abandoned: the caller runs the host algorithm instead");
    rescue_finish();
}

bool Call::recover_decision(ina_cqe_t *cqe)
{
    if (!rescue_ || !rescue_->planned) {
        return false;
    }
    *cqe = rescue_->done ? cqe_ : rescue_->cqe;
    return true;
}

void Call::rescue_finish()
{
    Rescue &x = *rescue_;
    std::vector<uint8_t> final_word;
    if (x.cqe.rc == INA_OK && !x.rebuild.empty()) {
        x.cqe.rc = INA_ERR_LOST; // (every BLOCK came, so every rebuild ran)
        rescue_log("block %llu was never rebuilt",
                   static_cast<unsigned long long>(x.rebuild.begin()->first));
    }
    answer_deferred(0, false, true); // what it can give; a failed call cannot
    if (x.cqe.rc == INA_OK && x.cqe.outcome == INA_OFFLOADED) {
        // Keep what a slower member may still ask for: every block some
        // member lacked, as this member can give it now.
        const uint64_t n = geom_.nblocks();
        uint64_t lo = n, hi = 0;
        for (uint32_t j = 0; j < x.n; ++j) {
            for (uint64_t sid = 0; sid < n && !x.l[j].empty(); ++sid) {
                if (bit(x.l[j].data(), sid) || x.rebuild.count(sid) != 0) {
                    lo = std::min(lo, sid);
                    hi = std::max(hi, sid);
                }
            }
        }
        KeptCall k;
        k.mid = mid_;
        k.coll = tmpl_.coll;
        k.op = tmpl_.op;
        k.dtype = tmpl_.dtype;
        k.nblocks = n;
        k.first = lo <= hi ? lo : n;
        for (uint64_t sid = k.first; sid < n && sid <= hi; ++sid) {
            auto h = x.held.find(sid); // rebuilt or fetched in the recovery
            data_->keep_recovered(sid, h != x.held.end() ? &h->second : nullptr, k);
        }
        job_->keep(std::move(k));
        cqe_.rc = INA_OK;
        cqe_.outcome = INA_OFFLOADED;
    } else {
        // Members that ask later must decide alike: they get this word.
        describe(final_word);
        cqe_.rc = x.cqe.rc;
        cqe_.outcome = x.cqe.outcome;
    }
    x.done = true;
    if (Client *c = job_->client()) {
        c->log(5, "job %u mid %llu: recovered with the other members: %s", tmpl_.jid,
               static_cast<unsigned long long>(mid_),
               cqe_.rc != INA_OK                        ? "cannot be (the call fails)"
               : cqe_.outcome == INA_OFFLOADED          ? "every block in place"
               : cqe_.outcome == INA_FALLBACK_DENIED    ? "denied somewhere: host algorithm"
                                                        : "nothing held anywhere: host algorithm");
    }
    job_->rescued(mid_, std::move(final_word));
}

bool Call::recover_test(ina_cqe_t *cqe)
{
    if (!rescue_) {
        return false;
    }
    if (data_->caller_produces() && !rescue_->done) {
        rescue_produce();
    }
    if (rescue_->done) {
        *cqe = cqe_;
        return true;
    }
    return false;
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

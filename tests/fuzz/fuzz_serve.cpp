// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// libFuzzer target: the agent's message handling. A real agg::Aggregator
// (with one of ina-switchd's scheduling policies) is fed a sequence of
// messages from several endpoints, each validated by ina_proto_check and
// routed by agg::serve exactly as Agent::receive does, with lost
// connections, ticks of a clock of its own, allocation failures and, for a
// leaf of a tree, its parent agent in between, through the agent's own
// agg::ParentJobs (serve_input.h says how the input is read). What the core
// answers goes to a WireSink that
// checks, cheaply, what must hold of every message the agent sends; at the
// end every endpoint is lost and the core must be empty again. Any broken
// rule abort()s, so that libFuzzer reports the input.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include <sanitizer/common_interface_defs.h>

#include "aggregator.h"
#include "ina_proto.h"
#include "log.h"
#include "parent_jobs.h"
#include "sched/exclusive.h"
#include "sched/free_seg.h"
#include "sched/guard.h"
#include "sched/partition.h"
#include "sched/tdm.h"
#include "serve_input.h"
#include "wire.h"

// Allocation failures on demand: while armed, the allocation that brings
// the count to zero throws std::bad_alloc, as it could in the agent under
// memory pressure (which catches it per message and goes on).
namespace {
long g_allocs_left = -1; // < 0: disarmed

void *allocate(size_t n)
{
    if (g_allocs_left >= 0 && g_allocs_left-- == 0) {
        throw std::bad_alloc();
    }
    if (void *p = std::malloc(n != 0 ? n : 1)) {
        return p;
    }
    throw std::bad_alloc();
}
} // namespace

void *operator new(size_t n) { return allocate(n); }
void *operator new[](size_t n) { return allocate(n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
void operator delete[](void *p, size_t) noexcept { std::free(p); }
// (nothrow: never made to fail; libFuzzer uses it)
void *operator new(size_t n, const std::nothrow_t &) noexcept { return std::malloc(n != 0 ? n : 1); }
void *operator new[](size_t n, const std::nothrow_t &) noexcept { return std::malloc(n != 0 ? n : 1); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }

namespace {

using namespace ina::agg;
using ina_fuzz::ServeConfig;

// Arms the failure for a scope (n < 0: none).
struct FailAfter {
    explicit FailAfter(long n) { g_allocs_left = n; }
    ~FailAfter() { g_allocs_left = -1; }
    FailAfter(const FailAfter &) = delete;
    FailAfter &operator=(const FailAfter &) = delete;
};

// A callback into the transport (the core's Sink, ParentJobs' Wire): the
// transport's first allocation (it queues) may fail, `fails`; none in the
// fuzzer's own bookkeeping, which must see everything the core said.
struct TransportCall {
    bool fails = false;
    long saved = -1;
    TransportCall()
    {
        fails = g_allocs_left >= 0 && g_allocs_left-- == 0;
        saved = g_allocs_left;
        g_allocs_left = -1;
    }
    ~TransportCall() { g_allocs_left = saved; }
    TransportCall(const TransportCall &) = delete;
    TransportCall &operator=(const TransportCall &) = delete;
};

// The fuzzer's own bookkeeping inside the code under test: never made to fail.
struct Unarmed {
    long saved = g_allocs_left;
    Unarmed() { g_allocs_left = -1; }
    ~Unarmed() { g_allocs_left = saved; }
    Unarmed(const Unarmed &) = delete;
    Unarmed &operator=(const Unarmed &) = delete;
};

// A systematic search for allocation failures (docs/TESTING.md): with
// FUZZ_SERVE_SWEEP=N, every input also runs once per eager message and
// n < N with that message's n-th allocation failing (run it with -runs=0 on
// a corpus); FUZZ_SERVE_VARIANT=I:N runs only message I failing at N (what
// a crash in a sweep names, to replay its input).
struct Variant {
    long message = -1; // the index among the input's eager messages
    long alloc = -1;
};
long g_sweep = 0;
Variant g_variant;
bool g_variant_only = false;

void say_variant()
{
    if (g_variant.message >= 0) {
        std::fprintf(stderr, "fuzz_serve: in the variant FUZZ_SERVE_VARIANT=%ld:%ld\n",
                     g_variant.message, g_variant.alloc);
    }
}

[[noreturn]] void broken(const char *what, const ina_proto_hdr_t *h = nullptr)
{
    std::fprintf(stderr, "fuzz_serve: %s", what);
    if (h != nullptr) {
        std::fprintf(stderr, " (%s status %s jid %u rank %u mid %llu sid %u window %u count %u)",
                     ina_proto_type_name(h->type), ina_proto_status_name(h->status), h->jid,
                     h->rank, static_cast<unsigned long long>(h->mid), h->sid, h->window,
                     h->count);
    }
    std::fprintf(stderr, "\n");
    say_variant();
    std::abort();
}

// One connection. The agent's Peer is such a Member; the core may keep a
// reference to it only until member_lost().
struct Endpoint : Member {
    static constexpr uint64_t kAlive = 0x11a11a11a11a11a1;
    uint64_t alive = kAlive;
    ~Endpoint() { alive = 0; }
};

// A leaf's parent agent. The leaf's jobs there are ina-switchd's own
// agg::ParentJobs, which ParentLink (switch_agent/parent_link.cpp) hands
// what comes down; what it sends up comes here instead of onto a channel,
// and must pass ina_proto_check and, but for JOB_OPEN, name a job the
// parent opened for this leaf, as the rank the leaf opened it as. With
// parent_answers, the parent replies to what went up by itself, queued,
// since the core expects no call back from inside an Uplink call; late or
// refusing as the input says (serve_input.h).
class Parent final : public ParentJobs::Wire {
public:
    Parent(Aggregator &agg, const ServeConfig &c)
        : agg_(agg), answers_on_(c.parent_answers), slow_(c.parent_slow),
          refuses_(c.parent_refuses), jobs_(agg, *this, "fuzz")
    {
    }

    Uplink &uplink() { return jobs_; }

    // A message from the parent, as the link's channel checks it and
    // ParentLink::on_message hands it on (ParentLink answers HELLO_ACK and
    // the probes itself; here they reach ParentJobs, which drops them).
    void deliver(const ina_proto_hdr_t &h, const void *data, size_t len)
    {
        if (lost_ || ina_proto_check(&h, sizeof(h), len) != INA_PROTO_OK) {
            return; // a lost channel delivers nothing; an invalid message is dropped
        }
        if (h.type == INA_PROTO_JOB_OPENED && h.status == INA_PROTO_OK && h.jid != 0) {
            // Before the core hears of it: it may send up for the job at once.
            Unarmed own;
            // The cookie, as ParentJobs reads it.
            auto it = opens_.find(static_cast<uint32_t>(h.arg));
            if (it != opens_.end()) {
                given_.emplace(h.jid, it->second);
            }
        }
        jobs_.deliver(h, data, len);
    }

    // The parent's queued replies, oldest first (each may queue more). A
    // slow parent answers only when `now`, and then only what was asked
    // before.
    void answer(bool now)
    {
        if (slow_ && !now) {
            return;
        }
        const size_t most = slow_ ? replies_.size() : 100000;
        for (size_t n = 0; n < most && !replies_.empty(); ++n) {
            Reply r = std::move(replies_.front());
            replies_.pop_front();
            deliver(r.h, r.payload.data(), r.payload.size());
        }
    }

    void lost()
    {
        lost_ = true;
        replies_.clear();
        jobs_.lost();
    }

    // Partials in flight give their buffers back (before the core goes).
    void clear()
    {
        replies_.clear();
        sent_.clear();
    }

    // ---- ParentJobs::Wire: what ParentLink would queue
    void send(const ina_proto_hdr_t &h, const uint8_t *, size_t len) override
    {
        TransportCall call;
        check_up(h, len);
        if (call.fails) {
            throw std::bad_alloc(); // ParentLink could not queue it
        }
        ina_proto_hdr_t r;
        switch (h.type) {
        case INA_PROTO_JOB_OPEN:
            opens_[static_cast<uint32_t>(h.arg)] = h.rank;
            if (!answering()) {
                return;
            }
            if (refuses_ && h.arg % 2 != 0) { // the cookie: the leaf's JID
                r = reply(INA_PROTO_JOB_OPENED, 0, h.rank);
                r.status = INA_PROTO_ERR_NO_RESOURCES;
            } else {
                r = reply(INA_PROTO_JOB_OPENED, next_jid_++, h.rank);
                r.window = h.window; // as asked (check_up: 1..INA_PROTO_MAX_WINDOW)
            }
            r.arg = h.arg;
            break;
        case INA_PROTO_CALL_READY:
            if (!answering()) {
                return;
            }
            if (refuses_ && h.mid % 2 != 0) {
                r = reply(INA_PROTO_DENY, h.jid, h.rank);
                r.status = INA_PROTO_ERR_NO_RESOURCES;
            } else {
                r = reply(INA_PROTO_GRANT, h.jid, h.rank);
            }
            r.mid = h.mid;
            r.window = h.window;
            break;
        case INA_PROTO_CALL_ABORT:
            if (!answering()) {
                return;
            }
            // The parent denies the call on every leaf, this one too.
            r = reply(INA_PROTO_DENY, h.jid, h.rank);
            r.mid = h.mid;
            r.status = h.status;
            break;
        case INA_PROTO_JOB_LEAVE:
            return;
        default:
            broken("a leaf sends its parent a message that is not about its jobs", &h);
        }
        replies_.push_back({r, {}});
    }

    void send_block(Partial p) override
    {
        TransportCall call;
        const ina_proto_hdr_t &h = p.hdr;
        check_up(h, p.len);
        if (p.len != 0 && (!p.buf || p.offset + p.len > agg_.pool().seg_bytes())) {
            broken("a partial outside its buffer", &h);
        }
        if (call.fails) {
            throw std::bad_alloc(); // ParentLink could not queue it
        }
        const std::byte *piece = p.len != 0 ? p.buf.data() + p.offset : nullptr;
        if (answering() && refuses_ && h.mid % 2 == 0 && h.sid % 2 != 0) {
            // A sibling leaf lost: the parent ends the call, blocks in flight.
            ina_proto_hdr_t r = reply(INA_PROTO_ERROR, h.jid, h.rank);
            r.status = INA_PROTO_ERR_NOT_MEMBER;
            r.flags = INA_PROTO_F_IN_FLIGHT;
            ina_proto_error_set_rejected(&r, INA_PROTO_BLOCK);
            r.mid = h.mid;
            r.sid = h.sid;
            replies_.push_back({r, {}});
        } else if (answering()) {
            // The parent's RESULT, as if this leaf were alone: its piece in
            // the block, the rest zero.
            ina_proto_hdr_t r = reply(INA_PROTO_RESULT, h.jid, h.rank);
            r.mid = h.mid;
            r.sid = h.sid;
            r.seg = h.seg;
            r.window = h.window;
            r.coll = h.coll;
            r.op = h.op;
            r.dtype = h.dtype;
            r.block_elems = h.block_elems;
            r.arg = h.arg;
            std::vector<std::byte> payload;
            if (h.flags & INA_PROTO_F_WANT_RESULT) {
                const size_t esz = ina_proto_dtype_size(h.dtype);
                r.count = h.block_elems;
                payload.resize(size_t{h.block_elems} * esz);
                if (p.len != 0) {
                    std::memcpy(payload.data() + size_t{h.offset} * esz, piece, p.len);
                }
            } else {
                r.flags = INA_PROTO_F_ACK_ONLY;
            }
            replies_.push_back({r, std::move(payload)});
        } else if (p.len != 0) {
            volatile std::byte first = piece[0], last = piece[p.len - 1];
            (void) first;
            (void) last;
        }
        sent_.push_back(std::move(p.buf)); // in flight for a while
        if (sent_.size() > 16) {
            sent_.pop_front();
        }
    }

private:
    struct Reply {
        ina_proto_hdr_t h;
        std::vector<std::byte> payload;
    };

    bool answering() const { return answers_on_ && !lost_; }

    static ina_proto_hdr_t reply(ina_proto_type_t type, uint32_t jid, uint32_t rank)
    {
        ina_proto_hdr_t r;
        ina_proto_init(&r, type);
        r.jid = jid;
        r.rank = rank;
        return r;
    }

    // What must hold of every message a leaf sends its parent.
    void check_up(const ina_proto_hdr_t &h, size_t len) const
    {
        if (ina_proto_check(&h, sizeof(h), len) != INA_PROTO_OK) {
            broken("a leaf sends its parent a message ina_proto_check refuses", &h);
        }
        if (h.type != INA_PROTO_JOB_OPEN && given_.count({h.jid, h.rank}) == 0) {
            broken("a leaf's message for a job the parent did not open for it as that rank", &h);
        }
    }

    Aggregator &agg_;
    bool answers_on_;
    bool slow_;    // answers only when answer() is told to
    bool refuses_; // refuses what is odd (serve_input.h)
    bool lost_ = false;
    ParentJobs jobs_;          // the code under test
    uint32_t next_jid_ = 1000; // the parent's JIDs: another numbering than the leaf's
    std::deque<Reply> replies_;
    std::deque<BufRef> sent_;
    std::map<uint32_t, uint32_t> opens_;            // JOB_OPEN's cookie -> the leaf's rank
    std::set<std::pair<uint32_t, uint32_t>> given_; // (the parent's JID, that rank) opened
};

class Harness final : public WireSink {
public:
    explicit Harness(const ServeConfig &c)
        : cfg_(c), agg_(agg_config(c), [this](SegPool &pool) { return scheduler(pool); }, *this)
    {
        for (auto &ep : eps_) {
            ep = fresh();
        }
        if (c.parent) {
            parent_ = std::make_unique<Parent>(agg_, c);
            agg_.set_uplink(&parent_->uplink());
        }
    }

    ~Harness() override
    {
        // The transport gives the send buffers back before the core goes.
        in_flight_.clear();
        if (parent_) {
            parent_->clear();
        }
    }

    // A leaf's parent is endpoint kParent.
    bool is_parent(unsigned i) const { return parent_ && i == ina_fuzz::kParent; }

    // fail >= 0: the fail-th allocation while the message is handled throws.
    void message(unsigned i, const uint8_t *hdr, const uint8_t *payload, size_t len, bool rndv,
                 long fail)
    {
        Endpoint &from = *eps_[i];
        now_ += std::chrono::microseconds(1); // a message takes time to come
        // The header and the payload in buffers of their exact size, as UCX
        // hands them over: a read past either is ASan's to see.
        const std::unique_ptr<uint8_t[]> hbuf(new uint8_t[sizeof(ina_proto_hdr_t)]);
        const std::unique_ptr<uint8_t[]> pbuf(new uint8_t[len]);
        std::memcpy(hbuf.get(), hdr, sizeof(ina_proto_hdr_t));
        std::memcpy(pbuf.get(), payload, len);
        payload = pbuf.get();
        // As Agent::on_am: keep what there is of the header for an ERROR.
        ina_proto_hdr_t h;
        std::memcpy(&h, hbuf.get(), sizeof(h));
        try {
            FailAfter armed(fail);
            if (is_parent(i)) {
                parent_->deliver(h, payload, len);
                return;
            }
            const ina_proto_status_t st = ina_proto_check(hbuf.get(), sizeof(h), len);
            if (st != INA_PROTO_OK) {
                agg_.reject(&from, h, st, "invalid message");
                return;
            }
            if (!rndv) {
                serve(agg_, *this, from, h, payload, len);
                return;
            }
            // Agent::receive_rndv, and finish_recv once the payload landed.
            if (h.type != INA_PROTO_BLOCK || len == 0 || len > agg_.pool().seg_bytes()) {
                agg_.reject(&from, h, INA_PROTO_ERR_MALFORMED, "rendezvous refused");
                return;
            }
            BufRef buf(agg_.buffers(), agg_.buffers().get());
            std::memcpy(buf.data(), payload, len);
            serve(agg_, *this, from, h, buf.data(), len, &buf);
        } catch (const std::bad_alloc &) {
            // What the agent does with it (Agent::on_am): the message is lost.
            agg_.reject(nullptr, h, INA_PROTO_ERR_NO_RESOURCES, "dropped");
        }
    }

    void tick(unsigned ms)
    {
        now_ += std::chrono::milliseconds(ms);
        release_sends(in_flight_.size() / 2); // sends complete meanwhile
        if (agg_.wants_tick()) {
            try {
                agg_.tick(now_);
            } catch (const std::bad_alloc &) {
            }
        }
    }

    void lost(unsigned i)
    {
        if (is_parent(i)) {
            parent_->lost();
            return;
        }
        agg_.member_lost(*eps_[i]);
        eps_[i] = fresh(); // the handle may be destroyed now (the agent does)
    }

    // A leaf's parent answers what the last record made the core send up
    // (after it: the core expects no call back from inside an Uplink call);
    // a slow one only at a tick of its endpoint (`now`).
    void answer_up(bool now)
    {
        if (parent_) {
            try {
                parent_->answer(now);
            } catch (const std::bad_alloc &) {
            }
        }
    }

    // Every connection lost: nothing may be left of any job.
    void finish()
    {
        for (unsigned i = 0; i < ina_fuzz::kEndpoints; ++i) {
            if (!is_parent(i)) {
                lost(i);
            }
        }
        in_flight_.clear();
        if (parent_) {
            parent_->clear();
        }
        if (agg_.live_jobs() != 0) {
            broken("a job outlived all its members");
        }
        if (agg_.deferred_calls() != 0 || agg_.kept_bytes() != 0) {
            broken("a deferred call outlived its job");
        }
        if (agg_.pool().free_segs() != agg_.pool().size()) {
            broken("a lease was not given back");
        }
        const BufferPool &b = agg_.pool().buffers();
        if (b.free_count() != b.allocated()) {
            broken("a Seg buffer was not given back");
        }
    }

    // ---- WireSink: what the agent would send.
    void send(Member &to, const ina_proto_hdr_t &h, BufRef payload, size_t len) override
    {
        TransportCall call; // Agent::send queues: that may fail (below)
        if (ina_proto_check(&h, sizeof(h), len) != INA_PROTO_OK) {
            broken("the agent sends a message ina_proto_check refuses", &h);
        }
        auto &ep = static_cast<Endpoint &>(to);
        if (!live(ep)) {
            broken("a message to a member after member_lost()", &h);
        }
        switch (h.type) {
        case INA_PROTO_HELLO_ACK:
        case INA_PROTO_ERROR:
        case INA_PROTO_PONG: // a liveness probe's answer, to whoever asked
            break;
        case INA_PROTO_JOB_OPENED:
            if (h.status == INA_PROTO_OK) {
                if (h.jid == 0 || h.window == 0) {
                    broken("JOB_OPENED OK without a job or a window", &h);
                }
                // The member is bound even if this reply is lost.
                bound_.emplace(ep.id, h.jid, h.rank);
            }
            break;
        case INA_PROTO_GRANT:
        case INA_PROTO_DENY:
        case INA_PROTO_RESULT:
            break;
        default:
            broken("the agent sends a client-to-agent message", &h);
        }
        if (call.fails) {
            // Agent::send could not queue it: the message is lost (the core
            // may say it again; from here on only what went out counts).
            throw std::bad_alloc();
        }
        switch (h.type) {
        case INA_PROTO_GRANT:
        case INA_PROTO_DENY:
        case INA_PROTO_RESULT: {
            // Only to a member of the job, as the rank it opened it as.
            if (bound_.count(std::make_tuple(ep.id, h.jid, h.rank)) == 0) {
                broken("a call's message to an endpoint that is not that member", &h);
            }
            // ina_proto.h: one verdict per call and member, never a GRANT
            // after a RESULT (which implies it), one RESULT per block. A
            // leaf's parent could say DENY after GRANT: a leaf passes that on.
            const CallKey key{ep.id, h.jid, h.rank, h.mid};
            if (h.type == INA_PROTO_RESULT) {
                results_.insert(key);
                if (!blocks_.emplace(ep.id, h.jid, h.rank, h.mid, h.sid).second) {
                    broken("a second RESULT of one block to one member", &h);
                }
            } else if (h.type == INA_PROTO_GRANT && results_.count(key) != 0) {
                broken("a GRANT after a RESULT of the call", &h);
            } else if (!cfg_.parent &&
                       (results_.count(key) != 0 || !verdicts_.insert(key).second)) {
                broken("a second verdict on one call to one member", &h);
            }
            break;
        }
        default:
            break;
        }
        if (len != 0) {
            if (!payload || len > agg_.pool().seg_bytes()) {
                broken("a payload without its buffer, or larger than a Seg", &h);
            }
            // Read it as the transport would (ASan: inside a live buffer).
            volatile std::byte first = payload.data()[0], last = payload.data()[len - 1];
            (void) first;
            (void) last;
            in_flight_.push_back(std::move(payload));
            if (in_flight_.size() > kMaxInFlight) {
                release_sends(1);
            }
        }
    }

    ina_proto_status_t hello(Member &, const ina_proto_hdr_t &, uint64_t *rndv_blocks) override
    {
        *rndv_blocks = 0;
        return INA_PROTO_OK;
    }

private:
    static constexpr size_t kMaxInFlight = 64;

    static AggregatorConfig agg_config(const ServeConfig &c)
    {
        AggregatorConfig a;
        a.segs = c.segs;
        a.seg_bytes = c.seg_bytes;
        a.max_window = c.max_window;
        a.keep_bytes = size_t{1} << 20; // small: the denial for lack of room is reachable
        a.open_wait = c.open_wait_forever ? std::chrono::milliseconds(3600 * 1000)
                                          : std::chrono::milliseconds(0);
        return a;
    }

    // The policy, behind the harm guard as ina-switchd runs it.
    std::unique_ptr<Scheduler> scheduler(SegPool &pool)
    {
        auto now = [this] { return now_; };
        return std::make_unique<ina::sched::HarmGuard>(pool, policy(pool), ina::sched::GuardConfig{},
                                                       now);
    }

    std::unique_ptr<Scheduler> policy(SegPool &pool)
    {
        auto now = [this] { return now_; };
        const std::chrono::milliseconds idle(1000); // ina-switchd's default
        switch (cfg_.policy) {
        case ina_fuzz::Policy::kFcfs:
            return std::make_unique<ina::sched::FreeSegScheduler>(pool);
        case ina_fuzz::Policy::kExclusive:
            return std::make_unique<ina::sched::ExclusiveScheduler>(pool, idle, now);
        case ina_fuzz::Policy::kPartition:
            return std::make_unique<ina::sched::PartitionScheduler>(pool, idle, now);
        case ina_fuzz::Policy::kTdm:
            break;
        }
        return std::make_unique<ina::sched::TdmScheduler>(pool, ina::sched::TdmConfig{}, now);
    }

    std::unique_ptr<Endpoint> fresh()
    {
        auto ep = std::make_unique<Endpoint>();
        ep->id = ++next_id_;
        return ep;
    }

    bool live(const Endpoint &ep) const
    {
        for (const auto &e : eps_) {
            if (e.get() == &ep) {
                return ep.alive == Endpoint::kAlive;
            }
        }
        return false;
    }

    // Sends complete in order, their buffers go back.
    void release_sends(size_t n)
    {
        for (; n > 0 && !in_flight_.empty(); --n) {
            in_flight_.pop_front();
        }
    }

    ServeConfig cfg_;
    Clock::time_point now_ = Clock::time_point(std::chrono::hours(24));
    uint64_t next_id_ = 0;
    // Sends in flight: the buffers they reference (released by ~Harness
    // before the core goes, as the agent completes its sends first).
    std::deque<BufRef> in_flight_;
    // (endpoint id, jid, rank) told JOB_OPENED OK: JIDs are never reused.
    std::set<std::tuple<uint64_t, uint32_t, uint32_t>> bound_;
    // What each member was told of each call: (endpoint id, jid, rank, mid).
    using CallKey = std::tuple<uint64_t, uint32_t, uint32_t, uint64_t>;
    std::set<CallKey> verdicts_, results_;
    std::set<std::tuple<uint64_t, uint32_t, uint32_t, uint64_t, uint32_t>> blocks_; // + sid
    std::unique_ptr<Endpoint> eps_[ina_fuzz::kEndpoints];
    Aggregator agg_;
    std::unique_ptr<Parent> parent_; // a leaf's (destroyed before the core)
};

} // namespace

namespace {

// One run of the input; returns how many eager messages it has.
long run_input(const uint8_t *data, size_t n)
{
    Harness hx(ina_fuzz::decode_config(data));
    const uint8_t *p = data + ina_fuzz::kConfigBytes, *end = data + n;
    constexpr size_t kHdr = sizeof(ina_proto_hdr_t);
    long eager = 0;
    while (p < end) {
        const unsigned op = *p++;
        const unsigned ep = op % ina_fuzz::kEndpoints, kind = op / ina_fuzz::kEndpoints;
        const bool tick = kind >= ina_fuzz::kRndvKinds && kind < ina_fuzz::kLostKind;
        if (kind >= ina_fuzz::kLostKind) {
            hx.lost(ep);
        } else if (tick) {
            hx.tick(ina_fuzz::kTickMs[kind - ina_fuzz::kRndvKinds]);
        } else {
            long fail = -1;
            if (kind >= ina_fuzz::kFailKinds && kind < ina_fuzz::kEagerKinds) {
                if (p == end) {
                    break;
                }
                fail = *p++;
            }
            if (static_cast<size_t>(end - p) < kHdr + 4) {
                break;
            }
            const bool rndv = kind >= ina_fuzz::kEagerKinds;
            if (!rndv && eager++ == g_variant.message) {
                fail = g_variant.alloc;
            }
            const uint8_t *hdr = p;
            size_t len = ina_fuzz::get_le(p + kHdr, 4);
            p += kHdr + 4;
            len = std::min(len, static_cast<size_t>(end - p));
            hx.message(ep, hdr, p, len, rndv, fail);
            p += len;
        }
        hx.answer_up(tick && ep == ina_fuzz::kParent);
    }
    hx.finish();
    return eager;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
    // The core's warnings for every refused message would be most of the run.
    log_set_level(LogLevel::kError);
    if (const char *s = std::getenv("FUZZ_SERVE_SWEEP")) {
        g_sweep = std::strtol(s, nullptr, 10);
    }
    if (const char *v = std::getenv("FUZZ_SERVE_VARIANT")) {
        g_variant_only = std::sscanf(v, "%ld:%ld", &g_variant.message, &g_variant.alloc) == 2;
    }
    // A sanitizer's report in a variant says which one it was.
    __sanitizer_set_death_callback(say_variant);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    if (n < ina_fuzz::kConfigBytes) {
        return -1; // not an input: keep it out of the corpus
    }
    if (g_variant_only) {
        run_input(data, n);
        return 0;
    }
    const long eager = run_input(data, n);
    for (long m = 0; m < eager; ++m) {
        for (long a = 0; a < g_sweep; ++a) {
            g_variant = Variant{m, a};
            run_input(data, n);
        }
    }
    g_variant = Variant{};
    return 0;
}

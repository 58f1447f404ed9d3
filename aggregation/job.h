// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The job table's entries: one job per communicator (JID) with its members
// (opaque handles of the transport) and the state of its offloaded calls (one
// per MID): decision, lease, which SID each Seg of the lease serves next
// (older SIDs are duplicates), progress, and the forgetting of old calls.
#ifndef INA_AGG_JOB_H
#define INA_AGG_JOB_H

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "ina_proto.h"
#include "seg_pool.h"

namespace ina::agg {

class Aggregator;

// A member's connection as the transport sees it (a UCX endpoint, a slot in
// shared memory, a child agent): the transport owns it, usually as a base
// class of its own connection object, and the core refers to it only by
// address. The core keeps here which (jid, rank) pairs it holds.
class Member {
public:
    Member() = default;
    Member(const Member &) = delete;
    Member &operator=(const Member &) = delete;

    uint64_t id = 0; // for logs only, set by the transport

private:
    friend class Aggregator;
    std::vector<std::pair<uint32_t, uint32_t>> memberships_; // (jid, rank)
    size_t kept_bytes_ = 0; // its blocks the core keeps for deferred calls (Limits)
};

// Where a job sits in a tree of agents (JOB_OPEN's tree fields, part of the
// description every member must give alike; docs/HIERARCHY.md).
struct TreeDesc {
    uint32_t groups = 0;   // this job's agents under this agent's parent (<= 1, none above: none)
    uint32_t group = 0;    // this agent's index among them
    bool children = false; // the members are child agents, which vote (CALL_READY)
    // Deeper trees: the parent's place at its own parent, and so on up
    // (JOB_OPEN's levels above, nearest first).
    std::vector<ina_proto_tree_level_t> above;
    // The job goes on up to this agent's parent.
    bool goes_up() const { return groups > 1 || !above.empty(); }
    bool operator==(const TreeDesc &o) const
    {
        return groups == o.groups && group == o.group && children == o.children &&
               std::equal(above.begin(), above.end(), o.above.begin(), o.above.end(),
                          [](const ina_proto_tree_level_t &a, const ina_proto_tree_level_t &b) {
                              return a.groups == b.groups && a.group == b.group;
                          });
    }
};

// A completed block of a leaf's call on its way up, waiting for its slot in
// the parent's window (the parent's window may be smaller than the leaf's).
struct Partial {
    ina_proto_hdr_t hdr; // the BLOCK as the parent will see it, but jid/rank/seg/window
    BufRef buf;          // the leaf's completed Seg buffer (empty: a CREDIT, BARRIER)
    size_t offset = 0;   // bytes into buf where the piece starts
    size_t len = 0;
    // Waiting for its slot at the parent since (Counters::partial_wait_ns).
    std::chrono::steady_clock::time_point since{};
    bool waited = false;
};

// A block of a deferred call, kept (copied) until the call is decided.
struct KeptBlock {
    Member *from;
    ina_proto_hdr_t hdr;
    std::vector<std::byte> data;
};

// One offloaded call (JID, MID), decided once at its first block (or later,
// when the scheduler deferred it). Several calls of one job may be in flight
// at once (non-blocking collectives), each on its own lease.
struct Call {
    uint8_t coll = 0;               // ina_proto_coll_t of the first block (logs)
    uint8_t op = 0;
    uint8_t dtype = 0;
    bool granted = false;
    bool deferred = false;          // waiting for the scheduler; blocks in `kept`
    ina_proto_status_t deny_status = INA_PROTO_OK;
    std::vector<uint32_t> lease;    // Seg of each slot: lease[sid % lease.size()]
    uint32_t ahead = 0;             // told with its verdict: for the next MID (0: not yet)
    // Per slot: the next SID it may serve (older = duplicate); 64 bits, so
    // that a SID near the top of uint32_t plus the lease does not wrap.
    std::vector<uint64_t> next_sid;
    uint64_t total = 0;             // elements of the call's result vector
    uint64_t nblocks = 1;           // blocks of the call (from its first block's length)
    uint64_t done = 0;              // elements whose RESULT went out
    uint32_t asked = 0;             // times the scheduler was asked
    bool finished = false;          // lease returned (granted), denied or aborted
    std::vector<KeptBlock> kept;    // deferred: blocks in arrival order
    size_t kept_bytes = 0;
    std::vector<bool> told;         // per rank: the decision was sent to it
    std::chrono::steady_clock::time_point first_seen{}; // its first block (open_wait)

    // Agent trees (docs/HIERARCHY.md).
    bool grant_told = false;        // the GRANT went out (children/uplinked jobs wait for it)
    // A job of child agents: who said CALL_READY.
    std::vector<bool> ready;
    uint32_t nready = 0;
    // A leaf's call whose job goes up to a parent:
    bool up_ready = false;            // CALL_READY went up (a middle agent: once its children's did)
    std::vector<uint64_t> up_pending; // per lease slot: sid + 1 of the block at the parent, 0 none
    std::vector<uint64_t> up_next;    // per parent slot: the next SID it takes
    std::vector<Partial> up_wait;     // completed blocks waiting for their parent slot
};

// The name of a job (JOB_OPEN), and the capability its members prove
// themselves with (ina_proto.h, JOB_OPEN).
using JobKey = std::array<uint8_t, INA_PROTO_JOB_KEY_BYTES>;
using JobCap = std::array<uint8_t, INA_PROTO_JOB_CAP_BYTES>;

class Job {
public:
    // `node_ids` (one per member) and `asked_window` are the description
    // every member must open the job with.
    Job(uint32_t jid, uint32_t window, const JobKey &key, std::vector<uint32_t> node_ids,
        uint32_t asked_window, const TreeDesc &tree, const Member *creator);

    uint32_t jid() const { return jid_; }
    uint32_t window() const { return window_; }
    uint32_t nmembers() const { return topo_.nranks(); }
    const Topology &topology() const { return topo_; }

    // Membership. join() returns OK, or the status explaining the refusal.
    ina_proto_status_t join(uint32_t rank, Member *m);
    bool leave(uint32_t rank, const Member *m); // false if m is not that rank
    bool is_member(uint32_t rank, const Member *m) const
    {
        return rank < members_.size() && m != nullptr && members_[rank] == m;
    }
    Member *member(uint32_t rank) const { return members_[rank]; }
    uint32_t joined() const { return joined_; }
    // The creator is gone before anybody joined: nobody will ever use the job.
    bool orphaned_by(const Member *m) const
    {
        return joined_ == 0 && !ever_joined_ && creator_ == m;
    }
    // Dead when everybody who joined has left.
    bool dead() const { return ever_joined_ && joined_ == 0; }

    const JobKey &key() const { return key_; }
    // The capability its first opener brought; whether `cap` is it (in time
    // independent of where they differ: a refusal tells a guesser nothing).
    const JobCap &cap() const { return cap_; }
    void set_cap(const JobCap &cap) { cap_ = cap; }
    bool cap_matches(const JobCap &cap) const
    {
        uint8_t diff = 0;
        for (size_t i = 0; i < cap.size(); ++i) {
            diff |= static_cast<uint8_t>(cap[i] ^ cap_[i]);
        }
        return diff == 0;
    }
    // Certification (ina_proto.h): a member's BLOCK of `mid` says its mark
    // (`done`); the job's certified mark is the least over its members.
    void note_done(uint32_t rank, uint64_t mid, uint32_t done);
    uint64_t certified() const { return certified_; }
    // Segs the job's granted calls hold now, all together (Limits::job_segs).
    uint32_t held_segs() const { return held_segs_; }
    void hold_segs(uint32_t n) { held_segs_ += n; }
    void release_segs(uint32_t n) { held_segs_ -= std::min(n, held_segs_); }
    bool same_description(const std::vector<uint32_t> &node_ids, uint32_t asked_window,
                          const TreeDesc &tree) const
    {
        return node_ids == node_ids_ && asked_window == asked_window_ && tree == tree_;
    }
    uint32_t asked_window() const { return asked_window_; }

    // Trees of agents. A job whose members talk to several leaves goes up
    // to this agent's parent (uplinked); a job opened by child agents
    // (children) grants a call only once every member voted for it.
    const TreeDesc &tree() const { return tree_; }
    bool uplinked() const { return tree_.goes_up(); }
    bool children() const { return tree_.children; }
    enum class UpState { kNone, kOpening, kOpen, kFailed };
    UpState up_state() const { return up_state_; }
    uint32_t up_window() const { return up_window_; } // the parent's window, once open
    void set_up_state(UpState st, uint32_t window = 0)
    {
        up_state_ = st;
        up_window_ = window;
    }
    // Every member has joined at least once (the job carries calls only then).
    bool complete() const { return seen_count_ == members_.size(); }
    // A member joined and is gone since (its connection lost, a child agent
    // given up): a call that starts now can never have its part.
    bool member_gone() const { return complete() && joined_ < members_.size(); }
    // A call already waited the whole open_wait for the job to complete: the
    // missing member is not coming soon, later calls are denied at once.
    bool waited_in_vain() const { return waited_in_vain_; }
    void set_waited_in_vain() { waited_in_vain_ = true; }

    // The scheduler's decisions on this job's calls, by reason (logged
    // when the job is freed: who was served, who went to the host and why).
    struct Decisions {
        uint64_t granted = 0;
        uint64_t deferred = 0; // calls put off at least once (then granted or denied)
        uint64_t denied[INA_PROTO_STATUS_MAX + 1] = {}; // by DENY status
    };
    Decisions &decisions() { return decisions_; }
    // JOB_OPEN's tenant, as the creator gave it (0: none).
    uint64_t tenant() const { return tenant_; }
    void set_tenant(uint64_t t) { tenant_ = t; }
    // JOB_OPEN's stripe, as the creator gave it: this agent's index among
    // the width agents the communicator stripes over (width 0: not striped).
    uint32_t stripe_index() const { return stripe_ & 0xffffu; }
    uint32_t stripe_width() const { return stripe_ >> 16; }
    void set_stripe(uint32_t s) { stripe_ = s; }
    const Decisions &decisions() const { return decisions_; }
    // What went through the job (ina-switchctl jobs, the metrics).
    struct Stats {
        uint64_t blocks_in = 0;     // BLOCKs of its members (CREDITs included)
        uint64_t bytes_in = 0;      // their payload bytes
        uint64_t results_out = 0;   // RESULTs with a payload, one per member that asked
        uint64_t acks_out = 0;      // RESULTs without (ACK_ONLY)
        uint64_t bytes_out = 0;     // payload bytes of those RESULTs
        uint64_t blocks_done = 0;   // blocks completed here (sent out, or up a tree)
        uint64_t errors = 0;        // messages of its members refused
        uint64_t calls_aborted = 0; // calls ended by an ERROR after their GRANT
        uint64_t stripe_aborts = 0; // calls given back: another agent of the stripe denied them
        uint64_t host_costs = 0;    // HOST_COSTs of its members accepted
        uint64_t call_times = 0;    // CALL_TIMEs of its members accepted
        std::chrono::steady_clock::time_point created = std::chrono::steady_clock::now();
    };
    Stats &stats() { return stats_; }
    const Stats &stats() const { return stats_; }

    // Leases (ina_proto.h): the `ahead` the members were told for call
    // `mid` (1 if none: nothing told before the call was decided). A grant
    // of that call must lease at least that many Segs.
    uint32_t ahead_for(uint64_t mid) const
    {
        auto it = ahead_.find(mid);
        return it != ahead_.end() ? it->second : 1;
    }
    // The verdict of `mid` (which used its own word) tells `ahead` for
    // mid + 1. Words for calls that never come (every member fell back
    // before sending) are forgotten beyond a few.
    void tell_ahead(uint64_t mid, uint32_t ahead)
    {
        ahead_.erase(mid);
        ahead_[mid + 1] = ahead;
        while (ahead_.size() > kAheadWords) {
            ahead_.erase(ahead_.begin());
        }
    }
    // JOB_OPENED's word, for MID 0 (fixed when the job is created).
    uint32_t ahead_at_open() const { return ahead_at_open_; }
    void set_ahead_at_open(uint32_t ahead)
    {
        ahead_at_open_ = ahead;
        ahead_[0] = ahead;
    }

    // A member sent a block of `mid`: it has moved past every older MID.
    void note_mid(uint32_t rank, uint64_t mid);
    Call *find_call(uint64_t mid);
    // True if `mid` is older than every member's latest MID (a member that
    // never joined counts as at MID 0) and has no record any more: a late
    // block of a forgotten (denied) call.
    bool is_retired(uint64_t mid) const { return mid < retired_below_; }
    Call &add_call(uint64_t mid) { return calls_[mid]; }
    // Forget finished (completed, denied or aborted) calls every joined
    // member has moved past, so memory stays bounded. A granted call still in
    // flight is kept even then: with non-blocking collectives every member may
    // post later MIDs before this one completes. Its lease returns when it
    // completes, or when a member leaves or dies (abort_open_calls); a client
    // that gives up on a call closes its endpoint, so nothing waits forever.
    void retire();
    // A member is gone in the middle of granted or deferred calls: they can
    // never complete. Marks them finished and returns their MIDs; their
    // leases and kept blocks are still in the records, for the caller to
    // give back.
    std::vector<uint64_t> abort_open_calls();
    // The same without allocating, for freeing a job (which must not fail
    // half way): f(mid, call) on each, marked finished first.
    template <typename F> void finish_open_calls(F &&f)
    {
        for (auto &kv : calls_) {
            if ((kv.second.granted || kv.second.deferred) && !kv.second.finished) {
                kv.second.finished = true;
                f(kv.first, kv.second);
            }
        }
    }
    // The MIDs of the granted or deferred calls still open (nothing marked).
    std::vector<uint64_t> open_calls() const;
    size_t live_calls() const { return calls_.size(); }

private:
    Decisions decisions_;
    Stats stats_;
    uint64_t tenant_ = 0;
    uint32_t stripe_ = 0;
    uint32_t jid_;
    uint32_t window_;
    JobKey key_;
    JobCap cap_{};
    uint32_t held_segs_ = 0;
    std::vector<uint32_t> node_ids_;
    uint32_t asked_window_;
    TreeDesc tree_;
    UpState up_state_ = UpState::kNone;
    uint32_t up_window_ = 0;
    Topology topo_;
    const Member *creator_;
    std::vector<Member *> members_;
    std::vector<uint64_t> next_mid_; // per rank: latest MID seen + 1 (0 = none)
    std::vector<uint64_t> done_;     // per rank: its certification mark (0 = none)
    uint64_t certified_ = 0;         // the least of done_
    uint32_t at_certified_;          // members whose mark is certified_
    uint32_t joined_ = 0;
    bool ever_joined_ = false;
    std::vector<bool> seen_;      // per rank: has joined at least once
    uint32_t seen_count_ = 0;
    bool waited_in_vain_ = false;
    uint64_t retired_below_ = 0;
    std::map<uint64_t, Call> calls_;
    static constexpr size_t kAheadWords = 64;
    std::map<uint64_t, uint32_t> ahead_; // MID -> `ahead` its members were told
    uint32_t ahead_at_open_ = 1;
};

} // namespace ina::agg

#endif

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The aggregation core without a transport: the job table, the Seg pool and
// the scheduler. It takes members' messages as (member handle, validated
// header, payload), reduces blocks into Segs, decides completion and fan-out,
// and says everything through a Sink. ina-switchd drives it from UCX; a
// node-level stage (ranks of one node reducing in shared memory) or a leaf
// agent with an uplink can drive it the same way with their own members and
// sink. Single-threaded: one caller at a time.
#ifndef INA_AGG_AGGREGATOR_H
#define INA_AGG_AGGREGATOR_H

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>

#include "ina_proto.h"
#include "histogram.h"
#include "job.h"
#include "scheduler.h"
#include "seg_pool.h"
#include "sink.h"
#include "uplink.h"

namespace ina::agg {

struct AggregatorConfig {
    uint32_t segs = 1024;       // Seg units in the pool
    uint32_t seg_bytes = 65536; // bytes per Seg
    uint32_t max_window = 64;   // largest lease a job gets
    // Bytes of blocks kept for deferred calls, all calls together; a deferred
    // call whose next block does not fit is denied (each call holds at most
    // members x window blocks anyway: the window stalls without results).
    size_t keep_bytes = size_t{64} << 20;
    // A call of a job opened by key that starts before every member opened
    // the job waits this long for them (its blocks kept as a deferred
    // call's), then is denied (INCOMPLETE) on every member.
    std::chrono::milliseconds open_wait{1000};
    // What one client may take (a shared agent must not let one connection,
    // faulty or hostile, crowd out the others). Exceeding one is refused with
    // status LIMIT and a warning that names it.
    struct Limits {
        uint32_t jobs_per_member = 4096;           // jobs one connection is in at once
        uint32_t members = INA_PROTO_MAX_MEMBERS;  // members of one job
        uint32_t job_segs = 0;                     // Segs one job's calls hold together (0: the pool)
        size_t member_keep_bytes = size_t{16} << 20; // blocks kept for one connection's deferred calls
    } limits;
    // Time each block from its first contribution to its completion
    // (block_times(); the agent's --metrics): two clock reads per block.
    bool time_blocks = false;
};

// Counted where they happen, in the core. (The transport counts its own:
// messages in, sends completed, peers.)
struct Counters {
    uint64_t blocks_in = 0;
    uint64_t rejected[INA_PROTO_STATUS_MAX + 1] = {}; // refusals by status
    uint64_t foreign = 0;        // blocks from a member not bound to (jid, rank)
    uint64_t forbidden_opens = 0; // JOB_OPENs without the job's capability
    uint64_t limit_refusals = 0;  // refusals by a limit (AggregatorConfig::Limits)
    uint64_t calls_granted = 0;
    uint64_t leased_segs = 0;    // Segs of all granted leases (their mean: leased_segs / calls_granted)
    uint64_t calls_denied = 0;
    uint64_t denied_by[INA_PROTO_STATUS_MAX + 1] = {}; // calls_denied by DENY status
    uint64_t calls_deferred = 0; // calls the scheduler put off at least once
    uint64_t calls_aborted = 0;  // a member left/died in the middle of the call
    uint64_t denied_blocks = 0;  // blocks of denied / forgotten calls, dropped
    uint64_t duplicate = 0;      // second contribution of a rank to one block
    uint64_t kept_blocks = 0;    // blocks kept for deferred calls
    uint64_t jobs_created = 0;
    uint64_t jobs_freed = 0;
    // Trees of agents: as a parent (votes of child agents) and as a leaf.
    uint64_t ready_in = 0;       // CALL_READY received
    uint64_t abort_in = 0;       // CALL_ABORT received
    uint64_t partials_up = 0;    // completed blocks sent up to the parent
    uint64_t parent_results = 0; // RESULTs from the parent, sent on to members
    // Completed blocks that found their slot at the parent still busy (the
    // parent's RESULT of an older block not back), and how long they
    // waited in all: a level whose window is short for its round trip.
    uint64_t partials_waited = 0;
    uint64_t partial_wait_ns = 0;
    uint64_t stripe_aborts = 0;  // striped calls given back (another agent of the stripe denied)
    uint64_t host_costs = 0;     // HOST_COSTs accepted (members' word on denied calls)
    uint64_t call_times = 0;     // CALL_TIMEs accepted (members' word on whole calls)
};

class Aggregator {
public:
    // The scheduler is made for (and takes its leases from) the pool the
    // aggregator owns.
    using SchedulerFactory = std::function<std::unique_ptr<Scheduler>(SegPool &)>;

    Aggregator(const AggregatorConfig &cfg, const SchedulerFactory &make_scheduler, Sink &sink);
    Aggregator(const Aggregator &) = delete;
    Aggregator &operator=(const Aggregator &) = delete;

    // What a member learns when it says hello: the largest window (Segs per
    // lease) and the Seg size.
    uint32_t max_window() const;
    uint32_t seg_bytes() const { return cfg_.seg_bytes; }

    // Members' messages. `h` passed ina_proto_check with the payload's
    // length. They may throw std::bad_alloc (the message is then lost).
    // JOB_OPEN: create the job of this key if it is new, then join it.
    void job_open(Member &from, const ina_proto_hdr_t &h, const void *payload, size_t len);
    void job_leave(Member &from, const ina_proto_hdr_t &h);
    // `own`: the buffer of this pool the payload was received into, if it
    // was (the Seg may keep it instead of copying; see Block::own).
    void block(Member &from, const ina_proto_hdr_t &h, const void *payload,
               BufRef *own = nullptr);
    // A member that is a child agent votes on a call of a job opened with
    // INA_PROTO_F_CHILDREN (CALL_READY), or will not take part (CALL_ABORT).
    void call_ready(Member &from, const ina_proto_hdr_t &h);
    void call_abort(Member &from, const ina_proto_hdr_t &h);
    // A member's word on what a denied call cost it on the hosts
    // (HOST_COST), or on what a whole call took it (CALL_TIME): counted and
    // passed to the scheduler.
    void call_word(Member &from, const ina_proto_hdr_t &h);
    // Whether `m` is a child agent: a member of a job of child agents. Its
    // loop answers a PING at once whatever it is doing (unlike a rank, which
    // may compute between a call's post and its wait without a word), so
    // silence, probes included, means it is gone (Agent::check_children).
    bool is_child_agent(const Member &m) const;

    // This agent as a leaf of a tree (tree.cpp). The link to the parent (none:
    // a root; a job over several leaves is then refused at JOB_OPEN), and
    // what it reports, by the leaf's JID: the parent's job opened (OK and its
    // window) or not; the parent's GRANT/DENY of a call; a RESULT of one of
    // the leaf's blocks (payload: len bytes, valid during the call); an
    // ERROR that ended a call there; the link is lost; it is back (a new
    // connection: jobs over several leaves are opened again, those of
    // before the loss stay failed). While it is lost such a JOB_OPEN is
    // refused (UPSTREAM), so a communicator resumes only on a whole tree.
    void set_uplink(Uplink *up)
    {
        uplink_ = up;
        uplink_up_ = up != nullptr;
    }
    void uplink_restored() { uplink_up_ = uplink_ != nullptr; }
    void uplink_opened(uint32_t jid, ina_proto_status_t st, uint32_t parent_window);
    void uplink_decision(uint32_t jid, uint64_t mid, bool grant, ina_proto_status_t st);
    void uplink_result(uint32_t jid, const ina_proto_hdr_t &h, const void *payload, size_t len);
    void uplink_error(uint32_t jid, uint64_t mid, ina_proto_status_t st, bool in_flight);
    void uplink_lost();

    // The member is gone (connection lost): it leaves every job it joined,
    // jobs it created that nobody joined are freed. The handle may be
    // destroyed afterwards.
    void member_lost(Member &m);
    // Refuse a message: counted, logged, and an ERROR to `to` unless null
    // (the transport's own refusals: invalid message, no reply path, ...).
    void reject(Member *to, const ina_proto_hdr_t &h, ina_proto_status_t status, const char *why);

    // The clock for the scheduler; deferred calls are asked again after it.
    // Only needed while wants_tick(), at least every tick_interval().
    void tick(Clock::time_point now);
    bool wants_tick() const { return !deferred_.empty(); }
    Clock::duration tick_interval() const { return scheduler_->tick_interval(); }

    const Counters &counters() const { return counters_; }
    size_t live_jobs() const { return jobs_.size(); }
    // Of those, jobs whose members are child agents (is_child_agent).
    size_t child_jobs() const { return child_jobs_; }
    size_t deferred_calls() const { return deferred_.size(); }
    size_t kept_bytes() const { return kept_bytes_; }
    const SegPool &pool() const { return pool_; }
    BufferPool &buffers() { return pool_.buffers(); }
    const Job *find_job(uint32_t jid) const;
    // Every live job, in no particular order.
    template <typename F> void for_each_job(F &&f) const
    {
        for (const auto &kv : jobs_) {
            f(*kv.second);
        }
    }
    const Scheduler &scheduler() const { return *scheduler_; }
    // Whether this agent has a parent, and whether the link to it is up.
    bool has_uplink() const { return uplink_ != nullptr; }
    bool uplink_up() const { return uplink_up_; }

    // Draining (ina-switchctl drain): every new call is denied (DRAINING),
    // calls already granted go on, so that the agent can be stopped once
    // granted_calls() is 0 without failing any job.
    void set_draining(bool on) { draining_ = on; }
    bool draining() const { return draining_; }
    // Granted calls not over yet (their leases are out).
    size_t granted_calls() const { return granted_calls_; }
    // How long blocks took from their first contribution to their
    // completion (empty unless AggregatorConfig::time_blocks).
    const LatencyHistogram &block_times() const { return block_times_; }

private:
    Verdict::Kind decide(Job &job, Call &call, uint64_t mid);
    // The decision to every joined member (who is then told: Call::told).
    // Tell every member the call's verdict (with the call's `ahead`).
    void announce(Job &job, Call &call, uint64_t mid, bool grant, ina_proto_status_t st);
    Decision decision(const Job &job, const Call &call, uint64_t mid, bool grant,
                      ina_proto_status_t st) const;
    // Leases (ina_proto.h): the scheduler's `ahead` for the job's next call,
    // and fixing it once per call, with its verdict.
    uint32_t ahead_word(const Job &job) const;
    void tell_ahead(Job &job, Call &call, uint64_t mid);
    void handle_block(Member &from, const ina_proto_hdr_t &h, const void *payload, BufRef *own);
    void keep(Job &job, Call &call, uint64_t mid, Member &from, const ina_proto_hdr_t &h,
              const void *payload);
    // The block path of a granted call (live or replayed).
    void apply(Job &job, Call &call, Member &from, const ina_proto_hdr_t &h, const void *payload,
               BufRef *own);
    void send_result(Job &job, const ina_proto_hdr_t &blk, uint32_t seg);
    // The completed block (header `blk`, buffer `result` of len bytes) to
    // every member: the payload to those who asked for it (the Seg's want
    // bits), an ACK to the others.
    void fan_out(Job &job, const ina_proto_hdr_t &blk, uint32_t seg, const BufRef &result,
                 size_t len);
    // A message of a member about a job: the job, or null (refused).
    Job *member_job(Member &from, const ina_proto_hdr_t &h, const char *what);
    // A vote (CALL_READY/ABORT): the job of child agents, or null (refused).
    Job *child_job(Member &from, const ina_proto_hdr_t &h);
    // The record of a new call, from its first message.
    Call &start_call(Job &job, const ina_proto_hdr_t &h);
    // A granted call whose members all hold leases (a job of child agents:
    // every child voted): the GRANT to every member, or, where the job goes
    // on up, CALL_READY to the parent (once), whose GRANT is told later.
    void agreed(Job &job, Call &call, uint64_t mid);
    // The GRANT to every member (once; trees tell it late).
    void tell_grant(Job &job, Call &call, uint64_t mid);
    // Deny an undecided call on every member (and, tell_parent, at the parent).
    void deny(Job &job, Call &call, uint64_t mid, ina_proto_status_t st, bool tell_parent = true);
    // A block of a granted call refused: reject() to the sender; a child
    // agent's partial also ends the call on every member (abort_call).
    void refuse(Job &job, Call &call, Member &from, const ina_proto_hdr_t &h,
                ina_proto_status_t status, const char *why);
    // End an open call that can never complete: members who were told GRANT
    // get an ERROR; in a tree, a call not told yet is denied instead (every
    // member of every leaf then falls back alike). How (kAbort*, or'ed):
    enum : unsigned {
        // A leaf's own loss, which the parent must hear of.
        kAbortTellParent = 1u,
        // The parent is lost or ended the call, so another leaf may have
        // been told GRANT (and hold results): every member gets the ERROR,
        // and the members settle the call among themselves
        // (docs/ARCHITECTURE.md, "Recovery from a lost agent").
        kAbortNeverDeny = 2u,
        // The call was under way when the tree lost a part under it (not a
        // later call a broken tree refuses): the ERROR says so
        // (INA_PROTO_F_IN_FLIGHT), and its members rebuild it among
        // themselves rather than run the host algorithm.
        kAbortInFlight = 4u,
    };
    void abort_call(Job &job, uint64_t mid, Call &call, ina_proto_status_t st, const char *why,
                    unsigned how);
    // A leaf's completed block goes up (tree.cpp); and what waits for its slot.
    void send_up(Job &job, Call &call, const ina_proto_hdr_t &blk, uint32_t seg);
    void flush_up(Job &job, Call &call);
    // The call is over: its lease (or, deferred, its kept blocks) goes back.
    void end_call(uint32_t jid, uint64_t mid, Call &call);
    void drop_kept(Call &call);
    // Kept blocks given back (their bytes, globally and per member).
    void release_kept(const std::vector<KeptBlock> &kept);
    // Why a JOB_OPEN is refused by a limit (null: it is not).
    const char *over_limit(const Member &from, const ina_proto_hdr_t &h) const;
    void forget_deferred(uint32_t jid, uint64_t mid);
    // Ask deferred calls again, oldest first, until a round changes nothing.
    void reask();
    // After every entry point: ask again if a lease came back.
    void settle();
    void leave_job(uint32_t jid, uint32_t rank, Member &m);
    void free_job(uint32_t jid);
    // A new job (the first JOB_OPEN of a key).
    Job &new_job(Member &from, const JobKey &key, const JobCap &cap,
                 std::vector<uint32_t> node_ids, uint32_t asked_window, const TreeDesc &tree,
                 uint64_t tenant);
    // Bind `from` as `rank` of `job`: OK, or why not.
    ina_proto_status_t join_job(Job &job, uint32_t rank, Member &from);

    AggregatorConfig cfg_;
    SegPool pool_;
    std::unique_ptr<Scheduler> scheduler_;
    Sink &sink_;
    Uplink *uplink_ = nullptr;
    bool uplink_up_ = false;
    Counters counters_;
    std::unordered_map<uint32_t, std::unique_ptr<Job>> jobs_;
    size_t child_jobs_ = 0; // jobs_ whose members are child agents
    std::map<JobKey, uint32_t> keys_; // jobs opened by key
    uint32_t next_jid_ = 1;
    std::deque<std::pair<uint32_t, uint64_t>> deferred_; // (jid, mid), oldest first
    size_t kept_bytes_ = 0;
    bool lease_back_ = false; // a lease returned since deferred calls were last asked
    bool draining_ = false;
    size_t granted_calls_ = 0;
    LatencyHistogram block_times_;
    std::vector<Clock::time_point> seg_since_; // time_blocks: per Seg, its first contribution
    bool reasking_ = false;
    bool seen_reject_[INA_PROTO_STATUS_MAX + 1] = {}; // first of each reason logs at warn
    std::set<const char *> refusals_warned_;           // JOB_OPEN refusals (reasons: literals)
};

} // namespace ina::agg

#endif

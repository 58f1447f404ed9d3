// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Internals of the client engine behind ina_client.h (C++ only):
//   Client  the channel to the agent (channel.h), control requests, and the
//           progress engine that drives every outstanding call;
//   Job     one communicator's job descriptor: MIDs, early verdicts, and its
//           outstanding calls in MID order;
//   Call    one offloaded collective (a work request, WR): its block
//           geometry, its sliding window (ina_window.h: a block's RESULT is
//           its ACK) and its CQE. Where its blocks come from and its
//           RESULTs go is its data (call_data.h): the user's sbuf/rbuf
//           (user_buffers.h), or for a staged call (ina_job_post_staged)
//           the caller's ops.block and ops.result (staged_blocks.h): one
//           virtual call per block on the ordinary path.
//
// Channel callbacks only record what happened (a RESULT is copied straight into
// the user's buffer, or handed to a staged call's ops.result, a slot is acked,
// a verdict remembered); every send is
// posted from Client::progress(), which the caller's test/wait loops run, and,
// with the optional progress thread, that thread while background calls are
// outstanding. Every entry point and the thread hold Client::mutex() around
// any use of the engine (the channel included): one of them at a time.
#ifndef INA_ENGINE_H
#define INA_ENGINE_H

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "channel.h"
#include "ina_client.h"
#include "ina_geometry.h"
#include "call_rescue.h"
#include "ina_window.h"
#include "input_keeper.h"
#include "staged_blocks.h"
#include "user_buffers.h"
#include "liveness.h"
#include "spin_policy.h"

namespace ina::client {

using Clock = std::chrono::steady_clock;

// Spin on ucp_worker_progress this long before arming the wake-up fd: short,
// because ranks and the agent share few cores.
// Upper bound of one poll() sleep, so that deadlines are re-checked.
constexpr int kPollSliceMs = 10;
// Remembered verdicts of MIDs not started yet (the agent decides ahead of us).
constexpr size_t kMaxEarly = 4096;
// The first protocol versions with HOST_COST and CALL_TIME: never sent on an
// older connection.
constexpr unsigned kHostCostProtocol = 16;
constexpr unsigned kCallTimeProtocol = 17;

class Job;

class Client final : private ChannelEvents {
public:
    explicit Client(const ina_client_config_t &cfg);
    ~Client();
    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;

    // Opens a channel to the agent at `peer` (serialized: the progress
    // thread will share it), reporting to `events`.
    using ChannelFactory = std::function<int(ChannelEvents &events, bool serialized,
                                             std::unique_ptr<Channel> &out, std::string &err)>;

    // A UcxChannel to "host:port", then start().
    int connect(const char *addr, std::string &err);
    // Channel, HELLO/HELLO_ACK, then the progress thread if configured.
    // Returns INA_OK or an error with the reason in err.
    int start(const ChannelFactory &open, const std::string &peer, std::string &err);

    // Serialises the entry points with the progress thread.
    std::mutex &mutex() { return mutex_; }
    // A call was handed to the progress thread (mutex held): wake it.
    void wake_thread() { thread_cv_.notify_one(); }
    // Whether the progress thread runs (started and stopped by the caller's
    // thread only, so the caller may ask without the mutex).
    bool has_thread() const { return thread_.joinable(); }
    // Recovery messages composed on the progress thread (a call completed,
    // denied or certified there answers ASKs put aside) wait in their job
    // for the caller's thread: the caller's point-to-point layer (MPI) is
    // not this thread's to use. Any entry of the caller's sends them
    // (EntryLock), and ina_job_peer_flush for a caller inside MPI.
    bool on_progress_thread() const
    {
        return thread_.joinable() && std::this_thread::get_id() == thread_.get_id();
    }
    void peers_queued() { peers_queued_.store(true, std::memory_order_release); }
    bool peers_waiting() const { return peers_queued_.load(std::memory_order_acquire); }
    void flush_peers(); // the caller's thread, mutex held

    void log(int level, const char *fmt, ...) const __attribute__((format(printf, 3, 4)));

    bool alive() const { return channel_ && channel_->alive() && !lost_; }
    const ina_agent_info_t &info() const { return info_; }
    int progress_timeout_ms() const { return progress_timeout_ms_; }
    void note_event() { ++events_; }
    Channel &channel() { return *channel_; }

    // Deliver whatever is pending (error callbacks, verdicts, RESULTs)
    // without blocking and without sending.
    void poll_events();
    // One non-blocking round of the engine: deliver events, post every block
    // the windows of all outstanding calls allow, retire completed calls, and
    // give up on an agent that made no progress for progress_timeout_ms while
    // calls were waiting on it. The caller's rounds (the progress thread runs
    // its own, which never give up).
    void progress() { round(true); }
    // Run progress() until done() holds, sleeping on the wake-up fd between
    // rounds. Terminates: the no-progress timeout fails every waiting call.
    template <typename Done> void wait(Done done)
    {
        // A round polls only when nobody just did: progress_wait polls first
        // thing, and after a spin that delivered events polling again at
        // once finds nothing (and costs a syscall on TCP).
        bool polled = true;
        for (;;) {
            round(true, !polled);
            if (done()) {
                return;
            }
            polled = progress_wait(kPollSliceMs);
        }
    }
    // Progress for up to ~max_block_ms; returns early once any callback
    // fired. True when it returns from polling that delivered events (then
    // nothing is left to poll right now), false after a sleep.
    bool progress_wait(int max_block_ms);
    // Give up on the agent: mark lost and force-close the channel, which
    // completes (with an error) every send still holding a user buffer.
    void abandon(const char *why);

    // Control requests: post one message and wait for its reply.
    int request(ina_proto_hdr_t hdr, const void *payload, size_t len, uint8_t reply_type,
                int timeout_ms, ina_proto_hdr_t *reply);
    // Post a control message and forget it (the request is reaped later):
    // INA_OK, or INA_ERR_UNREACHABLE where it could not be posted.
    int post_detached(const ina_proto_hdr_t &hdr);

    uint64_t next_cookie();
    uint64_t tenant() const { return tenant_; }

    bool attach(Job *job);
    void detach(Job *job);

private:
    // A control message in flight: UCX may read the header and payload until
    // the send completes (UCX 1.13 has no UCP_AM_SEND_FLAG_COPY_HEADER).
    struct CtrlSend final : SendOp {
        Client *client = nullptr;
        ina_proto_hdr_t hdr{};
        std::vector<uint8_t> payload;
        bool finished = false;
        void done(bool ok) override;
    };
    // The reply a control request waits for (one caller at a time).
    // GRANT/DENY that came while a JOB_OPEN waited for its reply, for a job
    // not attached yet (attach() delivers them). Bounded: a job has at most
    // a window of calls in flight before its members all opened it.
    static constexpr size_t kMaxUnclaimed = 1024;
    std::vector<ina_proto_hdr_t> unclaimed_;

    struct Pending {
        bool active = false;
        bool done = false;
        uint8_t req_type = 0;
        uint8_t reply_type = 0;
        uint64_t cookie = 0;
        ina_proto_hdr_t reply{};
    };

    int post_ctrl(const ina_proto_hdr_t &hdr, const void *payload, size_t len, CtrlSend **out);
    void reap_ctrl();
    void flush_ctrl(int timeout_ms);
    void close_endpoint();
    void drive_jobs();
    bool busy() const;
    bool background_busy() const;
    // poll: deliver pending events first (else only drive the calls).
    void round(bool by_caller, bool poll = true);
    // Probe an agent that has been silent while calls wait on it, and give
    // up on it once it stayed silent for liveness_ms (any round: the
    // progress thread's too, since an agent's answer needs no other rank).
    void check_liveness(Clock::time_point now);
    // The progress thread: asleep on thread_cv_ while no background call is
    // outstanding, else progress() and sleep on the wake-up fd.
    void thread_main();
    void stop_thread();

    // ChannelEvents
    void on_message(const ina_proto_hdr_t &h, const void *data, size_t length) override;
    void on_dropped(const char *why) override;
    void on_lost(const char *why) override;
    void *on_rndv(const ina_proto_hdr_t &h, size_t len) override;
    void on_landed(const ina_proto_hdr_t &h, void *dst, size_t len, bool ok) override;

    const int connect_timeout_ms_;
    const int progress_timeout_ms_;
    const int verbose_;
    const bool want_thread_;
    const uint64_t rndv_bytes_; // HELLO: RESULTs this big come by rendezvous (0: never)
    const unsigned proto_lowest_, proto_highest_; // the versions HELLO offers
    const uint64_t tenant_;     // JOB_OPEN's tenant
    const ina_log_fn_t log_fn_;
    void *const log_arg_;

    // Destroyed explicitly in ~Client, before the control sends it may
    // still complete.
    std::unique_ptr<Channel> channel_;

    bool lost_ = false;
    std::string lost_why_;
    uint64_t events_ = 0; // bumped by every callback: "progress happened"
    uint64_t cookie_seq_ = 0;
    ina_agent_info_t info_{};
    Pending pending_;
    std::list<std::unique_ptr<CtrlSend>> ctrl_;
    std::unordered_map<uint32_t, Job *> jobs_; // non-owning, by JID

    // No-progress detection (see progress()).
    uint64_t seen_events_ = 0;
    // Liveness (config liveness_ms, check_liveness()): messages received
    // from the agent, the agent's silence while calls waited, and the
    // latest round that looked at it.
    uint64_t heard_ = 0;
    Liveness agent_live_;
    Clock::time_point last_live_round_;
    // How long the caller polls before sleeping (common/spin_policy.h): it
    // learns the waits of this client's link; the progress thread keeps its
    // own (its waits are the background calls').
    SpinPolicy waiting_;
    Clock::time_point stall_since_;
    Clock::time_point last_round_;

    // Progress thread (config progress_thread). Declared last: joined by
    // stop_thread() before anything above is torn down.
    std::mutex mutex_;
    std::condition_variable thread_cv_;
    bool thread_stop_ = false; // guarded by mutex_
    std::thread thread_;
    std::atomic<bool> peers_queued_{false}; // some job's outbox_ has messages
};

// What a rank knows of a call's verdict when it starts the call
// (ina_proto.h "Leases").
struct Opening {
    uint32_t lease = 0; // an early GRANT's lease (0: no verdict yet)
    uint32_t ahead = 1; // blocks that may go before the verdict
};

// One offloaded collective call. Owned by its Job, recycled through the
// job's free list: posting a call allocates nothing once the job has run as
// many calls at a time before. It holds its identity (job, MID, state), its
// window, slots and geometry, its verdict and CQE, and three parts: its data
// (call_data.h: the user's buffers or a staged call's blocks), what it keeps
// of its inputs for the other members (input_keeper.h), and, once it is
// recovered with them, its rescue (call_rescue.h).
class Call {
public:
    enum class State { free, active, retired };

    Call(Job *job, uint32_t window);
    Call(const Call &) = delete;
    Call &operator=(const Call &) = delete;

    // Arm a call for `mid` (the geometry is planned, the buffers checked).
    void start(uint64_t mid, const CallGeometry &geom, const ina_coll_desc_t &d, unsigned op,
               unsigned dtype, const Opening &open);
    // Arm a staged call for `mid` (geometry from CallGeometry::plan_total):
    // blocks come from ops.block, RESULTs go to ops.result.
    void start_staged(uint64_t mid, const CallGeometry &geom, unsigned coll, unsigned op,
                      unsigned dtype, const ina_stage_ops_t &ops, const Opening &open);
    // A call that moves nothing: complete at once, without a MID.
    void start_empty();

    Job *job() const { return job_; }
    State state() const { return state_; }
    void set_free() { state_ = State::free; }
    uint64_t mid() const { return mid_; }
    // GRANT (or a RESULT, which implies it) seen, or the call failed.
    bool decided() const { return granted_ || fail_ != Fail::none; }
    bool failed() const { return fail_ != Fail::none; }
    // Nothing more will happen: every RESULT arrived or the call failed, and
    // no send still reads the user's buffer.
    bool finished() const;
    // Not finished and waiting on the agent or the transport (the
    // no-progress clock runs): any such call, except a staged one with
    // nothing in flight, which waits on its caller's next block.
    bool busy() const;
    const ina_cqe_t &cqe() const { return cqe_; }
    // The CQE as the decision left it (decided() holds): granted, or the
    // failure's outcome/error. A retired call's cqe() is its final word.
    ina_cqe_t decision_cqe() const;
    // What the call's parts (its keeper, data and rescue) read of it.
    const CallGeometry &geometry() const { return geom_; }
    size_t elem_size() const { return esz_; }
    unsigned coll() const { return tmpl_.coll; }
    unsigned op() const { return tmpl_.op; }
    unsigned dtype() const { return tmpl_.dtype; }
    // Whether this member's BLOCK of `sid` asked for its RESULT's payload
    // (INA_PROTO_F_WANT_RESULT): asked while that RESULT is fresh, when the
    // block's slot still holds the header it went with.
    bool asked_result(uint64_t sid) const
    {
        return (slots_[window_.slot_of(sid)].hdr.flags & INA_PROTO_F_WANT_RESULT) != 0;
    }
    // Driven by the progress thread between the caller's entries.
    bool background() const { return background_; }
    void set_background() { background_ = true; }

    // Post every block the window allows.
    void pump(Client &client);
    // Fill the CQE; the call is complete for the user.
    void retire();
    // The sends will never complete (the endpoint is gone): stop waiting.
    void drop_sends();

    void on_result(const ina_proto_hdr_t &h, const void *data, size_t length);
    // Rendezvous RESULT: where in the user's buffer its payload lands, when
    // it is this rank's whole block in one piece (else null: it comes
    // through on_result from the channel's buffer). A non-null answer is
    // followed by exactly one on_landed; the call does not finish before.
    void *landing(const ina_proto_hdr_t &h, size_t length);
    void on_landed(const ina_proto_hdr_t &h, void *dst, size_t length, bool ok);
    // GRANT with the call's lease.
    void on_grant(uint32_t lease);
    void on_deny(uint8_t status)
    {
        // The agent's own verdict (HOST_COST reports its cost), not the
        // give-back of a striped call another agent denied.
        agent_denied_ = fail_ == Fail::none && status != INA_PROTO_ERR_ABORTED;
        fail(Fail::denied, status);
    }
    // Every RESULT arrived.
    bool all_results() const { return window_.complete(); }
    // Recovery: whether the RESULT (or ACK) of block `sid` arrived.
    bool got(uint64_t sid) const { return sid < got_.size() && got_[sid]; }
    // The agent is gone before this call sent anything (a post after the
    // loss): it fails as lost, to be recovered like any other.
    void lose() { fail(Fail::lost, INA_PROTO_OK); }

    // Recovery with the other members (ina_call_recover_*): the call's
    // rescue (call_rescue.h), which its job gives the other members'
    // messages (Job::rescuing).
    int recover_start(bool host_ok);
    bool recover_test(ina_cqe_t *cqe);
    // Once every member's word is in: how the recovery will end (a staged
    // call then goes on producing blocks and taking results until it does).
    bool recover_decision(ina_cqe_t *cqe);
    // The caller gives the call up during its recovery: it ends failed, and
    // what it offered the others is refused from now on.
    void rescue_abandon();
    bool recovering() const { return rescue_ != nullptr; }
    // Ended lost (INA_ERR_LOST: to be settled with the other members) and
    // no recovery started.
    bool lost_unrecovered() const
    {
        return state_ == State::retired && cqe_.rc == INA_ERR_LOST && !rescue_;
    }
    // Struck in flight: this member's BLOCKs had gone to an agent that then
    // fell silent or away, or to a tree that lost a part under the call
    // (INA_PROTO_F_IN_FLIGHT). A later call that a broken tree refused was
    // not.
    bool struck() const;
    // What the rescue takes and settles of the call: its data, the blocks
    // it got in the recovery, and how the recovery ended.
    CallData &data() { return *data_; }
    void mark_got(uint64_t sid) { got_[sid] = true; }
    bool got_all() const { return std::find(got_.begin(), got_.end(), false) == got_.end(); }
    void recovered(ina_status_t rc, ina_outcome_t outcome)
    {
        cqe_.rc = rc;
        cqe_.outcome = outcome;
    }
    // This member gives the call back (Job::abort): it ends as denied, and
    // RESULTs still on their way are dropped, never applied.
    void give_back()
    {
        fail(Fail::denied, INA_PROTO_ERR_ABORTED);
        given_back_ = true;
    }
    // ERROR(ABORTED): a member gave a striped call back; all fall back.
    // in_flight: the ERROR says the call was under way when the tree lost a
    // part under it (INA_PROTO_F_IN_FLIGHT).
    void on_error(uint8_t status, bool in_flight);

private:
    enum class Fail { none, denied, rejected, lost };

    // Per-slot send context: the header must live until the send completes.
    struct SlotCtx final : SendOp {
        Call *call = nullptr;
        uint32_t slot = 0;
        ina_proto_hdr_t hdr{};
        void done(bool ok) override;
    };

    // What became of the next block.
    enum class Post { sent, not_ready, failed, refused };

    void arm(uint64_t mid, const CallGeometry &geom, unsigned coll, unsigned op, unsigned dtype,
             const Opening &open);
    // The verdict's lease: the window from now on (false: the call failed).
    bool take_lease(uint32_t lease);
    void fail(Fail f, uint8_t status);
    // The CQE of a call that failed: an error, or a fallback outcome.
    void fill_failure(ina_cqe_t &cqe) const;
    Post post_block(Client &client);
    // A RESULT names one of this call's blocks, with the call's coll/op/dtype
    // and that block's length.
    bool matches(const ina_proto_hdr_t &h) const;

    Job *const job_;
    SendWindow window_;
    std::vector<SlotCtx> slots_;
    CallGeometry geom_;
    ina_proto_hdr_t tmpl_{}; // BLOCK header fields common to every block
    State state_ = State::free;
    uint64_t mid_ = 0;
    size_t esz_ = 1;
    bool any_sent_ = false; // a BLOCK left this process
    bool granted_ = false;
    bool sends_dropped_ = false;
    bool background_ = false;
    bool given_back_ = false; // give_back(): RESULTs are dropped
    bool agent_denied_ = false; // failed by the agent's DENY (on_deny)
    Fail fail_ = Fail::none;
    uint8_t status_ = INA_PROTO_OK;
    bool ended_in_flight_ = false; // the ERROR that set status_ said INA_PROTO_F_IN_FLIGHT
    ina_cqe_t cqe_{};
    // Recovery: RESULTs (or ACKs) arrived, by SID.
    std::vector<bool> got_;
    // When the job keeps blocks, what this call hands it at retire.
    InputKeeper keeper_;
    // Where the blocks come from and the RESULTs go: one of the two, made
    // once with the Call and re-armed by each start.
    UserBuffers user_buffers_;
    StagedBlocks staged_blocks_;
    CallData *data_;
    // Recovery with the other members, from recover_start until the call
    // is armed again.
    std::unique_ptr<CallRescue> rescue_;
};

} // namespace ina::client

// The C handle of a call is the engine's Call itself: no wrapper allocation.
struct ina_call final : public ina::client::Call {
    using ina::client::Call::Call;
};

// A call planned once (ina_job_plan): its description, checked, and its
// blocks as cut for the job parameters it names.
struct ina_call_plan final {
    ina_coll_desc_t desc{};
    std::vector<uint64_t> recvcounts; // the description's, where kept (Job::plan)
    unsigned op = 0, dtype = 0;       // what the wire carries (a barrier's fixed)
    ina::CallGeometry geom;
    uint32_t block_bytes = 0, nmembers = 0, rank = 0; // cut for these
};

namespace ina::client {

// One communicator's job descriptor and its work requests.
class Job {
public:
    Job(Client *client, const ina_job_params_t &p, uint32_t rank);
    ~Job();
    Job(const Job &) = delete;
    Job &operator=(const Job &) = delete;

    uint32_t jid() const { return params_.jid; }
    uint32_t rank() const { return rank_; }
    // In a tree, the job at a leaf has only that leaf's members (rank_ is
    // this member's index there, on the wire), while a call's geometry
    // (roots, chunks, parts) is the whole communicator's: params_.nmembers
    // is its size and this is our rank in it.
    void set_comm_rank(uint32_t r) { comm_rank_ = r; }
    uint32_t comm_rank() const { return comm_rank_; }
    // A job of a tree of agents (ina_job_open with INA_JOB_OPEN_TREE, several leaves).
    void set_tree(bool on) { tree_ = on; }
    // An ERROR that says the job lost a part of itself, not a verdict on
    // the call: a member gone from the job at its agent (NOT_MEMBER: its
    // link to the agent ended, as when it found the agent silent first and
    // is settling the call with the others), or in a tree the parent or
    // another leaf (UPSTREAM, NOT_MEMBER). With peers the members settle
    // such a call among themselves, as a call the agent lost.
    bool part_lost(uint8_t status) const
    {
        return has_peers() && (status == INA_PROTO_ERR_NOT_MEMBER ||
                               (tree_ && status == INA_PROTO_ERR_UPSTREAM));
    }
    // Recovery: member -> its agent at each level of a tree (n * levels,
    // level-major: the leaf, then the agent above it...), for the order in
    // which a rebuilt block is reduced: as the agents fold it. Empty: one
    // agent, the members in order.
    void set_groups(const uint32_t *group_of, uint32_t n, uint32_t levels)
    {
        groups_.assign(group_of, group_of + static_cast<size_t>(n) * levels);
    }
    const std::vector<uint32_t> &groups() const { return groups_; }
    uint32_t window() const { return params_.window; }
    Client *client() const { return client_; }
    // The client went away first: outstanding calls fail, later ones fall
    // back (INA_FALLBACK_UNREACHABLE).
    void orphan();
    // Finish outstanding calls, then tell the agent (JOB_LEAVE) without
    // waiting for anything.
    void leave();

    // Post a call (see ina_job_post). With wait_decision, progress until the
    // agent's GRANT/DENY of its MID is known and end the call at once on a
    // DENY. Returns cqe->rc; *out is set when the call is offloaded.
    int post(const ina_coll_desc_t &d, bool wait_decision, ina_call **out, ina_cqe_t *cqe);
    // Check the call `d` and cut it into blocks for this job (ina_job_plan):
    // INA_OK, or INA_ERR_INVALID for a call the wire cannot carry. The plan
    // keeps a copy of a reduce-scatter's counts when it outlives the call
    // (keep_counts), else points at the caller's.
    int plan(const ina_coll_desc_t &d, ina_call_plan &p, bool keep_counts = true) const;
    // Post a planned call as post() posts a description; a plan cut for
    // another job's block size, members or rank is cut again first.
    int post(ina_call_plan &p, bool wait_decision, ina_call **out, ina_cqe_t *cqe);
    // Post a staged call (see ina_job_post_staged): never waits for the
    // decision. Returns cqe->rc; *out is set unless the post fell back.
    int post_staged(const ina_staged_desc_t &d, ina_call **out, ina_cqe_t *cqe);
    // Give a retired (or never started) call back to the free list.
    void release(Call *call);
    // See ina_call_abort: CALL_ABORT(ABORTED) for an outstanding call, which
    // then completes as denied.
    void abort(Call *call);

    // Progress engine: pump every outstanding call, retire finished ones in
    // MID order (calls of one job complete in posting order).
    void drive();
    // Some outstanding call is still waiting for the agent.
    bool busy() const;
    // Some outstanding background call is not retired yet.
    bool background_busy() const;
    // See Call::drop_sends: after the endpoint was force-closed.
    void drop_sends();

    // Certification (ina_proto.h): this member's mark, which its BLOCKs
    // carry (every call below the oldest outstanding one is complete here),
    // and the job's certified mark, as the latest RESULT said.
    uint64_t done_mark() const { return active_.empty() ? next_mid_ : active_.front()->mid(); }
    uint64_t certified() const { return certified_; }
    // Keep completed calls' last blocks until they are certified (off until
    // the caller can recover calls: ina_job_keep_blocks).
    bool keeps() const { return keeps_; }
    void set_keeps(bool on) { keeps_ = on; }
    void keep(KeptCall &&k);
    const KeptCall *kept(uint64_t mid) const;
    // An empty buffer for a kept input, with the capacity of one given back.
    std::vector<uint8_t> spare_buffer()
    {
        std::vector<uint8_t> v;
        if (!spare_.empty()) {
            v = std::move(spare_.back());
            spare_.pop_back();
            v.clear();
        }
        return v;
    }
    void give_spare(std::vector<uint8_t> &&v)
    {
        if (spare_.size() < kSpareBuffers && v.capacity() > 0) {
            spare_.push_back(std::move(v));
        }
        v = std::vector<uint8_t>();
    }
    size_t kept_calls() const { return kept_.size(); }
    size_t kept_bytes() const { return kept_bytes_; }

    // Recovery (ina_recover.cpp): the members' point-to-point link, a
    // message from member `from`, and the calls that answer for themselves.
    void set_peers(const ina_peer_ops_t &ops)
    {
        peers_ = ops;
        keeps_ = true;
    }
    bool has_peers() const { return peers_.send != nullptr; }
    // Names the job in recovery messages: every member derives it from the
    // job's key (a tree's leaves give the job different JIDs).
    void set_peer_tag(uint32_t tag) { peer_tag_ = tag; }
    uint32_t nmembers() const { return params_.nmembers; }
    bool peer_message(uint32_t from, const void *msg, size_t len);
    void send_peer(uint32_t to, std::vector<uint8_t> msg);
    // Send what the progress thread composed (send_peer), in order.
    void flush_peers();
    void note_denied(uint64_t mid);
    // HOST_COST (protocol 16): call `mid` of collective `coll`, whose result
    // vector holds `bytes`, was denied by the agent's own verdict; kept for
    // host_cost() until a later call's denial replaces it.
    void note_agent_denial(uint64_t mid, unsigned coll, uint64_t bytes);
    // See ina_job_host_cost: 1 sent, 0 nothing to send, or an error.
    int host_cost(uint64_t ns);
    // See ina_job_call_time: the same.
    int call_time(uint64_t ns);
    void rescuing(uint64_t mid, CallRescue *r);
    // The call's recovery is over; `final_word` is its STATE from now on
    // (empty: the job keeps its blocks instead, KeptCall).
    void rescued(uint64_t mid, std::vector<uint8_t> final_word);

    // Called from the client's AM handler.
    void on_result(const ina_proto_hdr_t &h, const void *data, size_t length);
    void *landing(const ina_proto_hdr_t &h, size_t length);
    void on_landed(const ina_proto_hdr_t &h, void *dst, size_t length, bool ok);
    void on_grant(const ina_proto_hdr_t &h);
    void on_deny(const ina_proto_hdr_t &h);
    void on_error(const ina_proto_hdr_t &h);

private:
    // Verdict on a call this rank has not started yet: GRANT, DENY, or
    // ERROR(BLOCK) when the agent aborted the call (a member died).
    struct Early {
        uint8_t type;
        uint8_t status;
        uint32_t lease; // GRANT's
    };

    ina_call *acquire();
    // What post and post_staged share once the geometry is planned: MID,
    // early verdicts, start(c, mid, granted), the first window, and with
    // wait_decision the decision. Defined in ina_job.cpp, used there only.
    template <typename Start>
    int launch(const CallGeometry &g, bool wait_decision, ina_call **out, ina_cqe_t *cqe,
               Start start);
    Call *find(uint64_t mid);
    void remember(const ina_proto_hdr_t &h);
    // A GRANT, DENY or RESULT of `h.mid` says `ahead` for the next MID.
    void hear_ahead(const ina_proto_hdr_t &h);
    // A RESULT says the job's certified mark: what it passed is forgotten.
    void hear_certified(const ina_proto_hdr_t &h);

    Client *client_;
    const ina_job_params_t params_;
    const uint32_t rank_;
    uint32_t comm_rank_;
    bool tree_ = false;
    std::vector<uint32_t> groups_;
    uint64_t next_mid_ = 0;
    uint64_t ahead_mid_ = 0; // the MID the agent's latest `ahead` is for
    uint32_t ahead_ = 1;
    uint64_t certified_ = 0; // the agent's latest word (RESULT's `done`)
    bool keeps_ = false;
    std::map<uint64_t, KeptCall> kept_; // by MID, until certified
    // Nodes of kept_ (with their records' vectors) certified calls gave back.
    std::vector<std::map<uint64_t, KeptCall>::node_type> spare_kept_;
    static constexpr size_t kSpareKept = 64;
    size_t kept_bytes_ = 0;
    static constexpr size_t kSpareBuffers = 256; // kept inputs' buffers, for reuse
    std::vector<std::vector<uint8_t>> spare_;
    ina_peer_ops_t peers_{};
    uint32_t peer_tag_ = 0;
    std::map<uint64_t, std::vector<uint32_t>> asks_; // ASKs this member cannot answer yet
    std::deque<std::pair<uint32_t, std::vector<uint8_t>>>
        outbox_;                                     // composed off the caller's thread
    std::map<uint64_t, CallRescue *> rescuing_;      // calls being recovered, by MID
    std::map<uint64_t, bool> denied_;                // recent MIDs denied here
    std::map<uint64_t, std::vector<uint8_t>> final_; // STATEs of recoveries ended without blocks
    // The STATE of `mid` for member `to`, if this member's word is final;
    // and the ASKs that waited for it.
    bool answer(uint32_t to, uint64_t mid);
    void answer_waiting(uint64_t mid);
    std::vector<std::unique_ptr<ina_call>> calls_; // every call object of the job
    std::vector<ina_call *> free_;                 // recycled ones
    std::deque<Call *> active_;                    // posted, not retired, MID order
    std::map<uint64_t, Early> early_;              // by MID
    // A call the agent is to hear about (HOST_COST, CALL_TIME), until told.
    struct Told {
        bool set = false;
        uint64_t mid = 0;
        uint8_t coll = 0;
        uint64_t bytes = 0;
    };
    // Send `type` (protocol `since` on) of call `w` taking `ns`, from member
    // 0 only, and forget `w`: 1 sent, 0 nothing to send, or an error.
    int tell(ina_proto_type_t type, unsigned since, Told &w, uint64_t ns);
    Told denial_; // the latest call the agent denied (note_agent_denial)
    Told posted_; // the latest call posted (CALL_TIME)
};

} // namespace ina::client

namespace ina::client {

// ina_client_connect over a channel of the caller's making (a test's
// in-process link, a node stage): the C API then works as over UCX.
int connect_over(const ina_client_config_t &cfg, const Client::ChannelFactory &open,
                 const std::string &peer, ina_client_t **out, std::string &err);

// Recovery messages name their job by this (Job::set_peer_tag): the sealed
// key's first bytes, alike on every member whatever JID its agent gave.
uint32_t peer_tag_of(const ina_job_key_t &key);

// A member with no job of the tag's key (ina_recover.cpp): every call of
// that job ran on the host there. Answers an ASK with STATE DENIED, on the
// ASK's channel; whether the message was that job's.
bool answer_absent(uint32_t tag, const ina_peer_ops_t &ops, uint32_t from, const void *msg,
                   size_t len);

} // namespace ina::client

#endif // INA_ENGINE_H

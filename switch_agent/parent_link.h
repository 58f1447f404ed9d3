// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A leaf ina-switchd's link to its parent agent (--parent HOST:PORT;
// docs/HIERARCHY.md): the aggregation core's Uplink over the client's
// UcxChannel (its own UCP context and worker, error mode PEER, the same wire
// protocol a rank speaks). The leaf is one member of each of its tree jobs
// at the parent: JOB_OPEN as member `group` of `groups` with
// INA_PROTO_F_CHILDREN, then per call CALL_READY or CALL_ABORT and one BLOCK
// per completed block; what the parent answers goes back into the core by
// the leaf's JID. Single-threaded, on the agent's loop: what the core says
// is queued and posted by flush(), outside every UCX callback.
#ifndef INA_AGENT_PARENT_LINK_H
#define INA_AGENT_PARENT_LINK_H

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "aggregator.h"
#include "channel.h"
#include "liveness.h"
#include "uplink.h"

namespace ina {

class ParentLink final : public agg::Uplink, private client::ChannelEvents {
public:
    // What crossed the link (the agent logs them with its counters).
    struct Counters {
        uint64_t msgs_out = 0;
        uint64_t block_bytes_up = 0;
        uint64_t msgs_in = 0;
        uint64_t result_bytes_down = 0;
        uint64_t send_errors = 0;
        uint64_t reconnects = 0; // times the parent answered a new connection
        uint64_t probes = 0;     // PINGs sent to a silent parent
    };

    ParentLink(std::string addr, agg::Aggregator &agg);
    ~ParentLink() override;
    ParentLink(const ParentLink &) = delete;
    ParentLink &operator=(const ParentLink &) = delete;

    // Liveness of the parent (ina-switchd --parent-liveness-ms): once the
    // link is up, a parent silent for a third of `ms` is probed (PING), and
    // one silent for all of it, probes unanswered, is lost as if its
    // connection had closed (a frozen or hung parent, a dead link). The
    // leaf's loop never stops, so unlike a rank it always listens. 0: no
    // probes. Call before start().
    void set_liveness(std::chrono::milliseconds ms) { live_.set_limit(ms); }

    // Connect and say HELLO; waits up to timeout_ms for HELLO_ACK. Throws
    // std::runtime_error with the reason (unreachable, refused, a parent
    // whose Segs are smaller than ours: seg_bytes).
    void start(uint32_t seg_bytes, int timeout_ms);
    // Deliver what arrived (into the core). Whether anything happened.
    bool progress();
    // A lost parent is tried again, without blocking the agent's loop: a
    // new connection and HELLO after a pause that doubles from 250 ms up
    // to 8 s between failed tries; each try waits timeout_ms for its
    // HELLO_ACK. Once it is answered the core takes tree jobs again
    // (agg::Aggregator::uplink_restored); the jobs of before stay failed.
    // Call at every turn of the loop; the wake_fd() may change here.
    void maintain();
    // Milliseconds until maintain() has something to do (-1: nothing).
    int next_wake_ms() const;
    // Changes with every new channel (its wake_fd() may reuse the number
    // of the old one, which left the caller's epoll set when it closed).
    uint64_t generation() const { return generation_; }
    // Post what the core queued. Whether anything was posted.
    bool flush();
    bool arm() { return !channel_ || channel_->arm(); }
    int wake_fd() const { return channel_ ? channel_->wake_fd() : -1; }
    bool alive() const { return channel_ && channel_->alive(); }
    bool sending() const { return in_flight_ > 0 || !outbox_.empty(); }
    const Counters &counters() const { return counters_; }
    const std::string &address() const { return addr_; }

    // agg::Uplink
    void open(const agg::Job &job) override;
    void leave(const agg::Job &job) override;
    void ready(const agg::Job &job, uint64_t mid, const agg::Call &call) override;
    void abort(const agg::Job &job, uint64_t mid, ina_proto_status_t why) override;
    void partial(const agg::Job &job, agg::Partial p) override;

private:
    struct Send final : client::SendOp {
        ParentLink *link = nullptr;
        ina_proto_hdr_t hdr{};
        std::vector<uint8_t> bytes; // JOB_OPEN's payload
        agg::BufRef buf;            // a partial's
        size_t offset = 0;
        size_t len = 0;
        void done(bool ok) override;
    };
    // A leaf job's job at the parent.
    struct UpJob {
        uint32_t jid = 0;     // the parent's (0 until JOB_OPENED)
        uint32_t rank = 0;    // this leaf's index there
        uint16_t window = 0;  // the parent's window
        bool leaving = false; // freed here before the parent answered
    };

    Send &queue(const ina_proto_hdr_t &h);
    // Fill jid/rank/window of a message about leaf job `leaf_jid`; false if
    // its parent job is not open.
    bool address(uint32_t leaf_jid, ina_proto_hdr_t &h) const;
    void recycle(Send *s);
    // HELLO, offering our versions up to offer_highest_; sent at once, or
    // (now = false, from a channel callback) by the next flush().
    void say_hello(bool now = true);
    std::string hello_refused() const; // empty: the HELLO_ACK is one we can use
    void hello_answered();
    void try_later(const std::string &why);
    // up: probe a silent parent, give a silent one up (set_liveness).
    void check_liveness();

    // client::ChannelEvents (inside progress())
    void on_message(const ina_proto_hdr_t &h, const void *data, size_t len) override;
    void on_lost(const char *why) override;
    void on_dropped(const char *why) override;

    using Clock = std::chrono::steady_clock;
    enum class State { up, connecting, down };
    std::string addr_;
    agg::Aggregator &agg_;
    std::unique_ptr<client::Channel> channel_;
    bool hello_done_ = false;
    ina_proto_hdr_t hello_ack_{};
    unsigned offer_highest_ = INA_PROTO_VERSION; // lower after an older parent's refusal
    bool lost_ = false; // this channel is gone (no sends)
    State state_ = State::connecting;
    bool started_ = false; // start() succeeded: tries are maintain()'s
    uint64_t generation_ = 0;
    Liveness live_; // up: the parent's silence (counters_.msgs_in: what it said)
    uint32_t seg_bytes_ = 0;
    int timeout_ms_ = 0;
    Clock::time_point when_{};   // down: next try; connecting: its deadline
    Clock::duration pause_{};    // down: the pause before the next try
    std::map<uint32_t, UpJob> up_;     // by the leaf's JID
    std::map<uint32_t, uint32_t> down_; // the parent's JID -> the leaf's
    std::vector<std::unique_ptr<Send>> store_;
    std::vector<Send *> free_;
    std::vector<Send *> outbox_;
    std::vector<Send *> flushing_; // flush()'s, swapped with outbox_
    size_t in_flight_ = 0;
    Counters counters_;
};

} // namespace ina

#endif

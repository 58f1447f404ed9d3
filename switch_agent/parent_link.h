// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A leaf ina-switchd's link to its parent agent (--parent HOST:PORT;
// docs/HIERARCHY.md): the aggregation core's Uplink over the client's
// UcxChannel (its own UCP context and worker, error mode PEER, the same wire
// protocol a rank speaks). What goes up about the leaf's jobs and what comes
// down for them is agg::ParentJobs' (aggregation/parent_jobs.h); this link is
// its transport: the connection, HELLO, the parent's liveness (PING/PONG),
// connecting again, and the queue. Single-threaded, on the agent's loop:
// what the core says is queued and posted by flush(), outside every UCX
// callback.
#ifndef INA_AGENT_PARENT_LINK_H
#define INA_AGENT_PARENT_LINK_H

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aggregator.h"
#include "channel.h"
#include "liveness.h"
#include "parent_jobs.h"
#include "uplink.h"

namespace ina {

class ParentLink final : private agg::ParentJobs::Wire, private client::ChannelEvents {
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
    // What the core talks to (Aggregator::set_uplink).
    agg::Uplink &uplink() { return jobs_; }

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
    Send &queue(const ina_proto_hdr_t &h);
    void recycle(Send *s);
    // HELLO, offering our versions up to offer_highest_; sent at once, or
    // (now = false, from a channel callback) by the next flush().
    void say_hello(bool now = true);
    std::string hello_refused() const; // empty: the HELLO_ACK is one we can use
    void hello_answered();
    void try_later(const std::string &why);
    // up: probe a silent parent, give a silent one up (set_liveness).
    void check_liveness();

    // agg::ParentJobs::Wire: queued
    void send(const ina_proto_hdr_t &h, const uint8_t *payload, size_t len) override;
    void send_block(agg::Partial p) override;

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
    agg::ParentJobs jobs_;       // the leaf's jobs at the parent
    std::vector<std::unique_ptr<Send>> store_;
    std::vector<Send *> free_;
    std::vector<Send *> outbox_;
    std::vector<Send *> flushing_; // flush()'s, swapped with outbox_
    size_t in_flight_ = 0;
    Counters counters_;
};

} // namespace ina

#endif

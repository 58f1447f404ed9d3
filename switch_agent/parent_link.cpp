// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A leaf's link to its parent agent (parent_link.h).
#include "parent_link.h"

#include <chrono>
#include <cinttypes>
#include <cstring>
#include <poll.h>
#include <stdexcept>

#include "ina_client.h"
#include "ina_ucx.h"
#include "log.h"
#include "ucx_channel.h"

namespace ina {

ParentLink::ParentLink(std::string addr, agg::Aggregator &agg)
    : addr_(std::move(addr)), agg_(agg), jobs_(agg, *this, addr_)
{
}

ParentLink::~ParentLink()
{
    for (Send *s : outbox_) {
        recycle(s);
    }
    outbox_.clear();
    lost_ = true; // the core hears nothing more from us
    if (channel_) {
        channel_->close(true); // pending sends complete (with !ok) here
        for (int i = 0; i < 100000 && !channel_->closed(); ++i) {
            channel_->progress();
        }
        channel_.reset();
    }
}

void ParentLink::start(uint32_t seg_bytes, int timeout_ms)
{
    seg_bytes_ = seg_bytes;
    timeout_ms_ = timeout_ms;
    std::string err;
    if (client::UcxChannel::open(addr_, false, *this, channel_, err) != INA_OK) {
        throw std::runtime_error("--parent " + addr_ + ": " + err);
    }
    say_hello();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!hello_done_ && !lost_ && std::chrono::steady_clock::now() < deadline) {
        if (!channel_->progress() && !flush() && channel_->arm()) {
            struct pollfd p{channel_->wake_fd(), POLLIN, 0};
            poll(&p, 1, 10);
        }
    }
    if (!hello_done_) {
        throw std::runtime_error("--parent " + addr_ + ": " +
                                 (lost_ ? "connection lost" : "no HELLO_ACK in time"));
    }
    const std::string refused = hello_refused();
    if (!refused.empty()) {
        throw std::runtime_error("--parent " + addr_ + ": " + refused);
    }
    state_ = State::up;
    started_ = true;
    live_.restart(Clock::now());
    INA_INFO("parent %s: max window %" PRIu32 ", seg %" PRIu64 " bytes", addr_.c_str(),
             ina_proto_hello_ack_max_window(&hello_ack_), ina_proto_hello_ack_seg_bytes(&hello_ack_));
}

void ParentLink::say_hello(bool now)
{
    hello_done_ = false;
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_HELLO);
    ina_proto_hello_offer(&h, INA_PROTO_VERSION_MIN, offer_highest_, 0);
    ina_proto_hello_set_transport(&h, ucx::kStreamSegBytes, 0); // RESULTs eager
    queue(h);
    if (now) {
        flush();
    }
}

std::string ParentLink::hello_refused() const
{
    if (hello_ack_.type != INA_PROTO_HELLO_ACK && hello_ack_.status == INA_PROTO_ERR_VERSION) {
        // A tree's agents are upgraded from the top: a parent speaks every
        // version its leaves may.
        return "the parent speaks ina protocol versions " +
               std::to_string(ina_proto_refusal_lowest(&hello_ack_)) + " to " +
               std::to_string(ina_proto_refusal_highest(&hello_ack_)) + ", this agent " +
               std::to_string(INA_PROTO_VERSION_MIN) + " to " + std::to_string(offer_highest_) +
               " (upgrade the parent first)";
    }
    if (hello_ack_.type != INA_PROTO_HELLO_ACK) {
        return std::string("HELLO refused (") + ina_proto_status_name(hello_ack_.status) + ")";
    }
    if (ina_proto_hello_ack_seg_bytes(&hello_ack_) < seg_bytes_) {
        return "the parent has Segs of " + std::to_string(ina_proto_hello_ack_seg_bytes(&hello_ack_)) +
               " bytes, this agent " +
               std::to_string(seg_bytes_) +
               ": a leaf's blocks must fit its parent's Segs (--seg-size)";
    }
    return std::string();
}

void ParentLink::check_liveness()
{
    if (state_ != State::up || lost_) {
        return;
    }
    switch (live_.check(Clock::now(), counters_.msgs_in)) {
    case Liveness::Verdict::kLost:
        on_lost("it answered nothing, probes included, for --parent-liveness-ms");
        return;
    case Liveness::Verdict::kProbe: {
        ina_proto_hdr_t ping;
        ina_proto_init(&ping, INA_PROTO_PING);
        ping.arg = ++counters_.probes;
        queue(ping);
        return;
    }
    case Liveness::Verdict::kFine:
        return;
    }
}

void ParentLink::maintain()
{
    check_liveness();
    if (state_ == State::up || Clock::now() < when_) {
        return;
    }
    if (state_ == State::connecting) {
        try_later("no HELLO_ACK in time");
        return;
    }
    // A new channel: the old one's sends have all failed by now (its
    // endpoint is gone); what the core queued since was dropped.
    for (Send *s : outbox_) {
        recycle(s);
    }
    outbox_.clear();
    if (channel_) {
        channel_->close(true);
        for (int i = 0; i < 100000 && !channel_->closed(); ++i) {
            channel_->progress();
        }
        channel_.reset();
    }
    std::string err;
    lost_ = false;
    ++generation_;
    if (client::UcxChannel::open(addr_, false, *this, channel_, err) != INA_OK) {
        lost_ = true;
        try_later(err);
        return;
    }
    state_ = State::connecting;
    when_ = Clock::now() + std::chrono::milliseconds(timeout_ms_);
    say_hello();
}

int ParentLink::next_wake_ms() const
{
    if (state_ == State::up) {
        if (!live_.enabled() || lost_) {
            return -1;
        }
        // The next probe, or the verdict on the last one.
        const auto left =
            std::chrono::ceil<std::chrono::milliseconds>(live_.due() - Clock::now()).count();
        return left > 0 ? static_cast<int>(left) : 0;
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(when_ - Clock::now()).count();
    return left > 0 ? static_cast<int>(left) : 0;
}

void ParentLink::try_later(const std::string &why)
{
    constexpr Clock::duration kFirst = std::chrono::milliseconds(250);
    constexpr Clock::duration kMost = std::chrono::seconds(8);
    pause_ = pause_ == Clock::duration{} ? kFirst : std::min(2 * pause_, kMost);
    if (state_ == State::connecting || pause_ == kFirst) {
        INA_DEBUG("parent %s: not connected (%s); next try in %lld ms", addr_.c_str(), why.c_str(),
                  static_cast<long long>(
                      std::chrono::duration_cast<std::chrono::milliseconds>(pause_).count()));
    }
    state_ = State::down;
    when_ = Clock::now() + pause_;
}

void ParentLink::hello_answered()
{
    const std::string refused = hello_refused();
    if (!refused.empty()) {
        INA_WARN("parent %s: %s; trying again later", addr_.c_str(), refused.c_str());
        lost_ = true; // nothing more goes up this channel
        try_later(refused);
        return;
    }
    state_ = State::up;
    pause_ = Clock::duration{};
    live_.restart(Clock::now());
    ++counters_.reconnects;
    INA_INFO("parent %s: connected again (max window %" PRIu32 ", seg %" PRIu64
             " bytes): jobs over several leaves are taken again",
             addr_.c_str(), ina_proto_hello_ack_max_window(&hello_ack_),
             ina_proto_hello_ack_seg_bytes(&hello_ack_));
    agg_.uplink_restored();
}

bool ParentLink::progress()
{
    return channel_ && channel_->progress();
}

ParentLink::Send &ParentLink::queue(const ina_proto_hdr_t &h)
{
    if (free_.empty()) {
        store_.push_back(std::make_unique<Send>());
        free_.reserve(store_.size());
        free_.push_back(store_.back().get());
    }
    outbox_.reserve(outbox_.size() + 1);
    Send *s = free_.back();
    free_.pop_back();
    s->link = this;
    s->hdr = h;
    if (h.type != INA_PROTO_HELLO && hello_ack_.type == INA_PROTO_HELLO_ACK) {
        s->hdr.version = hello_ack_.version; // the one the parent chose
    }
    s->bytes.clear();
    s->offset = 0;
    s->len = 0;
    outbox_.push_back(s);
    return *s;
}

void ParentLink::recycle(Send *s)
{
    s->buf.reset();
    free_.push_back(s);
}

bool ParentLink::flush()
{
    if (outbox_.empty()) {
        return false;
    }
    // Posting may complete sends (recycle) but never queues new ones; the
    // scratch list keeps its capacity, so a flush allocates nothing.
    flushing_.swap(outbox_);
    for (Send *s : flushing_) {
        if (lost_ || !channel_ || !channel_->alive()) {
            recycle(s);
            continue;
        }
        const void *payload = !s->bytes.empty() ? static_cast<const void *>(s->bytes.data())
                              : s->buf          ? static_cast<const void *>(s->buf.data() + s->offset)
                                                : nullptr;
        const size_t len = !s->bytes.empty() ? s->bytes.size() : s->len;
        ++counters_.msgs_out;
        counters_.block_bytes_up += s->hdr.type == INA_PROTO_BLOCK ? len : 0;
        switch (channel_->post(s->hdr, payload, len, s)) {
        case client::Channel::Posted::done:
            recycle(s);
            break;
        case client::Channel::Posted::pending:
            ++in_flight_;
            break;
        case client::Channel::Posted::failed:
            ++counters_.send_errors;
            recycle(s);
            break;
        }
    }
    flushing_.clear();
    return true;
}

void ParentLink::Send::done(bool ok)
{
    --link->in_flight_;
    link->counters_.send_errors += ok ? 0 : 1;
    link->recycle(this);
}

// ---------------------------------------------------------------- agg::ParentJobs::Wire

void ParentLink::send(const ina_proto_hdr_t &h, const uint8_t *payload, size_t len)
{
    Send &s = queue(h);
    s.bytes.assign(payload, payload + len);
}

void ParentLink::send_block(agg::Partial p)
{
    Send &s = queue(p.hdr);
    s.buf = std::move(p.buf);
    s.offset = p.offset;
    s.len = p.len;
}

// ---------------------------------------------------------------- from the parent

void ParentLink::on_message(const ina_proto_hdr_t &h, const void *data, size_t len)
{
    ++counters_.msgs_in; // any message: the parent is there (check_liveness)
    if (h.type == INA_PROTO_PONG) {
        return;
    }
    if (h.type == INA_PROTO_PING) {
        // The parent's probe of its children (Agent::check_children):
        // answered from this loop at once, whatever the calls are doing.
        ina_proto_hdr_t pong;
        ina_proto_init(&pong, INA_PROTO_PONG);
        pong.arg = h.arg;
        queue(pong);
        return;
    }
    if (h.type == INA_PROTO_HELLO_ACK || (!hello_done_ && h.type == INA_PROTO_ERROR)) {
        if (hello_done_) {
            return; // a second answer: not ours to act on
        }
        if (h.type == INA_PROTO_ERROR && h.status == INA_PROTO_ERR_VERSION) {
            // An older parent that names no range: offer its version alone.
            if (unsigned v = ina_proto_version_retry(&h, INA_PROTO_VERSION_MIN, offer_highest_)) {
                INA_INFO("parent %s speaks ina protocol version %u: asking for it", addr_.c_str(),
                         v);
                offer_highest_ = v;
                say_hello(false); // sent by the next flush, outside the channel's callback
                return;
            }
        }
        hello_ack_ = h;
        hello_done_ = true;
        if (started_ && state_ == State::connecting) {
            hello_answered(); // a try of maintain()'s (start() waits for its own)
        }
        return;
    }
    // The rest is about the leaf's jobs (result bytes: those for one of them).
    if (jobs_.deliver(h, data, len) && h.type == INA_PROTO_RESULT) {
        counters_.result_bytes_down += len;
    }
}

void ParentLink::on_lost(const char *why)
{
    if (lost_) {
        return;
    }
    lost_ = true;
    if (state_ != State::up) {
        try_later(why); // a try that failed (or start()'s: it throws)
        return;
    }
    INA_ERROR("parent %s lost (%s): the calls of jobs over several leaves fail or fall back; "
              "connecting again",
              addr_.c_str(), why);
    jobs_.lost(); // the parent's JIDs meant something on that connection only
    try_later(why);
}

void ParentLink::on_dropped(const char *why)
{
    INA_WARN("parent %s: dropped a message: %s", addr_.c_str(), why);
}

} // namespace ina

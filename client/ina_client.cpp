// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The client engine's connection (see ina_client.h, ina_engine.h): one
// channel per ina_client_t, the HELLO, control requests, and the progress
// engine that drives every outstanding call of every job. Jobs and calls
// are in ina_job.cpp, the C API in ina_capi.cpp (opening a job:
// ina_job_open.cpp; the job key: ina_job_key.cpp).
#include "ina_engine.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <system_error>

#include "ucx_channel.h"

namespace ina::client {

namespace {

// ina_client_config_t.liveness_ms when 0: an agent that answers nothing for
// 1 s while calls wait is gone. A live agent answers a PING from its loop
// between two messages: within milliseconds even on a loaded machine.
constexpr int kDefaultLivenessMs = 1000;

// Upper bound of one sleep of the progress thread: it is woken by channel events
// and by stop_thread() (Channel::signal); the bound only guards against an
// event that does not fire the wake-up fd.
constexpr int kThreadSliceMs = 100;

// The waiting the configuration asks for (spin_us, spin_yield).
SpinConfig spin_config(const ina_client_config_t &cfg)
{
    SpinConfig w;
    if (cfg.spin_us != 0) {
        w.max = std::chrono::microseconds(std::max(0, cfg.spin_us));
    }
    w.yield = cfg.spin_yield != 0;
    return w;
}

// A protocol version of the configuration (ina_client_config_t's
// proto_lowest/proto_highest): 0 the build's `dflt`, negative below ours.
unsigned proto_version(int v, unsigned dflt)
{
    if (v == 0) {
        return dflt;
    }
    return v > 0 ? static_cast<unsigned>(v)
                 : static_cast<unsigned>(std::max(1, static_cast<int>(INA_PROTO_VERSION) + v));
}

} // namespace

// ------------------------------------------------------------------ Client

Client::Client(const ina_client_config_t &cfg)
    : connect_timeout_ms_(cfg.connect_timeout_ms > 0 ? cfg.connect_timeout_ms : 10000),
      progress_timeout_ms_(cfg.progress_timeout_ms > 0 ? cfg.progress_timeout_ms : 30000),
      verbose_(cfg.verbose), want_thread_(cfg.progress_thread != 0),
      rndv_bytes_(static_cast<uint64_t>(std::max(0, cfg.rndv_bytes))),
      proto_lowest_(proto_version(cfg.proto_lowest, INA_PROTO_VERSION_MIN)),
      proto_highest_(proto_version(cfg.proto_highest, INA_PROTO_VERSION)), tenant_(cfg.tenant),
      log_fn_(cfg.log_fn),
      log_arg_(cfg.log_arg),
      agent_live_(std::chrono::milliseconds(
          cfg.liveness_ms == 0 ? kDefaultLivenessMs : std::max(0, cfg.liveness_ms))),
      waiting_(spin_config(cfg)), stall_since_(Clock::now()), last_round_(stall_since_)
{
    last_live_round_ = stall_since_;
    agent_live_.restart(stall_since_);
}

uint64_t Client::next_cookie()
{
    return (static_cast<uint64_t>(getpid()) << 32) | ++cookie_seq_;
}

void Client::log(int level, const char *fmt, ...) const
{
    if (verbose_ < level) {
        return;
    }
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (log_fn_ != nullptr) {
        log_fn_(log_arg_, level, line);
    } else {
        std::fprintf(stderr, "ina-client[%d]: %s\n", static_cast<int>(getpid()), line);
    }
}

int Client::connect(const char *addr, std::string &err)
{
    const std::string a(addr != nullptr ? addr : "");
    return start(
        [&a](ChannelEvents &events, bool serialized, std::unique_ptr<Channel> &out,
             std::string &why) { return UcxChannel::open(a, serialized, events, out, why); },
        a, err);
}

int Client::start(const ChannelFactory &open, const std::string &a, std::string &err)
{
    int rc = open(*this, want_thread_, channel_, err);
    if (rc != INA_OK) {
        return rc;
    }
    // Versions (common/ina_proto.h): offer ours; an agent of protocol 13
    // refuses every version but its own without naming a range, and is
    // asked once more for that one alone.
    unsigned highest = proto_highest_;
    ina_proto_hdr_t ack{};
    for (int tries = 0;; ++tries) {
        ina_proto_hdr_t hello;
        ina_proto_init(&hello, INA_PROTO_HELLO);
        ina_proto_hello_offer(&hello, proto_lowest_, highest, 0);
        // The channel's UCX context runs with kStreamSegBytes.
        ina_proto_hello_set_transport(&hello, ucx::kStreamSegBytes, rndv_bytes_);
        ack = ina_proto_hdr_t{};
        rc = request(hello, nullptr, 0, INA_PROTO_HELLO_ACK, connect_timeout_ms_, &ack);
        const bool refused = rc == INA_ERR_PROTO && ack.status == INA_PROTO_ERR_VERSION;
        if (refused && tries == 0) {
            if (unsigned v = ina_proto_version_retry(&ack, proto_lowest_, highest)) {
                log(10, "agent %s speaks ina protocol version %u: asking for it", a.c_str(), v);
                highest = v;
                continue;
            }
        }
        if (refused) {
            err = "agent " + a + " speaks ina protocol versions " +
                  std::to_string(ina_proto_refusal_lowest(&ack)) + " to " +
                  std::to_string(ina_proto_refusal_highest(&ack)) + ", this process " +
                  std::to_string(proto_lowest_) + " to " + std::to_string(highest) +
                  " (ina-switchd and the component come from ina builds too far apart: "
                  "upgrade the older)";
            return INA_ERR_PROTO;
        }
        break;
    }
    if (rc != INA_OK) {
        if (!lost_why_.empty()) {
            err = "cannot connect to agent " + a + ": " + lost_why_;
        } else if (rc == INA_ERR_PROTO) {
            err = "agent " + a + " rejected HELLO: " + ina_proto_status_name(ack.status);
        } else {
            err = "no HELLO_ACK from agent " + a + " within " +
                  std::to_string(connect_timeout_ms_) + " ms";
        }
        return rc == INA_ERR_PROTO ? INA_ERR_PROTO : INA_ERR_UNREACHABLE;
    }
    if (ack.version < proto_lowest_ || ack.version > highest) {
        err = "agent " + a + " chose ina protocol version " + std::to_string(ack.version) +
              ", not one of the " + std::to_string(proto_lowest_) + " to " +
              std::to_string(highest) + " offered";
        return INA_ERR_PROTO;
    }
    info_.protocol = ack.version; // every later message carries it
    const uint32_t max_window = ina_proto_hello_ack_max_window(&ack);
    const uint64_t seg_bytes = ina_proto_hello_ack_seg_bytes(&ack);
    const uint64_t rndv_blocks = ina_proto_hello_ack_rndv_blocks(&ack);
    if (max_window == 0 || max_window > INA_PROTO_MAX_WINDOW || seg_bytes < 16 ||
        seg_bytes > INA_PROTO_MAX_SEG_BYTES) {
        err = "agent " + a + " sent an unusable HELLO_ACK (window " + std::to_string(max_window) +
              ", seg bytes " + std::to_string(seg_bytes) + ")";
        return INA_ERR_PROTO;
    }
    info_.max_window = max_window;
    info_.seg_bytes = static_cast<uint32_t>(seg_bytes);
    // The agent's word on blocks (0 from an agent without rendezvous).
    channel_->set_rndv_bytes(rndv_blocks);
    log(10, "connected to %s: protocol %u, max window %u, seg %u bytes, rendezvous: blocks "
            "from %llu B, results from %llu B (0 = never)",
        a.c_str(), info_.protocol, info_.max_window, info_.seg_bytes,
        static_cast<unsigned long long>(rndv_blocks),
        static_cast<unsigned long long>(rndv_bytes_));
    if (want_thread_) {
        // The thread takes no signal: the application's handlers (and
        // alarm(), SIGCHLD, ...) keep running on the threads it knows.
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        try {
            thread_ = std::thread(&Client::thread_main, this);
        } catch (const std::system_error &e) {
            log(1, "no progress thread (%s): calls progress when the caller polls", e.what());
        }
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }
    return INA_OK;
}

void Client::thread_main()
{
    // The thread learns its own waits: background calls progress while the
    // caller computes, their waits are not the caller's.
    SpinPolicy policy(waiting_.config());
    std::unique_lock<std::mutex> lk(mutex_);
    for (;;) {
        // Asleep while the caller needs no help: blocking calls and callers
        // that poll never wake this thread.
        thread_cv_.wait(lk, [this] { return thread_stop_ || background_busy(); });
        if (thread_stop_) {
            return;
        }
        round(false);
        if (!background_busy()) {
            continue;
        }
        // Background calls wait on the agent: poll a while, unlocking
        // between polls so that the caller may enter (and progress) meanwhile.
        const uint64_t seen = events_;
        const auto start = Clock::now();
        const auto polled = [&] {
            lk.unlock();
            lk.lock();
            round(false);
            return events_ != seen || thread_stop_ || !background_busy();
        };
        if (spin_poll(policy.budget(true), policy.config().yield, polled)) {
            policy.observe(Clock::now() - start);
            continue;
        }
        // Sleep on the wake-up fd with the engine unlocked.
        const bool armed = channel_->arm();
        if (!armed && events_ != seen) {
            continue; // more arrived during the round: another round
        }
        lk.unlock();
        if (armed) {
            pollfd pfd{channel_->wake_fd(), POLLIN, 0};
            poll(&pfd, 1, kThreadSliceMs);
        } else {
            // Not armed and nothing of ours happened: never spin.
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        lk.lock();
        policy.observe(Clock::now() - start);
    }
}

void Client::stop_thread()
{
    if (!thread_.joinable()) {
        return;
    }
    {
        std::lock_guard<std::mutex> lk(mutex_);
        thread_stop_ = true;
    }
    thread_cv_.notify_one();
    channel_->signal(); // out of poll() now (thread-safe by contract)
    thread_.join();
}

Client::~Client()
{
    // First: nothing below may run beside the thread.
    stop_thread();
    // Jobs still joined outlive us (the component leaves them later): their
    // outstanding calls fail now, later calls fall back (unreachable).
    for (auto &kv : jobs_) {
        kv.second->orphan();
    }
    jobs_.clear();
    if (channel_) {
        flush_ctrl(std::min(progress_timeout_ms_, 2000));
        close_endpoint();
    }
    // Destroy the channel now: a send it still holds may call back into ctrl_.
    channel_.reset();
}

void Client::close_endpoint()
{
    channel_->close(lost_);
    auto deadline = Clock::now() + std::chrono::milliseconds(std::min(progress_timeout_ms_, 2000));
    while (!channel_->closed() && Clock::now() < deadline) {
        progress_wait(kPollSliceMs);
    }
    if (!channel_->closed()) {
        log(1, "endpoint close did not complete; destroying the channel anyway");
    }
}

void Client::poll_events()
{
    while (channel_->progress()) {
    }
}

void Client::drive_jobs()
{
    for (auto &kv : jobs_) {
        kv.second->drive();
    }
}

bool Client::background_busy() const
{
    for (const auto &kv : jobs_) {
        if (kv.second->background_busy()) {
            return true;
        }
    }
    return false;
}

void Client::flush_peers()
{
    peers_queued_.store(false, std::memory_order_release);
    for (const auto &kv : jobs_) {
        kv.second->flush_peers();
    }
}

bool Client::busy() const
{
    for (const auto &kv : jobs_) {
        if (kv.second->busy()) {
            return true;
        }
    }
    return false;
}

void Client::round(bool by_caller, bool poll)
{
    if (poll) {
        poll_events();
    }
    drive_jobs();
    const auto now = Clock::now();
    check_liveness(now);
    if (!by_caller) {
        return;
    }

    // No progress: calls are waiting and no callback fired for
    // progress_timeout_ms of steady polling. A gap between two rounds (the
    // application computed instead of polling) restarts the clock: only time
    // the caller spent waiting counts against the agent. The progress
    // thread's rounds do not count: while the caller computes, another rank
    // may compute too before it posts its part.
    const auto timeout = std::chrono::milliseconds(progress_timeout_ms_);
    if (now - last_round_ > std::max<Clock::duration>(timeout / 4, std::chrono::milliseconds(50))) {
        stall_since_ = now;
    }
    last_round_ = now;
    if (events_ != seen_events_) {
        seen_events_ = events_;
        stall_since_ = now;
    }
    if (!busy()) { // a staged call waiting for its caller's block is not busy
        stall_since_ = now;
        return;
    }
    if (now - stall_since_ <= timeout) {
        return;
    }
    stall_since_ = now;
    if (alive()) {
        log(1, "no progress for %d ms with calls outstanding", progress_timeout_ms_);
        abandon("calls made no progress"); // fails every call (Call::pump sees !alive)
    } else {
        // Force-closing did not complete our sends either: never block forever.
        log(1, "sends still pending %d ms after closing the endpoint", progress_timeout_ms_);
        for (auto &kv : jobs_) {
            kv.second->drop_sends();
        }
    }
    drive_jobs();
}

void Client::check_liveness(Clock::time_point now)
{
    if (!agent_live_.enabled() || !alive()) {
        return;
    }
    // A gap between two rounds: nobody listened, so a PONG may still sit
    // unread; the silence counts again from here. Nothing waiting on the
    // agent: nothing to expect of it.
    const auto limit = agent_live_.limit();
    const bool gap =
        now - last_live_round_ > std::max<Clock::duration>(limit / 4, std::chrono::milliseconds(50));
    last_live_round_ = now;
    if (gap || !busy()) {
        agent_live_.restart(now);
        return;
    }
    const auto silent_ms = [&] {
        return static_cast<long long>(
            std::chrono::duration_cast<std::chrono::milliseconds>(agent_live_.silent(now)).count());
    };
    switch (agent_live_.check(now, heard_)) {
    case Liveness::Verdict::kLost:
        log(1, "the agent answered nothing for %lld ms, probes included, with calls waiting",
            silent_ms());
        abandon("the agent stopped answering"); // fails every call (Call::pump sees !alive)
        drive_jobs();
        return;
    case Liveness::Verdict::kProbe: {
        ina_proto_hdr_t ping;
        ina_proto_init(&ping, INA_PROTO_PING);
        ping.arg = next_cookie();
        log(50, "probing the agent: silent for %lld ms with calls waiting", silent_ms());
        post_detached(ping);
        return;
    }
    case Liveness::Verdict::kFine:
        return;
    }
}

bool Client::progress_wait(int max_block_ms)
{
    // A caller waits here only for something outstanding (a call, a control
    // reply, a close): poll for about this link's recent waits, then sleep.
    SpinPolicy &policy = waiting_;
    const uint64_t before = events_;
    const auto start = Clock::now();
    int polls = 0;
    const auto polled = [&] {
        ++polls;
        channel_->progress();
        return events_ != before;
    };
    if (spin_poll(policy.budget(true), policy.config().yield, polled)) {
        // Found at the first poll: it was already there (several RESULTs of
        // one call, delivered a poll at a time), no wait to learn from; a
        // run of such zeros would cut the spin below the real round trip.
        if (polls > 1) {
            policy.observe(Clock::now() - start);
        }
        return true;
    }
    if (!channel_->arm()) {
        return false; // more to progress: the caller loops
    }
    pollfd pfd{channel_->wake_fd(), POLLIN, 0};
    poll(&pfd, 1, std::max(0, max_block_ms));
    // Woken by an event, or the slice ran out: as long a wait, as good.
    policy.observe(Clock::now() - start);
    return false;
}

void Client::abandon(const char *why)
{
    if (!lost_) {
        log(1, "giving up on the agent: %s", why);
        lost_ = true;
        lost_why_ = why;
    }
    if (!channel_->closed()) {
        close_endpoint();
    }
}

void Client::on_lost(const char *why)
{
    ++events_;
    if (!lost_) {
        lost_ = true;
        lost_why_ = why;
        log(1, "connection to the agent lost: %s", why);
    }
}

void Client::on_dropped(const char *why)
{
    ++events_;
    log(1, "dropping %s from the agent", why);
}

void Client::CtrlSend::done(bool ok)
{
    ++client->events_;
    finished = true;
    if (!ok) {
        client->log(10, "%s not delivered", ina_proto_type_name(hdr.type));
    }
}

int Client::post_ctrl(const ina_proto_hdr_t &hdr, const void *payload, size_t len,
                      CtrlSend **out)
{
    *out = nullptr;
    if (!alive()) {
        return INA_ERR_UNREACHABLE;
    }
    auto cs = std::make_unique<CtrlSend>();
    cs->client = this;
    cs->hdr = hdr;
    if (hdr.type != INA_PROTO_HELLO && info_.protocol != 0) {
        cs->hdr.version = static_cast<uint8_t>(info_.protocol); // the connection's
    }
    if (len > 0) {
        const auto *p = static_cast<const uint8_t *>(payload);
        cs->payload.assign(p, p + len);
    }
    const Channel::Posted posted =
        channel_->post(cs->hdr, cs->payload.data(), cs->payload.size(), cs.get());
    if (posted == Channel::Posted::failed) {
        log(1, "sending %s failed", ina_proto_type_name(hdr.type));
        return INA_ERR_UNREACHABLE;
    }
    if (posted == Channel::Posted::pending) {
        *out = cs.get();
        ctrl_.push_back(std::move(cs));
    }
    return INA_OK;
}

void Client::reap_ctrl()
{
    ctrl_.remove_if([](const std::unique_ptr<CtrlSend> &cs) { return cs->finished; });
}

void Client::flush_ctrl(int timeout_ms)
{
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    reap_ctrl();
    while (!ctrl_.empty() && alive() && Clock::now() < deadline) {
        progress_wait(kPollSliceMs);
        reap_ctrl();
    }
}

int Client::post_detached(const ina_proto_hdr_t &hdr)
{
    reap_ctrl();
    CtrlSend *cs = nullptr;
    return post_ctrl(hdr, nullptr, 0, &cs);
}

int Client::request(ina_proto_hdr_t hdr, const void *payload, size_t len, uint8_t reply_type,
                    int timeout_ms, ina_proto_hdr_t *reply)
{
    reap_ctrl();
    pending_ = Pending{};
    pending_.active = true;
    pending_.req_type = hdr.type;
    pending_.reply_type = reply_type;
    pending_.cookie = hdr.arg;
    CtrlSend *cs = nullptr;
    int rc = post_ctrl(hdr, payload, len, &cs);
    if (rc != INA_OK) {
        pending_.active = false;
        return rc;
    }
    // The deadline is absolute: a control reply is one round trip.
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!pending_.done && !lost_) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            break;
        }
        drive_jobs(); // other jobs' calls keep moving meanwhile
        progress_wait(std::min<int>(kPollSliceMs, static_cast<int>(left.count()) + 1));
    }
    pending_.active = false;
    if (!pending_.done) {
        log(1, "no %s for %s", ina_proto_type_name(reply_type), ina_proto_type_name(hdr.type));
        if (!lost_) {
            // The payload must outlive UCX's use of it: a silent agent is a dead one.
            abandon("control request timed out");
        }
        return INA_ERR_UNREACHABLE;
    }
    *reply = pending_.reply;
    return reply->type == INA_PROTO_ERROR || reply->status != INA_PROTO_OK ? INA_ERR_PROTO
                                                                            : INA_OK;
}

bool Client::attach(Job *job)
{
    if (!jobs_.emplace(job->jid(), job).second) {
        return false;
    }
    std::vector<ina_proto_hdr_t> unclaimed;
    unclaimed.swap(unclaimed_);
    for (const ina_proto_hdr_t &h : unclaimed) {
        if (h.jid != job->jid()) {
            continue;
        }
        if (h.type == INA_PROTO_GRANT) {
            job->on_grant(h);
        } else {
            job->on_deny(h);
        }
    }
    return true;
}

void Client::detach(Job *job)
{
    auto it = jobs_.find(job->jid());
    if (it != jobs_.end() && it->second == job) {
        jobs_.erase(it);
    }
}

void *Client::on_rndv(const ina_proto_hdr_t &h, size_t len)
{
    if (h.type != INA_PROTO_RESULT) {
        return nullptr;
    }
    auto it = jobs_.find(h.jid);
    return it == jobs_.end() ? nullptr : it->second->landing(h, len);
}

void Client::on_landed(const ina_proto_hdr_t &h, void *dst, size_t len, bool ok)
{
    ++events_;
    ++heard_;
    auto it = jobs_.find(h.jid);
    if (it != jobs_.end()) { // a job leaves only when its calls finished
        it->second->on_landed(h, dst, len, ok);
    }
}

void Client::on_message(const ina_proto_hdr_t &h, const void *data, size_t length)
{
    if (info_.protocol != 0 && h.version != info_.protocol) {
        // Not the version the agent chose at HELLO: its fields may mean
        // something else. Dropped, and not heard: an agent that goes on so
        // is lost to the liveness check.
        log(1, "dropping a %s of protocol version %u: the connection speaks %u",
            ina_proto_type_name(h.type), h.version, info_.protocol);
        return;
    }
    ++heard_; // the agent is there (check_liveness)
    if (h.type == INA_PROTO_PONG) {
        // Only that: a PONG is no progress of any call, so an agent that
        // answers probes but never completes a call still meets the
        // no-progress timeout (progress_timeout_ms).
        return;
    }
    ++events_;
    log(100, "recv %s jid %u mid %llu sid %u status %s", ina_proto_type_name(h.type), h.jid,
        static_cast<unsigned long long>(h.mid), h.sid, ina_proto_status_name(h.status));
    switch (h.type) {
    case INA_PROTO_HELLO_ACK:
    case INA_PROTO_JOB_OPENED:
        if (pending_.active && !pending_.done && h.type == pending_.reply_type &&
            (h.type == INA_PROTO_HELLO_ACK || h.arg == pending_.cookie)) {
            pending_.reply = h;
            pending_.done = true;
        } else {
            log(1, "dropping an unexpected %s", ina_proto_type_name(h.type));
        }
        return;
    case INA_PROTO_RESULT:
    case INA_PROTO_GRANT:
    case INA_PROTO_DENY: {
        auto it = jobs_.find(h.jid);
        if (it == jobs_.end() && h.type != INA_PROTO_RESULT && pending_.active &&
            pending_.req_type == INA_PROTO_JOB_OPEN && unclaimed_.size() < kMaxUnclaimed) {
            // The verdict of a call that waited for this very member to open
            // the job: it may come with JOB_OPENED, before the job is ours.
            unclaimed_.push_back(h);
        } else if (it == jobs_.end()) {
            log(1, "dropping %s for unknown job %u", ina_proto_type_name(h.type), h.jid);
        } else if (h.type == INA_PROTO_RESULT) {
            it->second->on_result(h, data, length);
        } else if (h.type == INA_PROTO_GRANT) {
            it->second->on_grant(h);
        } else {
            it->second->on_deny(h);
        }
        return;
    }
    case INA_PROTO_ERROR:
        if (pending_.active && !pending_.done && ina_proto_error_rejected(&h) == pending_.req_type) {
            pending_.reply = h;
            pending_.done = true;
            return;
        }
        if (ina_proto_error_rejected(&h) == INA_PROTO_BLOCK) {
            auto it = jobs_.find(h.jid);
            if (it != jobs_.end()) {
                it->second->on_error(h);
                return;
            }
        }
        log(1, "agent rejected a %s (jid %u mid %llu sid %u): %s",
            ina_proto_type_name(ina_proto_error_rejected(&h)),
            h.jid, static_cast<unsigned long long>(h.mid), h.sid,
            ina_proto_status_name(h.status));
        return;
    default:
        log(1, "dropping a %s: not a message for clients", ina_proto_type_name(h.type));
        return;
    }
}

} // namespace ina::client

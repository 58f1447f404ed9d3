// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The client engine's connection (see ina_client.h, ina_engine.h): one
// channel per ina_client_t, control requests, the progress engine that
// drives every outstanding call of every job, and the C API (where every
// C++ exception stops). Jobs and calls are in ina_job.cpp.
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

#include "ina_siphash.h"
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
        hello.count = ucx::kStreamSegBytes; // the channel's UCX context runs with it
        hello.arg = rndv_bytes_;
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
    if (ack.count == 0 || ack.count > INA_PROTO_MAX_WINDOW || ack.arg < 16 ||
        ack.arg > INA_PROTO_MAX_SEG_BYTES) {
        err = "agent " + a + " sent an unusable HELLO_ACK (window " + std::to_string(ack.count) +
              ", seg bytes " + std::to_string(ack.arg) + ")";
        return INA_ERR_PROTO;
    }
    info_.max_window = ack.count;
    info_.seg_bytes = static_cast<uint32_t>(ack.arg);
    // The agent's word on blocks (0 from an agent without rendezvous).
    channel_->set_rndv_bytes(ack.mid);
    log(10, "connected to %s: protocol %u, max window %u, seg %u bytes, rendezvous: blocks "
            "from %llu B, results from %llu B (0 = never)",
        a.c_str(), info_.protocol, info_.max_window, info_.seg_bytes,
        static_cast<unsigned long long>(ack.mid),
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

void Client::post_detached(const ina_proto_hdr_t &hdr)
{
    reap_ctrl();
    CtrlSend *cs = nullptr;
    post_ctrl(hdr, nullptr, 0, &cs);
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
        if (pending_.active && !pending_.done && h.op == pending_.req_type) {
            pending_.reply = h;
            pending_.done = true;
            return;
        }
        if (h.op == INA_PROTO_BLOCK) {
            auto it = jobs_.find(h.jid);
            if (it != jobs_.end()) {
                it->second->on_error(h);
                return;
            }
        }
        log(1, "agent rejected a %s (jid %u mid %llu sid %u): %s", ina_proto_type_name(h.op),
            h.jid, static_cast<unsigned long long>(h.mid), h.sid,
            ina_proto_status_name(h.status));
        return;
    default:
        log(1, "dropping a %s: not a message for clients", ina_proto_type_name(h.type));
        return;
    }
}

} // namespace ina::client

// ------------------------------------------------------------------- C API
//
// No C++ exception crosses these functions: each body runs in guard(),
// which turns std::bad_alloc into INA_ERR_NOMEM and anything else into
// INA_ERR_INVALID (logged: it is a bug).

struct ina_client {
    explicit ina_client(const ina_client_config_t &cfg) : impl(cfg) {}
    ina::client::Client impl;
};

struct ina_job {
    ina_job(ina::client::Client *c, const ina_job_params_t &p, uint32_t rank) : impl(c, p, rank)
    {
    }
    ina::client::Job impl;
    uint8_t deny_status = 0; // ina_job_deny_status
};

namespace {

using ina::client::Call;
using ina::client::Client;

template <typename F> int guard(const char *where, F &&body) noexcept
{
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return INA_ERR_NOMEM;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "ina-client[%d]: %s: unexpected exception: %s\n",
                     static_cast<int>(getpid()), where, e.what());
        return INA_ERR_INVALID;
    }
}

// Every entry point holds the client's mutex while it uses the engine: the
// progress thread may run beside the caller (once per entry, never per block).
// A job whose client went away has no thread left: nothing to lock.
class EntryLock {
public:
    explicit EntryLock(Client *c)
    {
        if (c != nullptr) {
            lock_ = std::unique_lock<std::mutex>(c->mutex());
        }
    }

private:
    std::unique_lock<std::mutex> lock_;
};

// ina_call_wait with the lock held.
int wait_locked(ina_call_t *call, ina_cqe_t *cqe)
{
    Client *c = call->job()->client();
    if (c != nullptr) {
        c->wait([call] { return call->state() == Call::State::retired; });
    }
    // An orphaned job retires its calls when its client goes away.
    *cqe = call->cqe();
    return cqe->rc;
}

ina_cqe_t invalid_cqe()
{
    ina_cqe_t cqe{};
    cqe.rc = INA_ERR_INVALID;
    return cqe;
}

// ina_call_test and ina_call_decision: progress the client once if the call
// is outstanding, then report(call, cqe) says whether what was asked is
// known (1, cqe filled) or not (0). A freed call and an engine failure are
// reported as known, with the error.
template <typename Report>
int poll_call(const char *where, ina_call_t *call, ina_cqe_t *cqe, Report report)
{
    if (call == nullptr || call->state() == Call::State::free) {
        if (cqe != nullptr) { // programming error: report it rather than spin
            *cqe = invalid_cqe();
        }
        return 1;
    }
    int rc = guard(where, [&] {
        EntryLock lock(call->job()->client());
        if (call->state() == Call::State::active) {
            if (Client *c = call->job()->client()) {
                c->progress();
            }
        }
        return report(static_cast<Call &>(*call), cqe);
    });
    if (rc < 0) { // the engine failed: the call ends with that error
        if (cqe != nullptr) {
            *cqe = call->cqe();
            cqe->rc = static_cast<ina_status_t>(rc);
        }
        return 1;
    }
    return rc;
}

// The body every post entry shares (ina_job_post, ina_job_post_plan,
// ina_job_post_staged): check the handles, run `post(cqe)` under the
// client's lock, and report its outcome and any DENY status.
template <typename Post>
ina_status_t post_entry(const char *fn, ina_job_t *job, bool what_ok, ina_call_t **call,
                        ina_outcome_t *outcome, Post post)
{
    if (call != nullptr) {
        *call = nullptr;
    }
    if (outcome != nullptr) {
        *outcome = INA_OFFLOADED;
    }
    if (job == nullptr || !what_ok || call == nullptr || outcome == nullptr) {
        return INA_ERR_INVALID;
    }
    return static_cast<ina_status_t>(guard(fn, [&] {
        EntryLock lock(job->impl.client());
        ina_cqe_t cqe;
        int rc = post(&cqe);
        *outcome = cqe.outcome;
        job->deny_status = cqe.outcome == INA_FALLBACK_DENIED ? cqe.status : 0;
        return rc;
    }));
}

} // namespace

int ina::client::connect_over(const ina_client_config_t &cfg, const Client::ChannelFactory &open,
                              const std::string &peer, ina_client_t **out, std::string &err)
{
    *out = nullptr;
    return guard(__func__, [&] {
        auto c = std::make_unique<ina_client_t>(cfg);
        int r = c->impl.start(open, peer, err);
        if (r == INA_OK) {
            *out = c.release();
        }
        return r;
    });
}

extern "C" {

ina_status_t ina_client_connect(const ina_client_config_t *cfg, ina_client_t **out, char *err,
                                size_t errlen)
{
    if (out != nullptr) {
        *out = nullptr;
    }
    std::string why;
    const int rc = guard(__func__, [&] {
        if (cfg == nullptr || out == nullptr || cfg->agent_addr == nullptr) {
            why = "ina_client_connect: missing argument";
            return static_cast<int>(INA_ERR_INVALID);
        }
        auto c = std::make_unique<ina_client_t>(*cfg);
        int r = c->impl.connect(cfg->agent_addr, why);
        if (r == INA_OK) {
            *out = c.release();
        }
        return r;
    });
    if (rc == INA_ERR_NOMEM && why.empty()) {
        why = "out of memory";
    }
    if (rc != INA_OK && err != nullptr && errlen > 0) {
        std::snprintf(err, errlen, "%s", why.c_str());
    }
    return static_cast<ina_status_t>(rc);
}

void ina_client_disconnect(ina_client_t *client)
{
    // Orphans jobs still joined, closes the channel; the destructor does not throw.
    delete client;
}

void ina_client_agent_info(const ina_client_t *client, ina_agent_info_t *info)
{
    *info = client->impl.info();
}

int ina_client_alive(const ina_client_t *client)
{
    if (client == nullptr) {
        return 0;
    }
    Client &c = const_cast<ina_client_t *>(client)->impl;
    EntryLock lock(&c);
    return c.alive();
}

int ina_client_progress(ina_client_t *client)
{
    if (client == nullptr) {
        return 0;
    }
    guard(__func__, [&] {
        EntryLock lock(&client->impl);
        client->impl.progress();
        return 0;
    });
    return ina_client_alive(client);
}

namespace {

// The window and block a job asks for, clamped to what the agent offers
// (every member computes the same from the same request). False if the
// block leaves nothing.
bool job_shape(const ina_agent_info_t &info, uint32_t requested_window,
               uint32_t requested_block_bytes, uint32_t *window, uint32_t *block)
{
    *window = requested_window == 0 ? info.max_window : std::min(requested_window, info.max_window);
    *block = requested_block_bytes == 0 ? info.seg_bytes
                                        : std::min(requested_block_bytes, info.seg_bytes);
    *block &= ~15u; // every dtype (<= 16 bytes) divides it
    return *block != 0;
}

// The member's descriptor of a job it opened (JOB_OPENED).
int attach_job(Client &c, const ina_job_params_t &params, uint32_t rank, ina_job_t **out)
{
    auto j = std::make_unique<ina_job_t>(&c, params, rank);
    if (!c.attach(&j->impl)) {
        c.log(1, "job %u already joined by this client", params.jid);
        return INA_ERR_INVALID;
    }
    *out = j.release();
    return INA_OK;
}

// JOB_OPEN (`h`, payload) and its reply: the job's parameters in `params`
// when the agent named a job with a usable window.
int job_request(Client &c, ina_proto_hdr_t h, const void *payload, size_t len, uint32_t block,
                ina_job_params_t *params)
{
    ina_proto_hdr_t reply{};
    int rc = c.request(h, payload, len, INA_PROTO_JOB_OPENED, c.progress_timeout_ms(), &reply);
    if (rc != INA_OK) {
        c.log(1, "JOB_OPEN as rank %u failed: %s", h.rank,
              reply.type != 0 ? ina_proto_status_name(reply.status) : "no answer");
        return rc;
    }
    if (reply.jid == 0 || reply.window == 0 || reply.window > h.window) {
        c.log(1, "JOB_OPENED names job %u with an unusable window %u (asked %u)", reply.jid,
              reply.window, h.window);
        return INA_ERR_PROTO;
    }
    params->jid = reply.jid;
    params->window = reply.window;
    params->ahead = std::min<uint32_t>(reply.ahead, reply.window);
    params->block_bytes = block;
    params->nmembers = h.count;
    c.log(10, "job %u (JOB_OPENED): %u members, window %u, block %u bytes", reply.jid, h.count,
          reply.window, block);
    return INA_OK;
}

// The job key: FNV-1a over 128 bits (offset basis and prime of the FNV
// specification).
using u128 = unsigned __int128;
constexpr u128 kFnvPrime = (static_cast<u128>(1) << 88) | 0x13b;
constexpr u128 kFnvBasis =
    (static_cast<u128>(0x6c62272e07bb0142ull) << 64) | static_cast<u128>(0x62b821756295c58dull);
static_assert(INA_PROTO_JOB_KEY_BYTES == sizeof(u128), "a job key is one FNV-1a 128 hash");

u128 key_load(const ina_job_key_t &k)
{
    u128 h = 0;
    for (uint8_t b : k.bytes) {
        h = h << 8 | b;
    }
    return h;
}

void key_store(ina_job_key_t &k, u128 h)
{
    for (int i = INA_PROTO_JOB_KEY_BYTES - 1; i >= 0; --i) {
        k.bytes[i] = static_cast<uint8_t>(h);
        h >>= 8;
    }
}
} // namespace

void ina_job_key_init(ina_job_key_t *key)
{
    key_store(*key, kFnvBasis);
    std::memset(key->cap, 0, sizeof(key->cap));
}

void ina_job_key_add(ina_job_key_t *key, const void *data, size_t len)
{
    u128 h = key_load(*key);
    const auto *p = static_cast<const uint8_t *>(data);
    for (size_t i = 0; i < len; ++i) {
        h = (h ^ p[i]) * kFnvPrime;
    }
    key_store(*key, h);
}

void ina_job_key_seal(ina_job_key_t *key, const uint8_t *secret)
{
    uint8_t msg[INA_PROTO_JOB_KEY_BYTES + 1];
    std::memcpy(msg, key->bytes, INA_PROTO_JOB_KEY_BYTES);
    static_assert(INA_PROTO_JOB_CAP_BYTES == 2 * sizeof(uint64_t), "two SipHash outputs");
    for (uint8_t half = 0; half < 2; ++half) {
        msg[INA_PROTO_JOB_KEY_BYTES] = half;
        const uint64_t v = ina_siphash24(secret, msg, sizeof(msg));
        std::memcpy(key->cap + half * sizeof(v), &v, sizeof(v));
    }
}

ina_status_t ina_job_open(ina_client_t *client, const ina_job_key_t *key, uint32_t nmembers,
                          const uint32_t *node_of_member, uint32_t rank,
                          uint32_t requested_window, uint32_t requested_block_bytes,
                          ina_job_params_t *params, ina_job_t **out)
{
    return ina_job_open_tree(client, key, nmembers, node_of_member, rank, 0, 0, rank, nmembers,
                             requested_window, requested_block_bytes, params, out);
}

namespace {

// ina_job_open_tree, and JOB_OPEN's stripe word (ina_proto.h; 0: none).
ina_status_t open_job(ina_client_t *client, const ina_job_key_t *key, uint32_t nmembers,
                      const uint32_t *node_of_member, uint32_t rank, uint32_t leaf,
                      uint32_t nleaves, uint32_t comm_rank, uint32_t comm_size,
                      uint32_t requested_window, uint32_t requested_block_bytes, uint32_t stripe,
                      ina_job_params_t *params, ina_job_t **out)
{
    if (out != nullptr) {
        *out = nullptr;
    }
    if (client == nullptr || key == nullptr || params == nullptr || out == nullptr ||
        node_of_member == nullptr || nmembers == 0 || nmembers > INA_PROTO_MAX_MEMBERS ||
        rank >= nmembers || (nleaves == 0 ? leaf != 0 : leaf >= nleaves) ||
        nleaves > INA_PROTO_MAX_MEMBERS || comm_size < nmembers || comm_rank >= comm_size ||
        (nleaves <= 1 && (comm_size != nmembers || comm_rank != rank))) {
        return INA_ERR_INVALID;
    }
    return static_cast<ina_status_t>(guard(__func__, [&]() -> int {
        Client &c = client->impl;
        EntryLock lock(&c);
        uint32_t window = 0, block = 0;
        if (!job_shape(c.info(), requested_window, requested_block_bytes, &window, &block)) {
            return INA_ERR_INVALID;
        }
        std::vector<uint8_t> payload(key->bytes, key->bytes + INA_PROTO_JOB_KEY_BYTES);
        payload.insert(payload.end(), key->cap, key->cap + INA_PROTO_JOB_CAP_BYTES);
        const auto *ids = reinterpret_cast<const uint8_t *>(node_of_member);
        payload.insert(payload.end(), ids, ids + sizeof(uint32_t) * nmembers);
        ina_proto_hdr_t h;
        ina_proto_init(&h, INA_PROTO_JOB_OPEN);
        h.rank = rank;
        h.mid = c.tenant();
        h.count = nmembers;
        h.window = static_cast<uint16_t>(window);
        h.arg = c.next_cookie();
        h.seg_count = nleaves;
        h.offset = leaf;
        h.sid = stripe;
        int rc = job_request(c, h, payload.data(), payload.size(), block, params);
        if (rc != INA_OK) {
            return rc;
        }
        params->nmembers = comm_size; // a call's geometry is the communicator's
        rc = attach_job(c, *params, rank, out);
        if (rc == INA_OK) {
            (*out)->impl.set_comm_rank(comm_rank);
            (*out)->impl.set_tree(nleaves > 1);
            (*out)->impl.set_peer_tag(ina::client::peer_tag_of(*key));
        }
        return rc;
    }));
}

} // namespace

ina_status_t ina_job_open_tree(ina_client_t *client, const ina_job_key_t *key, uint32_t nmembers,
                               const uint32_t *node_of_member, uint32_t rank, uint32_t leaf,
                               uint32_t nleaves, uint32_t comm_rank, uint32_t comm_size,
                               uint32_t requested_window, uint32_t requested_block_bytes,
                               ina_job_params_t *params, ina_job_t **out)
{
    return open_job(client, key, nmembers, node_of_member, rank, leaf, nleaves, comm_rank,
                    comm_size, requested_window, requested_block_bytes, 0, params, out);
}

ina_status_t ina_job_open_stripe(ina_client_t *client, const ina_job_key_t *key,
                                 uint32_t nmembers, const uint32_t *node_of_member, uint32_t rank,
                                 uint32_t stripe_index, uint32_t stripe_width,
                                 uint32_t requested_window, uint32_t requested_block_bytes,
                                 ina_job_params_t *params, ina_job_t **out)
{
    if (stripe_width > 0xffffu || (stripe_width > 1 && stripe_index >= stripe_width)) {
        return INA_ERR_INVALID;
    }
    const uint32_t stripe = stripe_width > 1 ? (stripe_width << 16) | stripe_index : 0;
    return open_job(client, key, nmembers, node_of_member, rank, 0, 0, rank, nmembers,
                    requested_window, requested_block_bytes, stripe, params, out);
}

void ina_job_set_groups(ina_job_t *job, const uint32_t *group_of_member, uint32_t n)
{
    if (job == nullptr || group_of_member == nullptr) {
        return;
    }
    guard(__func__, [&] {
        EntryLock lock(job->impl.client());
        job->impl.set_groups(group_of_member, n);
        return 0;
    });
}

uint64_t ina_job_certified(const ina_job_t *job)
{
    if (job == nullptr) {
        return 0;
    }
    EntryLock lock(job->impl.client());
    return job->impl.certified();
}

int ina_job_has_peers(const ina_job_t *job)
{
    return job != nullptr && job->impl.has_peers() ? 1 : 0;
}

int ina_job_reachable(ina_job_t *job)
{
    Client *client = job != nullptr ? job->impl.client() : nullptr;
    if (client == nullptr) {
        return 0;
    }
    return guard(__func__, [&] {
               EntryLock lock(client);
               client->progress();
               return client->alive() ? 1 : 0;
           }) == 1
               ? 1
               : 0;
}

void ina_job_keep_blocks(ina_job_t *job, int on)
{
    if (job != nullptr) {
        EntryLock lock(job->impl.client());
        job->impl.set_keeps(on != 0);
    }
}

size_t ina_job_kept_calls(const ina_job_t *job, size_t *bytes)
{
    if (job == nullptr) {
        return 0;
    }
    EntryLock lock(job->impl.client());
    if (bytes != nullptr) {
        *bytes = job->impl.kept_bytes();
    }
    return job->impl.kept_calls();
}

void ina_job_set_peers(ina_job_t *job, const ina_peer_ops_t *ops)
{
    if (job != nullptr && ops != nullptr && ops->send != nullptr) {
        EntryLock lock(job->impl.client());
        job->impl.set_peers(*ops);
    }
}

int ina_job_peer_message(ina_job_t *job, uint32_t from, const void *msg, size_t len)
{
    if (job == nullptr || msg == nullptr) {
        return 0;
    }
    return guard(__func__, [&] {
               EntryLock lock(job->impl.client());
               return job->impl.peer_message(from, msg, len) ? 1 : 0;
           }) == 1
               ? 1
               : 0;
}

int ina_peer_answer_absent(const ina_job_key_t *key, const ina_peer_ops_t *ops, uint32_t from,
                           const void *msg, size_t len)
{
    if (key == nullptr || ops == nullptr || ops->send == nullptr || msg == nullptr) {
        return 0;
    }
    return guard(__func__, [&] {
               return ina::client::answer_absent(ina::client::peer_tag_of(*key), *ops, from, msg,
                                                 len)
                          ? 1
                          : 0;
           }) == 1
               ? 1
               : 0;
}

ina_status_t ina_call_recover_start(ina_call_t *call, int host_ok)
{
    if (call == nullptr) {
        return INA_ERR_INVALID;
    }
    return static_cast<ina_status_t>(guard(__func__, [&] {
        EntryLock lock(call->job()->client());
        return call->recover_start(host_ok != 0);
    }));
}

int ina_call_recover_test(ina_call_t *call, ina_cqe_t *cqe)
{
    if (call == nullptr || cqe == nullptr) {
        return 0;
    }
    const int rc = guard(__func__, [&] {
        EntryLock lock(call->job()->client());
        return call->recover_test(cqe) ? 1 : 0;
    });
    if (rc < 0) { // out of memory in a staged call's recovery: it fails
        *cqe = call->cqe();
        cqe->rc = static_cast<ina_status_t>(rc);
        return 1;
    }
    return rc;
}

int ina_call_recover_decision(ina_call_t *call, ina_cqe_t *cqe)
{
    if (call == nullptr || cqe == nullptr) {
        return 0;
    }
    const int rc = guard(__func__, [&] {
        EntryLock lock(call->job()->client());
        ina_cqe_t done;
        (void) call->recover_test(&done); // progresses a staged call's recovery
        return call->recover_decision(cqe) ? 1 : 0;
    });
    if (rc < 0) {
        *cqe = call->cqe();
        cqe->rc = static_cast<ina_status_t>(rc);
        return 1;
    }
    return rc;
}

void ina_job_leave(ina_job_t *job)
{
    if (job == nullptr) {
        return;
    }
    guard(__func__, [&] {
        EntryLock lock(job->impl.client());
        job->impl.leave();
        return 0;
    });
    EntryLock lock(job->impl.client());
    delete job; // detaches from the client: still under the lock
}

ina_status_t ina_job_post(ina_job_t *job, const ina_coll_desc_t *desc, ina_call_t **call,
                          ina_outcome_t *outcome)
{
    return post_entry(__func__, job, desc != nullptr, call, outcome,
                      [&](ina_cqe_t *cqe) { return job->impl.post(*desc, true, call, cqe); });
}

ina_status_t ina_job_plan(ina_job_t *job, const ina_coll_desc_t *desc, ina_call_plan_t **plan)
{
    if (plan != nullptr) {
        *plan = nullptr;
    }
    if (job == nullptr || desc == nullptr || plan == nullptr) {
        return INA_ERR_INVALID;
    }
    return static_cast<ina_status_t>(guard(__func__, [&] {
        auto p = std::make_unique<ina_call_plan>();
        EntryLock lock(job->impl.client());
        const int rc = job->impl.plan(*desc, *p);
        if (rc == INA_OK) {
            *plan = p.release();
        }
        return rc;
    }));
}

ina_status_t ina_job_post_plan(ina_job_t *job, ina_call_plan_t *plan, ina_call_t **call,
                               ina_outcome_t *outcome)
{
    return post_entry(__func__, job, plan != nullptr, call, outcome,
                      [&](ina_cqe_t *cqe) { return job->impl.post(*plan, true, call, cqe); });
}

void ina_call_plan_free(ina_call_plan_t *plan)
{
    delete plan;
}

uint8_t ina_job_deny_status(const ina_job_t *job)
{
    return job != nullptr ? job->deny_status : 0;
}

ina_status_t ina_job_post_staged(ina_job_t *job, const ina_staged_desc_t *desc,
                                 ina_call_t **call, ina_outcome_t *outcome)
{
    return post_entry(__func__, job, desc != nullptr, call, outcome,
                      [&](ina_cqe_t *cqe) { return job->impl.post_staged(*desc, call, cqe); });
}

int ina_call_decision(ina_call_t *call, ina_cqe_t *cqe)
{
    return poll_call(__func__, call, cqe, [](Call &c, ina_cqe_t *out) {
        if (c.state() == Call::State::retired) {
            if (out != nullptr) {
                *out = c.cqe();
            }
            return 1;
        }
        if (!c.decided()) {
            return 0;
        }
        if (out != nullptr) {
            *out = c.decision_cqe();
        }
        return 1;
    });
}

void ina_call_background(ina_call_t *call)
{
    if (call == nullptr) {
        return;
    }
    Client *c = call->job()->client();
    if (c == nullptr || !c->has_thread()) {
        return; // nobody to hand it to: it moves when the caller polls
    }
    EntryLock lock(c);
    if (call->state() == Call::State::active) {
        call->set_background();
        c->wake_thread();
    }
}

void ina_call_abort(ina_call_t *call)
{
    if (call == nullptr || call->state() == Call::State::free) {
        return;
    }
    ina::client::Job *job = call->job();
    guard(__func__, [&] {
        EntryLock lock(job->client());
        job->abort(call);
        return 0;
    });
}

int ina_call_test(ina_call_t *call, ina_cqe_t *cqe)
{
    return poll_call(__func__, call, cqe, [](Call &c, ina_cqe_t *out) {
        if (c.state() != Call::State::retired) {
            return 0;
        }
        if (out != nullptr) {
            *out = c.cqe();
        }
        return 1;
    });
}

ina_status_t ina_call_wait(ina_call_t *call, ina_cqe_t *cqe)
{
    ina_cqe_t local;
    if (cqe == nullptr) {
        cqe = &local;
    }
    if (call == nullptr || call->state() == Call::State::free) {
        *cqe = invalid_cqe();
        return cqe->rc;
    }
    int rc = guard(__func__, [&] {
        EntryLock lock(call->job()->client());
        return wait_locked(call, cqe);
    });
    return cqe->rc = static_cast<ina_status_t>(rc);
}

void ina_call_free(ina_call_t *call)
{
    if (call == nullptr) {
        return;
    }
    ina::client::Job *job = call->job();
    guard(__func__, [&] {
        EntryLock lock(job->client());
        if (call->state() == Call::State::active && job->client() != nullptr) {
            // A programming error: the buffers are still the engine's. Finish
            // the call first so that nothing writes into them after this returns.
            job->client()->log(0, "job %u: call of mid %llu freed before completion "
                                  "(a bug in the caller); completing it first",
                               job->jid(), static_cast<unsigned long long>(call->mid()));
            ina_cqe_t cqe;
            wait_locked(call, &cqe);
        }
        job->release(call);
        return 0;
    });
}

ina_status_t ina_job_run(ina_job_t *job, const ina_coll_desc_t *desc, ina_cqe_t *cqe)
{
    ina_cqe_t local;
    if (cqe == nullptr) {
        cqe = &local;
    }
    *cqe = ina_cqe_t{};
    if (job == nullptr || desc == nullptr) {
        *cqe = invalid_cqe();
        return cqe->rc;
    }
    int rc = guard(__func__, [&] {
        // One lock for the whole call: the progress thread stays out of the
        // blocking path (this call progresses every other call meanwhile).
        EntryLock lock(job->impl.client());
        ina_call_t *call = nullptr;
        int r = job->impl.post(*desc, false, &call, cqe);
        if (r != INA_OK || call == nullptr) {
            return r;
        }
        wait_locked(call, cqe);
        job->impl.release(call);
        return static_cast<int>(cqe->rc);
    });
    return cqe->rc = static_cast<ina_status_t>(rc);
}

ina_status_t ina_job_allreduce(ina_job_t *job, const void *sbuf, void *rbuf, uint64_t count,
                               unsigned dtype, unsigned op, ina_cqe_t *cqe)
{
    ina_coll_desc_t d{};
    d.coll = INA_COLL_ALLREDUCE;
    d.op = op;
    d.dtype = dtype;
    d.sbuf = sbuf;
    d.rbuf = rbuf;
    d.count = count;
    return ina_job_run(job, &d, cqe);
}

} // extern "C"

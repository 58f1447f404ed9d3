// The client engine's connection (see ina_client.h, ina_engine.h): one UCP
// context/worker/endpoint per ina_client_t, control requests, the progress
// engine that drives every outstanding call of every job, and the C API.
// Jobs and calls are in ina_job.cpp.
#include "ina_engine.h"

#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <new>
#include <system_error>

namespace ina {

namespace {

struct ConfigDeleter {
    void operator()(ucp_config_t *c) const { ucp_config_release(c); }
};
struct AddrinfoDeleter {
    void operator()(addrinfo *a) const { freeaddrinfo(a); }
};

void format_err(char *err, size_t errlen, const std::string &msg)
{
    if (err != nullptr && errlen > 0) {
        std::snprintf(err, errlen, "%s", msg.c_str());
    }
}

// Upper bound of one sleep of the progress thread: it is woken by UCX events
// and by stop_thread() (ucp_worker_signal); the bound only guards against an
// event that does not fire the wake-up fd.
constexpr int kThreadSliceMs = 100;

} // namespace

// ------------------------------------------------------------------ Client

Client::Client(const ina_client_config_t &cfg)
    : connect_timeout_ms_(cfg.connect_timeout_ms > 0 ? cfg.connect_timeout_ms : 10000),
      progress_timeout_ms_(cfg.progress_timeout_ms > 0 ? cfg.progress_timeout_ms : 30000),
      verbose_(cfg.verbose), want_thread_(cfg.progress_thread != 0), stall_since_(Clock::now()),
      last_round_(stall_since_)
{
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
    std::fprintf(stderr, "ina-client[%d]: %s\n", static_cast<int>(getpid()), line);
}

int Client::connect(const char *addr, std::string &err)
{
    // Split "host:port" at the last colon (a bare IPv6 host keeps its colons).
    std::string a(addr != nullptr ? addr : "");
    size_t colon = a.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == a.size()) {
        err = "agent address '" + a + "' is not host:port";
        return INA_EINVAL;
    }
    std::string host = a.substr(0, colon);
    std::string port = a.substr(colon + 1);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res_raw = nullptr;
    int gai = getaddrinfo(host.c_str(), port.c_str(), &hints, &res_raw);
    if (gai != 0) {
        err = "cannot resolve agent address '" + a + "': " + gai_strerror(gai);
        return INA_UNREACHABLE;
    }
    std::unique_ptr<addrinfo, AddrinfoDeleter> res(res_raw);

    ucp_config_t *cfg_raw = nullptr;
    ucs_status_t st = ucp_config_read(nullptr, nullptr, &cfg_raw);
    if (st != UCS_OK) {
        err = std::string("ucp_config_read: ") + ucs_status_string(st);
        return INA_UNREACHABLE;
    }
    std::unique_ptr<ucp_config_t, ConfigDeleter> config(cfg_raw);

    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
    params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    params.name = "ina-client";
    ucp_context_h ctx = nullptr;
    st = ucp_init(&params, config.get(), &ctx);
    if (st != UCS_OK) {
        err = std::string("ucp_init: ") + ucs_status_string(st);
        return INA_UNREACHABLE;
    }
    context_.reset(ctx);

    ucp_worker_params_t wparams{};
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    // With a progress thread two threads use the worker, one at a time
    // (mutex_): that is SERIALIZED, not SINGLE.
    wparams.thread_mode = want_thread_ ? UCS_THREAD_MODE_SERIALIZED : UCS_THREAD_MODE_SINGLE;
    ucp_worker_h worker = nullptr;
    st = ucp_worker_create(context_.get(), &wparams, &worker);
    if (st != UCS_OK) {
        err = std::string("ucp_worker_create: ") + ucs_status_string(st);
        return INA_UNREACHABLE;
    }
    worker_.reset(worker);
    st = ucp_worker_get_efd(worker, &efd_);
    if (st != UCS_OK) {
        err = std::string("ucp_worker_get_efd: ") + ucs_status_string(st);
        return INA_UNREACHABLE;
    }

    ucp_am_handler_param_t am{};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                    UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    am.id = INA_PROTO_AM_TO_CLIENT;
    am.flags = UCP_AM_FLAG_WHOLE_MSG;
    am.cb = &Client::am_cb;
    am.arg = this;
    st = ucp_worker_set_am_recv_handler(worker, &am);
    if (st != UCS_OK) {
        err = std::string("ucp_worker_set_am_recv_handler: ") + ucs_status_string(st);
        return INA_UNREACHABLE;
    }

    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep.sockaddr.addr = res->ai_addr;
    ep.sockaddr.addrlen = res->ai_addrlen;
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = &Client::ep_error_cb;
    ep.err_handler.arg = this;
    st = ucp_ep_create(worker, &ep, &ep_);
    if (st != UCS_OK) {
        ep_ = nullptr;
        err = "cannot connect to agent " + a + ": " + ucs_status_string(st);
        return INA_UNREACHABLE;
    }

    ina_proto_hdr_t hello;
    ina_proto_init(&hello, INA_PROTO_HELLO);
    ina_proto_hdr_t ack{};
    int rc = request(hello, nullptr, 0, INA_PROTO_HELLO_ACK, connect_timeout_ms_, &ack);
    if (rc != INA_OK) {
        if (lost_) {
            err = "cannot connect to agent " + a + ": " + ucs_status_string(lost_status_);
        } else if (rc == INA_EPROTO) {
            err = "agent " + a + " rejected HELLO: " + ina_proto_status_name(ack.status);
        } else {
            err = "no HELLO_ACK from agent " + a + " within " +
                  std::to_string(connect_timeout_ms_) + " ms";
        }
        return rc == INA_EPROTO ? INA_EPROTO : INA_UNREACHABLE;
    }
    if (ack.count == 0 || ack.count > INA_PROTO_MAX_WINDOW || ack.arg < 16 ||
        ack.arg > INA_PROTO_MAX_SEG_BYTES) {
        err = "agent " + a + " sent an unusable HELLO_ACK (window " + std::to_string(ack.count) +
              ", seg bytes " + std::to_string(ack.arg) + ")";
        return INA_EPROTO;
    }
    info_.max_window = ack.count;
    info_.seg_bytes = static_cast<uint32_t>(ack.arg);
    log(10, "connected to %s: max window %u, seg %u bytes", a.c_str(), info_.max_window,
        info_.seg_bytes);
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
    std::unique_lock<std::mutex> lk(mutex_);
    for (;;) {
        // Asleep while the caller needs no help: blocking calls and callers
        // that poll never wake this thread.
        thread_cv_.wait(lk, [this] { return thread_stop_ || background_busy(); });
        if (thread_stop_) {
            return;
        }
        const uint64_t before = events_;
        round(false);
        if (!background_busy()) {
            continue;
        }
        // Sleep on the wake-up fd with the engine unlocked, so that the
        // caller may enter (and progress) meanwhile.
        const ucs_status_t st = ucp_worker_arm(worker_.get());
        if (st == UCS_ERR_BUSY && events_ != before) {
            continue; // more arrived during the round: another round
        }
        lk.unlock();
        if (st == UCS_OK) {
            pollfd pfd{efd_, POLLIN, 0};
            poll(&pfd, 1, kThreadSliceMs);
        } else {
            // Not armed and nothing of ours happened: never spin.
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        lk.lock();
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
    ucp_worker_signal(worker_.get()); // out of poll() now (thread-safe by contract)
    thread_.join();
}

Client::~Client()
{
    // First: nothing below may run beside the thread.
    stop_thread();
    // Jobs still joined outlive us (the component leaves them later): their
    // outstanding calls fail now, later calls report INA_UNREACHABLE.
    for (auto &kv : jobs_) {
        kv.second->orphan();
    }
    jobs_.clear();
    if (ep_ != nullptr) {
        flush_ctrl(std::min(progress_timeout_ms_, 2000));
        close_endpoint();
    }
    // Destroy the worker now: a request it still holds may call back into ctrl_.
    worker_.reset();
}

void Client::close_endpoint()
{
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = lost_ ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t req = ucp_ep_close_nbx(ep_, &p);
    ep_ = nullptr;
    if (req == nullptr || UCS_PTR_IS_ERR(req)) {
        return;
    }
    auto deadline = Clock::now() + std::chrono::milliseconds(std::min(progress_timeout_ms_, 2000));
    while (ucp_request_check_status(req) == UCS_INPROGRESS && Clock::now() < deadline) {
        progress_wait(kPollSliceMs);
    }
    if (ucp_request_check_status(req) == UCS_INPROGRESS) {
        log(1, "endpoint close did not complete; destroying the worker anyway");
        return; // the worker's destruction releases it
    }
    ucp_request_free(req);
}

void Client::poll_events()
{
    while (ucp_worker_progress(worker_.get()) != 0) {
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

void Client::round(bool by_caller)
{
    poll_events();
    drive_jobs();
    if (!by_caller) {
        return;
    }

    // No progress: calls are waiting and no callback fired for
    // progress_timeout_ms of steady polling. A gap between two rounds (the
    // application computed instead of polling) restarts the clock: only time
    // the caller spent waiting counts against the agent. The progress
    // thread's rounds do not count: while the caller computes, another rank
    // may compute too before it posts its part.
    const auto now = Clock::now();
    const auto timeout = std::chrono::milliseconds(progress_timeout_ms_);
    if (now - last_round_ > std::max<Clock::duration>(timeout / 4, std::chrono::milliseconds(50))) {
        stall_since_ = now;
    }
    last_round_ = now;
    if (events_ != seen_events_) {
        seen_events_ = events_;
        stall_since_ = now;
    }
    if (!busy()) {
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

void Client::progress_wait(int max_block_ms)
{
    const uint64_t before = events_;
    const auto spin_end = Clock::now() + kSpin;
    do {
        ucp_worker_progress(worker_.get());
        if (events_ != before) {
            return;
        }
    } while (Clock::now() < spin_end);
    ucs_status_t st = ucp_worker_arm(worker_.get());
    if (st == UCS_ERR_BUSY) {
        return; // more to progress: the caller loops
    }
    if (st != UCS_OK) {
        log(1, "ucp_worker_arm: %s", ucs_status_string(st));
    }
    pollfd pfd{efd_, POLLIN, 0};
    poll(&pfd, 1, std::max(0, max_block_ms));
}

void Client::abandon(const char *why)
{
    if (!lost_) {
        log(1, "giving up on the agent: %s", why);
        lost_ = true;
        lost_status_ = UCS_ERR_TIMED_OUT;
    }
    if (ep_ != nullptr) {
        close_endpoint();
    }
}

void Client::ep_error_cb(void *arg, ucp_ep_h, ucs_status_t status)
{
    auto *self = static_cast<Client *>(arg);
    ++self->events_;
    if (!self->lost_) {
        self->lost_ = true;
        self->lost_status_ = status;
        self->log(1, "connection to the agent lost: %s", ucs_status_string(status));
    }
}

void Client::ctrl_send_cb(void *request, ucs_status_t status, void *user_data)
{
    auto *cs = static_cast<CtrlSend *>(user_data);
    ++cs->client->events_;
    cs->done = true;
    if (status != UCS_OK) {
        cs->client->log(10, "%s not delivered: %s", ina_proto_type_name(cs->hdr.type),
                        ucs_status_string(status));
    }
    ucp_request_free(request);
}

int Client::post_ctrl(const ina_proto_hdr_t &hdr, const void *payload, size_t len,
                      CtrlSend **out)
{
    *out = nullptr;
    if (!alive()) {
        return INA_UNREACHABLE;
    }
    std::unique_ptr<CtrlSend> cs(new (std::nothrow) CtrlSend);
    if (!cs) {
        return INA_ENOMEM;
    }
    cs->client = this;
    cs->hdr = hdr;
    if (len > 0) {
        const auto *p = static_cast<const uint8_t *>(payload);
        cs->payload.assign(p, p + len);
    }
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                     UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
    p.cb.send = &Client::ctrl_send_cb;
    p.user_data = cs.get();
    ucs_status_ptr_t req = ucp_am_send_nbx(ep_, INA_PROTO_AM_TO_AGENT, &cs->hdr, sizeof(cs->hdr),
                                           cs->payload.data(), cs->payload.size(), &p);
    if (UCS_PTR_IS_ERR(req)) {
        log(1, "sending %s failed: %s", ina_proto_type_name(hdr.type),
            ucs_status_string(UCS_PTR_STATUS(req)));
        return INA_UNREACHABLE;
    }
    if (req != nullptr) {
        *out = cs.get();
        ctrl_.push_back(std::move(cs));
    }
    return INA_OK;
}

void Client::reap_ctrl()
{
    ctrl_.remove_if([](const std::unique_ptr<CtrlSend> &cs) { return cs->done; });
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
        return INA_UNREACHABLE;
    }
    *reply = pending_.reply;
    return reply->type == INA_PROTO_ERROR || reply->status != INA_PROTO_OK ? INA_EPROTO : INA_OK;
}

bool Client::attach(Job *job)
{
    return jobs_.emplace(job->jid(), job).second;
}

void Client::detach(Job *job)
{
    auto it = jobs_.find(job->jid());
    if (it != jobs_.end() && it->second == job) {
        jobs_.erase(it);
    }
}

ucs_status_t Client::am_cb(void *arg, const void *header, size_t header_length, void *data,
                           size_t length, const ucp_am_recv_param_t *param)
{
    auto *self = static_cast<Client *>(arg);
    ++self->events_;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        // The agent sends eagerly; a rendezvous message is not ours to fetch.
        self->log(1, "dropping a rendezvous message from the agent (%zu bytes)", length);
        return UCS_OK;
    }
    ina_proto_status_t st = ina_proto_check(header, header_length, length);
    if (st != INA_PROTO_OK) {
        self->log(1, "dropping a bad message from the agent: %s (header %zu bytes, payload %zu)",
                  ina_proto_status_name(st), header_length, length);
        return UCS_OK;
    }
    ina_proto_hdr_t h;
    std::memcpy(&h, header, sizeof(h));
    self->on_message(h, data, length);
    return UCS_OK; // payload consumed (copied) inside the callback
}

void Client::on_message(const ina_proto_hdr_t &h, const void *data, size_t length)
{
    log(100, "recv %s jid %u mid %llu sid %u status %s", ina_proto_type_name(h.type), h.jid,
        static_cast<unsigned long long>(h.mid), h.sid, ina_proto_status_name(h.status));
    switch (h.type) {
    case INA_PROTO_HELLO_ACK:
    case INA_PROTO_JOB_CREATED:
    case INA_PROTO_JOB_JOINED:
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
        if (it == jobs_.end()) {
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

} // namespace ina

// ------------------------------------------------------------------- C API

struct ina_client {
    std::unique_ptr<ina::Client> impl;
};

struct ina_job {
    std::unique_ptr<ina::Job> impl;
};

namespace {

// Every entry point holds the client's mutex while it uses the engine: the
// progress thread may run beside the caller (once per entry, never per block).
// A job whose client went away has no thread left: nothing to lock.
class EntryLock {
public:
    explicit EntryLock(ina::Client *c)
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
    ina::Client *c = call->job()->client();
    if (c != nullptr) {
        c->wait([call] { return call->state() == ina::Call::State::retired; });
    }
    // An orphaned job retires its calls when its client goes away.
    *cqe = call->cqe();
    return cqe->rc;
}

} // namespace

extern "C" {

int ina_client_connect(const ina_client_config_t *cfg, ina_client_t **out, char *err,
                       size_t errlen)
{
    if (out != nullptr) {
        *out = nullptr;
    }
    if (cfg == nullptr || out == nullptr || cfg->agent_addr == nullptr) {
        ina::format_err(err, errlen, "ina_client_connect: missing argument");
        return INA_EINVAL;
    }
    std::unique_ptr<ina_client_t> c(new (std::nothrow) ina_client_t);
    if (!c || !(c->impl = std::unique_ptr<ina::Client>(new (std::nothrow) ina::Client(*cfg)))) {
        ina::format_err(err, errlen, "out of memory");
        return INA_ENOMEM;
    }
    std::string why;
    int rc = c->impl->connect(cfg->agent_addr, why);
    if (rc != INA_OK) {
        ina::format_err(err, errlen, why);
        return rc;
    }
    *out = c.release();
    return INA_OK;
}

void ina_client_disconnect(ina_client_t *client)
{
    delete client; // orphans jobs still joined, closes the endpoint
}

void ina_client_agent_info(const ina_client_t *client, ina_agent_info_t *info)
{
    *info = client->impl->info();
}

int ina_client_alive(const ina_client_t *client)
{
    if (client == nullptr) {
        return 0;
    }
    EntryLock lock(client->impl.get());
    return client->impl->alive();
}

int ina_client_progress(ina_client_t *client)
{
    if (client == nullptr) {
        return 0;
    }
    EntryLock lock(client->impl.get());
    client->impl->progress();
    return client->impl->alive();
}

int ina_job_create(ina_client_t *client, uint32_t nmembers, const uint32_t *node_of_member,
                   uint32_t requested_window, uint32_t requested_block_bytes,
                   ina_job_params_t *params)
{
    if (client == nullptr || params == nullptr || node_of_member == nullptr || nmembers == 0 ||
        nmembers > INA_PROTO_MAX_MEMBERS) {
        return INA_EINVAL;
    }
    ina::Client &c = *client->impl;
    EntryLock lock(&c);
    const ina_agent_info_t &info = c.info();
    uint32_t window = requested_window == 0 ? info.max_window
                                            : std::min(requested_window, info.max_window);
    uint32_t block = requested_block_bytes == 0 ? info.seg_bytes
                                                : std::min(requested_block_bytes, info.seg_bytes);
    block &= ~15u; // every dtype (<= 16 bytes) divides it
    if (block == 0) {
        return INA_EINVAL;
    }
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_JOB_CREATE);
    h.count = nmembers;
    h.window = static_cast<uint16_t>(window);
    h.arg = c.next_cookie();
    ina_proto_hdr_t reply{};
    int rc = c.request(h, node_of_member, sizeof(uint32_t) * nmembers, INA_PROTO_JOB_CREATED,
                       c.progress_timeout_ms(), &reply);
    if (rc != INA_OK) {
        c.log(1, "JOB_CREATE failed: %s", reply.type != 0 ? ina_proto_status_name(reply.status)
                                                          : "no answer");
        return rc;
    }
    if (reply.window == 0 || reply.window > window) {
        c.log(1, "JOB_CREATED grants an unusable window %u (asked %u)", reply.window, window);
        return INA_EPROTO;
    }
    params->jid = reply.jid;
    params->window = reply.window;
    params->block_bytes = block;
    params->nmembers = nmembers;
    c.log(10, "job %u created: %u members, window %u, block %u bytes", reply.jid, nmembers,
          reply.window, block);
    return INA_OK;
}

int ina_job_join(ina_client_t *client, const ina_job_params_t *params, uint32_t rank,
                 ina_job_t **out)
{
    if (out != nullptr) {
        *out = nullptr;
    }
    if (client == nullptr || params == nullptr || out == nullptr || rank >= params->nmembers ||
        params->window == 0 || params->window > INA_PROTO_MAX_WINDOW ||
        params->block_bytes < 16 || params->block_bytes % 16 != 0 ||
        params->block_bytes > INA_PROTO_MAX_SEG_BYTES) {
        return INA_EINVAL;
    }
    ina::Client &c = *client->impl;
    EntryLock lock(&c);
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_JOB_JOIN);
    h.jid = params->jid;
    h.rank = rank;
    h.arg = c.next_cookie();
    ina_proto_hdr_t reply{};
    int rc = c.request(h, nullptr, 0, INA_PROTO_JOB_JOINED, c.progress_timeout_ms(), &reply);
    if (rc != INA_OK) {
        c.log(1, "JOB_JOIN of job %u as rank %u failed: %s", params->jid, rank,
              reply.type != 0 ? ina_proto_status_name(reply.status) : "no answer");
        return rc;
    }
    std::unique_ptr<ina_job_t> j(new (std::nothrow) ina_job_t);
    if (!j || !(j->impl = std::unique_ptr<ina::Job>(new (std::nothrow)
                                                        ina::Job(&c, *params, rank)))) {
        return INA_ENOMEM;
    }
    if (!c.attach(j->impl.get())) {
        c.log(1, "job %u already joined by this client", params->jid);
        return INA_EINVAL;
    }
    *out = j.release();
    return INA_OK;
}

void ina_job_leave(ina_job_t *job)
{
    if (job == nullptr) {
        return;
    }
    EntryLock lock(job->impl->client());
    job->impl->leave();
    delete job; // detaches from the client: still under the lock
}

int ina_job_post(ina_job_t *job, const ina_coll_desc_t *desc, ina_call_t **call)
{
    if (call != nullptr) {
        *call = nullptr;
    }
    if (job == nullptr || desc == nullptr || call == nullptr) {
        return INA_EINVAL;
    }
    EntryLock lock(job->impl->client());
    ina_cqe_t cqe;
    return job->impl->post(*desc, true, call, &cqe);
}

void ina_call_background(ina_call_t *call)
{
    if (call == nullptr) {
        return;
    }
    ina::Client *c = call->job()->client();
    EntryLock lock(c);
    if (c != nullptr && call->state() == ina::Call::State::active) {
        call->set_background();
        c->wake_thread();
    }
}

int ina_call_test(ina_call_t *call, ina_cqe_t *cqe)
{
    EntryLock lock(call != nullptr ? call->job()->client() : nullptr);
    if (call == nullptr || call->state() == ina::Call::State::free) {
        if (cqe != nullptr) { // programming error: report it rather than spin
            *cqe = ina_cqe_t{};
            cqe->rc = INA_EINVAL;
        }
        return 1;
    }
    if (call->state() == ina::Call::State::active) {
        ina::Client *c = call->job()->client();
        if (c != nullptr) {
            c->progress();
        }
        if (call->state() != ina::Call::State::retired) {
            return 0;
        }
    }
    if (cqe != nullptr) {
        *cqe = call->cqe();
    }
    return 1;
}

int ina_call_wait(ina_call_t *call, ina_cqe_t *cqe)
{
    ina_cqe_t local;
    if (cqe == nullptr) {
        cqe = &local;
    }
    EntryLock lock(call != nullptr ? call->job()->client() : nullptr);
    if (call == nullptr || call->state() == ina::Call::State::free) {
        *cqe = ina_cqe_t{};
        return cqe->rc = INA_EINVAL;
    }
    return wait_locked(call, cqe);
}

void ina_call_free(ina_call_t *call)
{
    if (call == nullptr) {
        return;
    }
    ina::Job *job = call->job();
    EntryLock lock(job->client());
    if (call->state() == ina::Call::State::active) {
        // A programming error: the buffers are still the engine's. Finish the
        // call first so that nothing writes into them after this returns.
        if (job->client() != nullptr) {
            job->client()->log(0, "job %u: call of mid %llu freed before completion "
                                  "(a bug in the caller); completing it first",
                               job->jid(), static_cast<unsigned long long>(call->mid()));
            ina_cqe_t cqe;
            wait_locked(call, &cqe);
        }
    }
    job->release(call);
}

int ina_job_run(ina_job_t *job, const ina_coll_desc_t *desc, ina_cqe_t *cqe)
{
    ina_cqe_t local;
    if (cqe == nullptr) {
        cqe = &local;
    }
    *cqe = ina_cqe_t{};
    if (job == nullptr || desc == nullptr) {
        return cqe->rc = INA_EINVAL;
    }
    // One lock for the whole call: the progress thread stays out of the
    // blocking path (this call progresses every other call meanwhile).
    EntryLock lock(job->impl->client());
    ina_call_t *call = nullptr;
    int rc = job->impl->post(*desc, false, &call, cqe);
    if (rc != INA_OK) {
        return cqe->rc = rc;
    }
    wait_locked(call, cqe);
    job->impl->release(call);
    return cqe->rc;
}

int ina_job_allreduce(ina_job_t *job, const void *sbuf, void *rbuf, uint64_t count,
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

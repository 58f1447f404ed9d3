// The client engine (see ina_client.h): one UCP context/worker/endpoint per
// ina_client_t, job descriptors, and offloaded allreduces run as work
// requests whose blocks move through a sliding window (SEEDS S0/S1).
//
// All UCX callbacks only record what happened (copy a RESULT into the user's
// buffer, mark a slot acked, remember a DENY); every send is posted from the
// caller's wait loop.
#include "ina_client.h"

#include <ucp/api/ucp.h>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "ina_window.h"

namespace ina {

namespace {

using Clock = std::chrono::steady_clock;

// Spin on ucp_worker_progress this long before arming the wake-up fd: short,
// because ranks and the agent share few cores.
constexpr auto kSpin = std::chrono::microseconds(30);
// Upper bound of one poll() sleep, so that deadlines are re-checked.
constexpr int kPollSliceMs = 10;
// Remembered DENYs / aborts of MIDs not started yet (the agent decides ahead of us).
constexpr size_t kMaxEarly = 4096;

struct ContextDeleter {
    void operator()(ucp_context *c) const { ucp_cleanup(c); }
};
struct WorkerDeleter {
    void operator()(ucp_worker *w) const { ucp_worker_destroy(w); }
};
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

} // namespace

class Job;

class Client {
public:
    explicit Client(const ina_client_config_t &cfg)
        : connect_timeout_ms_(cfg.connect_timeout_ms > 0 ? cfg.connect_timeout_ms : 10000),
          progress_timeout_ms_(cfg.progress_timeout_ms > 0 ? cfg.progress_timeout_ms : 30000),
          verbose_(cfg.verbose)
    {
    }
    ~Client();
    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;

    // Context, worker, endpoint, HELLO/HELLO_ACK. Returns INA_OK or sets err.
    int connect(const char *addr, std::string &err);

    void log(int level, const char *fmt, ...) const __attribute__((format(printf, 3, 4)));

    bool alive() const { return ep_ != nullptr && !lost_; }
    const ina_agent_info_t &info() const { return info_; }
    int progress_timeout_ms() const { return progress_timeout_ms_; }
    uint64_t events() const { return events_; }
    ucp_ep_h ep() const { return ep_; }

    // Deliver whatever is pending (error callbacks, early DENYs) without blocking.
    void poll_events();
    // Progress for up to ~max_block_ms; returns early once any callback fired.
    void progress_wait(int max_block_ms);
    // Give up on the agent: mark lost and force-close the endpoint, which
    // completes (with an error) every send still holding a user buffer.
    void abandon(const char *why);

    // Control requests: post one message and wait for its reply.
    int request(ina_proto_hdr_t hdr, const void *payload, size_t len, uint8_t reply_type,
                int timeout_ms, ina_proto_hdr_t *reply);
    // Post a control message and forget it (the request is reaped later).
    void post_detached(const ina_proto_hdr_t &hdr);

    uint64_t next_cookie() { return (static_cast<uint64_t>(getpid()) << 32) | ++cookie_seq_; }

    bool attach(Job *job);
    void detach(Job *job);

private:
    // A control message in flight: UCX may read the header and payload until
    // the send completes (UCX 1.13 has no UCP_AM_SEND_FLAG_COPY_HEADER).
    struct CtrlSend {
        Client *client = nullptr;
        ina_proto_hdr_t hdr{};
        std::vector<uint8_t> payload;
        bool done = false;
    };
    // The reply a control request waits for (one caller at a time).
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

    static void ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status);
    static void ctrl_send_cb(void *request, ucs_status_t status, void *user_data);
    static ucs_status_t am_cb(void *arg, const void *header, size_t header_length, void *data,
                              size_t length, const ucp_am_recv_param_t *param);
    void on_message(const ina_proto_hdr_t &h, const void *data, size_t length);

    const int connect_timeout_ms_;
    const int progress_timeout_ms_;
    const int verbose_;

    // Declared first: destroyed last (the worker needs the context).
    std::unique_ptr<ucp_context, ContextDeleter> context_;
    std::unique_ptr<ucp_worker, WorkerDeleter> worker_;
    ucp_ep_h ep_ = nullptr; // closed explicitly: closing needs worker progress
    int efd_ = -1;          // owned by the worker

    bool lost_ = false;
    ucs_status_t lost_status_ = UCS_OK;
    uint64_t events_ = 0; // bumped by every callback: "progress happened"
    uint64_t cookie_seq_ = 0;
    ina_agent_info_t info_{};
    Pending pending_;
    std::list<std::unique_ptr<CtrlSend>> ctrl_;
    std::unordered_map<uint32_t, Job *> jobs_; // non-owning, by JID
};

// One communicator's job descriptor and its work requests.
class Job {
public:
    Job(Client *client, const ina_job_params_t &p, uint32_t rank)
        : client_(client), params_(p), rank_(rank), window_(p.window), slots_(p.window)
    {
        for (uint32_t i = 0; i < p.window; ++i) {
            slots_[i].job = this;
            slots_[i].slot = i;
        }
    }
    ~Job();
    Job(const Job &) = delete;
    Job &operator=(const Job &) = delete;

    uint32_t jid() const { return params_.jid; }
    uint32_t rank() const { return rank_; }
    // The client went away first: later calls report INA_UNREACHABLE.
    void orphan() { client_ = nullptr; }
    // Tell the agent (JOB_LEAVE) without waiting for anything.
    void leave();

    int allreduce(const void *sbuf, void *rbuf, uint64_t count, unsigned dtype, unsigned op,
                  ina_cqe_t *cqe);

    // Called from the client's AM handler.
    void on_result(const ina_proto_hdr_t &h, const void *data, size_t length);
    void on_deny(const ina_proto_hdr_t &h);
    void on_error(const ina_proto_hdr_t &h);

private:
    enum class Fail { none, denied, rejected, lost };

    // Per-slot send context: the header must live until the send completes.
    struct SlotCtx {
        Job *job = nullptr;
        uint32_t slot = 0;
        ina_proto_hdr_t hdr{};
    };

    struct Call {
        bool active = false;
        uint64_t mid = 0;
        const uint8_t *sbuf = nullptr;
        uint8_t *rbuf = nullptr;
        unsigned dtype = 0;
        unsigned op = 0;
        bool in_place = false;
        bool any_sent = false;     // a BLOCK left this process
        uint64_t applied = 0;      // RESULTs copied into rbuf
        Fail fail = Fail::none;
        uint8_t status = INA_PROTO_OK;
    };

    // Verdict on a call this rank has not started yet: DENY, or ERROR(BLOCK)
    // when the agent aborted the call (a member died).
    struct Early {
        uint8_t type;
        uint8_t status;
    };

    int run(ina_cqe_t *cqe);
    bool post_block();
    void remember(const ina_proto_hdr_t &h);
    static void send_cb(void *request, ucs_status_t status, void *user_data);

    Client *client_;
    const ina_job_params_t params_;
    const uint32_t rank_;
    uint64_t next_mid_ = 0;
    SendWindow window_;
    std::vector<SlotCtx> slots_;
    ina_proto_hdr_t tmpl_{}; // BLOCK header of the current call
    Call call_;
    std::map<uint64_t, Early> early_; // by MID
};

// ------------------------------------------------------------------ Client

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
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
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
    return INA_OK;
}

Client::~Client()
{
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
    case INA_PROTO_DENY: {
        auto it = jobs_.find(h.jid);
        if (it == jobs_.end()) {
            log(1, "dropping %s for unknown job %u", ina_proto_type_name(h.type), h.jid);
        } else if (h.type == INA_PROTO_RESULT) {
            it->second->on_result(h, data, length);
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

// --------------------------------------------------------------------- Job

Job::~Job()
{
    if (client_ != nullptr) {
        client_->detach(this);
    }
}

void Job::leave()
{
    if (client_ != nullptr && client_->alive()) {
        ina_proto_hdr_t h;
        ina_proto_init(&h, INA_PROTO_JOB_LEAVE);
        h.jid = params_.jid;
        h.rank = rank_;
        client_->post_detached(h); // the request is reaped by later progress
    }
}

int Job::allreduce(const void *sbuf, void *rbuf, uint64_t count, unsigned dtype, unsigned op,
                   ina_cqe_t *cqe)
{
    *cqe = ina_cqe_t{};
    const size_t esz = ina_proto_dtype_size(dtype);
    if (esz == 0 || !ina_proto_op_valid(op, dtype) ||
        (count > 0 && (sbuf == nullptr || rbuf == nullptr))) {
        return cqe->rc = INA_EINVAL;
    }
    if (count == 0) {
        return cqe->rc = INA_OK; // no MID: nothing to agree on
    }
    if (client_ != nullptr) {
        // Deliver a pending loss or early DENY first (a DENY is matched
        // against next_mid_, so before this call consumes it).
        client_->poll_events();
    }
    // Every rank consumes MIDs in the same order, whatever the outcome.
    const uint64_t mid = next_mid_++;
    cqe->mid = mid;
    auto early = early_.find(mid);
    if (early != early_.end()) {
        // Decided before this rank got here: send nothing (the agent drops it).
        const Early e = early->second;
        early_.erase(early);
        cqe->status = e.status;
        return cqe->rc = e.type == INA_PROTO_DENY ? INA_DENIED : INA_EPROTO;
    }
    if (client_ == nullptr || !client_->alive()) {
        return cqe->rc = INA_UNREACHABLE;
    }
    if (!window_.start(count, esz, params_.block_bytes)) {
        return cqe->rc = INA_EINVAL; // more blocks than a 32-bit SID names
    }
    cqe->blocks = window_.nblocks();

    call_ = Call{};
    call_.active = true;
    call_.mid = mid;
    call_.sbuf = static_cast<const uint8_t *>(sbuf);
    call_.rbuf = static_cast<uint8_t *>(rbuf);
    call_.dtype = dtype;
    call_.op = op;
    call_.in_place = sbuf == rbuf;
    ina_proto_init(&tmpl_, INA_PROTO_BLOCK);
    tmpl_.jid = params_.jid;
    tmpl_.rank = rank_;
    tmpl_.mid = mid;
    tmpl_.window = static_cast<uint16_t>(params_.window);
    tmpl_.op = static_cast<uint8_t>(op);
    tmpl_.dtype = static_cast<uint8_t>(dtype);
    tmpl_.arg = count;

    int rc = run(cqe);
    call_.active = false;
    return cqe->rc = rc;
}

int Job::run(ina_cqe_t *cqe)
{
    const auto timeout = std::chrono::milliseconds(client_->progress_timeout_ms());
    auto last_event = Clock::now();
    uint64_t seen = client_->events();
    bool abandoned = false;

    for (;;) {
        if (call_.fail == Fail::none && !client_->alive()) {
            call_.fail = Fail::lost;
        }
        while (call_.fail == Fail::none && window_.can_send()) {
            if (!post_block()) {
                call_.fail = Fail::lost;
            }
        }
        if (window_.sends_pending() == 0) {
            if (window_.complete()) {
                return INA_OK; // even if the agent failed after the last RESULT
            }
            if (call_.fail != Fail::none) {
                break;
            }
        }
        client_->progress_wait(kPollSliceMs);
        const auto now = Clock::now();
        if (client_->events() != seen) {
            seen = client_->events();
            last_event = now;
        } else if (now - last_event > timeout) {
            if (abandoned) {
                // Force-closing did not complete our sends: never block forever.
                client_->log(1, "mid %llu: %u sends still pending after closing the endpoint",
                             static_cast<unsigned long long>(call_.mid), window_.sends_pending());
                call_.fail = Fail::lost;
                break;
            }
            client_->log(1, "mid %llu: no progress for %d ms (%llu of %llu blocks done)",
                         static_cast<unsigned long long>(call_.mid),
                         client_->progress_timeout_ms(),
                         static_cast<unsigned long long>(window_.acked()),
                         static_cast<unsigned long long>(window_.nblocks()));
            call_.fail = Fail::lost;
            client_->abandon("allreduce made no progress");
            abandoned = true;
            last_event = now;
        }
    }

    cqe->status = call_.status;
    // In place, rbuf already holding some results is no longer the input:
    // the caller cannot fall back to a host algorithm.
    const bool input_gone = call_.in_place && call_.applied > 0;
    switch (call_.fail) {
    case Fail::denied:
        if (input_gone) {
            client_->log(1, "mid %llu denied after results arrived in place",
                         static_cast<unsigned long long>(call_.mid));
            return INA_LOST;
        }
        return INA_DENIED;
    case Fail::rejected:
        return input_gone ? INA_LOST : INA_EPROTO;
    case Fail::lost:
    default:
        return call_.any_sent ? INA_LOST : INA_UNREACHABLE;
    }
}

bool Job::post_block()
{
    const uint64_t sid = window_.next_sid();
    const uint32_t slot = window_.slot_of(sid);
    SlotCtx &sc = slots_[slot];
    sc.hdr = tmpl_;
    sc.hdr.sid = static_cast<uint32_t>(sid);
    sc.hdr.seg = slot;
    sc.hdr.count = static_cast<uint32_t>(window_.block_count(sid));

    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                     UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
    p.cb.send = &Job::send_cb;
    p.user_data = &sc;
    window_.on_sent();
    // Straight from the user's buffer: no copy.
    ucs_status_ptr_t req =
        ucp_am_send_nbx(client_->ep(), INA_PROTO_AM_TO_AGENT, &sc.hdr, sizeof(sc.hdr),
                        call_.sbuf + window_.block_offset(sid), window_.block_bytes(sid), &p);
    if (req == nullptr) {
        window_.on_send_done(slot);
    } else if (UCS_PTR_IS_ERR(req)) {
        window_.on_send_done(slot);
        client_->log(1, "mid %llu sid %llu: send failed: %s",
                     static_cast<unsigned long long>(call_.mid),
                     static_cast<unsigned long long>(sid), ucs_status_string(UCS_PTR_STATUS(req)));
        return false;
    }
    call_.any_sent = true;
    return true;
}

void Job::send_cb(void *request, ucs_status_t status, void *user_data)
{
    auto *sc = static_cast<SlotCtx *>(user_data);
    Job *job = sc->job;
    job->window_.on_send_done(sc->slot);
    if (status != UCS_OK && job->client_ != nullptr) {
        job->client_->log(10, "mid %llu sid %u: send completed with %s",
                          static_cast<unsigned long long>(sc->hdr.mid), sc->hdr.sid,
                          ucs_status_string(status));
    }
    ucp_request_free(request);
}

void Job::on_result(const ina_proto_hdr_t &h, const void *data, size_t length)
{
    if (!call_.active || h.mid != call_.mid) {
        client_->log(10, "job %u: dropping RESULT of mid %llu sid %u: not the current call",
                     h.jid, static_cast<unsigned long long>(h.mid), h.sid);
        return;
    }
    const uint64_t sid = h.sid;
    if (sid >= window_.nblocks() || h.op != call_.op || h.dtype != call_.dtype ||
        h.count != window_.block_count(sid) || length != window_.block_bytes(sid)) {
        client_->log(1, "job %u mid %llu: dropping a RESULT that does not match block %u",
                     h.jid, static_cast<unsigned long long>(h.mid), h.sid);
        return;
    }
    if (window_.classify(sid) != SendWindow::Ack::fresh) {
        client_->log(1, "job %u mid %llu: dropping a %s RESULT of sid %u", h.jid,
                     static_cast<unsigned long long>(h.mid),
                     window_.classify(sid) == SendWindow::Ack::duplicate ? "duplicate"
                                                                         : "never sent",
                     h.sid);
        return;
    }
    std::memcpy(call_.rbuf + window_.block_offset(sid), data, length);
    window_.on_ack(sid);
    ++call_.applied;
}

void Job::on_deny(const ina_proto_hdr_t &h)
{
    if (call_.active && h.mid == call_.mid) {
        if (call_.fail == Fail::none) {
            call_.fail = Fail::denied;
            call_.status = h.status;
        }
    } else if (h.mid >= next_mid_) {
        remember(h);
    } else {
        client_->log(10, "job %u: dropping a stale DENY of mid %llu", h.jid,
                     static_cast<unsigned long long>(h.mid));
    }
}

void Job::remember(const ina_proto_hdr_t &h)
{
    if (early_.size() < kMaxEarly) {
        early_.emplace(h.mid, Early{h.type, h.status});
    } else {
        client_->log(1, "job %u: too many early verdicts, dropping %s of mid %llu", h.jid,
                     ina_proto_type_name(h.type), static_cast<unsigned long long>(h.mid));
    }
}

void Job::on_error(const ina_proto_hdr_t &h)
{
    if (call_.active && h.mid == call_.mid) {
        client_->log(1, "job %u mid %llu: agent rejected block %u: %s", h.jid,
                     static_cast<unsigned long long>(h.mid), h.sid,
                     ina_proto_status_name(h.status));
        if (call_.fail == Fail::none) {
            call_.fail = Fail::rejected;
            call_.status = h.status;
        }
    } else if (h.mid >= next_mid_) {
        client_->log(1, "job %u: agent aborted mid %llu before this rank started it: %s", h.jid,
                     static_cast<unsigned long long>(h.mid), ina_proto_status_name(h.status));
        remember(h);
    } else {
        client_->log(10, "job %u: dropping an ERROR of finished mid %llu: %s", h.jid,
                     static_cast<unsigned long long>(h.mid), ina_proto_status_name(h.status));
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
    return client != nullptr && client->impl->alive();
}

int ina_client_progress(ina_client_t *client)
{
    if (client == nullptr) {
        return 0;
    }
    client->impl->poll_events();
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
    job->impl->leave();
    delete job;
}

int ina_job_allreduce(ina_job_t *job, const void *sbuf, void *rbuf, uint64_t count,
                      unsigned dtype, unsigned op, ina_cqe_t *cqe)
{
    ina_cqe_t local;
    if (cqe == nullptr) {
        cqe = &local;
    }
    if (job == nullptr) {
        *cqe = ina_cqe_t{};
        return cqe->rc = INA_EINVAL;
    }
    return job->impl->allreduce(sbuf, rbuf, count, dtype, op, cqe);
}

} // extern "C"

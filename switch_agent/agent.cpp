// ina-switchd core: endpoints, dispatch (where a packet is parsed) and the
// block path. UCX callbacks only parse, aggregate and queue: every send, accept
// and close happens in service(), after ucp_worker_progress() returned, so the
// agent never re-enters UCX from inside one of its callbacks.
#include "agent.h"

#include <netdb.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "log.h"

namespace ina {

namespace {

std::runtime_error ucs_error(const char *what, ucs_status_t st)
{
    return std::runtime_error(std::string(what) + ": " + ucs_status_string(st));
}

// Owns a file descriptor (the epoll instance of run()).
class UniqueFd {
public:
    explicit UniqueFd(int fd) : fd_(fd) {}
    ~UniqueFd()
    {
        if (fd_ >= 0) {
            close(fd_);
        }
    }
    UniqueFd(const UniqueFd &) = delete;
    UniqueFd &operator=(const UniqueFd &) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

std::string sockaddr_to_string(const struct sockaddr *sa, socklen_t len)
{
    char host[NI_MAXHOST];
    char port[NI_MAXSERV];
    if (getnameinfo(sa, len, host, sizeof(host), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        return "?";
    }
    return sa->sa_family == AF_INET6 ? "[" + std::string(host) + "]:" + port
                                     : std::string(host) + ":" + port;
}

} // namespace

Agent::Agent(const AgentConfig &cfg, std::unique_ptr<Scheduler> scheduler)
    : cfg_(cfg), scheduler_(std::move(scheduler)), pool_(cfg.segs, cfg.seg_bytes)
{
}

Agent::~Agent()
{
    // Stop accepting, close every endpoint, let UCX finish (cancel) what is in
    // flight so no completion callback outlives its SendCtx, then tear down.
    for (ucp_conn_request_h req : conn_reqs_) {
        ucp_listener_reject(listener_.get(), req);
    }
    conn_reqs_.clear();
    listener_.reset();
    for (SendCtx *ctx : outbox_) {
        finish_send(ctx, UCS_ERR_CANCELED);
    }
    outbox_.clear();
    for (auto &kv : peers_) {
        close_ep(kv.second->ep);
    }
    if (worker_) {
        for (int spins = 0; sends_in_flight_ > 0 && spins < 1000000; ++spins) {
            ucp_worker_progress(worker_.get());
        }
        // Close requests freed on creation complete inside progress too.
        while (ucp_worker_progress(worker_.get()) != 0) {
        }
    }
    peers_.clear();
    worker_.reset();
    context_.reset();
}

void Agent::start()
{
    ucp_config_t *config = nullptr;
    ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
    if (st != UCS_OK) {
        throw ucs_error("ucp_config_read", st);
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    ucp_context_h ctx = nullptr;
    st = ucp_init(&params, config, &ctx);
    ucp_config_release(config);
    if (st != UCS_OK) {
        throw ucs_error("ucp_init", st);
    }
    context_.reset(ctx);

    ucp_worker_params_t wparams{};
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    ucp_worker_h worker = nullptr;
    st = ucp_worker_create(context_.get(), &wparams, &worker);
    if (st != UCS_OK) {
        throw ucs_error("ucp_worker_create", st);
    }
    worker_.reset(worker);

    ucp_am_handler_param_t am{};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                    UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    am.id = INA_PROTO_AM_TO_AGENT;
    am.flags = UCP_AM_FLAG_WHOLE_MSG;
    am.cb = &Agent::on_am;
    am.arg = this;
    st = ucp_worker_set_am_recv_handler(worker_.get(), &am);
    if (st != UCS_OK) {
        throw ucs_error("ucp_worker_set_am_recv_handler", st);
    }

    struct addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    struct addrinfo *res = nullptr;
    std::string port = std::to_string(cfg_.port);
    int gai = getaddrinfo(cfg_.host.c_str(), port.c_str(), &hints, &res);
    if (gai != 0) {
        throw std::runtime_error("cannot resolve " + cfg_.host + ": " + gai_strerror(gai));
    }
    std::unique_ptr<struct addrinfo, void (*)(struct addrinfo *)> res_owner(res, freeaddrinfo);

    ucp_listener_params_t lparams{};
    lparams.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lparams.sockaddr.addr = res->ai_addr;
    lparams.sockaddr.addrlen = res->ai_addrlen;
    lparams.conn_handler.cb = &Agent::on_conn_request;
    lparams.conn_handler.arg = this;
    ucp_listener_h listener = nullptr;
    st = ucp_listener_create(worker_.get(), &lparams, &listener);
    if (st != UCS_OK) {
        throw ucs_error(("cannot listen on " + cfg_.host + ":" + port).c_str(), st);
    }
    listener_.reset(listener);
    INA_INFO("listening on %s (segs=%u seg-size=%u max-window=%u)", bound_address().c_str(),
             cfg_.segs, cfg_.seg_bytes, cfg_.max_window);
}

std::string Agent::bound_address() const
{
    ucp_listener_attr_t attr{};
    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    if (!listener_ || ucp_listener_query(listener_.get(), &attr) != UCS_OK) {
        return "?";
    }
    socklen_t len = attr.sockaddr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                        : sizeof(struct sockaddr_in);
    return sockaddr_to_string(reinterpret_cast<const struct sockaddr *>(&attr.sockaddr), len);
}

int Agent::run(int signal_fd)
{
    int efd = -1;
    ucs_status_t st = ucp_worker_get_efd(worker_.get(), &efd);
    if (st != UCS_OK) {
        throw ucs_error("ucp_worker_get_efd", st);
    }
    UniqueFd ep(epoll_create1(EPOLL_CLOEXEC));
    if (ep.get() < 0) {
        throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
    }
    for (int fd : {efd, signal_fd}) {
        struct epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        if (epoll_ctl(ep.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
            throw std::runtime_error(std::string("epoll_ctl: ") + std::strerror(errno));
        }
    }
    for (;;) {
        while (ucp_worker_progress(worker_.get()) != 0) {
            service();
        }
        if (service()) {
            continue; // sends/accepts posted: progress them before sleeping
        }
        st = ucp_worker_arm(worker_.get());
        if (st == UCS_ERR_BUSY) {
            continue; // events arrived since the last progress
        }
        if (st != UCS_OK) {
            throw ucs_error("ucp_worker_arm", st);
        }
        struct epoll_event evs[2];
        int n = epoll_wait(ep.get(), evs, 2, -1);
        if (n < 0 && errno != EINTR) {
            throw std::runtime_error(std::string("epoll_wait: ") + std::strerror(errno));
        }
        for (int i = 0; i < n; ++i) {
            if (evs[i].data.fd == signal_fd) {
                struct signalfd_siginfo si{};
                if (read(signal_fd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
                    INA_INFO("signal %u: shutting down", si.ssi_signo);
                    return static_cast<int>(si.ssi_signo);
                }
            }
        }
    }
}

// ---------------------------------------------------------------- UCX callbacks

void Agent::on_conn_request(ucp_conn_request_h req, void *arg)
{
    auto *self = static_cast<Agent *>(arg);
    try {
        self->conn_reqs_.push_back(req);
    } catch (const std::bad_alloc &) {
        ucp_listener_reject(self->listener_.get(), req);
    }
}

void Agent::on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    auto *self = static_cast<Agent *>(arg);
    auto it = self->peers_.find(ep);
    if (it == self->peers_.end() || it->second->dead) {
        return;
    }
    INA_INFO("peer %" PRIu64 " lost: %s", it->second->id, ucs_status_string(status));
    it->second->dead = true;
    try {
        self->dying_.push_back(it->second.get());
    } catch (const std::bad_alloc &) {
        INA_ERROR("out of memory: peer %" PRIu64 " keeps its memberships", it->second->id);
    }
}

ucs_status_t Agent::on_am(void *arg, const void *header, size_t header_length, void *data,
                          size_t length, const ucp_am_recv_param_t *param)
{
    auto *self = static_cast<Agent *>(arg);
    ++self->counters_.msgs_in;
    Peer *peer = nullptr;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) {
        auto it = self->peers_.find(param->reply_ep);
        if (it != self->peers_.end() && !it->second->dead) {
            peer = it->second.get();
        }
    }
    // Keep what we can of the header to echo it in an ERROR, whatever its size.
    ina_proto_hdr_t h{};
    if (header != nullptr) {
        std::memcpy(&h, header, std::min(header_length, sizeof(h)));
    }
    // No exception may cross UCX's C frames. The only one expected is
    // std::bad_alloc from growing a free list; the message is then dropped.
    try {
        self->receive(peer, h, header, header_length, data, length, param->recv_attr);
    } catch (const std::exception &e) {
        ++self->counters_.rejected[INA_PROTO_ERR_NO_RESOURCES];
        INA_ERROR("dropped a %s: %s", ina_proto_type_name(h.type), e.what());
    }
    return UCS_OK;
}

void Agent::receive(Peer *peer, const ina_proto_hdr_t &h, const void *header,
                    size_t header_length, const void *data, size_t length, uint64_t recv_attr)
{
    if (recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        // The protocol is eager only (UCP_AM_SEND_FLAG_EAGER); returning UCS_OK
        // without receiving drops the descriptor.
        ++counters_.rndv_rejected;
        reject(peer, h, INA_PROTO_ERR_MALFORMED, "rendezvous message");
        return;
    }
    ina_proto_status_t st = ina_proto_check(header, header_length, length);
    if (st != INA_PROTO_OK) {
        reject(peer, h, st, "invalid message");
        return;
    }
    if (peer == nullptr) {
        reject(nullptr, h, INA_PROTO_ERR_MALFORMED, "no reply endpoint");
        return;
    }
    dispatch(*peer, h, data, length);
}

void Agent::on_send_done(void *request, ucs_status_t status, void *user_data)
{
    auto *ctx = static_cast<SendCtx *>(user_data);
    --ctx->agent->sends_in_flight_;
    ctx->agent->finish_send(ctx, status);
    ucp_request_free(request);
}

// ---------------------------------------------------------------- deferred work

bool Agent::service()
{
    bool did = false;
    if (!conn_reqs_.empty()) {
        std::vector<ucp_conn_request_h> reqs;
        reqs.swap(conn_reqs_);
        for (ucp_conn_request_h req : reqs) {
            accept(req);
        }
        did = true;
    }
    // Dead peers leave their jobs before the outbox is flushed (their queued
    // messages are dropped there), and are closed after. A peer that fails
    // during the flush waits for the next round: it must leave its jobs first.
    std::vector<Peer *> dying;
    dying.swap(dying_);
    for (Peer *peer : dying) {
        drop_peer(*peer);
    }
    if (!outbox_.empty()) {
        for (SendCtx *ctx : outbox_) {
            if (ctx->peer->dead) {
                finish_send(ctx, UCS_ERR_CANCELED);
                continue;
            }
            ucp_request_param_t prm{};
            prm.op_attr_mask =
                UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
            prm.cb.send = &Agent::on_send_done;
            prm.user_data = ctx;
            prm.flags = UCP_AM_SEND_FLAG_EAGER;
            const void *payload = ctx->buf != kNoIndex ? pool_.buffers().data(ctx->buf) : nullptr;
            ucs_status_ptr_t r = ucp_am_send_nbx(ctx->peer->ep, INA_PROTO_AM_TO_CLIENT, &ctx->hdr,
                                                 sizeof(ctx->hdr), payload, ctx->len, &prm);
            if (r == nullptr) {
                finish_send(ctx, UCS_OK); // sent at once
            } else if (UCS_PTR_IS_ERR(r)) {
                finish_send(ctx, UCS_PTR_STATUS(r));
            } else {
                ++sends_in_flight_;
            }
        }
        outbox_.clear();
        did = true;
    }
    for (Peer *peer : dying) {
        ucp_ep_h ep = peer->ep;
        close_ep(ep);
        peers_.erase(ep);
        did = true;
    }
    return did || !dying_.empty();
}

void Agent::accept(ucp_conn_request_h req)
{
    auto peer = std::make_unique<Peer>();
    peer->id = next_peer_id_++;
    ucp_ep_params_t ep_params{};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST |
                           UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep_params.conn_request = req;
    ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER; // clients use PEER too
    ep_params.err_handler.cb = &Agent::on_ep_error;
    ep_params.err_handler.arg = this;
    ucp_ep_h ep = nullptr;
    ucs_status_t st = ucp_ep_create(worker_.get(), &ep_params, &ep);
    if (st != UCS_OK) {
        INA_WARN("cannot accept a connection: %s", ucs_status_string(st));
        return;
    }
    peer->ep = ep;
    ++counters_.peers_accepted;
    INA_DEBUG("peer %" PRIu64 " connected", peer->id);
    peers_.emplace(ep, std::move(peer));
}

void Agent::close_ep(ucp_ep_h ep)
{
    ucp_request_param_t prm{};
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &prm);
    if (UCS_PTR_IS_PTR(r)) {
        ucp_request_free(r); // released by UCX once the close completes
    }
}

void Agent::drop_peer(Peer &peer)
{
    ++counters_.peers_lost;
    auto memberships = peer.memberships; // leave_job edits the list
    for (const auto &m : memberships) {
        leave_job(m.first, m.second, peer);
    }
    // Jobs it created that nobody ever joined can never be used.
    std::vector<uint32_t> orphans;
    for (const auto &kv : jobs_) {
        if (kv.second->orphaned_by(&peer)) {
            orphans.push_back(kv.first);
        }
    }
    for (uint32_t jid : orphans) {
        free_job(jid);
    }
}

void Agent::queue(Peer &peer, const ina_proto_hdr_t &h, uint32_t buf, size_t len)
{
    if (send_free_.empty()) {
        send_store_.push_back(std::make_unique<SendCtx>());
        send_free_.push_back(send_store_.back().get());
    }
    SendCtx *ctx = send_free_.back();
    send_free_.pop_back();
    ctx->agent = this;
    ctx->peer = &peer;
    ctx->hdr = h;
    ctx->buf = buf;
    ctx->len = len;
    outbox_.push_back(ctx);
}

void Agent::finish_send(SendCtx *ctx, ucs_status_t status)
{
    if (status == UCS_OK) {
        if (ctx->hdr.type == INA_PROTO_RESULT) {
            if (ctx->hdr.flags & INA_PROTO_F_ACK_ONLY) {
                ++counters_.acks_out;
            } else {
                ++counters_.results_out;
                counters_.result_bytes_out += ctx->len;
            }
        } else if (ctx->hdr.type == INA_PROTO_GRANT) {
            ++counters_.grants_out;
        }
    } else {
        ++counters_.send_errors;
        INA_DEBUG("send of %s failed: %s", ina_proto_type_name(ctx->hdr.type),
                  ucs_status_string(status));
    }
    if (ctx->buf != kNoIndex) {
        pool_.buffers().unref(ctx->buf);
    }
    ctx->peer = nullptr;
    ctx->buf = kNoIndex;
    send_free_.push_back(ctx);
}

void Agent::reply(Peer &peer, ina_proto_type_t type, const ina_proto_hdr_t &req,
                  ina_proto_status_t status)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, type);
    h.status = static_cast<uint8_t>(status);
    h.jid = req.jid;
    h.rank = req.rank;
    h.mid = req.mid;
    h.sid = req.sid;
    h.arg = req.arg;
    queue(peer, h, kNoIndex, 0);
}

void Agent::reject(Peer *peer, const ina_proto_hdr_t &req, ina_proto_status_t status,
                   const char *why)
{
    ++counters_.rejected[status];
    // The first rejection of each kind is worth a warning; repeats are noise.
    LogLevel lvl = seen_reject_[status] ? LogLevel::kDebug : LogLevel::kWarn;
    seen_reject_[status] = true;
    INA_LOG(lvl,
            "rejected %s from peer %" PRIu64 " (jid %u rank %u mid %" PRIu64 " sid %u): %s, %s",
            ina_proto_type_name(req.type), peer ? peer->id : 0, req.jid, req.rank, req.mid, req.sid,
            ina_proto_status_name(status), why);
    if (peer == nullptr) {
        return;
    }
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_ERROR);
    h.status = static_cast<uint8_t>(status);
    h.op = req.type;
    h.jid = req.jid;
    h.rank = req.rank;
    h.mid = req.mid;
    h.sid = req.sid;
    queue(*peer, h, kNoIndex, 0);
}

// ---------------------------------------------------------------- dispatch

void Agent::dispatch(Peer &peer, const ina_proto_hdr_t &h, const void *data, size_t len)
{
    switch (h.type) {
    case INA_PROTO_HELLO:
        on_hello(peer, h);
        break;
    case INA_PROTO_JOB_CREATE:
        on_job_create(peer, h, data);
        break;
    case INA_PROTO_JOB_JOIN:
        on_job_join(peer, h);
        break;
    case INA_PROTO_JOB_LEAVE:
        on_job_leave(peer, h);
        break;
    case INA_PROTO_BLOCK:
        on_block(peer, h, data);
        break;
    default: // agent-to-client types have no business here
        reject(&peer, h, INA_PROTO_ERR_MALFORMED, "not a client-to-agent message");
        break;
    }
}

void Agent::on_hello(Peer &peer, const ina_proto_hdr_t &h)
{
    ina_proto_hdr_t ack;
    ina_proto_init(&ack, INA_PROTO_HELLO_ACK);
    ack.count = std::min(cfg_.max_window, pool_.size());
    ack.arg = cfg_.seg_bytes;
    queue(peer, ack, kNoIndex, 0);
}

void Agent::on_job_create(Peer &peer, const ina_proto_hdr_t &h, const void *data)
{
    // The payload may be unaligned: copy the node ids out.
    std::vector<uint32_t> nodes(h.count);
    std::memcpy(nodes.data(), data, nodes.size() * sizeof(uint32_t));
    // A window larger than the pool could never be granted.
    uint32_t window = std::min<uint32_t>({h.window, cfg_.max_window, pool_.size()});
    uint32_t jid = next_jid_++;
    if (next_jid_ == 0) {
        next_jid_ = 1; // JID 0 means "none"
    }
    jobs_.emplace(jid, std::make_unique<Job>(jid, window, nodes.data(), h.count, &peer));
    ++counters_.jobs_created;
    INA_DEBUG("job %u created: %u members, window %u", jid, h.count, window);

    ina_proto_hdr_t r;
    ina_proto_init(&r, INA_PROTO_JOB_CREATED);
    r.jid = jid;
    r.window = static_cast<uint16_t>(window);
    r.count = h.count;
    r.arg = h.arg;
    queue(peer, r, kNoIndex, 0);
}

void Agent::on_job_join(Peer &peer, const ina_proto_hdr_t &h)
{
    auto it = jobs_.find(h.jid);
    ina_proto_status_t st = INA_PROTO_ERR_NO_JOB;
    if (it != jobs_.end()) {
        bool again = it->second->is_member(h.rank, &peer);
        st = it->second->join(h.rank, &peer);
        if (st == INA_PROTO_OK && !again) {
            peer.memberships.emplace_back(h.jid, h.rank);
        }
    }
    if (st != INA_PROTO_OK) {
        ++counters_.rejected[st];
    }
    reply(peer, INA_PROTO_JOB_JOINED, h, st);
}

void Agent::on_job_leave(Peer &peer, const ina_proto_hdr_t &h)
{
    auto it = jobs_.find(h.jid);
    if (it == jobs_.end()) {
        reject(&peer, h, INA_PROTO_ERR_NO_JOB, "leave of an unknown job");
    } else if (!it->second->is_member(h.rank, &peer)) {
        reject(&peer, h, INA_PROTO_ERR_NOT_MEMBER, "leave by a non-member");
    } else {
        leave_job(h.jid, h.rank, peer);
    }
}

void Agent::leave_job(uint32_t jid, uint32_t rank, Peer &peer)
{
    auto &ms = peer.memberships;
    ms.erase(std::remove(ms.begin(), ms.end(), std::make_pair(jid, rank)), ms.end());
    auto it = jobs_.find(jid);
    if (it == jobs_.end() || !it->second->leave(rank, &peer)) {
        return;
    }
    Job &job = *it->second;
    if (job.dead()) {
        free_job(jid);
        return;
    }
    // Calls the leaver had not finished can never complete: end them now on
    // the survivors with an ERROR for the call (what a rejected block gives)
    // instead of letting them wait for their progress timeout.
    for (uint64_t mid : job.abort_open_calls(pool_)) {
        ++counters_.calls_aborted;
        INA_INFO("job %u mid %" PRIu64 ": rank %u left in the middle of the call, aborted", jid,
                 mid, rank);
        ina_proto_hdr_t e;
        ina_proto_init(&e, INA_PROTO_ERROR);
        e.status = INA_PROTO_ERR_NOT_MEMBER;
        e.op = INA_PROTO_BLOCK;
        e.jid = jid;
        e.mid = mid;
        for (uint32_t r = 0; r < job.nmembers(); ++r) {
            if (Peer *p = job.member(r)) {
                e.rank = r;
                queue(*p, e, kNoIndex, 0);
            }
        }
    }
    // The leaver no longer holds back the forgetting of old calls.
    job.retire();
}

void Agent::free_job(uint32_t jid)
{
    auto it = jobs_.find(jid);
    if (it == jobs_.end()) {
        return;
    }
    it->second->release_all(pool_);
    jobs_.erase(it);
    ++counters_.jobs_freed;
    INA_DEBUG("job %u freed", jid);
}

// ---------------------------------------------------------------- block path

void Agent::on_block(Peer &peer, const ina_proto_hdr_t &h, const void *data)
{
    ++counters_.blocks_in;
    auto it = jobs_.find(h.jid);
    if (it == jobs_.end()) {
        reject(&peer, h, INA_PROTO_ERR_NO_JOB, "block for an unknown job");
        return;
    }
    Job &job = *it->second;
    if (!job.is_member(h.rank, &peer)) {
        // A foreign (or forged) block must not touch the victim job.
        ++counters_.foreign;
        reject(&peer, h, INA_PROTO_ERR_NOT_MEMBER, "sender is not this member");
        return;
    }
    if (h.window != job.window()) {
        reject(&peer, h, INA_PROTO_ERR_MISMATCH, "window differs from the job's");
        return;
    }
    if (static_cast<size_t>(h.seg_count) * ina_proto_dtype_size(h.dtype) > pool_.seg_bytes()) {
        reject(&peer, h, INA_PROTO_ERR_MALFORMED, "block larger than a Seg");
        return;
    }
    job.note_mid(h.rank, h.mid);

    Call *call = job.find_call(h.mid);
    if (call == nullptr) {
        // First block of this MID from any rank: decide once for every member.
        job.retire();
        if (job.is_retired(h.mid)) {
            ++counters_.denied_blocks; // late block of a call already forgotten
            return;
        }
        Decision d = scheduler_->decide(
            {h.jid, h.mid, job.window(), h.arg, h.coll, h.op, h.dtype}, pool_);
        Call &c = job.add_call(h.mid);
        c.coll = h.coll;
        c.total = h.arg;
        if (d.grant && pool_.acquire(job.window(), c.lease)) {
            c.granted = true;
            c.next_sid.resize(job.window());
            std::iota(c.next_sid.begin(), c.next_sid.end(), 0u);
            ++counters_.calls_granted;
            announce(job, h.mid, INA_PROTO_GRANT, INA_PROTO_OK);
        } else {
            c.finished = true;
            c.deny_status = d.grant ? INA_PROTO_ERR_NO_RESOURCES : d.status;
            ++counters_.calls_denied;
            INA_DEBUG("job %u mid %" PRIu64 " (%s) denied: %s", h.jid, h.mid,
                      ina_proto_coll_name(h.coll), ina_proto_status_name(c.deny_status));
            announce(job, h.mid, INA_PROTO_DENY, c.deny_status);
        }
        call = &c;
    }
    if (!call->granted) {
        ++counters_.denied_blocks; // every member was told; drop silently
        return;
    }
    if (call->finished || h.sid < call->next_sid[h.seg]) {
        ++counters_.duplicate; // a block whose RESULT already went out
        return;
    }
    if (h.arg != call->total) {
        reject(&peer, h, INA_PROTO_ERR_MISMATCH, "call size differs between members");
        return;
    }
    uint32_t seg = call->lease[h.seg];
    const bool want = (h.flags & INA_PROTO_F_WANT_RESULT) != 0;
    Block b{h.rank, h.sid, h.coll, h.op, h.dtype, want, h.offset, h.count, h.seg_count, h.arg, data};
    switch (pool_.contribute(seg, job.topology(), b)) {
    case SegOutcome::kStored:
        return;
    case SegOutcome::kDuplicate:
        ++counters_.duplicate;
        INA_DEBUG("duplicate block jid %u rank %u sid %u", h.jid, h.rank, h.sid);
        return;
    case SegOutcome::kMismatch:
        reject(&peer, h, INA_PROTO_ERR_MISMATCH,
               "coll/op/dtype/seg_count/size differ from the Seg's");
        return;
    case SegOutcome::kNotWhole:
        reject(&peer, h, INA_PROTO_ERR_MISMATCH, "data does not cover the whole block");
        return;
    case SegOutcome::kOverlap:
        reject(&peer, h, INA_PROTO_ERR_MISMATCH,
               "piece overlaps data already placed (second root or overlapping chunk)");
        return;
    case SegOutcome::kUncovered:
        reject(&peer, h, INA_PROTO_ERR_MISMATCH, "last piece leaves part of the block empty");
        return;
    case SegOutcome::kBusy:
        reject(&peer, h, INA_PROTO_ERR_SEG_BUSY, "Seg holds another SID");
        return;
    case SegOutcome::kTooBig:
        reject(&peer, h, INA_PROTO_ERR_MALFORMED, "block larger than a Seg");
        return;
    case SegOutcome::kComplete:
        break;
    }
    // Complete: the Seg is free again at once; the result buffer travels.
    call->next_sid[h.seg] = h.sid + job.window();
    send_result(job, h, seg);
    // BARRIER's single block is empty (total 0): done >= total at once.
    call->done += h.seg_count;
    if (call->done >= call->total) {
        pool_.release(call->lease); // the call ended: its lease goes back
        call->finished = true;
    }
}

void Agent::send_result(Job &job, const ina_proto_hdr_t &blk, uint32_t seg)
{
    ina_proto_hdr_t r;
    ina_proto_init(&r, INA_PROTO_RESULT);
    r.coll = blk.coll;
    r.op = blk.op;
    r.dtype = blk.dtype;
    r.window = blk.window;
    r.jid = blk.jid;
    r.sid = blk.sid;
    r.mid = blk.mid;
    r.seg = blk.seg;
    r.seg_count = blk.seg_count;
    r.arg = blk.arg;
    ina_proto_hdr_t ack = r;
    ack.flags = INA_PROTO_F_ACK_ONLY; // count 0: the ACK of the member's block, no payload
    r.count = blk.seg_count;

    const size_t len = static_cast<size_t>(blk.seg_count) * ina_proto_dtype_size(blk.dtype);
    // The Seg is free for the next SID from here on; the buffer travels with
    // one reference per payload send (none at all when nobody wants it, and
    // an empty BARRIER block has no buffer).
    const uint32_t buf = pool_.take_result(seg);
    const uint32_t nwant = pool_.wanted(seg);
    if (buf != kNoIndex) {
        pool_.buffers().hold(buf, nwant);
    }
    // Every member contributed, so every member is joined: each gets exactly
    // one of the two.
    for (uint32_t rank = 0; rank < job.nmembers(); ++rank) {
        Peer *p = job.member(rank);
        if (p == nullptr) {
            continue;
        }
        if (pool_.wants(seg, rank)) {
            r.rank = rank;
            queue(*p, r, buf, len);
        } else {
            ack.rank = rank;
            queue(*p, ack, kNoIndex, 0);
        }
    }
}

void Agent::announce(Job &job, uint64_t mid, ina_proto_type_t type, ina_proto_status_t status)
{
    ina_proto_hdr_t d;
    ina_proto_init(&d, type);
    d.status = static_cast<uint8_t>(status);
    d.jid = job.jid();
    d.mid = mid;
    d.window = static_cast<uint16_t>(job.window());
    for (uint32_t rank = 0; rank < job.nmembers(); ++rank) {
        if (Peer *p = job.member(rank)) {
            d.rank = rank;
            queue(*p, d, kNoIndex, 0);
        }
    }
}

void Agent::log_counters() const
{
    const Counters &c = counters_;
    INA_INFO("counters: msgs_in=%" PRIu64 " blocks_in=%" PRIu64 " results_out=%" PRIu64
             " acks_out=%" PRIu64 " result_bytes_out=%" PRIu64 " grants_out=%" PRIu64
             " calls_granted=%" PRIu64 " calls_denied=%" PRIu64 " calls_aborted=%" PRIu64
             " denied_blocks=%" PRIu64 " duplicate=%" PRIu64 " foreign=%" PRIu64
             " send_errors=%" PRIu64 " peers_accepted=%" PRIu64 " peers_lost=%" PRIu64,
             c.msgs_in, c.blocks_in, c.results_out, c.acks_out, c.result_bytes_out,
             c.grants_out, c.calls_granted, c.calls_denied, c.calls_aborted, c.denied_blocks,
             c.duplicate, c.foreign, c.send_errors, c.peers_accepted, c.peers_lost);
    std::string rej;
    for (unsigned s = 1; s <= INA_PROTO_STATUS_MAX; ++s) {
        rej += std::string(" ") + ina_proto_status_name(s) + "=" + std::to_string(c.rejected[s]);
    }
    INA_INFO("rejected:%s rndv=%" PRIu64, rej.c_str(), c.rndv_rejected);
    INA_INFO("jobs: jobs_created=%" PRIu64 " jobs_freed=%" PRIu64 " jobs_live=%zu segs_free=%u/%u"
             " buffers=%zu",
             c.jobs_created, c.jobs_freed, jobs_.size(), pool_.free_segs(), pool_.size(),
             pool_.buffers().allocated());
}

} // namespace ina

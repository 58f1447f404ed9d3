// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// ina-switchd's transport: endpoints, the event loop, where a packet is
// parsed (receive: ina_proto_check) and handed to the aggregation core, and
// the send queue the core's Sink calls fill. UCX callbacks only parse, call
// the core and queue: every send, accept and close happens in service(),
// after ucp_worker_progress() returned, so the agent never re-enters UCX from
// inside one of its callbacks.
#include "agent.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <new>
#include <stdexcept>

#include "log.h"
#include "recorder.h"
#include "sched/guard.h"

namespace ina {

namespace {

std::runtime_error ucs_error(const char *what, ucs_status_t st)
{
    return std::runtime_error(ucx::status_message(what, st));
}

} // namespace

Agent::Agent(const AgentConfig &cfg, const agg::Aggregator::SchedulerFactory &make_scheduler)
    : cfg_(cfg), waiting_(cfg.spin), between_(cfg.spin), agg_(cfg.core, make_scheduler, *this)
{
}

Agent::~Agent()
{
    parent_.reset(); // before the peers: it may still tell the core about calls
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
    for (RecvCtx *ctx : recvs_) {
        ucp_request_cancel(worker_.get(), ctx->req); // completes as canceled
    }
    for (auto &kv : peers_) {
        ucx::close_ep_detached(kv.second->ep, true);
    }
    if (worker_) {
        for (int spins = 0; (sends_in_flight_ > 0 || !recvs_.empty()) && spins < 1000000;
             ++spins) {
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
    ucs_status_t st = ucx::make_context(UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP, "ina-switchd", context_,
                                        true);
    if (st != UCS_OK) {
        throw ucs_error("ucp_init", st);
    }
    st = ucx::make_worker(context_.get(), UCS_THREAD_MODE_SINGLE, worker_);
    if (st != UCS_OK) {
        throw ucs_error("ucp_worker_create", st);
    }
    st = ucx::set_am_handler(worker_.get(), INA_PROTO_AM_TO_AGENT, &Agent::on_am, this);
    if (st != UCS_OK) {
        throw ucs_error("ucp_worker_set_am_recv_handler", st);
    }

    const std::string port = std::to_string(cfg_.port);
    ucx::Addrinfo res;
    int gai = ucx::resolve(cfg_.host, port, true, res);
    if (gai != 0) {
        throw std::runtime_error("cannot resolve " + cfg_.host + ": " + gai_strerror(gai));
    }
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
    if (!cfg_.parent.empty()) {
        parent_ = std::make_unique<ParentLink>(cfg_.parent, agg_);
        parent_->set_liveness(std::chrono::milliseconds(cfg_.parent_liveness_ms));
        parent_->start(cfg_.core.seg_bytes, cfg_.parent_timeout_ms);
        agg_.set_uplink(&parent_->uplink());
    }
    INA_INFO("listening on %s (segs=%u seg-size=%u max-window=%u)", bound_address().c_str(),
             cfg_.core.segs, cfg_.core.seg_bytes, cfg_.core.max_window);
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
    return ucx::sockaddr_to_string(reinterpret_cast<const struct sockaddr *>(&attr.sockaddr), len);
}

int Agent::run(int signal_fd)
{
    int efd = -1;
    ucs_status_t st = ucp_worker_get_efd(worker_.get(), &efd);
    if (st != UCS_OK) {
        throw ucs_error("ucp_worker_get_efd", st);
    }
    ucx::UniqueFd ep(epoll_create1(EPOLL_CLOEXEC));
    if (ep.get() < 0) {
        throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
    }
    auto watch = [&ep](int fd) {
        struct epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        if (epoll_ctl(ep.get(), EPOLL_CTL_ADD, fd, &ev) != 0 &&
            (errno != EEXIST || epoll_ctl(ep.get(), EPOLL_CTL_MOD, fd, &ev) != 0)) {
            throw std::runtime_error(std::string("epoll_ctl: ") + std::strerror(errno));
        }
    };
    watch(efd);
    watch(signal_fd);
    for (Sidecar *s : sidecars_) {
        watch(s->fd());
    }
    int parent_fd = parent_ ? parent_->wake_fd() : -1;
    uint64_t parent_gen = parent_ ? parent_->generation() : 0;
    if (parent_fd >= 0) {
        watch(parent_fd);
    }
    for (;;) {
        if (parent_) {
            // A lost parent is connected again: a new channel, whose fd may
            // have the old one's number (closed, it left the set).
            parent_->maintain();
            if (parent_->generation() != parent_gen) {
                if (parent_fd >= 0) {
                    (void) epoll_ctl(ep.get(), EPOLL_CTL_DEL, parent_fd, nullptr); // may be gone
                }
                parent_gen = parent_->generation();
                parent_fd = parent_->wake_fd();
                if (parent_fd >= 0) {
                    watch(parent_fd);
                }
            }
        }
        // Act on what the last poll delivered first: its replies go out
        // before the next poll, which costs a syscall on TCP.
        tick();
        check_children(agg::Clock::now());
        service();
        if (!sidecars_.empty() && agg::Clock::now() >= next_sidecars_) {
            serve_sidecars(); // busy for a while: the operator is served too
        }
        if (ucp_worker_progress(worker_.get()) != 0) {
            continue; // more came, or sends progressed
        }
        if (parent_ && parent_->progress()) {
            continue; // the parent said something (its replies queued sends)
        }
        // Two kinds of waits, learned apart: for the rest of a call in
        // flight, and between calls (from the last message handled to the
        // next one). Each spins for about what it has seen, within the bound.
        SpinPolicy &policy = work_outstanding() ? waiting_ : between_;
        const auto idle_since = agg::Clock::now();
        if (spin(policy)) {
            policy.observe(agg::Clock::now() - idle_since);
            continue;
        }
        st = ucp_worker_arm(worker_.get());
        if (st == UCS_ERR_BUSY) {
            continue; // events arrived since the last progress
        }
        if (st != UCS_OK) {
            throw ucs_error("ucp_worker_arm", st);
        }
        if (parent_ && !parent_->arm()) {
            continue;
        }
        // Sleep for good unless calls wait for the scheduler: then wake up
        // for its next tick.
        int timeout = -1;
        if (agg_.wants_tick()) {
            auto left = std::chrono::ceil<std::chrono::milliseconds>(next_tick_ -
                                                                     agg::Clock::now());
            timeout = static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
        }
        if (const int p = parent_ ? parent_->next_wake_ms() : -1; p >= 0) {
            timeout = timeout < 0 ? p : std::min(timeout, p); // the parent's next try
        }
        if (watch_children()) { // the next look at the child agents
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(next_children_ -
                                                                           agg::Clock::now());
            const int c = static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
            timeout = timeout < 0 ? c : std::min(timeout, c);
        }
        for (const Sidecar *s : sidecars_) {
            if (const int w = s->next_wake_ms(); w >= 0) {
                timeout = timeout < 0 ? w : std::min(timeout, w);
            }
        }
        if (!outbox_.empty()) { // held (--bench-delay-us): the first one's due time
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(outbox_.front()->due -
                                                                           agg::Clock::now());
            const int d = static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
            timeout = timeout < 0 ? d : std::min(timeout, d);
        }
        struct epoll_event evs[8];
        int n = epoll_wait(ep.get(), evs, 8, timeout);
        if (n < 0 && errno != EINTR) {
            throw std::runtime_error(std::string("epoll_wait: ") + std::strerror(errno));
        }
        // Woken by an event, a tick or a signal: either way, as long a wait.
        policy.observe(agg::Clock::now() - idle_since);
        bool for_sidecars = n == 0; // a timeout: maybe theirs
        for (int i = 0; i < n; ++i) {
            for (const Sidecar *s : sidecars_) {
                for_sidecars = for_sidecars || evs[i].data.fd == s->fd();
            }
            if (evs[i].data.fd == signal_fd) {
                struct signalfd_siginfo si{};
                if (read(signal_fd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
                    INA_INFO("signal %u: shutting down", si.ssi_signo);
                    return static_cast<int>(si.ssi_signo);
                }
            }
        }
        if (for_sidecars && !sidecars_.empty()) {
            serve_sidecars();
        }
    }
}

void Agent::serve_sidecars()
{
    // Every 5 ms at most while busy: a few syscalls, none of them blocking.
    next_sidecars_ = agg::Clock::now() + std::chrono::milliseconds(5);
    for (Sidecar *s : sidecars_) {
        try {
            s->serve();
        } catch (const std::exception &e) {
            INA_WARN("operator request not served: %s", e.what());
        }
    }
}

std::map<std::string, uint64_t> Agent::bytes_in_by_host() const
{
    std::map<std::string, uint64_t> by_host = host_bytes_in_;
    for (const auto &kv : peers_) {
        by_host[kv.second->host] += kv.second->block_bytes_in;
    }
    return by_host;
}

std::map<std::string, uint32_t> Agent::peers_by_host() const
{
    std::map<std::string, uint32_t> by_host;
    for (const auto &kv : peers_) {
        if (!kv.second->dead) {
            ++by_host[kv.second->host];
        }
    }
    return by_host;
}

bool Agent::work_outstanding() const
{
    return agg_.pool().free_segs() < agg_.pool().size() || sends_in_flight_ > 0 ||
           !outbox_.empty() ||
           (parent_ && parent_->sending());
}

bool Agent::spin(const SpinPolicy &policy)
{
    return spin_poll(policy.budget(true), policy.config().yield, [this] {
        const bool here = ucp_worker_progress(worker_.get()) != 0;
        return (parent_ && parent_->progress()) || here;
    });
}

void Agent::tick()
{
    if (!agg_.wants_tick()) {
        next_tick_ = agg::Clock::time_point{};
        return;
    }
    const agg::Clock::time_point now = agg::Clock::now();
    if (next_tick_ == agg::Clock::time_point{}) {
        next_tick_ = now + agg_.tick_interval(); // deferral just began
        return;
    }
    if (now < next_tick_) {
        return;
    }
    next_tick_ = now + agg_.tick_interval();
    try {
        agg_.tick(now);
    } catch (const std::bad_alloc &) {
        INA_ERROR("out of memory in the scheduler's tick; deferred calls wait for the next one");
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
    // std::bad_alloc from growing a list; the message is then dropped.
    try {
        self->receive(peer, h, header, header_length, data, length, param->recv_attr);
    } catch (const std::exception &e) {
        INA_ERROR("dropped a %s: %s", ina_proto_type_name(h.type), e.what());
        self->agg_.reject(nullptr, h, INA_PROTO_ERR_NO_RESOURCES, "dropped");
    }
    return UCS_OK;
}

void Agent::receive(Peer *peer, const ina_proto_hdr_t &h, const void *header,
                    size_t header_length, const void *data, size_t length, uint64_t recv_attr)
{
    if (peer != nullptr) {
        ++peer->msgs_in; // it is there (check_children)
    }
    const bool rndv = (recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    if (!rndv) { // (a rendezvous payload is recorded where it lands: finish_recv)
        record_received(peer != nullptr ? peer->id : 0, header, header_length, data, length, 0);
    }
    ina_proto_status_t st = ina_proto_check(header, header_length, length);
    if (st != INA_PROTO_OK) {
        // A rendezvous descriptor left alone is dropped when on_am returns.
        counters_.rndv_rejected += rndv ? 1 : 0;
        char why[128] = "invalid message";
        if (st == INA_PROTO_ERR_VERSION) {
            // The version byte sits at the same offset in every version.
            std::snprintf(why, sizeof(why),
                          "the peer speaks ina protocol version %u, this agent %u to %u (another "
                          "ina build)",
                          static_cast<const uint8_t *>(header)[offsetof(ina_proto_hdr_t, version)],
                          INA_PROTO_VERSION_MIN, INA_PROTO_VERSION);
        }
        agg_.reject(peer, h, st, why);
        return;
    }
    if (peer == nullptr) {
        counters_.rndv_rejected += rndv ? 1 : 0;
        agg_.reject(nullptr, h, INA_PROTO_ERR_MALFORMED, "no reply endpoint");
        return;
    }
    if (peer->refused) {
        counters_.rndv_rejected += rndv ? 1 : 0;
        agg_.reject(nullptr, h, INA_PROTO_ERR_LIMIT, "from a connection refused at HELLO");
        return;
    }
    if (h.type != INA_PROTO_HELLO && h.version != peer->version) {
        // Another version than the connection chose: its fields may mean
        // something else (common/ina_proto.h, "Versions").
        counters_.rndv_rejected += rndv ? 1 : 0;
        char why[96];
        std::snprintf(why, sizeof(why), "version %u on a connection that speaks %u", h.version,
                      peer->version);
        agg_.reject(peer, h, INA_PROTO_ERR_VERSION, why);
        return;
    }
    if (rndv) {
        receive_rndv(peer, h, const_cast<void *>(data), length);
        return;
    }
    if (h.type == INA_PROTO_BLOCK) {
        peer->block_bytes_in += length;
        counters_.block_bytes_in += length;
    }
    agg::serve(agg_, *this, *peer, h, data, length);
}

void Agent::receive_rndv(Peer *peer, const ina_proto_hdr_t &h, void *desc, size_t length)
{
    // Only a BLOCK's payload is worth a rendezvous, and it must fit the pool
    // buffer it lands in (the core checks the block against the Seg again).
    if (h.type != INA_PROTO_BLOCK || length == 0 || length > agg_.pool().seg_bytes()) {
        ++counters_.rndv_rejected;
        agg_.reject(peer, h, INA_PROTO_ERR_MALFORMED,
                    h.type != INA_PROTO_BLOCK ? "rendezvous message that is not a BLOCK"
                                              : "rendezvous BLOCK larger than a Seg");
        return;
    }
    if (recv_free_.empty()) {
        // The free list has room for every context, so that giving one back
        // never allocates.
        recv_free_.reserve(recv_store_.size() + 1);
        recv_store_.push_back(std::make_unique<RecvCtx>());
        recv_free_.push_back(recv_store_.back().get());
    }
    recvs_.reserve(recvs_.size() + 1);
    agg::BufRef buf(agg_.buffers(), agg_.buffers().get());
    RecvCtx *ctx = recv_free_.back();
    recv_free_.pop_back();
    ctx->agent = this;
    ctx->peer_id = peer->id;
    ctx->ep = peer->ep;
    ctx->hdr = h;
    ctx->buf = std::move(buf);
    ctx->len = length;
    ucp_request_param_t prm{};
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    prm.cb.recv_am = &Agent::on_recv_done;
    prm.user_data = ctx;
    prm.memory_type = UCS_MEMORY_TYPE_HOST;
    ucs_status_ptr_t r = ucp_am_recv_data_nbx(worker_.get(), desc, ctx->buf.data(), length, &prm);
    if (r == nullptr) {
        finish_recv(ctx, UCS_OK); // landed at once
    } else if (UCS_PTR_IS_ERR(r)) {
        finish_recv(ctx, UCS_PTR_STATUS(r));
    } else {
        ctx->req = r;
        recvs_.push_back(ctx);
    }
}

void Agent::on_recv_done(void *request, ucs_status_t status, size_t, void *user_data)
{
    auto *ctx = static_cast<RecvCtx *>(user_data);
    Agent *self = ctx->agent;
    auto &in_flight = self->recvs_;
    in_flight.erase(std::find(in_flight.begin(), in_flight.end(), ctx));
    ctx->req = nullptr;
    try {
        self->finish_recv(ctx, status);
    } catch (const std::exception &e) {
        INA_ERROR("dropped a rendezvous BLOCK: %s", e.what());
    }
    ucp_request_free(request);
}

void Agent::finish_recv(RecvCtx *ctx, ucs_status_t status)
{
    struct Recycle { // the context goes back whatever happens
        Agent *agent;
        RecvCtx *ctx;
        ~Recycle()
        {
            ctx->buf.reset();
            agent->recv_free_.push_back(ctx); // never allocates (see receive_rndv)
        }
    } recycle{this, ctx};
    auto it = peers_.find(ctx->ep);
    Peer *peer = it != peers_.end() && it->second->id == ctx->peer_id && !it->second->dead
                     ? it->second.get()
                     : nullptr;
    if (status != UCS_OK || peer == nullptr) {
        // The sender is gone (its data with it) or UCX failed the transfer:
        // nothing reached the core, and the member's loss, if it is one,
        // reaches it through on_ep_error.
        ++counters_.rndv_rejected;
        INA_DEBUG("rendezvous BLOCK jid %u rank %u sid %u not received: %s", ctx->hdr.jid,
                  ctx->hdr.rank, ctx->hdr.sid,
                  peer == nullptr ? "sender gone" : ucs_status_string(status));
        return;
    }
    ++counters_.blocks_rndv;
    record_received(peer->id, &ctx->hdr, sizeof(ctx->hdr), ctx->buf.data(), ctx->len, kRecordRndv);
    peer->block_bytes_in += ctx->len;
    counters_.block_bytes_in += ctx->len;
    agg::serve(agg_, *this, *peer, ctx->hdr, ctx->buf.data(), ctx->len, &ctx->buf);
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
    bool did = parent_ && parent_->flush();
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
    // One that could not leave its jobs (out of memory) stays, dead, for the
    // next round: its jobs still name it, so it is neither closed nor erased.
    const auto stay = std::partition(dying.begin(), dying.end(),
                                     [this](Peer *peer) { return drop_peer(*peer); });
    if (stay != dying.end()) {
        try {
            dying_.insert(dying_.end(), stay, dying.end());
        } catch (const std::bad_alloc &) {
            INA_ERROR("out of memory: %zu lost peers keep their memberships",
                      static_cast<size_t>(dying.end() - stay));
        }
        dying.erase(stay, dying.end());
    }
    if (!outbox_.empty()) {
        for (SendCtx *ctx : outbox_) {
            ctx->peer->grant_at = SIZE_MAX;
        }
        // --bench-delay-us: messages not due yet stay, in order (a dead
        // peer's go now: it is closed at the end of this round).
        const agg::Clock::time_point now =
            cfg_.bench_delay.count() > 0 ? agg::Clock::now() : agg::Clock::time_point{};
        size_t held = 0;
        for (SendCtx *ctx : outbox_) {
            if (ctx->peer->dead) {
                finish_send(ctx, UCS_ERR_CANCELED);
                continue;
            }
            if (ctx->due > now) {
                outbox_[held++] = ctx;
                continue;
            }
            if (ctx->implied) {
                ++counters_.grants_implied;
                recycle(ctx);
                continue;
            }
            ucp_request_param_t prm{};
            prm.op_attr_mask =
                UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
            prm.cb.send = &Agent::on_send_done;
            prm.user_data = ctx;
            const uint64_t rndv = ctx->peer->rndv_results;
            prm.flags = rndv != 0 && ctx->len >= rndv ? UCP_AM_SEND_FLAG_RNDV
                                                      : UCP_AM_SEND_FLAG_EAGER;
            counters_.results_rndv += prm.flags == UCP_AM_SEND_FLAG_RNDV ? 1 : 0;
            ucs_status_ptr_t r =
                ucp_am_send_nbx(ctx->peer->ep, INA_PROTO_AM_TO_CLIENT, &ctx->hdr, sizeof(ctx->hdr),
                                ctx->held.empty() ? ctx->payload.data() : ctx->held.data(),
                                ctx->len, &prm);
            if (r == nullptr) {
                finish_send(ctx, UCS_OK); // sent at once
            } else if (UCS_PTR_IS_ERR(r)) {
                finish_send(ctx, UCS_PTR_STATUS(r));
            } else {
                ++sends_in_flight_;
            }
        }
        did = did || outbox_.size() != held;
        outbox_.resize(held);
    }
    // A refused HELLO's ERROR went out above: the connection is closed
    // (flushed first) in the next round. (Still in peers_: only peers in
    // `dying` are erased, below.)
    for (Peer *peer : closing_) {
        if (!peer->dead) {
            peer->dead = true;
            dying_.push_back(peer);
            did = true;
        }
    }
    closing_.clear();
    for (Peer *peer : dying) {
        ucp_ep_h ep = peer->ep;
        // A lost peer is gone anyway; a refused one must still read its
        // ERROR: flushed first (a forced close resets the connection, and
        // the reset can discard what the peer had not read yet).
        ucx::close_ep_detached(ep, !peer->refused);
        peers_.erase(ep);
        did = true;
    }
    return did || !dying_.empty();
}

void Agent::accept(ucp_conn_request_h req)
{
    if (peers_.size() >= 2 * static_cast<size_t>(cfg_.max_conns)) {
        // Refused at HELLO already would be kinder, but connections that
        // never say it must not pile up either.
        ++counters_.peers_refused;
        INA_WARN("connection refused by the listener: %zu connections open (--max-conns %u)",
                 peers_.size(), cfg_.max_conns);
        ucp_listener_reject(listener_.get(), req);
        return;
    }
    auto peer = std::make_unique<Peer>();
    peer->id = next_peer_id_++;
    peer->host = "?";
    ucp_conn_request_attr_t attr{};
    attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
    char ip[INET6_ADDRSTRLEN];
    if (ucp_conn_request_query(req, &attr) == UCS_OK) {
        const auto *sa = reinterpret_cast<const sockaddr *>(&attr.client_address);
        const void *a = sa->sa_family == AF_INET6
                            ? static_cast<const void *>(&reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_addr)
                            : static_cast<const void *>(&reinterpret_cast<const sockaddr_in *>(sa)->sin_addr);
        if (inet_ntop(sa->sa_family, a, ip, sizeof(ip)) != nullptr) {
            peer->host = ip;
        }
    }
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
    peer->live.set_limit(std::chrono::milliseconds(std::max(0, cfg_.child_liveness_ms)));
    ++counters_.peers_accepted;
    INA_DEBUG("peer %" PRIu64 " connected", peer->id);
    peers_.emplace(ep, std::move(peer));
}

void Agent::check_children(agg::Clock::time_point now)
{
    if (!watch_children() || now < next_children_) {
        return;
    }
    next_children_ = now + std::chrono::milliseconds(std::max(1, cfg_.child_liveness_ms / 6));
    for (auto &kv : peers_) {
        Peer &peer = *kv.second;
        if (peer.dead || !agg_.is_child_agent(peer)) {
            peer.live.restart(now); // a rank, or not a child yet: nothing asked of it
            continue;
        }
        switch (peer.live.check(now, peer.msgs_in)) {
        case Liveness::Verdict::kProbe: {
            ina_proto_hdr_t ping;
            ina_proto_init(&ping, INA_PROTO_PING);
            ping.arg = ++counters_.child_probes;
            send(peer, ping, {}, 0);
            break;
        }
        case Liveness::Verdict::kLost:
            // As if its connection had closed: it leaves its jobs, whose
            // open calls end on the other children (their ranks recover
            // them), and the connection is closed.
            INA_WARN("peer %" PRIu64 " (a child agent) lost: it answered nothing, probes "
                     "included, for --child-liveness-ms %d",
                     peer.id, cfg_.child_liveness_ms);
            ++counters_.children_silent;
            try {
                dying_.push_back(&peer);
                peer.dead = true;
            } catch (const std::bad_alloc &) {
                INA_ERROR("out of memory: peer %" PRIu64 " keeps its memberships", peer.id);
            }
            break;
        case Liveness::Verdict::kFine:
            break;
        }
    }
}

void Agent::test_fault(const ina_proto_hdr_t &result)
{
    // In the middle of a call: at a RESULT beyond the count, of a call one
    // of whose RESULTs with payload went out already (some member holds
    // part of it), never at a call's start.
    const bool mid_call = result.jid == sent_result_jid_ && result.mid == sent_result_mid_;
    if (++results_queued_ <= std::max(cfg_.test_die_after_results, cfg_.test_freeze_after_results) ||
        !mid_call) {
        return;
    }
    if (cfg_.test_die_after_results != 0 && results_queued_ > cfg_.test_die_after_results) {
        INA_WARN("--test-die-after-results %" PRIu64 ": killing myself",
                 cfg_.test_die_after_results);
        ::raise(SIGKILL);
    }
    if (cfg_.test_freeze_after_results != 0 && !frozen_) {
        frozen_ = true;
        INA_WARN("--test-freeze-after-results %" PRIu64 ": stopping myself (SIGSTOP)",
                 cfg_.test_freeze_after_results);
        ::raise(SIGSTOP);
    }
}

bool Agent::drop_peer(Peer &peer)
{
    try {
        // Again after a failure: what it left already is not left twice.
        agg_.member_lost(peer);
        host_bytes_in_[peer.host] += peer.block_bytes_in;
    } catch (const std::bad_alloc &) {
        INA_ERROR("out of memory while peer %" PRIu64 " leaves its jobs: trying again",
                  peer.id);
        return false;
    }
    ++counters_.peers_lost;
    if (peer.admitted) {
        peer.admitted = false;
        --admitted_;
    }
    return true;
}

// ---------------------------------------------------------------- the core's Sink

void Agent::send(agg::Member &to, const ina_proto_hdr_t &h, agg::BufRef payload, size_t len)
{
    if (h.type == INA_PROTO_RESULT && test_faults()) {
        test_fault(h);
    }
    std::vector<std::byte> held;
    if (cfg_.bench_delay.count() > 0 && payload) {
        held.assign(payload.data(), payload.data() + len); // may throw: nothing taken yet
        payload.reset();
    }
    if (send_free_.empty()) {
        send_store_.push_back(std::make_unique<SendCtx>());
        send_free_.push_back(send_store_.back().get());
    }
    outbox_.reserve(outbox_.size() + 1); // no throw once the context is taken
    SendCtx *ctx = send_free_.back();
    send_free_.pop_back();
    ctx->agent = this;
    // Every member the core knows is one of our peers.
    ctx->peer = static_cast<Peer *>(&to);
    ctx->hdr = h;
    ctx->hdr.version = ctx->peer->version; // the connection's (HELLO_ACK: the one chosen)
    ctx->payload = std::move(payload);
    ctx->held.swap(held);
    ctx->len = len;
    ctx->implied = false;
    if (cfg_.bench_delay.count() > 0) {
        ctx->due = agg::Clock::now() + cfg_.bench_delay;
    }
    // A RESULT is also the GRANT of its call (the client takes it so): a
    // GRANT still waiting in the outbox for this call need not go. Where
    // the decision and the RESULT come in one round (a call of one member, a
    // deferred call whose blocks were all there) that saves a message each
    // way, the difference between one round trip and two at small sizes.
    if (h.type == INA_PROTO_GRANT) {
        ctx->peer->grant_at = outbox_.size();
    } else if (h.type == INA_PROTO_RESULT && ctx->peer->grant_at != SIZE_MAX) {
        SendCtx *grant = outbox_[ctx->peer->grant_at];
        if (grant->hdr.jid == h.jid && grant->hdr.mid == h.mid) {
            grant->implied = true;
        }
    }
    outbox_.push_back(ctx);
}

ina_proto_status_t Agent::hello(agg::Member &from, const ina_proto_hdr_t &h,
                                uint64_t *rndv_blocks)
{
    const unsigned version =
        ina_proto_version_choose(ina_proto_hello_lowest(&h), ina_proto_hello_highest(&h),
                                 INA_PROTO_VERSION_MIN, INA_PROTO_VERSION);
    if (version == 0) {
        // Its ERROR names our range (WireSink::error).
        INA_WARN("peer %" PRIu64 " (%s) speaks ina protocol versions %u to %u, this agent %u to "
                 "%u: refused (upgrade the older of the two)",
                 from.id, static_cast<Peer &>(from).host.c_str(), ina_proto_hello_lowest(&h),
                 ina_proto_hello_highest(&h), INA_PROTO_VERSION_MIN, INA_PROTO_VERSION);
        return INA_PROTO_ERR_VERSION;
    }
    if (ina_proto_hello_stream_seg(&h) != ucx::kStreamSegBytes) {
        // Our RESULTs would be cut in fragments larger than it can take.
        INA_WARN("peer %" PRIu64 " (%s) runs with a stream segment of %u bytes, this agent with "
                 "%u: refused (an ina build of another version?)",
                 from.id, static_cast<Peer &>(from).host.c_str(), ina_proto_hello_stream_seg(&h),
                 ucx::kStreamSegBytes);
        return INA_PROTO_ERR_MISMATCH;
    }
    Peer &peer = static_cast<Peer &>(from);
    if (!peer.admitted && admitted_ >= cfg_.max_conns) {
        ++counters_.peers_refused;
        INA_WARN("peer %" PRIu64 " (%s) refused: %u clients served already (--max-conns)",
                 from.id, peer.host.c_str(), admitted_);
        peer.refused = true; // closed once its ERROR is out (service)
        closing_.push_back(&peer);
        return INA_PROTO_ERR_LIMIT;
    }
    if (!peer.admitted) {
        peer.admitted = true;
        ++admitted_;
    }
    peer.rndv_results = ina_proto_hello_rndv_results(&h);
    peer.version = static_cast<uint8_t>(version);
    if (version != INA_PROTO_VERSION) {
        INA_INFO("peer %" PRIu64 " (%s) speaks ina protocol version %u", from.id,
                 peer.host.c_str(), version);
    }
    *rndv_blocks = cfg_.rndv_bytes;
    return INA_PROTO_OK;
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
                if (test_faults()) {
                    sent_result_jid_ = ctx->hdr.jid; // test_fault's mark
                    sent_result_mid_ = ctx->hdr.mid;
                }
            }
        } else if (ctx->hdr.type == INA_PROTO_GRANT) {
            ++counters_.grants_out;
        }
    } else {
        ++counters_.send_errors;
        INA_DEBUG("send of %s failed: %s", ina_proto_type_name(ctx->hdr.type),
                  ucs_status_string(status));
    }
    recycle(ctx);
}

void Agent::recycle(SendCtx *ctx)
{
    ctx->payload.reset();
    ctx->held.clear();
    ctx->peer = nullptr;
    send_free_.push_back(ctx);
}

// ---------------------------------------------------------------- counters

void Agent::log_counters() const
{
    const agg::Counters &c = agg_.counters();
    const TransportCounters &t = counters_;
    INA_INFO("counters: msgs_in=%" PRIu64 " blocks_in=%" PRIu64 " results_out=%" PRIu64
             " acks_out=%" PRIu64 " result_bytes_out=%" PRIu64 " grants_out=%" PRIu64
             " grants_implied=%" PRIu64 " calls_granted=%" PRIu64 " leased_segs=%" PRIu64
             " calls_denied=%" PRIu64
             " calls_aborted=%" PRIu64 " denied_blocks=%" PRIu64 " duplicate=%" PRIu64
             " foreign=%" PRIu64 " host_costs=%" PRIu64 " call_times=%" PRIu64
             " send_errors=%" PRIu64
             " peers_accepted=%" PRIu64
             " peers_lost=%" PRIu64 " child_probes=%" PRIu64 " children_silent=%" PRIu64,
             t.msgs_in, c.blocks_in, t.results_out, t.acks_out, t.result_bytes_out,
             t.grants_out, t.grants_implied, c.calls_granted, c.leased_segs, c.calls_denied,
             c.calls_aborted,
             c.denied_blocks, c.duplicate, c.foreign, c.host_costs, c.call_times, t.send_errors, t.peers_accepted,
             t.peers_lost, t.child_probes, t.children_silent);
    std::string rej;
    for (unsigned s = 1; s <= INA_PROTO_STATUS_MAX; ++s) {
        rej += std::string(" ") + ina_proto_status_name(s) + "=" + std::to_string(c.rejected[s]);
    }
    INA_INFO("rejected:%s rndv=%" PRIu64, rej.c_str(), t.rndv_rejected);
    INA_INFO("rendezvous: blocks_rndv=%" PRIu64 " results_rndv=%" PRIu64
             " (thresholds: blocks %" PRIu64 " B, results as each client asked)",
             t.blocks_rndv, t.results_rndv, cfg_.rndv_bytes);
    INA_INFO("jobs: jobs_created=%" PRIu64 " jobs_freed=%" PRIu64 " jobs_live=%zu segs_free=%u/%u"
             " buffers=%zu",
             c.jobs_created, c.jobs_freed, agg_.live_jobs(), agg_.pool().free_segs(),
             agg_.pool().size(), agg_.pool().buffers().allocated());
    std::string denied;
    for (unsigned s = 1; s <= INA_PROTO_STATUS_MAX; ++s) {
        if (c.denied_by[s] != 0) {
            denied += std::string(" deny_") + ina_proto_status_name(s) + "=" +
                      std::to_string(c.denied_by[s]);
        }
    }
    INA_INFO("decisions: granted=%" PRIu64 "%s", c.calls_granted, denied.c_str());
    INA_INFO("sched: calls_deferred=%" PRIu64 " kept_blocks=%" PRIu64 " deferred_live=%zu",
             c.calls_deferred, c.kept_blocks, agg_.deferred_calls());
    if (const auto *g = dynamic_cast<const sched::HarmGuard *>(&agg_.scheduler())) {
        INA_INFO("harm guard: served=%" PRIu64 " sent_to_hosts=%" PRIu64 " probes=%" PRIu64
                 " harmed_jobs=%zu",
                 g->served(), g->sent_to_hosts(), g->probes(), g->harmed_jobs());
    }
    const std::map<std::string, uint64_t> by_host = bytes_in_by_host();
    std::string hosts;
    for (const auto &kv : by_host) {
        hosts += " " + kv.first + "=" + std::to_string(kv.second);
    }
    INA_INFO("block bytes in: total=%" PRIu64 " by host:%s", t.block_bytes_in,
             hosts.empty() ? " none" : hosts.c_str());
    INA_INFO("tree: ready_in=%" PRIu64 " abort_in=%" PRIu64 " partials_up=%" PRIu64
             " parent_results=%" PRIu64 " partials_waited=%" PRIu64 " partial_wait_ms=%" PRIu64,
             c.ready_in, c.abort_in, c.partials_up, c.parent_results, c.partials_waited,
             c.partial_wait_ns / 1000000);
    if (parent_) {
        const ParentLink::Counters &p = parent_->counters();
        INA_INFO("parent %s: msgs_out=%" PRIu64 " block_bytes_up=%" PRIu64 " msgs_in=%" PRIu64
                 " result_bytes_down=%" PRIu64 " send_errors=%" PRIu64 " reconnects=%" PRIu64
                 " probes=%" PRIu64,
                 parent_->address().c_str(), p.msgs_out, p.block_bytes_up, p.msgs_in,
                 p.result_bytes_down, p.send_errors, p.reconnects, p.probes);
    }
    INA_INFO("guard: forbidden_opens=%" PRIu64 " limit_refusals=%" PRIu64
             " peers_refused=%" PRIu64 " peers_admitted=%u",
             c.forbidden_opens, c.limit_refusals, t.peers_refused, admitted_);
}

} // namespace ina

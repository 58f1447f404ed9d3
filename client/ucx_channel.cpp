// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#include "ucx_channel.h"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>

#include "ina_client.h"

namespace ina::client {

int UcxChannel::open(const std::string &addr, bool serialized, ChannelEvents &events,
                     std::unique_ptr<Channel> &out, std::string &err)
{
    std::string host;
    std::string port;
    if (!ucx::split_host_port(addr, host, port)) {
        err = "agent address '" + addr + "' is not host:port";
        return INA_ERR_INVALID;
    }
    ucx::Addrinfo res;
    if (int gai = ucx::resolve(host, port, false, res); gai != 0) {
        err = "cannot resolve agent address '" + addr + "': " + gai_strerror(gai);
        return INA_ERR_UNREACHABLE;
    }
    std::unique_ptr<UcxChannel> ch(new UcxChannel(events));
    ucs_status_t st =
        ucx::make_context(UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP, "ina-client", ch->context_);
    if (st != UCS_OK) {
        err = ucx::status_message("ucp_init", st);
        return INA_ERR_UNREACHABLE;
    }
    // With a progress thread two threads use the worker, one at a time:
    // that is SERIALIZED, not SINGLE.
    st = ucx::make_worker(ch->context_.get(),
                          serialized ? UCS_THREAD_MODE_SERIALIZED : UCS_THREAD_MODE_SINGLE,
                          ch->worker_);
    if (st != UCS_OK) {
        err = ucx::status_message("ucp_worker_create", st);
        return INA_ERR_UNREACHABLE;
    }
    if ((st = ucp_worker_get_efd(ch->worker_.get(), &ch->efd_)) != UCS_OK) {
        err = ucx::status_message("ucp_worker_get_efd", st);
        return INA_ERR_UNREACHABLE;
    }
    st = ucx::set_am_handler(ch->worker_.get(), INA_PROTO_AM_TO_CLIENT, &UcxChannel::on_am,
                             ch.get());
    if (st != UCS_OK) {
        err = ucx::status_message("ucp_worker_set_am_recv_handler", st);
        return INA_ERR_UNREACHABLE;
    }
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep.sockaddr.addr = res->ai_addr;
    ep.sockaddr.addrlen = res->ai_addrlen;
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER; // the agent uses PEER too (a mismatch hangs)
    ep.err_handler.cb = &UcxChannel::on_ep_error;
    ep.err_handler.arg = ch.get();
    if ((st = ucp_ep_create(ch->worker_.get(), &ep, &ch->ep_)) != UCS_OK) {
        ch->ep_ = nullptr;
        err = "cannot connect to agent " + addr + ": " + ucs_status_string(st);
        return INA_ERR_UNREACHABLE;
    }
    out = std::move(ch);
    return INA_OK;
}

UcxChannel::~UcxChannel()
{
    if (ep_ != nullptr) {
        ucx::close_ep_detached(ep_, true);
        ep_ = nullptr;
    }
    // Receives still in flight end (as failed) once the endpoint is gone;
    // their callbacks need this object, so wait for them, boundedly.
    for (int spins = 0; landing_ > 0 && spins < 100000; ++spins) {
        ucp_worker_progress(worker_.get());
    }
    // A close still in progress (a force close of an endpoint whose peer
    // stopped without closing its connection) is released now: UCX then
    // frees it itself when it completes, or when the worker below purges
    // the endpoint; a request left unreleased there fails UCX's assertion.
    if (close_req_ != nullptr) {
        ucp_request_free(close_req_);
        close_req_ = nullptr;
    }
    worker_.reset();
}

bool UcxChannel::progress()
{
    return ucp_worker_progress(worker_.get()) != 0;
}

Channel::Posted UcxChannel::post(const ina_proto_hdr_t &hdr, const void *payload, size_t len,
                                 SendOp *op)
{
    if (!alive()) {
        return Posted::failed;
    }
    ucp_request_param_t p{};
    p.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_AM_SEND_FLAG_REPLY | (rndv_bytes_ != 0 && len >= rndv_bytes_
                                            ? UCP_AM_SEND_FLAG_RNDV
                                            : UCP_AM_SEND_FLAG_EAGER);
    p.cb.send = &UcxChannel::on_send_done;
    p.user_data = op;
    ucs_status_ptr_t req =
        ucp_am_send_nbx(ep_, INA_PROTO_AM_TO_AGENT, &hdr, sizeof(hdr), payload, len, &p);
    if (req == nullptr) {
        return Posted::done;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return Posted::failed;
    }
    return Posted::pending;
}

bool UcxChannel::arm()
{
    return ucp_worker_arm(worker_.get()) == UCS_OK;
}

void UcxChannel::signal()
{
    ucp_worker_signal(worker_.get());
}

void UcxChannel::close(bool force)
{
    if (ep_ == nullptr) {
        return;
    }
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = force || lost_ ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t req = ucp_ep_close_nbx(ep_, &p);
    ep_ = nullptr;
    if (UCS_PTR_IS_PTR(req)) {
        close_req_ = req;
    }
}

bool UcxChannel::closed() const
{
    if (ep_ != nullptr) {
        return false;
    }
    if (close_req_ == nullptr) {
        return true;
    }
    if (ucp_request_check_status(close_req_) == UCS_INPROGRESS) {
        return false;
    }
    ucp_request_free(close_req_);
    close_req_ = nullptr;
    return true;
}

void UcxChannel::lose(const std::string &why)
{
    if (!lost_) {
        lost_ = true;
        events_.on_lost(why.c_str());
    }
}

// UCX calls these from inside ucp_worker_progress: no exception may cross
// back into its C frames.

void UcxChannel::on_ep_error(void *arg, ucp_ep_h, ucs_status_t status)
{
    auto *self = static_cast<UcxChannel *>(arg);
    try {
        self->lose(ucs_status_string(status));
    } catch (const std::exception &) {
        self->lost_ = true;
    }
}

void UcxChannel::on_send_done(void *request, ucs_status_t status, void *user_data)
{
    try {
        static_cast<SendOp *>(user_data)->done(status == UCS_OK);
    } catch (...) {
        // done() only counts and logs; nothing to undo if that failed.
    }
    ucp_request_free(request);
}

ucs_status_t UcxChannel::on_am(void *arg, const void *header, size_t header_length, void *data,
                               size_t length, const ucp_am_recv_param_t *param)
{
    auto *self = static_cast<UcxChannel *>(arg);
    try {
        char why[192];
        if (ina_proto_status_t st = ina_proto_check(header, header_length, length);
            st == INA_PROTO_ERR_VERSION) {
            // Nothing more can be understood (the version byte sits at the
            // same offset in every version): the agent is as good as lost,
            // and the user learns why instead of waiting for a timeout.
            std::snprintf(why, sizeof(why),
                          "the agent sent ina protocol version %u, this process speaks %u to %u "
                          "(ina-switchd and the component come from ina builds too far apart)",
                          static_cast<const uint8_t *>(header)[offsetof(ina_proto_hdr_t, version)],
                          INA_PROTO_VERSION_MIN, INA_PROTO_VERSION);
            self->events_.on_lost(why);
            return UCS_OK;
        } else if (st != INA_PROTO_OK) {
            std::snprintf(why, sizeof(why), "a bad message: %s (header %zu bytes, payload %zu)",
                          ina_proto_status_name(st), header_length, length);
            self->events_.on_dropped(why);
            return UCS_OK;
        }
        ina_proto_hdr_t h;
        std::memcpy(&h, header, sizeof(h));
        if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
            self->land(h, data, length); // UCX owns the descriptor from here
            return UCS_OK;
        }
        self->events_.on_message(h, data, length);
    } catch (const std::exception &e) {
        // A message we could not take may belong to a call: its result would
        // never arrive, so the link is as good as lost.
        self->lost_ = true;
        try {
            self->events_.on_lost(e.what());
        } catch (...) {
        }
    }
    return UCS_OK; // consumed (copied) inside the callback
}

void UcxChannel::land(const ina_proto_hdr_t &h, void *desc, size_t len)
{
    if (landing_free_.empty()) {
        landing_free_.reserve(landings_.size() + 1); // giving one back never allocates
        landings_.push_back(std::make_unique<Landing>());
        landing_free_.push_back(landings_.back().get());
    }
    Landing *l = landing_free_.back();
    void *dst = events_.on_rndv(h, len);
    if (dst == nullptr) {
        l->scratch.resize(len); // keeps its capacity from message to message
    }
    landing_free_.pop_back();
    l->ch = this;
    l->hdr = h;
    l->dst = dst;
    l->len = len;
    ++landing_;
    ucp_request_param_t p{};
    p.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    p.cb.recv_am = &UcxChannel::on_recv_done;
    p.user_data = l;
    p.memory_type = UCS_MEMORY_TYPE_HOST;
    ucs_status_ptr_t r = ucp_am_recv_data_nbx(worker_.get(), desc,
                                              dst != nullptr ? dst : l->scratch.data(), len, &p);
    if (r == nullptr) {
        landed(l, true);
    } else if (UCS_PTR_IS_ERR(r)) {
        landed(l, false);
    }
}

void UcxChannel::landed(Landing *l, bool ok)
{
    struct Recycle {
        UcxChannel *ch;
        Landing *l;
        ~Recycle()
        {
            --ch->landing_;
            ch->landing_free_.push_back(l);
        }
    } recycle{this, l};
    if (l->dst != nullptr) {
        events_.on_landed(l->hdr, l->dst, l->len, ok);
    } else if (ok) {
        events_.on_message(l->hdr, l->scratch.data(), l->len);
    } else {
        char why[128];
        std::snprintf(why, sizeof(why), "a %s whose rendezvous payload never arrived",
                      ina_proto_type_name(l->hdr.type));
        events_.on_dropped(why);
    }
}

void UcxChannel::on_recv_done(void *request, ucs_status_t status, size_t, void *user_data)
{
    auto *l = static_cast<Landing *>(user_data);
    UcxChannel *self = l->ch;
    try {
        self->landed(l, status == UCS_OK);
    } catch (const std::exception &e) {
        self->lost_ = true; // as on_am: a RESULT we could not take
        try {
            self->events_.on_lost(e.what());
        } catch (...) {
        }
    }
    ucp_request_free(request);
}

} // namespace ina::client

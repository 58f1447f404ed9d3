// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#include "ina_ucx.h"

#include <cstdlib>

namespace ina::ucx {

namespace {
struct ConfigDeleter {
    void operator()(ucp_config_t *c) const { ucp_config_release(c); }
};
} // namespace

std::string status_message(const char *what, ucs_status_t st)
{
    return std::string(what) + ": " + ucs_status_string(st);
}

ucs_status_t make_context(uint64_t features, const char *name, Context &out, bool listener) noexcept
{
    ucp_config_t *raw = nullptr;
    ucs_status_t st = ucp_config_read(nullptr, nullptr, &raw);
    if (st != UCS_OK) {
        return st;
    }
    std::unique_ptr<ucp_config_t, ConfigDeleter> config(raw);
    // Transport options pass through to UCT; a UCX without TCP ignores them.
    // By which name: Debian 12's UCX 1.13 takes the transport's own name
    // (TX_SEG_SIZE) and warns of the prefixed one as invalid, Debian 13's
    // 1.18 the reverse (and then leaves the segment at its default). The
    // versions between were not tried: 1.16 on is taken as 1.18.
    const std::string seg = std::to_string(kStreamSegBytes);
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    const bool prefixed = major > 1 || (major == 1 && minor >= 16);
    const char *const plain[] = {"TX_SEG_SIZE", "RX_SEG_SIZE"};
    const char *const tcp[] = {"TCP_TX_SEG_SIZE", "TCP_RX_SEG_SIZE"};
    for (const char *key : prefixed ? tcp : plain) {
        st = ucp_config_modify(config.get(), key, seg.c_str());
        if (st != UCS_OK && st != UCS_ERR_NO_ELEM) {
            return st;
        }
    }
    if (listener && std::getenv("UCX_CM_REUSEADDR") == nullptr &&
        std::getenv("UCX_TCP_CM_REUSEADDR") == nullptr) {
        st = ucp_config_modify(config.get(), "CM_REUSEADDR", "y");
        if (st != UCS_OK && st != UCS_ERR_NO_ELEM) {
            return st;
        }
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
    params.features = features;
    params.name = name;
    ucp_context_h ctx = nullptr;
    st = ucp_init(&params, config.get(), &ctx);
    if (st == UCS_OK) {
        out.reset(ctx);
    }
    return st;
}

ucs_status_t make_worker(ucp_context_h ctx, ucs_thread_mode_t mode, Worker &out) noexcept
{
    ucp_worker_params_t params{};
    params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    params.thread_mode = mode;
    ucp_worker_h worker = nullptr;
    ucs_status_t st = ucp_worker_create(ctx, &params, &worker);
    if (st == UCS_OK) {
        out.reset(worker);
    }
    return st;
}

ucs_status_t set_am_handler(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t cb,
                            void *arg) noexcept
{
    ucp_am_handler_param_t am{};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                    UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    am.id = id;
    am.flags = UCP_AM_FLAG_WHOLE_MSG;
    am.cb = cb;
    am.arg = arg;
    return ucp_worker_set_am_recv_handler(worker, &am);
}

void close_ep_detached(ucp_ep_h ep, bool force) noexcept
{
    ucp_request_param_t prm{};
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &prm);
    if (UCS_PTR_IS_PTR(r)) {
        ucp_request_free(r); // released by UCX once the close completes
    }
}

bool split_host_port(const std::string &addr, std::string &host, std::string &port)
{
    size_t colon = addr.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == addr.size()) {
        return false;
    }
    host = addr.substr(0, colon);
    port = addr.substr(colon + 1);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    return true;
}

int resolve(const std::string &host, const std::string &port, bool passive, Addrinfo &out)
{
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? (AI_PASSIVE | AI_NUMERICSERV) : 0;
    addrinfo *res = nullptr;
    int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
    if (rc == 0) {
        out.reset(res);
    }
    return rc;
}

std::string sockaddr_to_string(const sockaddr *sa, socklen_t len)
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

} // namespace ina::ucx

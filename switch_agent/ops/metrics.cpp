// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The metrics endpoint (see metrics.h).
#include "metrics.h"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "ina_ucx.h"
#include "log.h"

namespace ina::ops {

namespace {

constexpr const char *kContentType = "text/plain; version=0.0.4; charset=utf-8";

MHD_Result reply(MHD_Connection *conn, unsigned code, const std::string &body,
                 const char *type = "text/plain; charset=utf-8")
{
    MHD_Response *r = MHD_create_response_from_buffer(body.size(), const_cast<char *>(body.data()),
                                                      MHD_RESPMEM_MUST_COPY);
    if (r == nullptr) {
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (code == MHD_HTTP_METHOD_NOT_ALLOWED) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    }
    const MHD_Result ret = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return ret;
}

MHD_Result on_request(void *cls, MHD_Connection *conn, const char *url, const char *method,
                      const char * /*version*/, const char * /*upload*/, size_t *upload_size,
                      void ** /*state*/)
{
    const auto *self = static_cast<const MetricsServer *>(cls);
    if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        *upload_size = 0; // a body we do not read
        return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET /metrics\n");
    }
    if (std::strcmp(url, "/metrics") != 0) {
        return reply(conn, MHD_HTTP_NOT_FOUND, "ina-switchd: the metrics are at /metrics\n");
    }
    try {
        return reply(conn, MHD_HTTP_OK, self->render(), kContentType);
    } catch (const std::exception &e) {
        INA_WARN("metrics not served: %s", e.what());
        return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "metrics not available\n");
    }
}

void on_log(void * /*cls*/, const char *fmt, va_list ap)
{
    char line[512];
    std::vsnprintf(line, sizeof(line), fmt, ap);
    size_t n = std::strlen(line);
    while (n > 0 && line[n - 1] == '\n') {
        line[--n] = '\0';
    }
    INA_INFO("metrics endpoint: %s", line);
}

} // namespace

MetricsServer::MetricsServer(const std::string &address, Render render)
    : render_(std::move(render))
{
    std::string host;
    std::string port;
    if (!ucx::split_host_port(address, host, port)) {
        throw std::runtime_error("--metrics wants HOST:PORT, got '" + address + "'");
    }
    ucx::Addrinfo ai;
    if (int rc = ucx::resolve(host, port, true, ai); rc != 0) {
        throw std::runtime_error("--metrics " + address + ": " + gai_strerror(rc));
    }
    const addrinfo *a = ai.get();
    unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
    if (a->ai_family == AF_INET6) {
        flags |= MHD_USE_IPv6;
    }
    // One thread: the agent's. A few connections at once, each cut after
    // 10 s idle (a scraper that hangs never holds the agent).
    daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr, &on_request, this,
                               MHD_OPTION_EXTERNAL_LOGGER, &on_log, nullptr,
                               MHD_OPTION_SOCK_ADDR, a->ai_addr,
                               MHD_OPTION_CONNECTION_LIMIT, 16u,
                               MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                               MHD_OPTION_END);
    if (daemon_ == nullptr) {
        throw std::runtime_error("--metrics " + address +
                                 ": cannot listen there (in use, or not this host's address)");
    }
    const MHD_DaemonInfo *ep = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_EPOLL_FD);
    const MHD_DaemonInfo *bp = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
    if (ep == nullptr || bp == nullptr) {
        MHD_stop_daemon(daemon_);
        throw std::runtime_error("--metrics: libmicrohttpd gives no epoll descriptor");
    }
    fd_ = ep->epoll_fd;
    const bool v6 = host.find(':') != std::string::npos;
    bound_ = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(bp->port);
}

MetricsServer::~MetricsServer()
{
    if (daemon_ != nullptr) {
        MHD_stop_daemon(daemon_);
    }
}

void MetricsServer::serve() { (void) MHD_run(daemon_); }

int MetricsServer::next_wake_ms() const
{
    MHD_UNSIGNED_LONG_LONG t = 0;
    if (MHD_get_timeout(daemon_, &t) != MHD_YES) {
        return -1;
    }
    return static_cast<int>(std::min<MHD_UNSIGNED_LONG_LONG>(t, 60000));
}

} // namespace ina::ops

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The metrics endpoint (--metrics HOST:PORT, off by default): HTTP served
// by libmicrohttpd without a thread of its own (its epoll descriptor is
// watched by the agent's loop, a Sidecar), so the figures are read on the
// loop's thread with no locking. GET /metrics answers in the Prometheus text
// format; anything else is 404 (or 405 for another method than GET/HEAD).
#ifndef INA_OPS_METRICS_H
#define INA_OPS_METRICS_H

#include <functional>
#include <string>

#include "agent.h"

struct MHD_Daemon;
struct MHD_Connection;

namespace ina::ops {

class MetricsServer final : public Sidecar {
public:
    using Render = std::function<std::string()>;

    // Listen on "HOST:PORT" (port 0: any free port). Throws std::runtime_error.
    MetricsServer(const std::string &address, Render render);
    ~MetricsServer() override;
    MetricsServer(const MetricsServer &) = delete;
    MetricsServer &operator=(const MetricsServer &) = delete;

    // "HOST:PORT" actually bound.
    const std::string &address() const { return bound_; }
    int fd() const override { return fd_; }
    void serve() override;
    int next_wake_ms() const override;

    // The body of GET /metrics.
    std::string render() const { return render_(); }

private:
    Render render_;
    MHD_Daemon *daemon_ = nullptr;
    int fd_ = -1;
    std::string bound_;
};

} // namespace ina::ops

#endif

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The agent's control socket: a unix stream socket whose file permissions
// (0660, the agent's user and group) decide who may ask. A client writes one
// request line ("status", "jobs", "drain", "resume"), reads one JSON
// document, and the agent closes the connection. Served from the agent's
// loop (a Sidecar): every socket is non-blocking, a slow or silent client is
// dropped after a few seconds, and at most kMaxClients are served at once.
#ifndef INA_OPS_CONTROL_H
#define INA_OPS_CONTROL_H

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include "agent.h"
#include "unique_fd.h"

namespace ina::ops {

class ControlServer final : public Sidecar {
public:
    using Handler = std::function<std::string(const std::string &request)>;

    // Listen on `path`. A live agent already answering there is an error
    // (std::runtime_error, as for any other failure); a stale socket file
    // left by a killed agent is replaced.
    ControlServer(const std::string &path, Handler handler);
    ~ControlServer() override; // removes the socket file if it is still ours
    ControlServer(const ControlServer &) = delete;
    ControlServer &operator=(const ControlServer &) = delete;

    const std::string &path() const { return path_; }
    int fd() const override { return epoll_.get(); }
    void serve() override;
    int next_wake_ms() const override;

    static constexpr size_t kMaxClients = 16;
    static constexpr size_t kMaxRequest = 256;
    static constexpr std::chrono::seconds kClientTimeout{5};

private:
    struct Client {
        UniqueFd fd;
        std::string in;
        std::string out;
        size_t sent = 0;
        std::chrono::steady_clock::time_point deadline;
    };
    void accept_all();
    // False when the client is done (answered or dropped).
    bool on_client(Client &c);

    std::string path_;
    Handler handler_;
    UniqueFd listen_;
    UniqueFd epoll_;
    dev_t dev_ = 0; // the socket file we made (removed only if still it)
    ino_t ino_ = 0;
    std::vector<std::unique_ptr<Client>> clients_;
};

} // namespace ina::ops

#endif

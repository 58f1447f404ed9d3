// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// UCX helpers every side uses (the agent, the client engine, the tests):
// owning handles, context/worker/AM-handler setup, endpoint close, and
// "host:port" addresses. They return ucs_status_t and never throw, so that a
// caller can turn a failure into its own idiom (an exception in the agent, a
// status code in the client engine).
#ifndef INA_UCX_H
#define INA_UCX_H

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include <ucp/api/ucp.h>

#include "unique_fd.h"

namespace ina::ucx {

struct ContextDeleter {
    void operator()(ucp_context_h c) const { ucp_cleanup(c); }
};
struct WorkerDeleter {
    void operator()(ucp_worker_h w) const { ucp_worker_destroy(w); }
};
struct ListenerDeleter {
    void operator()(ucp_listener_h l) const { ucp_listener_destroy(l); }
};
struct AddrinfoDeleter {
    void operator()(addrinfo *a) const { freeaddrinfo(a); }
};
using Context = std::unique_ptr<ucp_context, ContextDeleter>;
using Worker = std::unique_ptr<ucp_worker, WorkerDeleter>;
using Listener = std::unique_ptr<ucp_listener, ListenerDeleter>;
using Addrinfo = std::unique_ptr<addrinfo, AddrinfoDeleter>;

using UniqueFd = ina::UniqueFd; // common/unique_fd.h

// "what: <UCX's words>".
std::string status_message(const char *what, ucs_status_t st);

// The largest fragment UCX's byte-stream transports (TCP) send and receive,
// set the same in every ina context: a block of the default Seg size (64
// KiB) and its headers travel as one fragment, which UCX hands over in place
// instead of reassembling it by a copy. UCX requires a receiver's segment to
// be at least its sender's (else the receiver aborts), so the agent and its
// clients must agree: each says its value in HELLO / HELLO_ACK and a
// mismatch is refused before any large message (docs/ARCHITECTURE.md).
constexpr uint32_t kStreamSegBytes = 66 * 1024;

// A UCP context with `features`, configured from the environment (UCX_*),
// except the stream segment size, which is always kStreamSegBytes.
// listener: the context of a process that listens on a fixed address (the
// agent): it binds that address again at once after a restart, while the
// connections of its previous life linger in TIME_WAIT (UCX's CM_REUSEADDR,
// unless the environment says otherwise).
ucs_status_t make_context(uint64_t features, const char *name, Context &out,
                          bool listener = false) noexcept;
// A worker of `ctx` in `mode` (SINGLE: one thread; SERIALIZED: several, one at a time).
ucs_status_t make_worker(ucp_context_h ctx, ucs_thread_mode_t mode, Worker &out) noexcept;
// Whole-message active-message handler for `id`.
ucs_status_t set_am_handler(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t cb,
                            void *arg) noexcept;

// Close an endpoint and let UCX release the request when it completes.
void close_ep_detached(ucp_ep_h ep, bool force) noexcept;

// Split "host:port" at the last colon; "[v6]:port" loses its brackets.
// False when there is no host or no port.
bool split_host_port(const std::string &addr, std::string &host, std::string &port);
// Resolve a stream address (passive: for a listener). Returns 0 or a
// getaddrinfo error code (gai_strerror).
int resolve(const std::string &host, const std::string &port, bool passive, Addrinfo &out);
// Numeric "host:port" ("[v6]:port") of a socket address.
std::string sockaddr_to_string(const sockaddr *sa, socklen_t len);

} // namespace ina::ucx

#endif

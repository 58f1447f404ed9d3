// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Test harness for the agent tests: spawns ina-switchd ($INA_SWITCHD) on an
// ephemeral loopback port and talks the raw wire protocol to it through UCX
// (one worker, one endpoint per simulated rank). Every wait has a deadline and
// a watchdog kills the daemon and fails the test if the process runs too long.
#ifndef INA_AGENT_HARNESS_H
#define INA_AGENT_HARNESS_H

#include <cstdint>
#include <cstdio>
#include <csignal>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ucp/api/ucp.h>

#include "ina_proto.h"
#include "ina_test_proto.h"
#include "ina_ucx.h"

namespace ina_test {

// Abort the test with a message (daemon killed first).
[[noreturn]] void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define CHECK_OR_FAIL(cond, ...)                                                             \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            ::ina_test::fail(__VA_ARGS__);                                                   \
        }                                                                                    \
    } while (0)

// Kill the daemon and fail after `seconds` (whole-process watchdog).
void arm_watchdog(unsigned seconds);

class Daemon {
public:
    // Starts $INA_SWITCHD --listen 127.0.0.1:0 --ready-fd N --log-level info <extra>
    // (and --no-config unless extra names a --config).
    explicit Daemon(const std::vector<std::string> &extra = {});
    ~Daemon(); // SIGKILL if still running
    Daemon(const Daemon &) = delete;
    Daemon &operator=(const Daemon &) = delete;

    const std::string &address() const { return addr_; }
    pid_t pid() const { return pid_; }
    // Send sig, wait (deadline) and return the exit status (-1 if it did not exit).
    int terminate(int sig = SIGTERM, int timeout_ms = 10000);
    // Everything the daemon wrote to stderr so far.
    std::string log() const;
    // Value of "name=<number>" in the log (last occurrence), or -1.
    long counter(const char *name) const;

private:
    pid_t pid_ = -1;
    std::string addr_;
    std::string log_path_;
};

struct Msg {
    ina_proto_hdr_t hdr;
    std::vector<uint8_t> payload;
};

class Client {
public:
    Client();
    ~Client();
    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;

    // Open an endpoint to addr "host:port"; returns its index.
    size_t connect(const std::string &addr);
    size_t num_eps() const { return eps_.size(); }
    // Close endpoint i (the agent sees the peer go away).
    void close_ep(size_t i);
    bool ep_failed(size_t i) const { return failed_[i]; }

    // Send one message on endpoint i and wait until UCX completed it locally.
    // hdr_len lets tests send truncated headers.
    void send(size_t i, const void *hdr, size_t hdr_len, const void *data, size_t len);
    void send(size_t i, const ina_proto_hdr_t &h, const void *data = nullptr, size_t len = 0)
    {
        send(i, &h, sizeof(h), data, len);
    }
    void progress();
    // Wait (deadline) for the first received message matching pred; removes it.
    Msg wait_for(const std::function<bool(const Msg &)> &pred, int timeout_ms = 10000,
                 const char *what = "message");
    // Like wait_for but returns false instead of failing.
    bool try_wait_for(const std::function<bool(const Msg &)> &pred, Msg *out, int timeout_ms);
    std::vector<Msg> &inbox() { return inbox_; }

    // Speak protocol version v as a build of that version would: its HELLO
    // offers v alone (as protocol 13's did: no range), every other message
    // carries v, and every message from the agent must carry v (once its
    // HELLO_ACK chose it). 0: this build's (the default).
    void speak(uint8_t v) { speak_ = v; }

    // Protocol helpers (serialised: one request in flight).
    void hello(size_t ep, uint32_t *max_window, uint64_t *seg_bytes);
    // A job of eps.size() members under a key of its own: eps[r] opens it
    // as rank r, in rank order. Returns its jid and the granted window;
    // fails the test on a refusal.
    uint32_t open_all(const std::vector<size_t> &eps, const std::vector<uint32_t> &node_ids,
                      uint32_t window, uint32_t *granted_window);
    // JOB_OPEN of the job named `key` as `rank`, with capability `cap`
    // (padded with zeros; all zeros: none); the JOB_OPENED reply.
    // `stripe`: JOB_OPEN's stripe word ((width << 16) | index; 0: none);
    // `leaves`, `leaf`: its tree fields (this agent is leaf `leaf` of
    // `leaves`; 0: the job ends here).
    Msg open_job(size_t ep, const std::string &key, const std::vector<uint32_t> &node_ids,
                 uint32_t window, uint32_t rank, const std::string &cap = "test capability",
                 uint32_t stripe = 0, uint32_t leaves = 0, uint32_t leaf = 0);
    // JOB_LEAVE has no reply. Leave then fence() so that the agent is known
    // to have processed it (one endpoint's messages are handled in order).
    void leave(size_t ep, uint32_t jid, uint32_t rank);
    // Round trip (HELLO / HELLO_ACK) on ep: everything sent before is processed.
    void fence(size_t ep);

private:
    static ucs_status_t on_am(void *arg, const void *header, size_t header_length, void *data,
                              size_t length, const ucp_am_recv_param_t *param);
    static void on_err(void *arg, ucp_ep_h ep, ucs_status_t status);

    ina::ucx::Context ctx_; // declared first: destroyed after the worker
    ina::ucx::Worker worker_;
    std::vector<ucp_ep_h> eps_;
    std::vector<bool> failed_;
    std::vector<Msg> inbox_;
    uint8_t speak_ = 0;
};

// block_hdr(): tests/ina_test_proto.h (count 0 is a CREDIT).
// The common case: an ALLREDUCE block carrying the whole block, WANT_RESULT.
ina_proto_hdr_t allreduce_hdr(uint32_t jid, uint32_t rank, uint64_t mid, uint32_t sid,
                              uint32_t window, unsigned op, unsigned dtype, uint32_t count,
                              uint64_t total);
// Wait for the GRANT of (jid, mid) on every rank in ranks; fails on anything else
// addressed to those ranks of that job first. A RESULT of that call in its
// place is its GRANT (the agent sends none beside a RESULT that goes out with
// the decision): it stays in the inbox for the caller.
void expect_grants(Client &c, uint32_t jid, uint64_t mid, const std::vector<uint32_t> &ranks);

// Compare two reduced buffers of dtype (long double: its 10 value bytes only).
bool same_bits(unsigned dtype, const void *a, const void *b, size_t count);

} // namespace ina_test

#endif

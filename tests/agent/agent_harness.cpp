// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#include "agent_harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ina_test {

namespace {

// Daemons to kill on every way out (fail, watchdog, normal exit).
constexpr int kMaxDaemons = 8;
volatile pid_t g_daemons[kMaxDaemons];

void kill_daemons()
{
    for (int i = 0; i < kMaxDaemons; ++i) {
        if (g_daemons[i] > 0) {
            kill(g_daemons[i], SIGKILL);
        }
    }
}

void register_daemon(pid_t pid)
{
    for (int i = 0; i < kMaxDaemons; ++i) {
        if (g_daemons[i] <= 0) {
            g_daemons[i] = pid;
            return;
        }
    }
}

void unregister_daemon(pid_t pid)
{
    for (int i = 0; i < kMaxDaemons; ++i) {
        if (g_daemons[i] == pid) {
            g_daemons[i] = 0;
        }
    }
}

void on_alarm(int)
{
    static const char msg[] = "FAIL: watchdog: test ran too long, daemon killed\n";
    kill_daemons();
    ssize_t rc = write(2, msg, sizeof(msg) - 1);
    (void)rc;
    _exit(1);
}

using Clock = std::chrono::steady_clock;

} // namespace

void fail(const char *fmt, ...)
{
    kill_daemons();
    std::fprintf(stderr, "FAIL: ");
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "\n");
    std::fflush(stderr);
    _exit(1);
}

void arm_watchdog(unsigned seconds)
{
    struct sigaction sa{};
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, nullptr);
    alarm(seconds);
}

// ---------------------------------------------------------------- Daemon

Daemon::Daemon(const std::vector<std::string> &extra)
{
    const char *path = std::getenv("INA_SWITCHD");
    CHECK_OR_FAIL(path != nullptr && *path != '\0', "INA_SWITCHD is not set");
    char log_tmpl[] = "/tmp/ina-agent-test-XXXXXX";
    int logfd = mkstemp(log_tmpl);
    CHECK_OR_FAIL(logfd >= 0, "mkstemp: %s", std::strerror(errno));
    log_path_ = log_tmpl;
    int pfd[2];
    CHECK_OR_FAIL(pipe2(pfd, O_CLOEXEC) == 0, "pipe2: %s", std::strerror(errno));

    std::vector<std::string> args = {path, "--listen", "127.0.0.1:0", "--ready-fd",
                                     std::to_string(pfd[1]), "--log-level", "info"};
    args.insert(args.end(), extra.begin(), extra.end());
    if (std::find(extra.begin(), extra.end(), "--config") == extra.end()) {
        args.emplace_back("--no-config"); // not this host's /etc/ina/ina-switchd.conf
    }
    std::vector<char *> argv;
    for (auto &a : args) {
        argv.push_back(const_cast<char *>(a.c_str()));
    }
    argv.push_back(nullptr);

    pid_ = fork();
    CHECK_OR_FAIL(pid_ >= 0, "fork: %s", std::strerror(errno));
    if (pid_ == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); // never outlive the test
        dup2(logfd, 2);
        fcntl(pfd[1], F_SETFD, 0); // the ready fd survives exec
        execv(path, argv.data());
        _exit(127);
    }
    register_daemon(pid_);
    close(logfd);
    close(pfd[1]);
    std::string line;
    auto deadline = Clock::now() + std::chrono::seconds(20);
    while (line.find('\n') == std::string::npos) {
        int left = static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
        struct pollfd p = {pfd[0], POLLIN, 0};
        CHECK_OR_FAIL(left > 0 && poll(&p, 1, left) == 1,
                      "ina-switchd did not report its address in time; log:\n%s", log().c_str());
        char buf[128];
        ssize_t n = read(pfd[0], buf, sizeof(buf));
        CHECK_OR_FAIL(n > 0, "ina-switchd closed --ready-fd without an address; log:\n%s",
                      log().c_str());
        line.append(buf, static_cast<size_t>(n));
    }
    close(pfd[0]);
    addr_ = line.substr(0, line.find('\n'));
    CHECK_OR_FAIL(addr_.rfind("127.0.0.1:", 0) == 0 && addr_ != "127.0.0.1:0",
                  "unexpected ready address '%s'", addr_.c_str());
}

Daemon::~Daemon()
{
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        unregister_daemon(pid_);
    }
    unlink(log_path_.c_str());
}

int Daemon::terminate(int sig, int timeout_ms)
{
    if (pid_ <= 0) {
        return -1;
    }
    kill(pid_, sig);
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    int status = 0;
    while (Clock::now() < deadline) {
        pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            unregister_daemon(pid_);
            pid_ = -1;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        usleep(10000);
    }
    return -1;
}

std::string Daemon::log() const
{
    std::ifstream in(log_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

long Daemon::counter(const char *name) const
{
    std::string text = log();
    std::string key = std::string(" ") + name + "=";
    size_t pos = text.rfind(key);
    if (pos == std::string::npos) {
        return -1;
    }
    return std::strtol(text.c_str() + pos + key.size(), nullptr, 10);
}

// ---------------------------------------------------------------- Client

Client::Client()
{
    ucs_status_t st = ina::ucx::make_context(UCP_FEATURE_AM, "ina-test", ctx_);
    CHECK_OR_FAIL(st == UCS_OK, "ucp_init: %s", ucs_status_string(st));
    st = ina::ucx::make_worker(ctx_.get(), UCS_THREAD_MODE_SINGLE, worker_);
    CHECK_OR_FAIL(st == UCS_OK, "ucp_worker_create: %s", ucs_status_string(st));
    st = ina::ucx::set_am_handler(worker_.get(), INA_PROTO_AM_TO_CLIENT, &Client::on_am, this);
    CHECK_OR_FAIL(st == UCS_OK, "set_am_recv_handler: %s", ucs_status_string(st));
}

Client::~Client()
{
    for (size_t i = 0; i < eps_.size(); ++i) {
        close_ep(i);
    }
}

ucs_status_t Client::on_am(void *arg, const void *header, size_t header_length, void *data,
                           size_t length, const ucp_am_recv_param_t *param)
{
    auto *self = static_cast<Client *>(arg);
    CHECK_OR_FAIL(!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV),
                  "agent sent a rendezvous message");
    CHECK_OR_FAIL(ina_proto_check(header, header_length, length) == INA_PROTO_OK,
                  "agent sent a message that fails ina_proto_check");
    Msg m;
    std::memcpy(&m.hdr, header, sizeof(m.hdr));
    CHECK_OR_FAIL(self->speak_ == 0 || m.hdr.version == self->speak_,
                  "the agent sent a %s of protocol version %u to a client of version %u",
                  ina_proto_type_name(m.hdr.type), m.hdr.version, self->speak_);
    m.payload.assign(static_cast<const uint8_t *>(data), static_cast<const uint8_t *>(data) + length);
    self->inbox_.push_back(std::move(m));
    return UCS_OK;
}

void Client::on_err(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    auto *self = static_cast<Client *>(arg);
    for (size_t i = 0; i < self->eps_.size(); ++i) {
        if (self->eps_[i] == ep) {
            self->failed_[i] = true;
        }
    }
}

size_t Client::connect(const std::string &addr)
{
    std::string host;
    std::string port;
    ina::ucx::Addrinfo res;
    CHECK_OR_FAIL(ina::ucx::split_host_port(addr, host, port) &&
                      ina::ucx::resolve(host, port, false, res) == 0,
                  "bad address %s", addr.c_str());
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep.sockaddr.addr = res->ai_addr;
    ep.sockaddr.addrlen = res->ai_addrlen;
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER; // must match the agent's
    ep.err_handler.cb = &Client::on_err;
    ep.err_handler.arg = this;
    ucp_ep_h h = nullptr;
    ucs_status_t st = ucp_ep_create(worker_.get(), &ep, &h);
    CHECK_OR_FAIL(st == UCS_OK, "ucp_ep_create: %s", ucs_status_string(st));
    eps_.push_back(h);
    failed_.push_back(false);
    return eps_.size() - 1;
}

void Client::close_ep(size_t i)
{
    if (eps_[i] == nullptr) {
        return;
    }
    ucp_request_param_t prm{};
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = failed_[i] ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t r = ucp_ep_close_nbx(eps_[i], &prm);
    auto deadline = Clock::now() + std::chrono::seconds(5);
    if (UCS_PTR_IS_PTR(r)) {
        while (ucp_request_check_status(r) == UCS_INPROGRESS && Clock::now() < deadline) {
            ucp_worker_progress(worker_.get());
        }
        ucp_request_free(r);
    }
    eps_[i] = nullptr;
}

void Client::send(size_t i, const void *hdr, size_t hdr_len, const void *data, size_t len)
{
    ina_proto_hdr_t stamped;
    if (speak_ != 0 && hdr_len == sizeof(stamped)) {
        std::memcpy(&stamped, hdr, sizeof(stamped));
        stamped.version = speak_; // a HELLO too: the version it offers, alone
        hdr = &stamped;
    }
    ucp_request_param_t prm{};
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
    ucs_status_ptr_t r = ucp_am_send_nbx(eps_[i], INA_PROTO_AM_TO_AGENT, hdr, hdr_len, data, len, &prm);
    CHECK_OR_FAIL(!UCS_PTR_IS_ERR(r), "ucp_am_send_nbx: %s", ucs_status_string(UCS_PTR_STATUS(r)));
    if (r == nullptr) {
        return;
    }
    auto deadline = Clock::now() + std::chrono::seconds(10);
    while (ucp_request_check_status(r) == UCS_INPROGRESS) {
        CHECK_OR_FAIL(Clock::now() < deadline, "send did not complete in time");
        ucp_worker_progress(worker_.get());
    }
    ucs_status_t st = ucp_request_check_status(r);
    ucp_request_free(r);
    CHECK_OR_FAIL(st == UCS_OK, "send failed: %s", ucs_status_string(st));
}

void Client::progress() { ucp_worker_progress(worker_.get()); }

bool Client::try_wait_for(const std::function<bool(const Msg &)> &pred, Msg *out, int timeout_ms)
{
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        for (size_t i = 0; i < inbox_.size(); ++i) {
            if (pred(inbox_[i])) {
                if (out != nullptr) {
                    *out = std::move(inbox_[i]);
                }
                inbox_.erase(inbox_.begin() + static_cast<long>(i));
                return true;
            }
        }
        if (Clock::now() >= deadline) {
            return false;
        }
        ucp_worker_progress(worker_.get());
    }
}

Msg Client::wait_for(const std::function<bool(const Msg &)> &pred, int timeout_ms, const char *what)
{
    Msg m;
    CHECK_OR_FAIL(try_wait_for(pred, &m, timeout_ms), "timed out waiting for %s", what);
    return m;
}

void Client::hello(size_t ep, uint32_t *max_window, uint64_t *seg_bytes)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_HELLO);
    h.count = ina::ucx::kStreamSegBytes; // make_context set it
    send(ep, h);
    Msg m = wait_for([](const Msg &m) { return m.hdr.type == INA_PROTO_HELLO_ACK; }, 10000,
                     "HELLO_ACK");
    *max_window = m.hdr.count;
    *seg_bytes = m.hdr.arg;
}

uint32_t Client::open_all(const std::vector<size_t> &eps, const std::vector<uint32_t> &node_ids,
                          uint32_t window, uint32_t *granted_window)
{
    CHECK_OR_FAIL(eps.size() == node_ids.size(), "%zu endpoints for %zu members", eps.size(),
                  node_ids.size());
    // One counter for every Client of this process: keys never repeat.
    static unsigned opened = 0;
    const std::string key = "job-" + std::to_string(getpid()) + "-" + std::to_string(opened++);
    uint32_t jid = 0;
    for (uint32_t r = 0; r < eps.size(); ++r) {
        Msg m = open_job(eps[r], key, node_ids, window, r);
        CHECK_OR_FAIL(m.hdr.status == INA_PROTO_OK && m.hdr.jid != 0 && (r == 0 || m.hdr.jid == jid),
                      "JOB_OPEN as rank %u: %s (jid %u)", r, ina_proto_status_name(m.hdr.status),
                      m.hdr.jid);
        jid = m.hdr.jid;
        *granted_window = m.hdr.window;
    }
    return jid;
}

Msg Client::open_job(size_t ep, const std::string &key, const std::vector<uint32_t> &node_ids,
                     uint32_t window, uint32_t rank, const std::string &cap, uint32_t stripe,
                     uint32_t leaves, uint32_t leaf)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_JOB_OPEN);
    h.rank = rank;
    h.sid = stripe;
    h.block_elems = leaves;
    h.offset = leaf;
    h.count = static_cast<uint32_t>(node_ids.size());
    h.window = static_cast<uint16_t>(window);
    const uint64_t cookie = 0x0be0000 + rank;
    h.arg = cookie;
    std::vector<uint8_t> payload(INA_PROTO_JOB_KEY_BYTES, 0);
    std::memcpy(payload.data(), key.data(), std::min<size_t>(key.size(), payload.size()));
    std::vector<uint8_t> c(INA_PROTO_JOB_CAP_BYTES, 0);
    std::memcpy(c.data(), cap.data(), std::min<size_t>(cap.size(), c.size()));
    payload.insert(payload.end(), c.begin(), c.end());
    const auto *ids = reinterpret_cast<const uint8_t *>(node_ids.data());
    payload.insert(payload.end(), ids, ids + node_ids.size() * sizeof(uint32_t));
    send(ep, h, payload.data(), payload.size());
    Msg m = wait_for(
        [cookie](const Msg &m) {
            return m.hdr.type == INA_PROTO_JOB_OPENED && m.hdr.arg == cookie;
        },
        10000, "JOB_OPENED");
    CHECK_OR_FAIL(m.hdr.rank == rank, "JOB_OPENED for rank %u, asked %u", m.hdr.rank, rank);
    return m;
}

void Client::leave(size_t ep, uint32_t jid, uint32_t rank)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_JOB_LEAVE);
    h.jid = jid;
    h.rank = rank;
    send(ep, h);
}

void Client::fence(size_t ep)
{
    uint32_t max_window = 0;
    uint64_t seg_bytes = 0;
    hello(ep, &max_window, &seg_bytes);
}

ina_proto_hdr_t allreduce_hdr(uint32_t jid, uint32_t rank, uint64_t mid, uint32_t sid,
                              uint32_t window, unsigned op, unsigned dtype, uint32_t count,
                              uint64_t total)
{
    return block_hdr(jid, rank, mid, sid, window, INA_COLL_ALLREDUCE, op, dtype, 0, count, count,
                     total, true);
}

void expect_grants(Client &c, uint32_t jid, uint64_t mid, const std::vector<uint32_t> &ranks)
{
    for (uint32_t r : ranks) {
        Msg m = c.wait_for([&](const Msg &m) { return m.hdr.jid == jid && m.hdr.rank == r; },
                           10000, "GRANT");
        if (m.hdr.type == INA_PROTO_RESULT && m.hdr.mid == mid && m.hdr.status == INA_PROTO_OK) {
            // The agent sent this RESULT with the decision and no GRANT: the
            // RESULT implies it. Back to the front for the caller to check.
            c.inbox().insert(c.inbox().begin(), std::move(m));
            continue;
        }
        CHECK_OR_FAIL(m.hdr.type == INA_PROTO_GRANT && m.hdr.mid == mid &&
                          m.hdr.status == INA_PROTO_OK,
                      "job %u rank %u: got %s mid %lu (%s) instead of the GRANT of mid %lu", jid,
                      r, ina_proto_type_name(m.hdr.type), (unsigned long)m.hdr.mid,
                      ina_proto_status_name(m.hdr.status), (unsigned long)mid);
    }
}

bool same_bits(unsigned dtype, const void *a, const void *b, size_t count)
{
    if (count == 0) {
        return true; // an empty block's buffers may be null: memcmp must not see them
    }
    size_t esz = ina_proto_dtype_size(dtype);
    if (dtype != INA_DT_LONG_DOUBLE) {
        return std::memcmp(a, b, count * esz) == 0;
    }
    // x87 long double: 10 value bytes, the rest is padding with no meaning.
    for (size_t i = 0; i < count; ++i) {
        if (std::memcmp(static_cast<const char *>(a) + i * esz,
                        static_cast<const char *>(b) + i * esz, 10) != 0) {
            return false;
        }
    }
    return true;
}

} // namespace ina_test

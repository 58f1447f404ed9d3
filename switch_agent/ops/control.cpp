// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The agent's control socket (see control.h).
#include "control.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "log.h"

namespace ina::ops {

namespace {

std::runtime_error sys_error(const std::string &what)
{
    return std::runtime_error(what + ": " + std::strerror(errno));
}

sockaddr_un unix_address(const std::string &path)
{
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(a.sun_path)) {
        throw std::runtime_error("control socket path '" + path + "' is empty or longer than " +
                                 std::to_string(sizeof(a.sun_path) - 1) + " bytes");
    }
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    return a;
}

// Whether an agent answers on the socket at `a` now.
bool answers(const sockaddr_un &a)
{
    UniqueFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    return s.get() >= 0 &&
           connect(s.get(), reinterpret_cast<const sockaddr *>(&a), sizeof(a)) == 0;
}

} // namespace

ControlServer::ControlServer(const std::string &path, Handler handler)
    : path_(path), handler_(std::move(handler))
{
    const sockaddr_un a = unix_address(path);
    struct stat st{};
    if (lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            throw std::runtime_error("control socket path '" + path +
                                     "' exists and is not a socket");
        }
        if (answers(a)) {
            throw std::runtime_error("another agent answers on the control socket '" + path +
                                     "' (give this one another --control, or none)");
        }
        unlink(path.c_str()); // left by an agent that died
    }
    listen_.reset(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (listen_.get() < 0) {
        throw sys_error("control socket");
    }
    // Owner and group may ask; nobody else (a drain changes the agent).
    const mode_t old = umask(0117);
    const int rc = bind(listen_.get(), reinterpret_cast<const sockaddr *>(&a), sizeof(a));
    umask(old);
    if (rc != 0) {
        throw sys_error("control socket: bind " + path);
    }
    if (lstat(path.c_str(), &st) == 0) {
        dev_ = st.st_dev;
        ino_ = st.st_ino;
    }
    if (listen(listen_.get(), 16) != 0) {
        throw sys_error("control socket: listen " + path);
    }
    epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
    if (epoll_.get() < 0) {
        throw sys_error("control socket: epoll_create1");
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr; // the listener
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listen_.get(), &ev) != 0) {
        throw sys_error("control socket: epoll_ctl");
    }
}

ControlServer::~ControlServer()
{
    struct stat st{};
    if (lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) {
        unlink(path_.c_str());
    }
}

void ControlServer::accept_all()
{
    for (;;) {
        UniqueFd c(accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (c.get() < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                errno != ECONNABORTED) {
                INA_WARN("control socket: accept: %s", std::strerror(errno));
            }
            return;
        }
        if (clients_.size() >= kMaxClients) {
            INA_WARN("control socket: more than %zu clients at once; one refused", kMaxClients);
            continue; // closed
        }
        auto cl = std::make_unique<Client>();
        cl->deadline = std::chrono::steady_clock::now() + kClientTimeout;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.ptr = cl.get();
        if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, c.get(), &ev) != 0) {
            INA_WARN("control socket: epoll_ctl: %s", std::strerror(errno));
            continue;
        }
        cl->fd.reset(c.release());
        clients_.push_back(std::move(cl));
    }
}

bool ControlServer::on_client(Client &c)
{
    if (c.out.empty()) {
        char buf[kMaxRequest];
        for (;;) {
            const ssize_t n = recv(c.fd.get(), buf, sizeof(buf), 0);
            if (n > 0) {
                c.in.append(buf, static_cast<size_t>(n));
                if (c.in.size() > kMaxRequest) {
                    return false; // not one of ours
                }
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                break;
            }
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n == 0 && c.in.find('\n') == std::string::npos && !c.in.empty()) {
                c.in += '\n'; // a last line without its newline
                break;
            }
            return false; // closed (or an error) before a request
        }
        const size_t eol = c.in.find('\n');
        if (eol == std::string::npos) {
            return true; // more to come
        }
        std::string line = c.in.substr(0, eol);
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) {
            line.pop_back();
        }
        c.out = handler_(line) + "\n";
        epoll_event ev{};
        ev.events = EPOLLOUT;
        ev.data.ptr = &c;
        (void) epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
    }
    while (c.sent < c.out.size()) {
        const ssize_t n =
            send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (n > 0) {
            c.sent += static_cast<size_t>(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return true; // the rest when it can take it
        } else {
            return false;
        }
    }
    return false; // answered: close
}

void ControlServer::serve()
{
    epoll_event evs[kMaxClients + 1];
    const int n = epoll_wait(epoll_.get(), evs, static_cast<int>(std::size(evs)), 0);
    for (int i = 0; i < n; ++i) {
        auto *c = static_cast<Client *>(evs[i].data.ptr);
        if (c == nullptr) {
            accept_all();
        } else if (!on_client(*c)) {
            c->fd.reset(); // closing it takes it out of the epoll set
        }
    }
    const auto now = std::chrono::steady_clock::now();
    clients_.erase(std::remove_if(clients_.begin(), clients_.end(),
                                  [now](const std::unique_ptr<Client> &c) {
                                      return c->fd.get() < 0 || now >= c->deadline;
                                  }),
                   clients_.end());
}

int ControlServer::next_wake_ms() const
{
    if (clients_.empty()) {
        return -1;
    }
    auto first = clients_.front()->deadline;
    for (const auto &c : clients_) {
        first = std::min(first, c->deadline);
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        first - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
}

} // namespace ina::ops

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The embedded agent: fork/exec ina-switchd on an ephemeral port and learn
// its address from one line it writes on a pipe (--ready-fd 3).
#include "ina_client.h"
#include "ina_ucx.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace ina::client {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kReadyTimeoutMs = 20000;
constexpr int kReadyFd = 3;
constexpr size_t kMaxLine = 256;

void set_err(char *err, size_t errlen, const std::string &msg)
{
    if (err != nullptr && errlen > 0) {
        std::snprintf(err, errlen, "%s", msg.c_str());
    }
}

using Fd = ina::ucx::UniqueFd;

std::string describe_exit(int wstatus)
{
    if (WIFEXITED(wstatus)) {
        int code = WEXITSTATUS(wstatus);
        return "exited with status " + std::to_string(code) +
               (code == 127 ? " (could not be executed)" : "");
    }
    if (WIFSIGNALED(wstatus)) {
        return std::string("was killed by signal ") + strsignal(WTERMSIG(wstatus));
    }
    return "stopped";
}

// Reap `pid` if it has exited; true when it is gone (status in *wstatus).
bool reaped(pid_t pid, int *wstatus)
{
    for (;;) {
        pid_t r = waitpid(pid, wstatus, WNOHANG);
        if (r == pid) {
            return true;
        }
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            *wstatus = 0;
            return true; // not our child (already reaped elsewhere)
        }
        return false;
    }
}

// Runs in the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_child(pid_t parent, int wfd, const std::vector<char *> &argv)
{
    // Die with the parent; if it died before prctl took effect, go now.
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) {
        _exit(126);
    }
    if (wfd == kReadyFd) {
        int flags = fcntl(wfd, F_GETFD);
        if (flags < 0 || fcntl(wfd, F_SETFD, flags & ~FD_CLOEXEC) != 0) {
            _exit(126);
        }
    } else if (dup2(wfd, kReadyFd) != kReadyFd) {
        _exit(126);
    }
    // Nothing of the parent's (sockets, UCX/MPI descriptors) leaks into the agent.
    if (close_range(kReadyFd + 1, ~0u, 0) != 0) {
        for (int fd = kReadyFd + 1; fd < 65536; ++fd) {
            close(fd);
        }
    }
    // A signal mask or ignored SIGTERM inherited from the MPI runtime must not
    // make the agent unkillable by ina_agent_stop.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    execv(argv[0], argv.data());
    _exit(127);
}

int spawn(const char *path, const char *listen_host, const char *const *extra_args,
          char *addr, size_t addrlen, int *pid_out, char *err, size_t errlen)
{
    if (pid_out != nullptr) {
        *pid_out = -1;
    }
    if (path == nullptr || listen_host == nullptr || addr == nullptr || addrlen == 0 ||
        pid_out == nullptr) {
        set_err(err, errlen, "ina_agent_spawn: missing argument");
        return INA_ERR_INVALID;
    }
    if (access(path, X_OK) != 0) {
        set_err(err, errlen, std::string("agent ") + path + " is not executable: " +
                                 std::strerror(errno));
        return INA_ERR_INVALID;
    }

    // Build the whole command line before fork: the child may not allocate.
    std::string listen = std::string(listen_host) + ":0";
    std::string ready = std::to_string(kReadyFd);
    // The job's own agent: not the site's service, so none of its
    // configuration file or control socket.
    std::vector<std::string> args = {path,    "--listen",    listen, "--ready-fd", ready,
                                     "--no-config", "--control", "none"};
    for (const char *const *a = extra_args; a != nullptr && *a != nullptr; ++a) {
        args.emplace_back(*a);
    }
    std::vector<char *> argv;
    for (std::string &s : args) {
        argv.push_back(&s[0]);
    }
    argv.push_back(nullptr);

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        set_err(err, errlen, std::string("pipe: ") + std::strerror(errno));
        return INA_ERR_NOMEM;
    }
    Fd rfd(fds[0]);
    Fd wfd(fds[1]);

    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        set_err(err, errlen, std::string("fork: ") + std::strerror(errno));
        return INA_ERR_NOMEM;
    }
    if (pid == 0) {
        exec_child(parent, wfd.get(), argv);
    }
    wfd.reset(); // EOF on rfd now means the child closed it or died

    // Read one "host:port\n" line, watching the deadline and the child.
    std::string line;
    std::string why;
    const auto deadline = Clock::now() + std::chrono::milliseconds(kReadyTimeoutMs);
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            why = "did not report its address within " + std::to_string(kReadyTimeoutMs / 1000) +
                  " s";
            break;
        }
        pollfd pfd{rfd.get(), POLLIN, 0};
        int n = poll(&pfd, 1, static_cast<int>(left.count()));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            continue; // deadline re-checked above
        }
        char buf[64];
        ssize_t got = read(rfd.get(), buf, sizeof(buf));
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            why = "closed its ready pipe without reporting an address";
            break;
        }
        line.append(buf, static_cast<size_t>(got));
        size_t nl = line.find('\n');
        if (nl != std::string::npos) {
            line.resize(nl);
            if (!line.empty() && line.back() == '\r') {
                line.pop_back();
            }
            break;
        }
        if (line.size() > kMaxLine) {
            why = "wrote an over-long ready line";
            break;
        }
    }

    if (why.empty() && (line.empty() || line.find(':') == std::string::npos)) {
        why = "reported an unusable address '" + line + "'";
    }
    if (why.empty() && line.size() + 1 > addrlen) {
        why = "reported an address longer than the caller's buffer";
    }
    if (!why.empty()) {
        // Report how the child ended, if it did; never leave it behind.
        int wstatus = 0;
        const auto grace = Clock::now() + std::chrono::milliseconds(200);
        bool gone = reaped(pid, &wstatus);
        while (!gone && Clock::now() < grace) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            gone = reaped(pid, &wstatus);
        }
        if (gone) {
            why += "; it " + describe_exit(wstatus);
        } else {
            ina_agent_stop(pid, 1000);
        }
        set_err(err, errlen, std::string("agent ") + path + " " + why);
        return INA_ERR_UNREACHABLE;
    }
    std::snprintf(addr, addrlen, "%s", line.c_str());
    *pid_out = static_cast<int>(pid);
    return INA_OK;
}

} // namespace
} // namespace ina::client

extern "C" {

ina_status_t ina_agent_spawn(const char *path, const char *listen_host,
                             const char *const *extra_args, char *addr, size_t addrlen,
                             int *pid_out, char *err, size_t errlen)
{
    try {
        return static_cast<ina_status_t>(ina::client::spawn(path, listen_host, extra_args, addr,
                                                             addrlen, pid_out, err, errlen));
    } catch (const std::bad_alloc &) {
        ina::client::set_err(err, errlen, "out of memory");
        return INA_ERR_NOMEM;
    }
}

void ina_agent_stop(int pid, int timeout_ms)
{
    using namespace ina::client;
    if (pid <= 0) {
        return;
    }
    int wstatus = 0;
    if (kill(pid, SIGTERM) != 0 && errno == ESRCH) {
        reaped(pid, &wstatus); // a zombie, if any
        return;
    }
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 0);
    auto nap = std::chrono::milliseconds(1);
    while (!reaped(pid, &wstatus)) {
        if (Clock::now() >= deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
            }
            return;
        }
        std::this_thread::sleep_for(nap);
        nap = std::min(nap * 2, std::chrono::milliseconds(20));
    }
}

} // extern "C"

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Agent test: ina-switchd against foreign and greedy clients.
// - Foreign processes that know a running job's key (the worst case: it is
//   derived from the MPI job's secret, docs/ARCHITECTURE.md "Job setup")
//   guess its capability, as every rank, hundreds of times each, and pose
//   as one of its members: every JOB_OPEN is refused FORBIDDEN with nothing
//   of the job in the reply, every forged BLOCK NOT_MEMBER, while the job's
//   members run exact allreduces throughout; the agent counts every try.
// - Limits: --max-conns refuses a HELLO beyond (status LIMIT) and closes
//   that connection, and serves a new one once a client left;
//   --max-jobs-per-conn and --max-members refuse a JOB_OPEN (LIMIT); the
//   log names each limit.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "agent_calls.h"
#include "agent_harness.h"

using namespace ina_test;

namespace {

constexpr uint32_t kWindow = 4;
constexpr int kForeign = 3;      // foreign processes
constexpr int kGuesses = 400;    // capabilities each one guesses
const std::string kKey = "guarded job";
const std::string kCap = "the members' own capability";

// One exact int32 SUM allreduce of 3 blocks as MID `mid` on both members.
void exact_call(Client &c, const std::vector<size_t> &eps, uint32_t jid, uint64_t mid,
                std::mt19937_64 &rng)
{
    CallPlan p = plan_allreduce(INA_OP_SUM, INA_DT_INT32, 2, 48, 16, rng);
    reduce_reference(p, [](uint8_t *acc, const uint8_t *in, uint64_t n) {
        for (uint64_t i = 0; i < n; ++i) {
            uint32_t a, b;
            std::memcpy(&a, acc + 4 * i, 4);
            std::memcpy(&b, in + 4 * i, 4);
            a += b; // wrapping, as the agent's int32 SUM
            std::memcpy(acc + 4 * i, &a, 4);
        }
    });
    run_calls(c, eps, jid, kWindow, mid, {p}, static_cast<unsigned>(mid));
}

// A foreign process: waits for the job's JID on `go`, then guesses.
// Exits 0 when every try was refused as it must be.
[[noreturn]] void foreign(const std::string &addr, int go, int index)
{
    uint32_t jid = 0;
    if (read(go, &jid, sizeof(jid)) != sizeof(jid)) {
        _exit(10);
    }
    Client c;
    const size_t ep = c.connect(addr);
    uint32_t w = 0;
    uint64_t seg = 0;
    c.hello(ep, &w, &seg);
    std::mt19937_64 rng(std::random_device{}() + static_cast<unsigned>(index));
    for (int i = 0; i <= kGuesses; ++i) {
        std::string guess(INA_PROTO_JOB_CAP_BYTES, '\0'); // the last try: no capability
        for (size_t b = 0; i < kGuesses && b < guess.size(); ++b) {
            guess[b] = static_cast<char>(rng());
        }
        const Msg m = c.open_job(ep, kKey, {0, 1}, kWindow, static_cast<uint32_t>(rng() % 2), guess);
        if (m.hdr.status != INA_PROTO_ERR_FORBIDDEN || m.hdr.jid != 0 || m.hdr.window != 0 ||
            m.hdr.ahead != 0) {
            std::fprintf(stderr, "foreign %d: try %d got %s jid %u window %u\n", index, i,
                         ina_proto_status_name(m.hdr.status), m.hdr.jid, m.hdr.window);
            _exit(11);
        }
    }
    // Posing as rank 0 of the job.
    const std::vector<int32_t> junk(16, 1 << 20);
    c.send(ep, allreduce_hdr(jid, 0, 0, 0, kWindow, INA_OP_SUM, INA_DT_INT32, 16, 48), junk.data(),
           junk.size() * sizeof(int32_t));
    const Msg e = c.wait_for([](const Msg &m) { return m.hdr.type == INA_PROTO_ERROR; }, 10000,
                             "ERROR for a forged BLOCK");
    _exit(e.hdr.status == INA_PROTO_ERR_NOT_MEMBER ? 0 : 12);
}

void test_foreign_joins()
{
    Daemon d;
    // The foreign processes fork before this process starts UCX.
    int go[2];
    CHECK_OR_FAIL(pipe(go) == 0, "pipe");
    std::vector<pid_t> kids;
    for (int i = 0; i < kForeign; ++i) {
        const pid_t pid = fork();
        CHECK_OR_FAIL(pid >= 0, "fork");
        if (pid == 0) {
            close(go[1]);
            foreign(d.address(), go[0], i);
        }
        kids.push_back(pid);
    }
    close(go[0]);

    Client c;
    std::vector<size_t> eps{c.connect(d.address()), c.connect(d.address())};
    uint32_t w = 0;
    uint64_t seg = 0;
    for (size_t ep : eps) {
        c.hello(ep, &w, &seg);
    }
    uint32_t jid = 0;
    for (uint32_t r = 0; r < 2; ++r) {
        const Msg m = c.open_job(eps[r], kKey, {0, 1}, kWindow, r, kCap);
        CHECK_OR_FAIL(m.hdr.status == INA_PROTO_OK && (r == 0 || m.hdr.jid == jid),
                      "member %u: JOB_OPEN %s", r, ina_proto_status_name(m.hdr.status));
        jid = m.hdr.jid;
    }
    std::mt19937_64 rng(7);
    exact_call(c, eps, jid, 0, rng);
    for (int i = 0; i < kForeign; ++i) {
        CHECK_OR_FAIL(write(go[1], &jid, sizeof(jid)) == sizeof(jid), "write");
    }
    // The members go on while the foreign processes try.
    uint64_t mid = 1;
    size_t done = 0;
    std::vector<bool> reaped(kids.size(), false);
    while (done < kids.size()) {
        exact_call(c, eps, jid, mid++, rng);
        for (size_t k = 0; k < kids.size(); ++k) {
            int st = 0;
            if (!reaped[k] && waitpid(kids[k], &st, WNOHANG) == kids[k]) {
                CHECK_OR_FAIL(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                              "foreign process %zu: exit %d", k,
                              WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
                reaped[k] = true;
                ++done;
            }
        }
    }
    exact_call(c, eps, jid, mid++, rng);
    std::printf("foreign joins: %d processes x %d tries refused while the job ran %llu exact "
                "calls\n",
                kForeign, kGuesses + 1, static_cast<unsigned long long>(mid));
    CHECK_OR_FAIL(d.terminate() == 0, "daemon exit");
    CHECK_OR_FAIL(d.counter("forbidden_opens") == kForeign * (kGuesses + 1),
                  "forbidden_opens=%ld, not %d", d.counter("forbidden_opens"),
                  kForeign * (kGuesses + 1));
    CHECK_OR_FAIL(d.counter("foreign") == kForeign, "foreign=%ld", d.counter("foreign"));
    CHECK_OR_FAIL(d.counter("calls_aborted") == 0, "calls_aborted=%ld", d.counter("calls_aborted"));
}

// HELLO on a fresh endpoint: its reply (HELLO_ACK, or ERROR).
Msg say_hello(Client &c, size_t ep, const char *what)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_HELLO);
    h.count = ina::ucx::kStreamSegBytes;
    c.send(ep, h);
    return c.wait_for(
        [](const Msg &m) {
            return m.hdr.type == INA_PROTO_HELLO_ACK ||
                   (m.hdr.type == INA_PROTO_ERROR && m.hdr.op == INA_PROTO_HELLO);
        },
        10000, what);
}

void test_limits()
{
    Daemon d({"--max-conns", "2", "--max-jobs-per-conn", "2", "--max-members", "3"});
    Client c;
    const size_t a = c.connect(d.address()), b = c.connect(d.address());
    CHECK_OR_FAIL(say_hello(c, a, "first HELLO").hdr.type == INA_PROTO_HELLO_ACK, "first HELLO");
    CHECK_OR_FAIL(say_hello(c, b, "second HELLO").hdr.type == INA_PROTO_HELLO_ACK, "second HELLO");
    const size_t third = c.connect(d.address());
    const Msg refused = say_hello(c, third, "third HELLO");
    CHECK_OR_FAIL(refused.hdr.type == INA_PROTO_ERROR &&
                      refused.hdr.status == INA_PROTO_ERR_LIMIT,
                  "third HELLO: %s %s", ina_proto_type_name(refused.hdr.type),
                  ina_proto_status_name(refused.hdr.status));
    // ... and the agent closes that connection.
    for (int i = 0; i < 500 && !c.ep_failed(third); ++i) {
        c.progress();
        usleep(10000);
    }
    CHECK_OR_FAIL(c.ep_failed(third), "the refused connection is still open");

    // Jobs per connection, members per job.
    CHECK_OR_FAIL(c.open_job(a, "one", {0}, kWindow, 0).hdr.status == INA_PROTO_OK, "job one");
    CHECK_OR_FAIL(c.open_job(a, "two", {0}, kWindow, 0).hdr.status == INA_PROTO_OK, "job two");
    CHECK_OR_FAIL(c.open_job(a, "three", {0}, kWindow, 0).hdr.status == INA_PROTO_ERR_LIMIT,
                  "a third job on one connection");
    CHECK_OR_FAIL(c.open_job(b, "four", {0, 1, 2, 3}, kWindow, 0).hdr.status ==
                      INA_PROTO_ERR_LIMIT,
                  "a job of 4 members");
    const Msg three = c.open_job(b, "three", {0, 1, 2}, kWindow, 0);
    CHECK_OR_FAIL(three.hdr.status == INA_PROTO_OK, "a job of 3 members on the other connection");

    // A client leaves: a new one is served.
    c.close_ep(b);
    bool served = false;
    for (int i = 0; i < 50 && !served; ++i) {
        const size_t again = c.connect(d.address());
        served = say_hello(c, again, "HELLO after a client left").hdr.type == INA_PROTO_HELLO_ACK;
        if (!served) {
            usleep(100000);
        }
    }
    CHECK_OR_FAIL(served, "no connection served after a client left");
    CHECK_OR_FAIL(d.terminate() == 0, "daemon exit");
    const std::string log = d.log();
    for (const char *limit : {"--max-conns", "--max-jobs-per-conn", "--max-members"}) {
        CHECK_OR_FAIL(log.find(limit) != std::string::npos, "the log does not name %s:\n%s", limit, log.c_str());
    }
    CHECK_OR_FAIL(d.counter("peers_refused") >= 1, "peers_refused=%ld", d.counter("peers_refused"));
    CHECK_OR_FAIL(d.counter("limit_refusals") == 2, "limit_refusals=%ld",
                  d.counter("limit_refusals"));
}

} // namespace

int main()
{
    arm_watchdog(120);
    test_foreign_joins();
    test_limits();
    std::printf("agent_guard: ok\n");
    return 0;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Agent test: what the operator sees and does (docs/OPERATIONS.md).
// - ina-switchctl status/jobs (--json and for people) while a job is open,
//   every figure checked against what the simulated ranks did: members,
//   nodes, window, calls granted, bytes and blocks in and out, ACKs, errors;
// - the metrics endpoint fetched with curl, validated by promtool, and its
//   samples checked against the same figures;
// - drain: a new call is denied (DRAINING) on every rank, status and the
//   metrics say so, drain --wait returns at once with nothing in flight;
//   resume: calls are granted again; a member lost mid-call: the aborted
//   call counted;
// - the harm guard: two jobs share the agent, one told a call slower than
//   its hosts: status, the metrics and ina-switchctl count it harmed, jobs
//   shows both ledgers, the log keeps its verdict when it is freed; with
//   --harm-guard false none of it;
// - a job that is the agent's part of a stripe: shown in jobs, status and
//   the metrics; a tree of two agents: the leaf's role, parent and link,
//   a job over two leaves as the leaf and the spine each show it;
// - the control socket: mode 0660, an unknown request refused, a second
//   agent refused the same socket, an agent not running reported;
// - under systemd: readiness and status on $NOTIFY_SOCKET, log priorities
//   for the journal;
// - the configuration file: entries applied, flags override them, a bad
//   entry names its line; --bind auto on the loopback (not bound, and
//   why); --help and --version of both programs.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_calls.h"
#include "agent_harness.h"
#include "unique_fd.h"

using namespace ina_test;
using nlohmann::json;

namespace {

std::string g_dir; // a scratch directory of this test

struct Run {
    int status = -1; // exit status (-1: not exited)
    std::string out;
    std::string err;
};

// Run argv[0] (a path) with argv, collecting stdout and stderr.
Run run(const std::vector<std::string> &args)
{
    const std::string out = g_dir + "/out", err = g_dir + "/err";
    pid_t pid = fork();
    CHECK_OR_FAIL(pid >= 0, "fork");
    if (pid == 0) {
        int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(e, 2);
        std::vector<char *> argv;
        for (const auto &a : args) {
            argv.push_back(const_cast<char *>(a.c_str()));
        }
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    Run r;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    std::ifstream fo(out), fe(err);
    std::stringstream so, se;
    so << fo.rdbuf();
    se << fe.rdbuf();
    r.out = so.str();
    r.err = se.str();
    return r;
}

std::string env(const char *name)
{
    const char *v = std::getenv(name);
    CHECK_OR_FAIL(v != nullptr && *v != '\0', "%s is not set", name);
    return v;
}

Run ctl(const std::string &sock, const std::vector<std::string> &args)
{
    std::vector<std::string> a = {env("INA_SWITCHCTL"), "--socket", sock};
    a.insert(a.end(), args.begin(), args.end());
    return run(a);
}

json ctl_json(const std::string &sock, const std::string &cmd)
{
    Run r = ctl(sock, {"--json", cmd});
    CHECK_OR_FAIL(r.status == 0, "ina-switchctl %s: exit %d: %s", cmd.c_str(), r.status,
                  r.err.c_str());
    json j = json::parse(r.out, nullptr, false);
    CHECK_OR_FAIL(!j.is_discarded() && j.value("ok", false), "ina-switchctl %s: not a reply: %s",
                  cmd.c_str(), r.out.c_str());
    return j;
}

// GET the metrics with curl and check them with promtool. Returns the text.
std::string scrape(const std::string &addr)
{
    const std::string file = g_dir + "/metrics.txt";
    Run r = run({"/usr/bin/curl", "-sS", "--fail", "-o", file, "http://" + addr + "/metrics"});
    CHECK_OR_FAIL(r.status == 0, "curl http://%s/metrics: exit %d: %s", addr.c_str(), r.status,
                  r.err.c_str());
    const std::string cmd = "promtool check metrics < " + file + " 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    CHECK_OR_FAIL(p != nullptr, "popen promtool");
    char buf[4096];
    std::string said;
    while (std::fgets(buf, sizeof(buf), p) != nullptr) {
        said += buf;
    }
    const int st = pclose(p);
    CHECK_OR_FAIL(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "promtool check metrics refused the metrics (is Debian's prometheus "
                  "installed?): %s",
                  said.c_str());
    std::ifstream f(file);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// The value of the sample named exactly `series` (name{labels}), or -1.
double sample(const std::string &text, const std::string &series)
{
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.compare(0, series.size() + 1, series + " ") == 0) {
            return std::stod(line.substr(series.size() + 1));
        }
    }
    return -1;
}

void expect_sample(const std::string &text, const std::string &series, double want)
{
    const double got = sample(text, series);
    CHECK_OR_FAIL(got == want, "metrics: %s is %g, want %g", series.c_str(), got, want);
}

std::string metrics_address(const Daemon &d)
{
    const std::string log = d.log();
    const std::string tag = "metrics on http://";
    const size_t at = log.find(tag);
    CHECK_OR_FAIL(at != std::string::npos, "the agent did not say where its metrics are");
    const size_t from = at + tag.size();
    return log.substr(from, log.find("/metrics", from) - from);
}

// n endpoints to the agent at `addr`, each past its HELLO (one per rank).
std::vector<size_t> connect_ranks(Client &c, const std::string &addr, int n)
{
    std::vector<size_t> eps;
    for (int r = 0; r < n; ++r) {
        eps.push_back(c.connect(addr));
        uint32_t max_window = 0;
        uint64_t seg_bytes = 0;
        c.hello(eps.back(), &max_window, &seg_bytes);
    }
    return eps;
}

CallPlan allreduce_plan(uint32_t n, uint64_t count, uint32_t block, std::mt19937_64 &rng)
{
    CallPlan p = plan_allreduce(INA_OP_SUM, INA_DT_INT32, n, count, block, rng);
    reduce_reference(p, [](uint8_t *acc, const uint8_t *in, uint64_t k) {
        auto *a = reinterpret_cast<int32_t *>(acc);
        const auto *b = reinterpret_cast<const int32_t *>(in);
        for (uint64_t i = 0; i < k; ++i) {
            a[i] = static_cast<int32_t>(static_cast<uint32_t>(a[i]) + static_cast<uint32_t>(b[i]));
        }
    });
    return p;
}

void test_status_jobs_metrics_drain()
{
    const std::string sock = g_dir + "/ctl.sock";
    Daemon d({"--control", sock, "--metrics", "127.0.0.1:0", "--policy", "fcfs"});
    struct stat sb{};
    CHECK_OR_FAIL(stat(sock.c_str(), &sb) == 0 && S_ISSOCK(sb.st_mode) &&
                      (sb.st_mode & 0777) == 0660,
                  "control socket %s: mode %o, want a socket of mode 0660", sock.c_str(),
                  sb.st_mode & 0777);
    const std::string maddr = metrics_address(d);

    // A job of three ranks on two nodes; four calls: three allreduces and a
    // reduce to rank 0 (the others get ACKs).
    Client c;
    const std::vector<size_t> eps = connect_ranks(c, d.address(), 3);
    uint32_t window = 0;
    const uint32_t jid = c.open_all(eps, {0, 0, 1}, 4, &window);
    const uint64_t count = 1000;
    const uint32_t block = 256; // 4 blocks (the last of 232)
    std::mt19937_64 rng(7);
    std::vector<CallPlan> calls;
    for (int i = 0; i < 3; ++i) {
        calls.push_back(allreduce_plan(3, count, block, rng));
    }
    CallPlan red = allreduce_plan(3, count, block, rng);
    red.coll = INA_COLL_REDUCE;
    red.wants = {Range{0, count}, Range{}, Range{}};
    calls.push_back(red);
    const RunStats rs = run_calls(c, eps, jid, window, 0, calls, 3);
    const uint64_t bytes_in = 4 * 3 * count * sizeof(int32_t);

    // jobs, as JSON: every figure is what the ranks did.
    json j = ctl_json(sock, "jobs");
    CHECK_OR_FAIL(j["jobs"].size() == 1, "jobs: %zu jobs listed, want 1", j["jobs"].size());
    const json &job = j["jobs"][0];
    auto want = [&](const json &v, uint64_t w, const char *what) {
        CHECK_OR_FAIL(v.is_number() && v.get<uint64_t>() == w, "jobs: %s is %s, want %llu", what,
                      v.dump().c_str(), static_cast<unsigned long long>(w));
    };
    want(job["jid"], jid, "jid");
    want(job["members"], 3, "members");
    want(job["joined"], 3, "joined");
    want(job["nodes"], 2, "nodes");
    want(job["window"], window, "window");
    want(job["calls"]["granted"], 4, "calls.granted");
    want(job["calls"]["denied"], 0, "calls.denied");
    want(job["blocks_in"], 4 * 3 * 4, "blocks_in");
    want(job["bytes_in"], bytes_in, "bytes_in");
    want(job["blocks_done"], 4 * 4, "blocks_done");
    want(job["results_out"], rs.results, "results_out");
    want(job["acks_out"], rs.acks, "acks_out");
    want(job["bytes_out"], rs.result_bytes, "bytes_out");
    want(job["errors"], 0, "errors");
    CHECK_OR_FAIL(rs.acks == 2 * 4 && rs.results == 3 * 3 * 4 + 4,
                  "the ranks heard %llu RESULTs and %llu ACKs",
                  static_cast<unsigned long long>(rs.results),
                  static_cast<unsigned long long>(rs.acks));
    CHECK_OR_FAIL(job["tree"]["uplink"] == "none" && job["age_s"].get<double>() >= 0,
                  "jobs: tree %s age %s", job["tree"].dump().c_str(), job["age_s"].dump().c_str());
    CHECK_OR_FAIL(job["harm"].is_null(), "jobs: a job alone judged by the harm guard: %s",
                  job["harm"].dump().c_str());

    // status, as JSON.
    json s = ctl_json(sock, "status");
    CHECK_OR_FAIL(s["policy"]["name"] == "fcfs", "status: policy %s",
                  s["policy"]["name"].dump().c_str());
    want(s["connections"]["live"], 3, "status: connections.live");
    want(s["jobs"]["live"], 1, "status: jobs.live");
    want(s["calls"]["granted"], 4, "status: calls.granted");
    want(s["calls"]["in_flight"], 0, "status: calls.in_flight");
    want(s["pool"]["segs_in_use"], 0, "status: pool.segs_in_use");
    want(s["pool"]["segs"], 1024, "status: pool.segs");
    want(s["traffic"]["block_bytes_in"], bytes_in, "status: traffic.block_bytes_in");
    want(s["block_times"]["count"], 16, "status: block_times.count");
    // The harm guard (on by default, around any policy): nothing to judge
    // with one job.
    want(s["policy"]["harm_guard"]["served"], 0, "status: policy.harm_guard.served");
    want(s["policy"]["harm_guard"]["harmed_jobs"], 0, "status: policy.harm_guard.harmed_jobs");
    CHECK_OR_FAIL(s["agent"]["listen"] == d.address() && s["agent"]["control"] == sock &&
                      s["agent"]["metrics"] == maddr && s["tree"]["role"] == "root" &&
                      s["agent"]["draining"] == false,
                  "status: %s", s.dump().c_str());

    // For people: the same, in lines and a table.
    Run r = ctl(sock, {"status"});
    CHECK_OR_FAIL(r.status == 0 && r.out.find("policy:      fcfs; granted 4") != std::string::npos &&
                      r.out.find("connections: 3 live") != std::string::npos,
                  "ina-switchctl status:\n%s%s", r.out.c_str(), r.err.c_str());
    r = ctl(sock, {"jobs"});
    CHECK_OR_FAIL(r.status == 0 && r.out.find("JID") != std::string::npos &&
                      r.out.find("3/3") != std::string::npos,
                  "ina-switchctl jobs:\n%s%s", r.out.c_str(), r.err.c_str());

    // The metrics: valid for promtool, and the same figures.
    std::string m = scrape(maddr);
    const std::string jl = "{jid=\"" + std::to_string(jid) + "\",tenant=\"0\"}";
    expect_sample(m, "ina_calls_granted_total", 4);
    expect_sample(m, "ina_connections", 3);
    expect_sample(m, "ina_jobs", 1);
    expect_sample(m, "ina_seg_pool_segs", 1024);
    expect_sample(m, "ina_seg_pool_segs_in_use", 0);
    expect_sample(m, "ina_block_bytes_received_total", static_cast<double>(bytes_in));
    expect_sample(m, "ina_job_bytes_received_total" + jl, static_cast<double>(bytes_in));
    expect_sample(m, "ina_job_bytes_sent_total" + jl, static_cast<double>(rs.result_bytes));
    expect_sample(m, "ina_job_blocks_total" + jl, 16);
    expect_sample(m, "ina_job_calls_granted_total" + jl, 4);
    expect_sample(m, "ina_block_duration_seconds_count", 16);
    expect_sample(m, "ina_block_duration_seconds_bucket{le=\"+Inf\"}", 16);
    expect_sample(m, "ina_agent_draining", 0);
    expect_sample(m, "ina_harm_guard_served_total", 0);
    expect_sample(m, "ina_harm_guard_harmed_jobs", 0);

    // Drain: the next call is denied on every rank, with its own reason.
    r = ctl(sock, {"drain", "--wait", "5"});
    CHECK_OR_FAIL(r.status == 0 && r.out.find("draining") != std::string::npos,
                  "ina-switchctl drain --wait 5: exit %d\n%s%s", r.status, r.out.c_str(),
                  r.err.c_str());
    std::vector<int32_t> v(count, 1);
    for (uint32_t rk = 0; rk < 3; ++rk) {
        c.send(eps[rk], allreduce_hdr(jid, rk, 4, 0, window, INA_OP_SUM, INA_DT_INT32, block, count),
               v.data(), block * sizeof(int32_t));
    }
    for (uint32_t rk = 0; rk < 3; ++rk) {
        Msg dm = c.wait_for([&](const Msg &x) { return x.hdr.jid == jid && x.hdr.rank == rk; },
                            10000, "DENY(draining)");
        CHECK_OR_FAIL(dm.hdr.type == INA_PROTO_DENY && dm.hdr.mid == 4 &&
                          dm.hdr.status == INA_PROTO_ERR_DRAINING,
                      "rank %u: %s (%s) instead of DENY(draining)", rk,
                      ina_proto_type_name(dm.hdr.type), ina_proto_status_name(dm.hdr.status));
    }
    s = ctl_json(sock, "status");
    CHECK_OR_FAIL(s["agent"]["draining"] == true, "status while draining: %s",
                  s["agent"].dump().c_str());
    want(s["policy"]["denied"]["draining"], 1, "status: policy.denied.draining");
    j = ctl_json(sock, "jobs");
    want(j["jobs"][0]["calls"]["denied_by"]["draining"], 1, "jobs: denied_by.draining");
    m = scrape(maddr);
    expect_sample(m, "ina_agent_draining", 1);
    expect_sample(m, "ina_calls_denied_total{reason=\"draining\"}", 1);
    r = ctl(sock, {"status"});
    CHECK_OR_FAIL(r.out.find("DRAINING") != std::string::npos, "status while draining:\n%s",
                  r.out.c_str());

    // Resume: calls are granted again, exact as before.
    r = ctl(sock, {"resume"});
    CHECK_OR_FAIL(r.status == 0, "ina-switchctl resume: exit %d %s", r.status, r.err.c_str());
    std::vector<CallPlan> again = {allreduce_plan(3, count, block, rng)};
    run_calls(c, eps, jid, window, 5, again, 4);
    want(ctl_json(sock, "jobs")["jobs"][0]["calls"]["granted"], 5, "jobs after resume: granted");

    // Requests that are not ours are refused; the agent goes on answering.
    {
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strcpy(a.sun_path, sock.c_str());
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        CHECK_OR_FAIL(connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0, "connect");
        const char req[] = "shutdown\n";
        CHECK_OR_FAIL(write(fd, req, sizeof(req) - 1) == sizeof(req) - 1, "write");
        char buf[512] = {};
        ssize_t n = 0, got = 0;
        while ((n = read(fd, buf + got, sizeof(buf) - 1 - static_cast<size_t>(got))) > 0) {
            got += n;
        }
        close(fd);
        json e = json::parse(std::string(buf, static_cast<size_t>(got)), nullptr, false);
        CHECK_OR_FAIL(!e.is_discarded() && e["ok"] == false &&
                          e["error"].get<std::string>().find("unknown request") != std::string::npos,
                      "an unknown request: %s", buf);
    }
    want(ctl_json(sock, "status")["jobs"]["live"], 1, "status after a bad request: jobs.live");

    // A second agent may not take the socket of a live one.
    Run second = run({env("INA_SWITCHD"), "--no-config", "--listen", "127.0.0.1:0", "--control", sock});
    CHECK_OR_FAIL(second.status == 1 && second.err.find("another agent answers") != std::string::npos,
                  "a second agent on the same control socket: exit %d: %s", second.status,
                  second.err.c_str());
    want(ctl_json(sock, "status")["connections"]["live"], 3, "status: still the first agent");

    // A member lost in the middle of a granted call: the call is aborted
    // (the survivors get an ERROR, and settle it among themselves), which
    // status, jobs and the metrics count.
    c.send(eps[0], allreduce_hdr(jid, 0, 6, 0, window, INA_OP_SUM, INA_DT_INT32, block, count),
           v.data(), block * sizeof(int32_t));
    expect_grants(c, jid, 6, {0});
    c.close_ep(eps[2]);
    for (int i = 0; i < 100 && ctl_json(sock, "status")["calls"]["aborted"] != 1; ++i) {
        usleep(50000);
    }
    s = ctl_json(sock, "status");
    want(s["calls"]["aborted"], 1, "status after a member was lost: calls.aborted");
    want(s["connections"]["lost"], 1, "status after a member was lost: connections.lost");
    want(ctl_json(sock, "jobs")["jobs"][0]["calls"]["aborted"], 1, "jobs: calls.aborted");
    expect_sample(scrape(maddr), "ina_calls_aborted_total", 1);

    CHECK_OR_FAIL(d.terminate() == 0, "the agent did not stop cleanly");
    CHECK_OR_FAIL(access(sock.c_str(), F_OK) != 0, "the control socket outlived the agent");
    r = ctl(sock, {"status"});
    CHECK_OR_FAIL(r.status == 1 && r.err.find("cannot reach the agent") != std::string::npos,
                  "ina-switchctl with no agent: exit %d: %s", r.status, r.err.c_str());
}

// The harm guard's view, as status, jobs, the metrics and the log show it:
// two jobs (two tenants) share the agent; job A's member 0 says its hosts
// take 10 ms for 1 MiB and its whole call took 1 s (harmed), job B's that
// its call took 1 us (a gain). Without the guard, status says so and the
// metrics have none of its samples.
void test_harm_guard()
{
    const std::string sock = g_dir + "/guard.sock";
    Daemon d({"--control", sock, "--metrics", "127.0.0.1:0"});
    Client c;
    const std::vector<size_t> ea = connect_ranks(c, d.address(), 2);
    const std::vector<size_t> eb = connect_ranks(c, d.address(), 2);
    uint32_t wa = 0, wb = 0;
    const uint32_t ja = c.open_all(ea, {0, 1}, 4, &wa);
    const uint32_t jb = c.open_all(eb, {0, 1}, 4, &wb);
    auto word = [](ina_proto_type_t type, uint32_t jid, uint64_t ns) {
        ina_proto_hdr_t h;
        ina_proto_init(&h, type);
        h.jid = jid;
        h.rank = 0;
        h.coll = INA_COLL_ALLREDUCE;
        ina_proto_timing_set(&h, 1 << 20, ns);
        return h;
    };
    c.send(ea[0], word(INA_PROTO_HOST_COST, ja, 10000000));
    c.send(ea[0], word(INA_PROTO_CALL_TIME, ja, 1000000000));
    c.send(eb[0], word(INA_PROTO_HOST_COST, jb, 10000000));
    c.send(eb[0], word(INA_PROTO_CALL_TIME, jb, 1000));
    c.fence(ea[0]);
    c.fence(eb[0]);

    const json s = ctl_json(sock, "status");
    CHECK_OR_FAIL(s["policy"]["harm_guard"]["harmed_jobs"] == 1,
                  "status: harm_guard %s, want 1 harmed job",
                  s["policy"]["harm_guard"].dump().c_str());
    const json j = ctl_json(sock, "jobs");
    CHECK_OR_FAIL(j["jobs"].size() == 2, "jobs: %zu listed, want 2", j["jobs"].size());
    for (const json &e : j["jobs"]) {
        const json &h = e["harm"];
        const bool a = e["jid"] == ja;
        CHECK_OR_FAIL(h.is_object() && h["judged_calls"] == 1 && h["harmed"] == a &&
                          std::fabs(h["took_s"].get<double>() - (a ? 1.0 : 1e-6)) < 1e-12 &&
                          h["hosts_s"].get<double>() > 1e-6 && h["hosts_s"].get<double>() < 1.0,
                      "jobs: job %s's harm %s", e["jid"].dump().c_str(), h.dump().c_str());
    }
    Run r = ctl(sock, {"status"});
    CHECK_OR_FAIL(r.status == 0 && r.out.find("harm guard:  ") != std::string::npos &&
                      r.out.find("1 job(s) harmed now") != std::string::npos,
                  "ina-switchctl status:\n%s", r.out.c_str());
    r = ctl(sock, {"jobs"});
    CHECK_OR_FAIL(r.status == 0 && r.out.find("HARM") != std::string::npos &&
                      r.out.find("!") != std::string::npos,
                  "ina-switchctl jobs:\n%s", r.out.c_str());
    expect_sample(scrape(metrics_address(d)), "ina_harm_guard_harmed_jobs", 1);

    // A's members leave: the log keeps the guard's verdict on it.
    c.leave(ea[0], ja, 0);
    c.leave(ea[1], ja, 1);
    c.fence(ea[0]);
    c.fence(ea[1]);
    const std::string want =
        "job " + std::to_string(ja) + ": harm guard judged 1 calls (the ranks' times): 1.000 s, ";
    const std::string log = d.log();
    CHECK_OR_FAIL(log.find(want) != std::string::npos && log.find("; harmed") != std::string::npos,
                  "the agent's log lacks '%s ... ; harmed':\n%s", want.c_str(), log.c_str());
    CHECK_OR_FAIL(d.terminate() == 0, "the agent did not stop cleanly");
    CHECK_OR_FAIL(d.log().find("harm guard: served=0 sent_to_hosts=0 probes=0") !=
                      std::string::npos,
                  "the agent's summary lacks the harm guard's:\n%s", d.log().c_str());

    const std::string sock2 = g_dir + "/noguard.sock";
    Daemon bare({"--control", sock2, "--metrics", "127.0.0.1:0", "--harm-guard", "false"});
    CHECK_OR_FAIL(ctl_json(sock2, "status")["policy"]["harm_guard"].is_null(),
                  "status without the guard: harm_guard is not null");
    const std::string m = scrape(metrics_address(bare));
    CHECK_OR_FAIL(m.find("ina_harm_guard_") == std::string::npos,
                  "metrics without the guard have its samples");
    CHECK_OR_FAIL(bare.terminate() == 0, "the agent did not stop cleanly");
}

// A job that is this agent's part of a stripe shows as such in jobs, status
// and the metrics; a stripe word that makes no sense is refused.
void test_stripe()
{
    const std::string sock = g_dir + "/stripe.sock";
    Daemon d({"--control", sock, "--metrics", "127.0.0.1:0"});
    Client c;
    const std::vector<size_t> eps = connect_ranks(c, d.address(), 2);
    const uint32_t stripe = (3u << 16) | 2u; // agent 2 of 3
    for (uint32_t r = 0; r < 2; ++r) {
        Msg m = c.open_job(eps[r], "striped-key", {0, 1}, 4, r, "test capability", stripe);
        CHECK_OR_FAIL(m.hdr.status == INA_PROTO_OK, "striped JOB_OPEN: %s",
                      ina_proto_status_name(m.hdr.status));
    }
    json j = ctl_json(sock, "jobs");
    CHECK_OR_FAIL(j["jobs"].size() == 1 && j["jobs"][0]["stripe"]["index"] == 2 &&
                      j["jobs"][0]["stripe"]["width"] == 3,
                  "jobs of a striped job: %s", j.dump().c_str());
    CHECK_OR_FAIL(ctl_json(sock, "status")["jobs"]["striped"] == 1, "status: jobs.striped");
    Run r = ctl(sock, {"jobs"});
    CHECK_OR_FAIL(r.status == 0 && r.out.find(" 2/3 ") != std::string::npos,
                  "ina-switchctl jobs of a striped job:\n%s", r.out.c_str());
    const std::string m = scrape(metrics_address(d));
    expect_sample(m, "ina_jobs_striped", 1);
    expect_sample(m, "ina_job_stripe_width{jid=\"" + j["jobs"][0]["jid"].dump() + "\",tenant=\"0\"}", 3);
    // index >= width: not a stripe (MALFORMED), and nothing opened.
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_JOB_OPEN);
    h.count = 2;
    h.window = 4;
    h.sid = (2u << 16) | 2u;
    std::vector<uint8_t> payload(INA_PROTO_JOB_KEY_BYTES + INA_PROTO_JOB_CAP_BYTES + 8, 1);
    CHECK_OR_FAIL(ina_proto_check(&h, sizeof(h), payload.size()) == INA_PROTO_ERR_MALFORMED,
                  "a stripe index beyond its width passes the wire check");
    h.sid = 1u << 16; // width 1
    CHECK_OR_FAIL(ina_proto_check(&h, sizeof(h), payload.size()) == INA_PROTO_ERR_MALFORMED,
                  "a stripe of width 1 passes the wire check");
    CHECK_OR_FAIL(d.terminate() == 0, "the agent did not stop cleanly");
}

// A tree of two levels: the leaf says whose leaf it is and that the link is
// up; a job over two leaves shows at the leaf as leaf 0 of 2 (its job at the
// parent open) and at the spine as a job of child agents.
void test_tree()
{
    const std::string spine_sock = g_dir + "/spine.sock", leaf_sock = g_dir + "/leaf.sock";
    Daemon spine({"--control", spine_sock, "--metrics", "127.0.0.1:0"});
    Daemon leaf({"--control", leaf_sock, "--metrics", "127.0.0.1:0", "--parent", spine.address()});
    json s = ctl_json(leaf_sock, "status");
    CHECK_OR_FAIL(s["tree"]["role"] == "leaf" && s["tree"]["parent"] == spine.address() &&
                      s["tree"]["parent_up"] == true && s["tree"]["reconnects"] == 0,
                  "leaf status: %s", s["tree"].dump().c_str());
    s = ctl_json(spine_sock, "status");
    CHECK_OR_FAIL(s["tree"]["role"] == "root" && s["tree"]["parent"].is_null(),
                  "spine status: %s", s["tree"].dump().c_str());

    // Two members at this leaf of a job over two leaves.
    Client c;
    const std::vector<size_t> eps = connect_ranks(c, leaf.address(), 2);
    for (uint32_t r = 0; r < 2; ++r) {
        Msg m = c.open_job(eps[r], "tree-key", {0, 1}, 4, r, "test capability", 0, 2, 0);
        CHECK_OR_FAIL(m.hdr.status == INA_PROTO_OK, "JOB_OPEN over two leaves: %s",
                      ina_proto_status_name(m.hdr.status));
    }
    json lj;
    for (int i = 0; i < 100; ++i) { // the parent's JOB_OPENED comes back on its own
        lj = ctl_json(leaf_sock, "jobs");
        if (lj["jobs"].size() == 1 && lj["jobs"][0]["tree"]["uplink"] == "open") {
            break;
        }
        usleep(50000);
    }
    CHECK_OR_FAIL(lj["jobs"].size() == 1 && lj["jobs"][0]["tree"]["groups"] == 2 &&
                      lj["jobs"][0]["tree"]["group"] == 0 &&
                      lj["jobs"][0]["tree"]["uplink"] == "open",
                  "leaf jobs: %s", lj.dump().c_str());
    json sj = ctl_json(spine_sock, "jobs");
    CHECK_OR_FAIL(sj["jobs"].size() == 1 && sj["jobs"][0]["tree"]["children"] == true &&
                      sj["jobs"][0]["members"] == 2 && sj["jobs"][0]["joined"] == 1,
                  "spine jobs: %s", sj.dump().c_str());
    Run r = ctl(leaf_sock, {"jobs"});
    CHECK_OR_FAIL(r.out.find("leaf0/2:open") != std::string::npos, "leaf jobs:\n%s",
                  r.out.c_str());
    r = ctl(spine_sock, {"jobs"});
    CHECK_OR_FAIL(r.out.find(" top ") != std::string::npos, "spine jobs:\n%s", r.out.c_str());
    r = ctl(leaf_sock, {"status"});
    CHECK_OR_FAIL(r.out.find("tree:        leaf of " + spine.address() + " (up)") !=
                      std::string::npos,
                  "leaf status:\n%s", r.out.c_str());
    const std::string lm = scrape(metrics_address(leaf));
    expect_sample(lm, "ina_parent_up", 1);
    expect_sample(lm, "ina_parent_reconnects_total", 0);
    const std::string sm = scrape(metrics_address(spine));
    expect_sample(sm, "ina_tree_child_jobs", 1);
    CHECK_OR_FAIL(sm.find("role=\"root\"") != std::string::npos &&
                      lm.find("role=\"leaf\"") != std::string::npos,
                  "ina_agent_info without the agents' roles");
    CHECK_OR_FAIL(leaf.terminate() == 0 && spine.terminate() == 0,
                  "the tree's agents did not stop cleanly");
}

void write_file(const std::string &path, const std::string &text)
{
    std::ofstream f(path);
    f << text;
    CHECK_OR_FAIL(f.good(), "cannot write %s", path.c_str());
}

// Under systemd: readiness (READY=1 once it listens, STATUS= lines, a drain
// in them, STOPPING=1) on $NOTIFY_SOCKET, and log lines with a syslog
// priority instead of our decoration when stderr is $JOURNAL_STREAM.
void test_systemd()
{
    const std::string notify = g_dir + "/notify.sock", sock = g_dir + "/sd.sock";
    ina::UniqueFd ns(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, notify.c_str());
    CHECK_OR_FAIL(ns.get() >= 0 && bind(ns.get(), reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0,
                  "notify socket: %s", std::strerror(errno));
    timeval tv{10, 0};
    setsockopt(ns.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    auto next = [&ns]() {
        char buf[512] = {};
        const ssize_t n = recv(ns.get(), buf, sizeof(buf) - 1, 0);
        CHECK_OR_FAIL(n > 0, "no notification from the agent: %s", std::strerror(errno));
        return std::string(buf, static_cast<size_t>(n));
    };
    setenv("NOTIFY_SOCKET", notify.c_str(), 1);
    Daemon d({"--control", sock, "--policy", "partition"});
    unsetenv("NOTIFY_SOCKET");
    std::string m = next();
    CHECK_OR_FAIL(m.find("READY=1") != std::string::npos, "first notification: %s", m.c_str());
    m = next();
    CHECK_OR_FAIL(m == "STATUS=serving on " + d.address() + ", policy partition",
                  "status notification: %s", m.c_str());
    CHECK_OR_FAIL(ctl(sock, {"drain"}).status == 0, "drain");
    m = next();
    CHECK_OR_FAIL(m.find("STATUS=draining on ") == 0, "drain notification: %s", m.c_str());
    CHECK_OR_FAIL(d.terminate() == 0, "the notifying agent did not stop cleanly");
    m = next();
    CHECK_OR_FAIL(m == "STOPPING=1", "stop notification: %s", m.c_str());

    // The journal: an error at start (no such address) with priority 3.
    const std::string err = g_dir + "/err";
    write_file(err, "");
    struct stat sb{};
    CHECK_OR_FAIL(stat(err.c_str(), &sb) == 0, "stat %s", err.c_str());
    setenv("JOURNAL_STREAM",
           (std::to_string(sb.st_dev) + ":" + std::to_string(sb.st_ino)).c_str(), 1);
    Run r = run({env("INA_SWITCHD"), "--no-config", "--control", "none", "--listen",
                 "127.0.0.1:0", "--metrics", "192.0.2.254:9", "--log-level", "info"});
    unsetenv("JOURNAL_STREAM");
    CHECK_OR_FAIL(r.status == 1 && r.err.find("<6>listening on 127.0.0.1:") == 0 &&
                      r.err.find("\n<3>--metrics 192.0.2.254:9: cannot listen there") !=
                          std::string::npos &&
                      r.err.find("ina-switchd[") == std::string::npos,
                  "journal lines: exit %d:\n%s", r.status, r.err.c_str());
}


void test_config_file()
{
    const std::string conf = g_dir + "/agent.conf";
    const std::string sock = g_dir + "/conf.sock";
    // Entries applied; a flag overrides the file (segs).
    write_file(conf, "# ina-switchd test\n[ina-switchd]\npolicy = exclusive\nsegs = 64 ; inline\n"
                     "control = " + sock + "\nspin-yield = true\nbind = auto\n");
    {
        Daemon d({"--config", conf, "--segs", "32"});
        json s = ctl_json(sock, "status");
        CHECK_OR_FAIL(s["policy"]["name"] == "exclusive" && s["pool"]["segs"] == 32 &&
                          s["agent"]["config"] == conf,
                      "configured agent: policy %s segs %s config %s",
                      s["policy"]["name"].dump().c_str(), s["pool"]["segs"].dump().c_str(),
                      s["agent"]["config"].dump().c_str());
        // --bind auto on the loopback: a device no core is nearer to.
        CHECK_OR_FAIL(s["agent"]["bind"].get<std::string>().find("not bound (--bind auto: lo ") == 0,
                      "configured agent: bind %s", s["agent"]["bind"].dump().c_str());
        CHECK_OR_FAIL(d.terminate() == 0, "the configured agent did not stop cleanly");
    }
    // Bad entries: exit 2 and the line named.
    struct Bad {
        std::string text;
        std::string says;
    };
    const std::vector<Bad> bads = {
        {"policy = tdm\nsgs = 12\n", conf + ":2: unknown setting 'sgs'"},
        {"\n\nsegs = many\n", conf + ":3: segs wants a count >= 1, got 'many'"},
        {"policy = tdm\nlisten = 1.2.3.4\n", conf + ":2: listen wants HOST:PORT, got '1.2.3.4'"},
        {"policy = tdm\n\n# c\njust some words\n", conf + ":4: not a 'name = value' line"},
        {"[other]\nsegs = 2\n", conf + ":2: unknown section [other]"},
        {"ready-fd = 3\n", conf + ":1: unknown setting 'ready-fd'"},
    };
    for (const Bad &b : bads) {
        write_file(conf, b.text);
        Run r = run({env("INA_SWITCHD"), "--config", conf});
        CHECK_OR_FAIL(r.status == 2 && r.err.find(b.says) != std::string::npos,
                      "config\n%s: exit %d, stderr '%s', want '%s'", b.text.c_str(), r.status,
                      r.err.c_str(), b.says.c_str());
    }
    Run r = run({env("INA_SWITCHD"), "--config", g_dir + "/none.conf"});
    CHECK_OR_FAIL(r.status == 2 && r.err.find("cannot read the configuration file") != std::string::npos,
                  "a missing --config: exit %d: %s", r.status, r.err.c_str());
    r = run({env("INA_SWITCHD"), "--no-config", "--segs", "0"});
    CHECK_OR_FAIL(r.status == 2 && r.err.find("--segs wants a count >= 1, got '0'") != std::string::npos,
                  "--segs 0: exit %d: %s", r.status, r.err.c_str());
}

void test_help_version()
{
    for (const std::string &prog : {env("INA_SWITCHD"), env("INA_SWITCHCTL")}) {
        Run r = run({prog, "--help"});
        CHECK_OR_FAIL(r.status == 0 && r.out.find("usage:") != std::string::npos,
                      "%s --help: exit %d", prog.c_str(), r.status);
        r = run({prog, "--version"});
        CHECK_OR_FAIL(r.status == 0 && r.out.find("(ina) ") != std::string::npos,
                      "%s --version: exit %d: %s", prog.c_str(), r.status, r.out.c_str());
    }
    Run r = run({env("INA_SWITCHCTL"), "frobnicate"});
    CHECK_OR_FAIL(r.status == 2, "ina-switchctl frobnicate: exit %d", r.status);
}

} // namespace

int main()
{
    arm_watchdog(120);
    char tmpl[] = "/tmp/ina-agent-ops-XXXXXX";
    CHECK_OR_FAIL(mkdtemp(tmpl) != nullptr, "mkdtemp");
    g_dir = tmpl;
    test_help_version();
    test_config_file();
    test_status_jobs_metrics_drain();
    test_harm_guard();
    test_stripe();
    test_tree();
    test_systemd();
    std::system(("rm -rf " + g_dir).c_str());
    std::printf("agent_ops: ok\n");
    return 0;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// ina-switchd: command line, signals, and the event loop's lifetime.
#include <getopt.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "agent.h"
#include "bind.h"
#include "ina_ucx.h"
#include "log.h"
#include "sched/exclusive.h"
#include "sched/free_seg.h"
#include "sched/partition.h"
#include "sched/tdm.h"

namespace {

void usage(FILE *out)
{
    std::fprintf(out,
                 "usage: ina-switchd [options]\n"
                 "  --listen HOST:PORT   address to listen on (default 0.0.0.0:17300;\n"
                 "                       port 0 = any free port)\n"
                 "  --segs N             Seg units in the pool (default 1024)\n"
                 "  --seg-size BYTES     bytes per Seg (default 65536, at most %u)\n"
                 "  --max-window N       largest lease/window granted (default 64, at most %u)\n"
                 "  --log-level LEVEL    error|warn|info|debug (default warn)\n"
                 "  --bind WHERE         core:N, numa:N, package:N or pu:N (logical index,\n"
                 "                       as lstopo numbers them): run there, and for a NUMA\n"
                 "                       node keep the Seg pool in its memory (default none)\n"
                 "  --ready-fd N         once listening, write \"HOST:PORT\\n\" to fd N\n"
                 "                       and close it\n"
                 "  --spin-us N          while calls are open, poll at most N us (less\n"
                 "                       when recent waits were short) before sleeping\n"
                 "                       on the event fd; 0 never polls (default %d)\n"
                 "  --spin-yield         sched_yield between those polls (more processes\n"
                 "                       than cores)\n"
                 "  --rndv-bytes N       clients send BLOCK payloads of N bytes or more\n"
                 "                       by rendezvous, received straight into a Seg\n"
                 "                       buffer; 0 = every block eager (default %llu)\n"
                 "  --open-wait-ms N     a call of a job opened by key (JOB_OPEN) that\n"
                 "                       starts before every member opened it waits up\n"
                 "                       to N ms for them, then is denied (default %lld)\n"
                 "  --parent HOST:PORT   this agent is a leaf of a tree: jobs whose members\n"
                 "                       talk to several leaves go up to this agent\n"
                 "                       (default none: a root)\n"
                 "  --policy NAME        how calls of different jobs share the agent\n"
                 "                       (docs/ARCHITECTURE.md): tdm (one job's call at\n"
                 "                       a time, decided by prediction and CalcScore),\n"
                 "                       fcfs (a call is granted when a lease is free),\n"
                 "                       exclusive (the first job to offload holds the\n"
                 "                       agent; the others are denied until it ends or\n"
                 "                       is idle --exclusive-idle-ms) or partition (the\n"
                 "                       pool split evenly among the jobs active within\n"
                 "                       --partition-idle-ms) (default tdm)\n"
                 "  --exclusive-idle-ms N  see --policy exclusive (default 1000)\n"
                 "  --partition-idle-ms N  see --policy partition (default 1000)\n"
                 "  --tdm-ageing X       tdm: score a job gains per call denied in a row\n"
                 "                       (default %g)\n"
                 "  --host-alpha-us X    tdm's model of the host algorithms: latency per\n"
                 "                       step (default %g)\n"
                 "  --host-gbps X        ... and link rate; 0 = this agent's measured rate\n"
                 "                       (default 0)\n"
                 "Limits (what one client may take; exceeding one is refused with\n"
                 "status \"limit\" and a warning naming it):\n"
                 "  --max-conns N        client connections served at once (default %u;\n"
                 "                       mind the open-files limit, ulimit -n)\n"
                 "  --max-jobs-per-conn N  jobs one connection is in at once (default %u)\n"
                 "  --max-members N      members of one job (default %u)\n"
                 "  --max-job-segs N     Segs one job's calls hold together; a call beyond\n"
                 "                       waits for the job's earlier ones (default 0: the\n"
                 "                       pool)\n"
                 "  --max-conn-keep-bytes N  bytes of one connection's blocks kept for\n"
                 "                       calls waiting for a lease (default %zu)\n"
                 "  --help               this text\n",
                 INA_PROTO_MAX_SEG_BYTES, INA_PROTO_MAX_WINDOW, ina::kDefaultSpinUs,
                 static_cast<unsigned long long>(ina::AgentConfig::kDefaultRndvBytes),
                 static_cast<long long>(ina::agg::AggregatorConfig{}.open_wait.count()),
                 ina::sched::TdmConfig{}.ageing, ina::sched::TdmConfig{}.host.alpha * 1e6,
                 ina::AgentConfig{}.max_conns,
                 ina::agg::AggregatorConfig{}.limits.jobs_per_member,
                 ina::agg::AggregatorConfig{}.limits.members,
                 ina::agg::AggregatorConfig{}.limits.member_keep_bytes);
}

[[noreturn]] void bad_arg(const char *fmt, const char *what)
{
    std::fprintf(stderr, "ina-switchd: ");
    std::fprintf(stderr, fmt, what);
    std::fprintf(stderr, "\n(see ina-switchd --help)\n");
    std::exit(2);
}

// Whole-string decimal number in [lo, hi].
bool parse_double(const char *s, double lo, double hi, double *out)
{
    if (s == nullptr || *s == '\0') {
        return false;
    }
    char *end = nullptr;
    errno = 0;
    const double v = std::strtod(s, &end);
    if (errno != 0 || *end != '\0' || !(v >= lo && v <= hi)) {
        return false;
    }
    *out = v;
    return true;
}

// Whole-string unsigned parse in [lo, hi].
bool parse_uint(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
    if (s == nullptr || *s == '\0' || *s == '-') {
        return false;
    }
    char *end = nullptr;
    errno = 0;
    unsigned long v = std::strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) {
        return false;
    }
    *out = v;
    return true;
}

void parse_listen(const char *arg, ina::AgentConfig *cfg)
{
    std::string host;
    std::string port;
    unsigned long v = 0;
    if (!ina::ucx::split_host_port(arg, host, port) || !parse_uint(port.c_str(), 0, 65535, &v)) {
        bad_arg("--listen wants HOST:PORT, got '%s'", arg);
    }
    cfg->host = host;
    cfg->port = static_cast<uint16_t>(v);
}

bool write_all(int fd, const std::string &s)
{
    size_t off = 0;
    while (off < s.size()) {
        ssize_t n = write(fd, s.data() + off, s.size() - off);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        off += static_cast<size_t>(n);
    }
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    ina::agg::log_set_tag("ina-switchd");
    ina::AgentConfig cfg;
    int ready_fd = -1;
    std::string bind = "none";
    std::string policy = "tdm";
    std::chrono::milliseconds exclusive_idle(1000);
    std::chrono::milliseconds partition_idle(1000);
    ina::sched::TdmConfig tdm;
    enum {
        kListen = 1,
        kSegs,
        kSegSize,
        kMaxWindow,
        kLogLevel,
        kReadyFd,
        kBind,
        kSpinUs,
        kSpinYield,
        kRndvBytes,
        kOpenWaitMs,
        kParent,
        kPolicy,
        kExclusiveIdleMs,
        kPartitionIdleMs,
        kTdmAgeing,
        kHostAlphaUs,
        kHostGbps,
        kMaxConns,
        kMaxJobsPerConn,
        kMaxMembers,
        kMaxJobSegs,
        kMaxConnKeepBytes,
        kTestDieAfterResults,
        kHelp
    };
    static const struct option opts[] = {
        {"listen", required_argument, nullptr, kListen},
        {"segs", required_argument, nullptr, kSegs},
        {"seg-size", required_argument, nullptr, kSegSize},
        {"max-window", required_argument, nullptr, kMaxWindow},
        {"log-level", required_argument, nullptr, kLogLevel},
        {"ready-fd", required_argument, nullptr, kReadyFd},
        {"bind", required_argument, nullptr, kBind},
        {"spin-us", required_argument, nullptr, kSpinUs},
        {"spin-yield", no_argument, nullptr, kSpinYield},
        {"rndv-bytes", required_argument, nullptr, kRndvBytes},
        {"open-wait-ms", required_argument, nullptr, kOpenWaitMs},
        {"parent", required_argument, nullptr, kParent},
        {"policy", required_argument, nullptr, kPolicy},
        {"exclusive-idle-ms", required_argument, nullptr, kExclusiveIdleMs},
        {"partition-idle-ms", required_argument, nullptr, kPartitionIdleMs},
        {"tdm-ageing", required_argument, nullptr, kTdmAgeing},
        {"host-alpha-us", required_argument, nullptr, kHostAlphaUs},
        {"host-gbps", required_argument, nullptr, kHostGbps},
        {"max-conns", required_argument, nullptr, kMaxConns},
        {"max-jobs-per-conn", required_argument, nullptr, kMaxJobsPerConn},
        {"max-members", required_argument, nullptr, kMaxMembers},
        {"max-job-segs", required_argument, nullptr, kMaxJobSegs},
        {"max-conn-keep-bytes", required_argument, nullptr, kMaxConnKeepBytes},
        {"test-die-after-results", required_argument, nullptr, kTestDieAfterResults},
        {"help", no_argument, nullptr, kHelp},
        {nullptr, 0, nullptr, 0}};
    opterr = 0;
    int c;
    unsigned long v = 0;
    while ((c = getopt_long(argc, argv, "", opts, nullptr)) != -1) {
        switch (c) {
        case kListen:
            parse_listen(optarg, &cfg);
            break;
        case kSegs:
            if (!parse_uint(optarg, 1, 1u << 24, &v)) {
                bad_arg("--segs wants a count >= 1, got '%s'", optarg);
            }
            cfg.core.segs = static_cast<uint32_t>(v);
            break;
        case kSegSize:
            if (!parse_uint(optarg, 16, INA_PROTO_MAX_SEG_BYTES, &v)) {
                bad_arg("--seg-size wants 16..1048576 bytes, got '%s'", optarg);
            }
            cfg.core.seg_bytes = static_cast<uint32_t>(v);
            break;
        case kMaxWindow:
            if (!parse_uint(optarg, 1, INA_PROTO_MAX_WINDOW, &v)) {
                bad_arg("--max-window wants 1..1024, got '%s'", optarg);
            }
            cfg.core.max_window = static_cast<uint32_t>(v);
            break;
        case kLogLevel: {
            ina::agg::LogLevel lvl;
            if (!ina::agg::log_parse_level(optarg, &lvl)) {
                bad_arg("--log-level wants error|warn|info|debug, got '%s'", optarg);
            }
            ina::agg::log_set_level(lvl);
            break;
        }
        case kReadyFd:
            if (!parse_uint(optarg, 0, 1u << 20, &v)) {
                bad_arg("--ready-fd wants a file descriptor number, got '%s'", optarg);
            }
            ready_fd = static_cast<int>(v);
            break;
        case kBind:
            bind = optarg;
            break;
        case kSpinUs:
            if (!parse_uint(optarg, 0, 1000000, &v)) {
                bad_arg("--spin-us wants 0..1000000 microseconds, got '%s'", optarg);
            }
            cfg.spin.max = std::chrono::microseconds(v);
            break;
        case kSpinYield:
            cfg.spin.yield = true;
            break;
        case kRndvBytes:
            if (!parse_uint(optarg, 0, INA_PROTO_MAX_SEG_BYTES, &v)) {
                bad_arg("--rndv-bytes wants 0..1048576 bytes, got '%s'", optarg);
            }
            cfg.rndv_bytes = v;
            break;
        case kTestDieAfterResults: // tests only: not in --help
            if (!parse_uint(optarg, 1, ULONG_MAX, &v)) {
                bad_arg("--test-die-after-results wants a count >= 1, got '%s'", optarg);
            }
            cfg.test_die_after_results = v;
            break;
        case kMaxConns:
            if (!parse_uint(optarg, 1, 1u << 20, &v)) {
                bad_arg("--max-conns wants 1..1048576 connections, got '%s'", optarg);
            }
            cfg.max_conns = static_cast<uint32_t>(v);
            break;
        case kMaxJobsPerConn:
            if (!parse_uint(optarg, 1, 1u << 20, &v)) {
                bad_arg("--max-jobs-per-conn wants 1..1048576 jobs, got '%s'", optarg);
            }
            cfg.core.limits.jobs_per_member = static_cast<uint32_t>(v);
            break;
        case kMaxMembers:
            if (!parse_uint(optarg, 1, INA_PROTO_MAX_MEMBERS, &v)) {
                bad_arg("--max-members wants 1..65536 members, got '%s'", optarg);
            }
            cfg.core.limits.members = static_cast<uint32_t>(v);
            break;
        case kMaxJobSegs:
            if (!parse_uint(optarg, 0, 1u << 24, &v)) {
                bad_arg("--max-job-segs wants 0..16777216 Segs, got '%s'", optarg);
            }
            cfg.core.limits.job_segs = static_cast<uint32_t>(v);
            break;
        case kMaxConnKeepBytes:
            if (!parse_uint(optarg, 0, ULONG_MAX, &v)) {
                bad_arg("--max-conn-keep-bytes wants a byte count, got '%s'", optarg);
            }
            cfg.core.limits.member_keep_bytes = v;
            break;
        case kOpenWaitMs:
            if (!parse_uint(optarg, 0, 3600000, &v)) {
                bad_arg("--open-wait-ms wants 0..3600000 milliseconds, got '%s'", optarg);
            }
            cfg.core.open_wait = std::chrono::milliseconds(v);
            break;
        case kParent: {
            std::string host;
            std::string port;
            if (!ina::ucx::split_host_port(optarg, host, port) ||
                !parse_uint(port.c_str(), 1, 65535, &v)) {
                bad_arg("--parent wants HOST:PORT, got '%s'", optarg);
            }
            cfg.parent = optarg;
            break;
        }
        case kPolicy:
            policy = optarg;
            if (policy != "tdm" && policy != "fcfs" && policy != "exclusive" &&
                policy != "partition") {
                bad_arg("--policy wants tdm, fcfs, exclusive or partition, got '%s'", optarg);
            }
            break;
        case kExclusiveIdleMs:
            if (!parse_uint(optarg, 0, 3600000, &v)) {
                bad_arg("--exclusive-idle-ms wants 0..3600000 milliseconds, got '%s'", optarg);
            }
            exclusive_idle = std::chrono::milliseconds(v);
            break;
        case kPartitionIdleMs:
            if (!parse_uint(optarg, 0, 3600000, &v)) {
                bad_arg("--partition-idle-ms wants 0..3600000 milliseconds, got '%s'", optarg);
            }
            partition_idle = std::chrono::milliseconds(v);
            break;
        case kTdmAgeing:
            if (!parse_double(optarg, 1e-6, 1e6, &tdm.ageing)) {
                bad_arg("--tdm-ageing wants a number > 0, got '%s'", optarg);
            }
            break;
        case kHostAlphaUs:
            if (!parse_double(optarg, 0, 1e6, &tdm.host.alpha)) {
                bad_arg("--host-alpha-us wants 0..1e6 microseconds, got '%s'", optarg);
            }
            tdm.host.alpha *= 1e-6;
            break;
        case kHostGbps: {
            double gbps = 0;
            if (!parse_double(optarg, 0, 1e6, &gbps)) {
                bad_arg("--host-gbps wants 0..1e6 Gbit/s, got '%s'", optarg);
            }
            tdm.host.beta = gbps > 0 ? 8.0 / (gbps * 1e9) : 0;
            break;
        }
        case kHelp:
            usage(stdout);
            return 0;
        default:
            bad_arg("unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) {
        bad_arg("unexpected argument '%s'", argv[optind]);
    }

    // Bind first: the Seg pool is allocated (first touched) by the agent below.
    std::string where;
    std::string why;
    if (!ina::bind_process(bind, where, why)) {
        std::fprintf(stderr, "ina-switchd: %s\n", why.c_str());
        return 2;
    }
    if (bind != "none") {
        INA_INFO("%s", where.c_str());
    }

    // Block the signals before UCX starts any thread, so they are only ever
    // delivered through the signalfd in the event loop.
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    if (sigprocmask(SIG_BLOCK, &mask, nullptr) != 0) {
        INA_ERROR("sigprocmask: %s", std::strerror(errno));
        return 1;
    }
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
    if (sfd < 0) {
        INA_ERROR("signalfd: %s", std::strerror(errno));
        return 1;
    }

    int rc = 0;
    try {
        ina::Agent agent(cfg, [&](ina::agg::SegPool &pool) -> std::unique_ptr<ina::agg::Scheduler> {
            if (policy == "exclusive") {
                return std::make_unique<ina::sched::ExclusiveScheduler>(pool, exclusive_idle);
            }
            if (policy == "tdm") {
                return std::make_unique<ina::sched::TdmScheduler>(pool, tdm);
            }
            if (policy == "partition") {
                return std::make_unique<ina::sched::PartitionScheduler>(pool, partition_idle);
            }
            return std::make_unique<ina::sched::FreeSegScheduler>(pool);
        });
        agent.start();
        if (ready_fd >= 0) {
            bool ok = write_all(ready_fd, agent.bound_address() + "\n");
            close(ready_fd);
            if (!ok) {
                INA_ERROR("cannot write to --ready-fd %d: %s", ready_fd, std::strerror(errno));
                return 1;
            }
        }
        agent.run(sfd);
        agent.log_counters();
    } catch (const std::exception &e) {
        INA_ERROR("%s", e.what());
        rc = 1;
    }
    close(sfd);
    return rc;
}

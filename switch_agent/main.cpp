// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// ina-switchd: command line and configuration file, signals, readiness,
// and the event loop's lifetime with the operator's endpoints around it.
#include <getopt.h>
#include <ini.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
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
#include <utility>
#include <vector>

#include "agent.h"
#include "bind.h"
#include "ina_config.h"
#include "ina_ucx.h"
#include "log.h"
#include "ops/control.h"
#include "ops/metrics.h"
#include "ops/report.h"
#include "sched/exclusive.h"
#include "sched/free_seg.h"
#include "sched/guard.h"
#include "sched/partition.h"
#include "sched/tdm.h"

namespace {

constexpr const char *kDefaultConfig = INA_SWITCHD_CONFIG; // SYSCONFDIR/ina/ina-switchd.conf
constexpr const char *kDefaultControl = "/run/ina/ina-switchd.sock";

void usage(FILE *out)
{
    std::fprintf(out,
                 "usage: ina-switchd [options]\n"
                 "Every option but --config, --no-config, --ready-fd, --help and --version\n"
                 "may also be set in the configuration file, one \"name = value\" per line\n"
                 "(name without the dashes; \"spin-yield = true\"); options given here\n"
                 "override it. See ina-switchd(8).\n"
                 "  --config FILE        configuration file (default %s, read if it exists)\n"
                 "  --no-config          read no configuration file\n"
                 "  --listen HOST:PORT   address to listen on (default 0.0.0.0:17300;\n"
                 "                       port 0 = any free port)\n"
                 "  --control PATH       the control socket ina-switchctl talks to (default\n"
                 "                       %s when its directory exists; 'none': no\n"
                 "                       socket). Mode 0660: the agent's user and group may ask\n"
                 "  --metrics HOST:PORT  serve metrics in the Prometheus text format on\n"
                 "                       http://HOST:PORT/metrics (default: off)\n"
                 "  --segs N             Seg units in the pool (default 1024)\n"
                 "  --seg-size BYTES     bytes per Seg (default 65536, at most %u)\n"
                 "  --max-window N       largest lease/window granted (default 64, at most %u)\n"
                 "  --log-level LEVEL    error|warn|info|debug (default warn)\n"
                 "  --bind WHERE         core:N, numa:N, package:N or pu:N (logical index,\n"
                 "                       as lstopo numbers them): run there, and for a NUMA\n"
                 "                       node keep the Seg pool in its memory; auto: the\n"
                 "                       cores and memory nearest the network device of\n"
                 "                       --listen's address (default none)\n"
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
                 "  --parent-liveness-ms N  a parent that answers nothing for N ms, though\n"
                 "                       probed from N/3 on, is lost as if its connection\n"
                 "                       had closed (frozen, its link dead); 0: never\n"
                 "                       probe (default 1000)\n"
                 "  --child-liveness-ms N  a child agent (a leaf of this one) that answers\n"
                 "                       nothing for N ms, though probed from N/3 on, is\n"
                 "                       lost as if its connection had closed; 0: never\n"
                 "                       probe (default 1000)\n"
                 "  --policy NAME        how calls of different jobs share the agent\n"
                 "                       (docs/ARCHITECTURE.md): tdm (one job's call at\n"
                 "                       a time, decided by prediction and CalcScore),\n"
                 "                       fcfs (a call is granted when a lease is free),\n"
                 "                       exclusive (the first job to offload holds the\n"
                 "                       agent; the others are denied until it ends or\n"
                 "                       is idle --exclusive-idle-ms), partition (the\n"
                 "                       pool split evenly among the jobs active within\n"
                 "                       --partition-idle-ms) or auto (the pool split by\n"
                 "                       what each job needs to stream at line rate while\n"
                 "                       the needs fit in it, else time divided as tdm)\n"
                 "                       (default tdm)\n"
                 "  --exclusive-idle-ms N  see --policy exclusive (default 1000)\n"
                 "  --partition-idle-ms N  see --policy partition (default 1000)\n"
                 "  --tdm-ageing X       tdm: score a job gains per call denied in a row\n"
                 "                       (default %g)\n"
                 "  --tdm-wait BOOL      tdm, auto: a call that finds another job's call\n"
                 "                       holding the pool waits for it, first come first\n"
                 "                       served, when the predicted wait and its own time\n"
                 "                       at the agent are shorter than its time on the\n"
                 "                       hosts; else it runs there at once (default\n"
                 "                       true)\n"
                 "  --host-alpha-us X    tdm's model of the host algorithms: latency per\n"
                 "                       step (default %g)\n"
                 "  --host-gbps X        ... and link rate; 0 = this agent's measured rate\n"
                 "                       (default 0)\n"
                 "  --host-hints BOOL    tdm, auto: weigh what the ranks measured denied\n"
                 "                       calls cost on the hosts over the model (default\n"
                 "                       true)\n"
                 "  --harm-guard BOOL    whatever the policy: a job whose calls, while it\n"
                 "                       shares the agent, took longer in all than the\n"
                 "                       hosts would have (what its ranks measured, else\n"
                 "                       the agent's own view) has its calls served where\n"
                 "                       they cost it least: its whole window, waiting for\n"
                 "                       it while that beats the hosts, or the hosts\n"
                 "                       (default true)\n"
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
                 "  --help               this text\n"
                 "  --version            the version, and the protocol spoken\n"
                 "Benchmarks only (command line):\n"
                 "  --bench-delay-us N   send every message to a client N us after making\n"
                 "                       it, in order: an emulated propagation delay that\n"
                 "                       lengthens the round trip a job's window must\n"
                 "                       cover (bench/tenancy); never in production\n",
                 kDefaultConfig, kDefaultControl, INA_PROTO_MAX_SEG_BYTES, INA_PROTO_MAX_WINDOW, ina::kDefaultSpinUs,
                 static_cast<unsigned long long>(ina::AgentConfig::kDefaultRndvBytes),
                 static_cast<long long>(ina::agg::AggregatorConfig{}.open_wait.count()),
                 ina::sched::TdmConfig{}.ageing, ina::sched::TdmConfig{}.host.alpha * 1e6,
                 ina::AgentConfig{}.max_conns,
                 ina::agg::AggregatorConfig{}.limits.jobs_per_member,
                 ina::agg::AggregatorConfig{}.limits.members,
                 ina::agg::AggregatorConfig{}.limits.member_keep_bytes);
}

// Everything the options set.
struct Settings {
    ina::AgentConfig cfg;
    int ready_fd = -1;
    std::string bind = "none";
    std::string policy = "tdm";
    std::string control;       // empty: the default (if its directory exists)
    bool control_given = false; // --control named one: failing to make it is fatal
    std::string metrics;
    std::chrono::milliseconds exclusive_idle{1000};
    std::chrono::milliseconds partition_idle{1000};
    ina::sched::TdmConfig tdm;
    bool tdm_wait_set = false; // --tdm-wait given (tdm and auto wait by default)
    bool harm_guard = true;
    ina::sched::GuardConfig guard;
};

enum Opt {
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
    kParentLivenessMs,
    kChildLivenessMs,
    kPolicy,
    kExclusiveIdleMs,
    kPartitionIdleMs,
    kTdmAgeing,
    kTdmWait,
    kHostAlphaUs,
    kHostGbps,
    kHostHints,
    kHarmGuard,
    kMaxConns,
    kMaxJobsPerConn,
    kMaxMembers,
    kMaxJobSegs,
    kMaxConnKeepBytes,
    kControl,
    kMetrics,
    kTestDieAfterResults,
    kTestFreezeAfterResults,
    kBenchDelayUs,
    kConfig,
    kNoConfig,
    kHelp,
    kVersion
};

const struct option kOpts[] = {
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
    {"parent-liveness-ms", required_argument, nullptr, kParentLivenessMs},
    {"child-liveness-ms", required_argument, nullptr, kChildLivenessMs},
    {"policy", required_argument, nullptr, kPolicy},
    {"exclusive-idle-ms", required_argument, nullptr, kExclusiveIdleMs},
    {"partition-idle-ms", required_argument, nullptr, kPartitionIdleMs},
    {"tdm-ageing", required_argument, nullptr, kTdmAgeing},
    {"tdm-wait", required_argument, nullptr, kTdmWait},
    {"host-alpha-us", required_argument, nullptr, kHostAlphaUs},
    {"host-gbps", required_argument, nullptr, kHostGbps},
    {"host-hints", required_argument, nullptr, kHostHints},
    {"harm-guard", required_argument, nullptr, kHarmGuard},
    {"max-conns", required_argument, nullptr, kMaxConns},
    {"max-jobs-per-conn", required_argument, nullptr, kMaxJobsPerConn},
    {"max-members", required_argument, nullptr, kMaxMembers},
    {"max-job-segs", required_argument, nullptr, kMaxJobSegs},
    {"max-conn-keep-bytes", required_argument, nullptr, kMaxConnKeepBytes},
    {"control", required_argument, nullptr, kControl},
    {"metrics", required_argument, nullptr, kMetrics},
    {"test-die-after-results", required_argument, nullptr, kTestDieAfterResults},
    {"test-freeze-after-results", required_argument, nullptr, kTestFreezeAfterResults},
    {"bench-delay-us", required_argument, nullptr, kBenchDelayUs},
    {"config", required_argument, nullptr, kConfig},
    {"no-config", no_argument, nullptr, kNoConfig},
    {"help", no_argument, nullptr, kHelp},
    {"version", no_argument, nullptr, kVersion},
    {nullptr, 0, nullptr, 0}};

// Options that mean something only on the command line.
bool command_line_only(int id)
{
    return id == kReadyFd || id == kTestDieAfterResults || id == kTestFreezeAfterResults ||
           id == kBenchDelayUs ||
           id == kConfig || id == kNoConfig ||
           id == kHelp || id == kVersion;
}

// A refused value: thrown by apply(), reported with where it came from.
struct BadValue {
    std::string what; // "wants ..., got '...'"
};

[[noreturn]] void bad_value(const char *wants, const char *got)
{
    throw BadValue{std::string("wants ") + wants + ", got '" + got + "'"};
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

unsigned long want_uint(const char *s, unsigned long lo, unsigned long hi, const char *wants)
{
    unsigned long v = 0;
    if (!parse_uint(s, lo, hi, &v)) {
        bad_value(wants, s);
    }
    return v;
}

double want_double(const char *s, double lo, double hi, const char *wants)
{
    double v = 0;
    if (!parse_double(s, lo, hi, &v)) {
        bad_value(wants, s);
    }
    return v;
}

bool want_bool(const char *s)
{
    const std::string v = s;
    if (v == "true" || v == "yes" || v == "1") {
        return true;
    }
    if (v != "false" && v != "no" && v != "0") {
        bad_value("true or false", s);
    }
    return false;
}

// "HOST:PORT" with a port in [lo_port, 65535]: the port.
uint16_t want_host_port(const char *arg, unsigned long lo_port, std::string *host)
{
    std::string h;
    std::string port;
    unsigned long v = 0;
    if (!ina::ucx::split_host_port(arg, h, port) || !parse_uint(port.c_str(), lo_port, 65535, &v)) {
        bad_value("HOST:PORT", arg);
    }
    if (host != nullptr) {
        *host = h;
    }
    return static_cast<uint16_t>(v);
}

// Set one option (from the command line or the configuration file; a flag
// without argument gets "true" from the command line). Throws BadValue.
void apply(Settings &st, int id, const char *arg)
{
    ina::AgentConfig &cfg = st.cfg;
    switch (id) {
    case kListen:
        cfg.port = want_host_port(arg, 0, &cfg.host);
        break;
    case kSegs:
        cfg.core.segs = static_cast<uint32_t>(want_uint(arg, 1, 1u << 24, "a count >= 1"));
        break;
    case kSegSize:
        cfg.core.seg_bytes =
            static_cast<uint32_t>(want_uint(arg, 16, INA_PROTO_MAX_SEG_BYTES, "16..1048576 bytes"));
        break;
    case kMaxWindow:
        cfg.core.max_window =
            static_cast<uint32_t>(want_uint(arg, 1, INA_PROTO_MAX_WINDOW, "1..1024"));
        break;
    case kLogLevel: {
        ina::agg::LogLevel lvl;
        if (!ina::agg::log_parse_level(arg, &lvl)) {
            bad_value("error|warn|info|debug", arg);
        }
        ina::agg::log_set_level(lvl);
        break;
    }
    case kReadyFd:
        st.ready_fd = static_cast<int>(want_uint(arg, 0, 1u << 20, "a file descriptor number"));
        break;
    case kBind:
        st.bind = arg;
        break;
    case kSpinUs:
        cfg.spin.max = std::chrono::microseconds(want_uint(arg, 0, 1000000, "0..1000000 microseconds"));
        break;
    case kSpinYield:
        cfg.spin.yield = want_bool(arg);
        break;
    case kRndvBytes:
        cfg.rndv_bytes = want_uint(arg, 0, INA_PROTO_MAX_SEG_BYTES, "0..1048576 bytes");
        break;
    case kTestDieAfterResults: // tests only: not in --help
        cfg.test_die_after_results = want_uint(arg, 1, ULONG_MAX, "a count >= 1");
        break;
    case kTestFreezeAfterResults: // tests only: not in --help
        cfg.test_freeze_after_results = want_uint(arg, 1, ULONG_MAX, "a count >= 1");
        break;
    case kBenchDelayUs:
        cfg.bench_delay = std::chrono::microseconds(
            want_uint(arg, 0, 10000000, "0..10000000 microseconds"));
        break;
    case kMaxConns:
        cfg.max_conns = static_cast<uint32_t>(want_uint(arg, 1, 1u << 20, "1..1048576 connections"));
        break;
    case kMaxJobsPerConn:
        cfg.core.limits.jobs_per_member =
            static_cast<uint32_t>(want_uint(arg, 1, 1u << 20, "1..1048576 jobs"));
        break;
    case kMaxMembers:
        cfg.core.limits.members =
            static_cast<uint32_t>(want_uint(arg, 1, INA_PROTO_MAX_MEMBERS, "1..65536 members"));
        break;
    case kMaxJobSegs:
        cfg.core.limits.job_segs =
            static_cast<uint32_t>(want_uint(arg, 0, 1u << 24, "0..16777216 Segs"));
        break;
    case kMaxConnKeepBytes:
        cfg.core.limits.member_keep_bytes = want_uint(arg, 0, ULONG_MAX, "a byte count");
        break;
    case kOpenWaitMs:
        cfg.core.open_wait = std::chrono::milliseconds(want_uint(arg, 0, 3600000, "0..3600000 milliseconds"));
        break;
    case kParent:
        (void) want_host_port(arg, 1, nullptr);
        cfg.parent = arg;
        break;
    case kParentLivenessMs:
        cfg.parent_liveness_ms = static_cast<int>(want_uint(arg, 0, 3600000, "0..3600000 milliseconds"));
        break;
    case kChildLivenessMs:
        cfg.child_liveness_ms = static_cast<int>(want_uint(arg, 0, 3600000, "0..3600000 milliseconds"));
        break;
    case kPolicy:
        st.policy = arg;
        if (st.policy != "tdm" && st.policy != "fcfs" && st.policy != "exclusive" &&
            st.policy != "partition" && st.policy != "auto") {
            bad_value("tdm, fcfs, exclusive, partition or auto", arg);
        }
        break;
    case kExclusiveIdleMs:
        st.exclusive_idle = std::chrono::milliseconds(want_uint(arg, 0, 3600000, "0..3600000 milliseconds"));
        break;
    case kPartitionIdleMs:
        st.partition_idle = std::chrono::milliseconds(want_uint(arg, 0, 3600000, "0..3600000 milliseconds"));
        break;
    case kTdmWait:
        st.tdm.wait = want_bool(arg);
        st.tdm_wait_set = true;
        break;
    case kTdmAgeing:
        st.tdm.ageing = want_double(arg, 1e-6, 1e6, "a number > 0");
        break;
    case kHostAlphaUs:
        st.tdm.host.alpha = want_double(arg, 0, 1e6, "0..1e6 microseconds") * 1e-6;
        break;
    case kHostGbps: {
        const double gbps = want_double(arg, 0, 1e6, "0..1e6 Gbit/s");
        st.tdm.host.beta = gbps > 0 ? 8.0 / (gbps * 1e9) : 0;
        break;
    }
    case kHostHints:
        st.tdm.host_hints = want_bool(arg);
        break;
    case kHarmGuard:
        st.harm_guard = want_bool(arg);
        break;
    case kControl:
        if (*arg == '\0') {
            bad_value("a path, or none", arg);
        }
        st.control = arg;
        st.control_given = true;
        break;
    case kMetrics:
        (void) want_host_port(arg, 0, nullptr);
        st.metrics = arg;
        break;
    default:
        break;
    }
}

[[noreturn]] void usage_error(const std::string &msg)
{
    std::fprintf(stderr, "ina-switchd: %s\n(see ina-switchd --help)\n", msg.c_str());
    std::exit(2);
}

// ---------------------------------------------------------------- the configuration file

// INI (libinih): "name = value" lines, '#' or ';' comments, an optional
// [ina-switchd] section. The reader counts lines so that a refused entry is
// reported with its own.
struct ConfigRead {
    Settings *st = nullptr;
    FILE *file = nullptr;
    int line = 0;
    int error_line = 0;
    std::string error;
};

char *config_reader(char *str, int num, void *stream)
{
    auto *r = static_cast<ConfigRead *>(stream);
    char *s = std::fgets(str, num, r->file);
    if (s != nullptr) {
        const size_t n = std::strlen(s);
        if (n > 0 && s[n - 1] == '\n') {
            ++r->line; // (a line longer than the buffer counts once, at its end)
        } else if (std::feof(r->file)) {
            ++r->line; // the last line, without a newline
        }
    }
    return s;
}

int config_entry(void *user, const char *section, const char *name, const char *value)
{
    auto *r = static_cast<ConfigRead *>(user);
    const int line = r->line; // (the entry's line was the last read)
    auto refuse = [&](const std::string &why) {
        if (r->error_line == 0) {
            r->error_line = line;
            r->error = why;
        }
        return 0;
    };
    if (*section != '\0' && std::strcmp(section, "ina-switchd") != 0) {
        return refuse(std::string("unknown section [") + section + "] (only [ina-switchd])");
    }
    for (const struct option *o = kOpts; o->name != nullptr; ++o) {
        if (std::strcmp(o->name, name) == 0 && !command_line_only(o->val)) {
            try {
                apply(*r->st, o->val, value);
            } catch (const BadValue &e) {
                return refuse(std::string(name) + " " + e.what);
            }
            return 1;
        }
    }
    return refuse(std::string("unknown setting '") + name + "'");
}

// Read the configuration file into st; exits (2) naming the line of a bad
// entry. `required`: a missing file is an error (--config named it).
// Whether there was one.
bool read_config(const std::string &path, bool required, Settings &st)
{
    FILE *f = std::fopen(path.c_str(), "r");
    if (f == nullptr) {
        if (errno == ENOENT && !required) {
            return false;
        }
        usage_error("cannot read the configuration file " + path + ": " + std::strerror(errno));
    }
    ConfigRead r;
    r.st = &st;
    r.file = f;
    const int rc = ini_parse_stream(&config_reader, &r, &config_entry, &r);
    std::fclose(f);
    if (rc == 0) {
        return true;
    }
    if (rc < 0) {
        usage_error("cannot read the configuration file " + path);
    }
    if (r.error_line != 0 && r.error_line <= rc) {
        usage_error(path + ":" + std::to_string(r.error_line) + ": " + r.error);
    }
    usage_error(path + ":" + std::to_string(rc) + ": not a 'name = value' line (or a [section])");
}

// Whether stderr goes to the journal (systemd sets JOURNAL_STREAM to its
// device:inode): then log lines carry their priority, not our decoration.
bool stderr_is_journal()
{
    const char *js = std::getenv("JOURNAL_STREAM");
    struct stat st{};
    if (js == nullptr || fstat(STDERR_FILENO, &st) != 0) {
        return false;
    }
    unsigned long long dev = 0;
    unsigned long long ino = 0;
    return std::sscanf(js, "%llu:%llu", &dev, &ino) == 2 && dev == st.st_dev && ino == st.st_ino;
}

// The control socket's path: --control's (none: no socket), else the
// default one when its directory exists (systemd's RuntimeDirectory, else
// /run/ina), else none.
std::string control_socket_path(const Settings &st)
{
    if (st.control_given) {
        return st.control == "none" ? std::string() : st.control;
    }
    std::string dir;
    if (const char *rd = std::getenv("RUNTIME_DIRECTORY"); rd != nullptr && *rd != '\0') {
        dir = rd;
        dir = dir.substr(0, dir.find(':')); // the first of several
    } else {
        dir = "/run/ina";
    }
    struct stat sb{};
    if (stat(dir.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        return {};
    }
    return dir + "/ina-switchd.sock";
}

// The line `systemctl status` shows (nothing without systemd).
void notify_status(const ina::Agent &agent)
{
    sd_notifyf(0, "STATUS=%s on %s, policy %s", agent.core().draining() ? "draining" : "serving",
               agent.bound_address().c_str(), agent.core().scheduler().name());
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
    if (stderr_is_journal()) {
        ina::agg::log_set_journal(true);
    }
    Settings st;

    // The command line first, kept aside: it names the configuration file,
    // and it overrides what the file says.
    std::vector<std::pair<int, std::string>> given;
    std::string config = kDefaultConfig;
    bool config_required = false;
    bool no_config = false;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", kOpts, nullptr)) != -1) {
        switch (c) {
        case kHelp:
            usage(stdout);
            return 0;
        case kVersion:
            std::printf("ina-switchd (ina) %s\nprotocol %u (serves components of %u to %u)\n",
                        PACKAGE_VERSION, INA_PROTO_VERSION, INA_PROTO_VERSION_MIN,
                        INA_PROTO_VERSION);
            return 0;
        case kConfig:
            config = optarg;
            config_required = true;
            break;
        case kNoConfig:
            no_config = true;
            break;
        case '?':
        case ':':
            usage_error(std::string("unknown or incomplete option '") + argv[optind - 1] + "'");
        default:
            given.emplace_back(c, optarg != nullptr ? optarg : "true");
        }
    }
    if (optind < argc) {
        usage_error(std::string("unexpected argument '") + argv[optind] + "'");
    }
    std::string config_read;
    if (!no_config && read_config(config, config_required, st)) {
        config_read = config;
    }
    for (const auto &[id, value] : given) {
        try {
            apply(st, id, value.c_str());
        } catch (const BadValue &e) {
            const char *name = "?";
            for (const struct option *o = kOpts; o->name != nullptr; ++o) {
                name = o->val == id ? o->name : name;
            }
            usage_error(std::string("--") + name + " " + e.what);
        }
    }
    ina::AgentConfig &cfg = st.cfg;
    const std::string &bind = st.bind;
    const std::string &policy = st.policy;
    const int ready_fd = st.ready_fd;
    cfg.core.time_blocks = !st.metrics.empty();

    // Bind first: the Seg pool is allocated (first touched) by the agent below.
    std::string where;
    std::string why;
    std::string info_bind;
    if (!ina::bind_process(bind, cfg.host, where, why)) {
        std::fprintf(stderr, "ina-switchd: %s\n", why.c_str());
        return 2;
    }
    if (bind != "none") {
        INA_INFO("%s", where.c_str());
        info_bind = where;
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
        auto make_policy = [&](ina::agg::SegPool &pool) -> std::unique_ptr<ina::agg::Scheduler> {
            if (policy == "exclusive") {
                return std::make_unique<ina::sched::ExclusiveScheduler>(pool, st.exclusive_idle);
            }
            if (policy == "tdm" || policy == "auto") {
                ina::sched::TdmConfig tdm = st.tdm;
                tdm.by_need = policy == "auto";
                if (!st.tdm_wait_set) {
                    tdm.wait = true; // waiting beat every other setting measured
                }
                return std::make_unique<ina::sched::TdmScheduler>(pool, tdm);
            }
            if (policy == "partition") {
                return std::make_unique<ina::sched::PartitionScheduler>(pool, st.partition_idle);
            }
            return std::make_unique<ina::sched::FreeSegScheduler>(pool);
        };
        ina::Agent agent(cfg, [&](ina::agg::SegPool &pool) -> std::unique_ptr<ina::agg::Scheduler> {
            if (!st.harm_guard) {
                return make_policy(pool);
            }
            ina::sched::GuardConfig guard = st.guard;
            guard.host = st.tdm.host;
            return std::make_unique<ina::sched::HarmGuard>(pool, make_policy(pool), guard);
        });
        agent.start();

        // The operator's endpoints, served by the agent's loop.
        ina::ops::Info info;
        info.bind = bind == "none" ? bind : info_bind;
        info.config = config_read;
        std::unique_ptr<ina::ops::ControlServer> control;
        const std::string control_path = control_socket_path(st);
        if (!control_path.empty()) {
            try {
                control = std::make_unique<ina::ops::ControlServer>(
                    control_path, [&agent, &info](const std::string &req) {
                        const nlohmann::json reply = ina::ops::request(agent, info, req);
                        if (req == "drain" || req == "resume") {
                            notify_status(agent);
                        }
                        return reply.dump();
                    });
                info.control = control->path();
                agent.add_sidecar(control.get());
            } catch (const std::exception &e) {
                if (st.control_given) {
                    throw;
                }
                INA_INFO("no control socket: %s", e.what());
            }
        }
        std::unique_ptr<ina::ops::MetricsServer> metrics;
        if (!st.metrics.empty()) {
            metrics = std::make_unique<ina::ops::MetricsServer>(
                st.metrics, [&agent] { return ina::ops::metrics(agent); });
            info.metrics = metrics->address();
            agent.add_sidecar(metrics.get());
            INA_INFO("metrics on http://%s/metrics", info.metrics.c_str());
        }

        if (ready_fd >= 0) {
            bool ok = write_all(ready_fd, agent.bound_address() + "\n");
            close(ready_fd);
            if (!ok) {
                INA_ERROR("cannot write to --ready-fd %d: %s", ready_fd, std::strerror(errno));
                return 1;
            }
        }
        // systemd (Type=notify): the agent listens, `systemctl start` returns.
        sd_notifyf(0, "READY=1\nMAINPID=%d", static_cast<int>(getpid()));
        notify_status(agent);
        agent.run(sfd);
        sd_notify(0, "STOPPING=1");
        agent.log_counters();
    } catch (const std::exception &e) {
        INA_ERROR("%s", e.what());
        rc = 1;
    }
    close(sfd);
    return rc;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// ina_share_sim: jobs sharing one agent, simulated, under the agent's own
// policies: how each policy's mean job completion time (JCT) compares as
// the hosts' fallback gets dearer against the agent. bench/tenancy measures
// this on the emulated fabric, at one ratio of the hosts' speed to the
// agent's (the hosts' ring allreduce reaches about a third of a link there,
// the agent 86%); this program asks what the same jobs would see on a
// fabric where that ratio differs, which the emulation cannot give.
//
// The policies are the real ones (switch_agent/sched/, behind the harm
// guard as ina-switchd runs them by default), driven as the aggregation
// core drives them, on a simulated clock: decide() at a call's post, again
// for a deferred call whenever a lease comes back and at every
// tick_interval(); on_call_done() when a granted call ends; the members'
// words as coll_ina sends them (CALL_TIME after every call of 64 KiB or
// more, HOST_COST after every denied one). What is modelled is the rest:
//   - a job (examples/ina_train): K iterations of C ms of compute, then an
//     allreduce of S bytes; M members, each on a host of its own;
//   - a call granted a lease of L Segs streams at the agent's rate times
//     min(1, L / N), N the Segs a job needs for line rate (--need: by
//     default its whole window W, the scarce regime, where the pool is
//     about one window and a third of it streams at about a third, as
//     bench/tenancy's regime check shows on the fabric; 1-2 Segs of a
//     window of 8 in the plentiful one), and takes latency + S / that rate. Jobs have links of their own and
//     the agent's port is not the bottleneck (as bench/fabric's agent,
//     behind an unlimited port), so calls of several jobs stream side by
//     side;
//   - a denied call runs the hosts' algorithm: S / (line x host-eff);
//   - the policies' model of the hosts is set to that (as bench/tenancy's
//     --host-model measured sets --host-gbps from the hosts' allreduce).
// Not modelled: the cores the ranks and the agent share (so no noise), the
// blocks sent ahead of a verdict, compute that slows when its cores are
// busy. With the defaults the jobs are bench/tenancy's "three jobs alike"
// on its scarce regime (--window 6 --delay-us 20000 --pool-x 1), whose
// alone and hosts-only times the model reproduces within 1%.
//
// Deterministic: the same options print the same figures on every run. It
// never asserts on time.
//
//   ina_share_sim [--jobs 2097152:400,2097152:400,2097152:400] [--iters 20]
//                 [--members 4] [--window 6] [--need W] [--pool-x 1] [--line-mbps 100]
//                 [--agent-eff 0.86] [--latency-ms 20] [--host-eff 0.35,0.2]
//                 [--policies tdm,auto,partition,exclusive] [--no-guard]
//                 [--trace]   (every verdict and call end on stderr)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <tuple>
#include <vector>

#include "scheduler.h"
#include "sched/exclusive.h"
#include "sched/free_seg.h"
#include "sched/guard.h"
#include "sched/partition.h"
#include "sched/tdm.h"
#include "seg_pool.h"

namespace {

using ina::agg::CallRequest;
using ina::agg::Clock;
using ina::agg::JobInfo;
using ina::agg::Scheduler;
using ina::agg::SegPool;
using ina::agg::Verdict;

constexpr uint32_t kSegBytes = 65536;
constexpr double kCallTimeMinBytes = 65536; // coll_ina_call_time_min_bytes

struct JobSpec {
    uint64_t bytes;
    double compute; // seconds
};

struct Options {
    std::vector<JobSpec> jobs{{2097152, 0.4}, {2097152, 0.4}, {2097152, 0.4}};
    uint32_t iters = 20;
    uint32_t members = 4;
    uint32_t window = 6;
    uint32_t need = 0; // Segs a call needs for the agent's full rate; 0: the window
    double pool_x = 1;
    double line = 100e6 / 8; // bytes per second
    double agent_eff = 0.86;
    double latency = 0.020;
    std::vector<double> host_effs{0.35, 0.30, 0.25, 0.20, 0.15};
    std::vector<std::string> policies{"tdm", "auto", "partition", "exclusive"};
    bool guard = true;
    bool trace = false; // every verdict and call end, on stderr
};

// One fabric: the options with one host efficiency.
struct Fabric {
    const Options &o;
    double host_eff;
    uint32_t pool_segs() const
    {
        return std::max<uint32_t>(1, static_cast<uint32_t>(o.pool_x * o.window + 0.5));
    }
    double agent_time(uint64_t bytes, size_t lease) const
    {
        const double share = std::min(1.0, static_cast<double>(lease) / o.need);
        return o.latency + static_cast<double>(bytes) / (o.line * o.agent_eff * share);
    }
    double host_time(uint64_t bytes) const
    {
        return static_cast<double>(bytes) / (o.line * host_eff);
    }
};

Clock::duration secs(double s)
{
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

std::unique_ptr<Scheduler> make_policy(const std::string &name, SegPool &pool, const Fabric &f,
                                       const std::function<Clock::time_point()> &now)
{
    // The model of the hosts the policies weigh: a ring allreduce of the
    // jobs' size over M members takes what the hosts take (alpha 0).
    ina::sched::HostModel host;
    const double n = f.o.members;
    const double s = static_cast<double>(f.o.jobs.front().bytes);
    host.alpha = 0;
    host.beta = f.host_time(f.o.jobs.front().bytes) / (2 * (n - 1) / n * s);
    std::unique_ptr<Scheduler> p;
    const std::chrono::milliseconds idle{1000}; // ina-switchd's default
    if (name == "tdm" || name == "auto") {
        ina::sched::TdmConfig cfg;
        cfg.host = host;
        cfg.by_need = name == "auto";
        cfg.wait = true; // ina-switchd's default for both
        p = std::make_unique<ina::sched::TdmScheduler>(pool, cfg, now);
    } else if (name == "exclusive") {
        p = std::make_unique<ina::sched::ExclusiveScheduler>(pool, idle, now);
    } else if (name == "partition") {
        p = std::make_unique<ina::sched::PartitionScheduler>(pool, idle, now);
    } else if (name == "fcfs") {
        p = std::make_unique<ina::sched::FreeSegScheduler>(pool);
    } else {
        std::fprintf(stderr, "ina_share_sim: unknown policy '%s'\n", name.c_str());
        std::exit(2);
    }
    if (!f.o.guard) {
        return p;
    }
    ina::sched::GuardConfig g;
    g.host = host;
    return std::make_unique<ina::sched::HarmGuard>(pool, std::move(p), g, now);
}

struct JobResult {
    double jct = 0;      // seconds, from the start to its last call's end
    uint32_t offloaded = 0;
};

// Runs the jobs `which` (indices into o.jobs) together: under `policy`, or
// every call on the hosts ("hosts").
std::vector<JobResult> simulate(const Fabric &f, const std::string &policy,
                                const std::vector<size_t> &which)
{
    const Options &o = f.o;
    const bool hosts_only = policy == "hosts";
    if (o.trace) {
        std::string js;
        for (size_t i : which) {
            js += " " + std::to_string(i + 1);
        }
        std::fprintf(stderr, "== %s, hosts at %.0f%% of a link, jobs%s\n", policy.c_str(),
                     100 * f.host_eff, js.c_str());
    }
    SegPool pool(f.pool_segs(), kSegBytes);
    Clock::time_point now{};
    std::unique_ptr<Scheduler> sched;
    if (!hosts_only) {
        sched = make_policy(policy, pool, f, [&now] { return now; });
    }
    struct Job {
        JobSpec spec{};
        uint32_t jid = 0;
        uint32_t done = 0;   // calls ended
        double posted = 0;   // the open call's post
        std::vector<uint32_t> lease;
        JobResult r;
    };
    std::vector<Job> jobs;
    for (size_t i : which) {
        Job b;
        b.spec = o.jobs[i];
        b.jid = static_cast<uint32_t>(jobs.size() + 1);
        jobs.push_back(std::move(b));
        if (sched) {
            sched->on_job_created(JobInfo{jobs.back().jid, o.members, o.members, o.window});
        }
    }
    // Events: (time, sequence, kind, job). A job posts its call, its call
    // ends (granted or on the hosts), or the core's tick.
    enum Kind { kPost, kEndAgent, kEndHosts, kTick };
    using Ev = std::tuple<double, uint64_t, int, size_t>;
    std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> q;
    uint64_t seq = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
        q.emplace(jobs[j].spec.compute, seq++, kPost, j);
    }
    std::deque<std::pair<size_t, uint32_t>> deferred; // job, times asked
    bool tick_pending = false;

    auto request = [&](size_t j, uint32_t asked) {
        const Job &b = jobs[j];
        CallRequest req{};
        req.jid = b.jid;
        req.mid = b.done;
        req.window = o.window;
        req.total = b.spec.bytes / 4;
        req.coll = INA_COLL_ALLREDUCE;
        req.op = INA_OP_SUM;
        req.dtype = INA_DT_FLOAT;
        req.nmembers = o.members;
        req.asked = asked;
        return req;
    };
    // Ask for job j's call; false if deferred.
    auto ask = [&](double t, size_t j, uint32_t asked) {
        Job &b = jobs[j];
        if (hosts_only) {
            q.emplace(t + f.host_time(b.spec.bytes), seq++, kEndHosts, j);
            return true;
        }
        Verdict v = sched->decide(request(j, asked));
        if (o.trace) {
            std::fprintf(stderr, "%10.4f job %u call %u asked %u: %s", t, b.jid, b.done, asked,
                         v.kind == Verdict::Kind::kDefer   ? "defer\n"
                         : v.kind == Verdict::Kind::kGrant ? "grant"
                                                           : "deny ");
            if (v.kind == Verdict::Kind::kGrant) {
                std::fprintf(stderr, " %zu Segs\n", v.lease.size());
            } else if (v.kind == Verdict::Kind::kDeny) {
                std::fprintf(stderr, "%s\n", ina_proto_status_name(v.status));
            }
        }
        if (v.kind == Verdict::Kind::kDefer) {
            return false;
        }
        if (v.kind == Verdict::Kind::kGrant) {
            b.lease = std::move(v.lease);
            ++b.r.offloaded;
            q.emplace(t + f.agent_time(b.spec.bytes, b.lease.size()), seq++, kEndAgent, j);
        } else {
            q.emplace(t + f.host_time(b.spec.bytes), seq++, kEndHosts, j);
        }
        return true;
    };
    // The core's tick, while calls are deferred.
    auto schedule_tick = [&](double t) {
        if (!deferred.empty() && !tick_pending) {
            q.emplace(t + std::chrono::duration<double>(sched->tick_interval()).count(), seq++,
                      kTick, 0);
            tick_pending = true;
        }
    };
    // Every deferred call asked again, in the order they were first put off.
    auto retry = [&](double t) {
        const size_t n = deferred.size();
        for (size_t k = 0; k < n; ++k) {
            auto [j, asked] = deferred.front();
            deferred.pop_front();
            if (!ask(t, j, asked)) {
                deferred.emplace_back(j, asked + 1);
            }
        }
        schedule_tick(t);
    };
    while (!q.empty()) {
        const auto [t, s, kind, j] = q.top();
        q.pop();
        now = Clock::time_point{} + secs(t);
        if (kind == kTick) {
            tick_pending = false;
            sched->tick(now);
            retry(t);
            continue;
        }
        Job &b = jobs[j];
        if (kind == kPost) {
            b.posted = t;
            if (!ask(t, j, 0)) {
                deferred.emplace_back(j, 1);
                schedule_tick(t);
            }
            continue;
        }
        // The call ends: the lease back, the members' words, the next call.
        const uint64_t mid = b.done++;
        if (o.trace && sched) {
            std::fprintf(stderr, "%10.4f job %u call %u ends, %.1f ms since its post\n", t, b.jid,
                         static_cast<unsigned>(mid), 1e3 * (t - b.posted));
        }
        if (sched) {
            if (kind == kEndAgent) {
                sched->on_call_done(b.jid, mid, b.lease);
                b.lease.clear();
            } else {
                sched->on_host_cost(b.jid, INA_COLL_ALLREDUCE, b.spec.bytes,
                                    f.host_time(b.spec.bytes));
            }
            if (static_cast<double>(b.spec.bytes) >= kCallTimeMinBytes) {
                sched->on_call_time(b.jid, INA_COLL_ALLREDUCE, b.spec.bytes, t - b.posted);
            }
        }
        if (b.done < o.iters) {
            q.emplace(t + b.spec.compute, seq++, kPost, j);
        } else {
            b.r.jct = t;
            if (sched) {
                sched->on_job_freed(b.jid);
            }
        }
        if (kind == kEndAgent) {
            retry(t); // a lease came back
        }
    }
    std::vector<JobResult> out;
    for (const Job &b : jobs) {
        out.push_back(b.r);
    }
    return out;
}

double mean_jct(const std::vector<JobResult> &r)
{
    double s = 0;
    for (const JobResult &x : r) {
        s += x.jct;
    }
    return r.empty() ? 0 : s / static_cast<double>(r.size());
}

void run_fabric(const Options &o, double host_eff)
{
    const Fabric f{o, host_eff};
    std::vector<size_t> all;
    for (size_t i = 0; i < o.jobs.size(); ++i) {
        all.push_back(i);
    }
    // Each job alone with the agent, and every job on the hosts.
    std::vector<double> solo;
    for (size_t i = 0; i < o.jobs.size(); ++i) {
        solo.push_back(simulate(f, "tdm", {i}).front().jct);
    }
    const std::vector<JobResult> hosts = simulate(f, "hosts", all);
    std::printf("\nhosts at %.0f%% of a link, the agent at %.0f%% (a call alone: %.1f ms on the "
                "agent, %.1f ms on the hosts, %.2fx)\n",
                100 * host_eff, 100 * o.agent_eff, 1e3 * f.agent_time(o.jobs[0].bytes, o.window),
                1e3 * f.host_time(o.jobs[0].bytes),
                f.host_time(o.jobs[0].bytes) / f.agent_time(o.jobs[0].bytes, o.window));
    std::printf("%-12s %9s %9s  %s\n", "system", "mean JCT", "x tdm",
                "each job: JCT s (x alone, x hosts), calls offloaded");
    double tdm = 0;
    std::vector<std::pair<std::string, std::vector<JobResult>>> rows;
    for (const std::string &p : o.policies) {
        rows.emplace_back(p, simulate(f, p, all));
        if (p == "tdm") {
            tdm = mean_jct(rows.back().second);
        }
    }
    rows.emplace_back("hosts", hosts);
    for (const auto &[name, r] : rows) {
        std::string each;
        for (size_t i = 0; i < r.size(); ++i) {
            char b[96];
            std::snprintf(b, sizeof(b), "%s%.2f (%.2f, %.2f) %u", i ? " | " : "", r[i].jct,
                          r[i].jct / solo[i], r[i].jct / hosts[i].jct, r[i].offloaded);
            each += b;
        }
        const double m = mean_jct(r);
        std::printf("%-12s %9.2f %9.2f  %s\n", name.c_str(), m, tdm > 0 ? m / tdm : 0.0,
                    each.c_str());
    }
    double alone = 0;
    for (double s : solo) {
        alone += s;
    }
    std::printf("%-12s %9.2f\n", "each alone", alone / static_cast<double>(solo.size()));
}

[[noreturn]] void usage(int rc)
{
    std::fprintf(rc ? stderr : stdout,
                 "usage: ina_share_sim [--jobs BYTES:COMPUTE_MS,...] [--iters K] [--members M]\n"
                 "         [--window W] [--need N] [--pool-x X] [--line-mbps R] [--agent-eff F]\n"
                 "         [--latency-ms T] [--host-eff F,...] [--policies P,...] [--no-guard]\n"
                 "         [--trace]\n"
                 "Simulates the jobs sharing one agent under each policy (behind the harm\n"
                 "guard unless --no-guard), for each efficiency of the hosts' allreduce\n"
                 "(share of a link) in --host-eff. See bench/engine/README.md.\n");
    std::exit(rc);
}

std::vector<std::string> split(const char *s)
{
    std::vector<std::string> out;
    std::string cur;
    for (const char *p = s;; ++p) {
        if (*p == ',' || *p == '\0') {
            out.push_back(cur);
            cur.clear();
            if (*p == '\0') {
                break;
            }
        } else {
            cur += *p;
        }
    }
    return out;
}

double number(const std::string &s, const char *what)
{
    char *end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !(v > 0)) {
        std::fprintf(stderr, "ina_share_sim: %s wants a positive number, got '%s'\n", what,
                     s.c_str());
        std::exit(2);
    }
    return v;
}

} // namespace

int main(int argc, char **argv)
{
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto val = [&]() -> const char * {
            if (i + 1 >= argc) {
                usage(2);
            }
            return argv[++i];
        };
        if (a == "--jobs") {
            o.jobs.clear();
            for (const std::string &j : split(val())) {
                const size_t c = j.find(':');
                if (c == std::string::npos) {
                    usage(2);
                }
                o.jobs.push_back({static_cast<uint64_t>(number(j.substr(0, c), "--jobs")),
                                  number(j.substr(c + 1), "--jobs") / 1e3});
            }
        } else if (a == "--iters") {
            o.iters = static_cast<uint32_t>(number(val(), "--iters"));
        } else if (a == "--members") {
            o.members = static_cast<uint32_t>(number(val(), "--members"));
        } else if (a == "--window") {
            o.window = static_cast<uint32_t>(number(val(), "--window"));
        } else if (a == "--need") {
            o.need = static_cast<uint32_t>(number(val(), "--need"));
        } else if (a == "--pool-x") {
            o.pool_x = number(val(), "--pool-x");
        } else if (a == "--line-mbps") {
            o.line = number(val(), "--line-mbps") * 1e6 / 8;
        } else if (a == "--agent-eff") {
            o.agent_eff = number(val(), "--agent-eff");
        } else if (a == "--latency-ms") {
            o.latency = std::strtod(val(), nullptr) / 1e3;
        } else if (a == "--host-eff") {
            o.host_effs.clear();
            for (const std::string &h : split(val())) {
                o.host_effs.push_back(number(h, "--host-eff"));
            }
        } else if (a == "--policies") {
            o.policies = split(val());
        } else if (a == "--no-guard") {
            o.guard = false;
        } else if (a == "--trace") {
            o.trace = true;
        } else if (a == "-h" || a == "--help") {
            usage(0);
        } else {
            usage(2);
        }
    }
    if (o.jobs.empty() || o.members < 2 || o.window < 1 || o.iters < 1) {
        usage(2);
    }
    if (o.need == 0 || o.need > o.window) {
        o.need = o.window;
    }
    std::printf("ina_share_sim: %zu jobs, %u iterations, %u members each; window %u Segs (%u for "
                "line rate), pool %u Segs; links %.0f Mbit/s; the agent %.0f ms late%s\n",
                o.jobs.size(), o.iters, o.members, o.window, o.need, Fabric{o, 1}.pool_segs(),
                o.line * 8 / 1e6, o.latency * 1e3,
                o.guard ? "; policies behind the harm guard" : "; no harm guard");
    for (double h : o.host_effs) {
        run_fabric(o, h);
    }
    return 0;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// ina_sched_bench: what one scheduling decision of the agent costs as the
// tenants and jobs on it grow. It drives each policy of switch_agent/sched/
// directly, as the aggregation core does (no sockets, no Aggregator): every
// call of a job asks decide(), then ahead() (the word told with the verdict),
// and a granted call's on_call_done() comes when its lease would be
// released. The clock is simulated (the policies take a `Now` function), so
// the trace, and with it every verdict, is the same on every run; only the
// time the policy's own code takes is measured, with steady_clock around
// each call.
//
// The trace: T tenants, J jobs dealt over them in turn (job j is tenant
// j % T's), each with a window of 8..64 Segs, 2..64 members and allreduces
// of 64 KiB..4 MiB that hold the agent 1 ns per byte when granted. Each job
// calls periodically, so every job's predictor is predictable() after its
// third call. The periods are chosen so that the jobs together offer the
// pool a fixed load (--load: the share of the pool their calls would hold
// on average were every one granted, the sum over jobs of window x hold /
// period over the pool's Segs), whatever their number: an agent's pool does
// not grow with the jobs on it, so more jobs each call less often, and the
// calls a decision must weigh (those open, or predicted while the asking
// one would run) stay as many as the pool holds. Each gap is the period
// plus a uniform jitter (--jitter). The first calls (--warmup per job)
// teach the predictors and are not measured; the next --calls are.
//
// Memory: the program counts the bytes the scheduler's code asks of
// operator new (a header in front of every allocation says whether it was
// made inside a scheduler call, and its size): after the measured calls the
// open calls are finished, so what is left is the policy's state for the T
// tenants and J jobs. It is the bytes requested, exact, without malloc's own
// overhead per block.
//
// A digest of every verdict (job, call, kind, status, lease size, ahead) is
// printed with each run: two builds that decide alike print the same one.
// It never asserts on time.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <queue>
#include <random>
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

// --- Counting allocator ------------------------------------------------------
// Every allocation of the program carries a header: its size, and whether it
// was made while a scheduler call ran (g_in_sched). The scheduler's live bytes
// are those of tagged blocks not yet freed, wherever they are freed.
namespace {

struct alignas(std::max_align_t) AllocHeader {
    size_t size;
    bool sched;
};

bool g_in_sched = false;
int64_t g_sched_live = 0; // bytes of tagged blocks alive

void *counted_alloc(size_t size)
{
    void *raw = std::malloc(sizeof(AllocHeader) + size);
    if (raw == nullptr) {
        return nullptr;
    }
    auto *h = static_cast<AllocHeader *>(raw);
    h->size = size;
    h->sched = g_in_sched;
    if (h->sched) {
        g_sched_live += static_cast<int64_t>(size);
    }
    return h + 1;
}

// Out of line: inlined into operator delete, GCC takes the header's free()
// for a free() of what operator new returned (-Wmismatched-new-delete).
[[gnu::noinline]] void counted_free(void *p) noexcept
{
    if (p == nullptr) {
        return;
    }
    auto *h = static_cast<AllocHeader *>(p) - 1;
    if (h->sched) {
        g_sched_live -= static_cast<int64_t>(h->size);
    }
    std::free(h);
}

// Marks the scheduler calls in its scope (allocations inside are the policy's).
struct InSched {
    InSched() { g_in_sched = true; }
    ~InSched() { g_in_sched = false; }
};

} // namespace

void *operator new(size_t size)
{
    if (void *p = counted_alloc(size)) {
        return p;
    }
    throw std::bad_alloc();
}
void *operator new[](size_t size)
{
    return operator new(size);
}
void *operator new(size_t size, const std::nothrow_t &) noexcept
{
    return counted_alloc(size);
}
void *operator new[](size_t size, const std::nothrow_t &) noexcept
{
    return counted_alloc(size);
}
void operator delete(void *p) noexcept
{
    counted_free(p);
}
void operator delete[](void *p) noexcept
{
    counted_free(p);
}
void operator delete(void *p, size_t) noexcept
{
    counted_free(p);
}
void operator delete[](void *p, size_t) noexcept
{
    counted_free(p);
}
void operator delete(void *p, const std::nothrow_t &) noexcept
{
    counted_free(p);
}
void operator delete[](void *p, const std::nothrow_t &) noexcept
{
    counted_free(p);
}

namespace {

using ina::agg::CallRequest;
using ina::agg::Clock;
using ina::agg::JobInfo;
using ina::agg::Scheduler;
using ina::agg::SegPool;
using ina::agg::Verdict;

struct Options {
    std::vector<std::string> policies{"tdm", "exclusive", "partition", "fcfs"};
    std::vector<std::pair<uint32_t, uint32_t>> sizes{{10, 100}, {100, 1000}, {1000, 10000}};
    uint64_t calls = 100000;      // measured decisions per run
    uint32_t warmup = 4;          // unmeasured calls per job first
    double load = 0.8;            // the share of the pool the calls hold, all granted
    double jitter = 100e-6;       // seconds, or a fraction of the period:
    bool jitter_relative = false; // ... when given with '%'
    uint32_t segs = 1024;         // the agent's default pool (aggregator.h)
    uint64_t seed = 1;
    std::chrono::milliseconds idle{1000}; // exclusive, partition: ina-switchd's default
};

constexpr double kSecondsPerByte = 1e-9; // a granted call holds the agent 1 ns per byte

struct BenchJob {
    uint32_t jid;
    uint64_t tenant;
    uint32_t window;
    uint32_t members;
    uint64_t bytes;
    double period;
    double jitter;
    uint64_t mid = 0;                               // the next call's
    std::map<uint64_t, std::vector<uint32_t>> open; // granted calls: mid -> lease
};

// A trace of J jobs over T tenants, the same for every policy of a run.
std::vector<BenchJob> make_jobs(const Options &o, uint32_t tenants, uint32_t jobs)
{
    std::mt19937_64 rng(o.seed * 1000003 + jobs * 31 + tenants);
    std::vector<BenchJob> out;
    out.reserve(jobs);
    for (uint32_t j = 0; j < jobs; ++j) {
        BenchJob b{};
        b.jid = j + 1;
        b.tenant = 1 + j % tenants;
        b.window = 8u << (rng() % 4);             // 8..64
        b.members = 2u << (rng() % 6);            // 2..64
        b.bytes = uint64_t{65536} << (rng() % 7); // 64 KiB..4 MiB
        const double hold = static_cast<double>(b.bytes) * kSecondsPerByte;
        // Each job's share of the load (window x hold / period, in Segs),
        // within a factor of 3 of the others'.
        const double share = std::uniform_real_distribution<double>(0.5, 1.5)(rng);
        b.period = b.window * hold * jobs / (o.load * share * o.segs);
        b.jitter = o.jitter_relative ? o.jitter * b.period : o.jitter;
        out.push_back(std::move(b));
    }
    return out;
}

std::unique_ptr<Scheduler> make_policy(const std::string &name, SegPool &pool, const Options &o,
                                       const std::function<Clock::time_point()> &now)
{
    const std::string guarded = "+guard";
    if (name.size() > guarded.size() &&
        name.compare(name.size() - guarded.size(), guarded.size(), guarded) == 0) {
        // The policy behind the harm guard, as ina-switchd runs it by default.
        std::unique_ptr<Scheduler> policy =
            make_policy(name.substr(0, name.size() - guarded.size()), pool, o, now);
        if (policy == nullptr) {
            return nullptr;
        }
        return std::make_unique<ina::sched::HarmGuard>(pool, std::move(policy),
                                                       ina::sched::GuardConfig{}, now);
    }
    if (name == "tdm" || name == "auto") {
        // (auto without waiting: this loop does not ask deferred calls again)
        ina::sched::TdmConfig cfg;
        cfg.by_need = name == "auto";
        return std::make_unique<ina::sched::TdmScheduler>(pool, cfg, now);
    }
    if (name == "exclusive") {
        return std::make_unique<ina::sched::ExclusiveScheduler>(pool, o.idle, now);
    }
    if (name == "partition") {
        return std::make_unique<ina::sched::PartitionScheduler>(pool, o.idle, now);
    }
    if (name == "fcfs") {
        return std::make_unique<ina::sched::FreeSegScheduler>(pool);
    }
    return nullptr;
}

struct Result {
    double decide_ns = 0;
    double ahead_ns = 0;
    double done_ns = 0;
    double granted = 0; // fraction of measured calls
    int64_t bytes = 0;  // the policy's state after the run
    int64_t left = 0;   // what it still holds once every job is freed
    uint64_t digest = 0;
};

// FNV-1a over the verdicts.
struct Digest {
    uint64_t h = 1469598103934665603ull;
    void add(uint64_t v)
    {
        for (int i = 0; i < 8; ++i) {
            h ^= (v >> (8 * i)) & 0xff;
            h *= 1099511628211ull;
        }
    }
};

Clock::duration secs(double s)
{
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

int64_t ns_since(Clock::time_point t0)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

Result run(const Options &o, const std::string &policy, uint32_t tenants, uint32_t njobs)
{
    std::vector<BenchJob> jobs = make_jobs(o, tenants, njobs);
    std::mt19937_64 rng(o.seed);
    SegPool pool(o.segs, 65536);
    Clock::time_point now{};
    std::unique_ptr<Scheduler> sched;
    {
        InSched in;
        sched = make_policy(policy, pool, o, [&now] { return now; });
    }
    if (!sched) {
        std::fprintf(stderr, "ina_sched_bench: unknown policy %s\n", policy.c_str());
        std::exit(2);
    }
    for (const BenchJob &j : jobs) {
        InSched in;
        sched->on_job_created(JobInfo{j.jid, j.members, j.members, j.window, j.tenant});
    }
    // Events: (time, sequence, job, call: the mid that ends, or arrival).
    constexpr uint64_t kArrive = UINT64_MAX;
    using Ev = std::tuple<double, uint64_t, uint32_t, uint64_t>;
    std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> q;
    uint64_t seq = 0;
    for (uint32_t i = 0; i < njobs; ++i) {
        q.emplace(std::uniform_real_distribution<double>(0, jobs[i].period)(rng), seq++, i,
                  kArrive);
    }
    const uint64_t warm = uint64_t{o.warmup} * njobs;
    uint64_t calls = 0;
    uint64_t granted = 0;
    int64_t decide_ns = 0, ahead_ns = 0, done_ns = 0;
    uint64_t dones = 0;
    Digest digest;
    while (calls < warm + o.calls) {
        const auto [t, s, i, mid] = q.top();
        q.pop();
        now = Clock::time_point{} + secs(t);
        BenchJob &j = jobs[i];
        const bool measured = calls >= warm;
        if (mid != kArrive) {
            auto it = j.open.find(mid);
            Clock::time_point t0 = Clock::now();
            {
                InSched in;
                sched->on_call_done(j.jid, mid, it->second);
            }
            if (measured) {
                done_ns += ns_since(t0);
                ++dones;
            }
            j.open.erase(it);
            continue;
        }
        CallRequest req{j.jid,      j.mid,        j.window,  j.bytes / 4, INA_COLL_ALLREDUCE,
                        INA_OP_SUM, INA_DT_INT32, j.members, 0,           j.tenant};
        Clock::time_point t0 = Clock::now();
        Verdict v;
        {
            InSched in;
            v = sched->decide(req);
        }
        const int64_t d_ns = ns_since(t0);
        t0 = Clock::now();
        uint32_t ahead;
        {
            InSched in;
            ahead = sched->ahead(j.jid, j.window);
        }
        const int64_t a_ns = ns_since(t0);
        if (measured) {
            decide_ns += d_ns;
            ahead_ns += a_ns;
        }
        digest.add(j.jid);
        digest.add(j.mid);
        digest.add(static_cast<uint64_t>(v.kind));
        digest.add(static_cast<uint64_t>(v.status));
        digest.add(v.lease.size());
        digest.add(ahead);
        if (v.kind == Verdict::Kind::kGrant) {
            granted += measured;
            j.open.emplace(j.mid, std::move(v.lease));
            q.emplace(t + static_cast<double>(j.bytes) * kSecondsPerByte, seq++, i, j.mid);
        } else if (v.kind == Verdict::Kind::kDefer) {
            // Not asked again here: it ends at once, as a deferred call the
            // core gives up on (its job's other calls go on).
            std::vector<uint32_t> none;
            InSched in;
            sched->on_call_done(j.jid, j.mid, none);
        }
        ++j.mid;
        ++calls;
        const double gap =
            j.period + std::uniform_real_distribution<double>(-j.jitter, j.jitter)(rng);
        q.emplace(t + std::max(gap, 0.0), seq++, i, kArrive);
    }
    // Finish the open calls: what the policy then holds is its state.
    for (BenchJob &j : jobs) {
        for (auto &[mid, lease] : j.open) {
            InSched in;
            sched->on_call_done(j.jid, mid, lease);
        }
        j.open.clear();
    }
    Result r;
    r.decide_ns = static_cast<double>(decide_ns) / static_cast<double>(o.calls);
    r.ahead_ns = static_cast<double>(ahead_ns) / static_cast<double>(o.calls);
    r.done_ns = dones ? static_cast<double>(done_ns) / static_cast<double>(dones) : 0;
    r.granted = static_cast<double>(granted) / static_cast<double>(o.calls);
    r.bytes = g_sched_live;
    for (const BenchJob &j : jobs) {
        InSched in;
        sched->on_job_freed(j.jid);
    }
    r.left = g_sched_live;
    r.digest = digest.h;
    {
        InSched in;
        sched.reset();
    }
    return r;
}

// What one clock read costs: about one is included in every figure (the
// reads before and after a call each count partly).
double clock_read_ns()
{
    constexpr int kReps = 200000;
    const Clock::time_point t0 = Clock::now();
    int64_t sum = 0;
    for (int i = 0; i < kReps; ++i) {
        sum += Clock::now().time_since_epoch().count() & 1;
    }
    const double ns = static_cast<double>(ns_since(t0)) / kReps;
    return sum >= 0 ? ns : 0; // uses sum: the reads stay
}

std::vector<std::string> split(const std::string &s, char sep)
{
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
        const size_t end = s.find(sep, start);
        out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) {
            break;
        }
        start = end + 1;
    }
    return out;
}

[[noreturn]] void usage(int rc)
{
    std::fprintf(
        rc ? stderr : stdout,
        "usage: ina_sched_bench [options]\n"
        "  --policy LIST   policies, comma separated (default tdm,exclusive,partition,fcfs;\n"
        "                  auto too, without waiting; NAME+guard: behind the harm guard)\n"
        "  --sizes LIST    T:J pairs, tenants:jobs (default 10:100,100:1000,1000:10000)\n"
        "  --calls N       measured decisions per run (default 100000)\n"
        "  --warmup N      unmeasured calls per job first (default 4)\n"
        "  --load X        the share of the pool the calls would hold, every one\n"
        "                  granted: sum of window x hold / period / Segs (default 0.8)\n"
        "  --jitter X      each gap's jitter: seconds (default 100e-6), or X%% of\n"
        "                  the job's period\n"
        "  --segs N        Segs in the pool (default 1024)\n"
        "  --seed N        the trace's seed (default 1)\n");
    std::exit(rc);
}

Options parse(int argc, char **argv)
{
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            usage(0);
        }
        if (i + 1 >= argc) {
            usage(2);
        }
        const std::string v = argv[++i];
        if (a == "--policy") {
            o.policies = split(v, ',');
        } else if (a == "--sizes") {
            o.sizes.clear();
            for (const std::string &p : split(v, ',')) {
                unsigned t = 0, j = 0;
                if (std::sscanf(p.c_str(), "%u:%u", &t, &j) != 2 || t == 0 || j == 0) {
                    usage(2);
                }
                o.sizes.emplace_back(t, j);
            }
        } else if (a == "--calls") {
            o.calls = std::strtoull(v.c_str(), nullptr, 10);
        } else if (a == "--warmup") {
            o.warmup = static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
        } else if (a == "--load") {
            o.load = std::strtod(v.c_str(), nullptr);
        } else if (a == "--jitter") {
            o.jitter_relative = !v.empty() && v.back() == '%';
            o.jitter = std::strtod(v.c_str(), nullptr) / (o.jitter_relative ? 100 : 1);
        } else if (a == "--segs") {
            o.segs = static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
        } else if (a == "--seed") {
            o.seed = std::strtoull(v.c_str(), nullptr, 10);
        } else {
            usage(2);
        }
    }
    if (o.calls == 0 || o.load <= 0 || o.segs < 64) {
        usage(2);
    }
    return o;
}

} // namespace

int main(int argc, char **argv)
{
    const Options o = parse(argc, argv);
    std::printf("# ina_sched_bench: %llu measured calls per run after %u per job, load %.2f, "
                "jitter %g%s, %u Segs\n",
                static_cast<unsigned long long>(o.calls), o.warmup, o.load,
                o.jitter_relative ? o.jitter * 100 : o.jitter,
                o.jitter_relative ? "% of the period" : " s", o.segs);
    std::printf("# ns: mean per call, about one clock read included (%.0f ns); bytes: the "
                "policy's state after the run\n",
                clock_read_ns());
    std::printf("%-9s %7s %7s %9s %8s %8s %8s %10s %10s %8s  %s\n", "policy", "tenants", "jobs",
                "decide_ns", "ahead_ns", "done_ns", "granted", "bytes/job", "bytes/tnt", "left",
                "digest");
    for (const std::string &policy : o.policies) {
        for (const auto &[tenants, njobs] : o.sizes) {
            const Result r = run(o, policy, tenants, njobs);
            std::printf("%-9s %7u %7u %9.0f %8.0f %8.0f %7.1f%% %10.0f %10.0f %8" PRId64
                        "  %016" PRIx64 "\n",
                        policy.c_str(), tenants, njobs, r.decide_ns, r.ahead_ns, r.done_ns,
                        100 * r.granted, static_cast<double>(r.bytes) / njobs,
                        static_cast<double>(r.bytes) / tenants, r.left, r.digest);
            std::fflush(stdout);
        }
    }
    return 0;
}

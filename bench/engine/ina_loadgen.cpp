// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// ina_loadgen: load generator for ina-switchd without MPI. It plays P ranks
// (processes, one client connection each) in J jobs (every process is a
// member of every job), runs N float-sum allreduces of S bytes on each job
// through the client engine, checks every result against a reference it
// computes itself, and reports what went through the agent: blocks/s and
// bytes/s into the agent, allreduces/s, and per-call latency percentiles.
//
// Roles: process p is rank (p + j) % P of job j, so the jobs' rank 0 (which
// hands its ina_job_params_t to the parent through shared memory) and the
// rank order of the agent's reductions differ from job to job. In a tree a
// process stays at its leaf (one connection), so the rotation is within the
// leaf: the k-th of a leaf's K processes is that leaf's rank (k + j) % K,
// and the leaves hold consecutive ranks in tree order.
//
// Agents: one (spawned, or -a H:P), or several (-N A spawns A, or -a lists
// them H:P,H:P,...): every job is then striped over all of them
// (ina_stripe_*: block k of a call to agent k mod A), and the spawned
// agents' CPU time per block is reported.
// Or a tree of spawned agents (--tree L): a spine and L leaves under it
// (--parent), the P processes split over the leaves in consecutive blocks of
// P/L, each connected to its leaf only; every job is a tree job
// (INA_JOB_OPEN_TREE), so each leaf sends one partial per block up and fans
// the spine's RESULT out. --spines S adds a level: a core, S spines under
// it, L/S leaves under each spine. The agents' CPU per block is then also
// reported per level.
//
// Modes:
//   default      blocking calls (ina_job_allreduce): for call i, job 0, 1, ...,
//                J-1 in turn; the same order on every process (a blocking
//                call waits for all members, so any other order deadlocks).
//   --overlap    the J calls of step i are posted together (ina_job_post) and
//                then waited for, so the jobs' calls overlap at the agent.
//
// Inputs are small integers stored as floats, so every sum is exact whatever
// the order of the reduction: the reference (the integer sum) is independent
// of the agent's order and of ina_reduce. Inputs alternate between two
// variants from call to call, and the receive buffer is poisoned (NaN) before
// every call, so a stale or missing block is caught. Filling, poisoning and
// checking happen outside the timed call, but inside the wall-clock window
// that the aggregate rates use (they are cheap next to a call).
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <functional>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ina_client.h"
#include "ina_config.h"

#ifndef INA_LOADGEN_SWITCHD
#define INA_LOADGEN_SWITCHD "ina-switchd"
#endif

namespace ina {
namespace {

constexpr uint32_t kMaxProcs = 256;
constexpr uint32_t kMaxJobs = 64;
constexpr uint64_t kMaxSamples = uint64_t{1} << 26; // latency samples kept (256 MiB)

struct Options {
    uint32_t procs = 2;
    uint32_t jobs = 1;
    uint64_t calls = 100;
    uint64_t warmup = 2;
    uint64_t bytes = 1u << 20;
    uint32_t window = 0;      // 0: the agent's maximum
    uint32_t block = 0;       // 0: one Seg
    unsigned timeout_s = 300; // whole run, then every process is killed
    int rndv_bytes = 0;       // ina_client_config_t::rndv_bytes (0: never)
    bool overlap = false;
    int verbose = 0;
    std::string agent;        // host:port[,host:port...]; empty: spawn them
    uint32_t agents = 1;      // agents to spawn when none is named
    uint32_t leaves = 0;      // --tree: leaf agents (0: no tree)
    uint32_t spines = 0;      // --spines: agents between the leaves and a core (0: none)
    std::string switchd;
    std::vector<std::string> agent_args;
};

double now_s()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// What each process reports back to the parent.
struct ProcStats {
    double t_start;     // after the start barrier
    double t_end;       // after its last call
    uint64_t granted;   // calls the agent aggregated (and that were checked)
    uint64_t denied;
    uint64_t wrong;     // granted calls with a wrong result
    uint64_t blocks;    // blocks this process sent in measured granted calls
    int rc;             // first fatal engine rc, INA_OK if none
};

// One anonymous shared mapping, laid out as: a process-shared barrier, the
// jobs' parameters, per-process stats, latency samples.
class SharedRegion {
public:
    SharedRegion(uint32_t procs, uint32_t jobs, uint64_t samples_per_proc)
        : procs_(procs), samples_per_proc_(samples_per_proc)
    {
        off_params_ = align(sizeof(pthread_barrier_t));
        off_stats_ = align(off_params_ + jobs * sizeof(ina_job_params_t));
        off_lat_ = align(off_stats_ + procs * sizeof(ProcStats));
        bytes_ = off_lat_ + procs * samples_per_proc * sizeof(float);
        void *p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            std::perror("ina_loadgen: mmap");
            std::exit(1);
        }
        base_ = static_cast<char *>(p);
        pthread_barrierattr_t a;
        pthread_barrierattr_init(&a);
        pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_barrier_init(barrier(), &a, procs);
        pthread_barrierattr_destroy(&a);
    }
    ~SharedRegion()
    {
        pthread_barrier_destroy(barrier());
        munmap(base_, bytes_);
    }
    SharedRegion(const SharedRegion &) = delete;
    SharedRegion &operator=(const SharedRegion &) = delete;

    pthread_barrier_t *barrier() { return reinterpret_cast<pthread_barrier_t *>(base_); }
    ina_job_params_t *params() { return reinterpret_cast<ina_job_params_t *>(base_ + off_params_); }
    ProcStats *stats() { return reinterpret_cast<ProcStats *>(base_ + off_stats_); }
    float *latencies(uint32_t proc)
    {
        return reinterpret_cast<float *>(base_ + off_lat_) + proc * samples_per_proc_;
    }
    uint32_t procs() const { return procs_; }
    void wait() { pthread_barrier_wait(barrier()); }

private:
    static size_t align(size_t off) { return (off + 63) & ~size_t{63}; }
    uint32_t procs_;
    uint64_t samples_per_proc_;
    size_t off_params_ = 0, off_stats_ = 0, off_lat_ = 0, bytes_ = 0;
    char *base_ = nullptr;
};

// Input element e of `rank` in job j, variant v: an integer in [0, 255].
inline uint32_t input(uint32_t rank, uint32_t j, uint32_t v, uint64_t e)
{
    uint64_t x = e * 0x9e3779b97f4a7c15ull + (uint64_t{rank} << 40) + (uint64_t{j} << 20) + v;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return static_cast<uint32_t>(x >> 56);
}

constexpr uint32_t kVariants = 2;

struct JobData {
    ina_job_t *job = nullptr;       // one agent
    ina_stripe_t *stripe = nullptr; // or striped over several
    uint32_t rank = 0;
    std::vector<float> in[kVariants];       // this rank's inputs
    std::vector<float> expected[kVariants]; // sum over every rank, exact
    std::vector<float> out;
};

[[noreturn]] void die(uint32_t proc, const char *what, int rc)
{
    std::fprintf(stderr, "ina_loadgen: process %u: %s (rc %d)\n", proc, what, rc);
    std::fflush(stderr);
    std::_Exit(3);
}

// Poison, check: both outside the timed call.
void poison(std::vector<float> &out) { std::memset(out.data(), 0xff, out.size() * sizeof(float)); }

bool check(const std::vector<float> &out, const std::vector<float> &expected)
{
    return std::memcmp(out.data(), expected.data(), out.size() * sizeof(float)) == 0;
}

// The body of one simulated rank. Exits the process. `addrs`: the agents
// every process talks to (one, or a stripe's), or in a tree the leaves, of
// which each process talks to its own.
[[noreturn]] void proc_main(const Options &o, const std::vector<std::string> &addrs,
                           SharedRegion &sh, uint32_t p)
{
    alarm(o.timeout_s); // a wedged run dies instead of hanging (SIGALRM kills)
    const uint32_t P = o.procs, J = o.jobs;
    const uint64_t n = o.bytes / sizeof(float);
    // Without a tree everyone is at "leaf" 0 of P ranks, and the formulas
    // below give the flat roles.
    const bool tree = o.leaves > 0;
    const uint32_t K = tree ? P / o.leaves : P; // ranks at each leaf
    const uint32_t leaf = p / K, at_leaf = p % K;
    const std::vector<std::string> mine =
        tree ? std::vector<std::string>{addrs[leaf]} : addrs;
    const uint32_t A = static_cast<uint32_t>(mine.size());

    ina_client_config_t cfg{}; // fields not set here: 0, the engine's defaults
    cfg.connect_timeout_ms = 10000;
    cfg.progress_timeout_ms = 30000;
    cfg.verbose = o.verbose;
    cfg.rndv_bytes = o.rndv_bytes;
    std::vector<ina_client_t *> clients(A, nullptr);
    char err[256] = "";
    int rc = INA_OK;
    for (uint32_t k = 0; k < A; ++k) {
        cfg.agent_addr = mine[k].c_str();
        rc = ina_client_connect(&cfg, &clients[k], err, sizeof(err));
        if (rc != INA_OK) {
            std::fprintf(stderr, "ina_loadgen: process %u: connect to %s: %s\n", p,
                         mine[k].c_str(), err);
            std::_Exit(2);
        }
    }

    // Inputs and references, before anything is timed.
    std::vector<JobData> jobs(J);
    for (uint32_t j = 0; j < J; ++j) {
        JobData &jd = jobs[j];
        jd.rank = leaf * K + (at_leaf + j) % K; // flat: (p + j) % P
        jd.out.resize(n);
        for (uint32_t v = 0; v < kVariants; ++v) {
            jd.in[v].resize(n);
            jd.expected[v].resize(n);
            for (uint64_t e = 0; e < n; ++e) {
                uint32_t sum = 0;
                for (uint32_t r = 0; r < P; ++r) sum += input(r, j, v, e);
                jd.in[v][e] = static_cast<float>(input(jd.rank, j, v, e));
                jd.expected[v][e] = static_cast<float>(sum); // < 2^24: exact
            }
        }
    }

    // Every member opens every job by key (this run's parent and the job's index).
    std::vector<uint32_t> nodes(K);
    for (uint32_t i = 0; i < K; ++i) nodes[i] = i; // one rank per node
    // A tree job names the leaf's place under its spine, and the spine's
    // under the core: ina_topology_place derives them from the agents above
    // every rank, numbered level-major as ina_topology_plan would (level 0
    // the rank's leaf, level 1 its spine). Every rank of a leaf has the
    // same places, whatever the job's rotation within the leaf.
    const uint32_t levels = o.spines > 0 ? 2 : 1;
    ina_proto_tree_level_t place[2] = {};
    if (tree) {
        std::vector<uint32_t> groups(size_t{levels} * P);
        for (uint32_t r = 0; r < P; ++r) {
            groups[r] = r / K;
            if (levels > 1) groups[P + r] = r / (K * (o.leaves / o.spines));
        }
        ina_topology_place(groups.data(), P, levels, leaf * K, place);
    }
    const uint64_t run = static_cast<uint64_t>(getppid());
    for (uint32_t j = 0; j < J; ++j) {
        ina_job_key_t key;
        ina_job_key_init(&key);
        ina_job_key_add(&key, "ina_loadgen", 11);
        ina_job_key_add(&key, &run, sizeof(run));
        ina_job_key_add(&key, &j, sizeof(j));
        // The capability's secret: the processes of this run share it (as
        // an MPI job's share their launcher's); here, simply the run's id.
        uint8_t secret[16] = {};
        std::memcpy(secret, &run, std::min(sizeof(run), sizeof(secret)));
        ina_job_key_seal(&key, secret);
        ina_job_params_t params{};
        if (A > 1) {
            rc = ina_stripe_open(clients.data(), A, &key, P, nodes.data(), jobs[j].rank,
                                 o.window, o.block, &params, &jobs[j].stripe);
        } else {
            ina_job_open_params_t op{};
            op.mask = INA_JOB_OPEN_SHAPE;
            op.key = &key;
            op.nmembers = K;
            op.node_of_member = nodes.data();
            op.rank = jobs[j].rank - leaf * K;
            op.window = o.window;
            op.block_bytes = o.block;
            if (tree) {
                op.mask |= INA_JOB_OPEN_TREE;
                op.leaf = place[0].group;
                op.nleaves = place[0].groups;
                op.comm_rank = jobs[j].rank;
                op.comm_size = P;
                op.above = place + 1;
                op.nabove = levels - 1;
            }
            rc = ina_job_open(clients[0], &op, &params, &jobs[j].job);
        }
        if (rc != INA_OK) die(p, "opening a job failed", rc);
        if (jobs[j].rank == 0) sh.params()[j] = params;
    }
    sh.wait(); // every member joined before any block flows

    ProcStats &st = sh.stats()[p];
    st = ProcStats{};
    float *lat = sh.latencies(p);
    uint64_t nlat = 0;
    std::vector<ina_call_t *> calls(J, nullptr);
    std::vector<ina_stripe_call_t *> scalls(J, nullptr);
    std::vector<double> t_post(J, 0.0);
    std::vector<char> granted(J, 0);

    for (uint64_t i = 0; i < o.warmup + o.calls && st.rc == INA_OK; ++i) {
        const bool measured = i >= o.warmup;
        if (i == o.warmup) {
            sh.wait(); // the measured phase starts together
            st.t_start = now_s();
        }
        const uint32_t v = static_cast<uint32_t>(i % kVariants);
        for (uint32_t j = 0; j < J && st.rc == INA_OK; ++j) {
            JobData &jd = jobs[j];
            poison(jd.out);
            granted[j] = 0;
            ina_cqe_t cqe{};
            ina_outcome_t outcome = INA_OFFLOADED;
            const ina_coll_desc_t desc{INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_FLOAT,
                                       jd.in[v].data(), jd.out.data(), n, 0, nullptr};
            if (!o.overlap) {
                const double t0 = now_s();
                rc = jd.stripe != nullptr ? ina_stripe_run(jd.stripe, &desc, &cqe)
                                          : ina_job_allreduce(jd.job, jd.in[v].data(),
                                                              jd.out.data(), n, INA_DT_FLOAT,
                                                              INA_OP_SUM, &cqe);
                const double dt = now_s() - t0;
                outcome = cqe.outcome;
                if (rc == INA_OK && outcome == INA_OFFLOADED) {
                    granted[j] = 1;
                    if (measured) {
                        st.blocks += cqe.blocks;
                        if (nlat < kMaxSamples / P) lat[nlat++] = static_cast<float>(dt * 1e6);
                    }
                }
            } else {
                t_post[j] = now_s();
                calls[j] = nullptr;
                scalls[j] = nullptr;
                rc = jd.stripe != nullptr
                         ? ina_stripe_post(jd.stripe, &desc, 1, &scalls[j], &outcome)
                         : ina_job_post(jd.job, &desc, &calls[j], &outcome);
            }
            if (rc != INA_OK) {
                st.rc = rc;
            } else if (outcome == INA_FALLBACK_UNREACHABLE) {
                st.rc = INA_ERR_UNREACHABLE; // the agent is gone: the run is over
            } else if (outcome == INA_FALLBACK_DENIED) {
                st.denied += measured ? 1 : 0;
            }
        }
        if (o.overlap) {
            for (uint32_t j = 0; j < J; ++j) {
                if (calls[j] == nullptr && scalls[j] == nullptr) continue;
                ina_cqe_t cqe{};
                if (scalls[j] != nullptr) {
                    rc = ina_stripe_call_wait(scalls[j], &cqe);
                    ina_stripe_call_free(scalls[j]);
                    scalls[j] = nullptr;
                } else {
                    rc = ina_call_wait(calls[j], &cqe);
                    ina_call_free(calls[j]);
                    calls[j] = nullptr;
                }
                const double dt = now_s() - t_post[j];
                if (rc == INA_OK && cqe.outcome == INA_OFFLOADED) {
                    granted[j] = 1;
                    if (measured) {
                        st.blocks += cqe.blocks;
                        if (nlat < kMaxSamples / P) lat[nlat++] = static_cast<float>(dt * 1e6);
                    }
                } else if (st.rc == INA_OK) {
                    st.rc = rc != INA_OK ? rc : INA_ERR_PROTO; // a granted call cannot fall back
                }
            }
        }
        for (uint32_t j = 0; j < J; ++j) {
            if (!granted[j]) continue;
            st.granted += measured ? 1 : 0;
            if (!check(jobs[j].out, jobs[j].expected[v])) {
                ++st.wrong; // warm-up calls count too: a wrong result is wrong
                if (st.wrong == 1) {
                    std::fprintf(stderr,
                                 "ina_loadgen: process %u: wrong result, job %u call %" PRIu64 "\n", p,
                                 j, i);
                }
            }
        }
    }
    st.t_end = now_s();
    if (o.calls == 0) st.t_start = st.t_end;
    if (st.rc != INA_OK) die(p, "engine failure in a call", st.rc);

    sh.wait(); // nobody leaves while another member may still need the agent
    for (JobData &jd : jobs) {
        if (jd.stripe != nullptr) {
            ina_stripe_leave(jd.stripe);
        } else {
            ina_job_leave(jd.job);
        }
    }
    for (ina_client_t *c : clients) ina_client_disconnect(c);
    std::fflush(stdout);
    std::_Exit(0); // wrong results are reported by the parent, not as a failure here
}

// Wait for every rank process until the deadline; on the first failure or at
// the deadline kill the rest (they would wait forever on a dead member).
// Waits for these pids only: the spawned agent is ina_agent_stop's to reap.
// `tick` runs on every round (the parent's sampling of the agents' CPU).
int reap(std::vector<pid_t> &pids, double deadline, const std::function<void()> &tick)
{
    int failed = 0;
    size_t left = pids.size();
    bool killed = false;
    while (left > 0) {
        for (size_t r = 0; r < pids.size(); ++r) {
            int st = 0;
            if (pids[r] <= 0 || waitpid(pids[r], &st, WNOHANG) != pids[r]) continue;
            pids[r] = -1;
            --left;
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                if (!killed) {
                    std::fprintf(stderr, "ina_loadgen: process %zu %s %d\n", r,
                                 WIFSIGNALED(st) ? "killed by signal" : "exited with",
                                 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
                }
                ++failed;
            }
        }
        if (left > 0 && !killed && (failed > 0 || now_s() > deadline)) {
            if (failed == 0) std::fprintf(stderr, "ina_loadgen: timed out, killing the ranks\n");
            for (pid_t c : pids) {
                if (c > 0) kill(c, SIGKILL);
            }
            killed = true;
        }
        const timespec nap{0, 10 * 1000 * 1000}; // the parent idles; the ranks work
        nanosleep(&nap, nullptr);
        tick();
    }
    return failed + (killed && failed == 0 ? 1 : 0);
}

double percentile(const std::vector<float> &sorted, double q)
{
    if (sorted.empty()) return 0.0;
    size_t idx = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
    idx = std::min(std::max<size_t>(idx, 1), sorted.size()) - 1;
    return sorted[idx];
}

bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out, bool suffix)
{
    if (s == nullptr || *s == '\0' || *s == '-') return false;
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s, &end, 10);
    if (errno != 0 || end == s) return false;
    if (suffix) {
        unsigned shift = 0;
        switch (*end) {
        case 'K': case 'k': shift = 10; ++end; break;
        case 'M': case 'm': shift = 20; ++end; break;
        case 'G': case 'g': shift = 30; ++end; break;
        default: break;
        }
        if (shift != 0 && v > (~0ull >> shift)) return false;
        v <<= shift;
    }
    if (*end != '\0' || v < lo || v > hi) return false;
    *out = v;
    return true;
}

void usage(FILE *f)
{
    std::fprintf(f,
        "usage: ina_loadgen [options]\n"
        "  -p, --procs P       ranks = client processes (default 2, at most %u)\n"
        "  -j, --jobs J        jobs, every process a member of each (default 1, at most %u)\n"
        "  -n, --calls N       measured allreduces per job (default 100)\n"
        "  -W, --warmup N      unmeasured (but checked) allreduces per job first (default 2)\n"
        "  -s, --bytes S       bytes per allreduce, float sum, K/M/G suffixes (default 1M)\n"
        "  -w, --window W      window requested at job creation (default 0: agent's maximum)\n"
        "  -b, --block B       block bytes requested at job creation (default 0: one Seg)\n"
        "  -o, --overlap       post the J calls of a step together (ina_job_post), then wait\n"
        "  -a, --agent H:P     use a running ina-switchd instead of spawning one; a list\n"
        "                      H:P,H:P,... stripes every job over those agents\n"
        "  -N, --agents A      spawn A agents and stripe every job over them (default 1)\n"
        "  -L, --tree L        spawn a tree instead: a spine and L leaves under it (L >= 2);\n"
        "                      the P procs (a multiple of L) split over the leaves in\n"
        "                      consecutive blocks, every job a tree job\n"
        "  -S, --spines S      with --tree: a core, S spines under it, L/S leaves under\n"
        "                      each spine (L a multiple of S)\n"
        "  -d, --switchd PATH  daemon to spawn (default $INA_SWITCHD, else\n"
        "                      %s)\n"
        "  -A, --agent-arg ARG extra argument for the spawned daemon (repeatable),\n"
        "                      e.g. -A --segs -A 4096\n"
        "  -t, --timeout SEC   kill the run after SEC seconds (default 300)\n"
        "  -R, --rndv-bytes N  RESULTs of N bytes or more by rendezvous (the client's\n"
        "                      HELLO; default 0: never). Blocks: -A --rndv-bytes -A N\n"
        "  -v, --verbose       engine messages on stderr (repeat for more)\n"
        "  -h, --help\n"
        "      --version\n"
        "Prints aggregate blocks/s and bytes/s into the agent, allreduces/s and\n"
        "per-call latency percentiles (and the spawned agents' CPU per block, per\n"
        "level in a tree); exits 1 if any result was wrong.\n",
        kMaxProcs, kMaxJobs, INA_LOADGEN_SWITCHD);
}

[[noreturn]] void bad(const char *opt, const char *val)
{
    std::fprintf(stderr, "ina_loadgen: bad value '%s' for %s (see --help)\n", val, opt);
    std::exit(2);
}

Options parse(int argc, char **argv)
{
    Options o;
    const char *env = std::getenv("INA_SWITCHD");
    o.switchd = (env != nullptr && *env != '\0') ? env : INA_LOADGEN_SWITCHD;
    static const option longs[] = {
        {"procs", required_argument, nullptr, 'p'},
        {"jobs", required_argument, nullptr, 'j'},
        {"calls", required_argument, nullptr, 'n'},
        {"warmup", required_argument, nullptr, 'W'},
        {"bytes", required_argument, nullptr, 's'},
        {"window", required_argument, nullptr, 'w'},
        {"block", required_argument, nullptr, 'b'},
        {"overlap", no_argument, nullptr, 'o'},
        {"agent", required_argument, nullptr, 'a'},
        {"agents", required_argument, nullptr, 'N'},
        {"tree", required_argument, nullptr, 'L'},
        {"spines", required_argument, nullptr, 'S'},
        {"switchd", required_argument, nullptr, 'd'},
        {"agent-arg", required_argument, nullptr, 'A'},
        {"timeout", required_argument, nullptr, 't'},
        {"rndv-bytes", required_argument, nullptr, 'R'},
        {"verbose", no_argument, nullptr, 'v'},
        {"help", no_argument, nullptr, 'h'},
        {"version", no_argument, nullptr, 'V'},
        {nullptr, 0, nullptr, 0}};
    // Whole-string unsigned value of the current option in [lo, hi], or exit.
    auto number = [](int opt, uint64_t lo, uint64_t hi, bool suffix) {
        uint64_t v = 0;
        if (!parse_u64(optarg, lo, hi, &v, suffix)) {
            const char name[] = {'-', static_cast<char>(opt), '\0'};
            bad(name, optarg);
        }
        return v;
    };
    int c;
    while ((c = getopt_long(argc, argv, "p:j:n:W:s:w:b:oa:N:L:S:d:A:t:R:vh", longs, nullptr)) != -1) {
        switch (c) {
        case 'p': o.procs = static_cast<uint32_t>(number(c, 1, kMaxProcs, false)); break;
        case 'j': o.jobs = static_cast<uint32_t>(number(c, 1, kMaxJobs, false)); break;
        case 'n': o.calls = number(c, 0, ~0ull, false); break;
        case 'W': o.warmup = number(c, 0, ~0ull, false); break;
        case 's':
            o.bytes = number(c, 4, uint64_t{1} << 40, true);
            if (o.bytes % sizeof(float) != 0) bad("-s (a multiple of 4)", optarg);
            break;
        case 'w': o.window = static_cast<uint32_t>(number(c, 0, INA_PROTO_MAX_WINDOW, false)); break;
        case 'b': o.block = static_cast<uint32_t>(number(c, 0, INA_PROTO_MAX_SEG_BYTES, true)); break;
        case 'o': o.overlap = true; break;
        case 'a': o.agent = optarg; break;
        case 'N': o.agents = static_cast<uint32_t>(number(c, 1, 16, false)); break;
        case 'L': o.leaves = static_cast<uint32_t>(number(c, 1, kMaxProcs, false)); break;
        case 'S': o.spines = static_cast<uint32_t>(number(c, 1, kMaxProcs, false)); break;
        case 'd': o.switchd = optarg; break;
        case 'A': o.agent_args.emplace_back(optarg); break;
        case 't': o.timeout_s = static_cast<unsigned>(number(c, 1, 86400, false)); break;
        case 'R':
            o.rndv_bytes = static_cast<int>(number(c, 0, INA_PROTO_MAX_SEG_BYTES, true));
            break;
        case 'v': o.verbose = o.verbose == 0 ? 10 : o.verbose * 10; break;
        case 'h': usage(stdout); std::exit(0);
        case 'V': std::printf("ina_loadgen (ina) %s\n", PACKAGE_VERSION); std::exit(0);
        default: usage(stderr); std::exit(2);
        }
    }
    if (optind != argc) {
        std::fprintf(stderr, "ina_loadgen: unexpected argument '%s'\n", argv[optind]);
        std::exit(2);
    }
    // A tree is spawned whole here: its leaves cannot be named with -a.
    auto refuse = [](const char *why) {
        std::fprintf(stderr, "ina_loadgen: %s (see --help)\n", why);
        std::exit(2);
    };
    if (o.spines > 0 && o.leaves == 0) refuse("--spines needs --tree");
    if (o.leaves > 0) {
        if (!o.agent.empty() || o.agents > 1) refuse("--tree spawns its agents: no -a or -N");
        if (o.procs % o.leaves != 0) refuse("--tree L needs procs a multiple of L");
        if (o.spines > 0 && o.leaves % o.spines != 0) {
            refuse("--spines S needs --tree L a multiple of S");
        }
        // A job at one leaf with nothing named above it stays at that leaf
        // (ina_job_open goes up only for several leaves or levels above).
        if (o.leaves == 1 && o.spines == 0) refuse("--tree 1 is no tree: L >= 2, or --spines");
    }
    return o;
}

// CPU seconds (user + system) process `pid` used so far; -1 if unknown.
double cpu_seconds(pid_t pid)
{
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
    FILE *f = std::fopen(path, "r");
    if (f == nullptr) return -1.0;
    char buf[1024];
    const size_t len = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    buf[len] = '\0';
    // Fields after the command (which may hold spaces), from field 3 on:
    // utime and stime are fields 14 and 15.
    const char *q = std::strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    if (q == nullptr || std::sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                                    &ut, &st) != 2) {
        return -1.0;
    }
    return static_cast<double>(ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The agents this run spawned, stopped when it ends (or fails to start one):
// children before their parents, so that no agent sees its parent vanish
// under a job that is still open.
class SpawnedAgents {
public:
    // Levels: 0 the agents the ranks talk to (a tree's leaves, or the flat
    // and striped runs' agents), 1 the spines above the leaves, 2 the core.
    struct Agent {
        int pid;
        std::string addr;
        unsigned level;
    };

    explicit SpawnedAgents(const Options &o) : o_(o) {}
    ~SpawnedAgents() { stop(); }
    SpawnedAgents(const SpawnedAgents &) = delete;
    SpawnedAgents &operator=(const SpawnedAgents &) = delete;

    // Spawn one at `level`, a child of `parent` (empty: a root). Returns its
    // address, or an empty string once it said why not.
    std::string spawn(unsigned level, const std::string &parent)
    {
        std::vector<const char *> extra;
        if (!parent.empty()) {
            extra.push_back("--parent");
            extra.push_back(parent.c_str());
        }
        for (const std::string &a : o_.agent_args) extra.push_back(a.c_str());
        extra.push_back(nullptr);
        char buf[256] = "", err[256] = "";
        int pid = -1;
        if (ina_agent_spawn(o_.switchd.c_str(), "127.0.0.1", extra.data(), buf, sizeof(buf), &pid,
                            err, sizeof(err)) != INA_OK) {
            std::fprintf(stderr, "ina_loadgen: cannot start %s: %s\n", o_.switchd.c_str(), err);
            return {};
        }
        agents_.push_back(Agent{pid, buf, level});
        return buf;
    }

    void stop()
    {
        if (stopped_) return;
        stopped_ = true;
        for (auto a = agents_.rbegin(); a != agents_.rend(); ++a) ina_agent_stop(a->pid, 2000);
    }

    const std::vector<Agent> &agents() const { return agents_; }

    // CPU seconds each agent used so far, in spawn order; empty if one of
    // them cannot be read (or none was spawned).
    std::vector<double> cpu() const
    {
        std::vector<double> out;
        for (const Agent &a : agents_) {
            const double c = cpu_seconds(a.pid);
            if (c < 0.0) return {};
            out.push_back(c);
        }
        return out;
    }

    // The addresses of the agents at `level`, comma-separated.
    std::string names(unsigned level) const
    {
        std::string s;
        for (const Agent &a : agents_) {
            if (a.level == level) s += (s.empty() ? "" : ",") + a.addr;
        }
        return s;
    }

private:
    const Options &o_;
    std::vector<Agent> agents_;
    bool stopped_ = false;
};

int run(const Options &o)
{
    std::vector<std::string> addrs; // the agents the ranks talk to (a tree's leaves)
    for (size_t at = 0; !o.agent.empty() && at <= o.agent.size();) {
        const size_t comma = std::min(o.agent.find(',', at), o.agent.size());
        addrs.push_back(o.agent.substr(at, comma - at));
        if (addrs.back().empty() || addrs.size() > 16) bad("-a", o.agent.c_str());
        at = comma + 1;
    }
    if (!addrs.empty() && o.agents > 1) {
        bad("-N (with -a, the list names the agents)", o.agent.c_str());
    }
    SpawnedAgents spawned(o);
    if (addrs.empty() && o.leaves == 0) {
        for (uint32_t k = 0; k < o.agents; ++k) {
            addrs.push_back(spawned.spawn(0, {}));
            if (addrs.back().empty()) return 2;
        }
    } else if (addrs.empty()) {
        // Top down: an agent connects to its parent when it starts.
        std::vector<std::string> spines;
        if (o.spines > 0) {
            const std::string core = spawned.spawn(2, {});
            if (core.empty()) return 2;
            for (uint32_t s = 0; s < o.spines; ++s) {
                spines.push_back(spawned.spawn(1, core));
                if (spines.back().empty()) return 2;
            }
        } else {
            spines.push_back(spawned.spawn(1, {}));
            if (spines.back().empty()) return 2;
        }
        const uint32_t per_spine = o.leaves / static_cast<uint32_t>(spines.size());
        for (uint32_t l = 0; l < o.leaves; ++l) {
            addrs.push_back(spawned.spawn(0, spines[l / per_spine]));
            if (addrs.back().empty()) return 2;
        }
    }
    // The spawned agents' CPU over the measured phase: sampled by the parent
    // when the first rank starts measuring and when every rank has ended.
    std::vector<double> cpu_start, cpu_end;
    bool sampled_start = false, sampled_end = false;

    const uint64_t per_proc = std::min<uint64_t>(o.jobs * o.calls, kMaxSamples / o.procs);
    SharedRegion sh(o.procs, o.jobs, per_proc);
    std::vector<pid_t> pids;
    std::fflush(stdout);
    std::fflush(stderr);
    for (uint32_t p = 0; p < o.procs; ++p) {
        pid_t pid = fork();
        if (pid < 0) {
            std::perror("ina_loadgen: fork");
            for (pid_t c : pids) kill(c, SIGKILL);
            break;
        }
        if (pid == 0) proc_main(o, addrs, sh, p);
        pids.push_back(pid);
    }
    int failed = pids.size() == o.procs ? 0 : 1;
    failed += reap(pids, now_s() + o.timeout_s + 5, [&] {
        bool started = false, ended = true;
        for (uint32_t p = 0; p < o.procs; ++p) {
            started = started || sh.stats()[p].t_start > 0.0;
            ended = ended && sh.stats()[p].t_end > 0.0;
        }
        if (started && !sampled_start) {
            cpu_start = spawned.cpu();
            sampled_start = true;
        }
        if (ended && !sampled_end) {
            cpu_end = spawned.cpu();
            sampled_end = true;
        }
    });
    spawned.stop();
    if (failed != 0) {
        std::fprintf(stderr, "ina_loadgen: %d rank process(es) failed; no numbers\n", failed);
        return 1;
    }

    // Aggregate: the measured window is from the first start to the last end.
    double t0 = 1e300, t1 = -1e300;
    uint64_t granted = 0, denied = 0, wrong = 0, blocks = 0;
    std::vector<float> lat;
    lat.reserve(per_proc * o.procs);
    for (uint32_t p = 0; p < o.procs; ++p) {
        const ProcStats &st = sh.stats()[p];
        t0 = std::min(t0, st.t_start);
        t1 = std::max(t1, st.t_end);
        granted += st.granted;
        denied += st.denied;
        wrong += st.wrong;
        blocks += st.blocks;
        const uint64_t k = std::min<uint64_t>(st.granted, per_proc);
        lat.insert(lat.end(), sh.latencies(p), sh.latencies(p) + k);
    }
    std::sort(lat.begin(), lat.end());
    const double wall = std::max(t1 - t0, 1e-9);
    const ina_job_params_t &jp = sh.params()[0];
    const uint64_t rank_calls = uint64_t{o.procs} * o.jobs * o.calls;
    const double bytes_in = static_cast<double>(granted) * static_cast<double>(o.bytes);

    const bool tree = o.leaves > 0;
    std::string layout;
    if (tree) {
        const std::string L = std::to_string(o.leaves) + (o.leaves > 1 ? " leaves " : " leaf ");
        const std::string K = std::to_string(o.procs / o.leaves);
        layout = "tree (spawned): ";
        if (o.spines > 0) {
            layout += "core " + spawned.names(2) + ", " + std::to_string(o.spines) + " spine" +
                      (o.spines > 1 ? "s " : " ") + spawned.names(1) + " under it, " + L +
                      spawned.names(0) + " (" + std::to_string(o.leaves / o.spines) +
                      " per spine)";
        } else {
            layout += "spine " + spawned.names(1) + ", " + L + spawned.names(0) + " under it";
        }
        layout += ", " + K + " proc" + (o.procs / o.leaves > 1 ? "s" : "") + " per leaf";
    } else {
        std::string names;
        for (const std::string &a : addrs) names += (names.empty() ? "" : ",") + a;
        layout = std::string(addrs.size() > 1 ? "agents (striped) " : "agent ") + names +
                 (spawned.agents().empty() ? "" : " (spawned)");
    }
    std::printf("ina_loadgen: %s; %u procs x %u jobs, %" PRIu64 " calls/job of %" PRIu64
                " B float sum (%s), window %u, block %u B\n",
                layout.c_str(), o.procs, o.jobs, o.calls, o.bytes,
                o.overlap ? "overlapped posts" : "blocking", jp.window, jp.block_bytes);
    std::printf("  wall %.3f s; rank-calls granted %" PRIu64 "/%" PRIu64 ", denied %" PRIu64
                ", wrong results %" PRIu64 "\n",
                wall, granted, rank_calls, denied, wrong);
    std::printf("  into the %s: %.0f blocks/s, %.1f MB/s; allreduces %.1f/s (all jobs)\n",
                tree ? "leaves" : "agent",
                static_cast<double>(blocks) / wall, bytes_in / wall / 1e6,
                static_cast<double>(granted) / o.procs / wall);
    std::printf("  per-call latency us: p50 %.1f  p90 %.1f  p99 %.1f  max %.1f  (%zu samples)\n",
                percentile(lat, 0.50), percentile(lat, 0.90), percentile(lat, 0.99),
                lat.empty() ? 0.0 : lat.back(), lat.size());
    // The spawned agents' CPU over the measured phase, per block the ranks
    // sent: in a tree every level's share of the same blocks, so the levels
    // add up to the whole.
    constexpr unsigned kLevels = 3;
    double level_cpu[kLevels] = {};
    unsigned level_agents[kLevels] = {};
    double agent_cpu = -1.0;
    if (!cpu_start.empty() && cpu_end.size() == cpu_start.size()) {
        agent_cpu = 0.0;
        for (size_t k = 0; k < cpu_start.size(); ++k) {
            const double d = cpu_end[k] - cpu_start[k];
            if (d < 0.0) {
                agent_cpu = -1.0;
                break;
            }
            const unsigned level = spawned.agents()[k].level;
            level_cpu[level] += d;
            ++level_agents[level];
            agent_cpu += d;
        }
    }
    auto per_block = [blocks](double cpu) {
        return cpu >= 0.0 && blocks > 0 ? cpu * 1e6 / static_cast<double>(blocks) : -1.0;
    };
    const double cpu_per_block = per_block(agent_cpu);
    const size_t nspawned = spawned.agents().size();
    if (cpu_per_block >= 0.0) {
        std::printf("  agents' CPU: %.3f s over the measured phase, %.2f us per block "
                    "(%zu agent%s)\n",
                    agent_cpu, cpu_per_block, nspawned, nspawned > 1 ? "s" : "");
        if (tree) {
            const char *const names[kLevels] = {"leaves", o.spines > 1 ? "spines" : "spine",
                                                "core"};
            std::printf("  per level, us per block:");
            for (unsigned l = 0; l < kLevels; ++l) {
                if (level_agents[l] == 0) continue;
                std::printf("%s %s %.2f (%u agent%s)", l == 0 ? "" : ",", names[l],
                            per_block(level_cpu[l]), level_agents[l],
                            level_agents[l] > 1 ? "s" : "");
            }
            std::printf("\n");
        }
    }
    // One line for scripts.
    std::printf("RESULT procs=%u jobs=%u agents=%zu layout=%s leaves=%u spines=%u calls=%" PRIu64
                " bytes=%" PRIu64 " window=%u block=%u "
                "mode=%s wall_s=%.6f blocks_per_s=%.1f bytes_per_s=%.1f allreduces_per_s=%.2f "
                "p50_us=%.1f p90_us=%.1f p99_us=%.1f denied=%" PRIu64 " wrong=%" PRIu64
                " agent_cpu_us_per_block=%.2f",
                o.procs, o.jobs, tree ? nspawned : addrs.size(),
                tree ? "tree" : addrs.size() > 1 ? "striped" : "flat", o.leaves, o.spines, o.calls,
                o.bytes, jp.window, jp.block_bytes, o.overlap ? "overlap" : "blocking", wall,
                static_cast<double>(blocks) / wall, bytes_in / wall,
                static_cast<double>(granted) / o.procs / wall, percentile(lat, 0.50),
                percentile(lat, 0.90), percentile(lat, 0.99), denied, wrong, cpu_per_block);
    if (tree) {
        std::printf(" leaf_cpu_us_per_block=%.2f spine_cpu_us_per_block=%.2f",
                    per_block(agent_cpu >= 0.0 ? level_cpu[0] : -1.0),
                    per_block(agent_cpu >= 0.0 ? level_cpu[1] : -1.0));
        if (o.spines > 0) {
            std::printf(" core_cpu_us_per_block=%.2f",
                        per_block(agent_cpu >= 0.0 ? level_cpu[2] : -1.0));
        }
    }
    std::printf("\n");
    return wrong == 0 ? 0 : 1;
}

} // namespace
} // namespace ina

int main(int argc, char **argv)
{
    const ina::Options o = ina::parse(argc, argv);
    return ina::run(o);
}

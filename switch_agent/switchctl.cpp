// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// ina-switchctl: asks a running ina-switchd over its control socket
// (switch_agent/ops/control.h) and prints the answer for people, or as the
// agent's JSON (--json) for scripts. status and jobs change nothing; drain
// makes the agent deny every new call (granted ones finish) so that it can be
// restarted without failing a job, and resume ends that. place asks no
// agent: it picks a job's rectangle of groups on the hosts' grid (the
// topology file's squares) and keeps the jobs placed in a state file.
#include <fcntl.h>
#include <getopt.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "ina_config.h"
#include "ina_grid_place.h"
#include "ina_topology.h"
#include "unique_fd.h"

namespace {

using nlohmann::json;

constexpr const char *kDefaultSocket = "/run/ina/ina-switchd.sock";

void usage(FILE *out)
{
    std::fprintf(out,
                 "usage: ina-switchctl [options] COMMAND\n"
                 "Commands:\n"
                 "  status          the agent: version, uptime, listen address, place in a\n"
                 "                  tree, policy and its decisions, the harm guard's,\n"
                 "                  Seg pool occupancy, connections, calls, traffic, errors\n"
                 "  jobs            per job: JID, members, nodes, window, calls granted and\n"
                 "                  denied (and why), bytes in/out, blocks, errors, age, and\n"
                 "                  HARM: its judged calls' time over their cost on the\n"
                 "                  hosts (\"!\": harmed, the guard serves its calls)\n"
                 "  drain           deny every new call (calls already granted finish), so\n"
                 "                  the agent can be stopped without failing any job\n"
                 "  resume          end a drain\n"
                 "  place           a job's rectangle of groups on the hosts' grid (asks no\n"
                 "                  agent): --topology FILE --state FILE, then --nodes N\n"
                 "                  [--job NAME] [--weight W] to place one, --release NAME\n"
                 "                  to free one (both: release, then place); prints the\n"
                 "                  hosts as an mpirun host file, the Slurm list in a\n"
                 "                  comment\n"
                 "Options:\n"
                 "  -s, --socket PATH  the agent's control socket (default %s;\n"
                 "                     also $INA_SWITCHCTL_SOCKET)\n"
                 "  --json             print the agent's JSON reply as it is\n"
                 "  --wait SECONDS     drain: wait up to SECONDS for the granted calls to\n"
                 "                     finish (exit 3 if they did not)\n"
                 "  --topology FILE    place: the cluster's topology file (its squares)\n"
                 "  --state FILE       place: the jobs placed, one a line (made if missing)\n"
                 "  --nodes N          place: a job of N nodes (whole groups of 4)\n"
                 "  --job NAME         place: its name in the state file (default jobK)\n"
                 "  --weight W         place: how much it loads its neighbours (default 0)\n"
                 "  --release NAME     place: free the groups of job NAME\n"
                 "  -h, --help         this text\n"
                 "  --version          the version\n"
                 "Exit status: 0 done, 1 the agent cannot be asked or refused (place: a\n"
                 "file cannot be read or is wrong, no such job), 2 usage, 3 drain --wait\n"
                 "timed out (place: no free rectangle for the job). See ina-switchctl(8).\n",
                 kDefaultSocket);
}

// One request, one JSON reply. Throws std::runtime_error.
json ask(const std::string &path, const std::string &request)
{
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (path.size() >= sizeof(a.sun_path)) {
        throw std::runtime_error("socket path too long: " + path);
    }
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    ina::UniqueFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (s.get() < 0) {
        throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    }
    // The agent answers between messages: give it time on a busy host.
    timeval tv{10, 0};
    setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(s.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(s.get(), reinterpret_cast<const sockaddr *>(&a), sizeof(a)) != 0) {
        const int e = errno;
        std::string hint;
        if (e == ENOENT || e == ECONNREFUSED) {
            hint = " (is ina-switchd running, with this --control socket?)";
        } else if (e == EACCES) {
            hint = " (the socket's owner and group may ask: run as them, or as root)";
        }
        throw std::runtime_error("cannot reach the agent at " + path + ": " + std::strerror(e) +
                                 hint);
    }
    const std::string line = request + "\n";
    if (send(s.get(), line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
        throw std::runtime_error(std::string("send: ") + std::strerror(errno));
    }
    std::string reply;
    char buf[65536];
    for (;;) {
        const ssize_t n = recv(s.get(), buf, sizeof(buf), 0);
        if (n > 0) {
            reply.append(buf, static_cast<size_t>(n));
        } else if (n == 0) {
            break;
        } else if (errno != EINTR) {
            throw std::runtime_error(std::string("no reply from the agent: ") + std::strerror(errno));
        }
    }
    json j = json::parse(reply, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        throw std::runtime_error("the agent's reply is not JSON");
    }
    if (!j.value("ok", false)) {
        throw std::runtime_error("the agent refused: " + j.value("error", std::string("?")));
    }
    return j;
}

std::string bytes(double b)
{
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (b >= 1024 && u < 5) {
        b /= 1024;
        ++u;
    }
    char s[32];
    std::snprintf(s, sizeof(s), u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
    return s;
}

std::string duration(double s)
{
    char out[32];
    const auto t = static_cast<long long>(s);
    if (t >= 86400) {
        std::snprintf(out, sizeof(out), "%lldd%02lldh", t / 86400, t % 86400 / 3600);
    } else if (t >= 3600) {
        std::snprintf(out, sizeof(out), "%lldh%02lldm", t / 3600, t % 3600 / 60);
    } else if (t >= 60) {
        std::snprintf(out, sizeof(out), "%lldm%02llds", t / 60, t % 60);
    } else {
        std::snprintf(out, sizeof(out), "%.1fs", s);
    }
    return out;
}

// "busy=3 draining=1", or "-".
std::string reasons(const json &by)
{
    std::string s;
    for (auto it = by.begin(); it != by.end(); ++it) {
        s += (s.empty() ? "" : " ") + it.key() + "=" + std::to_string(it.value().get<uint64_t>());
    }
    return s.empty() ? "-" : s;
}

std::string text(const json &v)
{
    return v.is_null() ? "-" : v.is_string() ? v.get<std::string>() : v.dump();
}

void print_status(const json &j)
{
    const json &a = j["agent"];
    const json &t = j["tree"];
    const json &p = j["pool"];
    const json &c = j["connections"];
    const json &pol = j["policy"];
    const json &calls = j["calls"];
    const json &tr = j["traffic"];
    const json &e = j["errors"];
    std::printf("agent:       ina-switchd %s (protocol %d, serves %d to %d), pid %d, up %s%s\n",
                a["version"].get<std::string>().c_str(), a["protocol"].get<int>(),
                a.value("protocol_lowest", a["protocol"].get<int>()), a["protocol"].get<int>(),
                a["pid"].get<int>(), duration(a["uptime_s"].get<double>()).c_str(),
                a["draining"].get<bool>() ? ", DRAINING (new calls denied)" : "");
    std::printf("listen:      %s\n", text(a["listen"]).c_str());
    std::printf("control:     %s\n", text(a["control"]).c_str());
    std::printf("metrics:     %s\n",
                a["metrics"].get<std::string>().empty()
                    ? "off"
                    : ("http://" + a["metrics"].get<std::string>() + "/metrics").c_str());
    std::printf("config:      %s\n", a["config"].get<std::string>().empty()
                                         ? "none"
                                         : a["config"].get<std::string>().c_str());
    std::printf("bind:        %s\n", text(a["bind"]).c_str());
    if (t["parent"].is_null()) {
        std::printf("tree:        root; %llu job(s) of child agents\n",
                    t["child_jobs"].get<unsigned long long>());
    } else {
        std::printf("tree:        leaf of %s (%s), reconnects %llu, partials up %llu (%llu "
                    "waited for a slot at the parent, %.3f s in all), results down %llu; "
                    "%llu job(s) of child agents\n",
                    t["parent"].get<std::string>().c_str(),
                    t["parent_up"].get<bool>() ? "up" : "LOST",
                    t["reconnects"].get<unsigned long long>(),
                    t["partials_up"].get<unsigned long long>(),
                    t.value("partials_waited", 0ULL), t.value("partial_wait_s", 0.0),
                    t["parent_results"].get<unsigned long long>(),
                    t["child_jobs"].get<unsigned long long>());
    }
    std::printf("policy:      %s; granted %llu, denied %s, deferred %llu (%llu now), "
                "mean lease %.1f Segs\n",
                pol["name"].get<std::string>().c_str(), pol["granted"].get<unsigned long long>(),
                reasons(pol["denied"]).c_str(), pol["deferred"].get<unsigned long long>(),
                pol["deferred_now"].get<unsigned long long>(), pol["mean_lease_segs"].get<double>());
    // (An agent before the harm guard's report has no such key: nothing.)
    if (const json g = pol.value("harm_guard", json()); g.is_object()) {
        std::printf(
            "harm guard:  %llu job(s) harmed now; served %llu call(s) itself, sent %llu "
            "to the hosts, %llu there to measure them\n",
            g["harmed_jobs"].get<unsigned long long>(), g["served"].get<unsigned long long>(),
            g["sent_to_hosts"].get<unsigned long long>(), g["probes"].get<unsigned long long>());
    } else if (pol.contains("harm_guard")) {
        std::printf("harm guard:  off\n");
    }
    std::printf("pool:        %llu of %llu Segs in use (%.1f%%), %s each, window <= %llu\n",
                p["segs_in_use"].get<unsigned long long>(), p["segs"].get<unsigned long long>(),
                100.0 * p["occupancy"].get<double>(),
                bytes(p["seg_bytes"].get<double>()).c_str(), p["max_window"].get<unsigned long long>());
    std::string hosts;
    for (auto it = c["by_host"].begin(); it != c["by_host"].end(); ++it) {
        hosts += " " + it.key() + "=" + std::to_string(it.value().get<unsigned>());
    }
    std::printf("connections: %llu live (max %llu), %llu accepted, %llu lost, %llu refused%s%s\n",
                c["live"].get<unsigned long long>(), c["max"].get<unsigned long long>(),
                c["accepted"].get<unsigned long long>(), c["lost"].get<unsigned long long>(),
                c["refused"].get<unsigned long long>(), hosts.empty() ? "" : "; by host:",
                hosts.c_str());
    if (c.value("child_probes", 0ULL) != 0) {
        std::printf("             child agents: %llu probes while silent, %llu given up as silent\n",
                    c["child_probes"].get<unsigned long long>(),
                    c["children_silent"].get<unsigned long long>());
    }
    std::printf("jobs:        %llu live (%llu striped), %llu created, %llu freed\n",
                j["jobs"]["live"].get<unsigned long long>(),
                j["jobs"]["striped"].get<unsigned long long>(),
                j["jobs"]["created"].get<unsigned long long>(),
                j["jobs"]["freed"].get<unsigned long long>());
    std::printf("calls:       %llu in flight; %llu granted, %llu denied, %llu aborted, "
                "%llu given back (stripe); host costs told %llu, call times told %llu\n",
                calls["in_flight"].get<unsigned long long>(), calls["granted"].get<unsigned long long>(),
                calls["denied"].get<unsigned long long>(), calls["aborted"].get<unsigned long long>(),
                calls["stripe_aborts"].get<unsigned long long>(),
                calls.value("host_costs", 0ull), calls.value("call_times", 0ull));
    std::printf("traffic:     %llu blocks in (%s), %llu results out (%s), %llu acks\n",
                tr["blocks_in"].get<unsigned long long>(),
                bytes(tr["block_bytes_in"].get<double>()).c_str(),
                tr["results_out"].get<unsigned long long>(),
                bytes(tr["result_bytes_out"].get<double>()).c_str(),
                tr["acks_out"].get<unsigned long long>());
    std::printf("errors:      rejected %s, duplicates %llu, foreign %llu, forbidden opens %llu, "
                "limit refusals %llu, send errors %llu\n",
                reasons(e["rejected"]).c_str(), e["duplicate"].get<unsigned long long>(),
                e["foreign"].get<unsigned long long>(), e["forbidden_opens"].get<unsigned long long>(),
                e["limit_refusals"].get<unsigned long long>(),
                e["send_errors"].get<unsigned long long>());
    if (j.contains("block_times")) {
        const json &b = j["block_times"];
        std::printf("block time:  %llu blocks, mean %.1f us in the agent\n",
                    b["count"].get<unsigned long long>(), b["mean_s"].get<double>() * 1e6);
    }
}

void print_jobs(const json &j)
{
    const json &list = j["jobs"];
    if (list.empty()) {
        std::printf("no jobs\n");
        return;
    }
    std::printf("%5s %-16s %7s %5s %6s %12s %6s %8s %8s %10s %10s %8s %6s %8s %7s  %s\n", "JID",
                "KEY", "MEMBERS", "NODES", "WINDOW", "TREE", "STRIPE", "GRANTED", "DENIED",
                "BYTES-IN", "BYTES-OUT", "BLOCKS", "ERRORS", "AGE", "HARM", "DENIED-BY");
    for (const json &e : list) {
        const json &t = e["tree"];
        // The job's place in a tree: "-" none; "top" the agent that
        // combines the whole tree; "leaf" (members are ranks) or "mid"
        // (members are child agents) with its index among its parent's
        // children of the job and the state of its job there.
        std::string tree = "-";
        const bool children = t["children"].get<bool>();
        if (t["uplink"].get<std::string>() != "none") {
            tree = std::string(children ? "mid" : "leaf") +
                   std::to_string(t["group"].get<unsigned>()) + "/" +
                   std::to_string(t["groups"].get<unsigned>()) + ":" +
                   t["uplink"].get<std::string>();
        } else if (children) {
            tree = "top";
        }
        const unsigned width = e["stripe"]["width"].get<unsigned>();
        const std::string stripe =
            width > 1 ? std::to_string(e["stripe"]["index"].get<unsigned>()) + "/" +
                            std::to_string(width)
                      : "-";
        // The harm guard's ledger: what the judged calls took over their
        // cost on the hosts; "!" while the job is harmed.
        std::string harm = "-";
        if (const json h = e.value("harm", json());
            h.is_object() && h["hosts_s"].get<double>() > 0) {
            char b[32];
            std::snprintf(b, sizeof(b), "%.2fx%s",
                          h["took_s"].get<double>() / h["hosts_s"].get<double>(),
                          h["harmed"].get<bool>() ? "!" : "");
            harm = b;
        }
        std::printf(
            "%5u %-16s %3u/%-3u %5u %6u %12s %6s %8llu %8llu %10s %10s %8llu %6llu %8s %7s  %s\n",
            e["jid"].get<unsigned>(), e["key"].get<std::string>().c_str(),
            e["joined"].get<unsigned>(), e["members"].get<unsigned>(), e["nodes"].get<unsigned>(),
            e["window"].get<unsigned>(), tree.c_str(), stripe.c_str(),
            e["calls"]["granted"].get<unsigned long long>(),
            e["calls"]["denied"].get<unsigned long long>(),
            bytes(e["bytes_in"].get<double>()).c_str(), bytes(e["bytes_out"].get<double>()).c_str(),
            e["blocks_done"].get<unsigned long long>(), e["errors"].get<unsigned long long>(),
            duration(e["age_s"].get<double>()).c_str(), harm.c_str(),
            reasons(e["calls"]["denied_by"]).c_str());
    }
}

struct PlaceArgs {
    std::string topology, state, job, release;
    long nodes = -1; // -1: place nothing
    double weight = 0;
    bool weight_given = false;
};

std::string read_file(const std::string &path)
{
    std::ifstream in(path);
    if (!in) {
        throw std::runtime_error(path + ": " + std::strerror(errno));
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string read_fd(int fd, const std::string &path)
{
    std::string text;
    char buf[65536];
    for (;;) {
        const ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0) {
            text.append(buf, static_cast<size_t>(n));
        } else if (n == 0) {
            return text;
        } else if (errno != EINTR) {
            throw std::runtime_error(path + ": " + std::strerror(errno));
        }
    }
}

// The whole file anew, in place: its lock (flock) is on this inode, so a
// new file renamed over it would let a waiting placement read the old one.
void rewrite_fd(int fd, const std::string &path, const std::string &text)
{
    if (ftruncate(fd, 0) != 0) {
        throw std::runtime_error(path + ": " + std::strerror(errno));
    }
    for (size_t done = 0; done < text.size();) {
        const ssize_t n =
            pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
        if (n < 0 && errno != EINTR) {
            throw std::runtime_error(path + ": " + std::strerror(errno));
        }
        done += n > 0 ? static_cast<size_t>(n) : 0;
    }
    if (fsync(fd) != 0) {
        throw std::runtime_error(path + ": " + std::strerror(errno));
    }
}

std::string rect_words(const ina::grid::Rect &r)
{
    return std::to_string(r.w) + "x" + std::to_string(r.h) + " groups at (" +
           std::to_string(r.gx) + ", " + std::to_string(r.gy) + ")";
}

// Everything it prints but the hosts is a '#' comment, so that its output
// is an mpirun host file as it is. Returns the exit status.
int place(const PlaceArgs &a)
{
    ina::topo::Topology topo;
    std::string why;
    if (!ina::topo::Topology::parse(read_file(a.topology), topo, why)) {
        throw std::runtime_error(a.topology + ": " + why);
    }
    const ina::topo::Grid &grid = topo.grid();
    if (grid.empty()) {
        throw std::runtime_error(a.topology + " describes no grid (no square lines)");
    }
    // Locked from reading to writing: two placements at once must not
    // both take the same free groups.
    ina::UniqueFd fd(open(a.state.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (fd.get() < 0 || flock(fd.get(), LOCK_EX) != 0) {
        throw std::runtime_error(a.state + ": " + std::strerror(errno));
    }
    std::vector<ina::grid::Job> jobs;
    if (!ina::grid::parse_state(read_fd(fd.get(), a.state), grid.groups_x, grid.groups_y, jobs,
                                why)) {
        throw std::runtime_error(a.state + ": " + why);
    }
    bool changed = false;
    if (!a.release.empty()) {
        auto it = std::find_if(jobs.begin(), jobs.end(),
                               [&](const ina::grid::Job &j) { return j.name == a.release; });
        if (it == jobs.end()) {
            throw std::runtime_error("no job \"" + a.release + "\" in " + a.state);
        }
        std::printf("# released %s: %s\n", it->name.c_str(), rect_words(it->rect).c_str());
        jobs.erase(it);
        changed = true;
    }
    int status = 0;
    if (a.nodes >= 0) {
        const auto named = [&](const std::string &name) {
            return std::any_of(jobs.begin(), jobs.end(),
                               [&](const ina::grid::Job &j) { return j.name == name; });
        };
        std::string name = a.job;
        for (unsigned k = 1; name.empty(); ++k) {
            name = named("job" + std::to_string(k)) ? "" : "job" + std::to_string(k);
        }
        if (named(name)) {
            throw std::runtime_error("job \"" + name + "\" is already placed (--release it first)");
        }
        const uint32_t nodes = static_cast<uint32_t>(a.nodes);
        const uint32_t groups = ina::grid::groups_for_nodes(nodes);
        const std::optional<ina::grid::Rect> r =
            ina::grid::place(grid.groups_x, grid.groups_y, jobs, nodes);
        if (!r) {
            uint32_t taken = 0;
            for (const ina::grid::Job &j : jobs) {
                taken += j.rect.groups();
            }
            std::fprintf(stderr,
                         "ina-switchctl: no free rectangle of %u group(s) (%u nodes) on the "
                         "%ux%u groups of the grid: %zu job(s) hold %u group(s)\n",
                         groups, nodes, grid.groups_x, grid.groups_y, jobs.size(), taken);
            status = 3;
        } else {
            jobs.push_back(ina::grid::Job{name, *r, a.weight});
            changed = true;
            const std::vector<std::string> hosts = ina::grid::hosts_of(grid, *r);
            std::printf("# job %s: %s, %zu nodes (%u across, %u down)%s\n", name.c_str(),
                        rect_words(*r).c_str(), hosts.size(), 2 * r->w, 2 * r->h,
                        nodes % 4 != 0 ? ", rounded up to whole groups" : "");
            std::printf("# slurm: %s\n", ina::grid::compress_hostlist(hosts).c_str());
            for (const std::string &h : hosts) {
                std::printf("%s\n", h.c_str());
            }
        }
    }
    if (changed) {
        rewrite_fd(fd.get(), a.state, ina::grid::format_state(jobs));
    }
    return status;
}

} // namespace

int main(int argc, char **argv)
{
    std::string path = kDefaultSocket;
    if (const char *env = std::getenv("INA_SWITCHCTL_SOCKET"); env != nullptr && *env != '\0') {
        path = env;
    }
    bool as_json = false;
    double wait_s = -1;
    PlaceArgs pa;
    bool place_options = false;
    enum {
        kJson = 256,
        kWait,
        kVersion,
        kTopology, // place's options
        kState,
        kNodes,
        kJob,
        kWeight,
        kRelease
    };
    static const struct option opts[] = {{"socket", required_argument, nullptr, 's'},
                                         {"json", no_argument, nullptr, kJson},
                                         {"wait", required_argument, nullptr, kWait},
                                         {"help", no_argument, nullptr, 'h'},
                                         {"version", no_argument, nullptr, kVersion},
                                         {"topology", required_argument, nullptr, kTopology},
                                         {"state", required_argument, nullptr, kState},
                                         {"nodes", required_argument, nullptr, kNodes},
                                         {"job", required_argument, nullptr, kJob},
                                         {"weight", required_argument, nullptr, kWeight},
                                         {"release", required_argument, nullptr, kRelease},
                                         {nullptr, 0, nullptr, 0}};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "s:h", opts, nullptr)) != -1) {
        switch (c) {
        case 's':
            path = optarg;
            break;
        case kJson:
            as_json = true;
            break;
        case kWait: {
            char *end = nullptr;
            wait_s = std::strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(wait_s >= 0)) {
                std::fprintf(stderr, "ina-switchctl: --wait wants seconds >= 0, got '%s'\n",
                             optarg);
                return 2;
            }
            break;
        }
        case kTopology:
            pa.topology = optarg;
            place_options = true;
            break;
        case kState:
            pa.state = optarg;
            place_options = true;
            break;
        case kNodes: {
            char *end = nullptr;
            errno = 0;
            pa.nodes = std::strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || errno != 0 || pa.nodes < 1 ||
                pa.nodes > 1000000) {
                std::fprintf(stderr, "ina-switchctl: --nodes wants a count >= 1, got '%s'\n",
                             optarg);
                return 2;
            }
            place_options = true;
            break;
        }
        case kJob:
        case kRelease:
            if (!ina::grid::valid_job_name(optarg)) {
                std::fprintf(stderr, "ina-switchctl: '%s' is no job name (one word, no '#')\n",
                             optarg);
                return 2;
            }
            (c == kJob ? pa.job : pa.release) = optarg;
            place_options = true;
            break;
        case kWeight: {
            char *end = nullptr;
            pa.weight = std::strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !std::isfinite(pa.weight) || pa.weight < 0) {
                std::fprintf(stderr, "ina-switchctl: --weight wants a number >= 0, got '%s'\n",
                             optarg);
                return 2;
            }
            pa.weight_given = true;
            place_options = true;
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        case kVersion:
            std::printf("ina-switchctl (ina) %s\n", PACKAGE_VERSION);
            return 0;
        default:
            std::fprintf(stderr, "ina-switchctl: unknown or incomplete option '%s'\n",
                         argv[optind - 1]);
            usage(stderr);
            return 2;
        }
    }
    if (optind + 1 != argc) {
        usage(stderr);
        return 2;
    }
    const std::string cmd = argv[optind];
    if (cmd != "status" && cmd != "jobs" && cmd != "drain" && cmd != "resume" && cmd != "place") {
        std::fprintf(stderr,
                     "ina-switchctl: unknown command '%s' (status, jobs, drain, resume, place)\n",
                     cmd.c_str());
        return 2;
    }
    if (cmd == "place") {
        if (pa.topology.empty() || pa.state.empty() || (pa.nodes < 0 && pa.release.empty())) {
            std::fprintf(stderr, "ina-switchctl: place wants --topology FILE --state FILE and "
                                 "--nodes N or --release NAME (or both)\n");
            return 2;
        }
        if (pa.nodes < 0 && (!pa.job.empty() || pa.weight_given)) {
            std::fprintf(stderr,
                         "ina-switchctl: --job and --weight are of the job --nodes places\n");
            return 2;
        }
        try {
            return place(pa);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "ina-switchctl: %s\n", e.what());
            return 1;
        }
    }
    if (place_options) {
        std::fprintf(stderr, "ina-switchctl: --topology, --state, --nodes, --job, --weight and "
                             "--release go with place\n");
        return 2;
    }
    if (wait_s >= 0 && cmd != "drain") {
        std::fprintf(stderr, "ina-switchctl: --wait goes with drain\n");
        return 2;
    }
    try {
        json reply = ask(path, cmd);
        if (cmd == "drain" && wait_s >= 0) {
            // Until no granted call is left (the agent can then stop).
            const auto until = std::chrono::steady_clock::now() +
                               std::chrono::duration<double>(wait_s);
            while (reply["calls_in_flight"].get<uint64_t>() != 0 &&
                   std::chrono::steady_clock::now() < until) {
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
                reply["calls_in_flight"] = ask(path, "status")["calls"]["in_flight"];
            }
        }
        if (as_json) {
            std::printf("%s\n", reply.dump(2).c_str());
        } else if (cmd == "status") {
            print_status(reply);
        } else if (cmd == "jobs") {
            print_jobs(reply);
        } else {
            std::printf("%s; %llu granted call(s) in flight\n",
                        cmd == "drain" ? "draining: new calls are denied" : "resumed: calls are granted again",
                        reply["calls_in_flight"].get<unsigned long long>());
        }
        if (cmd == "drain" && wait_s >= 0 && reply["calls_in_flight"].get<uint64_t>() != 0) {
            std::fprintf(stderr, "ina-switchctl: calls still in flight after %g s\n", wait_s);
            return 3;
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "ina-switchctl: %s\n", e.what());
        return 1;
    }
    return 0;
}

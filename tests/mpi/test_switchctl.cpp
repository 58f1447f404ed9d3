// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// test_switchctl: what ina-switchctl says while an MPI job runs, checked
// against what the job did, and a drain in the middle of it.
//   usage: test_switchctl CTL SOCKET   (ina-switchctl, the agent's socket)
// Every rank of MPI_COMM_WORLD is a member of one job at the agent (no node
// stage). Rank 0 asks `jobs --json` before and after 5 MPI_Allreduce of
// 64 Ki ints: between the two the job's bytes in and out rose by exactly
// 5 x size x 256 KiB, its granted calls by 5, its completed blocks by a
// multiple of 5 and its RESULTs by that times size; its nodes are the
// communicator's (MPI_T). Then `drain`: a barrier and 3 allreduces are
// denied (status draining) on every rank and run on the host with exact
// results; `resume`: the next allreduces are offloaded again. Rank 0 lets
// the others go on after each request by point-to-point messages, which do
// not pass the agent, so every call after it is decided after it.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ina_mpi_test.h"

using nlohmann::json;

namespace {

std::string g_ctl, g_sock;

// Rank 0: run `ina-switchctl -s SOCK --json CMD` and parse its output.
json ask(const char *cmd)
{
    const std::string line = g_ctl + " -s " + g_sock + " --json " + cmd;
    FILE *p = popen(line.c_str(), "r");
    std::string out;
    char buf[4096];
    while (p != nullptr && std::fgets(buf, sizeof(buf), p) != nullptr) {
        out += buf;
    }
    const int st = p != nullptr ? pclose(p) : -1;
    INA_CHECK(st == 0, "%s: exit status %d", line.c_str(), st);
    json j = json::parse(out, nullptr, false);
    INA_CHECK(!j.is_discarded() && j.value("ok", false), "%s: not a reply: %s", line.c_str(),
              out.c_str());
    return j;
}

// The job of MPI_COMM_WORLD: the one whose members are all the ranks.
json world_job(const json &jobs, int size)
{
    for (const json &j : jobs["jobs"]) {
        if (j["members"] == size && j["joined"] == size) {
            return j;
        }
    }
    INA_CHECK(false, "no job of %d members in %s", size, jobs.dump().c_str());
    return json::object();
}

// Rank 0 releases the others (a message each; no collective: the agent
// sees nothing of it).
void release(int rank, int size)
{
    int token = 1;
    if (rank == 0) {
        for (int r = 1; r < size; ++r) {
            MPI_Send(&token, 1, MPI_INT, r, 7, MPI_COMM_WORLD);
        }
    } else {
        MPI_Recv(&token, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

unsigned long long delta(const json &a, const json &b, const char *k1, const char *k2 = nullptr)
{
    const json &x = k2 != nullptr ? a[k1][k2] : a[k1];
    const json &y = k2 != nullptr ? b[k1][k2] : b[k1];
    if (!x.is_number() || !y.is_number()) {
        return ~0ull;
    }
    return y.get<unsigned long long>() - x.get<unsigned long long>();
}

// n allreduces of `count` ints, each checked against the closed form.
long allreduces(int n, int count, int rank, int size)
{
    long checks = 0;
    std::vector<int> in(count), out(count);
    for (int c = 0; c < n; ++c) {
        for (int i = 0; i < count; ++i) {
            in[i] = rank * 7 + i % 1000 + c;
        }
        MPI_Allreduce(in.data(), out.data(), count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        int bad = 0;
        for (int i = 0; i < count; ++i) {
            const long want = 7L * size * (size - 1) / 2 + static_cast<long>(size) * (i % 1000 + c);
            bad += out[i] != want;
        }
        INA_CHECK(bad == 0, "allreduce %d: %d wrong elements", c, bad);
        ++checks;
    }
    return checks;
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3) {
        if (rank == 0) {
            std::fprintf(stderr, "usage: test_switchctl CTL SOCKET\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    g_ctl = argv[1];
    g_sock = argv[2];
    inatest::Counters counters;
    long checks = 0;
    const int count = 64 * 1024; // 256 KiB
    const unsigned long long bytes = 4ull * count;
    const long long nodes = counters.nodes(MPI_COMM_WORLD);

    // Warm up: the job is open and every member joined.
    checks += allreduces(1, count, rank, size);

    json before;
    if (rank == 0) {
        before = world_job(ask("jobs"), size);
    }
    release(rank, size);
    checks += allreduces(5, count, rank, size);
    if (rank == 0) {
        // Rank 0's last call returned: every block of every call completed
        // at the agent; the others wait for rank 0.
        const json after = world_job(ask("jobs"), size);
        INA_CHECK(after["jid"] == before["jid"], "another job");
        INA_CHECK(delta(before, after, "bytes_in") == 5 * size * bytes,
                  "bytes_in rose by %llu, want %llu", delta(before, after, "bytes_in"),
                  5 * size * bytes);
        INA_CHECK(delta(before, after, "bytes_out") == 5 * size * bytes,
                  "bytes_out rose by %llu, want %llu", delta(before, after, "bytes_out"),
                  5 * size * bytes);
        const unsigned long long blocks = delta(before, after, "blocks_done");
        INA_CHECK(blocks >= 5 && blocks % 5 == 0, "blocks_done rose by %llu", blocks);
        INA_CHECK(delta(before, after, "results_out") == blocks * size,
                  "results_out rose by %llu, want %llu", delta(before, after, "results_out"),
                  blocks * size);
        INA_CHECK(delta(before, after, "blocks_in") == blocks * size,
                  "blocks_in rose by %llu, want %llu", delta(before, after, "blocks_in"),
                  blocks * size);
        INA_CHECK(delta(before, after, "calls", "granted") == 5,
                  "calls.granted rose by %llu, want 5", delta(before, after, "calls", "granted"));
        INA_CHECK(delta(before, after, "calls", "denied") == 0, "calls denied");
        INA_CHECK(after["errors"] == 0 && after["nodes"] == nodes, "errors %s nodes %s, want %lld",
                  after["errors"].dump().c_str(), after["nodes"].dump().c_str(), nodes);
        const json st = ask("status");
        INA_CHECK(st["connections"]["live"].get<int>() >= size && st["calls"]["in_flight"] == 0,
                  "status: %s %s", st["connections"].dump().c_str(), st["calls"].dump().c_str());
        checks += 9;
    }

    // Drain: every rank's next calls are denied and run on the host.
    const long long off0 = counters.offloaded(MPI_COMM_WORLD);
    const long long fb0 = counters.fallbacks(MPI_COMM_WORLD);
    json drained_before;
    if (rank == 0) {
        drained_before = world_job(ask("jobs"), size);
        const json d = ask("drain");
        INA_CHECK(d["draining"] == true, "drain: %s", d.dump().c_str());
    }
    release(rank, size);
    MPI_Barrier(MPI_COMM_WORLD);
    checks += allreduces(3, count, rank, size);
    INA_CHECK(counters.offloaded(MPI_COMM_WORLD) == off0, "calls offloaded while draining");
    INA_CHECK(counters.fallbacks(MPI_COMM_WORLD) == fb0 + 4, "fallbacks %lld -> %lld, want +4",
              fb0, counters.fallbacks(MPI_COMM_WORLD));
    checks += 2;
    if (rank == 0) {
        const json after = world_job(ask("jobs"), size);
        INA_CHECK(delta(drained_before, after, "calls", "granted") == 0, "granted while draining");
        const json &by = after["calls"]["denied_by"];
        const json &was = drained_before["calls"]["denied_by"];
        const unsigned long long n = by.value("draining", 0ull) - was.value("draining", 0ull);
        INA_CHECK(n == 4, "denied (draining) rose by %llu, want 4", n);
        INA_CHECK(ask("status")["agent"]["draining"] == true, "status: not draining");
        const json r = ask("resume");
        INA_CHECK(r["draining"] == false, "resume: %s", r.dump().c_str());
        checks += 3;
    }
    // After the resume: offloaded again.
    release(rank, size);
    const long long off1 = counters.offloaded(MPI_COMM_WORLD);
    checks += allreduces(3, count, rank, size);
    INA_CHECK(counters.offloaded(MPI_COMM_WORLD) == off1 + 3, "offloaded %lld -> %lld, want +3",
              off1, counters.offloaded(MPI_COMM_WORLD));
    ++checks;
    counters.close(); // (MPI_T before MPI_Finalize)
    const int rc = inatest::finish("test_switchctl", checks);
    MPI_Finalize();
    return rc;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The node layout ina computes for each communicator (MPI_T pvars
// coll_ina_job_nodes and coll_ina_local_ranks) on MPI_COMM_WORLD, a
// duplicate, a split by parity, MPI_Comm_create of a group that leaves out a
// node, and a communicator in reverse rank order, checked against a layout
// computed here from world ranks alone: with -k K (the scenario sets
// coll_ina_test_node_size to the same K) world rank w is on node w / K;
// without, every rank is on this one machine. On each communicator an
// offloaded MPI_Allreduce is checked against an independent reference and
// coll_ina_offloaded_calls must count it (and coll_ina_node_only_calls
// exactly when the communicator is on one node: WorkLevel), so the agent's
// Node and Rank bitmaps of a job spread over several nodes, and the node
// stage of a communicator within one, are exercised end to end.
//
// usage: test_layout [-k K] [-n world_nodes]
#include "ina_mpi_test.h"

#include <unistd.h>

#include <algorithm>
#include <set>

using namespace inatest;

namespace {

long checks = 0;
int node_size = 0; // K; 0: one node

int node_of_world(int w) { return node_size > 0 ? w / node_size : 0; }

// World ranks of the members of `comm`, in comm rank order.
std::vector<int> world_ranks(MPI_Comm comm)
{
    MPI_Group world, group;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Comm_group(comm, &group);
    int n;
    MPI_Group_size(group, &n);
    std::vector<int> ranks(n), out(n);
    for (int i = 0; i < n; ++i) ranks[i] = i;
    MPI_Group_translate_ranks(group, n, ranks.data(), world, out.data());
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    return out;
}

// The layout of `comm` as checked here, then an offloaded allreduce on it.
void check_comm(Counters &c, MPI_Comm comm, const char *what)
{
    int rank, size, wrank;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    std::vector<int> members = world_ranks(comm);

    std::set<int> nodes;
    long long local = 0;
    for (int w : members) {
        nodes.insert(node_of_world(w));
        local += node_of_world(w) == node_of_world(wrank);
    }
    checks += 2;
    INA_CHECK(c.nodes(comm) == static_cast<long long>(nodes.size()),
              "%s (%d ranks): coll_ina_job_nodes %lld, want %zu", what, size, c.nodes(comm),
              nodes.size());
    INA_CHECK(c.local_ranks(comm) == local, "%s (%d ranks): coll_ina_local_ranks %lld, want %lld",
              what, size, c.local_ranks(comm), local);

    // The job of this layout at work: the result against the reference, and
    // the call counted as offloaded (not a fallback).
    const uint64_t seed = 4242 + static_cast<uint64_t>(size);
    const size_t n = 100000; // several blocks
    WorkLevel level(c, comm);
    long long fb_before = c.fallbacks(comm);
    std::vector<int64_t> in(n), out(n), ref(n);
    fill_input(in, Op::Sum, rank, seed);
    reference(ref, Op::Sum, comm, seed);
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_INT64_T, MPI_SUM, comm);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += out[i] != ref[i];
    std::vector<double> din(n), dout(n), dref(n);
    fill_input(din, Op::Sum, rank, seed + 1);
    reference(dref, Op::Sum, comm, seed + 1);
    MPI_Allreduce(din.data(), dout.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm);
    for (size_t i = 0; i < n; ++i) bad += !same_bits(dout[i], dref[i]);
    checks += 2;
    INA_CHECK(bad == 0, "%s: MPI_Allreduce: %zu wrong of %zu", what, bad, 2 * n);
    checks += level.expect(2, what);
    INA_CHECK(c.fallbacks(comm) == fb_before, "%s: coll_ina_fallback_calls %lld -> %lld", what,
              fb_before, c.fallbacks(comm));
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int want_world_nodes = -1, opt;
    while ((opt = getopt(argc, argv, "k:n:")) != -1) {
        if (opt == 'k') node_size = std::atoi(optarg);
        if (opt == 'n') want_world_nodes = std::atoi(optarg);
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Counters counters;

    // The scenario's own expectation, apart from the reference above.
    if (want_world_nodes >= 0) {
        ++checks;
        INA_CHECK(counters.nodes(MPI_COMM_WORLD) == want_world_nodes,
                  "MPI_COMM_WORLD: coll_ina_job_nodes %lld, the scenario wants %d",
                  counters.nodes(MPI_COMM_WORLD), want_world_nodes);
    }
    check_comm(counters, MPI_COMM_WORLD, "MPI_COMM_WORLD");

    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    check_comm(counters, dup, "MPI_Comm_dup");
    MPI_Comm_free(&dup);

    // Even and odd ranks: with K = 2, one rank of each node on each side.
    MPI_Comm parity;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &parity);
    int psize;
    MPI_Comm_size(parity, &psize);
    if (psize >= 2) { // ina declines a single-rank communicator
        check_comm(counters, parity, "split by parity");
    }
    MPI_Comm_free(&parity);

    // A group without node 1 (K > 0), or without the last rank: the node ids
    // of the rest stay dense.
    MPI_Group world, sub;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    std::vector<int> keep;
    for (int w = 0; w < size; ++w) {
        bool skip = node_size > 0 && size > node_size ? node_of_world(w) == 1 : w == size - 1;
        if (!skip) keep.push_back(w);
    }
    MPI_Group_incl(world, static_cast<int>(keep.size()), keep.data(), &sub);
    MPI_Comm created;
    MPI_Comm_create(MPI_COMM_WORLD, sub, &created);
    if (created != MPI_COMM_NULL) {
        int csize;
        MPI_Comm_size(created, &csize);
        if (csize >= 2) check_comm(counters, created, "MPI_Comm_create without a node");
        MPI_Comm_free(&created);
    }
    MPI_Group_free(&sub);
    MPI_Group_free(&world);

    // Reverse order: the last world rank is rank 0 of this one, and its node
    // is node 0 of this communicator.
    MPI_Comm reversed;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &reversed);
    check_comm(counters, reversed, "reversed");
    MPI_Comm_free(&reversed);

    counters.close();
    int code = finish("test_layout", checks);
    MPI_Finalize();
    return code;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// MPI-4 persistent collectives (Open MPI 4.1: the MPIX_ forms of its
// pcollreq extension): every *_init form, in place and not, over every
// predefined type class ina offloads (C integers, floating point, MPI_BYTE,
// MINLOC pairs), each request started many times (-s, 1000 by default) with
// new buffer contents before each start, every result checked against a
// reference computed here; several requests started together (MPI_Startall)
// with a blocking call between. Every start of an
// offloadable form is offloaded (node stage alone on one node, else the
// agent), one offload per start; starts of a form ina does not offload (an
// op of the application's own) run on the host, and a start of no
// elements completes at once.
#include "ina_mpi_test.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#if OMPI_MAJOR_VERSION < 5
#include <mpi-ext.h>
#define MPI_Allreduce_init MPIX_Allreduce_init
#define MPI_Reduce_init MPIX_Reduce_init
#define MPI_Bcast_init MPIX_Bcast_init
#define MPI_Allgather_init MPIX_Allgather_init
#define MPI_Barrier_init MPIX_Barrier_init
#define MPI_Reduce_scatter_block_init MPIX_Reduce_scatter_block_init
#endif

using namespace inatest;

namespace {

long checks = 0;
int starts = 1000;

template <typename T> size_t count_bad(const std::vector<T> &got, const std::vector<T> &want)
{
    size_t bad = 0;
    for (size_t i = 0; i < want.size(); ++i) bad += !same_bits(got[i], want[i]);
    return bad;
}

// MPI_Allreduce_init, then `starts` starts with new inputs each time.
template <typename T>
void allreduce(MPI_Comm comm, WorkLevel &level, MPI_Datatype dt, Op op, const char *name,
               size_t n, bool in_place)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    std::vector<T> in(n), out(n), ref(n);
    MPI_Request req;
    MPI_Allreduce_init(in_place ? MPI_IN_PLACE : in.data(), in_place ? in.data() : out.data(),
                       static_cast<int>(n), dt, all_ops()[static_cast<int>(op)].mpi, comm,
                       MPI_INFO_NULL, &req);
    size_t bad = 0;
    for (int s = 0; s < starts; ++s) {
        const uint64_t seed = 1000 + static_cast<uint64_t>(s);
        fill_input(in, op, rank, seed);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        reference(ref, op, comm, seed);
        bad += count_bad(in_place ? in : out, ref);
    }
    MPI_Request_free(&req);
    ++checks;
    INA_CHECK(bad == 0, "allreduce_init %s %s%s: %zu wrong elements over %d starts", name,
              all_ops()[static_cast<int>(op)].name, in_place ? " in place" : "", bad, starts);
    char what[96];
    std::snprintf(what, sizeof(what), "allreduce_init %s%s", name, in_place ? " in place" : "");
    checks += level.expect(starts, what);
}

// MINLOC on MPI_2INT: the pair with the least value, the least index on ties.
void allreduce_minloc(MPI_Comm comm, WorkLevel &level, bool in_place)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    struct Pair {
        int v, idx;
    };
    const int n = 301;
    std::vector<Pair> in(n), out(n);
    MPI_Request req;
    MPI_Allreduce_init(in_place ? MPI_IN_PLACE : in.data(), in_place ? in.data() : out.data(), n,
                       MPI_2INT, MPI_MINLOC, comm, MPI_INFO_NULL, &req);
    size_t bad = 0;
    auto value = [](int s, int r, int i) { return static_cast<int>(mix(s * 131 + r * 7 + i) % 5); };
    for (int s = 0; s < starts; ++s) {
        for (int i = 0; i < n; ++i) in[i] = Pair{value(s, rank, i), rank};
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        const std::vector<Pair> &got = in_place ? in : out;
        for (int i = 0; i < n; ++i) {
            Pair want{value(s, 0, i), 0};
            for (int r = 1; r < size; ++r) {
                if (value(s, r, i) < want.v) want = Pair{value(s, r, i), r};
            }
            bad += got[i].v != want.v || got[i].idx != want.idx;
        }
    }
    MPI_Request_free(&req);
    ++checks;
    INA_CHECK(bad == 0, "allreduce_init 2INT MINLOC%s: %zu wrong pairs", in_place ? " in place" : "",
              bad);
    checks += level.expect(starts, in_place ? "allreduce_init MINLOC in place" : "allreduce_init MINLOC");
}

// MPI_Reduce_init to the last rank; in place at the root.
template <typename T>
void reduce(MPI_Comm comm, WorkLevel &level, MPI_Datatype dt, Op op, const char *name, size_t n,
            bool in_place)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int root = size - 1;
    std::vector<T> in(n), out(n), ref(n);
    const bool here = in_place && rank == root;
    MPI_Request req;
    MPI_Reduce_init(here ? MPI_IN_PLACE : in.data(), here ? in.data() : out.data(),
                    static_cast<int>(n), dt, all_ops()[static_cast<int>(op)].mpi, root, comm,
                    MPI_INFO_NULL, &req);
    size_t bad = 0;
    for (int s = 0; s < starts; ++s) {
        const uint64_t seed = 3000 + static_cast<uint64_t>(s);
        fill_input(in, op, rank, seed);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank == root) {
            reference(ref, op, comm, seed);
            bad += count_bad(here ? in : out, ref);
        }
    }
    MPI_Request_free(&req);
    ++checks;
    INA_CHECK(bad == 0, "reduce_init %s%s: %zu wrong elements at the root", name,
              in_place ? " in place" : "", bad);
    char what[96];
    std::snprintf(what, sizeof(what), "reduce_init %s%s", name, in_place ? " in place" : "");
    checks += level.expect(starts, what);
}

// MPI_Reduce_scatter_block_init: each rank's part of the reduced vector; in
// place the input is the whole of rbuf and the part lands at its start.
template <typename T>
void reduce_scatter_block(MPI_Comm comm, WorkLevel &level, MPI_Datatype dt, Op op,
                          const char *name, size_t part, bool in_place)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const size_t n = part * static_cast<size_t>(size);
    std::vector<T> in(n), out(part), ref(n);
    MPI_Request req;
    MPI_Reduce_scatter_block_init(in_place ? MPI_IN_PLACE : in.data(),
                                  in_place ? in.data() : out.data(), static_cast<int>(part), dt,
                                  all_ops()[static_cast<int>(op)].mpi, comm, MPI_INFO_NULL,
                                  &req);
    size_t bad = 0;
    for (int s = 0; s < starts; ++s) {
        const uint64_t seed = 5000 + static_cast<uint64_t>(s);
        fill_input(in, op, rank, seed);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        reference(ref, op, comm, seed);
        const std::vector<T> &got = in_place ? in : out;
        for (size_t i = 0; i < part; ++i) {
            bad += !same_bits(got[i], ref[static_cast<size_t>(rank) * part + i]);
        }
    }
    MPI_Request_free(&req);
    ++checks;
    INA_CHECK(bad == 0, "reduce_scatter_block_init %s%s: %zu wrong elements", name,
              in_place ? " in place" : "", bad);
    char what[96];
    std::snprintf(what, sizeof(what), "reduce_scatter_block_init %s%s", name,
                  in_place ? " in place" : "");
    checks += level.expect(starts, what);
}

// MPI_Bcast_init from the middle rank.
// With `per` > 1, dt is the application's type of `per` elements, which
// this frees right after MPI_Bcast_init: MPI keeps it in the request's
// fields until MPI_Request_free.
template <typename T>
void bcast(MPI_Comm comm, WorkLevel &level, MPI_Datatype dt, const char *name, size_t n,
           int per = 1)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int root = size / 2;
    std::vector<T> buf(n), ref(n);
    MPI_Request req;
    MPI_Bcast_init(buf.data(), static_cast<int>(n) / per, dt, root, comm, MPI_INFO_NULL, &req);
    if (per > 1) {
        MPI_Type_free(&dt);
    }
    size_t bad = 0;
    for (int s = 0; s < starts; ++s) {
        fill_input(ref, Op::Sum, root, 5000 + static_cast<uint64_t>(s));
        if (rank == root) {
            buf = ref;
        } else {
            std::fill(buf.begin(), buf.end(), T{});
        }
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        bad += count_bad(buf, ref);
    }
    MPI_Request_free(&req);
    ++checks;
    INA_CHECK(bad == 0, "bcast_init %s: %zu wrong elements", name, bad);
    char what[96];
    std::snprintf(what, sizeof(what), "bcast_init %s", name);
    checks += level.expect(starts, what);
}

// MPI_Allgather_init; in place: each rank's chunk already at its place.
void allgather(MPI_Comm comm, WorkLevel &level, bool in_place)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int n = 1001;
    std::vector<int> in(n), out(static_cast<size_t>(n) * size), ref(out.size());
    MPI_Request req;
    MPI_Allgather_init(in_place ? MPI_IN_PLACE : in.data(), n, MPI_INT, out.data(), n, MPI_INT,
                       comm, MPI_INFO_NULL, &req);
    size_t bad = 0;
    for (int s = 0; s < starts; ++s) {
        const uint64_t seed = 7000 + static_cast<uint64_t>(s);
        for (int r = 0; r < size; ++r) {
            std::vector<int> chunk(n);
            fill_input(chunk, Op::Sum, r, seed);
            std::copy(chunk.begin(), chunk.end(), ref.begin() + static_cast<size_t>(r) * n);
        }
        fill_input(in, Op::Sum, rank, seed);
        std::fill(out.begin(), out.end(), -1);
        if (in_place) std::copy(in.begin(), in.end(), out.begin() + static_cast<size_t>(rank) * n);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        bad += count_bad(out, ref);
    }
    MPI_Request_free(&req);
    ++checks;
    INA_CHECK(bad == 0, "allgather_init%s: %zu wrong elements", in_place ? " in place" : "", bad);
    checks += level.expect(starts, in_place ? "allgather_init in place" : "allgather_init");
}

// MPI_Barrier_init: every rank writes its flag into a shared-memory window
// before a start; after it, every rank must see all flags (a second start
// keeps the next write from overtaking the check). Needs every rank on
// one machine, as the scenarios run.
void barrier(MPI_Comm comm, WorkLevel &level)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nsize;
    MPI_Comm_size(node, &nsize);
    ++checks;
    INA_CHECK(nsize == size, "barrier_init: the ranks are not on one machine");
    int *base, *flags;
    MPI_Win win;
    MPI_Win_allocate_shared(sizeof(int) * size, sizeof(int), MPI_INFO_NULL, node, &base, &win);
    MPI_Aint sz;
    int disp;
    MPI_Win_shared_query(win, 0, &sz, &disp, &flags);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    level.rebase(); // (the window's own collectives)
    MPI_Request req;
    MPI_Barrier_init(comm, MPI_INFO_NULL, &req);
    const int rounds = std::min(starts, 300);
    long behind = 0;
    for (int round = 1; round <= rounds; ++round) {
        __atomic_store_n(&flags[rank], round, __ATOMIC_RELEASE);
        MPI_Win_sync(win);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Win_sync(win);
        for (int r = 0; r < size; ++r) behind += __atomic_load_n(&flags[r], __ATOMIC_ACQUIRE) < round;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&req);
    ++checks;
    INA_CHECK(behind == 0, "barrier_init: %ld times a rank had not arrived", behind);
    checks += level.expect(2L * rounds, "barrier_init");
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    level.rebase();
}

// Several requests started together (a reduce-scatter among them), and a
// blocking call while they run.
void together(MPI_Comm comm, WorkLevel &level)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const size_t n = 4099;
    std::vector<double> a(n), ao(n), aref(n);
    std::vector<long> b(n), bo(n), bref(n);
    const int part = 333;
    std::vector<int> rs(static_cast<size_t>(part) * size), rso(part), rsref(static_cast<size_t>(part) * size);
    MPI_Request req[3];
    MPI_Allreduce_init(a.data(), ao.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm,
                       MPI_INFO_NULL, &req[0]);
    MPI_Allreduce_init(b.data(), bo.data(), static_cast<int>(n), MPI_LONG, MPI_BXOR, comm,
                       MPI_INFO_NULL, &req[1]);
    MPI_Reduce_scatter_block_init(rs.data(), rso.data(), part, MPI_INT, MPI_SUM, comm,
                                  MPI_INFO_NULL, &req[2]);
    const int rounds = std::min(starts, 100);
    size_t bad = 0;
    for (int s = 0; s < rounds; ++s) {
        const uint64_t seed = 9000 + static_cast<uint64_t>(s) * 3;
        fill_input(a, Op::Sum, rank, seed);
        fill_input(b, Op::Bxor, rank, seed + 1);
        fill_input(rs, Op::Sum, rank, seed + 2);
        MPI_Startall(3, req);
        long one = 1, total = 0;
        MPI_Allreduce(&one, &total, 1, MPI_LONG, MPI_SUM, comm);
        MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
        reference(aref, Op::Sum, comm, seed);
        reference(bref, Op::Bxor, comm, seed + 1);
        reference(rsref, Op::Sum, comm, seed + 2);
        bad += count_bad(ao, aref) + count_bad(bo, bref) + (total != size);
        for (int i = 0; i < part; ++i) bad += rso[i] != rsref[static_cast<size_t>(rank) * part + i];
    }
    for (MPI_Request &r : req) MPI_Request_free(&r);
    ++checks;
    INA_CHECK(bad == 0, "started together: %zu wrong", bad);
    // Three persistent calls and the blocking one per round, offloaded.
    checks += level.expect(4L * rounds, "started together");
}

// An op of the application's own: ina offloads none of its calls.
void user_sum(void *in, void *inout, int *len, MPI_Datatype *)
{
    const int *a = static_cast<const int *>(in);
    int *b = static_cast<int *>(inout);
    for (int i = 0; i < *len; ++i) {
        b[i] = static_cast<int>(static_cast<unsigned>(b[i]) + static_cast<unsigned>(a[i]));
    }
}

// Starts ina does not offload, on the same request machinery: an op of the
// application's own (every start runs the saved non-blocking collective on
// the host, on every rank), and a call of no elements (complete at once).
// Returns the starts that went to the host.
long host_starts(MPI_Comm comm, WorkLevel &level)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int rounds = std::min(starts, 200);
    MPI_Op mine;
    MPI_Op_create(user_sum, 1, &mine);
    std::vector<int> in(300), out(300), ref(300);
    MPI_Request req;
    MPI_Allreduce_init(in.data(), out.data(), static_cast<int>(in.size()), MPI_INT, mine, comm,
                       MPI_INFO_NULL, &req);
    size_t bad = 0;
    for (int s = 0; s < rounds; ++s) {
        const uint64_t seed = 7000 + static_cast<uint64_t>(s);
        fill_input(in, Op::Sum, rank, seed);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        reference(ref, Op::Sum, size, seed); // integer sums: any order
        bad += count_bad(out, ref);
    }
    MPI_Request_free(&req);
    MPI_Op_free(&mine);
    ++checks;
    INA_CHECK(bad == 0, "allreduce_init, an op of its own: %zu wrong", bad);
    MPI_Allreduce_init(in.data(), out.data(), 0, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &req);
    for (int s = 0; s < rounds; ++s) {
        int done = 0;
        bad += MPI_Start(&req) != MPI_SUCCESS;
        bad += MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done;
        if (!done) {
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
    }
    MPI_Request_free(&req);
    ++checks;
    INA_CHECK(bad == 0, "allreduce_init of no elements: %zu starts not complete at once", bad);
    checks += level.expect(0, "starts on the host");
    return rounds;
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int opt;
    while ((opt = getopt(argc, argv, "s:")) != -1) {
        if (opt == 's') starts = std::atoi(optarg);
    }
    Counters counters;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    WorkLevel level(counters, comm);

    for (bool in_place : {false, true}) {
        allreduce<int>(comm, level, MPI_INT, Op::Sum, "INT", 1000, in_place);
        allreduce<double>(comm, level, MPI_DOUBLE, Op::Sum, "DOUBLE", 777, in_place);
        allreduce<float>(comm, level, MPI_FLOAT, Op::Max, "FLOAT", 513, in_place);
        allreduce<uint8_t>(comm, level, MPI_BYTE, Op::Bxor, "BYTE", 1500, in_place);
        allreduce<int64_t>(comm, level, MPI_INT64_T, Op::Prod, "INT64_T", 129, in_place);
        allreduce_minloc(comm, level, in_place);
        reduce<int>(comm, level, MPI_INT, Op::Sum, "INT", 1000, in_place);
        reduce<double>(comm, level, MPI_DOUBLE, Op::Sum, "DOUBLE", 300, in_place);
        allgather(comm, level, in_place);
        reduce_scatter_block<int>(comm, level, MPI_INT, Op::Sum, "INT", 250, in_place);
        reduce_scatter_block<double>(comm, level, MPI_DOUBLE, Op::Sum, "DOUBLE", 99, in_place);
    }
    bcast<uint8_t>(comm, level, MPI_BYTE, "BYTE", 2000);
    bcast<double>(comm, level, MPI_DOUBLE, "DOUBLE", 700);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_DOUBLE, &pair);
    MPI_Type_commit(&pair);
    bcast<double>(comm, level, pair, "2 x DOUBLE", 2 * 350, 2);
    barrier(comm, level);
    together(comm, level);
    const long host = host_starts(comm, level);
    ++checks;
    INA_CHECK(counters.fallbacks(comm) == host, "fallbacks: %lld, want %ld (the host starts)",
              counters.fallbacks(comm), host);

    counters.close();
    MPI_Comm_free(&comm);
    int code = finish("test_persistent", checks);
    MPI_Finalize();
    return code;
}

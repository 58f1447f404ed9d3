/* Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause */
// Every MPI collective on an intercommunicator, blocking and non-blocking:
// MPI_COMM_WORLD is split by rank parity (uneven halves for an odd np) and
// joined again with MPI_Intercomm_create. ina declines intercommunicators, so
// these run on Open MPI's own components (with `--mca coll ina` alone, those
// ina hosts); each result is checked against a reference computed here with
// intercommunicator semantics: what a process receives comes from the remote
// group (rooted calls: MPI_ROOT at the root, MPI_PROC_NULL at the other
// members of its group, whose buffers stay untouched). Then
// MPI_Intercomm_merge gives an intracommunicator on which ina offloads again.
//
// usage: test_intercomm [-q]   (-q: fewer sizes)
#include "ina_mpi_test.h"

#include <unistd.h>

#include <algorithm>

using namespace inatest;

namespace {

long checks = 0;

struct Inter {
    MPI_Comm comm;           // the intercommunicator
    int color;               // which half of MPI_COMM_WORLD: world rank % 2
    int rank, size;          // in the local group
    int rsize;               // of the remote group
    std::vector<int> remote_world; // world rank of every remote rank

    int group_size(int c) const { return c == color ? size : rsize; }
};

// Element i of the input of rank r of group `color` for the call `seed`: a
// non-negative integer below 2^20, so double sums of a few of them are exact
// and -1 marks an untouched element.
template <typename T> T val(int color, int r, size_t i, uint64_t seed)
{
    return static_cast<T>(mix(seed * 1000003u + static_cast<uint64_t>(color) * 7919u +
                              static_cast<uint64_t>(r) * 131071u + i) &
                          0xfffff);
}

// What rank `from` of group `color` sends to remote rank `to` (all-to-all).
template <typename T> T block_val(int color, int from, int to, size_t i, uint64_t seed)
{
    return val<T>(color, from, (static_cast<size_t>(to) << 32) + i, seed);
}

// Reference reduction of the inputs of every rank of group `color`, in rank order.
template <typename T> std::vector<T> reduced(Op op, int color, int nranks, size_t n, uint64_t seed)
{
    std::vector<T> ref(n);
    for (size_t i = 0; i < n; ++i) {
        T acc = val<T>(color, 0, i, seed);
        for (int r = 1; r < nranks; ++r) acc = apply<T>(op, acc, val<T>(color, r, i, seed));
        ref[i] = acc;
    }
    return ref;
}

template <typename T>
void check_vec(const std::vector<T> &got, const std::vector<T> &want, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        if (!(got[i] == want[i]) && bad++ < 3) {
            INA_CHECK(false, "%s [%zu] got %s want %s", what, i, show(got[i]).c_str(),
                      show(want[i]).c_str());
        }
    }
    ++checks;
    INA_CHECK(got.size() == want.size() && bad == 0, "%s: %zu wrong of %zu", what, bad,
              want.size());
}

void check_rc(int rc, const char *what)
{
    ++checks;
    INA_CHECK(rc == MPI_SUCCESS, "%s: rc %d", what, rc);
}

// The blocking call, or the non-blocking one and a wait for it.
template <typename B, typename N> int run(bool nb, B blocking, N nonblocking)
{
    if (!nb) return blocking();
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = nonblocking(&req);
    return rc == MPI_SUCCESS ? MPI_Wait(&req, MPI_STATUS_IGNORE) : rc;
}

// Per-peer counts and displacements of a v-collective: equal and packed, or
// varying with the peer and laid out in reverse peer order with gaps (which
// must stay untouched). Returns the extent in elements.
int layout(int peers, int n, bool v, std::vector<int> &counts, std::vector<int> &displs)
{
    counts.assign(peers, n);
    displs.assign(peers, 0);
    int pos = 0;
    for (int k = 0; k < peers; ++k) {
        int r = v ? peers - 1 - k : k;
        if (v) counts[r] = n + 2 * r + 1;
        displs[r] = pos;
        pos += counts[r] + (v ? 3 : 0);
    }
    return pos;
}

// The argument `root` of a rooted call whose root is rank `root` of group `rc`.
int root_arg(const Inter &x, int rc, int root)
{
    if (x.color != rc) return root;
    return x.rank == root ? MPI_ROOT : MPI_PROC_NULL;
}

// ------------------------------------------------------------------ barrier
// Every rank raises its flag in a shared-memory window, then the barrier:
// MPI lets a process leave an intercommunicator barrier only once every
// process of the remote group has entered it.
//
// MPI_Ibarrier is checked for less: that the remote group's rank 0 entered.
// Open MPI 4.1.4's only non-blocking intercommunicator barrier (libnbc's
// ibarrier_inter, the same whether ina runs alone or stacked) lets a rank
// other than 0 leave once the remote rank 0 answered, and the remote rank 0
// waits only for this side: a remote rank other than 0 may not have entered
// yet (seen here with groups of 3 and 2). ina does not serve
// intercommunicators, so this is Open MPI's behaviour, documented in
// docs/ARCHITECTURE.md ("Known limits").
void barrier_case(Inter &x, bool nb, int rounds)
{
    const char *what = nb ? "Ibarrier" : "Barrier";
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nsize, wsize, wrank;
    MPI_Comm_size(node, &nsize);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    auto barrier = [&] {
        return run(nb, [&] { return MPI_Barrier(x.comm); },
                   [&](MPI_Request *r) { return MPI_Ibarrier(x.comm, r); });
    };
    if (nsize != wsize) { // the check needs every rank on one node
        for (int round = 0; round < rounds; ++round) check_rc(barrier(), what);
        MPI_Comm_free(&node);
        return;
    }
    int *base, *flags, disp;
    MPI_Aint sz;
    MPI_Win win;
    MPI_Win_allocate_shared(sizeof(int) * wsize, sizeof(int), MPI_INFO_NULL, node, &base, &win);
    MPI_Win_shared_query(win, 0, &sz, &disp, &flags);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    if (wrank == 0) std::fill(flags, flags + wsize, 0);
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    for (int round = 1; round <= rounds; ++round) {
        __atomic_store_n(&flags[wrank], round, __ATOMIC_RELEASE);
        MPI_Win_sync(win);
        check_rc(barrier(), what);
        MPI_Win_sync(win);
        int behind = 0;
        const size_t checked = nb ? 1 : x.remote_world.size(); // see above
        for (size_t i = 0; i < checked; ++i) {
            behind += __atomic_load_n(&flags[x.remote_world[i]], __ATOMIC_ACQUIRE) < round;
        }
        ++checks;
        INA_CHECK(behind == 0, "%s round %d: %d remote ranks had not entered", what, round, behind);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
}

// ------------------------------------------------------------------ rooted
void bcast_case(Inter &x, int rc, int root, int n, bool nb, uint64_t seed)
{
    char what[96];
    std::snprintf(what, sizeof(what), "%s root=%d/%d n=%d", nb ? "Ibcast" : "Bcast", rc, root, n);
    std::vector<int> ref(n), buf(n, -1);
    for (int i = 0; i < n; ++i) ref[i] = val<int>(rc, root, i, seed);
    const int arg = root_arg(x, rc, root);
    if (arg == MPI_ROOT) buf = ref;
    check_rc(run(nb, [&] { return MPI_Bcast(buf.data(), n, MPI_INT, arg, x.comm); },
                 [&](MPI_Request *r) { return MPI_Ibcast(buf.data(), n, MPI_INT, arg, x.comm, r); }),
             what);
    check_vec(buf, arg == MPI_PROC_NULL ? std::vector<int>(n, -1) : ref, what);
}

// Gather(v): the root receives from every rank of the remote group.
void gather_case(Inter &x, int rc, int root, int n, bool v, bool nb, uint64_t seed)
{
    char what[96];
    std::snprintf(what, sizeof(what), "%sGather%s root=%d/%d n=%d", nb ? "I" : "", v ? "v" : "",
                  rc, root, n);
    const int arg = root_arg(x, rc, root);
    std::vector<int> counts, displs;
    const int extent = layout(x.group_size(1 - rc), n, v, counts, displs);
    std::vector<int> in, out(extent, -1), want(extent, -1);
    int scount = 0;
    if (x.color != rc) {
        scount = counts[x.rank];
        in.resize(scount);
        for (int i = 0; i < scount; ++i) in[i] = val<int>(x.color, x.rank, i, seed);
    } else if (arg == MPI_ROOT) {
        for (int r = 0; r < x.rsize; ++r)
            for (int i = 0; i < counts[r]; ++i) want[displs[r] + i] = val<int>(1 - rc, r, i, seed);
    }
    int rcode = run(
        nb,
        [&] {
            return v ? MPI_Gatherv(in.data(), scount, MPI_INT, out.data(), counts.data(),
                                   displs.data(), MPI_INT, arg, x.comm)
                     : MPI_Gather(in.data(), scount, MPI_INT, out.data(), n, MPI_INT, arg, x.comm);
        },
        [&](MPI_Request *r) {
            return v ? MPI_Igatherv(in.data(), scount, MPI_INT, out.data(), counts.data(),
                                    displs.data(), MPI_INT, arg, x.comm, r)
                     : MPI_Igather(in.data(), scount, MPI_INT, out.data(), n, MPI_INT, arg, x.comm,
                                   r);
        });
    check_rc(rcode, what);
    check_vec(out, want, what); // untouched (-1) except at the root
}

// Scatter(v): the root sends a part to every rank of the remote group.
void scatter_case(Inter &x, int rc, int root, int n, bool v, bool nb, uint64_t seed)
{
    char what[96];
    std::snprintf(what, sizeof(what), "%sScatter%s root=%d/%d n=%d", nb ? "I" : "", v ? "v" : "",
                  rc, root, n);
    const int arg = root_arg(x, rc, root);
    std::vector<int> counts, displs;
    const int extent = layout(x.group_size(1 - rc), n, v, counts, displs);
    std::vector<int> in(extent, -1), out, want;
    int rcount = 0;
    if (arg == MPI_ROOT) {
        for (int i = 0; i < extent; ++i) in[i] = val<int>(rc, root, i, seed);
    }
    if (x.color != rc) {
        rcount = counts[x.rank];
        out.assign(rcount + 1, -1); // one more: nothing may be written past the part
        want.assign(rcount + 1, -1);
        for (int i = 0; i < rcount; ++i) want[i] = val<int>(rc, root, displs[x.rank] + i, seed);
    } else {
        out.assign(1, -1);
        want.assign(1, -1);
    }
    int rcode = run(
        nb,
        [&] {
            return v ? MPI_Scatterv(in.data(), counts.data(), displs.data(), MPI_INT, out.data(),
                                    rcount, MPI_INT, arg, x.comm)
                     : MPI_Scatter(in.data(), n, MPI_INT, out.data(), rcount, MPI_INT, arg, x.comm);
        },
        [&](MPI_Request *r) {
            return v ? MPI_Iscatterv(in.data(), counts.data(), displs.data(), MPI_INT, out.data(),
                                     rcount, MPI_INT, arg, x.comm, r)
                     : MPI_Iscatter(in.data(), n, MPI_INT, out.data(), rcount, MPI_INT, arg, x.comm,
                                    r);
        });
    check_rc(rcode, what);
    check_vec(out, want, what);
}

// Reduce: the root gets the reduction of the remote group's inputs.
template <typename T>
void reduce_case(Inter &x, MPI_Datatype dt, Op op, MPI_Op mop, int rc, int root, int n, bool nb,
                 uint64_t seed)
{
    char what[96];
    std::snprintf(what, sizeof(what), "%s root=%d/%d n=%d", nb ? "Ireduce" : "Reduce", rc, root, n);
    const int arg = root_arg(x, rc, root);
    std::vector<T> in(n), out(n, T(-1)), want(n, T(-1));
    for (int i = 0; i < n; ++i) in[i] = val<T>(x.color, x.rank, i, seed);
    if (arg == MPI_ROOT) want = reduced<T>(op, 1 - rc, x.rsize, n, seed);
    check_rc(run(nb, [&] { return MPI_Reduce(in.data(), out.data(), n, dt, mop, arg, x.comm); },
                 [&](MPI_Request *r) {
                     return MPI_Ireduce(in.data(), out.data(), n, dt, mop, arg, x.comm, r);
                 }),
             what);
    if (x.color == rc) check_vec(out, want, what); // the other group's rbuf is not significant
}

// ------------------------------------------------------------------ all-to-all kinds
// Allgather(v): every process receives the parts of every remote process.
// The groups send different amounts: group c sends n + c elements (v: plus
// 2 * rank + 1) per process.
void allgather_case(Inter &x, int n, bool v, bool nb, uint64_t seed)
{
    char what[96];
    std::snprintf(what, sizeof(what), "%sAllgather%s n=%d", nb ? "I" : "", v ? "v" : "", n);
    std::vector<int> counts, displs, mine_c, mine_d;
    const int extent = layout(x.rsize, n + (1 - x.color), v, counts, displs);
    layout(x.size, n + x.color, v, mine_c, mine_d);
    const int scount = mine_c[x.rank];
    std::vector<int> in(scount), out(extent, -1), want(extent, -1);
    for (int i = 0; i < scount; ++i) in[i] = val<int>(x.color, x.rank, i, seed);
    for (int r = 0; r < x.rsize; ++r)
        for (int i = 0; i < counts[r]; ++i) want[displs[r] + i] = val<int>(1 - x.color, r, i, seed);
    const int rcount = n + (1 - x.color);
    int rcode = run(
        nb,
        [&] {
            return v ? MPI_Allgatherv(in.data(), scount, MPI_INT, out.data(), counts.data(),
                                      displs.data(), MPI_INT, x.comm)
                     : MPI_Allgather(in.data(), scount, MPI_INT, out.data(), rcount, MPI_INT, x.comm);
        },
        [&](MPI_Request *r) {
            return v ? MPI_Iallgatherv(in.data(), scount, MPI_INT, out.data(), counts.data(),
                                       displs.data(), MPI_INT, x.comm, r)
                     : MPI_Iallgather(in.data(), scount, MPI_INT, out.data(), rcount, MPI_INT,
                                      x.comm, r);
        });
    check_rc(rcode, what);
    check_vec(out, want, what);
}

// Alltoall: group c sends n + c elements to every remote process.
void alltoall_case(Inter &x, int n, bool nb, uint64_t seed)
{
    char what[96];
    std::snprintf(what, sizeof(what), "%s n=%d", nb ? "Ialltoall" : "Alltoall", n);
    const int sc = n + x.color, rcnt = n + (1 - x.color);
    std::vector<int> in(static_cast<size_t>(sc) * x.rsize), out(static_cast<size_t>(rcnt) * x.rsize, -1),
        want(out.size());
    for (int r = 0; r < x.rsize; ++r) {
        for (int i = 0; i < sc; ++i) in[r * sc + i] = block_val<int>(x.color, x.rank, r, i, seed);
        for (int i = 0; i < rcnt; ++i)
            want[r * rcnt + i] = block_val<int>(1 - x.color, r, x.rank, i, seed);
    }
    check_rc(run(nb,
                 [&] {
                     return MPI_Alltoall(in.data(), sc, MPI_INT, out.data(), rcnt, MPI_INT, x.comm);
                 },
                 [&](MPI_Request *r) {
                     return MPI_Ialltoall(in.data(), sc, MPI_INT, out.data(), rcnt, MPI_INT, x.comm,
                                          r);
                 }),
             what);
    check_vec(out, want, what);
}

// Elements rank `from` of group `color` sends to remote rank `to` (v and w):
// even, from 2 to 8 times n.
int a2a_count(int color, int from, int to, int n)
{
    return 2 * n * (1 + (from + 2 * to + color) % 4);
}

// Alltoallv: counts vary with both ranks; both sides in reverse order with gaps.
void alltoallv_case(Inter &x, int n, bool nb, uint64_t seed)
{
    char what[96];
    std::snprintf(what, sizeof(what), "%s n=%d", nb ? "Ialltoallv" : "Alltoallv", n);
    std::vector<int> sc(x.rsize), sd(x.rsize), rcn(x.rsize), rd(x.rsize);
    int spos = 0, rpos = 0;
    for (int k = x.rsize - 1; k >= 0; --k) {
        sc[k] = a2a_count(x.color, x.rank, k, n);
        rcn[k] = a2a_count(1 - x.color, k, x.rank, n);
        sd[k] = spos;
        rd[k] = rpos;
        spos += sc[k] + 1;
        rpos += rcn[k] + 2;
    }
    std::vector<int> in(spos, -1), out(rpos, -1), want(rpos, -1);
    for (int r = 0; r < x.rsize; ++r) {
        for (int i = 0; i < sc[r]; ++i) in[sd[r] + i] = block_val<int>(x.color, x.rank, r, i, seed);
        for (int i = 0; i < rcn[r]; ++i)
            want[rd[r] + i] = block_val<int>(1 - x.color, r, x.rank, i, seed);
    }
    check_rc(run(nb,
                 [&] {
                     return MPI_Alltoallv(in.data(), sc.data(), sd.data(), MPI_INT, out.data(),
                                          rcn.data(), rd.data(), MPI_INT, x.comm);
                 },
                 [&](MPI_Request *r) {
                     return MPI_Ialltoallv(in.data(), sc.data(), sd.data(), MPI_INT, out.data(),
                                           rcn.data(), rd.data(), MPI_INT, x.comm, r);
                 }),
             what);
    check_vec(out, want, what);
}

// Alltoallw: per-peer datatypes and byte displacements; to every other peer
// the data goes as pairs (a contiguous type of two ints) and arrives as ints.
void alltoallw_case(Inter &x, int n, bool nb, uint64_t seed)
{
    char what[96];
    std::snprintf(what, sizeof(what), "%s n=%d", nb ? "Ialltoallw" : "Alltoallw", n);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    std::vector<int> sc(x.rsize), sd(x.rsize), rcn(x.rsize), rd(x.rsize);
    std::vector<MPI_Datatype> st(x.rsize), rt(x.rsize, MPI_INT);
    int spos = 0, rpos = 0; // in ints
    for (int k = x.rsize - 1; k >= 0; --k) {
        const int ints = a2a_count(x.color, x.rank, k, n);
        const bool pairs = (x.rank + k) % 2 == 0;
        st[k] = pairs ? pair : MPI_INT;
        sc[k] = pairs ? ints / 2 : ints;
        sd[k] = spos * static_cast<int>(sizeof(int));
        spos += ints + 1;
        rcn[k] = a2a_count(1 - x.color, k, x.rank, n);
        rd[k] = rpos * static_cast<int>(sizeof(int));
        rpos += rcn[k] + 2;
    }
    std::vector<int> in(spos, -1), out(rpos, -1), want(rpos, -1);
    for (int r = 0; r < x.rsize; ++r) {
        const int ints = a2a_count(x.color, x.rank, r, n);
        for (int i = 0; i < ints; ++i)
            in[sd[r] / sizeof(int) + i] = block_val<int>(x.color, x.rank, r, i, seed);
        for (int i = 0; i < rcn[r]; ++i)
            want[rd[r] / sizeof(int) + i] = block_val<int>(1 - x.color, r, x.rank, i, seed);
    }
    check_rc(run(nb,
                 [&] {
                     return MPI_Alltoallw(in.data(), sc.data(), sd.data(), st.data(), out.data(),
                                          rcn.data(), rd.data(), rt.data(), x.comm);
                 },
                 [&](MPI_Request *r) {
                     return MPI_Ialltoallw(in.data(), sc.data(), sd.data(), st.data(), out.data(),
                                           rcn.data(), rd.data(), rt.data(), x.comm, r);
                 }),
             what);
    check_vec(out, want, what);
    MPI_Type_free(&pair);
}

// Allreduce: every process gets the reduction of the remote group's inputs.
template <typename T>
void allreduce_case(Inter &x, MPI_Datatype dt, Op op, MPI_Op mop, int n, bool nb, uint64_t seed)
{
    char what[96];
    std::snprintf(what, sizeof(what), "%s n=%d", nb ? "Iallreduce" : "Allreduce", n);
    std::vector<T> in(n), out(n, T(-1));
    for (int i = 0; i < n; ++i) in[i] = val<T>(x.color, x.rank, i, seed);
    check_rc(run(nb, [&] { return MPI_Allreduce(in.data(), out.data(), n, dt, mop, x.comm); },
                 [&](MPI_Request *r) {
                     return MPI_Iallreduce(in.data(), out.data(), n, dt, mop, x.comm, r);
                 }),
             what);
    check_vec(out, reduced<T>(op, 1 - x.color, x.rsize, n, seed), what);
}

// Reduce_scatter: the reduction of the remote group's vectors is scattered
// over the local group by the local recvcounts; both groups' counts add up to
// the same total, split differently (rank r gets a share growing with r).
template <typename T>
void reduce_scatter_case(Inter &x, MPI_Datatype dt, Op op, MPI_Op mop, int n, bool nb,
                         uint64_t seed)
{
    char what[96];
    std::snprintf(what, sizeof(what), "%s n=%d", nb ? "Ireduce_scatter" : "Reduce_scatter", n);
    const int total = n * 6;
    std::vector<int> counts(x.size);
    const int weight = x.size * (x.size + 1) / 2;
    int given = 0, off = 0;
    for (int r = 0; r < x.size; ++r) {
        counts[r] = r == x.size - 1 ? total - given : total * (r + 1) / weight;
        if (r < x.rank) off += counts[r];
        given += counts[r];
    }
    std::vector<T> in(total), out(counts[x.rank] + 1, T(-1));
    for (int i = 0; i < total; ++i) in[i] = val<T>(x.color, x.rank, i, seed);
    std::vector<T> all = reduced<T>(op, 1 - x.color, x.rsize, total, seed);
    std::vector<T> want(all.begin() + off, all.begin() + off + counts[x.rank]);
    want.push_back(T(-1));
    check_rc(run(nb,
                 [&] {
                     return MPI_Reduce_scatter(in.data(), out.data(), counts.data(), dt, mop,
                                               x.comm);
                 },
                 [&](MPI_Request *r) {
                     return MPI_Ireduce_scatter(in.data(), out.data(), counts.data(), dt, mop,
                                                x.comm, r);
                 }),
             what);
    check_vec(out, want, what);
}

// Reduce_scatter_block: group c gives each rank (remote size) * n elements,
// so both groups reduce vectors of size * rsize * n elements.
template <typename T>
void reduce_scatter_block_case(Inter &x, MPI_Datatype dt, Op op, MPI_Op mop, int n, bool nb,
                               uint64_t seed)
{
    char what[96];
    std::snprintf(what, sizeof(what), "%s n=%d",
                  nb ? "Ireduce_scatter_block" : "Reduce_scatter_block", n);
    const int rcount = x.rsize * n, total = x.size * rcount;
    std::vector<T> in(total), out(rcount + 1, T(-1));
    for (int i = 0; i < total; ++i) in[i] = val<T>(x.color, x.rank, i, seed);
    std::vector<T> all = reduced<T>(op, 1 - x.color, x.rsize, total, seed);
    std::vector<T> want(all.begin() + x.rank * rcount, all.begin() + (x.rank + 1) * rcount);
    want.push_back(T(-1));
    check_rc(run(nb,
                 [&] {
                     return MPI_Reduce_scatter_block(in.data(), out.data(), rcount, dt, mop, x.comm);
                 },
                 [&](MPI_Request *r) {
                     return MPI_Ireduce_scatter_block(in.data(), out.data(), rcount, dt, mop,
                                                      x.comm, r);
                 }),
             what);
    check_vec(out, want, what);
}

// Several non-blocking calls outstanding on the intercommunicator at once,
// completed in reverse order.
void overlap_case(Inter &x, int n, uint64_t seed)
{
    std::vector<long long> ar_in(n), ar_out(n, -1);
    for (int i = 0; i < n; ++i) ar_in[i] = val<long long>(x.color, x.rank, i, seed);
    std::vector<int> a2a_in(static_cast<size_t>(n) * x.rsize), a2a_out(a2a_in.size(), -1),
        a2a_want(a2a_in.size());
    for (int r = 0; r < x.rsize; ++r) {
        for (int i = 0; i < n; ++i) {
            a2a_in[r * n + i] = block_val<int>(x.color, x.rank, r, i, seed + 1);
            a2a_want[r * n + i] = block_val<int>(1 - x.color, r, x.rank, i, seed + 1);
        }
    }
    std::vector<int> bc(n, -1), bc_ref(n);
    for (int i = 0; i < n; ++i) bc_ref[i] = val<int>(1, 0, i, seed + 2);
    const int barg = root_arg(x, 1, 0);
    if (barg == MPI_ROOT) bc = bc_ref;
    MPI_Request req[4];
    MPI_Ibarrier(x.comm, &req[0]);
    MPI_Iallreduce(ar_in.data(), ar_out.data(), n, MPI_LONG_LONG, MPI_SUM, x.comm, &req[1]);
    MPI_Ialltoall(a2a_in.data(), n, MPI_INT, a2a_out.data(), n, MPI_INT, x.comm, &req[2]);
    MPI_Ibcast(bc.data(), n, MPI_INT, barg, x.comm, &req[3]);
    for (int k = 3; k >= 0; --k) check_rc(MPI_Wait(&req[k], MPI_STATUS_IGNORE), "overlap wait");
    check_vec(ar_out, reduced<long long>(Op::Sum, 1 - x.color, x.rsize, n, seed), "overlap Iallreduce");
    check_vec(a2a_out, a2a_want, "overlap Ialltoall");
    check_vec(bc, barg == MPI_PROC_NULL ? std::vector<int>(n, -1) : bc_ref, "overlap Ibcast");
}

void every_collective(Inter &x, const std::vector<int> &sizes, int barrier_rounds)
{
    uint64_t seed = 1000;
    for (bool nb : {false, true}) {
        barrier_case(x, nb, barrier_rounds);
        for (int n : sizes) {
            for (int rc = 0; rc < 2; ++rc) {
                for (int root : {0, x.group_size(rc) - 1}) {
                    bcast_case(x, rc, root, n, nb, ++seed);
                    for (bool v : {false, true}) {
                        gather_case(x, rc, root, n, v, nb, ++seed);
                        scatter_case(x, rc, root, n, v, nb, ++seed);
                    }
                    reduce_case<long long>(x, MPI_LONG_LONG, Op::Sum, MPI_SUM, rc, root, n, nb, ++seed);
                    reduce_case<double>(x, MPI_DOUBLE, Op::Max, MPI_MAX, rc, root, n, nb, ++seed);
                }
            }
            for (bool v : {false, true}) allgather_case(x, n, v, nb, ++seed);
            alltoall_case(x, n, nb, ++seed);
            alltoallv_case(x, n, nb, ++seed);
            alltoallw_case(x, n, nb, ++seed);
            allreduce_case<int>(x, MPI_INT, Op::Bxor, MPI_BXOR, n, nb, ++seed);
            allreduce_case<double>(x, MPI_DOUBLE, Op::Sum, MPI_SUM, n, nb, ++seed);
            reduce_scatter_case<long long>(x, MPI_LONG_LONG, Op::Sum, MPI_SUM, n, nb, ++seed);
            reduce_scatter_case<double>(x, MPI_DOUBLE, Op::Min, MPI_MIN, n, nb, ++seed);
            reduce_scatter_block_case<int>(x, MPI_INT, Op::Max, MPI_MAX, n, nb, ++seed);
            reduce_scatter_block_case<double>(x, MPI_DOUBLE, Op::Sum, MPI_SUM, n, nb, ++seed);
        }
    }
    for (int n : sizes) overlap_case(x, n, ++seed);
}

// An intercommunicator from the two halves of `parent` (split by world rank parity).
Inter make_inter(MPI_Comm parent)
{
    Inter x{};
    int wrank;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    x.color = wrank % 2;
    MPI_Comm local;
    MPI_Comm_split(parent, x.color, wrank, &local);
    // Local leaders: world ranks 0 and 1, ranks 0 and 1 of parent too.
    check_rc(MPI_Intercomm_create(local, 0, parent, 1 - x.color, 77, &x.comm),
             "MPI_Intercomm_create");
    MPI_Comm_free(&local);
    int flag = 0;
    MPI_Comm_test_inter(x.comm, &flag);
    ++checks;
    INA_CHECK(flag, "MPI_Intercomm_create did not make an intercommunicator");
    MPI_Comm_rank(x.comm, &x.rank);
    MPI_Comm_size(x.comm, &x.size);
    MPI_Comm_remote_size(x.comm, &x.rsize);
    MPI_Group remote, world;
    MPI_Comm_remote_group(x.comm, &remote);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    std::vector<int> ranks(x.rsize);
    for (int r = 0; r < x.rsize; ++r) ranks[r] = r;
    x.remote_world.resize(x.rsize);
    MPI_Group_translate_ranks(remote, x.rsize, ranks.data(), world, x.remote_world.data());
    MPI_Group_free(&remote);
    MPI_Group_free(&world);
    return x;
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    bool quick = false;
    int opt;
    while ((opt = getopt(argc, argv, "q")) != -1) {
        if (opt == 'q') quick = true;
    }
    int wrank, wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wsize < 2) {
        if (wrank == 0) std::fprintf(stderr, "test_intercomm needs at least 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    Counters counters;
    Inter x = make_inter(MPI_COMM_WORLD);
    const std::vector<int> sizes = quick ? std::vector<int>{1, 3000} : std::vector<int>{1, 77, 20000};

    every_collective(x, sizes, quick ? 5 : 20);

    // ina declines intercommunicators: nothing of it is bound to this one.
    checks += 2;
    INA_CHECK(counters.offloaded(x.comm) == 0, "intercomm: offloaded counter %lld",
              counters.offloaded(x.comm));
    INA_CHECK(counters.fallbacks(x.comm) == 0, "intercomm: fallback counter %lld",
              counters.fallbacks(x.comm));

    // A duplicate of the intercommunicator works the same.
    {
        Inter d = x;
        check_rc(MPI_Comm_dup(x.comm, &d.comm), "MPI_Comm_dup(intercomm)");
        allreduce_case<long long>(d, MPI_LONG_LONG, Op::Sum, MPI_SUM, 1000, false, 77);
        alltoallv_case(d, 5, true, 78);
        MPI_Comm_free(&d.comm);
    }

    // Merged (group 0 first), the processes form an intracommunicator again,
    // on which ina offloads.
    MPI_Comm merged;
    check_rc(MPI_Intercomm_merge(x.comm, x.color, &merged), "MPI_Intercomm_merge");
    int mrank, msize;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    checks += 2;
    INA_CHECK(msize == wsize, "merged size %d", msize);
    INA_CHECK(mrank == (x.color == 0 ? x.rank : x.rsize + x.rank), "merged rank %d", mrank);
    {
        const int n = 4099;
        std::vector<long long> in(n), out(n, -1), want(n, 0);
        for (int i = 0; i < n; ++i) in[i] = val<long long>(0, mrank, i, 4242);
        for (int r = 0; r < msize; ++r)
            for (int i = 0; i < n; ++i) want[i] += val<long long>(0, r, i, 4242);
        long long before = counters.offloaded(merged);
        check_rc(MPI_Allreduce(in.data(), out.data(), n, MPI_LONG_LONG, MPI_SUM, merged),
                 "Allreduce on the merged communicator");
        check_vec(out, want, "Allreduce on the merged communicator");
        long long after = counters.offloaded(merged);
        ++checks;
        INA_CHECK(before >= 0 && after == before + 1,
                  "merged communicator: offloaded counter %lld -> %lld, want +1", before, after);
    }
    MPI_Comm_free(&merged);

    counters.close();
    MPI_Comm_free(&x.comm);
    int code = finish("test_intercomm", checks);
    MPI_Finalize();
    return code;
}

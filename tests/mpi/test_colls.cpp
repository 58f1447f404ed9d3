// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Every collective ina offloads besides Allreduce: Reduce (roots first, last,
// middle), Bcast (same roots), Barrier, Allgather, Reduce_scatter_block and
// Reduce_scatter (uneven parts), blocking and in place where MPI allows it.
// Values are checked against references computed here, and each call must
// raise the communicator's offloaded counter by one, and its node-only counter
// by one exactly when ina puts the communicator on one node (WorkLevel).
//
// usage: test_colls [-q]   (-q: fewer sizes, for large np)
#include "ina_mpi_test.h"

#include <unistd.h>

using namespace inatest;

namespace {

long checks = 0;

struct Ctx {
    MPI_Comm comm;
    int rank, size;
    WorkLevel *level;

    // The call just made must have been offloaded (exactly one more), by the
    // node stage or the agent as the communicator's layout calls for.
    void expect_offloaded(const char *what) { checks += level->expect(1, what); }
};

template <typename T>
void check_vec(const std::vector<T> &got, const std::vector<T> &want, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        if (!same_bits(got[i], want[i]) && bad++ < 3) {
            INA_CHECK(false, "%s [%zu] got %s want %s", what, i, show(got[i]).c_str(),
                      show(want[i]).c_str());
        }
    }
    ++checks;
    INA_CHECK(bad == 0, "%s: %zu wrong of %zu", what, bad, want.size());
}

template <typename T>
void reduce_case(Ctx &c, MPI_Datatype dt, Op op, MPI_Op mop, size_t count, int root, bool in_place,
                 uint64_t seed)
{
    char what[128];
    std::snprintf(what, sizeof(what), "Reduce count=%zu root=%d inplace=%d", count, root, in_place);
    std::vector<T> in(count), out(count, T(7)), ref(count);
    fill_input(in, op, c.rank, seed);
    reference(ref, op, c.comm, seed);
    int rc;
    if (in_place && c.rank == root) {
        out = in;
        rc = MPI_Reduce(MPI_IN_PLACE, out.data(), (int)count, dt, mop, root, c.comm);
    } else {
        rc = MPI_Reduce(in.data(), out.data(), (int)count, dt, mop, root, c.comm);
    }
    ++checks;
    INA_CHECK(rc == MPI_SUCCESS, "%s rc=%d", what, rc);
    if (c.rank == root) {
        check_vec(out, ref, what);
    } else if (!in_place) {
        // A non-root's receive buffer is not touched.
        ++checks;
        INA_CHECK(count == 0 || out[0] == T(7), "%s: non-root rbuf written", what);
    }
    if (count > 0) c.expect_offloaded(what);
}

void bcast_case(Ctx &c, size_t bytes, int root, uint64_t seed)
{
    char what[96];
    std::snprintf(what, sizeof(what), "Bcast bytes=%zu root=%d", bytes, root);
    std::vector<uint8_t> buf(bytes), ref(bytes);
    for (size_t i = 0; i < bytes; ++i) ref[i] = static_cast<uint8_t>(mix(seed + i));
    if (c.rank == root) buf = ref;
    int rc = MPI_Bcast(buf.data(), (int)bytes, MPI_BYTE, root, c.comm);
    ++checks;
    INA_CHECK(rc == MPI_SUCCESS, "%s rc=%d", what, rc);
    check_vec(buf, ref, what);
    if (bytes > 0) c.expect_offloaded(what);
}

// Bcast of doubles (a contiguous non-byte type) must move the same bits.
void bcast_double_case(Ctx &c, size_t count, int root)
{
    std::vector<double> buf(count), ref(count);
    fill_input(ref, Op::Sum, root, 99);
    if (c.rank == root) buf = ref;
    MPI_Bcast(buf.data(), (int)count, MPI_DOUBLE, root, c.comm);
    check_vec(buf, ref, "Bcast double");
    c.expect_offloaded("Bcast double");
}

template <typename T>
void allgather_case(Ctx &c, MPI_Datatype dt, size_t count, bool in_place, uint64_t seed)
{
    char what[96];
    std::snprintf(what, sizeof(what), "Allgather count=%zu inplace=%d", count, in_place);
    std::vector<T> mine(count), out(count * c.size), ref(count * c.size);
    fill_input(mine, Op::Sum, c.rank, seed);
    for (int r = 0; r < c.size; ++r) {
        std::vector<T> theirs(count);
        fill_input(theirs, Op::Sum, r, seed);
        std::copy(theirs.begin(), theirs.end(), ref.begin() + r * count);
    }
    int rc;
    if (in_place) {
        std::copy(mine.begin(), mine.end(), out.begin() + c.rank * count);
        rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out.data(), (int)count, dt, c.comm);
    } else {
        rc = MPI_Allgather(mine.data(), (int)count, dt, out.data(), (int)count, dt, c.comm);
    }
    ++checks;
    INA_CHECK(rc == MPI_SUCCESS, "%s rc=%d", what, rc);
    check_vec(out, ref, what);
    if (count > 0) c.expect_offloaded(what);
}

template <typename T>
void reduce_scatter_case(Ctx &c, MPI_Datatype dt, Op op, MPI_Op mop, std::vector<int> counts,
                         bool block, bool in_place, uint64_t seed)
{
    char what[128];
    size_t total = 0, mine_off = 0;
    for (int r = 0; r < c.size; ++r) {
        if (r == c.rank) mine_off = total;
        total += counts[r];
    }
    std::snprintf(what, sizeof(what), "Reduce_scatter%s total=%zu inplace=%d", block ? "_block" : "",
                  total, in_place);
    std::vector<T> in(total), ref(total);
    fill_input(in, op, c.rank, seed);
    reference(ref, op, c.comm, seed);
    std::vector<T> want(ref.begin() + mine_off, ref.begin() + mine_off + counts[c.rank]);
    std::vector<T> out(in_place ? total : counts[c.rank]);
    int rc;
    if (in_place) {
        out = in;
        rc = block ? MPI_Reduce_scatter_block(MPI_IN_PLACE, out.data(), counts[0], dt, mop, c.comm)
                   : MPI_Reduce_scatter(MPI_IN_PLACE, out.data(), counts.data(), dt, mop, c.comm);
        out.resize(counts[c.rank]);
    } else {
        rc = block ? MPI_Reduce_scatter_block(in.data(), out.data(), counts[0], dt, mop, c.comm)
                   : MPI_Reduce_scatter(in.data(), out.data(), counts.data(), dt, mop, c.comm);
    }
    ++checks;
    INA_CHECK(rc == MPI_SUCCESS, "%s rc=%d", what, rc);
    check_vec(out, want, what);
    if (total > 0) c.expect_offloaded(what);
}

// Barrier: every rank writes its flag into a shared-memory window before the
// barrier; after it, every rank must see all flags.
void barrier_case(Ctx &c, int rounds)
{
    MPI_Comm node;
    MPI_Comm_split_type(c.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nsize;
    MPI_Comm_size(node, &nsize);
    if (nsize != c.size) { // the test needs every rank on one node
        MPI_Comm_free(&node);
        return;
    }
    int *base;
    MPI_Win win;
    MPI_Win_allocate_shared(sizeof(int) * c.size, sizeof(int), MPI_INFO_NULL, node, &base, &win);
    int *flags;
    MPI_Aint sz;
    int disp;
    MPI_Win_shared_query(win, 0, &sz, &disp, &flags);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    // Creating the node communicator ran collectives of its own on c.comm.
    c.level->rebase();
    for (int round = 1; round <= rounds; ++round) {
        __atomic_store_n(&flags[c.rank], round, __ATOMIC_RELEASE);
        MPI_Win_sync(win);
        MPI_Barrier(c.comm);
        c.expect_offloaded("Barrier");
        MPI_Win_sync(win);
        int behind = 0;
        for (int r = 0; r < c.size; ++r) behind += __atomic_load_n(&flags[r], __ATOMIC_ACQUIRE) < round;
        ++checks;
        INA_CHECK(behind == 0, "Barrier round %d: %d ranks had not arrived", round, behind);
        // Nobody may run ahead into round+1 before all have checked round:
        // a second barrier separates the check from the next write.
        MPI_Barrier(c.comm);
        c.expect_offloaded("Barrier");
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
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
    Counters counters;
    Ctx c{};
    MPI_Comm_dup(MPI_COMM_WORLD, &c.comm);
    MPI_Comm_rank(c.comm, &c.rank);
    MPI_Comm_size(c.comm, &c.size);
    WorkLevel level(counters, c.comm);
    c.level = &level;

    std::vector<size_t> counts = quick ? std::vector<size_t>{1, 20000}
                                       : std::vector<size_t>{1, 7, 1023, 20000, 70001};
    std::vector<int> roots = {0, c.size - 1, c.size / 2};
    uint64_t seed = 1000;

    for (int root : roots) {
        for (size_t n : counts) {
            reduce_case<double>(c, MPI_DOUBLE, Op::Sum, MPI_SUM, n, root, false, ++seed);
            reduce_case<int>(c, MPI_INT, Op::Max, MPI_MAX, n, root, true, ++seed);
            bcast_case(c, n * 3, root, ++seed);
        }
        reduce_case<uint8_t>(c, MPI_UINT8_T, Op::Sum, MPI_SUM, 100000, root, false, ++seed);
        bcast_double_case(c, 5000, root);
    }
    for (size_t n : counts) {
        allgather_case<int>(c, MPI_INT, n, false, ++seed);
        allgather_case<double>(c, MPI_DOUBLE, n, true, ++seed);
        allgather_case<uint8_t>(c, MPI_BYTE, n * 3 + 1, false, ++seed);
    }
    for (size_t n : counts) {
        std::vector<int> even(c.size, static_cast<int>(n));
        reduce_scatter_case<float>(c, MPI_FLOAT, Op::Sum, MPI_SUM, even, true, false, ++seed);
        reduce_scatter_case<long>(c, MPI_LONG, Op::Bxor, MPI_BXOR, even, true, true, ++seed);
        std::vector<int> uneven(c.size);
        for (int r = 0; r < c.size; ++r) uneven[r] = static_cast<int>((n * (r + 1)) % 4099 + r % 2);
        reduce_scatter_case<double>(c, MPI_DOUBLE, Op::Sum, MPI_SUM, uneven, false, false, ++seed);
        reduce_scatter_case<int>(c, MPI_INT, Op::Min, MPI_MIN, uneven, false, true, ++seed);
    }
    barrier_case(c, quick ? 10 : 50);

    counters.close();
    MPI_Comm_free(&c.comm);
    int code = finish("test_colls", checks);
    MPI_Finalize();
    return code;
}

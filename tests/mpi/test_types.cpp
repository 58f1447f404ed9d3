// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The whole predefined type × op matrix of MPI_Allreduce: every pair MPI defines is run and checked bit for bit
// against a reference computed here; every pair ina documents as offloaded
// must raise the offloaded counter (and the node-only one exactly when ina
// puts the communicator on one node), every other one the fallback counter —
// none may be silently wrong.
//   C integer types (incl. MPI_AINT/OFFSET/COUNT), floating types, complex
//   (SUM, PROD), MPI_C_BOOL (logical), MPI_BYTE (bitwise), MINLOC/MAXLOC pairs.
#include "ina_mpi_test.h"

#include <type_traits>

using namespace inatest;

namespace {

long checks = 0;
MPI_Comm comm;
int rank_, size_;
Counters *counters;
WorkLevel *level;

// One call; checks the counters moved as promised.
template <typename T, typename Ref>
void run(MPI_Datatype dt, MPI_Op op, const char *what, size_t n, bool offload, Ref make_input,
         T (*combine)(T, T), bool (*same)(const T &, const T &))
{
    std::vector<T> in(n), out(n), ref(n);
    for (size_t i = 0; i < n; ++i) in[i] = make_input(rank_, i);
    // In ina's fold order for this communicator (ina_mpi_test.h, fold_tree).
    const FoldTree tree = fold_tree(comm);
    for (size_t i = 0; i < n; ++i) {
        ref[i] = fold<T>(tree, [&](int r) { return make_input(r, i); }, combine);
    }
    level->rebase();
    long long fb0 = counters->fallbacks(comm);
    int rc = MPI_Allreduce(in.data(), out.data(), (int)n, dt, op, comm);
    long long fb1 = counters->fallbacks(comm);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += !same(out[i], ref[i]);
    checks += 3;
    INA_CHECK(rc == MPI_SUCCESS, "%s rc=%d", what, rc);
    INA_CHECK(bad == 0, "%s: %zu of %zu wrong", what, bad, n);
    if (offload) {
        INA_CHECK(fb1 == fb0, "%s: expected offload, fallback counter %lld -> %lld", what, fb0, fb1);
    } else {
        INA_CHECK(fb1 == fb0 + 1, "%s: expected fallback, fallback counter %lld -> %lld", what,
                  fb0, fb1);
    }
    checks += level->expect(offload ? 1 : 0, what);
}

template <typename T> bool bits_equal(const T &a, const T &b) { return same_bits(a, b); }

// ---------------------------------------------------------------- scalars
template <typename T> void scalar_type(MPI_Datatype dt, const char *tname)
{
    for (const OpInfo &o : all_ops()) {
        if (!op_defined<T>(o.op)) continue;
        static Op cur; // read by the capture-less lambdas below
        cur = o.op;
        char what[96];
        std::snprintf(what, sizeof(what), "%s %s", tname, o.name);
        run<T>(dt, o.mpi, what, 5003, true,
               [](int r, size_t i) { return input<T>(cur, r, i, 4242); },
               [](T a, T b) { return apply<T>(cur, a, b); }, bits_equal<T>);
    }
}

// ---------------------------------------------------------------- complex
template <typename R> Cx<R> cx_input(int r, size_t i, bool prod)
{
    R a = input<R>(prod ? Op::Prod : Op::Sum, r, i, 77), b = input<R>(prod ? Op::Prod : Op::Sum, r, i, 78);
    return {a, prod ? b - R(1) : b};
}
template <typename R> void complex_type(MPI_Datatype dt, const char *tname)
{
    char what[96];
    std::snprintf(what, sizeof(what), "%s SUM", tname);
    run<Cx<R>>(dt, MPI_SUM, what, 3001, true, [](int r, size_t i) { return cx_input<R>(r, i, false); },
               cx_sum<R>, cx_same<R>);
    std::snprintf(what, sizeof(what), "%s PROD", tname);
    run<Cx<R>>(dt, MPI_PROD, what, 3001, true, [](int r, size_t i) { return cx_input<R>(r, i, true); },
               cx_prod<R>, cx_same<R>);
}

// ---------------------------------------------------------------- pairs
template <typename V> Pair<V> pair_input(int r, size_t i)
{
    // Few distinct values: many ties, so the index rule matters.
    return {static_cast<V>(static_cast<int>(mix(r * 131 + i) % 4)), static_cast<int>(mix(r + 7 * i) % 1000)};
}
template <typename V> void pair_type(MPI_Datatype dt, const char *tname)
{
    char what[96];
    std::snprintf(what, sizeof(what), "%s MINLOC", tname);
    run<Pair<V>>(dt, MPI_MINLOC, what, 2999, true, pair_input<V>, minloc<V>, pair_same<V>);
    std::snprintf(what, sizeof(what), "%s MAXLOC", tname);
    run<Pair<V>>(dt, MPI_MAXLOC, what, 2999, true, pair_input<V>, maxloc<V>, pair_same<V>);
}

// ---------------------------------------------------------------- bool, byte
void bool_type()
{
    auto in = [](int r, size_t i) { return CBool{mix(r * 17 + i) % 3 != 0}; };
    run<CBool>(MPI_C_BOOL, MPI_LAND, "MPI_C_BOOL LAND", 4001, true, in,
               [](CBool a, CBool b) { return CBool{a.v && b.v}; }, cbool_same);
    run<CBool>(MPI_C_BOOL, MPI_LOR, "MPI_C_BOOL LOR", 4001, true, in,
               [](CBool a, CBool b) { return CBool{a.v || b.v}; }, cbool_same);
    run<CBool>(MPI_C_BOOL, MPI_LXOR, "MPI_C_BOOL LXOR", 4001, true, in,
               [](CBool a, CBool b) { return CBool{a.v != b.v}; }, cbool_same);
}

void byte_type()
{
    auto in = [](int r, size_t i) { return static_cast<uint8_t>(mix(r * 29 + i)); };
    run<uint8_t>(MPI_BYTE, MPI_BAND, "MPI_BYTE BAND", 4001, true, in,
                 [](uint8_t a, uint8_t b) { return static_cast<uint8_t>(a & b); }, bits_equal<uint8_t>);
    run<uint8_t>(MPI_BYTE, MPI_BOR, "MPI_BYTE BOR", 4001, true, in,
                 [](uint8_t a, uint8_t b) { return static_cast<uint8_t>(a | b); }, bits_equal<uint8_t>);
    run<uint8_t>(MPI_BYTE, MPI_BXOR, "MPI_BYTE BXOR", 4001, true, in,
                 [](uint8_t a, uint8_t b) { return static_cast<uint8_t>(a ^ b); }, bits_equal<uint8_t>);
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    Counters c;
    counters = &c;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    WorkLevel lv(c, comm);
    level = &lv;

    scalar_type<signed char>(MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR");
    scalar_type<unsigned char>(MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR");
    scalar_type<short>(MPI_SHORT, "MPI_SHORT");
    scalar_type<unsigned short>(MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT");
    scalar_type<int>(MPI_INT, "MPI_INT");
    scalar_type<unsigned>(MPI_UNSIGNED, "MPI_UNSIGNED");
    scalar_type<long>(MPI_LONG, "MPI_LONG");
    scalar_type<unsigned long>(MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG");
    scalar_type<long long>(MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT");
    scalar_type<unsigned long long>(MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG");
    scalar_type<int8_t>(MPI_INT8_T, "MPI_INT8_T");
    scalar_type<uint8_t>(MPI_UINT8_T, "MPI_UINT8_T");
    scalar_type<int16_t>(MPI_INT16_T, "MPI_INT16_T");
    scalar_type<uint16_t>(MPI_UINT16_T, "MPI_UINT16_T");
    scalar_type<int32_t>(MPI_INT32_T, "MPI_INT32_T");
    scalar_type<uint32_t>(MPI_UINT32_T, "MPI_UINT32_T");
    scalar_type<int64_t>(MPI_INT64_T, "MPI_INT64_T");
    scalar_type<uint64_t>(MPI_UINT64_T, "MPI_UINT64_T");
    scalar_type<MPI_Aint>(MPI_AINT, "MPI_AINT");
    scalar_type<MPI_Offset>(MPI_OFFSET, "MPI_OFFSET");
    scalar_type<MPI_Count>(MPI_COUNT, "MPI_COUNT");
    scalar_type<float>(MPI_FLOAT, "MPI_FLOAT");
    scalar_type<double>(MPI_DOUBLE, "MPI_DOUBLE");
    scalar_type<long double>(MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE");
    complex_type<float>(MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX");
    complex_type<double>(MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX");
    complex_type<long double>(MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX");
    bool_type();
    byte_type();
    pair_type<float>(MPI_FLOAT_INT, "MPI_FLOAT_INT");
    pair_type<double>(MPI_DOUBLE_INT, "MPI_DOUBLE_INT");
    pair_type<long>(MPI_LONG_INT, "MPI_LONG_INT");
    pair_type<int>(MPI_2INT, "MPI_2INT");
    pair_type<short>(MPI_SHORT_INT, "MPI_SHORT_INT");
    pair_type<long double>(MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT");

    c.close();
    MPI_Comm_free(&comm);
    int code = finish("test_types", checks);
    MPI_Finalize();
    return code;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The hyper-square's host algorithm (coll_ina_host, ompi_coll_ina/
// coll_ina_grid.c) over MPI's whole predefined type x op matrix. The
// scenario's topology file describes a grid of groups of four hosts and no
// agent serves the job, so every call runs on the hosts: on a communicator
// that covers whole groups (the world, and with -g G each group's ranks) the
// grid's rings run what they take, on one that does not (the even ranks)
// the algorithm ina replaced runs everything.
//
// The matrix, every (type, op) MPI defines:
//   the C integer types (signed/unsigned char, short, int, long, long long,
//   int8_t .. uint64_t) with SUM, PROD, MIN, MAX, LAND, LOR, LXOR, BAND,
//   BOR, BXOR; MPI_AINT, MPI_OFFSET, MPI_COUNT with all but the logical
//   ops; float, double, long double with SUM, PROD, MIN, MAX; the three C
//   complex types with SUM, PROD; MPI_C_BOOL with LAND, LOR, LXOR; MPI_BYTE
//   with BAND, BOR, BXOR; MINLOC and MAXLOC on the six pair types; user ops
//   (MPI_Op_create): commutative ones on MPI_UINT32_T, on a contiguous
//   derived type and on a type with a gap after each element, and a
//   non-commutative one (affine maps composed) that must fold in rank
//   order. MPI_CHAR, on which MPI defines no reduction, for the copies.
// The collectives, each with the lengths of `lengths` (1 element, odd ones,
// fewer than the rings' pieces, and ~70 KB: above every ring's pieces):
//   MPI_Allreduce and MPI_Reduce (roots 0, p/2, p - 1 in turn) and
//   MPI_Reduce_scatter_block over every (type, op); MPI_Allgather and
//   MPI_Bcast (roots alike) over every type; in place and not.
// Each check is one call run twice: blocking, then (the checks take turns)
// blocking, non-blocking (MPI_I*) or persistent (MPI_*_init, one start),
// the second in place where the check says so; and:
//   - integers, pairs, bools, user ops, MIN/MAX of floats, and the copies
//     equal a reference computed here from inputs every rank regenerates;
//     the inputs never overflow (Open MPI 4.1.4's vector kernels saturate
//     an 8-bit sum where its scalar ones wrap) and of MINLOC/MAXLOC ties
//     the lowest index wins; floating SUM and PROD, real and complex, come
//     within a rounding bound of the reference (the rings fold in their own
//     order);
//   - the second run's result has the first's bits (off the grid, where
//     Open MPI's own blocking and non-blocking algorithms differ, for exact
//     results only); where every rank holds
//     the result (MPI_Allreduce, MPI_Allgather, MPI_Bcast) every rank has
//     the same bits (an allgather of their digests), so each rank compares
//     a p-th of an allreduce's result with the reference;
//   - coll_ina_grid_calls rises, per call, by exactly the calls the grid
//     takes: the collective is routed to the grid (grid_runs, THE TABLE:
//     all five are) and the call is one the grid can take (grid_count: a
//     communicator on the grid, a commutative op, elements back to back;
//     coll_ina_host=grid in the scenarios, so no size threshold). The pair
//     types with a gap (MPI_DOUBLE_INT, MPI_LONG_INT, MPI_LONG_DOUBLE_INT,
//     MPI_SHORT_INT), the gapped user type and the non-commutative op go to
//     the previous algorithm, exact all the same.
//   - coll_ina_host_previous_calls rises by one for every other call, and
//     so does the counter of its reason (off the grid: no_grid or partial;
//     unequal nodes; a datatype or op the rings do not take), except
//     Open MPI's own context-id shape (MPI_Iallreduce of one MPI_INT, MAX or
//     MIN), which the component leaves to the previous component uncounted.
// Then on each communicator the grid serves whole, six non-blocking calls
// and a blocking one in flight together (tags of their own), exact.
// coll_ina_grid_nodes says how many nodes each communicator covers. Rank 0
// prints, per communicator, how many calls of each collective the grid ran.
//
// usage: test_grid -n NODES [-g RANKS_PER_GROUP] [-u]
//   -n: nodes the world covers (coll_ina_grid_nodes on MPI_COMM_WORLD)
//   -g: world ranks [k*G, (k+1)*G) fill group k: the split by group covers
//       one group (4 nodes) each
//   -u: the world's nodes hold unequal numbers of ranks: only its
//       MPI_Allreduce runs on the grid, its other collectives on the
//       algorithm ina replaced
#include "ina_mpi_test.h"

#include <unistd.h>

#if OMPI_MAJOR_VERSION < 5
#include <mpi-ext.h>
#define MPI_Allreduce_init MPIX_Allreduce_init
#define MPI_Reduce_init MPIX_Reduce_init
#define MPI_Bcast_init MPIX_Bcast_init
#define MPI_Allgather_init MPIX_Allgather_init
#define MPI_Reduce_scatter_block_init MPIX_Reduce_scatter_block_init
#endif

#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <string>

using namespace inatest;

namespace {

long checks = 0;

// ============================================================================
// The collectives under test, and which of them the grid's rings run.
enum class Coll { Allreduce, Reduce, ReduceScatterBlock, Allgather, Bcast };
constexpr Coll kColls[] = {Coll::Allreduce, Coll::Reduce, Coll::ReduceScatterBlock,
                           Coll::Allgather, Coll::Bcast};
constexpr int kNumColls = sizeof(kColls) / sizeof(kColls[0]);

const char *coll_name(Coll c)
{
    switch (c) {
    case Coll::Allreduce: return "MPI_Allreduce";
    case Coll::Reduce: return "MPI_Reduce";
    case Coll::ReduceScatterBlock: return "MPI_Reduce_scatter_block";
    case Coll::Allgather: return "MPI_Allgather";
    case Coll::Bcast: return "MPI_Bcast";
    }
    return "?";
}

bool is_reduction(Coll c) { return c != Coll::Allgather && c != Coll::Bcast; }

// How a call is made: MPI_Allreduce, MPI_Iallreduce and MPI_Wait, or
// MPI_Allreduce_init, MPI_Start, MPI_Wait and MPI_Request_free.
enum class Form { Blocking, Nonblocking, Persistent };

const char *form_name(Form f)
{
    switch (f) {
    case Form::Blocking: return "blocking";
    case Form::Nonblocking: return "non-blocking";
    case Form::Persistent: return "persistent";
    }
    return "?";
}

// >>> THE TABLE: whether the component routes a call of `c` that the grid
// can take (grid_count below) to the grid's rings. Each such call raises
// coll_ina_grid_calls by one on every rank of the communicator; every other
// call leaves it alone. The change that routes a collective to the grid
// flips its line here, and every count this test expects follows. <<<
bool grid_runs(Coll c)
{
    switch (c) {
    case Coll::Allreduce: return true;
    case Coll::Reduce: return true;
    case Coll::ReduceScatterBlock: return true;
    case Coll::Allgather: return true;
    case Coll::Bcast: return true;
    }
    return false;
}
// ============================================================================

// Whether elements of `dt` lie back to back from the buffer's start, as
// the grid's rings cut vectors: no gap inside an element nor between two,
// no offset (the rings take no type with a gap, even for one element).
bool contiguous_block(MPI_Datatype dt)
{
    MPI_Aint lb, extent, true_lb, true_extent;
    int size;
    MPI_Type_get_extent(dt, &lb, &extent);
    MPI_Type_get_true_extent(dt, &true_lb, &true_extent);
    MPI_Type_size(dt, &size);
    return lb == 0 && true_lb == 0 && extent == size && true_extent == size;
}

bool commutative(MPI_Op op)
{
    int commute = 1;
    if (op != MPI_OP_NULL) {
        MPI_Op_commutative(op, &commute);
    }
    return commute != 0;
}

// ---------------------------------------------------------------- elements
// What the checks need of each kind of element: bitwise equality (x87 long
// double padding aside), a distance and a size for the rounding bound of
// floating results, the bits a digest covers, and how to print one.
template <typename T> constexpr bool kFloating = std::is_floating_point_v<T>;
template <typename R> constexpr bool kFloating<Cx<R>> = true;
template <typename T> struct Real { using type = T; };
template <typename R> struct Real<Cx<R>> { using type = R; };

// The user ops' elements.
struct Triple { // MPI_Type_contiguous(3, MPI_INT32_T): sum (wrapping), min, xor
    int32_t s, lo, x;
};
struct Gap { // MPI_UINT32_T resized to 8 bytes: a gap after each element
    uint32_t v, pad;
};
struct Aff { // MPI_Type_contiguous(2, MPI_UINT32_T): x -> m x + c, mod 2^32
    uint32_t m, c;
};

template <typename T> bool elem_same(const T &a, const T &b) { return same_bits(a, b); }
template <typename R> bool elem_same(const Cx<R> &a, const Cx<R> &b) { return cx_same(a, b); }
template <typename V> bool elem_same(const Pair<V> &a, const Pair<V> &b) { return pair_same(a, b); }
bool elem_same(const CBool &a, const CBool &b) { return cbool_same(a, b); }
bool elem_same(const Triple &a, const Triple &b) { return a.s == b.s && a.lo == b.lo && a.x == b.x; }
bool elem_same(const Gap &a, const Gap &b) { return a.v == b.v; }
bool elem_same(const Aff &a, const Aff &b) { return a.m == b.m && a.c == b.c; }

template <typename T> long double elem_dist(const T &a, const T &b)
{
    return std::fabs(static_cast<long double>(a) - static_cast<long double>(b));
}
template <typename R> long double elem_dist(const Cx<R> &a, const Cx<R> &b)
{
    return std::max(elem_dist(a.re, b.re), elem_dist(a.im, b.im));
}
template <typename T> long double elem_size(const T &a) { return std::fabs(static_cast<long double>(a)); }
template <typename R> long double elem_size(const Cx<R> &a) { return elem_size(a.re) + elem_size(a.im); }

void feed_bytes(uint64_t &h, const void *p, size_t n)
{
    const unsigned char *b = static_cast<const unsigned char *>(p);
    for (size_t i = 0; i < n; ++i) {
        h = (h ^ b[i]) * 1099511628211ull;
    }
}
template <typename T> void feed(uint64_t &h, const T &v)
{
    feed_bytes(h, &v, std::is_same_v<T, long double> ? 10 : sizeof(T));
}
template <typename R> void feed(uint64_t &h, const Cx<R> &v) { feed(h, v.re), feed(h, v.im); }
template <typename V> void feed(uint64_t &h, const Pair<V> &v) { feed(h, v.v), feed(h, v.i); }
void feed(uint64_t &h, const CBool &v) { feed(h, v.v); }
void feed(uint64_t &h, const Triple &v) { feed(h, v.s), feed(h, v.lo), feed(h, v.x); }
void feed(uint64_t &h, const Gap &v) { feed(h, v.v); }
void feed(uint64_t &h, const Aff &v) { feed(h, v.m), feed(h, v.c); }

template <typename T> std::string elem_show(const T &v) { return show(v); }
template <typename R> std::string elem_show(const Cx<R> &v)
{
    return "(" + show(v.re) + ", " + show(v.im) + ")";
}
template <typename V> std::string elem_show(const Pair<V> &v)
{
    return "(" + show(v.v) + ", index " + show(v.i) + ")";
}
std::string elem_show(const CBool &v) { return v.v ? "true" : "false"; }
std::string elem_show(const Triple &v)
{
    return "(" + show(v.s) + ", " + show(v.lo) + ", " + show(v.x) + ")";
}
std::string elem_show(const Gap &v) { return show(v.v); }
std::string elem_show(const Aff &v) { return "(" + show(v.m) + ", " + show(v.c) + ")"; }

// ---------------------------------------------------------------- cases
// How close a result must come to the reference: equal, or (floating SUM,
// PROD) within 8 p eps times the sum (SUM) or the product (PROD) of the
// inputs' sizes: each side rounds at most p - 1 times.
enum class Bound { Exact, Sum, Prod };

// One (type, op) of the matrix, its element type erased: rank r's elements
// [0, n) (element i of a rank's vector depends on r and i alone, so a
// longer vector extends a shorter one) and the reference of the ranks
// 0 .. p - 1 folded in rank order, of elements [first, first + n).
struct Case {
    std::string type, name; // the type's, and the type's and op's
    MPI_Datatype dt;
    MPI_Op op;  // MPI_OP_NULL: the type alone (MPI_Allgather, MPI_Bcast)
    size_t ext; // bytes per element, MPI's extent of dt
    bool exact;
    std::function<void(int r, size_t n, char *buf)> fill;
    std::function<void(int p, size_t first, size_t n, char *ref, double *bound)> reference;
    // The first of n elements that differs (beyond bound[i], with a bound),
    // or n.
    std::function<size_t(const char *got, const char *want, const double *bound, size_t n)> mismatch;
    std::function<uint64_t(const char *buf, size_t n)> digest;
    std::function<std::string(const char *buf, size_t i)> show;
};

template <typename T> T load(const char *buf, size_t i)
{
    T v;
    std::memcpy(static_cast<void *>(&v), buf + i * sizeof(T), sizeof(T));
    return v;
}

template <typename T, typename Input, typename Combine>
Case make_case(const std::string &type, const char *op_name, MPI_Datatype dt, MPI_Op op, Bound how,
               Input input, Combine combine)
{
    Case k;
    k.type = type;
    k.name = op != MPI_OP_NULL ? type + " " + op_name : type;
    k.dt = dt;
    k.op = op;
    k.ext = sizeof(T);
    k.exact = how == Bound::Exact;
    k.fill = [input](int r, size_t n, char *buf) {
        for (size_t i = 0; i < n; ++i) {
            const T v = input(r, i);
            std::memcpy(buf + i * sizeof(T), static_cast<const void *>(&v), sizeof(T));
        }
    };
    k.reference = [input, combine, how](int p, size_t first, size_t n, char *ref, double *bound) {
        for (size_t i = 0; i < n; ++i) {
            T acc = input(0, first + i);
            [[maybe_unused]] long double size = 0;
            if constexpr (kFloating<T>) {
                size = elem_size(acc);
            }
            for (int r = 1; r < p; ++r) {
                const T v = input(r, first + i);
                acc = combine(acc, v);
                if constexpr (kFloating<T>) {
                    size = how == Bound::Prod ? size * elem_size(v) : size + elem_size(v);
                }
            }
            std::memcpy(ref + i * sizeof(T), static_cast<const void *>(&acc), sizeof(T));
            if constexpr (kFloating<T>) {
                if (bound != nullptr) {
                    using R = typename Real<T>::type;
                    bound[i] = static_cast<double>(8.0L * p * std::numeric_limits<R>::epsilon() * size);
                }
            }
        }
    };
    k.mismatch = [](const char *got, const char *want, const double *bound, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            const T a = load<T>(got, i), b = load<T>(want, i);
            if constexpr (kFloating<T>) {
                if (bound != nullptr) {
                    if (!(elem_dist(a, b) <= bound[i])) {
                        return i;
                    }
                    continue;
                }
            }
            if (!elem_same(a, b)) {
                return i;
            }
        }
        return n;
    };
    k.digest = [](const char *buf, size_t n) {
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < n; ++i) {
            feed(h, load<T>(buf, i));
        }
        return h;
    };
    k.show = [](const char *buf, size_t i) { return elem_show(load<T>(buf, i)); };
    MPI_Aint lb, extent;
    MPI_Type_get_extent(dt, &lb, &extent);
    ++checks;
    INA_CHECK(static_cast<size_t>(extent) == sizeof(T), "%s: extent %ld, the test's element %zu",
              type.c_str(), static_cast<long>(extent), sizeof(T));
    return k;
}

// ---------------------------------------------------------------- inputs
// Rank r's element i of the case with `seed`. Never overflowing at 16
// ranks: MPI does not say what an overflowing reduction gives.
uint64_t hash(uint64_t seed, int r, size_t i)
{
    return mix(seed * 1000003u + static_cast<uint64_t>(r) * 7919u + i * 104729u);
}

// Whether this MPI's MIN and MAX order `dt` as T: Open MPI 4.1.4 compares
// MPI_UNSIGNED_LONG as signed (open-mpi/ompi#10525, #10648) and MPI_OFFSET
// as unsigned, in its own kernels (MPI_Reduce_local): on the host, whatever
// algorithm runs the call.
template <typename T> bool host_orders(MPI_Datatype dt)
{
    const T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    T min[2] = {lo, hi}, max[2] = {lo, hi};
    const T a[2] = {hi, lo};
    MPI_Reduce_local(a, min, 2, dt, MPI_MIN);
    MPI_Reduce_local(a, max, 2, dt, MPI_MAX);
    return min[0] == lo && min[1] == lo && max[0] == hi && max[1] == hi;
}

// `whole`: MIN and MAX take the type's whole range, else (a library that
// orders the type wrongly) the values signed and unsigned order alike.
template <typename T> T int_input(Op op, int r, size_t i, uint64_t seed, bool whole = true)
{
    using U = std::make_unsigned_t<T>;
    const uint64_t h = hash(seed, r, i), h2 = mix(h), h3 = mix(h2);
    const bool sign = std::is_signed_v<T>;
    const uint64_t max = static_cast<uint64_t>(std::numeric_limits<T>::max());
    const T nonzero = static_cast<T>(sign && (h >> 20) % 2 ? -static_cast<int>(1 + (h >> 8) % 5)
                                                              : static_cast<int>(1 + (h >> 8) % 5));
    switch (op) {
    case Op::Sum: { // 16 of them stay in range
        const uint64_t lim = max / 16;
        return sign ? static_cast<T>(static_cast<int64_t>((h >> 4) % (2 * lim + 1)) - static_cast<int64_t>(lim))
                    : static_cast<T>((h >> 4) % (lim + 1));
    }
    case Op::Prod: { // 2 or 3 at a quarter of the ranks at most: 3^4 < 127
        const int f = r < 16 && (static_cast<size_t>(r) + i) % 4 == 0 ? 2 + static_cast<int>(h % 2) : 1;
        return static_cast<T>(sign && (h >> 9) % 3 == 0 ? -f : f);
    }
    case Op::Min:
    case Op::Max: // the whole range, its ends included
        if (!whole) {
            return static_cast<T>(static_cast<U>(h >> 7) & (static_cast<U>(~U(0)) >> 1));
        }
        return h % 17 == 0 ? std::numeric_limits<T>::min()
             : h % 17 == 1 ? std::numeric_limits<T>::max()
                           : static_cast<T>(static_cast<U>(h >> 7));
    case Op::Land: return h % 20 == 0 ? T(0) : nonzero; // mostly true
    case Op::Lor: return h % 20 == 0 ? nonzero : T(0);  // mostly false
    case Op::Lxor: return h % 2 == 0 ? nonzero : T(0);
    case Op::Band: return static_cast<T>(static_cast<U>(~(h & h2 & h3))); // bits mostly set
    case Op::Bor: return static_cast<T>(static_cast<U>(h & h2 & h3));     // bits mostly clear
    case Op::Bxor: return static_cast<T>(static_cast<U>(h >> 3));
    }
    return T(0);
}

template <typename T> T float_input(Op op, int r, size_t i, uint64_t seed)
{
    const uint64_t h = hash(seed, r, i);
    const long double u = static_cast<long double>(h >> 11) / 9007199254740992.0L; // [0, 1)
    if (op == Op::Prod) { // near 1, either sign
        return static_cast<T>((0.75L + 0.5L * u) * ((h & 1) != 0 ? -1 : 1));
    }
    return static_cast<T>((u - 0.5L) * 2000.0L + 1.0L / 3.0L);
}

// ---------------------------------------------------------------- the matrix
template <typename T>
void add_integer(std::vector<Case> &cases, MPI_Datatype dt, const char *tname, bool logical = true)
{
    const bool whole = host_orders<T>(dt);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (!whole && rank == 0) {
        std::printf("test_grid: note: this MPI's MIN and MAX order %s wrongly (Open MPI "
                    "4.1.4): their inputs keep the top bit clear\n", tname);
    }
    for (const OpInfo &o : all_ops()) {
        const bool is_logical = o.op == Op::Land || o.op == Op::Lor || o.op == Op::Lxor;
        if (is_logical && !logical) {
            continue;
        }
        const uint64_t seed = cases.size() + 1;
        const Op op = o.op;
        cases.push_back(make_case<T>(tname, o.name, dt, o.mpi, Bound::Exact,
                                     [op, seed, whole](int r, size_t i) {
                                         return int_input<T>(op, r, i, seed, whole);
                                     },
                                     [op](T a, T b) { return apply<T>(op, a, b); }));
    }
}

template <typename T> void add_floating(std::vector<Case> &cases, MPI_Datatype dt, const char *tname)
{
    for (const OpInfo &o : all_ops()) {
        if (!op_defined<T>(o.op)) {
            continue;
        }
        const uint64_t seed = cases.size() + 1;
        const Op op = o.op;
        const Bound how = op == Op::Sum ? Bound::Sum : op == Op::Prod ? Bound::Prod : Bound::Exact;
        cases.push_back(make_case<T>(tname, o.name, dt, o.mpi, how,
                                     [op, seed](int r, size_t i) { return float_input<T>(op, r, i, seed); },
                                     [op](T a, T b) { return apply<T>(op, a, b); }));
    }
}

template <typename R> void add_complex(std::vector<Case> &cases, MPI_Datatype dt, const char *tname)
{
    const uint64_t seed = cases.size() + 1;
    cases.push_back(make_case<Cx<R>>(
        tname, "SUM", dt, MPI_SUM, Bound::Sum,
        [seed](int r, size_t i) {
            return Cx<R>{float_input<R>(Op::Sum, r, i, seed), float_input<R>(Op::Sum, r, i, seed + 7)};
        },
        cx_sum<R>));
    cases.push_back(make_case<Cx<R>>(
        tname, "PROD", dt, MPI_PROD, Bound::Prod,
        [seed](int r, size_t i) {
            return Cx<R>{float_input<R>(Op::Prod, r, i, seed),
                         static_cast<R>(float_input<R>(Op::Sum, r, i, seed + 7) / 4000)};
        },
        cx_prod<R>));
}

template <typename V> void add_pair(std::vector<Case> &cases, MPI_Datatype dt, const char *tname)
{
    // Few distinct values: many ties, so the index rule matters.
    const uint64_t seed = cases.size() + 1;
    auto in = [seed](int r, size_t i) {
        const uint64_t h = hash(seed, r, i);
        return Pair<V>{static_cast<V>(static_cast<int>(h % 4)), static_cast<int>((h >> 8) % 1000)};
    };
    cases.push_back(make_case<Pair<V>>(tname, "MINLOC", dt, MPI_MINLOC, Bound::Exact,
                                       in, minloc<V>));
    cases.push_back(make_case<Pair<V>>(tname, "MAXLOC", dt, MPI_MAXLOC, Bound::Exact,
                                       in, maxloc<V>));
}

void add_bool(std::vector<Case> &cases)
{
    for (const OpInfo &o : all_ops()) {
        if (o.op != Op::Land && o.op != Op::Lor && o.op != Op::Lxor) {
            continue;
        }
        const uint64_t seed = cases.size() + 1;
        const Op op = o.op;
        cases.push_back(make_case<CBool>(
            "MPI_C_BOOL", o.name, MPI_C_BOOL, o.mpi, Bound::Exact,
            [op, seed](int r, size_t i) { return CBool{int_input<uint8_t>(op, r, i, seed) != 0}; },
            [op](CBool a, CBool b) { return CBool{apply<uint8_t>(op, a.v, b.v) != 0}; }));
    }
}

void add_byte(std::vector<Case> &cases)
{
    for (const OpInfo &o : all_ops()) {
        if (o.op != Op::Band && o.op != Op::Bor && o.op != Op::Bxor) {
            continue;
        }
        const uint64_t seed = cases.size() + 1;
        const Op op = o.op;
        cases.push_back(make_case<uint8_t>(
            "MPI_BYTE", o.name, MPI_BYTE, o.mpi, Bound::Exact,
            [op, seed](int r, size_t i) { return int_input<uint8_t>(op, r, i, seed); },
            [op](uint8_t a, uint8_t b) { return apply<uint8_t>(op, a, b); }));
    }
}

// A type for the copies alone: MPI defines no reduction on MPI_CHAR.
void add_char(std::vector<Case> &cases)
{
    const uint64_t seed = cases.size() + 1;
    cases.push_back(make_case<char>(
        "MPI_CHAR", "", MPI_CHAR, MPI_OP_NULL, Bound::Exact,
        [seed](int r, size_t i) { return static_cast<char>(hash(seed, r, i)); },
        [](char a, char) { return a; }));
}

// ---- user ops: MPI's in-out convention, inout[i] = in[i] op inout[i],
// `in` holding the lower ranks' part.
uint32_t oplus(uint32_t a, uint32_t b) { return a + b + a * b; } // (a+1)(b+1) - 1: commutative
void user_oplus(void *in, void *inout, int *len, MPI_Datatype *)
{
    const uint32_t *a = static_cast<const uint32_t *>(in);
    uint32_t *b = static_cast<uint32_t *>(inout);
    for (int i = 0; i < *len; ++i) {
        b[i] = oplus(a[i], b[i]);
    }
}
Triple triple(Triple a, Triple b)
{
    return {static_cast<int32_t>(static_cast<uint32_t>(a.s) + static_cast<uint32_t>(b.s)),
            std::min(a.lo, b.lo), a.x ^ b.x};
}
void user_triple(void *in, void *inout, int *len, MPI_Datatype *)
{
    const Triple *a = static_cast<const Triple *>(in);
    Triple *b = static_cast<Triple *>(inout);
    for (int i = 0; i < *len; ++i) {
        b[i] = triple(a[i], b[i]);
    }
}
Gap gap_sum(Gap a, Gap b) { return {a.v + b.v, a.pad}; }
void user_gap(void *in, void *inout, int *len, MPI_Datatype *)
{
    const Gap *a = static_cast<const Gap *>(in);
    Gap *b = static_cast<Gap *>(inout);
    for (int i = 0; i < *len; ++i) {
        b[i].v += a[i].v; // the gap is not the type's: left alone
    }
}
// a then b: x -> b.m (a.m x + a.c) + b.c. Associative, not commutative.
Aff compose(Aff a, Aff b) { return {b.m * a.m, b.m * a.c + b.c}; }
void user_affine(void *in, void *inout, int *len, MPI_Datatype *)
{
    const Aff *a = static_cast<const Aff *>(in);
    Aff *b = static_cast<Aff *>(inout);
    for (int i = 0; i < *len; ++i) {
        b[i] = compose(a[i], b[i]);
    }
}

struct UserOps {
    MPI_Op oplus, triple, gap, affine;
    MPI_Datatype triple_t, gap_t, affine_t;
    UserOps()
    {
        MPI_Op_create(user_oplus, 1, &oplus);
        MPI_Op_create(user_triple, 1, &triple);
        MPI_Op_create(user_gap, 1, &gap);
        MPI_Op_create(user_affine, 0, &affine);
        MPI_Type_contiguous(3, MPI_INT32_T, &triple_t);
        MPI_Type_create_resized(MPI_UINT32_T, 0, sizeof(Gap), &gap_t);
        MPI_Type_contiguous(2, MPI_UINT32_T, &affine_t);
        for (MPI_Datatype *t : {&triple_t, &gap_t, &affine_t}) {
            MPI_Type_commit(t);
        }
    }
    ~UserOps()
    {
        for (MPI_Op *o : {&oplus, &triple, &gap, &affine}) {
            MPI_Op_free(o);
        }
        for (MPI_Datatype *t : {&triple_t, &gap_t, &affine_t}) {
            MPI_Type_free(t);
        }
    }
};

void add_user(std::vector<Case> &cases, const UserOps &u)
{
    uint64_t seed = cases.size() + 1;
    cases.push_back(make_case<uint32_t>(
        "MPI_UINT32_T", "user op (commutative)", MPI_UINT32_T, u.oplus, Bound::Exact,
        [seed](int r, size_t i) { return static_cast<uint32_t>(hash(seed, r, i)); }, oplus));
    seed = cases.size() + 1;
    cases.push_back(make_case<Triple>(
        "3 x MPI_INT32_T (contiguous)", "user op (commutative)", u.triple_t, u.triple, Bound::Exact,
        [seed](int r, size_t i) {
            const uint64_t h = hash(seed, r, i);
            return Triple{static_cast<int32_t>(h), static_cast<int32_t>(h >> 16),
                          static_cast<int32_t>(h >> 32)};
        },
        triple));
    seed = cases.size() + 1;
    cases.push_back(make_case<Gap>(
        "MPI_UINT32_T resized to 8 bytes", "user op (commutative)", u.gap_t, u.gap, Bound::Exact,
        [seed](int r, size_t i) { return Gap{static_cast<uint32_t>(hash(seed, r, i)), 0}; },
        gap_sum));
    seed = cases.size() + 1;
    cases.push_back(make_case<Aff>(
        "2 x MPI_UINT32_T (contiguous)", "user op (not commutative)", u.affine_t, u.affine,
        Bound::Exact,
        [seed](int r, size_t i) {
            const uint64_t h = hash(seed, r, i);
            return Aff{static_cast<uint32_t>(h) | 1u, static_cast<uint32_t>(h >> 32)};
        },
        compose));
}

std::vector<Case> all_cases(const UserOps &u)
{
    std::vector<Case> c;
    add_integer<signed char>(c, MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR");
    add_integer<unsigned char>(c, MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR");
    add_integer<short>(c, MPI_SHORT, "MPI_SHORT");
    add_integer<unsigned short>(c, MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT");
    add_integer<int>(c, MPI_INT, "MPI_INT");
    add_integer<unsigned>(c, MPI_UNSIGNED, "MPI_UNSIGNED");
    add_integer<long>(c, MPI_LONG, "MPI_LONG");
    add_integer<unsigned long>(c, MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG");
    add_integer<long long>(c, MPI_LONG_LONG, "MPI_LONG_LONG");
    add_integer<unsigned long long>(c, MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG");
    add_integer<int8_t>(c, MPI_INT8_T, "MPI_INT8_T");
    add_integer<uint8_t>(c, MPI_UINT8_T, "MPI_UINT8_T");
    add_integer<int16_t>(c, MPI_INT16_T, "MPI_INT16_T");
    add_integer<uint16_t>(c, MPI_UINT16_T, "MPI_UINT16_T");
    add_integer<int32_t>(c, MPI_INT32_T, "MPI_INT32_T");
    add_integer<uint32_t>(c, MPI_UINT32_T, "MPI_UINT32_T");
    add_integer<int64_t>(c, MPI_INT64_T, "MPI_INT64_T");
    add_integer<uint64_t>(c, MPI_UINT64_T, "MPI_UINT64_T");
    // MPI's multi-language types: no logical ops.
    add_integer<MPI_Aint>(c, MPI_AINT, "MPI_AINT", false);
    add_integer<MPI_Offset>(c, MPI_OFFSET, "MPI_OFFSET", false);
    add_integer<MPI_Count>(c, MPI_COUNT, "MPI_COUNT", false);
    add_floating<float>(c, MPI_FLOAT, "MPI_FLOAT");
    add_floating<double>(c, MPI_DOUBLE, "MPI_DOUBLE");
    add_floating<long double>(c, MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE");
    add_complex<float>(c, MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX");
    add_complex<double>(c, MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX");
    add_complex<long double>(c, MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX");
    add_bool(c);
    add_byte(c);
    add_char(c);
    add_pair<float>(c, MPI_FLOAT_INT, "MPI_FLOAT_INT");
    add_pair<double>(c, MPI_DOUBLE_INT, "MPI_DOUBLE_INT");
    add_pair<long>(c, MPI_LONG_INT, "MPI_LONG_INT");
    add_pair<int>(c, MPI_2INT, "MPI_2INT");
    add_pair<short>(c, MPI_SHORT_INT, "MPI_SHORT_INT");
    add_pair<long double>(c, MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT");
    add_user(c, u);
    return c;
}

// ---------------------------------------------------------------- the checks
// The communicator under test.
struct Target {
    MPI_Comm comm;
    int rank, size;
    bool on_grid; // covers whole groups of the grid: the rings can run its calls
    const char *what;
    // Every node holds as many of its ranks: the per-rank and rooted
    // collectives need it; with unequal nodes only MPI_Allreduce runs there.
    bool even = true;
    long long calls[kNumColls] = {}, grid[kNumColls] = {}; // what ran, for the summary
};

// Elements each rank gives to, and gets from, a call of `c` with count n.
size_t send_elems(Coll c, size_t n, int p) { return c == Coll::ReduceScatterBlock ? n * p : n; }
size_t recv_elems(Coll c, size_t n, int p) { return c == Coll::Allgather ? n * p : n; }

// The coll_ina_grid_calls one call of `c` (count n) adds on every rank: one
// where the component routes `c` to the grid (grid_runs) and the grid takes
// the call: a communicator on the grid, a commutative op (a reduction's),
// elements back to back (every scenario puts as many ranks on every node,
// which the per-rank and rooted collectives need too).
// Open MPI makes a new communicator's context id with MPI_Iallreduce of one
// MPI_INT (MAX, then MIN): the component leaves every such call to the
// previous component, uncounted (coll_ina_allreduce.c).
bool context_id_shape(Coll c, Form f, const Case &k, size_t n)
{
    return c == Coll::Allreduce && f == Form::Nonblocking && n == 1 && k.dt == MPI_INT &&
           (k.op == MPI_MAX || k.op == MPI_MIN);
}

long long grid_count(Coll c, Form f, const Target &t, const Case &k, size_t n)
{
    return grid_runs(c) && t.on_grid && (t.even || c == Coll::Allreduce) && n > 0 &&
                   (!is_reduction(c) || commutative(k.op)) && contiguous_block(k.dt) &&
                   !context_id_shape(c, f, k, n)
               ? 1 : 0;
}

// The counter of the reason a call the grid does not take is counted under
// (coll_ina_host_previous_*): off the grid, no grid or part of one (which
// of the two the scenario decides: both are read); on it, unequal nodes
// for all but MPI_Allreduce, else the datatype or the op.
std::vector<const char *> previous_reasons(Coll c, const Target &t)
{
    if (!t.on_grid) {
        return {"coll_ina_host_previous_no_grid", "coll_ina_host_previous_partial"};
    }
    if (!t.even && c != Coll::Allreduce) {
        return {"coll_ina_host_previous_unequal"};
    }
    return {"coll_ina_host_previous_layout"};
}

constexpr unsigned char kJunk = 0xa5; // what a receive buffer holds before the call

std::vector<char> inputs(const Case &k, int r, size_t n)
{
    std::vector<char> v(n * k.ext, static_cast<char>(kJunk));
    k.fill(r, n, v.data());
    return v;
}

// The sum of the named counters on `t`.
long long read_sum(Counters &ctr, const Target &t, const std::vector<const char *> &names)
{
    long long sum = 0;
    for (const char *name : names) {
        sum += ctr.read(name, t.comm);
    }
    return sum;
}

// The call of `c` on `comm` in form f: each collective's three forms, one
// argument list.
#define INA_GRID_CALL(f, blocking, nonblocking, persistent, ...)                   \
    do {                                                                          \
        MPI_Request req_;                                                         \
        if ((f) == Form::Blocking) {                                              \
            blocking(__VA_ARGS__);                                                \
        } else if ((f) == Form::Nonblocking) {                                    \
            nonblocking(__VA_ARGS__, &req_);                                      \
            MPI_Wait(&req_, MPI_STATUS_IGNORE);                                   \
        } else {                                                                  \
            persistent(__VA_ARGS__, MPI_INFO_NULL, &req_);                        \
            MPI_Start(&req_);                                                     \
            MPI_Wait(&req_, MPI_STATUS_IGNORE);                                   \
            MPI_Request_free(&req_);                                              \
        }                                                                         \
    } while (0)

// What one call raised: coll_ina_grid_calls, coll_ina_host_previous_calls
// and the counters of the reason it is expected under.
struct Rise {
    long long grid, previous, reason;
};

// One call of `c` in form f: this rank's inputs, the call, and in `res`
// what it left where its result goes (nothing on a rank without one).
Rise call_once(Coll c, Form f, const Target &t, Counters &ctr, const Case &k, size_t n,
               bool in_place, int root, std::vector<char> &res)
{
    const int p = t.size, r = t.rank, count = static_cast<int>(n);
    const size_t e = k.ext;
    std::vector<char> in = inputs(k, r, send_elems(c, n, p));
    std::vector<char> out(recv_elems(c, n, p) * e, static_cast<char>(kJunk));
    const std::vector<const char *> reasons = previous_reasons(c, t);
    const Rise before{ctr.read("coll_ina_grid_calls", t.comm),
                      ctr.read("coll_ina_host_previous_calls", t.comm),
                      read_sum(ctr, t, reasons)};
    switch (c) {
    case Coll::Allreduce:
        if (in_place) {
            INA_GRID_CALL(f, MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_init, MPI_IN_PLACE,
                          in.data(), count, k.dt, k.op, t.comm);
            out = in;
        } else {
            INA_GRID_CALL(f, MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_init, in.data(),
                          out.data(), count, k.dt, k.op, t.comm);
        }
        break;
    case Coll::Reduce:
        if (in_place && r == root) {
            INA_GRID_CALL(f, MPI_Reduce, MPI_Ireduce, MPI_Reduce_init, MPI_IN_PLACE, in.data(),
                          count, k.dt, k.op, root, t.comm);
            out = in;
        } else {
            INA_GRID_CALL(f, MPI_Reduce, MPI_Ireduce, MPI_Reduce_init, in.data(),
                          r == root ? out.data() : nullptr, count, k.dt, k.op, root, t.comm);
        }
        if (r != root) {
            out.clear();
        }
        break;
    case Coll::ReduceScatterBlock:
        if (in_place) { // the whole input in, this rank's block out at the front
            INA_GRID_CALL(f, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block,
                          MPI_Reduce_scatter_block_init, MPI_IN_PLACE, in.data(), count, k.dt,
                          k.op, t.comm);
            out.assign(in.begin(), in.begin() + static_cast<ptrdiff_t>(n * e));
        } else {
            INA_GRID_CALL(f, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block,
                          MPI_Reduce_scatter_block_init, in.data(), out.data(), count, k.dt,
                          k.op, t.comm);
        }
        break;
    case Coll::Allgather:
        if (in_place) { // this rank's part in its place
            std::memcpy(out.data() + static_cast<size_t>(r) * n * e, in.data(), n * e);
            INA_GRID_CALL(f, MPI_Allgather, MPI_Iallgather, MPI_Allgather_init, MPI_IN_PLACE, 0,
                          MPI_DATATYPE_NULL, out.data(), count, k.dt, t.comm);
        } else {
            INA_GRID_CALL(f, MPI_Allgather, MPI_Iallgather, MPI_Allgather_init, in.data(), count,
                          k.dt, out.data(), count, k.dt, t.comm);
        }
        break;
    case Coll::Bcast:
        if (r == root) {
            out = in;
        }
        INA_GRID_CALL(f, MPI_Bcast, MPI_Ibcast, MPI_Bcast_init, out.data(), count, k.dt, root,
                      t.comm);
        break;
    }
    res = std::move(out);
    return Rise{ctr.read("coll_ina_grid_calls", t.comm) - before.grid,
                ctr.read("coll_ina_host_previous_calls", t.comm) - before.previous,
                read_sum(ctr, t, reasons) - before.reason};
}

// One check: `c` with count n on `t`, run twice (the second in place when
// `in_place`, and in form f), both results compared as the header says.
void check(Coll c, Form f, Target &t, Counters &ctr, const Case &k, size_t n, bool in_place,
           int root, std::vector<uint64_t> &digests, std::vector<std::string> &labels)
{
    const int p = t.size, r = t.rank;
    const size_t e = k.ext;
    char what[256];
    std::snprintf(what, sizeof(what), "%s: %s %s of %zu element%s%s", t.what, coll_name(c),
                  (is_reduction(c) ? k.name : k.type).c_str(), n, n == 1 ? "" : "s", in_place ? " (again in place)" : "");
    if (c == Coll::Reduce || c == Coll::Bcast) {
        const size_t len = std::strlen(what);
        std::snprintf(what + len, sizeof(what) - len, ", root %d", root);
    }
    {
        const size_t len = std::strlen(what);
        std::snprintf(what + len, sizeof(what) - len, ", then %s", form_name(f));
    }
    std::vector<char> first, second;
    const long long want1 = grid_count(c, Form::Blocking, t, k, n);
    const long long want2 = grid_count(c, f, t, k, n);
    const Rise got1 = call_once(c, Form::Blocking, t, ctr, k, n, false, root, first);
    const Rise got2 = call_once(c, f, t, ctr, k, n, in_place, root, second);
    const int ci = static_cast<int>(c);
    t.calls[ci] += 2;
    t.grid[ci] += got1.grid + got2.grid;
    ++checks;
    INA_CHECK(got1.grid == want1 && got2.grid == want2,
              "%s: coll_ina_grid_calls rose by %lld and %lld, want %lld and %lld", what,
              got1.grid, got2.grid, want1, want2);
    // Every other call is counted once, under its reason.
    const long long prev2 = want2 == 0 && !context_id_shape(c, f, k, n) ? 1 : 0;
    ++checks;
    INA_CHECK(got1.previous == 1 - want1 && got1.reason == 1 - want1 &&
                  got2.previous == prev2 && got2.reason == prev2,
              "%s: coll_ina_host_previous_calls rose by %lld and %lld (its reason's counter by "
              "%lld and %lld), want %lld and %lld",
              what, got1.previous, got2.previous, got1.reason, got2.reason, 1 - want1, prev2);
    if (first.empty()) { // MPI_Reduce off the root
        return;
    }
    if (c == Coll::Allreduce || c == Coll::Allgather || c == Coll::Bcast) { // alike everywhere
        digests.push_back(k.digest(first.data(), recv_elems(c, n, p)));
        labels.push_back(what);
    }
    // The second run's bits are the first's: always where the grid ran both
    // (its fold order is the layout's, whatever the form) or both were
    // blocking; off the grid only for exact results, as Open MPI's own
    // blocking and non-blocking algorithms fold in different orders.
    const size_t elems = recv_elems(c, n, p);
    if (k.exact || f == Form::Blocking || (want1 == 1 && want2 == 1)) {
        ++checks;
        const size_t twice = k.mismatch(second.data(), first.data(), nullptr, elems);
        INA_CHECK(twice == elems, "%s: element %zu: %s, then %s: another run gave other bits",
                  what, twice, k.show(first.data(), twice).c_str(),
                  k.show(second.data(), twice).c_str());
    }
    // The part of the result this rank compares with what it should be: all
    // of it, but a p-th each of an allreduce's, which every rank holds alike
    // (check_alike), so that the ranks share the reference's cost.
    size_t lo = 0, hi = elems;
    if (c == Coll::Allreduce) {
        lo = elems * static_cast<size_t>(r) / static_cast<size_t>(p);
        hi = elems * static_cast<size_t>(r + 1) / static_cast<size_t>(p);
    }
    std::vector<char> expect;
    std::vector<double> bound;
    if (is_reduction(c)) { // of the reduced vector's elements [at, at + hi - lo)
        const size_t at = (c == Coll::ReduceScatterBlock ? static_cast<size_t>(r) * n : 0) + lo;
        expect.resize((hi - lo) * e);
        bound.resize(k.exact ? 0 : hi - lo);
        k.reference(p, at, hi - lo, expect.data(), k.exact ? nullptr : bound.data());
    } else if (c == Coll::Allgather) {
        expect.resize(elems * e);
        for (int q = 0; q < p; ++q) {
            k.fill(q, n, expect.data() + static_cast<size_t>(q) * n * e);
        }
    } else {
        expect = inputs(k, root, n);
    }
    const double *bounds = k.exact || !is_reduction(c) ? nullptr : bound.data();
    ++checks;
    const size_t bad = k.mismatch(first.data() + lo * e, expect.data(), bounds, hi - lo);
    INA_CHECK(bad == hi - lo, "%s: element %zu: %s, want %s (within %g)", what, lo + bad,
              k.show(first.data(), lo + bad).c_str(), k.show(expect.data(), bad).c_str(),
              bounds != nullptr && bad < hi - lo ? bounds[bad] : 0.0);
}

// The results every rank of `t` holds alike (of MPI_Allreduce, MPI_Allgather,
// MPI_Bcast) have the same bits on every rank: their digests, `labels` saying
// which check each is, in one allgather after the calls of a case.
void check_alike(Target &t, const std::vector<uint64_t> &mine, const std::vector<std::string> &labels)
{
    std::vector<uint64_t> all(mine.size() * static_cast<size_t>(t.size));
    MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
                  static_cast<int>(mine.size()), MPI_UINT64_T, t.comm);
    for (size_t j = 0; j < mine.size(); ++j) {
        int differ = -1;
        for (int q = 0; q < t.size && differ < 0; ++q) {
            differ = all[static_cast<size_t>(q) * mine.size() + j] != all[j] ? q : -1;
        }
        ++checks;
        INA_CHECK(differ < 0, "%s: rank %d's bits differ from rank 0's", labels[j].c_str(), differ);
    }
}

// The lengths each collective runs at: 1 element (most pieces empty), a
// few, fewer than the rings' pieces and uneven, and more than 64 KiB (above
// every ring's pieces; a reduce-scatter's and an allgather's whole vector).
std::vector<size_t> lengths(Coll c, int p, size_t ext)
{
    const size_t big = 70000 / ext + 13;
    switch (c) {
    case Coll::Allreduce: return {1, 3, static_cast<size_t>(p) + 1, 1000, big};
    case Coll::Reduce:
    case Coll::Bcast: return {1, static_cast<size_t>(2 * p + 1), big};
    case Coll::ReduceScatterBlock:
    case Coll::Allgather: return {1, 3, big / static_cast<size_t>(p) + 1};
    }
    return {};
}

// The whole matrix on `t`: every case through every collective it applies
// to (the reductions where it has an op, the copies once per type), at
// every length, in place every other time, at roots 0, p/2 and p - 1 in
// turn.
void matrix(Target &t, Counters &ctr, const std::vector<Case> &cases)
{
    constexpr Form kForms[] = {Form::Blocking, Form::Nonblocking, Form::Persistent};
    std::set<MPI_Datatype> copied;
    const int roots[3] = {0, t.size / 2, t.size - 1};
    for (size_t ci = 0; ci < cases.size(); ++ci) {
        const Case &k = cases[ci];
        std::vector<uint64_t> digests;
        std::vector<std::string> labels;
        const bool copies = copied.insert(k.dt).second;
        for (Coll c : kColls) {
            if (is_reduction(c) ? k.op == MPI_OP_NULL : !copies) {
                continue;
            }
            const std::vector<size_t> ns = lengths(c, t.size, k.ext);
            for (size_t si = 0; si < ns.size(); ++si) {
                const bool in_place = c != Coll::Bcast && (ci + si) % 2 == 1;
                const int root = roots[(ci + si) % 3];
                const Form f = kForms[(ci + 2 * si + static_cast<size_t>(c)) % 3];
                check(c, f, t, ctr, k, ns[si], in_place, root, digests, labels);
            }
        }
        check_alike(t, digests, labels);
    }
}

// Grid calls in flight together on one communicator, with a blocking one
// among them: each non-blocking call has a tag of its own, so none matches
// another's messages. Every collective once (MPI_Iallreduce twice), waited
// in reverse order; the doubles' bits equal a blocking run's, the integers
// their closed form. Only where the grid takes them all.
void in_flight(Target &t, Counters &ctr)
{
    if (!t.on_grid || !t.even) {
        return;
    }
    const int p = t.size, r = t.rank, root = p / 2;
    const size_t n = 9001, np = n * static_cast<size_t>(p);
    std::vector<double> a(n), a_out(n), a_ref(n), rs(np), rs_out(n), rs_ref(n);
    std::vector<int> b(n), b_out(n), g(np), bc(n), rd(n, -1);
    for (size_t i = 0; i < np; ++i) {
        rs[i] = 1.0 / static_cast<double>(1 + i + static_cast<size_t>(r) * 7);
    }
    for (size_t i = 0; i < n; ++i) {
        a[i] = std::sin(static_cast<double>(i + 1) * (r + 1));
        b[i] = r * 7 + static_cast<int>(i);
        bc[i] = r == root ? static_cast<int>(i) * 3 + 1 : -1;
    }
    MPI_Allreduce(a.data(), a_ref.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, t.comm);
    MPI_Reduce_scatter_block(rs.data(), rs_ref.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM,
                             t.comm);
    const long long before = ctr.read("coll_ina_grid_calls", t.comm);
    MPI_Request req[6];
    const int cnt = static_cast<int>(n);
    MPI_Iallreduce(a.data(), a_out.data(), cnt, MPI_DOUBLE, MPI_SUM, t.comm, &req[0]);
    MPI_Ireduce_scatter_block(rs.data(), rs_out.data(), cnt, MPI_DOUBLE, MPI_SUM, t.comm,
                              &req[1]);
    MPI_Iallgather(b.data(), cnt, MPI_INT, g.data(), cnt, MPI_INT, t.comm, &req[2]);
    MPI_Ibcast(bc.data(), cnt, MPI_INT, root, t.comm, &req[3]);
    MPI_Ireduce(b.data(), rd.data(), cnt, MPI_INT, MPI_SUM, root, t.comm, &req[4]);
    std::vector<int> b_blocking(n);
    MPI_Allreduce(b.data(), b_blocking.data(), cnt, MPI_INT, MPI_MAX, t.comm);
    MPI_Iallreduce(b.data(), b_out.data(), cnt, MPI_INT, MPI_SUM, t.comm, &req[5]);
    for (int k = 5; k >= 0; --k) {
        MPI_Wait(&req[k], MPI_STATUS_IGNORE);
    }
    const long long rose = ctr.read("coll_ina_grid_calls", t.comm) - before;
    size_t bad = 0;
    const int sum7 = 7 * p * (p - 1) / 2;
    for (size_t i = 0; i < n; ++i) {
        const int ii = static_cast<int>(i);
        bad += std::memcmp(&a_out[i], &a_ref[i], sizeof(double)) != 0;
        bad += std::memcmp(&rs_out[i], &rs_ref[i], sizeof(double)) != 0;
        bad += b_out[i] != sum7 + p * ii;
        bad += b_blocking[i] != (p - 1) * 7 + ii;
        bad += bc[i] != ii * 3 + 1;
        bad += r == root && rd[i] != sum7 + p * ii;
        for (int q = 0; q < p; ++q) {
            bad += g[static_cast<size_t>(q) * n + i] != q * 7 + ii;
        }
    }
    checks += 2;
    INA_CHECK(bad == 0, "%s: calls in flight together: %zu wrong elements", t.what, bad);
    INA_CHECK(rose == 7, "%s: calls in flight together: coll_ina_grid_calls rose by %lld, "
              "want 7", t.what, rose);
}

void summary(const Target &t)
{
    int world_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (world_rank != 0) {
        return;
    }
    std::printf("test_grid: %s (%d ranks):", t.what, t.size);
    for (Coll c : kColls) {
        const int ci = static_cast<int>(c);
        std::printf(" %s %lld calls, %lld by the grid;", coll_name(c), t.calls[ci], t.grid[ci]);
    }
    std::printf("\n");
    std::fflush(stdout);
}

void run_target(Target &t, Counters &ctr, const std::vector<Case> &cases, long long nodes)
{
    MPI_Comm_rank(t.comm, &t.rank);
    MPI_Comm_size(t.comm, &t.size);
    const long long got_nodes = ctr.read("coll_ina_grid_nodes", t.comm, MPI_T_PVAR_CLASS_SIZE);
    ++checks;
    INA_CHECK(got_nodes == nodes, "%s: coll_ina_grid_nodes %lld, want %lld", t.what, got_nodes,
              nodes);
    matrix(t, ctr, cases);
    in_flight(t, ctr);
    summary(t);
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int nodes = 0, per_group = 0, c;
    bool uneven = false;
    while ((c = getopt(argc, argv, "n:g:u")) != -1) {
        if (c == 'n') nodes = std::atoi(optarg);
        if (c == 'g') per_group = std::atoi(optarg);
        if (c == 'u') uneven = true;
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    INA_CHECK(size <= 16, "the inputs stay in range for 16 ranks at most, not %d", size);
    Counters k;
    {
        UserOps user;
        const std::vector<Case> cases = all_cases(user);

        Target world{MPI_COMM_WORLD, 0, 0, nodes > 0, "MPI_COMM_WORLD"};
        world.even = !uneven;
        run_target(world, k, cases, nodes);

        if (per_group > 0 && size > per_group) {
            Target group{MPI_COMM_NULL, 0, 0, true, "one group"};
            MPI_Comm_split(MPI_COMM_WORLD, rank / per_group, rank, &group.comm);
            run_target(group, k, cases, 4);
            MPI_Comm_free(&group.comm);
        }
        // The even ranks cover no whole group: the algorithm ina replaced.
        Target even{MPI_COMM_NULL, 0, 0, false, "the even ranks"};
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &even.comm);
        if (rank % 2 == 0) {
            run_target(even, k, cases, 0);
        }
        MPI_Comm_free(&even.comm);
    }
    k.close();
    const int code = finish("test_grid", checks);
    MPI_Finalize();
    return code;
}

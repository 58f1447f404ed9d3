// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Reduce kernels: one loop per (op, element type), reached through a table.
//
// Every element is read and written with fixed-size memcpys: that is legal
// for any alignment and any effective type, and the compiler turns it into
// plain unaligned (vector) loads/stores. The loops must vectorise: Makefile.am
// asks for the vectoriser explicitly, because the -O2 in the default CXXFLAGS
// comes after our flags and its cost model never vectorises a loop whose trip
// count is unknown. Makefile.am also turns fp contraction off, so that
// a*b + c is never fused into an fma: complex products must round exactly as
// ina_reduce.h spells them on every host.
#include "ina_reduce.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace {

// ---- Element types -------------------------------------------------------

// C's F _Complex: real part, then imaginary part.
template <typename F> struct Cx {
    F re;
    F im;
};

// MPI's MINLOC/MAXLOC pair structs (MPI_FLOAT_INT, ...): value, then index.
template <typename V> struct Pair {
    V v;
    int i;
};

// Bytes of a long double that carry its value: x87 extended precision uses
// 10 of its 16 bytes; the rest is padding that arithmetic leaves undefined.
constexpr size_t kLongDoubleValueBytes =
    (std::numeric_limits<long double>::digits == 64 && sizeof(long double) > 10)
        ? 10
        : sizeof(long double);

// load/store of one element at p. Stores write every byte of the element,
// with padding zeroed, so every rank gets bit-identical result bytes.
template <typename T> struct Codec {
    static T load(const unsigned char *p)
    {
        T v;
        std::memcpy(&v, p, sizeof(T));
        return v;
    }
    static void store(unsigned char *p, T v)
    {
        if constexpr (std::is_same_v<T, long double> && kLongDoubleValueBytes < sizeof(T)) {
            std::memcpy(p, &v, kLongDoubleValueBytes);
            std::memset(p + kLongDoubleValueBytes, 0, sizeof(T) - kLongDoubleValueBytes);
        } else {
            std::memcpy(p, &v, sizeof(T));
        }
    }
};

template <typename F> struct Codec<Cx<F>> {
    static Cx<F> load(const unsigned char *p)
    {
        return {Codec<F>::load(p), Codec<F>::load(p + sizeof(F))};
    }
    static void store(unsigned char *p, Cx<F> v)
    {
        Codec<F>::store(p, v.re);
        Codec<F>::store(p + sizeof(F), v.im);
    }
};

template <typename V> struct Codec<Pair<V>> {
    static constexpr size_t kIndexAt = offsetof(Pair<V>, i);
    static Pair<V> load(const unsigned char *p)
    {
        Pair<V> v;
        v.v = Codec<V>::load(p);
        std::memcpy(&v.i, p + kIndexAt, sizeof(int));
        return v;
    }
    static void store(unsigned char *p, Pair<V> v)
    {
        // Assemble the element in a zeroed image: the struct's padding (and
        // a long double's) goes out as zeros in one fixed-size copy.
        unsigned char img[sizeof(Pair<V>)] = {};
        Codec<V>::store(img, v.v);
        std::memcpy(img + kIndexAt, &v.i, sizeof(int));
        std::memcpy(p, img, sizeof(img));
    }
};

// ---- Operations: apply(a = left operand, b = right operand) ---------------

template <typename T> struct Sum {
    static T apply(T a, T b)
    {
        if constexpr (std::is_integral_v<T>) {
            // Unsigned arithmetic wraps; signed overflow would be UB.
            using U = std::make_unsigned_t<T>;
            return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
        } else {
            return a + b;
        }
    }
};
template <typename T> struct Prod {
    static T apply(T a, T b)
    {
        if constexpr (std::is_integral_v<T>) {
            // At least unsigned int: uint16 * uint16 would promote to (signed) int.
            using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned,
                                         std::make_unsigned_t<T>>;
            return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
        } else {
            return a * b;
        }
    }
};
// dst is kept on ties and on NaN (ina_reduce.h).
template <typename T> struct Min {
    static T apply(T a, T b) { return b < a ? b : a; }
};
template <typename T> struct Max {
    static T apply(T a, T b) { return b > a ? b : a; }
};
template <typename T> struct Land {
    static T apply(T a, T b) { return static_cast<T>((a != 0) & (b != 0)); }
};
template <typename T> struct Lor {
    static T apply(T a, T b) { return static_cast<T>((a != 0) | (b != 0)); }
};
template <typename T> struct Lxor {
    static T apply(T a, T b) { return static_cast<T>((a != 0) ^ (b != 0)); }
};
template <typename T> struct Band {
    static T apply(T a, T b) { return static_cast<T>(a & b); }
};
template <typename T> struct Bor {
    static T apply(T a, T b) { return static_cast<T>(a | b); }
};
template <typename T> struct Bxor {
    static T apply(T a, T b) { return static_cast<T>(a ^ b); }
};

// Complex arithmetic in the textbook form ina_reduce.h fixes, not through
// std::complex, whose operator* adds C99 Annex G NaN/infinity recovery.
template <typename C> struct CxSum {
    static C apply(C a, C b) { return {a.re + b.re, a.im + b.im}; }
};
template <typename C> struct CxProd {
    static C apply(C a, C b)
    {
        // re = ac - bd, written ac + (-b)d: the same value bit for bit (IEEE
        // subtraction is addition of the negation; rounding to nearest is
        // sign-symmetric), but with no sub/add lane pair, which GCC 12's SLP
        // vectoriser turns into vfmaddsub on FMA hosts even under
        // -ffp-contract=off.
        return {a.re * b.re + (-a.im) * b.im, a.re * b.im + a.im * b.re};
    }
};

// MPI's MINLOC/MAXLOC: the better value wins; on equal values the smaller
// index. A NaN value compares false both ways, so dst is kept.
template <typename P> struct MinLoc {
    static P apply(P a, P b) { return (b.v < a.v || (b.v == a.v && b.i < a.i)) ? b : a; }
};
template <typename P> struct MaxLoc {
    static P apply(P a, P b) { return (b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a; }
};

// ---- Kernels and the dispatch table ----------------------------------------

using Kernel = void (*)(void *, const void *, size_t);

// dst = dst OP src, or with kLeft dst = src OP dst.
template <template <typename> class Op, typename T, bool kLeft>
void kernel(void *dstv, const void *srcv, size_t n)
{
    auto *dst = static_cast<unsigned char *>(dstv);
    const auto *src = static_cast<const unsigned char *>(srcv);
    for (size_t i = 0; i < n; ++i) {
        const size_t at = i * sizeof(T);
        const T d = Codec<T>::load(dst + at);
        const T s = Codec<T>::load(src + at);
        Codec<T>::store(dst + at, kLeft ? Op<T>::apply(s, d) : Op<T>::apply(d, s));
    }
}

// Both operand orders of one (op, element type); null where ina_reduce has
// nothing to do.
struct Kernels {
    Kernel right = nullptr; // ina_reduce
    Kernel left = nullptr;  // ina_reduce_left
};

template <template <typename> class Op, typename T> constexpr Kernels kernels()
{
    return {&kernel<Op, T, false>, &kernel<Op, T, true>};
}

// Indexed by ina_proto_op_t; empty where ina_reduce has nothing to do
// (pairs MPI does not define, and REPLACE, which places bytes).
using Row = std::array<Kernels, INA_OP_COUNT>;

template <typename T> constexpr Row integer_row()
{
    Row r{};
    r[INA_OP_SUM] = kernels<Sum, T>();
    r[INA_OP_PROD] = kernels<Prod, T>();
    r[INA_OP_MIN] = kernels<Min, T>();
    r[INA_OP_MAX] = kernels<Max, T>();
    r[INA_OP_LAND] = kernels<Land, T>();
    r[INA_OP_LOR] = kernels<Lor, T>();
    r[INA_OP_LXOR] = kernels<Lxor, T>();
    r[INA_OP_BAND] = kernels<Band, T>();
    r[INA_OP_BOR] = kernels<Bor, T>();
    r[INA_OP_BXOR] = kernels<Bxor, T>();
    return r;
}

template <typename T> constexpr Row floating_row()
{
    Row r{};
    r[INA_OP_SUM] = kernels<Sum, T>();
    r[INA_OP_PROD] = kernels<Prod, T>();
    r[INA_OP_MIN] = kernels<Min, T>();
    r[INA_OP_MAX] = kernels<Max, T>();
    return r;
}

// _Bool is one byte holding 0 or 1: the byte-wide logical kernels apply
// (they read it as uint8_t, so a stray non-0/1 byte is not UB, just "true").
constexpr Row bool_row()
{
    Row r{};
    r[INA_OP_LAND] = kernels<Land, uint8_t>();
    r[INA_OP_LOR] = kernels<Lor, uint8_t>();
    r[INA_OP_LXOR] = kernels<Lxor, uint8_t>();
    return r;
}

template <typename F> constexpr Row complex_row()
{
    Row r{};
    r[INA_OP_SUM] = kernels<CxSum, Cx<F>>();
    r[INA_OP_PROD] = kernels<CxProd, Cx<F>>();
    return r;
}

template <typename V> constexpr Row pair_row()
{
    Row r{};
    r[INA_OP_MINLOC] = kernels<MinLoc, Pair<V>>();
    r[INA_OP_MAXLOC] = kernels<MaxLoc, Pair<V>>();
    return r;
}

// Indexed by ina_proto_dtype_t.
constexpr std::array<Row, INA_DT_COUNT> kTable = {
    integer_row<int8_t>(),      integer_row<uint8_t>(),     integer_row<int16_t>(),
    integer_row<uint16_t>(),    integer_row<int32_t>(),     integer_row<uint32_t>(),
    integer_row<int64_t>(),     integer_row<uint64_t>(),    floating_row<float>(),
    floating_row<double>(),     floating_row<long double>(), bool_row(),
    complex_row<float>(),       complex_row<double>(),      complex_row<long double>(),
    pair_row<float>(),          pair_row<double>(),         pair_row<long>(),
    pair_row<int>(),            pair_row<short>(),          pair_row<long double>(),
};

static_assert(sizeof(float) == 4 && sizeof(double) == 8, "wire floats are binary32/64");
static_assert(sizeof(bool) == 1, "wire bool is one byte");
// The element sizes the kernels step by must be the wire sizes.
static_assert(sizeof(Cx<long double>) == 2 * sizeof(long double), "complex layout");
static_assert(sizeof(Pair<float>) == 8 && sizeof(Pair<double>) == 16 &&
                  sizeof(Pair<long>) == 16 && sizeof(Pair<int>) == 8 &&
                  sizeof(Pair<short>) == 8 && sizeof(Pair<long double>) == 2 * sizeof(long double),
              "pair layouts of ina_proto.h");

const Kernels *find(unsigned op, unsigned dtype)
{
    if (dtype >= INA_DT_COUNT || op >= INA_OP_COUNT || kTable[dtype][op].right == nullptr) {
        return nullptr;
    }
    return &kTable[dtype][op];
}

} // namespace

extern "C" {

int ina_reduce(unsigned op, unsigned dtype, void *dst, const void *src, size_t n)
{
    const Kernels *k = find(op, dtype);
    if (k == nullptr) {
        return -1;
    }
    k->right(dst, src, n);
    return 0;
}

int ina_reduce_left(unsigned op, unsigned dtype, void *dst, const void *src, size_t n)
{
    const Kernels *k = find(op, dtype);
    if (k == nullptr) {
        return -1;
    }
    k->left(dst, src, n);
    return 0;
}

int ina_reduce_order_free(unsigned op, unsigned dtype)
{
    // Integer arithmetic and logic, and MINLOC/MAXLOC over integer values, are
    // exact, commutative and associative; REPLACE places disjoint bytes.
    const bool exact = dtype < INA_DT_FLOAT || dtype == INA_DT_BOOL || dtype == INA_DT_LONG_INT ||
                       dtype == INA_DT_2INT || dtype == INA_DT_SHORT_INT;
    return ina_proto_op_valid(op, dtype) && exact;
}

} // extern "C"

// Reduce kernels: one loop per (op, element type), reached through a table.
//
// Every element is read and written with a fixed-size memcpy: that is legal
// for any alignment and any effective type, and the compiler turns it into a
// plain unaligned (vector) load/store. The loops must vectorise: Makefile.am
// asks for the vectoriser explicitly, because the -O2 in the default CXXFLAGS
// comes after our flags and its cost model never vectorises a loop whose trip
// count is unknown.
#include "ina_reduce.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace {

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
// a is dst, b is src: dst is kept on ties and on NaN (ina_reduce.h).
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

// Bytes of a long double that carry its value: x87 extended precision uses
// 10 of its 16 bytes; the rest is padding that arithmetic leaves undefined.
constexpr size_t kLongDoubleValueBytes =
    (std::numeric_limits<long double>::digits == 64 && sizeof(long double) > 10)
        ? 10
        : sizeof(long double);

template <typename T> inline T load(const unsigned char *p)
{
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

template <typename T> inline void store(unsigned char *p, T v)
{
    if constexpr (std::is_same_v<T, long double> && kLongDoubleValueBytes < sizeof(T)) {
        // Zero the padding so every rank gets bit-identical result bytes.
        std::memcpy(p, &v, kLongDoubleValueBytes);
        std::memset(p + kLongDoubleValueBytes, 0, sizeof(T) - kLongDoubleValueBytes);
    } else {
        std::memcpy(p, &v, sizeof(T));
    }
}

using Kernel = void (*)(void *, const void *, size_t);

template <template <typename> class Op, typename T>
void kernel(void *dstv, const void *srcv, size_t n)
{
    auto *dst = static_cast<unsigned char *>(dstv);
    const auto *src = static_cast<const unsigned char *>(srcv);
    for (size_t i = 0; i < n; ++i) {
        const size_t at = i * sizeof(T);
        store<T>(dst + at, Op<T>::apply(load<T>(dst + at), load<T>(src + at)));
    }
}

using Row = std::array<Kernel, INA_OP_COUNT>;

// Indexed by ina_proto_op_t; nullptr where MPI defines no (op, dtype) pair.
template <typename T> constexpr Row row()
{
    if constexpr (std::is_integral_v<T>) {
        return {&kernel<Sum, T>,  &kernel<Prod, T>, &kernel<Min, T>,  &kernel<Max, T>,
                &kernel<Land, T>, &kernel<Lor, T>,  &kernel<Lxor, T>, &kernel<Band, T>,
                &kernel<Bor, T>,  &kernel<Bxor, T>};
    } else {
        return {&kernel<Sum, T>, &kernel<Prod, T>, &kernel<Min, T>, &kernel<Max, T>,
                nullptr,         nullptr,          nullptr,         nullptr,
                nullptr,         nullptr};
    }
}

// Indexed by ina_proto_dtype_t.
constexpr std::array<Row, INA_DT_COUNT> kTable = {
    row<int8_t>(),  row<uint8_t>(),  row<int16_t>(), row<uint16_t>(),
    row<int32_t>(), row<uint32_t>(), row<int64_t>(), row<uint64_t>(),
    row<float>(),   row<double>(),   row<long double>(),
};

static_assert(sizeof(float) == 4 && sizeof(double) == 8, "wire floats are binary32/64");

} // namespace

extern "C" {

int ina_reduce(unsigned op, unsigned dtype, void *dst, const void *src, size_t n)
{
    if (dtype >= INA_DT_COUNT || op >= INA_OP_COUNT) {
        return -1;
    }
    const Kernel k = kTable[dtype][op];
    if (k == nullptr) {
        return -1;
    }
    k(dst, src, n);
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

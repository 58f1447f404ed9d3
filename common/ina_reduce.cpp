// Reduce kernels: one template per (op, element type), instantiated through a
// dispatch table. Written so the compiler vectorises the loops (-O3).
#include "ina_reduce.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace {

template <typename T> struct Sum {
    static T apply(T a, T b)
    {
        if constexpr (std::is_integral_v<T>) {
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
            // Promote to at least unsigned int so the product wraps instead of overflowing.
            using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned,
                                         std::make_unsigned_t<T>>;
            return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
        } else {
            return a * b;
        }
    }
};
template <typename T> struct Min { static T apply(T a, T b) { return b < a ? b : a; } };
template <typename T> struct Max { static T apply(T a, T b) { return b > a ? b : a; } };
template <typename T> struct Land { static T apply(T a, T b) { return static_cast<T>((a != 0) && (b != 0)); } };
template <typename T> struct Lor { static T apply(T a, T b) { return static_cast<T>((a != 0) || (b != 0)); } };
template <typename T> struct Lxor { static T apply(T a, T b) { return static_cast<T>((a != 0) != (b != 0)); } };
template <typename T> struct Band { static T apply(T a, T b) { return a & b; } };
template <typename T> struct Bor { static T apply(T a, T b) { return a | b; } };
template <typename T> struct Bxor { static T apply(T a, T b) { return a ^ b; } };

using Kernel = void (*)(void *, const void *, size_t);

template <template <typename> class Op, typename T>
void kernel(void *dstv, const void *srcv, size_t n)
{
    auto *dst = static_cast<unsigned char *>(dstv);
    auto *src = static_cast<const unsigned char *>(srcv);
    // memcpy in and out: any alignment is legal, and compilers turn this into
    // plain (vector) loads and stores.
    constexpr size_t chunk = 256;
    T a[chunk], b[chunk];
    for (size_t i = 0; i < n; i += chunk) {
        size_t m = n - i < chunk ? n - i : chunk;
        std::memcpy(a, dst + i * sizeof(T), m * sizeof(T));
        std::memcpy(b, src + i * sizeof(T), m * sizeof(T));
        for (size_t j = 0; j < m; ++j) {
            a[j] = Op<T>::apply(a[j], b[j]);
        }
        std::memcpy(dst + i * sizeof(T), a, m * sizeof(T));
    }
}

template <typename T> constexpr bool kIsFloat = std::is_floating_point_v<T>;

template <template <typename> class Op, typename T> constexpr Kernel pick()
{
    return &kernel<Op, T>;
}


template <typename T> struct IntRow {
    static constexpr Kernel row[INA_OP_COUNT] = {
        pick<Sum, T>(),  pick<Prod, T>(), pick<Min, T>(), pick<Max, T>(), pick<Land, T>(),
        pick<Lor, T>(),  pick<Lxor, T>(), pick<Band, T>(), pick<Bor, T>(), pick<Bxor, T>()};
};

struct FloatOnly {
    template <typename T> static constexpr Kernel row[INA_OP_COUNT] = {
        pick<Sum, T>(), pick<Prod, T>(), pick<Min, T>(), pick<Max, T>(),
        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
};

const Kernel *const kTable[INA_DT_COUNT] = {
    IntRow<int8_t>::row,  IntRow<uint8_t>::row,  IntRow<int16_t>::row,
    IntRow<uint16_t>::row, IntRow<int32_t>::row, IntRow<uint32_t>::row,
    IntRow<int64_t>::row, IntRow<uint64_t>::row, FloatOnly::row<float>,
    FloatOnly::row<double>, FloatOnly::row<long double>,
};

} // namespace

extern "C" {

int ina_reduce(unsigned op, unsigned dtype, void *dst, const void *src, size_t n)
{
    if (dtype >= INA_DT_COUNT || op >= INA_OP_COUNT) {
        return -1;
    }
    Kernel k = kTable[dtype][op];
    if (k == nullptr) {
        return -1;
    }
    if (n != 0) {
        k(dst, src, n);
    }
    return 0;
}

int ina_reduce_order_free(unsigned op, unsigned dtype)
{
    (void)op;
    return dtype < INA_DT_FLOAT;
}

} // extern "C"

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Unit tests of the reduce kernels (common/ina_reduce.h) against a scalar
// reference written here: every dtype x op, many lengths and alignments,
// wrap-around, tie and NaN rules, complex arithmetic, MINLOC/MAXLOC pairs,
// zeroed padding, order freedom, reproducibility.
#include "check_main.h"
#include "ina_reduce.h"

#include <check.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <numeric>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

const size_t kLengths[] = {0, 1, 7, 255, 256, 257, 1000, 4099};
constexpr size_t kGuard = 64;          // bytes checked on both sides of dst
constexpr unsigned char kFill = 0x5a;  // what the guard bytes hold

bool is_integer_dtype(unsigned dt) { return dt <= INA_DT_UINT64; }
bool is_floating_dtype(unsigned dt) { return dt >= INA_DT_FLOAT && dt <= INA_DT_LONG_DOUBLE; }
bool is_complex_dtype(unsigned dt)
{
    return dt >= INA_DT_FLOAT_COMPLEX && dt <= INA_DT_LONG_DOUBLE_COMPLEX;
}

// The pairs ina_reduce implements (REPLACE is not a reduction).
bool ref_reduce_valid(unsigned op, unsigned dt)
{
    if (op >= INA_OP_COUNT || dt >= INA_DT_COUNT) {
        return false;
    }
    if (is_integer_dtype(dt)) {
        return op <= INA_OP_BXOR;
    }
    if (is_floating_dtype(dt)) {
        return op <= INA_OP_MAX; // SUM, PROD, MIN, MAX
    }
    if (dt == INA_DT_BOOL) {
        return op == INA_OP_LAND || op == INA_OP_LOR || op == INA_OP_LXOR;
    }
    if (is_complex_dtype(dt)) {
        return op == INA_OP_SUM || op == INA_OP_PROD;
    }
    return op == INA_OP_MINLOC || op == INA_OP_MAXLOC; // the six pair types
}

// Bytes of T that hold its value: x87 long double keeps 6 padding bytes.
template <typename T> constexpr size_t value_bytes()
{
    if constexpr (std::is_same_v<T, long double>) {
        return std::numeric_limits<long double>::digits == 64 ? 10 : sizeof(long double);
    }
    return sizeof(T);
}

template <typename T> T get(const unsigned char *p)
{
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

template <typename T> bool is_nan_value(T v)
{
    if constexpr (std::is_floating_point_v<T>) {
        return std::isnan(v);
    }
    return false;
}

// Values that exercise the edges: zeros, extremes, NaN, inf, denormals, and
// wide magnitudes, so that sums round and products overflow.
template <typename T> T random_value(std::mt19937_64 &rng)
{
    if constexpr (std::is_integral_v<T>) {
        switch (rng() % 8) {
        case 0: return 0; // logical ops need plenty of zeros
        case 1: return std::numeric_limits<T>::max();
        case 2: return std::numeric_limits<T>::min();
        case 3: return static_cast<T>(rng() % 3); // 0, 1, 2
        default: return static_cast<T>(rng());
        }
    } else {
        using L = std::numeric_limits<T>;
        switch (rng() % 16) {
        case 0: return T(0);
        case 1: return -T(0);
        case 2: return L::infinity();
        case 3: return -L::infinity();
        case 4: return L::quiet_NaN();
        case 5: return L::denorm_min() * static_cast<T>(rng() % 100);
        case 6: return L::max();
        case 7: return L::lowest();
        default: {
            const T mant = static_cast<T>(static_cast<int64_t>(rng() % 2000001) - 1000000) / 1000;
            const int exp = static_cast<int>(rng() % 61) - 30;
            return std::ldexp(mant, exp);
        }
        }
    }
}

// ---- Element models --------------------------------------------------------
// Each model M describes one wire dtype for the generic checks below:
//   M::Value, M::kSize (wire bytes), random(), put(p, v, pad) (pad = padding
//   byte: 0 for the kernels' output format, garbage for careless inputs),
//   get(p), reference(op, d, s), and equal(op, want, got) on wire bytes.

// Integer and real scalars: reference in 64-bit unsigned arithmetic truncated
// to the width of T (modular, never saturated), floats by ina_reduce.h's rules.
template <typename T> struct Scalar {
    using Value = T;
    static constexpr size_t kSize = sizeof(T);
    static Value random(std::mt19937_64 &rng) { return random_value<T>(rng); }
    static void put(unsigned char *p, Value v, unsigned char pad)
    {
        std::memset(p, pad, sizeof(T));
        std::memcpy(p, &v, value_bytes<T>());
    }
    static Value get(const unsigned char *p) { return ::get<T>(p); }
    static Value reference(unsigned op, T d, T s)
    {
        if constexpr (std::is_integral_v<T>) {
            using U = std::make_unsigned_t<T>;
            const uint64_t ud = static_cast<U>(d);
            const uint64_t us = static_cast<U>(s);
            uint64_t bits = 0;
            switch (op) {
            case INA_OP_SUM: bits = ud + us; break;
            case INA_OP_PROD: bits = ud * us; break;
            case INA_OP_MIN: return std::min(d, s);
            case INA_OP_MAX: return std::max(d, s);
            case INA_OP_LAND: return (d != 0 && s != 0) ? T{1} : T{0};
            case INA_OP_LOR: return (d != 0 || s != 0) ? T{1} : T{0};
            case INA_OP_LXOR: return ((d != 0) != (s != 0)) ? T{1} : T{0};
            case INA_OP_BAND: bits = ud & us; break;
            case INA_OP_BOR: bits = ud | us; break;
            case INA_OP_BXOR: bits = ud ^ us; break;
            default: ck_abort_msg("op %u", op);
            }
            const U low = static_cast<U>(bits); // modulo 2^width
            T out;
            std::memcpy(&out, &low, sizeof(T));
            return out;
        } else {
            switch (op) {
            case INA_OP_SUM: return d + s;
            case INA_OP_PROD: return d * s;
            case INA_OP_MIN:
                if (s < d) {
                    return s;
                }
                return d;
            case INA_OP_MAX:
                if (s > d) {
                    return s;
                }
                return d;
            default: ck_abort_msg("op %u", op);
            }
            return d;
        }
    }
    // SUM/PROD of NaNs: any NaN will do (the payload is the FPU's choice),
    // but the padding must still be zero.
    static bool equal(unsigned op, const unsigned char *want, const unsigned char *got)
    {
        if (std::memcmp(want, got, kSize) == 0) {
            return true;
        }
        if (!is_nan_value(get(want)) || !is_nan_value(get(got)) ||
            (op != INA_OP_SUM && op != INA_OP_PROD)) {
            return false;
        }
        return std::all_of(got + value_bytes<T>(), got + kSize, [](unsigned char b) { return b == 0; });
    }
};

// C _Bool: one byte, 0 or 1.
struct Bool {
    using Value = uint8_t;
    static constexpr size_t kSize = 1;
    static Value random(std::mt19937_64 &rng) { return static_cast<Value>(rng() % 2); }
    static void put(unsigned char *p, Value v, unsigned char) { *p = v; }
    static Value get(const unsigned char *p) { return *p; }
    static Value reference(unsigned op, Value d, Value s)
    {
        switch (op) {
        case INA_OP_LAND: return d && s;
        case INA_OP_LOR: return d || s;
        case INA_OP_LXOR: return d != s;
        default: ck_abort_msg("op %u", op);
        }
        return 0;
    }
    static bool equal(unsigned, const unsigned char *want, const unsigned char *got)
    {
        return *want == *got;
    }
};

// C F _Complex as two parts; products in the textbook form, each product a
// separate rounded value (this file is built with -ffp-contract=off too).
template <typename F> struct Complex {
    struct Value {
        F re, im;
    };
    static constexpr size_t kSize = 2 * sizeof(F);
    static Value random(std::mt19937_64 &rng) { return {random_value<F>(rng), random_value<F>(rng)}; }
    static void put(unsigned char *p, Value v, unsigned char pad)
    {
        Scalar<F>::put(p, v.re, pad);
        Scalar<F>::put(p + sizeof(F), v.im, pad);
    }
    static Value get(const unsigned char *p) { return {::get<F>(p), ::get<F>(p + sizeof(F))}; }
    static Value reference(unsigned op, Value d, Value s)
    {
        if (op == INA_OP_SUM) {
            return {d.re + s.re, d.im + s.im};
        }
        if (op != INA_OP_PROD) {
            ck_abort_msg("op %u", op);
        }
        const F ac = d.re * s.re, bd = d.im * s.im, ad = d.re * s.im, bc = d.im * s.re;
        return {ac - bd, ad + bc};
    }
    static bool equal(unsigned op, const unsigned char *want, const unsigned char *got)
    {
        return Scalar<F>::equal(op, want, got) &&
               Scalar<F>::equal(op, want + sizeof(F), got + sizeof(F));
    }
};

// MPI's { V v; int i; } with the host's padding.
template <typename V> struct PairModel {
    struct Value {
        V v;
        int i;
    };
    static constexpr size_t kSize = sizeof(Value);
    static constexpr size_t kIndexAt = offsetof(Value, i);
    static Value random(std::mt19937_64 &rng)
    {
        // Few distinct values and indices: plenty of ties of both.
        static const int kIdx[] = {0, 1, 2, 3, INT_MAX, INT_MIN, -1};
        Value p;
        if constexpr (std::is_integral_v<V>) {
            static const V kVals[] = {0, 1, -1, 2, std::numeric_limits<V>::max(),
                                      std::numeric_limits<V>::min()};
            p.v = rng() % 4 == 0 ? random_value<V>(rng) : kVals[rng() % std::size(kVals)];
        } else {
            p.v = rng() % 2 == 0 ? random_value<V>(rng) : static_cast<V>(rng() % 3) - 1;
        }
        p.i = kIdx[rng() % std::size(kIdx)];
        return p;
    }
    static void put(unsigned char *p, Value v, unsigned char pad)
    {
        std::memset(p, pad, kSize);
        std::memcpy(p, &v.v, value_bytes<V>());
        std::memcpy(p + kIndexAt, &v.i, sizeof(int));
    }
    static Value get(const unsigned char *p)
    {
        Value v;
        v.v = ::get<V>(p);
        v.i = ::get<int>(p + kIndexAt);
        return v;
    }
    // MPI 4.1 §6.9.4: w = the better of u and v; k = its index, or
    // min(i, j) when u == v. NaN is unordered: dst is kept (as for MIN/MAX).
    static Value reference(unsigned op, Value d, Value s)
    {
        if (is_nan_value(d.v) || is_nan_value(s.v)) {
            return d;
        }
        if (d.v == s.v) {
            return s.i < d.i ? s : d;
        }
        const bool s_better = op == INA_OP_MINLOC ? s.v < d.v : s.v > d.v;
        if (op != INA_OP_MINLOC && op != INA_OP_MAXLOC) {
            ck_abort_msg("op %u", op);
        }
        return s_better ? s : d;
    }
    static bool equal(unsigned, const unsigned char *want, const unsigned char *got)
    {
        return std::memcmp(want, got, kSize) == 0;
    }
};

template <typename F> void with_model(unsigned dt, F &&f)
{
    switch (dt) {
    case INA_DT_INT8: f(Scalar<int8_t>{}); break;
    case INA_DT_UINT8: f(Scalar<uint8_t>{}); break;
    case INA_DT_INT16: f(Scalar<int16_t>{}); break;
    case INA_DT_UINT16: f(Scalar<uint16_t>{}); break;
    case INA_DT_INT32: f(Scalar<int32_t>{}); break;
    case INA_DT_UINT32: f(Scalar<uint32_t>{}); break;
    case INA_DT_INT64: f(Scalar<int64_t>{}); break;
    case INA_DT_UINT64: f(Scalar<uint64_t>{}); break;
    case INA_DT_FLOAT: f(Scalar<float>{}); break;
    case INA_DT_DOUBLE: f(Scalar<double>{}); break;
    case INA_DT_LONG_DOUBLE: f(Scalar<long double>{}); break;
    case INA_DT_BOOL: f(Bool{}); break;
    case INA_DT_FLOAT_COMPLEX: f(Complex<float>{}); break;
    case INA_DT_DOUBLE_COMPLEX: f(Complex<double>{}); break;
    case INA_DT_LONG_DOUBLE_COMPLEX: f(Complex<long double>{}); break;
    case INA_DT_FLOAT_INT: f(PairModel<float>{}); break;
    case INA_DT_DOUBLE_INT: f(PairModel<double>{}); break;
    case INA_DT_LONG_INT: f(PairModel<long>{}); break;
    case INA_DT_2INT: f(PairModel<int>{}); break;
    case INA_DT_SHORT_INT: f(PairModel<short>{}); break;
    case INA_DT_LONG_DOUBLE_INT: f(PairModel<long double>{}); break;
    default: ck_abort_msg("dtype %u", dt);
    }
}

// A dst buffer with guard bytes on both sides and dst at a chosen offset.
struct Guarded {
    std::vector<unsigned char> bytes;
    size_t off;
    size_t len;
    Guarded(size_t len_, size_t off_) : bytes(kGuard + off_ + len_ + kGuard, kFill), off(off_), len(len_) {}
    unsigned char *data() { return bytes.data() + kGuard + off; }
    bool guards_intact() const
    {
        for (size_t i = 0; i < bytes.size(); ++i) {
            const bool inside = i >= kGuard + off && i < kGuard + off + len;
            if (!inside && bytes[i] != kFill) {
                return false;
            }
        }
        return true;
    }
};

// Runs one (op, dtype) case and checks every element and the guards.
// left: ina_reduce_left (dst = src OP dst) instead of ina_reduce.
template <typename M>
void check_case(unsigned op, unsigned dt, size_t n, size_t doff, size_t soff, std::mt19937_64 &rng,
                bool left = false)
{
    constexpr size_t esz = M::kSize;
    Guarded dst(n * esz, doff);
    std::vector<unsigned char> srcbuf(soff + n * esz + 1);
    unsigned char *src = srcbuf.data() + soff;
    for (size_t i = 0; i < n; ++i) {
        const auto d = M::random(rng);
        // Every eighth pair is a whole-element tie.
        const auto s = (rng() % 8 == 0) ? d : M::random(rng);
        // Inputs with garbage in their padding, as a careless sender's.
        M::put(dst.data() + i * esz, d, static_cast<unsigned char>(0xc0 + i));
        M::put(src + i * esz, s, 0xee);
    }
    const std::vector<unsigned char> before(dst.data(), dst.data() + n * esz);
    const std::vector<unsigned char> src_before(srcbuf);

    // Plain ifs instead of ck_assert: every passing ck_assert costs Check a
    // syscall, and this runs tens of thousands of times.
    if ((left ? ina_reduce_left : ina_reduce)(op, dt, dst.data(), src, n) != 0) {
        ck_abort_msg("%s/%s rejected", ina_proto_op_name(op), ina_proto_dtype_name(dt));
    }
    if (!dst.guards_intact()) {
        ck_abort_msg("%s/%s n=%zu off=%zu/%zu wrote outside dst", ina_proto_op_name(op),
                     ina_proto_dtype_name(dt), n, doff, soff);
    }
    if (srcbuf != src_before) {
        ck_abort_msg("%s/%s modified src", ina_proto_op_name(op), ina_proto_dtype_name(dt));
    }
    unsigned char want[esz];
    for (size_t i = 0; i < n; ++i) {
        const auto d = M::get(before.data() + i * esz);
        const auto sv = M::get(src + i * esz);
        const auto r = left ? M::reference(op, sv, d) : M::reference(op, d, sv);
        M::put(want, r, 0); // the output format: padding zeroed
        if (!M::equal(op, want, dst.data() + i * esz)) {
            ck_abort_msg("%s/%s%s n=%zu off=%zu/%zu: element %zu differs from reference",
                         ina_proto_op_name(op), ina_proto_dtype_name(dt), left ? " (left)" : "",
                         n, doff, soff, i);
        }
    }
}

} // namespace

// One loop iteration per dtype: every valid op, length and alignment.
START_TEST(test_sweep_dtype)
{
    const unsigned dt = static_cast<unsigned>(_i);
    std::mt19937_64 rng(1000 + dt);
    unsigned ops = 0;
    with_model(dt, [&](auto model) {
        using M = decltype(model);
        for (unsigned op = 0; op < INA_OP_COUNT; ++op) {
            if (!ref_reduce_valid(op, dt)) {
                continue;
            }
            ++ops;
            for (size_t n : kLengths) {
                for (size_t doff = 0; doff < 8; ++doff) {
                    for (size_t soff = 0; soff < 8; ++soff) {
                        // Long lengths: every dst offset, a few src offsets.
                        if (n > 300 && soff != doff && soff != (doff + 3) % 8) {
                            continue;
                        }
                        check_case<M>(op, dt, n, doff, soff, rng);
                        check_case<M>(op, dt, n, doff, soff, rng, true);
                    }
                }
            }
        }
    });
    ck_assert_uint_ge(ops, 2); // every dtype has at least two reductions
}
END_TEST

START_TEST(test_invalid_pairs_untouched)
{
    std::vector<unsigned char> dst(4099 * 32), src(4099 * 32, 0x11);
    unsigned invalid = 0;
    for (unsigned op : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u, 11u, 12u, 13u, 255u, UINT_MAX}) {
        for (unsigned dt = 0; dt <= INA_DT_COUNT + 1; ++dt) {
            if (ref_reduce_valid(op, dt)) {
                continue;
            }
            ++invalid;
            for (size_t n : kLengths) {
                std::fill(dst.begin(), dst.end(), 0x77);
                ck_assert_int_eq(ina_reduce(op, dt, dst.data(), src.data(), n), -1);
                ck_assert_int_eq(ina_reduce_left(op, dt, dst.data(), src.data(), n), -1);
                if (!std::all_of(dst.begin(), dst.end(), [](unsigned char b) { return b == 0x77; })) {
                    ck_abort_msg("invalid op %u dtype %u touched dst", op, dt);
                }
            }
        }
        ck_assert_int_eq(ina_reduce(op, UINT_MAX, dst.data(), src.data(), 1), -1);
    }
    // In range: 21 dtypes x 13 ops minus the 113 valid reductions.
    ck_assert_uint_ge(invalid, 21 * 13 - 113);
    // REPLACE places bytes; it is no reduction even on UINT8.
    ck_assert_int_eq(ina_reduce(INA_OP_REPLACE, INA_DT_UINT8, dst.data(), src.data(), 4), -1);
}
END_TEST

// Literal values, so the reference itself is pinned down.
START_TEST(test_spot_values)
{
    auto one = [](unsigned op, unsigned dt, auto d, auto s) {
        ck_assert_int_eq(ina_reduce(op, dt, &d, &s, 1), 0);
        return d;
    };
    ck_assert_uint_eq(one(INA_OP_SUM, INA_DT_UINT8, uint8_t{200}, uint8_t{100}), 44);
    ck_assert_int_eq(one(INA_OP_SUM, INA_DT_INT8, int8_t{127}, int8_t{1}), -128);
    ck_assert_int_eq(one(INA_OP_PROD, INA_DT_INT8, int8_t{-128}, int8_t{-1}), -128);
    ck_assert_uint_eq(one(INA_OP_PROD, INA_DT_UINT16, uint16_t{65535}, uint16_t{65535}), 1);
    ck_assert_int_eq(one(INA_OP_PROD, INA_DT_INT16, int16_t{300}, int16_t{300}), 24464);
    ck_assert_int_eq(one(INA_OP_SUM, INA_DT_INT32, int32_t{INT32_MAX}, int32_t{1}), INT32_MIN);
    ck_assert_int_eq(one(INA_OP_PROD, INA_DT_INT32, int32_t{65536}, int32_t{65536}), 0);
    ck_assert_uint_eq(one(INA_OP_PROD, INA_DT_UINT32, uint32_t{0xffffffffu}, uint32_t{2}), 0xfffffffeu);
    ck_assert_int_eq(one(INA_OP_SUM, INA_DT_INT64, int64_t{INT64_MIN}, int64_t{-1}), INT64_MAX);
    ck_assert_int_eq(one(INA_OP_PROD, INA_DT_INT64, int64_t{1} << 62, int64_t{4}), 0);
    ck_assert_int_eq(one(INA_OP_MIN, INA_DT_INT8, int8_t{-1}, int8_t{1}), -1);
    ck_assert_uint_eq(one(INA_OP_MIN, INA_DT_UINT8, uint8_t{255}, uint8_t{1}), 1);
    ck_assert_int_eq(one(INA_OP_MAX, INA_DT_INT64, int64_t{-5}, int64_t{INT64_MIN}), -5);
    // Logical ops give exactly 0 or 1.
    ck_assert_int_eq(one(INA_OP_LAND, INA_DT_INT32, int32_t{5}, int32_t{-3}), 1);
    ck_assert_int_eq(one(INA_OP_LAND, INA_DT_INT32, int32_t{5}, int32_t{0}), 0);
    ck_assert_int_eq(one(INA_OP_LOR, INA_DT_INT16, int16_t{0}, int16_t{0}), 0);
    ck_assert_int_eq(one(INA_OP_LOR, INA_DT_INT16, int16_t{0}, int16_t{-32768}), 1);
    ck_assert_uint_eq(one(INA_OP_LXOR, INA_DT_UINT8, uint8_t{7}, uint8_t{9}), 0);
    ck_assert_uint_eq(one(INA_OP_LXOR, INA_DT_UINT8, uint8_t{0}, uint8_t{200}), 1);
    ck_assert_uint_eq(one(INA_OP_LAND, INA_DT_UINT64, uint64_t{1} << 63, uint64_t{1} << 40), 1);
    ck_assert_uint_eq(one(INA_OP_BAND, INA_DT_UINT16, uint16_t{0xf0f0}, uint16_t{0x3c3c}), 0x3030);
    ck_assert_uint_eq(one(INA_OP_BOR, INA_DT_UINT16, uint16_t{0xf0f0}, uint16_t{0x3c3c}), 0xfcfc);
    ck_assert_uint_eq(one(INA_OP_BXOR, INA_DT_UINT16, uint16_t{0xf0f0}, uint16_t{0x3c3c}), 0xcccc);
    ck_assert_int_eq(one(INA_OP_BXOR, INA_DT_INT8, int8_t{-1}, int8_t{0x0f}), -16);
    // Floats: exact small sums, and dst kept on ties and NaN.
    ck_assert(one(INA_OP_SUM, INA_DT_FLOAT, 1.5f, 2.25f) == 3.75f);
    ck_assert(one(INA_OP_PROD, INA_DT_DOUBLE, -3.0, 0.5) == -1.5);
    ck_assert(!std::signbit(one(INA_OP_MIN, INA_DT_FLOAT, 0.0f, -0.0f)));
    ck_assert(std::signbit(one(INA_OP_MIN, INA_DT_DOUBLE, -0.0, 0.0)));
    ck_assert(std::signbit(one(INA_OP_MAX, INA_DT_FLOAT, -0.0f, 0.0f)));
    ck_assert(!std::signbit(one(INA_OP_MAX, INA_DT_DOUBLE, 0.0, -0.0)));
    ck_assert(std::isnan(one(INA_OP_MIN, INA_DT_FLOAT, NAN, 1.0f)));
    ck_assert(one(INA_OP_MIN, INA_DT_FLOAT, 1.0f, NAN) == 1.0f);
    ck_assert(std::isnan(one(INA_OP_MAX, INA_DT_DOUBLE, double(NAN), 1.0)));
    ck_assert(one(INA_OP_MAX, INA_DT_DOUBLE, 1.0, double(NAN)) == 1.0);
    ck_assert(one(INA_OP_MIN, INA_DT_LONG_DOUBLE, 2.0L, -7.0L) == -7.0L);
    ck_assert(one(INA_OP_MAX, INA_DT_LONG_DOUBLE, 1.0L, static_cast<long double>(NAN)) == 1.0L);
}
END_TEST

// C _Bool: truth tables, byte for byte.
START_TEST(test_bool_truth_tables)
{
    const uint8_t d[4] = {0, 0, 1, 1}, s[4] = {0, 1, 0, 1};
    const uint8_t land[4] = {0, 0, 0, 1}, lor[4] = {0, 1, 1, 1}, lxor[4] = {0, 1, 1, 0};
    for (auto [op, want] : {std::pair{INA_OP_LAND, land}, std::pair{INA_OP_LOR, lor},
                            std::pair{INA_OP_LXOR, lxor}}) {
        uint8_t out[4];
        std::memcpy(out, d, 4);
        ck_assert_int_eq(ina_reduce(op, INA_DT_BOOL, out, s, 4), 0);
        ck_assert_mem_eq(out, want, 4);
    }
    // Arithmetic, ordering and bitwise ops are not defined on MPI_C_BOOL.
    for (unsigned op : {INA_OP_SUM, INA_OP_PROD, INA_OP_MIN, INA_OP_MAX, INA_OP_BAND, INA_OP_BOR,
                        INA_OP_BXOR, INA_OP_MINLOC, INA_OP_MAXLOC}) {
        uint8_t out[4] = {1, 1, 1, 1};
        ck_assert_int_eq(ina_reduce(op, INA_DT_BOOL, out, s, 4), -1);
    }
}
END_TEST

// Complex values computed by hand.
template <typename F> void check_complex_by_hand(unsigned dt)
{
    using C = typename Complex<F>::Value;
    auto one = [dt](unsigned op, C d, C s) {
        unsigned char dst[2 * sizeof(F)], src[2 * sizeof(F)];
        Complex<F>::put(dst, d, 0xff);
        Complex<F>::put(src, s, 0x33);
        ck_assert_int_eq(ina_reduce(op, dt, dst, src, 1), 0);
        // Padding of both parts zeroed (long double only has any).
        for (size_t part = 0; part < 2; ++part) {
            for (size_t b = value_bytes<F>(); b < sizeof(F); ++b) {
                ck_assert_uint_eq(dst[part * sizeof(F) + b], 0);
            }
        }
        return Complex<F>::get(dst);
    };
    C r = one(INA_OP_SUM, {1.5, 0.5}, {2.25, -1});
    ck_assert(r.re == F(3.75) && r.im == F(-0.5));
    r = one(INA_OP_PROD, {1, 2}, {3, 4}); // (3 - 8) + (4 + 6)i
    ck_assert(r.re == F(-5) && r.im == F(10));
    r = one(INA_OP_PROD, {0, 1}, {0, 1}); // i * i = -1
    ck_assert(r.re == F(-1) && r.im == F(0));
    r = one(INA_OP_PROD, {2, -3}, {-1, 0.5}); // (-2 + 1.5) + (1 + 3)i
    ck_assert(r.re == F(-0.5) && r.im == F(4));
    // No C99 Annex G recovery: (inf + NaN i)(1 + 0i) is NaN + NaN i in the
    // textbook form (re = inf*1 - NaN*0); Annex G would turn re into inf.
    const F inf = std::numeric_limits<F>::infinity();
    const F nan = std::numeric_limits<F>::quiet_NaN();
    r = one(INA_OP_PROD, {inf, nan}, {1, 0});
    ck_assert(std::isnan(r.re) && std::isnan(r.im));
    r = one(INA_OP_PROD, {inf, 1}, {1, 0}); // re = inf - 0, im = inf*0 + 1
    ck_assert(r.re == inf && std::isnan(r.im));
    // No fma: x*x is inexact, and re = x*x - x*x cancels to exactly 0 only
    // when both products are rounded before the subtraction (an fma would
    // leave the rounding error of one of them).
    const F x = F(1) + std::numeric_limits<F>::epsilon();
    const F xx = x * x;
    r = one(INA_OP_PROD, {x, x}, {x, x}); // re = x*x - x*x, im = x*x + x*x
    ck_assert(r.re == F(0) && !std::signbit(r.re) && r.im == xx + xx);
    r = one(INA_OP_PROD, {x, x}, {-x, x}); // re = -x*x - x*x, im = x*x - x*x
    ck_assert(r.re == -(xx + xx) && r.im == F(0));
    // Complex ordering/logic is not defined.
    for (unsigned op : {INA_OP_MIN, INA_OP_MAX, INA_OP_LAND, INA_OP_BXOR, INA_OP_MINLOC}) {
        C d{1, 1};
        ck_assert_int_eq(ina_reduce(op, dt, &d, &d, 1), -1);
    }
}

START_TEST(test_complex_by_hand)
{
    check_complex_by_hand<float>(INA_DT_FLOAT_COMPLEX);
    check_complex_by_hand<double>(INA_DT_DOUBLE_COMPLEX);
    check_complex_by_hand<long double>(INA_DT_LONG_DOUBLE_COMPLEX);
}
END_TEST

// Pairs by hand: the tie rule, NaN, and the padding of the output.
template <typename V> void check_pairs_by_hand(unsigned dt)
{
    using P = typename PairModel<V>::Value;
    constexpr size_t esz = PairModel<V>::kSize;
    auto one = [dt](unsigned op, P d, P s) {
        unsigned char dst[esz], src[esz];
        PairModel<V>::put(dst, d, 0xff);
        PairModel<V>::put(src, s, 0x99);
        ck_assert_int_eq(ina_reduce(op, dt, dst, src, 1), 0);
        unsigned char want[esz];
        const P got = PairModel<V>::get(dst);
        PairModel<V>::put(want, got, 0); // same value and index, zero padding
        ck_assert_mem_eq(dst, want, esz);
        return got;
    };
    P r = one(INA_OP_MINLOC, {V(3), 7}, {V(2), 9});
    ck_assert(r.v == V(2) && r.i == 9);
    r = one(INA_OP_MINLOC, {V(2), 7}, {V(3), 1});
    ck_assert(r.v == V(2) && r.i == 7);
    r = one(INA_OP_MAXLOC, {V(3), 7}, {V(2), 1});
    ck_assert(r.v == V(3) && r.i == 7);
    r = one(INA_OP_MAXLOC, {V(-1), 7}, {V(2), 9});
    ck_assert(r.v == V(2) && r.i == 9);
    // Ties: the smaller index wins, whichever side it is on.
    for (unsigned op : {INA_OP_MINLOC, INA_OP_MAXLOC}) {
        r = one(op, {V(5), 4}, {V(5), 2});
        ck_assert(r.v == V(5) && r.i == 2);
        r = one(op, {V(5), 2}, {V(5), 4});
        ck_assert(r.v == V(5) && r.i == 2);
        r = one(op, {V(5), -3}, {V(5), INT_MAX});
        ck_assert(r.v == V(5) && r.i == -3);
    }
    if constexpr (std::is_floating_point_v<V>) {
        // -0 == +0: a tie, so the smaller index's pair (value bits included).
        r = one(INA_OP_MINLOC, {V(0), 5}, {-V(0), 1});
        ck_assert(r.i == 1 && std::signbit(r.v));
        r = one(INA_OP_MAXLOC, {-V(0), 1}, {V(0), 5});
        ck_assert(r.i == 1 && std::signbit(r.v));
        // NaN is unordered: dst kept.
        const V nan = std::numeric_limits<V>::quiet_NaN();
        r = one(INA_OP_MINLOC, {V(1), 5}, {nan, 0});
        ck_assert(r.v == V(1) && r.i == 5);
        r = one(INA_OP_MAXLOC, {nan, 5}, {V(1), 0});
        ck_assert(std::isnan(r.v) && r.i == 5);
    }
    for (unsigned op : {INA_OP_SUM, INA_OP_MIN, INA_OP_MAX, INA_OP_BOR}) {
        unsigned char d[esz] = {};
        ck_assert_int_eq(ina_reduce(op, dt, d, d, 1), -1);
    }
}

START_TEST(test_pairs_by_hand)
{
    check_pairs_by_hand<float>(INA_DT_FLOAT_INT);
    check_pairs_by_hand<double>(INA_DT_DOUBLE_INT);
    check_pairs_by_hand<long>(INA_DT_LONG_INT);
    check_pairs_by_hand<int>(INA_DT_2INT);
    check_pairs_by_hand<short>(INA_DT_SHORT_INT);
    check_pairs_by_hand<long double>(INA_DT_LONG_DOUBLE_INT);
}
END_TEST

// MINLOC over many ranks, as an MPI_Reduce does it: rank r contributes
// (value, r); the result is the best value and the lowest rank holding it.
START_TEST(test_pairs_across_ranks)
{
    constexpr size_t n = 1000, ranks = 16;
    std::mt19937_64 rng(99);
    std::vector<int> vals(n * ranks);
    for (int &v : vals) {
        v = static_cast<int>(rng() % 5); // many ranks share the best value
    }
    for (unsigned op : {INA_OP_MINLOC, INA_OP_MAXLOC}) {
        std::vector<int> acc(2 * n), contrib(2 * n);
        for (size_t r = 0; r < ranks; ++r) {
            for (size_t i = 0; i < n; ++i) {
                contrib[2 * i] = vals[r * n + i];
                contrib[2 * i + 1] = static_cast<int>(r);
            }
            if (r == 0) {
                acc = contrib;
            } else {
                ck_assert_int_eq(ina_reduce(op, INA_DT_2INT, acc.data(), contrib.data(), n), 0);
            }
        }
        for (size_t i = 0; i < n; ++i) {
            int best = vals[i];
            for (size_t r = 1; r < ranks; ++r) {
                best = op == INA_OP_MINLOC ? std::min(best, vals[r * n + i])
                                           : std::max(best, vals[r * n + i]);
            }
            int first = -1;
            for (size_t r = 0; r < ranks && first < 0; ++r) {
                first = vals[r * n + i] == best ? static_cast<int>(r) : -1;
            }
            if (acc[2 * i] != best || acc[2 * i + 1] != first) {
                ck_abort_msg("%s element %zu: (%d, %d), want (%d, %d)", ina_proto_op_name(op), i,
                             acc[2 * i], acc[2 * i + 1], best, first);
            }
        }
    }
}
END_TEST

// dst == src (full overlap) is allowed: dst[i] = x OP x.
START_TEST(test_in_place)
{
    std::mt19937_64 rng(77);
    for (unsigned dt = 0; dt < INA_DT_COUNT; ++dt) {
        with_model(dt, [&](auto model) {
            using M = decltype(model);
            constexpr size_t esz = M::kSize;
            for (unsigned op = 0; op < INA_OP_COUNT; ++op) {
                if (!ref_reduce_valid(op, dt)) {
                    continue;
                }
                const size_t n = 1000;
                std::vector<unsigned char> buf(n * esz + 3);
                unsigned char *p = buf.data() + 3; // misaligned too
                for (size_t i = 0; i < n; ++i) {
                    M::put(p + i * esz, M::random(rng), 0);
                }
                const std::vector<unsigned char> before(buf);
                ck_assert_int_eq(ina_reduce(op, dt, p, p, n), 0);
                unsigned char want[esz];
                for (size_t i = 0; i < n; ++i) {
                    const auto x = M::get(before.data() + 3 + i * esz);
                    M::put(want, M::reference(op, x, x), 0);
                    if (!M::equal(op, want, p + i * esz)) {
                        ck_abort_msg("in place %s/%s element %zu", ina_proto_op_name(op),
                                     ina_proto_dtype_name(dt), i);
                    }
                }
            }
        });
    }
}
END_TEST

// The claim the agent relies on: for an order-free (op, dtype), any order of
// applying the contributions gives the same bytes. Checked by applying the
// same contributions in many orders; and the listed classes are exactly the
// ones ina_reduce.h names.
START_TEST(test_order_free)
{
    for (unsigned dt = 0; dt < INA_DT_COUNT; ++dt) {
        const bool exact_values = is_integer_dtype(dt) || dt == INA_DT_BOOL ||
                                  dt == INA_DT_LONG_INT || dt == INA_DT_2INT ||
                                  dt == INA_DT_SHORT_INT;
        for (unsigned op = 0; op < INA_OP_COUNT; ++op) {
            if (!ref_reduce_valid(op, dt)) {
                continue;
            }
            ck_assert_msg(!!ina_reduce_order_free(op, dt) == exact_values, "%s/%s",
                          ina_proto_op_name(op), ina_proto_dtype_name(dt));
            if (!exact_values) {
                continue;
            }
            with_model(dt, [&](auto model) {
                using M = decltype(model);
                constexpr size_t n = 64, ranks = 6, esz = M::kSize;
                std::mt19937_64 rng(500 + dt * 16 + op);
                std::vector<std::vector<unsigned char>> contrib(ranks, std::vector<unsigned char>(n * esz));
                for (auto &c : contrib) {
                    for (size_t i = 0; i < n; ++i) {
                        M::put(c.data() + i * esz, M::random(rng), static_cast<unsigned char>(rng()));
                    }
                }
                std::vector<size_t> order(ranks);
                std::iota(order.begin(), order.end(), 0);
                std::vector<unsigned char> first;
                for (int perm = 0; perm < 20; ++perm) {
                    std::vector<unsigned char> acc(contrib[order[0]]);
                    for (size_t k = 1; k < ranks; ++k) {
                        ina_reduce(op, dt, acc.data(), contrib[order[k]].data(), n);
                    }
                    if (perm == 0) {
                        first = acc;
                    } else if (acc != first) {
                        ck_abort_msg("%s/%s depends on the order", ina_proto_op_name(op),
                                     ina_proto_dtype_name(dt));
                    }
                    std::shuffle(order.begin(), order.end(), rng);
                }
            });
        }
    }
    ck_assert_int_eq(ina_reduce_order_free(INA_OP_COUNT, INA_DT_INT32), 0);
    ck_assert_int_eq(ina_reduce_order_free(INA_OP_SUM, INA_DT_COUNT), 0);
    ck_assert_int_eq(ina_reduce_order_free(INA_OP_BAND, INA_DT_FLOAT), 0);
    ck_assert_int_eq(ina_reduce_order_free(INA_OP_SUM, INA_DT_BOOL), 0);
    ck_assert_int_eq(ina_reduce_order_free(INA_OP_MINLOC, INA_DT_DOUBLE_INT), 0);
    ck_assert_int_eq(ina_reduce_order_free(INA_OP_MAXLOC, INA_DT_2INT), 1);
}
END_TEST

// What the agent does for non-order-free types: contributions applied in
// rank order. Twice the same order must give the same bits (padding
// included, whatever garbage the inputs carried), equal to a scalar
// left-to-right evaluation by the reference.
template <typename M> void check_fixed_order(unsigned op, unsigned dt)
{
    constexpr size_t n = 4099, ranks = 8, esz = M::kSize;
    std::mt19937_64 rng(4242 + dt);
    std::vector<std::vector<unsigned char>> contrib(ranks, std::vector<unsigned char>(n * esz));
    for (size_t r = 0; r < ranks; ++r) {
        for (size_t i = 0; i < n; ++i) {
            M::put(contrib[r].data() + i * esz, M::random(rng), static_cast<unsigned char>(rng()));
        }
    }
    auto run = [&]() {
        std::vector<unsigned char> acc(contrib[0]);
        for (size_t r = 1; r < ranks; ++r) {
            ck_assert_int_eq(ina_reduce(op, dt, acc.data(), contrib[r].data(), n), 0);
        }
        return acc;
    };
    const std::vector<unsigned char> first = run(), second = run();
    ck_assert_msg(first == second, "%s/%s not bit-identical", ina_proto_op_name(op),
                  ina_proto_dtype_name(dt));
    unsigned char want[esz];
    for (size_t i = 0; i < n; ++i) {
        auto v = M::get(contrib[0].data() + i * esz);
        for (size_t r = 1; r < ranks; ++r) {
            v = M::reference(op, v, M::get(contrib[r].data() + i * esz));
        }
        M::put(want, v, 0);
        if (!M::equal(op, want, first.data() + i * esz)) {
            ck_abort_msg("%s/%s element %zu", ina_proto_op_name(op), ina_proto_dtype_name(dt), i);
        }
    }
}

START_TEST(test_fixed_order)
{
    for (unsigned dt = INA_DT_FLOAT; dt < INA_DT_COUNT; ++dt) {
        with_model(dt, [&](auto model) {
            using M = decltype(model);
            for (unsigned op = 0; op < INA_OP_COUNT; ++op) {
                if (ref_reduce_valid(op, dt) && !ina_reduce_order_free(op, dt)) {
                    check_fixed_order<M>(op, dt);
                }
            }
        });
    }
}
END_TEST

// The result's long double padding is zero even when dst is kept as is.
START_TEST(test_long_double_padding)
{
    if (value_bytes<long double>() == sizeof(long double)) {
        return; // no padding on this ABI
    }
    for (unsigned op = INA_OP_SUM; op <= INA_OP_MAX; ++op) {
        unsigned char d[4 * sizeof(long double)], s[4 * sizeof(long double)];
        for (size_t i = 0; i < 4; ++i) {
            Scalar<long double>::put(d + i * sizeof(long double), 1.0L, 0xff);
            Scalar<long double>::put(s + i * sizeof(long double), 1.0L, 0x99);
        }
        ck_assert_int_eq(ina_reduce(op, INA_DT_LONG_DOUBLE, d, s, 4), 0);
        for (size_t i = 0; i < 4; ++i) {
            for (size_t b = value_bytes<long double>(); b < sizeof(long double); ++b) {
                ck_assert_uint_eq(d[i * sizeof(long double) + b], 0);
            }
        }
    }
}
END_TEST

int main()
{
    Suite *s = suite_create("ina_reduce");
    TCase *tc = tcase_create("reduce");
    tcase_set_timeout(tc, ina_test::kHangGuardS); // check_main.h: a hang guard
    tcase_add_loop_test(tc, test_sweep_dtype, 0, INA_DT_COUNT);
    tcase_add_test(tc, test_invalid_pairs_untouched);
    tcase_add_test(tc, test_spot_values);
    tcase_add_test(tc, test_bool_truth_tables);
    tcase_add_test(tc, test_complex_by_hand);
    tcase_add_test(tc, test_pairs_by_hand);
    tcase_add_test(tc, test_pairs_across_ranks);
    tcase_add_test(tc, test_in_place);
    tcase_add_test(tc, test_order_free);
    tcase_add_test(tc, test_fixed_order);
    tcase_add_test(tc, test_long_double_padding);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

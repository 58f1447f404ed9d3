// Unit tests of the reduce kernels (common/ina_reduce.h) against a scalar
// reference written here: every dtype x op, many lengths and alignments,
// wrap-around, tie and NaN rules, long double padding, reproducibility.
#include "ina_reduce.h"

#include <check.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

namespace {

const size_t kLengths[] = {0, 1, 7, 255, 256, 257, 1000, 4099};
constexpr size_t kGuard = 64;          // bytes checked on both sides of dst
constexpr unsigned char kFill = 0x5a;  // what the guard bytes hold

bool is_integer_dtype(unsigned dt) { return dt <= INA_DT_UINT64; }

bool ref_pair_valid(unsigned op, unsigned dt)
{
    if (op >= INA_OP_COUNT || dt >= INA_DT_COUNT) {
        return false;
    }
    return is_integer_dtype(dt) || op <= INA_OP_MAX; // SUM, PROD, MIN, MAX
}

// Bytes of T that hold its value: x87 long double keeps 6 padding bytes.
template <typename T> constexpr size_t value_bytes()
{
    if constexpr (std::is_same_v<T, long double>) {
        return std::numeric_limits<long double>::digits == 64 ? 10 : sizeof(long double);
    }
    return sizeof(T);
}

template <typename F> void with_dtype(unsigned dt, F &&f)
{
    switch (dt) {
    case INA_DT_INT8: f(int8_t{}); break;
    case INA_DT_UINT8: f(uint8_t{}); break;
    case INA_DT_INT16: f(int16_t{}); break;
    case INA_DT_UINT16: f(uint16_t{}); break;
    case INA_DT_INT32: f(int32_t{}); break;
    case INA_DT_UINT32: f(uint32_t{}); break;
    case INA_DT_INT64: f(int64_t{}); break;
    case INA_DT_UINT64: f(uint64_t{}); break;
    case INA_DT_FLOAT: f(float{}); break;
    case INA_DT_DOUBLE: f(double{}); break;
    case INA_DT_LONG_DOUBLE: f(static_cast<long double>(0)); break;
    default: ck_abort_msg("dtype %u", dt);
    }
}

template <typename T> T get(const unsigned char *p)
{
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

// Writes the value bytes of v and zero padding (the kernels' output format).
template <typename T> void put(unsigned char *p, T v)
{
    std::memset(p, 0, sizeof(T));
    std::memcpy(p, &v, value_bytes<T>());
}

// Writes v with garbage in the padding, as a careless sender might.
template <typename T> void put_dirty(unsigned char *p, T v, unsigned char garbage)
{
    std::memset(p, garbage, sizeof(T));
    std::memcpy(p, &v, value_bytes<T>());
}

// The reference: integers in 64-bit unsigned arithmetic truncated to the
// width of T (so wrap-around is modular, never saturated), floats by the
// rules of ina_reduce.h.
template <typename T> T reference(unsigned op, T d, T s)
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
            // Wide magnitudes, so that sums round and products overflow.
            const T mant = static_cast<T>(static_cast<int64_t>(rng() % 2000001) - 1000000) / 1000;
            const int exp = static_cast<int>(rng() % 61) - 30;
            return std::ldexp(mant, exp);
        }
        }
    }
}

template <typename T> bool is_nan_value(T v)
{
    if constexpr (std::is_floating_point_v<T>) {
        return std::isnan(v);
    }
    return false;
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

// Runs one (op, T) case and checks every element and the guards.
template <typename T>
void check_case(unsigned op, unsigned dt, size_t n, size_t doff, size_t soff, std::mt19937_64 &rng)
{
    constexpr size_t esz = sizeof(T);
    Guarded dst(n * esz, doff);
    std::vector<unsigned char> srcbuf(soff + n * esz + 1);
    unsigned char *src = srcbuf.data() + soff;
    for (size_t i = 0; i < n; ++i) {
        const T d = random_value<T>(rng);
        // Every eighth pair is a tie: equal, or for floats possibly -0 against +0.
        T s = (rng() % 8 == 0) ? d : random_value<T>(rng);
        if constexpr (std::is_floating_point_v<T>) {
            if (s == d && rng() % 2 == 0) {
                s = -d;
            }
        }
        put_dirty<T>(dst.data() + i * esz, d, static_cast<unsigned char>(0xc0 + i));
        put_dirty<T>(src + i * esz, s, 0xee);
    }
    const std::vector<unsigned char> before(dst.data(), dst.data() + n * esz);
    const std::vector<unsigned char> src_before(srcbuf);

    // Plain ifs instead of ck_assert: every passing ck_assert costs Check a
    // syscall, and this runs tens of thousands of times.
    if (ina_reduce(op, dt, dst.data(), src, n) != 0) {
        ck_abort_msg("%s/%s rejected", ina_proto_op_name(op), ina_proto_dtype_name(dt));
    }
    if (!dst.guards_intact()) {
        ck_abort_msg("%s/%s n=%zu off=%zu/%zu wrote outside dst", ina_proto_op_name(op),
                     ina_proto_dtype_name(dt), n, doff, soff);
    }
    if (srcbuf != src_before) {
        ck_abort_msg("%s/%s modified src", ina_proto_op_name(op), ina_proto_dtype_name(dt));
    }
    unsigned char want[sizeof(T)];
    for (size_t i = 0; i < n; ++i) {
        const T d = get<T>(before.data() + i * esz);
        const T s = get<T>(src + i * esz);
        const T r = reference<T>(op, d, s);
        put<T>(want, r);
        const unsigned char *got = dst.data() + i * esz;
        bool ok = std::memcmp(got, want, esz) == 0;
        // SUM/PROD of NaNs: any NaN will do (payload choice is the FPU's),
        // but the padding must still be zero.
        if (!ok && (op == INA_OP_SUM || op == INA_OP_PROD) && is_nan_value(r) &&
            is_nan_value(get<T>(got))) {
            ok = true;
            for (size_t b = value_bytes<T>(); b < esz; ++b) {
                ok = ok && got[b] == 0;
            }
        }
        if (!ok) {
            ck_abort_msg("%s/%s n=%zu off=%zu/%zu: element %zu differs from reference",
                         ina_proto_op_name(op), ina_proto_dtype_name(dt), n, doff, soff, i);
        }
    }
}

} // namespace

// One loop iteration per dtype: every valid op, length and alignment.
START_TEST(test_sweep_dtype)
{
    const unsigned dt = static_cast<unsigned>(_i);
    std::mt19937_64 rng(1000 + dt);
    with_dtype(dt, [&](auto tag) {
        using T = decltype(tag);
        for (unsigned op = 0; op < INA_OP_COUNT; ++op) {
            if (!ref_pair_valid(op, dt)) {
                continue;
            }
            for (size_t n : kLengths) {
                for (size_t doff = 0; doff < 8; ++doff) {
                    for (size_t soff = 0; soff < 8; ++soff) {
                        // Long lengths: every dst offset, a few src offsets.
                        if (n > 300 && soff != doff && soff != (doff + 3) % 8) {
                            continue;
                        }
                        check_case<T>(op, dt, n, doff, soff, rng);
                    }
                }
            }
        }
    });
}
END_TEST

START_TEST(test_invalid_pairs_untouched)
{
    std::vector<unsigned char> dst(4099 * 16), src(4099 * 16, 0x11);
    const unsigned ops[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 255, UINT_MAX};
    const unsigned dts[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 255, UINT_MAX};
    unsigned invalid = 0;
    for (unsigned op : ops) {
        for (unsigned dt : dts) {
            if (ref_pair_valid(op, dt)) {
                continue;
            }
            ++invalid;
            for (size_t n : kLengths) {
                std::fill(dst.begin(), dst.end(), 0x77);
                ck_assert_int_eq(ina_reduce(op, dt, dst.data(), src.data(), n), -1);
                ck_assert_msg(std::all_of(dst.begin(), dst.end(), [](unsigned char b) { return b == 0x77; }),
                              "invalid op %u dtype %u touched dst", op, dt);
            }
        }
    }
    // 6 logical/bitwise ops x 3 floating types are the in-range invalid ones.
    ck_assert_uint_ge(invalid, 18);
}
END_TEST

// Literal values, so the reference itself is pinned down.
START_TEST(test_spot_values)
{
    auto one = [](unsigned op, unsigned dt, auto d, auto s) {
        ina_reduce(op, dt, &d, &s, 1);
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

// dst == src (full overlap) is allowed: dst[i] = x OP x.
START_TEST(test_in_place)
{
    std::mt19937_64 rng(77);
    for (unsigned dt = 0; dt < INA_DT_COUNT; ++dt) {
        with_dtype(dt, [&](auto tag) {
            using T = decltype(tag);
            for (unsigned op = 0; op < INA_OP_COUNT; ++op) {
                if (!ref_pair_valid(op, dt)) {
                    continue;
                }
                const size_t n = 1000;
                std::vector<unsigned char> buf(n * sizeof(T) + 3);
                unsigned char *p = buf.data() + 3; // misaligned too
                for (size_t i = 0; i < n; ++i) {
                    put<T>(p + i * sizeof(T), random_value<T>(rng));
                }
                const std::vector<unsigned char> before(buf);
                ck_assert_int_eq(ina_reduce(op, dt, p, p, n), 0);
                for (size_t i = 0; i < n; ++i) {
                    const T x = get<T>(before.data() + 3 + i * sizeof(T));
                    const T r = reference<T>(op, x, x);
                    const T got = get<T>(p + i * sizeof(T));
                    const bool same = std::memcmp(&got, &r, value_bytes<T>()) == 0 ||
                                      (is_nan_value(r) && is_nan_value(got));
                    if (!same) {
                        ck_abort_msg("in place %s/%s element %zu", ina_proto_op_name(op),
                                     ina_proto_dtype_name(dt), i);
                    }
                }
            }
        });
    }
}
END_TEST

START_TEST(test_order_free)
{
    for (unsigned dt = 0; dt < INA_DT_COUNT; ++dt) {
        for (unsigned op = 0; op < INA_OP_COUNT; ++op) {
            if (!ref_pair_valid(op, dt)) {
                continue;
            }
            ck_assert_msg(!!ina_reduce_order_free(op, dt) == is_integer_dtype(dt), "%s/%s",
                          ina_proto_op_name(op), ina_proto_dtype_name(dt));
        }
    }
    ck_assert_int_eq(ina_reduce_order_free(INA_OP_COUNT, INA_DT_INT32), 0);
    ck_assert_int_eq(ina_reduce_order_free(INA_OP_SUM, INA_DT_COUNT), 0);
    ck_assert_int_eq(ina_reduce_order_free(INA_OP_BAND, INA_DT_FLOAT), 0);
}
END_TEST

// What the agent does for floats: contributions applied in rank order. Twice
// the same order must give the same bits (padding included, whatever garbage
// the inputs carried), equal to a scalar left-to-right sum.
template <typename T> void check_fixed_order(unsigned dt)
{
    constexpr size_t n = 4099, ranks = 8, esz = sizeof(T);
    std::mt19937_64 rng(4242 + dt);
    std::vector<std::vector<unsigned char>> contrib(ranks, std::vector<unsigned char>(n * esz));
    for (size_t r = 0; r < ranks; ++r) {
        for (size_t i = 0; i < n; ++i) {
            // Mixed magnitudes: the sum depends on the order.
            const T v = std::ldexp(static_cast<T>(static_cast<int64_t>(rng() % 2000001) - 1000000),
                                   static_cast<int>(rng() % 80) - 40);
            put_dirty<T>(contrib[r].data() + i * esz, v, static_cast<unsigned char>(rng()));
        }
    }
    auto run = [&](unsigned char garbage) {
        std::vector<unsigned char> acc(contrib[0]);
        for (size_t i = 0; i < n; ++i) { // the first contribution as received
            std::memset(acc.data() + i * esz + value_bytes<T>(), garbage, esz - value_bytes<T>());
        }
        for (size_t r = 1; r < ranks; ++r) {
            ck_assert_int_eq(ina_reduce(INA_OP_SUM, dt, acc.data(), contrib[r].data(), n), 0);
        }
        return acc;
    };
    const std::vector<unsigned char> first = run(0xab), second = run(0x00);
    ck_assert_msg(first == second, "%s SUM not bit-identical", ina_proto_dtype_name(dt));
    for (size_t i = 0; i < n; ++i) {
        T sum = get<T>(contrib[0].data() + i * esz);
        for (size_t r = 1; r < ranks; ++r) {
            sum = sum + get<T>(contrib[r].data() + i * esz);
        }
        unsigned char want[esz];
        put<T>(want, sum);
        if (std::memcmp(first.data() + i * esz, want, esz) != 0) {
            ck_abort_msg("%s element %zu", ina_proto_dtype_name(dt), i);
        }
    }
}

START_TEST(test_float_sum_fixed_order)
{
    check_fixed_order<float>(INA_DT_FLOAT);
    check_fixed_order<double>(INA_DT_DOUBLE);
    check_fixed_order<long double>(INA_DT_LONG_DOUBLE);
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
            put_dirty<long double>(d + i * sizeof(long double), 1.0L, 0xff);
            put_dirty<long double>(s + i * sizeof(long double), 1.0L, 0x99);
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
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_sweep_dtype, 0, INA_DT_COUNT);
    tcase_add_test(tc, test_invalid_pairs_untouched);
    tcase_add_test(tc, test_spot_values);
    tcase_add_test(tc, test_in_place);
    tcase_add_test(tc, test_order_free);
    tcase_add_test(tc, test_float_sum_fixed_order);
    tcase_add_test(tc, test_long_double_padding);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

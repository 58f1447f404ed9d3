// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Reduce-kernel throughput of the agent (ina_reduce, common/ina_reduce.h) on
// one core, next to memcpy of the same buffers measured in the same run, so
// that "float sum = X% of memcpy" can be read off directly (kernels.sh prints
// that table).
//
// Benchmarks (Google Benchmark), for every buffer size (default 64 KiB, one
// Seg, and 64 MiB; --ina_sizes=LIST changes them):
//   memcpy/<size>               std::memcpy(dst, src, size)
//   reduce/<dtype>/<op>/<size>  ina_reduce(op, dtype, dst, src, size / esz)
//                               for every (op, dtype) pair ina_proto_op_valid
//                               accepts (REPLACE is a placement, not a kernel).
// Byte accounting (bytes_per_second): the memory traffic the operation
// implies, counted the same way for both:
//   memcpy: src read + dst written              = 2 * size per iteration
//   reduce: src read + dst read + dst written   = 3 * size per iteration
// so the percentage compares how close each kernel runs to the core's copy
// bandwidth. The contribution rate of a kernel (bytes of src reduced into a
// Seg per second) is bytes_per_second / 3.
//
// The reduce runs in place over and over (dst = dst OP src), as the agent
// does into a Seg; inputs are chosen so that repetition never produces
// denormals, infinities or NaNs (PROD multiplies by one), which would measure
// the FPU's slow paths instead of the kernel.
#include <benchmark/benchmark.h>

#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ina_proto.h"
#include "ina_reduce.h"

namespace ina {
namespace {

struct FreeDeleter {
    void operator()(void *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<unsigned char, FreeDeleter>;

// Cache-line aligned, like the agent's Seg pool; size is a multiple of 64.
Buffer alloc_buffer(size_t bytes)
{
    void *p = std::aligned_alloc(64, bytes);
    if (p == nullptr) {
        std::fprintf(stderr, "ina_kernel_bench: cannot allocate %zu bytes\n", bytes);
        std::exit(1);
    }
    std::memset(p, 0, bytes); // fault the pages in before any timing
    return Buffer(static_cast<unsigned char *>(p));
}

// The C layouts of the MINLOC/MAXLOC pair dtypes (ina_proto.h).
template <typename V> struct Pair {
    V v;
    int i;
};

template <typename T> void put(unsigned char *buf, size_t i, const T &v)
{
    std::memcpy(buf + i * sizeof(T), &v, sizeof(T));
}

// Fill n elements of `dtype` for `op`. `is_src`: PROD sources are all one so
// that the repeated in-place product stays a normal number.
void fill(unsigned char *buf, size_t n, unsigned dtype, unsigned op, bool is_src,
          std::mt19937_64 &rng)
{
    const bool unit = is_src && op == INA_OP_PROD;
    std::uniform_real_distribution<double> real(-1000.0, 1000.0);
    auto value = [&]() { return unit ? 1.0 : real(rng); };
    switch (dtype) {
    case INA_DT_FLOAT:
        for (size_t i = 0; i < n; ++i) put(buf, i, static_cast<float>(value()));
        break;
    case INA_DT_DOUBLE:
        for (size_t i = 0; i < n; ++i) put(buf, i, value());
        break;
    case INA_DT_LONG_DOUBLE:
        for (size_t i = 0; i < n; ++i) put(buf, i, static_cast<long double>(value()));
        break;
    case INA_DT_FLOAT_COMPLEX:
        for (size_t i = 0; i < n; ++i) {
            put(buf, i, std::complex<float>(static_cast<float>(value()), unit ? 0.0f : 0.5f));
        }
        break;
    case INA_DT_DOUBLE_COMPLEX:
        for (size_t i = 0; i < n; ++i) put(buf, i, std::complex<double>(value(), unit ? 0.0 : 0.5));
        break;
    case INA_DT_LONG_DOUBLE_COMPLEX:
        for (size_t i = 0; i < n; ++i) {
            put(buf, i, std::complex<long double>(value(), unit ? 0.0L : 0.5L));
        }
        break;
    case INA_DT_BOOL:
        for (size_t i = 0; i < n; ++i) buf[i] = static_cast<unsigned char>(rng() & 1u);
        break;
    case INA_DT_FLOAT_INT:
        for (size_t i = 0; i < n; ++i) {
            put(buf, i, Pair<float>{static_cast<float>(value()), static_cast<int>(rng() % 64)});
        }
        break;
    case INA_DT_DOUBLE_INT:
        for (size_t i = 0; i < n; ++i) put(buf, i, Pair<double>{value(), static_cast<int>(rng() % 64)});
        break;
    case INA_DT_LONG_DOUBLE_INT:
        for (size_t i = 0; i < n; ++i) {
            put(buf, i, Pair<long double>{value(), static_cast<int>(rng() % 64)});
        }
        break;
    case INA_DT_LONG_INT:
        for (size_t i = 0; i < n; ++i) {
            put(buf, i, Pair<long>{static_cast<long>(rng() % 100000), static_cast<int>(rng() % 64)});
        }
        break;
    case INA_DT_2INT:
        for (size_t i = 0; i < n; ++i) {
            put(buf, i, Pair<int>{static_cast<int>(rng() % 100000), static_cast<int>(rng() % 64)});
        }
        break;
    case INA_DT_SHORT_INT:
        for (size_t i = 0; i < n; ++i) {
            put(buf, i, Pair<short>{static_cast<short>(rng() % 1000), static_cast<int>(rng() % 64)});
        }
        break;
    default: { // integer types: any bit pattern is a value; PROD wraps
        const size_t bytes = n * ina_proto_dtype_size(dtype);
        for (size_t i = 0; i < bytes; ++i) buf[i] = static_cast<unsigned char>(rng());
        if (unit) { // ones of the element width (little endian)
            const size_t esz = ina_proto_dtype_size(dtype);
            std::memset(buf, 0, bytes);
            for (size_t i = 0; i < n; ++i) buf[i * esz] = 1;
        }
        break;
    }
    }
}

void bm_memcpy(benchmark::State &state, size_t bytes)
{
    Buffer src = alloc_buffer(bytes);
    Buffer dst = alloc_buffer(bytes);
    std::mt19937_64 rng(1);
    fill(src.get(), bytes, INA_DT_UINT8, INA_OP_SUM, true, rng);
    for (auto _ : state) {
        std::memcpy(dst.get(), src.get(), bytes);
        benchmark::DoNotOptimize(dst.get());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * static_cast<int64_t>(bytes));
}

void bm_reduce(benchmark::State &state, unsigned op, unsigned dtype, size_t bytes)
{
    const size_t n = bytes / ina_proto_dtype_size(dtype);
    Buffer src = alloc_buffer(bytes);
    Buffer dst = alloc_buffer(bytes);
    std::mt19937_64 rng(2);
    fill(src.get(), n, dtype, op, true, rng);
    fill(dst.get(), n, dtype, op, false, rng);
    if (ina_reduce(op, dtype, dst.get(), src.get(), n) != 0) {
        state.SkipWithError("ina_reduce rejects this (op, dtype)");
        return;
    }
    for (auto _ : state) {
        ina_reduce(op, dtype, dst.get(), src.get(), n);
        benchmark::DoNotOptimize(dst.get());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 3 * static_cast<int64_t>(bytes));
}

std::string size_label(size_t bytes)
{
    if (bytes % (1u << 30) == 0) return std::to_string(bytes >> 30) + "GiB";
    if (bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + "MiB";
    if (bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + "KiB";
    return std::to_string(bytes) + "B";
}

std::string token(const char *name)
{
    std::string s(name);
    for (char &c : s) {
        if (c == ' ') c = '_';
    }
    return s;
}

// "64K,64M,1G" -> bytes. Every size must hold a whole number of elements of
// every dtype (largest: 32 bytes) and of cache lines: a multiple of 64.
bool parse_sizes(const char *list, std::vector<size_t> *out)
{
    out->clear();
    std::string s(list);
    size_t pos = 0;
    while (pos <= s.size()) {
        size_t comma = s.find(',', pos);
        std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        char *end = nullptr;
        unsigned long long v = std::strtoull(item.c_str(), &end, 10);
        if (end == item.c_str()) return false;
        switch (*end) {
        case 'K': case 'k': v <<= 10; ++end; break;
        case 'M': case 'm': v <<= 20; ++end; break;
        case 'G': case 'g': v <<= 30; ++end; break;
        default: break;
        }
        if (*end != '\0' || v == 0 || v % 64 != 0) return false;
        out->push_back(static_cast<size_t>(v));
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    return !out->empty();
}

} // namespace
} // namespace ina

int main(int argc, char **argv)
{
    benchmark::Initialize(&argc, argv);
    std::vector<size_t> sizes = {size_t{64} << 10, size_t{64} << 20};
    for (int i = 1; i < argc; ++i) {
        const char *flag = "--ina_sizes=";
        if (std::strncmp(argv[i], flag, std::strlen(flag)) == 0 &&
            ina::parse_sizes(argv[i] + std::strlen(flag), &sizes)) {
            continue;
        }
        std::fprintf(stderr,
                     "ina_kernel_bench: unknown argument '%s'\n"
                     "usage: ina_kernel_bench [--ina_sizes=64K,64M (multiples of 64 bytes)]"
                     " [--benchmark_* flags, see --help]\n",
                     argv[i]);
        return 2;
    }
    for (size_t bytes : sizes) {
        const std::string sz = ina::size_label(bytes);
        benchmark::RegisterBenchmark(("memcpy/" + sz).c_str(), ina::bm_memcpy, bytes);
        for (unsigned dtype = 0; dtype < INA_DT_COUNT; ++dtype) {
            for (unsigned op = 0; op < INA_OP_COUNT; ++op) {
                if (op == INA_OP_REPLACE || !ina_proto_op_valid(op, dtype)) continue;
                const std::string name = "reduce/" + ina::token(ina_proto_dtype_name(dtype)) + "/" +
                                         ina_proto_op_name(op) + "/" + sz;
                benchmark::RegisterBenchmark(name.c_str(), ina::bm_reduce, op, dtype, bytes);
            }
        }
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

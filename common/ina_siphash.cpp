// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// SipHash-2-4, as specified in the paper (ina_siphash.h); checked against
// the reference implementation's test vectors in tests/unit/test_client_topology.cpp.
#include "ina_siphash.h"

namespace {

uint64_t load_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) {
        v |= static_cast<uint64_t>(p[i]) << (8 * i);
    }
    return v;
}

constexpr uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct State {
    uint64_t v0, v1, v2, v3;

    void round()
    {
        v0 += v1;
        v1 = rotl(v1, 13);
        v1 ^= v0;
        v0 = rotl(v0, 32);
        v2 += v3;
        v3 = rotl(v3, 16);
        v3 ^= v2;
        v0 += v3;
        v3 = rotl(v3, 21);
        v3 ^= v0;
        v2 += v1;
        v1 = rotl(v1, 17);
        v1 ^= v2;
        v2 = rotl(v2, 32);
    }

    void compress(uint64_t m) // c = 2 rounds per message word
    {
        v3 ^= m;
        round();
        round();
        v0 ^= m;
    }
};

} // namespace

extern "C" uint64_t ina_siphash24(const uint8_t key[16], const void *data, size_t len)
{
    const uint64_t k0 = load_le(key, 8), k1 = load_le(key + 8, 8);
    State s{k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull, k0 ^ 0x6c7967656e657261ull,
            k1 ^ 0x7465646279746573ull};
    const auto *p = static_cast<const uint8_t *>(data);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        s.compress(load_le(p + i, 8));
    }
    // The last word: the remaining bytes, and the length's low byte on top.
    s.compress(load_le(p + i, len - i) | (static_cast<uint64_t>(len & 0xff) << 56));
    s.v2 ^= 0xff; // d = 4 finalization rounds
    s.round();
    s.round();
    s.round();
    s.round();
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

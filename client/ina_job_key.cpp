// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The job key (ina_client.h, ina_job_key_*): the name every member of a
// job computes alike, and the capability that proves it is one of them.
#include <cstring>

#include "ina_client.h"
#include "ina_proto.h"
#include "ina_siphash.h"

namespace {

// The job key: FNV-1a over 128 bits (offset basis and prime of the FNV
// specification).
using u128 = unsigned __int128;
constexpr u128 kFnvPrime = (static_cast<u128>(1) << 88) | 0x13b;
constexpr u128 kFnvBasis =
    (static_cast<u128>(0x6c62272e07bb0142ull) << 64) | static_cast<u128>(0x62b821756295c58dull);
static_assert(INA_PROTO_JOB_KEY_BYTES == sizeof(u128), "a job key is one FNV-1a 128 hash");

u128 key_load(const ina_job_key_t &k)
{
    u128 h = 0;
    for (uint8_t b : k.bytes) {
        h = h << 8 | b;
    }
    return h;
}

void key_store(ina_job_key_t &k, u128 h)
{
    for (int i = INA_PROTO_JOB_KEY_BYTES - 1; i >= 0; --i) {
        k.bytes[i] = static_cast<uint8_t>(h);
        h >>= 8;
    }
}

} // namespace

extern "C" {

void ina_job_key_init(ina_job_key_t *key)
{
    key_store(*key, kFnvBasis);
    std::memset(key->cap, 0, sizeof(key->cap));
}

void ina_job_key_add(ina_job_key_t *key, const void *data, size_t len)
{
    u128 h = key_load(*key);
    const auto *p = static_cast<const uint8_t *>(data);
    for (size_t i = 0; i < len; ++i) {
        h = (h ^ p[i]) * kFnvPrime;
    }
    key_store(*key, h);
}

void ina_job_key_seal(ina_job_key_t *key, const uint8_t *secret)
{
    uint8_t msg[INA_PROTO_JOB_KEY_BYTES + 1];
    std::memcpy(msg, key->bytes, INA_PROTO_JOB_KEY_BYTES);
    static_assert(INA_PROTO_JOB_CAP_BYTES == 2 * sizeof(uint64_t), "two SipHash outputs");
    for (uint8_t half = 0; half < 2; ++half) {
        msg[INA_PROTO_JOB_KEY_BYTES] = half;
        const uint64_t v = ina_siphash24(secret, msg, sizeof(msg));
        std::memcpy(key->cap + half * sizeof(v), &v, sizeof(v));
    }
}

} // extern "C"

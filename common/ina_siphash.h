/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF",
 * 2012): a keyed pseudo-random function of 64 bits. ina derives a job's
 * capability with it from a secret only the job's members hold (client's
 * ina_job_key_seal); none of the project's dependencies offers a keyed hash.
 */
#ifndef INA_SIPHASH_H
#define INA_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* SipHash-2-4 of `len` bytes under the 16-byte `key` (the paper's k0 is the
 * key's first 8 bytes read little endian, k1 the next 8). */
uint64_t ina_siphash24(const uint8_t key[16], const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* INA_SIPHASH_H */

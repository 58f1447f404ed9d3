/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * Reduce kernels shared by the agent (which reduces Segs) and the tests.
 *
 * Semantics (the reference every test checks against):
 *   dst[i] = dst[i] OP src[i]   for i in [0, n)
 * - integer SUM/PROD wrap modulo 2^bits (computed in unsigned arithmetic: no
 *   saturation, no undefined behaviour for signed types);
 * - MIN/MAX on floats: dst = (src < dst) ? src : dst  /  (src > dst) ? src : dst
 *   (so dst is kept on ties and when either side is NaN);
 * - LAND/LOR/LXOR: result is 1 or 0 of the element type, operands tested != 0;
 * - BAND/BOR/BXOR: bitwise, integer types only;
 * - BOOL: LAND/LOR/LXOR only, result 0 or 1;
 * - complex SUM/PROD: (a+bi)+(c+di), (a+bi)*(c+di) = (ac-bd) + (ad+bc)i computed
 *   exactly in that form (no fma contraction, no C99 Annex G NaN recovery), so
 *   the agent and the tests' reference agree bit for bit;
 * - MINLOC/MAXLOC on pairs: keep the smaller/larger value; on equal values
 *   keep the smaller index (MPI's rule); padding bytes of the output are 0;
 * - REPLACE: not a reduction (ina_reduce returns -1 for it).
 * Floating SUM/PROD are NOT associative: callers that need reproducibility
 * (the agent does) must apply contributions in a fixed order (rank order).
 */
#ifndef INA_REDUCE_H
#define INA_REDUCE_H

#include <stddef.h>

#include "ina_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reduce n elements of src into dst. Returns 0 on success, -1 if (op, dtype)
 * is not valid (see ina_proto_op_valid); dst is then untouched.
 * dst and src may have any alignment; they must not overlap partially. */
int ina_reduce(unsigned op, unsigned dtype, void *dst, const void *src, size_t n);

/* The same with the operands the other way round: dst[i] = src[i] OP dst[i].
 * A caller holding the right-hand operand in a writable buffer folds the
 * left-hand one in without copying it first (the agent: rank 1's staged
 * block becomes the Seg's buffer when rank 0's block arrives). Same rules,
 * bit for bit, as ina_reduce with src and dst exchanged. */
int ina_reduce_left(unsigned op, unsigned dtype, void *dst, const void *src, size_t n);

/* Whether reducing (op, dtype) in arrival order gives bit-identical results
 * whatever the order: true for integer, BOOL and integer-valued pair types,
 * false for floating, complex and floating-valued pair types (SUM/PROD round;
 * MIN/MAX differ on -0/+0 and NaN), and for invalid pairs. */
int ina_reduce_order_free(unsigned op, unsigned dtype);

#ifdef __cplusplus
}
#endif

#endif /* INA_REDUCE_H */

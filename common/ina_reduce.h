/*
 * Reduce kernels shared by the agent (which reduces Segs) and the tests.
 *
 * Semantics (the reference every test checks against):
 *   dst[i] = dst[i] OP src[i]   for i in [0, n)
 * - integer SUM/PROD wrap modulo 2^bits (computed in unsigned arithmetic: no
 *   saturation, no undefined behaviour for signed types);
 * - MIN/MAX on floats: dst = (src < dst) ? src : dst  /  (src > dst) ? src : dst
 *   (so dst is kept on ties and when either side is NaN);
 * - LAND/LOR/LXOR: result is 1 or 0 of the element type, operands tested != 0;
 * - BAND/BOR/BXOR: bitwise, integer types only.
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

/* Whether reducing (op, dtype) in arrival order gives bit-identical results
 * whatever the order: true for every integer op, false for floating types
 * (SUM/PROD round; MIN/MAX differ on -0/+0 and NaN). */
int ina_reduce_order_free(unsigned op, unsigned dtype);

#ifdef __cplusplus
}
#endif

#endif /* INA_REDUCE_H */

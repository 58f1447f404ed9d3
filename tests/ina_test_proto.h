// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Protocol messages built the way a client builds them, for the tests that
// speak the wire protocol themselves (tests/agent against a real agent,
// tests/unit against the aggregation core).
#ifndef INA_TEST_PROTO_H
#define INA_TEST_PROTO_H

#include <cstdint>

#include "ina_proto.h"

namespace ina_test {

// A BLOCK of call (jid, mid) from `rank`: block `sid` of a call of `total`
// elements, `count` payload elements at `offset` of a block of `block_elems`.
inline ina_proto_hdr_t block_hdr(uint32_t jid, uint32_t rank, uint64_t mid, uint32_t sid,
                                 uint32_t window, unsigned coll, unsigned op, unsigned dtype,
                                 uint32_t offset, uint32_t count, uint32_t block_elems,
                                 uint64_t total, bool want_result)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_BLOCK);
    h.jid = jid;
    h.rank = rank;
    h.mid = mid;
    h.sid = sid;
    h.window = static_cast<uint16_t>(window);
    h.seg = sid % window;
    h.coll = static_cast<uint8_t>(coll);
    h.op = static_cast<uint8_t>(op);
    h.dtype = static_cast<uint8_t>(dtype);
    h.offset = offset;
    h.count = count;
    h.block_elems = block_elems;
    h.arg = total;
    h.flags = want_result ? INA_PROTO_F_WANT_RESULT : 0;
    return h;
}

} // namespace ina_test

#endif

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// libFuzzer target: ina_proto_check, the one validator both sides run on
// every received message, on arbitrary bytes. The input is a message as UCX
// hands it over: its first min(64, n) bytes are the active message's header
// (a shorter one is a header of the wrong length), the rest the payload,
// whose length is all the check looks at. Besides never reading past the
// header it was given (a buffer of exactly that size, for ASan), an accepted
// message must have what the agent and the client go on to rely on: checked
// here again, independently and without any layout beyond ina_proto.h's
// constants. Any broken rule abort()s.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "ina_proto.h"

namespace {

[[noreturn]] void broken(const char *what, const ina_proto_hdr_t &h, size_t payload_len)
{
    std::fprintf(stderr, "fuzz_proto: %s (%s, payload %zu bytes)\n", what,
                 ina_proto_type_name(h.type), payload_len);
    std::abort();
}

// What an accepted message guarantees to the code that handles it.
void expect_usable(const ina_proto_hdr_t &h, size_t len)
{
    const bool has_done = h.type == INA_PROTO_BLOCK || h.type == INA_PROTO_RESULT;
    // HELLO and ERROR(VERSION) come in any version (common/ina_proto.h,
    // "Versions"); the others only in one this build speaks.
    const bool first_contact = h.type == INA_PROTO_HELLO ||
                               (h.type == INA_PROTO_ERROR && h.status == INA_PROTO_ERR_VERSION);
    const bool spoken = h.version >= INA_PROTO_VERSION_MIN && h.version <= INA_PROTO_VERSION;
    if (h.type == INA_PROTO_HELLO &&
        (h.version == 0 || ina_proto_hello_lowest(&h) > ina_proto_hello_highest(&h))) {
        broken("accepted a HELLO offering no version", h, len);
    }
    if (h.magic != INA_PROTO_MAGIC || (!spoken && !first_contact) || (h.done != 0 && !has_done) ||
        h.type < INA_PROTO_HELLO || h.type > INA_PROTO_TYPE_MAX ||
        h.status > INA_PROTO_STATUS_MAX || h.window > INA_PROTO_MAX_WINDOW) {
        broken("accepted a header outside the protocol", h, len);
    }
    const size_t esz = ina_proto_dtype_size(h.dtype);
    switch (h.type) {
    case INA_PROTO_BLOCK:
    case INA_PROTO_RESULT:
        if (h.coll >= INA_COLL_COUNT || !ina_proto_coll_valid(h.coll, h.op, h.dtype) ||
            esz == 0) {
            broken("accepted a block of no valid collective, op and type", h, len);
        }
        // The Seg a block lands in, and the bytes of its payload.
        if (uint64_t{h.block_elems} * esz > INA_PROTO_MAX_SEG_BYTES ||
            uint64_t{h.offset} + h.count > h.block_elems || len != uint64_t{h.count} * esz) {
            broken("accepted a block whose payload does not fit its Seg", h, len);
        }
        if (h.type == INA_PROTO_BLOCK &&
            (h.window == 0 || h.seg >= h.window || h.seg != h.sid % h.window ||
             h.rank >= INA_PROTO_MAX_MEMBERS || h.block_elems > h.arg)) {
            broken("accepted a BLOCK outside its window or call", h, len);
        }
        if (h.type == INA_PROTO_RESULT &&
            h.count != ((h.flags & INA_PROTO_F_ACK_ONLY) ? 0 : h.block_elems)) {
            broken("accepted a RESULT that is neither the block nor an ACK", h, len);
        }
        break;
    case INA_PROTO_JOB_OPEN:
        // The key, the capability and one node id per member are read from
        // the payload.
        if (h.count == 0 || h.count > INA_PROTO_MAX_MEMBERS || h.rank >= h.count ||
            h.window == 0 ||
            len < INA_PROTO_JOB_KEY_BYTES + INA_PROTO_JOB_CAP_BYTES +
                      uint64_t{h.count} * sizeof(uint32_t)) {
            broken("accepted a JOB_OPEN whose members or key do not fit", h, len);
        }
        // What follows the node ids: whole levels above, in a tree only.
        if (len > ina_proto_job_open_base_len(&h) &&
            ((len - ina_proto_job_open_base_len(&h)) % sizeof(ina_proto_tree_level_t) != 0 ||
             ina_proto_job_open_levels_above(&h, len) > INA_PROTO_MAX_TREE_UP ||
             ina_proto_job_open_leaves(&h) == 0 || h.version < 15)) {
            broken("accepted a JOB_OPEN with bytes after its node ids that are no levels above",
                   h, len);
        }
        break;
    case INA_PROTO_CALL_READY:
        if (len != 0 || h.window == 0 || h.rank >= INA_PROTO_MAX_MEMBERS ||
            !ina_proto_coll_valid(h.coll, h.op, h.dtype)) {
            broken("accepted a CALL_READY of no valid call", h, len);
        }
        break;
    case INA_PROTO_HOST_COST:
        if (len != 0 || h.version < 16 || h.coll >= INA_COLL_COUNT ||
            h.rank >= INA_PROTO_MAX_MEMBERS || h.window != 0) {
            broken("accepted a HOST_COST of another version or of no call", h, len);
        }
        break;
    case INA_PROTO_CALL_TIME:
        if (len != 0 || h.version < 17 || h.coll >= INA_COLL_COUNT ||
            h.rank >= INA_PROTO_MAX_MEMBERS || h.window != 0) {
            broken("accepted a CALL_TIME of another version or of no call", h, len);
        }
        break;
    case INA_PROTO_JOB_OPENED:
    case INA_PROTO_JOB_LEAVE:
    case INA_PROTO_CALL_ABORT:
        if (len != 0 || h.rank >= INA_PROTO_MAX_MEMBERS) {
            broken("accepted a member's message of no valid rank", h, len);
        }
        break;
    default:
        if (len != 0) {
            broken("accepted a payload on a control message", h, len);
        }
        break;
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    const size_t hdr_len = n < sizeof(ina_proto_hdr_t) ? n : sizeof(ina_proto_hdr_t);
    const size_t payload_len = n - hdr_len;
    const std::unique_ptr<uint8_t[]> hdr(new uint8_t[hdr_len]);
    std::memcpy(hdr.get(), data, hdr_len);
    const ina_proto_status_t st = ina_proto_check(hdr.get(), hdr_len, payload_len);
    ina_proto_hdr_t h{};
    std::memcpy(&h, hdr.get(), hdr_len);
    if (st > INA_PROTO_STATUS_MAX) {
        broken("a status outside the protocol", h, payload_len);
    }
    // Logs name every field of whatever came in.
    if (!ina_proto_status_name(st) || !ina_proto_type_name(h.type) ||
        !ina_proto_op_name(h.op) || !ina_proto_dtype_name(h.dtype) ||
        !ina_proto_coll_name(h.coll)) {
        broken("a name is NULL", h, payload_len);
    }
    if (st == INA_PROTO_OK) {
        if (hdr_len != sizeof(ina_proto_hdr_t)) {
            broken("accepted a header of the wrong length", h, payload_len);
        }
        expect_usable(h, payload_len);
    }
    // The whole input as a header longer than the protocol's is never a message.
    if (n > sizeof(ina_proto_hdr_t)) {
        const std::unique_ptr<uint8_t[]> longer(new uint8_t[n]);
        std::memcpy(longer.get(), data, n);
        if (ina_proto_check(longer.get(), n, 0) == INA_PROTO_OK) {
            broken("accepted a header longer than the protocol's", h, 0);
        }
    }
    return 0;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Unit tests of the wire protocol (common/ina_proto.h, v2): header layout,
// init, the (op, dtype) and collective tables, the validator's acceptance of
// every message form of every collective and every rejection it promises, a
// fuzz loop, and the name helpers.
#include "ina_peer_proto.h"
#include "ina_proto.h"

#include <check.h>
#include "check_main.h"

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

// ---- Independent restatement of the tables in ina_proto.h ----------------

bool ref_integer(unsigned dt) { return dt <= INA_DT_UINT64; }
bool ref_floating(unsigned dt) { return dt >= INA_DT_FLOAT && dt <= INA_DT_LONG_DOUBLE; }
bool ref_complex(unsigned dt) { return dt >= INA_DT_FLOAT_COMPLEX && dt <= INA_DT_LONG_DOUBLE_COMPLEX; }
bool ref_pair(unsigned dt) { return dt >= INA_DT_FLOAT_INT && dt <= INA_DT_LONG_DOUBLE_INT; }

// Which (op, dtype) pairs MPI defines and the kernels implement.
bool ref_op_valid(unsigned op, unsigned dt)
{
    if (op >= INA_OP_COUNT || dt >= INA_DT_COUNT) {
        return false;
    }
    switch (op) {
    case INA_OP_SUM:
    case INA_OP_PROD:
        return ref_integer(dt) || ref_floating(dt) || ref_complex(dt);
    case INA_OP_MIN:
    case INA_OP_MAX:
        return ref_integer(dt) || ref_floating(dt);
    case INA_OP_LAND:
    case INA_OP_LOR:
    case INA_OP_LXOR:
        return ref_integer(dt) || dt == INA_DT_BOOL;
    case INA_OP_BAND:
    case INA_OP_BOR:
    case INA_OP_BXOR:
        return ref_integer(dt);
    case INA_OP_MINLOC:
    case INA_OP_MAXLOC:
        return ref_pair(dt);
    case INA_OP_REPLACE:
        return dt == INA_DT_UINT8;
    default:
        return false;
    }
}

bool ref_reducing_coll(unsigned coll)
{
    return coll == INA_COLL_ALLREDUCE || coll == INA_COLL_REDUCE || coll == INA_COLL_REDUCE_SCATTER;
}

bool ref_coll_valid(unsigned coll, unsigned op, unsigned dt)
{
    if (coll >= INA_COLL_COUNT || !ref_op_valid(op, dt)) {
        return false;
    }
    return ref_reducing_coll(coll) ? op != INA_OP_REPLACE : (op == INA_OP_REPLACE && dt == INA_DT_UINT8);
}

// The sizes the dtype comments of ina_proto.h promise (x86-64 ABI).
size_t ref_dtype_size(unsigned dtype)
{
    static const size_t sizes[INA_DT_COUNT] = {
        1, 1, 2, 2, 4, 4, 8, 8,      // integers
        4, 8, sizeof(long double),   // floating
        1,                           // bool
        8, 16, 2 * sizeof(long double), // complex
        8, 16, 16, 8, 8, 32};        // float-int double-int long-int 2int short-int ld-int
    return dtype < INA_DT_COUNT ? sizes[dtype] : 0;
}

// Some op a dtype supports (for tests that vary other fields).
unsigned some_op(unsigned dt)
{
    for (unsigned op = 0; op < INA_OP_COUNT; ++op) {
        if (ref_op_valid(op, dt) && op != INA_OP_REPLACE) {
            return op;
        }
    }
    return INA_OP_REPLACE;
}

// ---- Valid messages -------------------------------------------------------

// A message, and its payload length.
struct Msg {
    ina_proto_hdr_t hdr;
    size_t payload_len;
};

Msg valid_msg(ina_proto_type_t type)
{
    Msg m{};
    ina_proto_init(&m.hdr, type);
    m.payload_len = 0;
    switch (type) {
    case INA_PROTO_HELLO_ACK:
        m.hdr.count = 64;
        m.hdr.arg = 65536;
        break;
    case INA_PROTO_JOB_OPEN:
        m.hdr.rank = 3;
        m.hdr.count = 4;
        m.hdr.window = 16;
        m.hdr.arg = 0xc00c1e;
        m.payload_len = INA_PROTO_JOB_KEY_BYTES + INA_PROTO_JOB_CAP_BYTES + 4 * sizeof(uint32_t);
        break;
    case INA_PROTO_JOB_OPENED:
        m.hdr.jid = 7;
        m.hdr.rank = 3;
        m.hdr.window = 16;
        m.hdr.arg = 0xc00c1e;
        break;
    case INA_PROTO_JOB_LEAVE:
        m.hdr.jid = 7;
        m.hdr.rank = 3;
        break;
    case INA_PROTO_CALL_READY: // a leaf's vote on an ALLREDUCE of 1000 doubles
        m.hdr.jid = 7;
        m.hdr.rank = 1;
        m.hdr.mid = 42;
        m.hdr.window = 16;
        m.hdr.coll = INA_COLL_ALLREDUCE;
        m.hdr.op = INA_OP_SUM;
        m.hdr.dtype = INA_DT_DOUBLE;
        m.hdr.arg = 1000;
        break;
    case INA_PROTO_CALL_ABORT:
        m.hdr.jid = 7;
        m.hdr.rank = 1;
        m.hdr.mid = 42;
        m.hdr.status = INA_PROTO_ERR_NO_RESOURCES;
        break;
    case INA_PROTO_HOST_COST: // a denied 8 MiB allreduce took 40 ms on the hosts
        m.hdr.jid = 7;
        m.hdr.rank = 0;
        m.hdr.coll = INA_COLL_ALLREDUCE;
        ina_proto_timing_set(&m.hdr, 8u << 20, 40000000);
        break;
    case INA_PROTO_CALL_TIME: // an 8 MiB allreduce took 25 ms in all
        m.hdr.jid = 7;
        m.hdr.rank = 0;
        m.hdr.coll = INA_COLL_ALLREDUCE;
        ina_proto_timing_set(&m.hdr, 8u << 20, 25000000);
        break;
    case INA_PROTO_PING: // a probe and its answer: the cookie only
    case INA_PROTO_PONG:
        m.hdr.arg = 0x1234;
        break;
    case INA_PROTO_BLOCK: // an ALLREDUCE block
        m.hdr.jid = 7;
        m.hdr.rank = 3;
        m.hdr.mid = 12;
        m.hdr.window = 16;
        m.hdr.sid = 37;
        m.hdr.seg = 37 % 16;
        m.hdr.coll = INA_COLL_ALLREDUCE;
        m.hdr.op = INA_OP_SUM;
        m.hdr.dtype = INA_DT_FLOAT;
        m.hdr.flags = INA_PROTO_F_WANT_RESULT;
        m.hdr.block_elems = 1024;
        m.hdr.count = 1024;
        m.hdr.arg = 100000;
        m.payload_len = 1024 * 4;
        break;
    case INA_PROTO_RESULT: // a full ALLREDUCE result
        m.hdr.jid = 7;
        m.hdr.mid = 12;
        m.hdr.sid = 37;
        m.hdr.seg = 5;
        m.hdr.coll = INA_COLL_ALLREDUCE;
        m.hdr.op = INA_OP_MAX;
        m.hdr.dtype = INA_DT_INT64;
        m.hdr.block_elems = 100;
        m.hdr.count = 100;
        m.payload_len = 800;
        break;
    case INA_PROTO_GRANT:
        m.hdr.jid = 7;
        m.hdr.mid = 12;
        break;
    case INA_PROTO_DENY:
        m.hdr.jid = 7;
        m.hdr.mid = 12;
        m.hdr.status = INA_PROTO_ERR_NO_RESOURCES;
        break;
    case INA_PROTO_ERROR:
        m.hdr.status = INA_PROTO_ERR_SEG_BUSY;
        m.hdr.op = INA_PROTO_BLOCK;
        m.hdr.jid = 7;
        m.hdr.sid = 3;
        break;
    default:
        break;
    }
    return m;
}

// A BLOCK of collective `coll` carrying `count` elements at `offset` of a
// block of `block_elems` elements (dtype/op: the collective's natural ones).
Msg block(unsigned coll, uint32_t block_elems, uint32_t offset, uint32_t count, bool want)
{
    Msg m = valid_msg(INA_PROTO_BLOCK);
    m.hdr.coll = static_cast<uint8_t>(coll);
    if (!ref_reducing_coll(coll)) {
        m.hdr.op = INA_OP_REPLACE;
        m.hdr.dtype = INA_DT_UINT8;
    }
    m.hdr.block_elems = block_elems;
    m.hdr.offset = offset;
    m.hdr.count = count;
    m.hdr.flags = want ? INA_PROTO_F_WANT_RESULT : 0;
    m.payload_len = size_t{count} * ref_dtype_size(m.hdr.dtype);
    m.hdr.arg = uint64_t{block_elems} * 3; // the call spans a few blocks
    if (coll == INA_COLL_BARRIER) {
        m.hdr.sid = 0;
        m.hdr.seg = 0;
    }
    return m;
}

// The RESULT of a block of `coll`: full, or ACK_ONLY.
Msg result(unsigned coll, uint32_t block_elems, bool ack_only)
{
    Msg m = valid_msg(INA_PROTO_RESULT);
    m.hdr.coll = static_cast<uint8_t>(coll);
    if (!ref_reducing_coll(coll)) {
        m.hdr.op = INA_OP_REPLACE;
        m.hdr.dtype = INA_DT_UINT8;
    }
    m.hdr.block_elems = block_elems;
    m.hdr.count = ack_only ? 0 : block_elems;
    m.hdr.flags = ack_only ? INA_PROTO_F_ACK_ONLY : 0;
    m.payload_len = size_t{m.hdr.count} * ref_dtype_size(m.hdr.dtype);
    if (coll == INA_COLL_BARRIER) {
        m.hdr.sid = 0;
        m.hdr.seg = 0;
    }
    return m;
}

// What every collective's members send (ina_proto.h, "Collectives"), and
// what the agent answers.
std::vector<Msg> coll_forms()
{
    std::vector<Msg> v;
    v.push_back(block(INA_COLL_ALLREDUCE, 1024, 0, 1024, true));
    v.push_back(block(INA_COLL_REDUCE, 1024, 0, 1024, true));      // root
    v.push_back(block(INA_COLL_REDUCE, 1024, 0, 1024, false));     // others
    v.push_back(block(INA_COLL_REDUCE_SCATTER, 77, 0, 77, true));  // part overlaps
    v.push_back(block(INA_COLL_REDUCE_SCATTER, 77, 0, 77, false)); // it does not
    v.push_back(block(INA_COLL_BCAST, 65536, 0, 65536, false));    // root
    v.push_back(block(INA_COLL_BCAST, 65536, 0, 0, true));         // others: CREDIT
    v.push_back(block(INA_COLL_ALLGATHER, 4096, 1000, 96, true));  // a piece inside
    v.push_back(block(INA_COLL_ALLGATHER, 4096, 0, 4096, true));   // the whole block
    v.push_back(block(INA_COLL_ALLGATHER, 4096, 0, 0, true));      // CREDIT
    v.push_back(block(INA_COLL_BARRIER, 0, 0, 0, true));
    for (unsigned c = 0; c < INA_COLL_COUNT; ++c) {
        const uint32_t n = c == INA_COLL_BARRIER ? 0 : 100;
        v.push_back(result(c, n, false));
        v.push_back(result(c, n, true));
    }
    return v;
}

ina_proto_status_t check_msg(const Msg &m)
{
    return ina_proto_check(&m.hdr, sizeof(m.hdr), m.payload_len);
}

const ina_proto_type_t kAllTypes[] = {
    INA_PROTO_HELLO,  INA_PROTO_HELLO_ACK, INA_PROTO_JOB_LEAVE, INA_PROTO_BLOCK,
    INA_PROTO_RESULT, INA_PROTO_DENY,      INA_PROTO_ERROR,     INA_PROTO_GRANT,
    INA_PROTO_JOB_OPEN, INA_PROTO_JOB_OPENED, INA_PROTO_CALL_READY, INA_PROTO_CALL_ABORT,
    INA_PROTO_PING,   INA_PROTO_PONG,      INA_PROTO_HOST_COST, INA_PROTO_CALL_TIME};

// The version a type first appeared in, where that is above the oldest
// spoken (test_host_cost).
unsigned since(unsigned type)
{
    return type == INA_PROTO_HOST_COST ? 16 : type == INA_PROTO_CALL_TIME ? 17 : 0;
}
bool names_call(unsigned type)
{
    return type == INA_PROTO_HOST_COST || type == INA_PROTO_CALL_TIME;
}

bool is_data(unsigned type) { return type == INA_PROTO_BLOCK || type == INA_PROTO_RESULT; }

} // namespace

START_TEST(test_layout)
{
    ck_assert_uint_eq(sizeof(ina_proto_hdr_t), 64);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, magic), 0);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, version), 4);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, type), 5);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, status), 6);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, op), 7);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, dtype), 8);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, coll), 9);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, window), 10);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, jid), 12);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, rank), 16);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, sid), 20);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, mid), 24);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, seg), 32);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, count), 36);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, arg), 40);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, offset), 48);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, block_elems), 52);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, flags), 56);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, ahead), 58);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, done), 60);
    // Enum values are wire values: pin them.
    ck_assert_uint_eq(INA_PROTO_VERSION, 17);
    ck_assert_uint_eq(INA_PROTO_MAX_TREE_UP, 6);
    ck_assert_uint_eq(sizeof(ina_proto_tree_level_t), 8);
    ck_assert_uint_eq(INA_PROTO_VERSION_MIN, 13);
    ck_assert_uint_eq(INA_PROTO_HELLO, 1);
    ck_assert_uint_eq(INA_PROTO_ERROR, 11);
    ck_assert_uint_eq(INA_PROTO_GRANT, 12);
    ck_assert_uint_eq(INA_PROTO_JOB_OPEN, 13);
    ck_assert_uint_eq(INA_PROTO_JOB_OPENED, 14);
    ck_assert_uint_eq(INA_PROTO_CALL_READY, 15);
    ck_assert_uint_eq(INA_PROTO_CALL_ABORT, 16);
    ck_assert_uint_eq(INA_PROTO_PING, 17);
    ck_assert_uint_eq(INA_PROTO_PONG, 18);
    ck_assert_uint_eq(INA_PROTO_HOST_COST, 19);
    ck_assert_uint_eq(INA_PROTO_CALL_TIME, 20);
    ck_assert_uint_eq(INA_PROTO_TYPE_MAX, 20);
    ck_assert_uint_eq(INA_PROTO_F_CHILDREN, 4);
    ck_assert_uint_eq(INA_PROTO_ERR_INCOMPLETE, 9);
    ck_assert_uint_eq(INA_PROTO_ERR_UPSTREAM, 10);
    ck_assert_uint_eq(INA_PROTO_ERR_ABORTED, 11);
    ck_assert_uint_eq(INA_PROTO_ERR_BUSY, 12);
    ck_assert_uint_eq(INA_PROTO_ERR_OUTSCORED, 13);
    ck_assert_uint_eq(INA_PROTO_ERR_FORBIDDEN, 14);
    ck_assert_uint_eq(INA_PROTO_ERR_LIMIT, 15);
    ck_assert_uint_eq(INA_PROTO_ERR_DRAINING, 16);
    ck_assert_uint_eq(INA_PROTO_STATUS_MAX, 16);
    ck_assert_uint_eq(INA_PROTO_JOB_CAP_BYTES, 16);
    ck_assert_uint_eq(INA_DT_LONG_DOUBLE, 10);
    ck_assert_uint_eq(INA_DT_BOOL, 11);
    ck_assert_uint_eq(INA_DT_LONG_DOUBLE_COMPLEX, 14);
    ck_assert_uint_eq(INA_DT_FLOAT_INT, 15);
    ck_assert_uint_eq(INA_DT_LONG_DOUBLE_INT, 20);
    ck_assert_uint_eq(INA_DT_COUNT, 21);
    ck_assert_uint_eq(INA_OP_BXOR, 9);
    ck_assert_uint_eq(INA_OP_MINLOC, 10);
    ck_assert_uint_eq(INA_OP_MAXLOC, 11);
    ck_assert_uint_eq(INA_OP_REPLACE, 12);
    ck_assert_uint_eq(INA_COLL_ALLREDUCE, 0);
    ck_assert_uint_eq(INA_COLL_BARRIER, 5);
    ck_assert_uint_eq(INA_COLL_COUNT, 6);
    ck_assert_uint_eq(INA_PROTO_F_WANT_RESULT, 1);
    ck_assert_uint_eq(INA_PROTO_F_ACK_ONLY, 2);
}
END_TEST

START_TEST(test_init)
{
    ina_proto_hdr_t h;
    std::memset(&h, 0xa5, sizeof(h));
    ina_proto_init(&h, INA_PROTO_BLOCK);
    const auto *bytes = reinterpret_cast<const unsigned char *>(&h);
    // "INA1" in memory on little endian, as the header promises.
    const uint32_t one = 1;
    if (*reinterpret_cast<const unsigned char *>(&one) == 1) {
        ck_assert_int_eq(std::memcmp(bytes, "INA1", 4), 0);
    }
    ck_assert_uint_eq(h.magic, INA_PROTO_MAGIC);
    ck_assert_uint_eq(bytes[4], INA_PROTO_VERSION);
    ck_assert_uint_eq(bytes[5], INA_PROTO_BLOCK);
    for (size_t i = 6; i < sizeof(h); ++i) {
        ck_assert_msg(bytes[i] == 0, "byte %zu not zeroed by init", i);
    }
}
END_TEST

START_TEST(test_dtype_size_and_pairs)
{
    for (unsigned dt = 0; dt < 300; ++dt) {
        ck_assert_msg(ina_proto_dtype_size(dt) == ref_dtype_size(dt), "size of dtype %u", dt);
    }
    ck_assert_uint_eq(ina_proto_dtype_size(UINT_MAX), 0);
    unsigned valid = 0;
    for (unsigned op = 0; op < 20; ++op) {
        for (unsigned dt = 0; dt < 30; ++dt) {
            ck_assert_msg(!!ina_proto_op_valid(op, dt) == ref_op_valid(op, dt), "op_valid(%u, %u)",
                          op, dt);
            valid += ref_op_valid(op, dt);
            for (unsigned coll = 0; coll < INA_COLL_COUNT + 3; ++coll) {
                ck_assert_msg(!!ina_proto_coll_valid(coll, op, dt) == ref_coll_valid(coll, op, dt),
                              "coll_valid(%u, %u, %u)", coll, op, dt);
            }
        }
    }
    // 8 integer x 10 + 3 floating x 4 + bool 3 + 3 complex x 2 + 6 pairs x 2 + REPLACE.
    ck_assert_uint_eq(valid, 80 + 12 + 3 + 6 + 12 + 1);
    ck_assert_int_eq(ina_proto_op_valid(UINT_MAX, 0), 0);
    ck_assert_int_eq(ina_proto_op_valid(0, UINT_MAX), 0);
    ck_assert_int_eq(ina_proto_coll_valid(UINT_MAX, INA_OP_SUM, INA_DT_INT32), 0);
    // Spot checks of the collective table.
    ck_assert(ina_proto_coll_valid(INA_COLL_BCAST, INA_OP_REPLACE, INA_DT_UINT8));
    ck_assert(!ina_proto_coll_valid(INA_COLL_BCAST, INA_OP_SUM, INA_DT_UINT8));
    ck_assert(!ina_proto_coll_valid(INA_COLL_ALLREDUCE, INA_OP_REPLACE, INA_DT_UINT8));
    ck_assert(ina_proto_coll_valid(INA_COLL_REDUCE, INA_OP_MAXLOC, INA_DT_DOUBLE_INT));
    ck_assert(ina_proto_coll_valid(INA_COLL_REDUCE_SCATTER, INA_OP_LXOR, INA_DT_BOOL));
    ck_assert(!ina_proto_coll_valid(INA_COLL_ALLREDUCE, INA_OP_BAND, INA_DT_BOOL));
    ck_assert(!ina_proto_coll_valid(INA_COLL_ALLREDUCE, INA_OP_MIN, INA_DT_DOUBLE_COMPLEX));
    ck_assert(!ina_proto_coll_valid(INA_COLL_ALLREDUCE, INA_OP_MIN, INA_DT_2INT));
}
END_TEST

START_TEST(test_accepts_every_type)
{
    for (ina_proto_type_t t : kAllTypes) {
        Msg m = valid_msg(t);
        ck_assert_msg(check_msg(m) == INA_PROTO_OK, "valid %s rejected: %s",
                      ina_proto_type_name(t), ina_proto_status_name(check_msg(m)));
    }
}
END_TEST

// Every message form the collectives use (ina_proto.h, "Collectives").
START_TEST(test_accepts_every_coll_form)
{
    for (const Msg &m : coll_forms()) {
        ck_assert_msg(check_msg(m) == INA_PROTO_OK, "%s %s offset %u count %u/%u flags %u: %s",
                      ina_proto_type_name(m.hdr.type), ina_proto_coll_name(m.hdr.coll),
                      m.hdr.offset, m.hdr.count, m.hdr.block_elems, m.hdr.flags,
                      ina_proto_status_name(check_msg(m)));
    }
}
END_TEST

START_TEST(test_accepts_unaligned_header)
{
    // AM headers can sit at any offset in a receive buffer.
    Msg m = valid_msg(INA_PROTO_BLOCK);
    std::vector<unsigned char> buf(sizeof(m.hdr) + 8);
    for (size_t off = 0; off < 8; ++off) {
        std::memcpy(buf.data() + off, &m.hdr, sizeof(m.hdr));
        ck_assert_int_eq(ina_proto_check(buf.data() + off, sizeof(m.hdr), m.payload_len),
                         INA_PROTO_OK);
    }
}
END_TEST

// A peer of another protocol version (other header size) is told apart from
// garbage, so the user reads "version" and not "malformed".
START_TEST(test_other_version_header_size)
{
    unsigned char buf[128] = {};
    const uint32_t magic = INA_PROTO_MAGIC;
    std::memcpy(buf, &magic, sizeof(magic));
    buf[offsetof(ina_proto_hdr_t, version)] = 1; // a v1 header was 48 bytes
    ck_assert_int_eq(ina_proto_check(buf, 48, 0), INA_PROTO_ERR_VERSION);
    buf[offsetof(ina_proto_hdr_t, version)] = INA_PROTO_VERSION + 1; // a future, larger one
    ck_assert_int_eq(ina_proto_check(buf, sizeof(buf), 0), INA_PROTO_ERR_VERSION);
    buf[offsetof(ina_proto_hdr_t, version)] = INA_PROTO_VERSION; // ours, wrong size
    ck_assert_int_eq(ina_proto_check(buf, 48, 0), INA_PROTO_ERR_MALFORMED);
    buf[0] ^= 0x20; // not ours at all
    buf[offsetof(ina_proto_hdr_t, version)] = 1;
    ck_assert_int_eq(ina_proto_check(buf, 48, 0), INA_PROTO_ERR_MALFORMED);
    ck_assert_int_eq(ina_proto_check(buf, 3, 0), INA_PROTO_ERR_MALFORMED);
}
END_TEST

// Versions: what a HELLO offers, what an agent chooses, what a refusal
// names, and what a component offers again after one.
START_TEST(test_versions)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_HELLO);
    ina_proto_hello_offer(&h, 13, 15, 0x5);
    ck_assert_uint_eq(h.version, 15);
    ck_assert_uint_eq(ina_proto_hello_lowest(&h), 13);
    ck_assert_uint_eq(ina_proto_hello_highest(&h), 15);
    ck_assert_uint_eq(ina_proto_hello_features(&h), 0x5);
    ck_assert_int_eq(ina_proto_check(&h, sizeof(h), 0), INA_PROTO_OK);
    // A HELLO of protocol 13 or older offers its version alone.
    ina_proto_hdr_t old;
    ina_proto_init(&old, INA_PROTO_HELLO);
    old.version = 12;
    ck_assert_uint_eq(ina_proto_hello_lowest(&old), 12);
    ck_assert_uint_eq(ina_proto_hello_highest(&old), 12);
    ck_assert_int_eq(ina_proto_check(&old, sizeof(old), 0), INA_PROTO_OK);
    // A range upside down is no offer.
    ina_proto_hello_offer(&h, 15, 13, 0);
    ck_assert_int_eq(ina_proto_check(&h, sizeof(h), 0), INA_PROTO_ERR_MALFORMED);

    // The agent's choice: the highest both speak, or none.
    ck_assert_uint_eq(ina_proto_version_choose(13, 15, 13, 14), 14);
    ck_assert_uint_eq(ina_proto_version_choose(13, 13, 13, 14), 13);
    ck_assert_uint_eq(ina_proto_version_choose(12, 12, 13, 14), 0);
    ck_assert_uint_eq(ina_proto_version_choose(15, 16, 13, 14), 0);
    ck_assert_uint_eq(ina_proto_version_choose(10, 20, 13, 14), 14);

    // A refusal names the agent's range; from any version it is read.
    ina_proto_hdr_t no;
    ina_proto_init(&no, INA_PROTO_ERROR);
    no.status = INA_PROTO_ERR_VERSION;
    no.op = INA_PROTO_HELLO;
    ina_proto_refusal_set_range(&no, 13, 14);
    ck_assert_uint_eq(ina_proto_refusal_lowest(&no), 13);
    ck_assert_uint_eq(ina_proto_refusal_highest(&no), 14);
    no.version = 40;
    ck_assert_int_eq(ina_proto_check(&no, sizeof(no), 0), INA_PROTO_OK);
    no.status = INA_PROTO_ERR_MALFORMED; // any other ERROR: only from a version we speak
    ck_assert_int_eq(ina_proto_check(&no, sizeof(no), 0), INA_PROTO_ERR_VERSION);
    no.status = INA_PROTO_ERR_VERSION;
    // Named, no range meets: nothing to offer again.
    ck_assert_uint_eq(ina_proto_version_retry(&no, 15, 16), 0);
    // An agent of protocol 13 names none (its version in the header): a
    // component of 13 to 14 offers 13 alone; one of 14 to 15 nothing.
    ina_proto_hdr_t v13;
    ina_proto_init(&v13, INA_PROTO_ERROR);
    v13.version = 13;
    v13.status = INA_PROTO_ERR_VERSION;
    ck_assert_uint_eq(ina_proto_refusal_lowest(&v13), 13);
    ck_assert_uint_eq(ina_proto_refusal_highest(&v13), 13);
    ck_assert_uint_eq(ina_proto_version_retry(&v13, 13, 14), 13);
    ck_assert_uint_eq(ina_proto_version_retry(&v13, 14, 15), 0);
    ck_assert_uint_eq(ina_proto_version_retry(&v13, 13, 13), 0); // refused what it speaks
}
END_TEST

// The ranks' recovery messages (ina_peer_proto.h): a header of ours with
// its payload passes; another magic is not ours to parse; another version
// is told apart from garbage; short, unknown or inconsistent ones are
// malformed.
START_TEST(test_peer_check)
{
    std::vector<unsigned char> m(sizeof(ina_peer_hdr_t) + 16);
    ina_peer_hdr_t h;
    ina_peer_init(&h, INA_PEER_STATE, 42);
    ck_assert_uint_eq(h.magic, INA_PEER_MAGIC);
    ck_assert_uint_eq(h.version, INA_PEER_VERSION);
    h.len = 16;
    std::memcpy(m.data(), &h, sizeof(h));
    ina_peer_hdr_t out{};
    ck_assert_int_eq(ina_peer_check(m.data(), m.size(), &out), INA_PEER_CHECK_OK);
    ck_assert_uint_eq(out.mid, 42);
    // Unaligned, as a PML may hand it.
    std::vector<unsigned char> odd(m.size() + 1);
    std::memcpy(odd.data() + 1, m.data(), m.size());
    ck_assert_int_eq(ina_peer_check(odd.data() + 1, m.size(), &out), INA_PEER_CHECK_OK);
    ck_assert_int_eq(ina_peer_check(m.data(), m.size() - 1, &out), INA_PEER_CHECK_MALFORMED);
    ck_assert_int_eq(ina_peer_check(m.data(), sizeof(h) - 1, &out), INA_PEER_CHECK_MALFORMED);
    ck_assert_int_eq(ina_peer_check(m.data(), 3, &out), INA_PEER_CHECK_FOREIGN);
    ck_assert_int_eq(ina_peer_check(nullptr, 0, &out), INA_PEER_CHECK_FOREIGN);
    // DATA that cannot: len INA_PEER_NONE and no payload.
    ina_peer_init(&h, INA_PEER_DATA, 7);
    h.len = INA_PEER_NONE;
    ck_assert_int_eq(ina_peer_check(&h, sizeof(h), &out), INA_PEER_CHECK_OK);
    ck_assert_int_eq(ina_peer_check(m.data(), sizeof(h) + 4, &out) == INA_PEER_CHECK_OK, 0);
    for (unsigned t : {0u, 5u, 255u}) {
        ina_peer_hdr_t b;
        ina_peer_init(&b, INA_PEER_ASK, 1);
        b.type = static_cast<uint8_t>(t);
        ck_assert_int_eq(ina_peer_check(&b, sizeof(b), &out), INA_PEER_CHECK_MALFORMED);
    }
    ina_peer_hdr_t v;
    ina_peer_init(&v, INA_PEER_ASK, 1);
    v.version = INA_PEER_VERSION + 1;
    ck_assert_int_eq(ina_peer_check(&v, 5, &out), INA_PEER_CHECK_VERSION); // read no further
    v.magic ^= 1;
    ck_assert_int_eq(ina_peer_check(&v, sizeof(v), &out), INA_PEER_CHECK_FOREIGN);
}
END_TEST

START_TEST(test_rejects_common_fields)
{
    ck_assert_int_eq(ina_proto_check(nullptr, sizeof(ina_proto_hdr_t), 0), INA_PROTO_ERR_MALFORMED);
    std::vector<Msg> goods = coll_forms();
    for (ina_proto_type_t t : kAllTypes) {
        goods.push_back(valid_msg(t));
    }
    for (const Msg &good : goods) {
        // Header length: anything but exactly 64 bytes (a v1 header is 48).
        unsigned char big[2 * sizeof(ina_proto_hdr_t)] = {};
        std::memcpy(big, &good.hdr, sizeof(good.hdr));
        for (size_t len : {size_t{0}, size_t{1}, size_t{48}, size_t{63}, size_t{65}, sizeof(big)}) {
            ck_assert_int_eq(ina_proto_check(big, len, good.payload_len), INA_PROTO_ERR_MALFORMED);
        }
        // Magic: every single-byte corruption.
        for (int byte = 0; byte < 4; ++byte) {
            Msg m = good;
            reinterpret_cast<unsigned char *>(&m.hdr.magic)[byte] ^= 0x20;
            ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        }
        // Version: every one this build speaks; no other, but on a HELLO
        // (its range is the agent's to weigh, "Versions").
        for (unsigned v = INA_PROTO_VERSION_MIN; v <= INA_PROTO_VERSION; ++v) {
            Msg m = good;
            m.hdr.version = static_cast<uint8_t>(v);
            // (HOST_COST exists from protocol 16, CALL_TIME from 17:
            // test_host_cost)
            ck_assert_int_eq(check_msg(m), v < since(good.hdr.type) ? INA_PROTO_ERR_MALFORMED
                                                                    : INA_PROTO_OK);
        }
        for (unsigned v : {0u, 1u, 2u, INA_PROTO_VERSION_MIN - 1, INA_PROTO_VERSION + 1, 255u}) {
            Msg m = good;
            m.hdr.version = static_cast<uint8_t>(v);
            const bool hello = good.hdr.type == INA_PROTO_HELLO;
            ck_assert_int_eq(check_msg(m), !hello  ? INA_PROTO_ERR_VERSION
                                           : v == 0 ? INA_PROTO_ERR_MALFORMED
                                                    : INA_PROTO_OK);
        }
        // `ahead`: a word of the agent about the next call, on four types
        // only, at most the largest window.
        const bool speaks_ahead = good.hdr.type == INA_PROTO_JOB_OPENED ||
                                  good.hdr.type == INA_PROTO_GRANT ||
                                  good.hdr.type == INA_PROTO_DENY ||
                                  good.hdr.type == INA_PROTO_RESULT;
        for (unsigned r : {1u, INA_PROTO_MAX_WINDOW}) {
            Msg m = good;
            m.hdr.ahead = static_cast<uint16_t>(r);
            ck_assert_int_eq(check_msg(m), speaks_ahead ? INA_PROTO_OK : INA_PROTO_ERR_MALFORMED);
        }
        for (unsigned r : {INA_PROTO_MAX_WINDOW + 1, 0x8000u, 0xffffu}) {
            Msg m = good;
            m.hdr.ahead = static_cast<uint16_t>(r);
            ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        }
        // `done`: certification, on BLOCK and RESULT only (any value).
        const bool speaks_done =
            good.hdr.type == INA_PROTO_BLOCK || good.hdr.type == INA_PROTO_RESULT;
        for (uint32_t r : {1u, 0x100u, 0x80000000u, UINT32_MAX}) {
            Msg m = good;
            m.hdr.done = r;
            ck_assert_int_eq(check_msg(m), speaks_done ? INA_PROTO_OK : INA_PROTO_ERR_MALFORMED);
        }
        // Flag bits no type defines (bit 2 is JOB_OPEN's: test_job_open_tree;
        // bit 3 ERROR's: test_error_in_flight).
        for (unsigned bit = 2; bit < 16; ++bit) {
            if ((good.hdr.type == INA_PROTO_JOB_OPEN && (1u << bit) == INA_PROTO_F_CHILDREN) ||
                (good.hdr.type == INA_PROTO_ERROR && (1u << bit) == INA_PROTO_F_IN_FLIGHT)) {
                continue;
            }
            Msg m = good;
            m.hdr.flags = static_cast<uint16_t>(m.hdr.flags | (1u << bit));
            ck_assert_msg(check_msg(m) == INA_PROTO_ERR_MALFORMED, "%s flag bit %u",
                          ina_proto_type_name(good.hdr.type), bit);
        }
        for (unsigned s : {INA_PROTO_STATUS_MAX + 1u, 100u, 255u}) {
            Msg m = good;
            m.hdr.status = static_cast<uint8_t>(s);
            ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        }
        for (unsigned s = 0; s <= INA_PROTO_STATUS_MAX; ++s) {
            Msg m = good;
            m.hdr.status = static_cast<uint8_t>(s);
            ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
        }
        Msg m = good;
        m.hdr.window = INA_PROTO_MAX_WINDOW + 1;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    }
    for (unsigned t : {0u, INA_PROTO_TYPE_MAX + 1u, 100u, 255u}) {
        Msg m = valid_msg(INA_PROTO_HELLO);
        m.hdr.type = static_cast<uint8_t>(t);
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    }
}
END_TEST

START_TEST(test_control_payload)
{
    for (ina_proto_type_t t : kAllTypes) {
        if (is_data(t) || t == INA_PROTO_JOB_OPEN) {
            continue;
        }
        Msg m = valid_msg(t);
        for (size_t len : {size_t{1}, size_t{4}, size_t{64}, size_t{1} << 20}) {
            m.payload_len = len;
            ck_assert_msg(check_msg(m) == INA_PROTO_ERR_MALFORMED, "%s with %zu payload bytes",
                          ina_proto_type_name(t), len);
        }
    }
}
END_TEST

// coll, offset, block_elems and flags belong to BLOCK/RESULT: zero elsewhere.
START_TEST(test_control_block_fields)
{
    for (ina_proto_type_t t : kAllTypes) {
        if (is_data(t)) {
            continue;
        }
        Msg m = valid_msg(t);
        m.hdr.coll = INA_COLL_BCAST; // (HOST_COST and CALL_TIME name their call's collective)
        ck_assert_int_eq(check_msg(m), names_call(t) ? INA_PROTO_OK : INA_PROTO_ERR_MALFORMED);
        m = valid_msg(t);
        m.hdr.offset = 1;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        m = valid_msg(t);
        m.hdr.block_elems = 8; // JOB_OPEN: 8 leaves, this one leaf 0 (test_job_open_tree)
        ck_assert_int_eq(check_msg(m), t == INA_PROTO_JOB_OPEN ? INA_PROTO_OK
                                                               : INA_PROTO_ERR_MALFORMED);
        for (unsigned f : {INA_PROTO_F_WANT_RESULT, INA_PROTO_F_ACK_ONLY}) {
            m = valid_msg(t);
            m.hdr.flags = static_cast<uint16_t>(f);
            ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        }
    }
}
END_TEST

// ERROR alone may say the call it ends was under way (protocol 13).
START_TEST(test_error_in_flight)
{
    for (ina_proto_type_t t : kAllTypes) {
        Msg m = valid_msg(t);
        m.hdr.flags = static_cast<uint16_t>(m.hdr.flags | INA_PROTO_F_IN_FLIGHT);
        ck_assert_msg(check_msg(m) == (t == INA_PROTO_ERROR ? INA_PROTO_OK
                                                            : INA_PROTO_ERR_MALFORMED),
                      "%s", ina_proto_type_name(t));
    }
    Msg m = valid_msg(INA_PROTO_ERROR);
    m.hdr.flags = INA_PROTO_F_IN_FLIGHT | INA_PROTO_F_WANT_RESULT;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
}
END_TEST

START_TEST(test_grant)
{
    Msg m = valid_msg(INA_PROTO_GRANT);
    for (uint64_t mid : {uint64_t{0}, uint64_t{1} << 40, UINT64_MAX}) {
        m.hdr.mid = mid;
        ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
    }
    m.payload_len = 8; // GRANT carries no payload
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
}
END_TEST

START_TEST(test_job_open)
{
    const Msg good = valid_msg(INA_PROTO_JOB_OPEN);
    ck_assert_int_eq(check_msg(good), INA_PROTO_OK);
    Msg m = good;
    m.hdr.rank = m.hdr.count; // a rank the job does not have
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m = good;
    m.hdr.window = 0;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m = good;
    m.hdr.count = 0;
    m.hdr.rank = 0;
    m.payload_len = INA_PROTO_JOB_KEY_BYTES + INA_PROTO_JOB_CAP_BYTES;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    // The key and the node ids, exactly.
    // (Key 16 + capability 16 + 4 node ids of 4 bytes is the good one.)
    for (size_t len : {size_t{0}, size_t{16}, size_t{32}, size_t{47}, size_t{49}, size_t{4 * 4},
                       size_t{16 + 4 * 4}}) {
        m = good;
        m.payload_len = len;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    }
    ck_assert_str_eq(ina_proto_type_name(INA_PROTO_JOB_OPEN), "JOB_OPEN");
    ck_assert_str_eq(ina_proto_type_name(INA_PROTO_JOB_OPENED), "JOB_OPENED");
    ck_assert_str_eq(ina_proto_status_name(INA_PROTO_ERR_INCOMPLETE), "incomplete");
}
END_TEST

// JOB_OPEN's member count, window and payload (key + node ids); and the
// types protocol 5 retired (JOB_CREATE/CREATED/JOIN/JOINED, 3-6), refused
// whatever they carry.
START_TEST(test_job_open_limits)
{
    const Msg good = valid_msg(INA_PROTO_JOB_OPEN);
    Msg m = good;
    m.hdr.count = 0;
    m.hdr.rank = 0;
    m.payload_len = INA_PROTO_JOB_KEY_BYTES + INA_PROTO_JOB_CAP_BYTES;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);

    m.hdr.count = INA_PROTO_MAX_MEMBERS;
    m.payload_len = INA_PROTO_JOB_KEY_BYTES + INA_PROTO_JOB_CAP_BYTES + size_t{INA_PROTO_MAX_MEMBERS} * 4;
    ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
    m.hdr.count = INA_PROTO_MAX_MEMBERS + 1;
    m.payload_len = INA_PROTO_JOB_KEY_BYTES + INA_PROTO_JOB_CAP_BYTES + size_t{INA_PROTO_MAX_MEMBERS + 1} * 4;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.count = UINT32_MAX;
    m.payload_len = INA_PROTO_JOB_KEY_BYTES + INA_PROTO_JOB_CAP_BYTES + size_t{UINT32_MAX} * 4;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);

    for (size_t len : {size_t{0}, size_t{16}, size_t{31}, size_t{33}, size_t{47}, size_t{64}}) {
        m = good;
        m.payload_len = len;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    }
    m = good;
    m.hdr.window = 0;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.window = INA_PROTO_MAX_WINDOW;
    ck_assert_int_eq(check_msg(m), INA_PROTO_OK);

    for (unsigned t = 3; t <= 6; ++t) {
        for (size_t len : {size_t{0}, size_t{16}}) {
            m = valid_msg(INA_PROTO_JOB_LEAVE);
            m.hdr.type = static_cast<uint8_t>(t);
            m.hdr.count = 4;
            m.payload_len = len;
            ck_assert_msg(check_msg(m) == INA_PROTO_ERR_MALFORMED, "type %u", t);
        }
        ck_assert_str_eq(ina_proto_type_name(t), "?");
    }
}
END_TEST

// JOB_OPEN in a tree: this leaf's index among block_elems leaves (or both 0),
// and INA_PROTO_F_CHILDREN, its only flag.
START_TEST(test_job_open_tree)
{
    const Msg good = valid_msg(INA_PROTO_JOB_OPEN);
    Msg m = good;
    m.hdr.block_elems = 2;
    for (uint32_t leaf : {0u, 1u}) {
        m.hdr.offset = leaf;
        ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
    }
    m.hdr.offset = 2;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.block_elems = 0;
    m.hdr.offset = 1;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.block_elems = INA_PROTO_MAX_MEMBERS + 1;
    m.hdr.offset = 0;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m = good;
    m.hdr.flags = INA_PROTO_F_CHILDREN;
    ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
    for (unsigned f : {INA_PROTO_F_WANT_RESULT, INA_PROTO_F_ACK_ONLY, 0x8u}) {
        m.hdr.flags = static_cast<uint16_t>(f);
        ck_assert_msg(check_msg(m) == INA_PROTO_ERR_MALFORMED, "flags %#x", f);
    }
    m = good;
    m.hdr.coll = INA_COLL_REDUCE;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    // The flag means nothing on the other messages.
    for (ina_proto_type_t t : kAllTypes) {
        if (t == INA_PROTO_JOB_OPEN) {
            continue;
        }
        m = valid_msg(t);
        m.hdr.flags |= INA_PROTO_F_CHILDREN;
        ck_assert_msg(check_msg(m) == INA_PROTO_ERR_MALFORMED, "%s", ina_proto_type_name(t));
    }
}
END_TEST

// A deeper tree (protocol 15): whole (groups, group) pairs after the node
// ids, at most INA_PROTO_MAX_TREE_UP, only in a tree (leaves >= 1; 1 is one
// leaf of the job under its parent) and only on a connection of 15; the
// accessors read them back from an unaligned payload.
START_TEST(test_job_open_levels_above)
{
    const Msg good = valid_msg(INA_PROTO_JOB_OPEN);
    const size_t base = good.payload_len;
    ck_assert_uint_eq(ina_proto_job_open_base_len(&good.hdr), base);
    Msg m = good;
    m.hdr.block_elems = 1; // the only leaf of this job under its parent
    for (uint32_t k = 1; k <= INA_PROTO_MAX_TREE_UP; ++k) {
        m.payload_len = base + k * sizeof(ina_proto_tree_level_t);
        ck_assert_msg(check_msg(m) == INA_PROTO_OK, "%u levels above", k);
        ck_assert_uint_eq(ina_proto_job_open_levels_above(&m.hdr, m.payload_len), k);
    }
    m.payload_len = base + (INA_PROTO_MAX_TREE_UP + 1) * sizeof(ina_proto_tree_level_t);
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    for (size_t extra : {size_t{4}, size_t{12}, size_t{1}}) {
        m.payload_len = base + extra;
        ck_assert_msg(check_msg(m) == INA_PROTO_ERR_MALFORMED, "%zu bytes more", extra);
    }
    m.payload_len = base + sizeof(ina_proto_tree_level_t);
    m.hdr.version = 14; // a connection of 14 knows no levels above
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.version = INA_PROTO_VERSION;
    m.hdr.block_elems = 0; // no tree: nothing above either
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);

    // Read back at an odd address.
    std::vector<uint8_t> bytes(1 + base + 2 * sizeof(ina_proto_tree_level_t));
    const ina_proto_tree_level_t up[2] = {{3, 2}, {5, 0}};
    std::memcpy(bytes.data() + 1 + base, up, sizeof(up));
    for (uint32_t i = 0; i < 2; ++i) {
        const ina_proto_tree_level_t l = ina_proto_job_open_level_above(&good.hdr, bytes.data() + 1, i);
        ck_assert_uint_eq(l.groups, up[i].groups);
        ck_assert_uint_eq(l.group, up[i].group);
    }
}
END_TEST

// CALL_READY names its call like a BLOCK (coll, op, dtype, total; BARRIER's
// total is 0, every other call's not), with a window and no payload.
START_TEST(test_call_ready)
{
    const Msg good = valid_msg(INA_PROTO_CALL_READY);
    ck_assert_int_eq(check_msg(good), INA_PROTO_OK);
    Msg m = good;
    m.hdr.window = 0;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m = good;
    m.hdr.rank = INA_PROTO_MAX_MEMBERS;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m = good;
    m.hdr.arg = 0;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m = good;
    m.hdr.op = INA_OP_BXOR; // on a double
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_UNSUPPORTED);
    m = good;
    m.hdr.coll = INA_COLL_BCAST; // a reducing op in a bcast
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m = good;
    m.hdr.coll = INA_COLL_COUNT;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m = good;
    m.hdr.block_elems = 4;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m = good;
    m.hdr.coll = INA_COLL_BARRIER;
    m.hdr.op = INA_OP_REPLACE;
    m.hdr.dtype = INA_DT_UINT8;
    m.hdr.arg = 0;
    ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
    m.hdr.arg = 1;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    ck_assert_str_eq(ina_proto_type_name(INA_PROTO_CALL_READY), "CALL_READY");
    ck_assert_str_eq(ina_proto_type_name(INA_PROTO_CALL_ABORT), "CALL_ABORT");
    ck_assert_str_eq(ina_proto_type_name(INA_PROTO_PING), "PING");
    ck_assert_str_eq(ina_proto_type_name(INA_PROTO_PONG), "PONG");
    ck_assert_str_eq(ina_proto_status_name(INA_PROTO_ERR_UPSTREAM), "upstream");
    ck_assert_str_eq(ina_proto_status_name(INA_PROTO_ERR_ABORTED), "aborted");
    ck_assert_str_eq(ina_proto_status_name(INA_PROTO_ERR_BUSY), "busy");
    ck_assert_str_eq(ina_proto_status_name(INA_PROTO_ERR_OUTSCORED), "outscored");
    ck_assert_str_eq(ina_proto_status_name(INA_PROTO_ERR_FORBIDDEN), "forbidden");
    ck_assert_str_eq(ina_proto_status_name(INA_PROTO_ERR_LIMIT), "limit");
}
END_TEST

START_TEST(test_block_window_seg)
{
    const Msg good = valid_msg(INA_PROTO_BLOCK);
    Msg m = good;
    m.hdr.window = 0;
    m.hdr.seg = 0;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.window = INA_PROTO_MAX_WINDOW + 1;
    m.hdr.seg = m.hdr.sid % m.hdr.window;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.window = UINT16_MAX;
    m.hdr.seg = m.hdr.sid % m.hdr.window;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);

    const uint32_t sids[] = {0, 1, 15, 16, 17, 1023, 1024, 1025, 99999, UINT32_MAX};
    for (unsigned w = 1; w <= INA_PROTO_MAX_WINDOW; w += (w < 20 ? 1 : 97)) {
        for (uint32_t sid : sids) {
            m = good;
            m.hdr.window = static_cast<uint16_t>(w);
            m.hdr.sid = sid;
            m.hdr.seg = sid % w;
            ck_assert_msg(check_msg(m) == INA_PROTO_OK, "w=%u sid=%u", w, sid);
            m.hdr.seg = (sid % w + 1) % w; // another slot of the lease
            if (w > 1) {
                ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
            }
            m.hdr.seg = w; // outside the lease
            ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        }
    }
    m = good;
    m.hdr.rank = INA_PROTO_MAX_MEMBERS;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.rank = INA_PROTO_MAX_MEMBERS - 1;
    ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
}
END_TEST

START_TEST(test_job_member_rank)
{
    for (ina_proto_type_t t :
         {INA_PROTO_JOB_OPENED, INA_PROTO_JOB_LEAVE, INA_PROTO_CALL_READY, INA_PROTO_CALL_ABORT}) {
        Msg m = valid_msg(t);
        m.hdr.rank = INA_PROTO_MAX_MEMBERS - 1;
        ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
        m.hdr.rank = INA_PROTO_MAX_MEMBERS;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        m.hdr.rank = UINT32_MAX;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    }
}
END_TEST

// Every coll x op x dtype (and out-of-range values) on BLOCK and RESULT.
START_TEST(test_data_coll_op_dtype)
{
    for (ina_proto_type_t t : {INA_PROTO_BLOCK, INA_PROTO_RESULT}) {
        for (unsigned coll = 0; coll <= INA_COLL_COUNT + 1; ++coll) {
            for (unsigned op = 0; op <= INA_OP_COUNT + 1; ++op) {
                for (unsigned dt = 0; dt <= INA_DT_COUNT + 1; ++dt) {
                    const bool barrier = coll == INA_COLL_BARRIER;
                    Msg m = valid_msg(t);
                    m.hdr.coll = static_cast<uint8_t>(coll);
                    m.hdr.op = static_cast<uint8_t>(op);
                    m.hdr.dtype = static_cast<uint8_t>(dt);
                    m.hdr.block_elems = m.hdr.count = barrier ? 0 : 10;
                    m.payload_len = m.hdr.count * ref_dtype_size(dt);
                    if (barrier) {
                        m.hdr.sid = m.hdr.seg = 0;
                        m.hdr.arg = 0;
                    }
                    ina_proto_status_t want = INA_PROTO_OK;
                    if (coll >= INA_COLL_COUNT || op >= INA_OP_COUNT || dt >= INA_DT_COUNT) {
                        want = INA_PROTO_ERR_MALFORMED;
                        m.payload_len = m.hdr.count;
                    } else if (!ref_op_valid(op, dt)) {
                        want = INA_PROTO_ERR_UNSUPPORTED;
                    } else if (!ref_coll_valid(coll, op, dt)) {
                        want = INA_PROTO_ERR_MALFORMED; // e.g. REPLACE in a reduction
                    }
                    const ina_proto_status_t got = check_msg(m);
                    if (got != want) {
                        ck_abort_msg("%s %s op %u dtype %u: got %s", ina_proto_type_name(t),
                                     ina_proto_coll_name(coll), op, dt, ina_proto_status_name(got));
                    }
                }
            }
        }
        for (unsigned field = 0; field < 3; ++field) {
            Msg m = valid_msg(t);
            (field == 0 ? m.hdr.op : field == 1 ? m.hdr.dtype : m.hdr.coll) = 255;
            ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        }
        // A bitwise op on float is a pair MPI does not define.
        Msg m = valid_msg(t);
        m.hdr.op = INA_OP_BAND;
        m.hdr.dtype = INA_DT_FLOAT;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_UNSUPPORTED);
    }
}
END_TEST

// block_elems bounds and payload length, every dtype, every collective.
START_TEST(test_data_block_elems_payload)
{
    for (ina_proto_type_t t : {INA_PROTO_BLOCK, INA_PROTO_RESULT}) {
        for (unsigned coll = 0; coll < INA_COLL_BARRIER; ++coll) {
            for (unsigned dt = 0; dt < INA_DT_COUNT; ++dt) {
                const unsigned op = ref_reducing_coll(coll) ? some_op(dt) : unsigned{INA_OP_REPLACE};
                if (!ref_coll_valid(coll, op, dt)) {
                    continue;
                }
                const size_t esz = ref_dtype_size(dt);
                const uint32_t limit = static_cast<uint32_t>(INA_PROTO_MAX_SEG_BYTES / esz);
                Msg m = valid_msg(t);
                m.hdr.coll = static_cast<uint8_t>(coll);
                m.hdr.op = static_cast<uint8_t>(op);
                m.hdr.dtype = static_cast<uint8_t>(dt);
                m.hdr.arg = UINT64_MAX;
                auto with = [&](uint32_t n) {
                    m.hdr.block_elems = m.hdr.count = n;
                    m.payload_len = size_t{n} * esz;
                    return check_msg(m);
                };
                ck_assert_int_eq(with(0), INA_PROTO_ERR_MALFORMED); // only a barrier is empty
                ck_assert_int_eq(with(1), INA_PROTO_OK);
                ck_assert_int_eq(with(limit), INA_PROTO_OK); // exactly one full Seg
                ck_assert_int_eq(with(limit + 1), INA_PROTO_ERR_MALFORMED);
                ck_assert_int_eq(with(UINT32_MAX), INA_PROTO_ERR_MALFORMED);

                with(33);
                for (size_t len : {size_t{0}, 33 * esz - 1, 33 * esz + 1, 32 * esz, 34 * esz}) {
                    m.payload_len = len;
                    ck_assert_msg(check_msg(m) == INA_PROTO_ERR_MALFORMED, "dtype %u len %zu", dt,
                                  len);
                }
            }
        }
    }
    // BLOCK: arg is the whole call's element count, never below the block's.
    Msg m = valid_msg(INA_PROTO_BLOCK);
    m.hdr.arg = m.hdr.block_elems;
    ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
    m.hdr.arg = m.hdr.block_elems - 1;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.arg = 0;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
}
END_TEST

// Reductions: every member brings the whole block, so no CREDIT, no piece.
START_TEST(test_block_reduction_whole)
{
    for (unsigned coll : {INA_COLL_ALLREDUCE, INA_COLL_REDUCE, INA_COLL_REDUCE_SCATTER}) {
        for (bool want : {false, true}) {
            ck_assert_int_eq(check_msg(block(coll, 100, 0, 100, want)), INA_PROTO_OK);
            ck_assert_int_eq(check_msg(block(coll, 100, 0, 0, want)), INA_PROTO_ERR_MALFORMED);
            ck_assert_int_eq(check_msg(block(coll, 100, 0, 99, want)), INA_PROTO_ERR_MALFORMED);
            ck_assert_int_eq(check_msg(block(coll, 100, 1, 99, want)), INA_PROTO_ERR_MALFORMED);
            ck_assert_int_eq(check_msg(block(coll, 100, 50, 50, want)), INA_PROTO_ERR_MALFORMED);
        }
    }
}
END_TEST

// BCAST/ALLGATHER: any piece inside the block, or a CREDIT.
START_TEST(test_block_offsets)
{
    for (unsigned coll : {INA_COLL_BCAST, INA_COLL_ALLGATHER}) {
        const uint32_t n = 1000;
        for (uint32_t off : {0u, 1u, 499u, 999u, 1000u}) {
            for (uint32_t cnt : {0u, 1u, 500u, 1000u}) {
                const bool fits = uint64_t{off} + cnt <= n;
                ck_assert_msg(check_msg(block(coll, n, off, cnt, true)) ==
                                  (fits ? INA_PROTO_OK : INA_PROTO_ERR_MALFORMED),
                              "%s off %u count %u", ina_proto_coll_name(coll), off, cnt);
            }
        }
        // offset + count must not wrap around 32 bits.
        ck_assert_int_eq(check_msg(block(coll, n, UINT32_MAX, 1, true)), INA_PROTO_ERR_MALFORMED);
        ck_assert_int_eq(check_msg(block(coll, n, 1001, 0, true)), INA_PROTO_ERR_MALFORMED);
        ck_assert_int_eq(check_msg(block(coll, n, UINT32_MAX, 0, true)), INA_PROTO_ERR_MALFORMED);
        // A piece never exceeds its Seg.
        const uint32_t big = INA_PROTO_MAX_SEG_BYTES;
        ck_assert_int_eq(check_msg(block(coll, big, big - 1, 1, false)), INA_PROTO_OK);
        ck_assert_int_eq(check_msg(block(coll, big + 1, 0, 1, false)), INA_PROTO_ERR_MALFORMED);
    }
}
END_TEST

START_TEST(test_block_flags)
{
    Msg m = valid_msg(INA_PROTO_BLOCK);
    m.hdr.flags = 0;
    ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
    m.hdr.flags = INA_PROTO_F_WANT_RESULT;
    ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
    // ACK_ONLY is the agent's answer, never a member's request.
    m.hdr.flags = INA_PROTO_F_ACK_ONLY;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.flags = INA_PROTO_F_ACK_ONLY | INA_PROTO_F_WANT_RESULT;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
}
END_TEST

START_TEST(test_barrier)
{
    const Msg good = block(INA_COLL_BARRIER, 0, 0, 0, true);
    ck_assert_int_eq(check_msg(good), INA_PROTO_OK);
    ck_assert_int_eq(check_msg(block(INA_COLL_BARRIER, 0, 0, 0, false)), INA_PROTO_OK);
    Msg m = good;
    m.hdr.sid = 1;
    m.hdr.seg = 1 % m.hdr.window;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED); // exactly one block
    m = good;
    m.hdr.block_elems = 1;
    m.hdr.arg = 1;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m = good;
    m.hdr.arg = 1;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m = good;
    m.hdr.offset = 1;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m = good;
    m.hdr.count = 1;
    m.payload_len = 1;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m = good;
    m.payload_len = 1;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m = good;
    m.hdr.op = INA_OP_BOR; // a reducing op in a barrier
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    // The answer: full (empty) result or ACK_ONLY, both empty.
    Msg r = result(INA_COLL_BARRIER, 0, false);
    ck_assert_int_eq(check_msg(r), INA_PROTO_OK);
    r = result(INA_COLL_BARRIER, 0, true);
    ck_assert_int_eq(check_msg(r), INA_PROTO_OK);
    r.hdr.sid = 2;
    ck_assert_int_eq(check_msg(r), INA_PROTO_ERR_MALFORMED);
    r = result(INA_COLL_BARRIER, 0, false);
    r.hdr.block_elems = r.hdr.count = 1;
    r.payload_len = 1;
    ck_assert_int_eq(check_msg(r), INA_PROTO_ERR_MALFORMED);
}
END_TEST

// RESULT: the whole block, or (ACK_ONLY) nothing.
START_TEST(test_result_count_flags)
{
    for (unsigned coll = 0; coll < INA_COLL_BARRIER; ++coll) {
        const Msg full = result(coll, 100, false);
        const Msg ack = result(coll, 100, true);
        ck_assert_int_eq(check_msg(full), INA_PROTO_OK);
        ck_assert_int_eq(check_msg(ack), INA_PROTO_OK);
        const size_t esz = ref_dtype_size(full.hdr.dtype);

        Msg m = ack;
        m.payload_len = 100 * esz; // ACK_ONLY with the block attached
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        m.hdr.count = 100;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        m = full;
        m.hdr.count = 0; // empty without ACK_ONLY
        m.payload_len = 0;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        for (uint32_t cnt : {1u, 99u, 101u}) {
            for (uint16_t f : {uint16_t{0}, uint16_t{INA_PROTO_F_ACK_ONLY}}) {
                m = full;
                m.hdr.count = cnt;
                m.hdr.flags = f;
                m.payload_len = cnt * esz;
                ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
            }
        }
        m = full;
        m.hdr.flags = INA_PROTO_F_WANT_RESULT; // a member's flag, not the agent's
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        m = full;
        m.hdr.offset = 1; // a RESULT is always the whole block
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        m = ack;
        m.hdr.offset = 1;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    }
}
END_TEST

// Random bytes must never crash the validator nor pass a bad magic; random
// mutations of valid messages must only be accepted when they keep the
// invariants the receivers rely on.
START_TEST(test_fuzz)
{
    std::mt19937_64 rng(0x1a2b3c4d5e6fULL);
    std::vector<Msg> seeds = coll_forms();
    for (ina_proto_type_t t : kAllTypes) {
        seeds.push_back(valid_msg(t));
    }
    const int iterations = 200000;
    unsigned accepted_mutants = 0;
    for (int it = 0; it < iterations; ++it) {
        // Heap buffer of exactly hdr_len bytes: a read past it is a bug that
        // valgrind/ASan would see.
        const size_t hdr_len = (rng() % 4 == 0) ? rng() % 129 : sizeof(ina_proto_hdr_t);
        std::vector<unsigned char> buf(hdr_len);
        const bool mutant = (it % 2 == 1) && hdr_len == sizeof(ina_proto_hdr_t);
        size_t payload_len = rng() % 5000;
        if (mutant) {
            const Msg &m = seeds[rng() % seeds.size()];
            payload_len = (rng() % 4 == 0) ? payload_len : m.payload_len;
            std::memcpy(buf.data(), &m.hdr, sizeof(m.hdr));
            const int flips = 1 + static_cast<int>(rng() % 3);
            for (int f = 0; f < flips; ++f) {
                buf[rng() % buf.size()] ^= static_cast<unsigned char>(1u << (rng() % 8));
            }
        } else {
            for (auto &b : buf) {
                b = static_cast<unsigned char>(rng());
            }
            if (hdr_len >= 4 && rng() % 2 == 0) {
                const uint32_t magic = INA_PROTO_MAGIC;
                std::memcpy(buf.data(), &magic, 4); // get past the first gate sometimes
            }
        }
        const ina_proto_status_t st = ina_proto_check(buf.data(), hdr_len, payload_len);
        if (st > INA_PROTO_STATUS_MAX) {
            ck_abort_msg("status %d out of range", st);
        }
        if (st != INA_PROTO_OK) {
            continue;
        }
        ina_proto_hdr_t h;
        ck_assert_uint_eq(hdr_len, sizeof(h));
        std::memcpy(&h, buf.data(), sizeof(h));
        ck_assert_uint_eq(h.magic, INA_PROTO_MAGIC);
        ck_assert(h.type >= INA_PROTO_HELLO && h.type <= INA_PROTO_TYPE_MAX);
        // Versions: HELLO and ERROR(VERSION) of any (a HELLO offering one
        // at least), the others of one this build speaks.
        if (h.type == INA_PROTO_HELLO) {
            ck_assert(h.version != 0 && ina_proto_hello_lowest(&h) <= h.version);
        } else if (h.type != INA_PROTO_ERROR || h.status != INA_PROTO_ERR_VERSION) {
            ck_assert(h.version >= INA_PROTO_VERSION_MIN && h.version <= INA_PROTO_VERSION);
        }
        ck_assert_uint_le(h.ahead, INA_PROTO_MAX_WINDOW);
        if (h.type != INA_PROTO_JOB_OPENED && h.type != INA_PROTO_GRANT &&
            h.type != INA_PROTO_DENY && h.type != INA_PROTO_RESULT) {
            ck_assert_uint_eq(h.ahead, 0);
        }
        if (h.type != INA_PROTO_BLOCK && h.type != INA_PROTO_RESULT) {
            ck_assert_uint_eq(h.done, 0);
        }
        ck_assert_uint_le(h.status, INA_PROTO_STATUS_MAX);
        ck_assert_uint_le(h.window, INA_PROTO_MAX_WINDOW);
        if (is_data(h.type)) {
            const size_t esz = ref_dtype_size(h.dtype);
            ck_assert(ref_coll_valid(h.coll, h.op, h.dtype));
            ck_assert_uint_le(uint64_t{h.offset} + h.count, h.block_elems);
            ck_assert_uint_le(size_t{h.block_elems} * esz, INA_PROTO_MAX_SEG_BYTES);
            ck_assert_uint_eq(payload_len, size_t{h.count} * esz);
            if (h.coll == INA_COLL_BARRIER) {
                ck_assert(h.sid == 0 && h.block_elems == 0 && h.count == 0 && h.arg == 0);
            } else {
                ck_assert_uint_ge(h.block_elems, 1);
            }
            if (h.type == INA_PROTO_BLOCK) {
                ck_assert_uint_ge(h.window, 1);
                ck_assert_uint_eq(h.seg, h.sid % h.window);
                ck_assert_uint_ge(h.arg, h.block_elems);
                ck_assert_uint_eq(h.flags & ~INA_PROTO_F_WANT_RESULT, 0);
                if (ref_reducing_coll(h.coll)) {
                    ck_assert(h.offset == 0 && h.count == h.block_elems);
                }
            } else {
                ck_assert_uint_eq(h.offset, 0);
                ck_assert(h.flags == 0 ? h.count == h.block_elems
                                       : (h.flags == INA_PROTO_F_ACK_ONLY && h.count == 0));
            }
        } else if (h.type == INA_PROTO_CALL_READY) {
            ck_assert(h.offset == 0 && h.block_elems == 0 && h.flags == 0 && h.window >= 1);
            ck_assert(ref_coll_valid(h.coll, h.op, h.dtype));
            ck_assert((h.coll == INA_COLL_BARRIER) == (h.arg == 0));
            ck_assert_uint_eq(payload_len, 0);
        } else if (h.type == INA_PROTO_JOB_OPEN) {
            ck_assert(h.coll == 0 && (h.flags & ~INA_PROTO_F_CHILDREN) == 0);
            ck_assert(h.block_elems == 0 ? h.offset == 0 : h.offset < h.block_elems);
            ck_assert(h.count >= 1 && h.count <= INA_PROTO_MAX_MEMBERS && h.window >= 1 &&
                      h.rank < h.count);
            ck_assert_uint_eq(payload_len, INA_PROTO_JOB_KEY_BYTES + INA_PROTO_JOB_CAP_BYTES + size_t{h.count} * 4);
        } else if (names_call(h.type)) {
            ck_assert(h.version >= since(h.type) && h.coll < INA_COLL_COUNT && h.offset == 0 &&
                      h.block_elems == 0 && h.flags == 0 && h.window == 0 && h.op == 0 &&
                      h.dtype == 0 && h.count == 0 && h.sid == 0 && h.seg == 0);
            ck_assert_uint_eq(payload_len, 0);
        } else {
            ck_assert(h.coll == 0 && h.offset == 0 && h.block_elems == 0);
            ck_assert_uint_eq(h.flags & ~(h.type == INA_PROTO_ERROR ? INA_PROTO_F_IN_FLIGHT : 0u),
                              0);
            ck_assert_uint_eq(payload_len, 0);
        }
        accepted_mutants += mutant;
    }
    // The mutation half must reach the accepting paths, or it tests little.
    ck_assert_uint_gt(accepted_mutants, 1000);
}
END_TEST

// HOST_COST (protocol 16) and CALL_TIME (17): the call's bytes and
// nanoseconds by name; any collective; nothing else set; never on an older
// version.
void check_call_word(const Msg &good)
{
    ck_assert_int_eq(check_msg(good), INA_PROTO_OK);
    Msg m = good;
    m.hdr.coll = INA_COLL_BARRIER;
    ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
    m.hdr.coll = INA_COLL_COUNT;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    for (int field = 0; field < 8; ++field) {
        m = good;
        switch (field) {
        case 0: m.hdr.window = 1; break;
        case 1: m.hdr.op = INA_OP_MAX; break;
        case 2: m.hdr.dtype = INA_DT_DOUBLE; break;
        case 3: m.hdr.count = 1; break;
        case 4: m.hdr.sid = 1; break;
        case 5: m.hdr.block_elems = 1; break;
        case 6: m.hdr.rank = INA_PROTO_MAX_MEMBERS; break;
        default: m.payload_len = 8; break;
        }
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    }
    m = good;
    m.hdr.version = static_cast<uint8_t>(since(good.hdr.type) - 1); // a type its version lacks
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
}

START_TEST(test_host_cost)
{
    const Msg cost = valid_msg(INA_PROTO_HOST_COST);
    ck_assert_uint_eq(ina_proto_timing_bytes(&cost.hdr), 8u << 20);
    ck_assert_uint_eq(ina_proto_timing_ns(&cost.hdr), 40000000);
    ck_assert_str_eq(ina_proto_type_name(INA_PROTO_HOST_COST), "HOST_COST");
    check_call_word(cost);
    const Msg time = valid_msg(INA_PROTO_CALL_TIME);
    ck_assert_uint_eq(ina_proto_timing_bytes(&time.hdr), 8u << 20);
    ck_assert_uint_eq(ina_proto_timing_ns(&time.hdr), 25000000);
    ck_assert_str_eq(ina_proto_type_name(INA_PROTO_CALL_TIME), "CALL_TIME");
    check_call_word(time);
}
END_TEST

START_TEST(test_names)
{
    std::set<std::string> seen;
    for (unsigned v = 0; v < 300; ++v) {
        for (const char *name : {ina_proto_type_name(v), ina_proto_status_name(v),
                                 ina_proto_op_name(v), ina_proto_dtype_name(v),
                                 ina_proto_coll_name(v)}) {
            ck_assert_ptr_nonnull(name);
            ck_assert_uint_gt(std::strlen(name), 0);
        }
    }
    for (unsigned v : {UINT_MAX, UINT_MAX - 1}) {
        ck_assert_ptr_nonnull(ina_proto_type_name(v));
        ck_assert_ptr_nonnull(ina_proto_status_name(v));
        ck_assert_ptr_nonnull(ina_proto_op_name(v));
        ck_assert_ptr_nonnull(ina_proto_dtype_name(v));
        ck_assert_ptr_nonnull(ina_proto_coll_name(v));
    }
    ck_assert_str_eq(ina_proto_type_name(INA_PROTO_BLOCK), "BLOCK");
    ck_assert_str_eq(ina_proto_type_name(INA_PROTO_GRANT), "GRANT");
    ck_assert_str_eq(ina_proto_status_name(INA_PROTO_OK), "ok");
    ck_assert_str_eq(ina_proto_status_name(INA_PROTO_ERR_SEG_BUSY), "seg-busy");
    ck_assert_str_eq(ina_proto_op_name(INA_OP_BXOR), "bxor");
    ck_assert_str_eq(ina_proto_op_name(INA_OP_REPLACE), "replace");
    ck_assert_str_eq(ina_proto_dtype_name(INA_DT_LONG_DOUBLE), "long double");
    ck_assert_str_eq(ina_proto_dtype_name(INA_DT_LONG_DOUBLE_INT), "long double-int");
    ck_assert_str_eq(ina_proto_coll_name(INA_COLL_REDUCE_SCATTER), "reduce_scatter");
    ck_assert_str_eq(ina_proto_coll_name(INA_COLL_COUNT), "?");
    // Valid values have distinct names (a log must tell them apart).
    for (ina_proto_type_t t : kAllTypes) {
        ck_assert(seen.insert(std::string("t:") + ina_proto_type_name(t)).second);
    }
    for (unsigned s = 0; s <= INA_PROTO_STATUS_MAX; ++s) {
        ck_assert(seen.insert(std::string("s:") + ina_proto_status_name(s)).second);
    }
    for (unsigned o = 0; o < INA_OP_COUNT; ++o) {
        ck_assert(seen.insert(std::string("o:") + ina_proto_op_name(o)).second);
    }
    for (unsigned d = 0; d < INA_DT_COUNT; ++d) {
        ck_assert(seen.insert(std::string("d:") + ina_proto_dtype_name(d)).second);
    }
    for (unsigned c = 0; c < INA_COLL_COUNT; ++c) {
        ck_assert(seen.insert(std::string("c:") + ina_proto_coll_name(c)).second);
    }
}
END_TEST

// ina_proto_mark: the full mark from a MID and 32 low bits, across wraps.
START_TEST(test_certification_mark)
{
    ck_assert_uint_eq(ina_proto_mark(0, 0), 0);
    ck_assert_uint_eq(ina_proto_mark(0, 1), 1);
    ck_assert_uint_eq(ina_proto_mark(41, 40), 40);
    ck_assert_uint_eq(ina_proto_mark(41, 42), 42);
    const uint64_t wrap = uint64_t{1} << 32;
    ck_assert_uint_eq(ina_proto_mark(wrap + 5, 3), wrap + 3);
    ck_assert_uint_eq(ina_proto_mark(wrap + 5, UINT32_MAX), wrap - 1); // across the wrap
    ck_assert_uint_eq(ina_proto_mark(3 * wrap - 1, 0), 3 * wrap);
}
END_TEST

int main()
{
    return ina_test::run_suite("ina_proto", "proto",
                               {test_layout,
                                test_certification_mark,
                                test_host_cost,
                                test_init,
                                test_dtype_size_and_pairs,
                                test_accepts_every_type,
                                test_accepts_every_coll_form,
                                test_accepts_unaligned_header,
                                test_rejects_common_fields,
                                test_other_version_header_size,
                                test_versions,
                                test_peer_check,
                                test_control_payload,
                                test_control_block_fields,
                                test_grant,
                                test_job_open_limits,
                                test_job_open,
                                test_job_open_tree,
                                test_job_open_levels_above,
                                test_call_ready,
                                test_block_window_seg,
                                test_job_member_rank,
                                test_data_coll_op_dtype,
                                test_data_block_elems_payload,
                                test_block_reduction_whole,
                                test_block_offsets,
                                test_block_flags, test_error_in_flight,
                                test_barrier,
                                test_result_count_flags,
                                test_fuzz,
                                test_names});
}

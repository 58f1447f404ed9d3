// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Wire protocol helpers: the single validator both sides run on every
// received message (see ina_proto.h for the message flow and the collectives).
#include "ina_proto.h"

#include <complex>
#include <cstring>
#include <iterator>

namespace {

// The C types ina_proto.h names for the wire dtypes. std::complex<T> has the
// layout of C's T _Complex ([complex.numbers]: an array of two T).
template <typename V> struct Pair {
    V v;
    int i;
};

bool is_integer(unsigned dtype) { return dtype <= INA_DT_UINT64; }

bool is_floating(unsigned dtype)
{
    return dtype == INA_DT_FLOAT || dtype == INA_DT_DOUBLE || dtype == INA_DT_LONG_DOUBLE;
}

bool is_complex(unsigned dtype)
{
    return dtype == INA_DT_FLOAT_COMPLEX || dtype == INA_DT_DOUBLE_COMPLEX ||
           dtype == INA_DT_LONG_DOUBLE_COMPLEX;
}

bool is_pair(unsigned dtype) { return dtype >= INA_DT_FLOAT_INT && dtype < INA_DT_COUNT; }

// BCAST/ALLGATHER/BARRIER place bytes; the others reduce.
bool coll_places_bytes(unsigned coll)
{
    return coll == INA_COLL_BCAST || coll == INA_COLL_ALLGATHER || coll == INA_COLL_BARRIER;
}

// Name tables, indexed by the enum value; the static_asserts keep them in
// step with ina_proto.h.
// Types 3-6 (JOB_CREATE/CREATED/JOIN/JOINED) were retired with protocol 5.
constexpr unsigned kRetiredCreate = 3, kRetiredCreated = 4, kRetiredJoin = 5, kRetiredJoined = 6;
constexpr const char *kTypeNames[] = {"?",          "HELLO",      "HELLO_ACK", "?",
                                      "?",          "?",          "?",         "JOB_LEAVE",
                                      "BLOCK",      "RESULT",     "DENY",      "ERROR",
                                      "GRANT",      "JOB_OPEN",   "JOB_OPENED",
                                      "CALL_READY", "CALL_ABORT", "PING",
                                      "PONG",       "HOST_COST",  "CALL_TIME"};
constexpr const char *kStatusNames[] = {"ok",           "malformed",  "version",
                                        "no-job",       "not-member", "no-resources",
                                        "mismatch",     "unsupported", "seg-busy",
                                        "incomplete",   "upstream",   "aborted",
                                        "busy",         "outscored",  "forbidden",
                                        "limit",        "draining"};
constexpr const char *kOpNames[] = {"sum", "prod", "min",    "max",    "land",   "lor",    "lxor",
                                    "band", "bor", "bxor",   "minloc", "maxloc", "replace"};
constexpr const char *kDtypeNames[] = {"int8",           "uint8",
                                       "int16",          "uint16",
                                       "int32",          "uint32",
                                       "int64",          "uint64",
                                       "float",          "double",
                                       "long double",    "bool",
                                       "float complex",  "double complex",
                                       "long double complex",
                                       "float-int",      "double-int",
                                       "long-int",       "2int",
                                       "short-int",      "long double-int"};
constexpr const char *kCollNames[] = {"allreduce", "reduce",    "reduce_scatter",
                                      "bcast",     "allgather", "barrier"};
static_assert(std::size(kTypeNames) == INA_PROTO_TYPE_MAX + 1, "type names");
static_assert(std::size(kStatusNames) == INA_PROTO_STATUS_MAX + 1, "status names");
static_assert(std::size(kOpNames) == INA_OP_COUNT, "op names");
static_assert(std::size(kDtypeNames) == INA_DT_COUNT, "dtype names");
static_assert(std::size(kCollNames) == INA_COLL_COUNT, "coll names");

// The sizes ina_proto.h promises in its dtype comments (x86-64 / LP64).
static_assert(sizeof(Pair<float>) == 8 && sizeof(Pair<double>) == 16 &&
                  sizeof(Pair<long>) == 16 && sizeof(Pair<int>) == 8 &&
                  sizeof(Pair<short>) == 8,
              "MPI pair layouts");

constexpr unsigned kKnownFlags =
    INA_PROTO_F_WANT_RESULT | INA_PROTO_F_ACK_ONLY | INA_PROTO_F_CHILDREN | INA_PROTO_F_IN_FLIGHT;

// BLOCK and RESULT: the fields both share (coll, op, dtype, block_elems, payload).
ina_proto_status_t check_data(const ina_proto_hdr_t &h, size_t payload_len)
{
    if (h.seg >= INA_PROTO_MAX_WINDOW || h.coll >= INA_COLL_COUNT || h.op >= INA_OP_COUNT ||
        h.dtype >= INA_DT_COUNT) {
        return INA_PROTO_ERR_MALFORMED;
    }
    if (!ina_proto_op_valid(h.op, h.dtype)) {
        return INA_PROTO_ERR_UNSUPPORTED;
    }
    // A valid pair used by the wrong collective (REPLACE in a reduction, a
    // reducing op in a BCAST) is a malformed message, not an unsupported pair.
    if (!ina_proto_coll_valid(h.coll, h.op, h.dtype)) {
        return INA_PROTO_ERR_MALFORMED;
    }
    const size_t esz = ina_proto_dtype_size(h.dtype);
    if (h.coll == INA_COLL_BARRIER) {
        // Exactly one empty block per barrier.
        if (h.sid != 0 || h.block_elems != 0 || h.count != 0 || h.offset != 0 || h.arg != 0) {
            return INA_PROTO_ERR_MALFORMED;
        }
    } else if (h.block_elems == 0 || h.block_elems > INA_PROTO_MAX_SEG_BYTES / esz) {
        return INA_PROTO_ERR_MALFORMED;
    }
    // 64-bit sum: offset + count cannot wrap. count <= block_elems bounds the
    // payload by the Seg size, so count * esz cannot overflow either.
    if (uint64_t{h.offset} + h.count > h.block_elems ||
        payload_len != static_cast<size_t>(h.count) * esz) {
        return INA_PROTO_ERR_MALFORMED;
    }
    return INA_PROTO_OK;
}

ina_proto_status_t check_block(const ina_proto_hdr_t &h, size_t payload_len)
{
    if (h.window == 0 || h.seg != h.sid % h.window || h.rank >= INA_PROTO_MAX_MEMBERS ||
        (h.flags & ~unsigned{INA_PROTO_F_WANT_RESULT}) != 0) {
        return INA_PROTO_ERR_MALFORMED;
    }
    const ina_proto_status_t st = check_data(h, payload_len);
    if (st != INA_PROTO_OK) {
        return st;
    }
    if (h.block_elems > h.arg) {
        return INA_PROTO_ERR_MALFORMED;
    }
    // Reductions need every member's data over the whole block: no CREDIT,
    // no partial payload.
    if (!coll_places_bytes(h.coll) && (h.offset != 0 || h.count != h.block_elems)) {
        return INA_PROTO_ERR_MALFORMED;
    }
    return INA_PROTO_OK;
}

ina_proto_status_t check_result(const ina_proto_hdr_t &h, size_t payload_len)
{
    if ((h.flags & ~unsigned{INA_PROTO_F_ACK_ONLY}) != 0 || h.offset != 0) {
        return INA_PROTO_ERR_MALFORMED;
    }
    const ina_proto_status_t st = check_data(h, payload_len);
    if (st != INA_PROTO_OK) {
        return st;
    }
    // The whole block, or (ACK_ONLY) nothing.
    const uint32_t want = (h.flags & INA_PROTO_F_ACK_ONLY) ? 0 : h.block_elems;
    return h.count == want ? INA_PROTO_OK : INA_PROTO_ERR_MALFORMED;
}

ina_proto_status_t check_job_open(const ina_proto_hdr_t &h, size_t payload_len)
{
    if (h.count == 0 || h.count > INA_PROTO_MAX_MEMBERS || h.window == 0 || h.rank >= h.count ||
        payload_len < ina_proto_job_open_base_len(&h)) {
        return INA_PROTO_ERR_MALFORMED;
    }
    // The tree: this leaf's index among the leaves, or none; deeper
    // (protocol 15), whole pairs for the levels above, each a place.
    const size_t above = payload_len - ina_proto_job_open_base_len(&h);
    const uint32_t leaves = ina_proto_job_open_leaves(&h), leaf = ina_proto_job_open_leaf(&h);
    bool tree_ok = leaves == 0 ? leaf == 0 : leaf < leaves;
    if (above != 0) {
        const uint32_t k = ina_proto_job_open_levels_above(&h, payload_len);
        tree_ok = tree_ok && h.version >= 15 && leaves >= 1 &&
                  above % sizeof(ina_proto_tree_level_t) == 0 && k <= INA_PROTO_MAX_TREE_UP;
        // (Their values are checked where the payload is read: the agent's
        // JOB_OPEN.)
    }
    // The stripe: index < width (width >= 2), or 0.
    const uint32_t width = ina_proto_job_open_stripe_width(&h);
    if (ina_proto_job_open_stripe_word(&h) != 0 &&
        (width < 2 || ina_proto_job_open_stripe_index(&h) >= width)) {
        return INA_PROTO_ERR_MALFORMED;
    }
    if (!tree_ok || leaves > INA_PROTO_MAX_MEMBERS || h.coll != 0 ||
        (h.flags & ~unsigned{INA_PROTO_F_CHILDREN}) != 0) {
        return INA_PROTO_ERR_MALFORMED;
    }
    return INA_PROTO_OK;
}

// CALL_READY names the call as its blocks will (coll, op, dtype, total).
ina_proto_status_t check_call_ready(const ina_proto_hdr_t &h, size_t payload_len)
{
    if (payload_len != 0 || h.window == 0 || h.rank >= INA_PROTO_MAX_MEMBERS || h.flags != 0 ||
        h.offset != 0 || h.block_elems != 0 || h.coll >= INA_COLL_COUNT || h.op >= INA_OP_COUNT ||
        h.dtype >= INA_DT_COUNT) {
        return INA_PROTO_ERR_MALFORMED;
    }
    if (!ina_proto_op_valid(h.op, h.dtype)) {
        return INA_PROTO_ERR_UNSUPPORTED;
    }
    if (!ina_proto_coll_valid(h.coll, h.op, h.dtype) ||
        (h.coll == INA_COLL_BARRIER) != (h.arg == 0)) {
        return INA_PROTO_ERR_MALFORMED;
    }
    return INA_PROTO_OK;
}

// HOST_COST (protocol 16): a member's word on a denied call's host cost;
// CALL_TIME (protocol 17), on a whole call's time: the same fields.
ina_proto_status_t check_host_cost(const ina_proto_hdr_t &h, size_t payload_len)
{
    const unsigned since = h.type == INA_PROTO_CALL_TIME ? 17 : 16;
    if (h.version < since || payload_len != 0 || h.rank >= INA_PROTO_MAX_MEMBERS || h.flags != 0 ||
        h.offset != 0 || h.block_elems != 0 || h.coll >= INA_COLL_COUNT || h.op != 0 ||
        h.dtype != 0 || h.window != 0 || h.sid != 0 || h.seg != 0 ||
        h.count != 0) {
        return INA_PROTO_ERR_MALFORMED;
    }
    return INA_PROTO_OK;
}

// A version this build speaks ("Versions").
bool spoken(unsigned version)
{
    return version >= INA_PROTO_VERSION_MIN && version <= INA_PROTO_VERSION;
}

} // namespace

extern "C" {

void ina_proto_init(ina_proto_hdr_t *hdr, ina_proto_type_t type)
{
    std::memset(hdr, 0, sizeof(*hdr));
    hdr->magic = INA_PROTO_MAGIC;
    hdr->version = INA_PROTO_VERSION;
    hdr->type = static_cast<uint8_t>(type);
}

size_t ina_proto_dtype_size(unsigned dtype)
{
    switch (dtype) {
    case INA_DT_INT8: case INA_DT_UINT8: return 1;
    case INA_DT_INT16: case INA_DT_UINT16: return 2;
    case INA_DT_INT32: case INA_DT_UINT32: return 4;
    case INA_DT_INT64: case INA_DT_UINT64: return 8;
    case INA_DT_FLOAT: return sizeof(float);
    case INA_DT_DOUBLE: return sizeof(double);
    case INA_DT_LONG_DOUBLE: return sizeof(long double);
    case INA_DT_BOOL: return sizeof(bool);
    case INA_DT_FLOAT_COMPLEX: return sizeof(std::complex<float>);
    case INA_DT_DOUBLE_COMPLEX: return sizeof(std::complex<double>);
    case INA_DT_LONG_DOUBLE_COMPLEX: return sizeof(std::complex<long double>);
    case INA_DT_FLOAT_INT: return sizeof(Pair<float>);
    case INA_DT_DOUBLE_INT: return sizeof(Pair<double>);
    case INA_DT_LONG_INT: return sizeof(Pair<long>);
    case INA_DT_2INT: return sizeof(Pair<int>);
    case INA_DT_SHORT_INT: return sizeof(Pair<short>);
    case INA_DT_LONG_DOUBLE_INT: return sizeof(Pair<long double>);
    default: return 0;
    }
}

int ina_proto_op_valid(unsigned op, unsigned dtype)
{
    if (op >= INA_OP_COUNT || dtype >= INA_DT_COUNT) {
        return 0;
    }
    if (op == INA_OP_REPLACE) {
        return dtype == INA_DT_UINT8;
    }
    if (is_integer(dtype)) {
        return op <= INA_OP_BXOR;
    }
    if (is_floating(dtype)) {
        return op == INA_OP_SUM || op == INA_OP_PROD || op == INA_OP_MIN || op == INA_OP_MAX;
    }
    if (dtype == INA_DT_BOOL) {
        return op == INA_OP_LAND || op == INA_OP_LOR || op == INA_OP_LXOR;
    }
    if (is_complex(dtype)) {
        return op == INA_OP_SUM || op == INA_OP_PROD;
    }
    return is_pair(dtype) && (op == INA_OP_MINLOC || op == INA_OP_MAXLOC);
}

int ina_proto_coll_valid(unsigned coll, unsigned op, unsigned dtype)
{
    if (coll >= INA_COLL_COUNT || !ina_proto_op_valid(op, dtype)) {
        return 0;
    }
    return coll_places_bytes(coll) == (op == INA_OP_REPLACE);
}

ina_proto_status_t ina_proto_check(const void *raw, size_t hdr_len, size_t payload_len)
{
    if (raw == nullptr) {
        return INA_PROTO_ERR_MALFORMED;
    }
    // A peer of another protocol version may use another header size: tell
    // that apart from garbage (magic and version sit at fixed offsets in every
    // version) so the user reads "version", not "malformed".
    if (hdr_len != sizeof(ina_proto_hdr_t)) {
        uint32_t magic;
        if (hdr_len >= offsetof(ina_proto_hdr_t, version) + 1 &&
            (std::memcpy(&magic, raw, sizeof(magic)), magic == INA_PROTO_MAGIC) &&
            !spoken(static_cast<const uint8_t *>(raw)[offsetof(ina_proto_hdr_t, version)])) {
            return INA_PROTO_ERR_VERSION;
        }
        return INA_PROTO_ERR_MALFORMED;
    }
    // The AM header may sit at any alignment inside a UCX buffer: copy it out.
    ina_proto_hdr_t h;
    std::memcpy(&h, raw, sizeof(h));
    if (h.magic != INA_PROTO_MAGIC) {
        return INA_PROTO_ERR_MALFORMED;
    }
    // The first-contact messages keep their fields in every version
    // ("Versions"): taken from any, so that the two ends learn each other's
    // range; the connection's owner chooses, or reads the refusal.
    const bool first_contact = h.type == INA_PROTO_HELLO ||
                               (h.type == INA_PROTO_ERROR && h.status == INA_PROTO_ERR_VERSION);
    if (!first_contact && !spoken(h.version)) {
        return INA_PROTO_ERR_VERSION;
    }
    if (h.type == INA_PROTO_HELLO &&
        (h.version == 0 || ina_proto_hello_lowest(&h) > ina_proto_hello_highest(&h))) {
        return INA_PROTO_ERR_MALFORMED;
    }
    const bool has_done = h.type == INA_PROTO_BLOCK || h.type == INA_PROTO_RESULT;
    if (h.type < INA_PROTO_HELLO || h.type > INA_PROTO_TYPE_MAX || (h.done != 0 && !has_done) ||
        (h.flags & ~kKnownFlags) != 0 || h.status > INA_PROTO_STATUS_MAX ||
        h.window > INA_PROTO_MAX_WINDOW || h.ahead > INA_PROTO_MAX_WINDOW) {
        return INA_PROTO_ERR_MALFORMED;
    }
    // `ahead` is a word of the agent about a job's next call ("Leases").
    if (h.ahead != 0 && h.type != INA_PROTO_JOB_OPENED && h.type != INA_PROTO_GRANT &&
        h.type != INA_PROTO_DENY && h.type != INA_PROTO_RESULT) {
        return INA_PROTO_ERR_MALFORMED;
    }
    if (h.type == INA_PROTO_BLOCK) {
        return check_block(h, payload_len);
    }
    if (h.type == INA_PROTO_RESULT) {
        return check_result(h, payload_len);
    }
    if (h.type == INA_PROTO_JOB_OPEN) {
        return check_job_open(h, payload_len);
    }
    if (h.type == INA_PROTO_CALL_READY) {
        return check_call_ready(h, payload_len);
    }
    if (h.type == INA_PROTO_HOST_COST || h.type == INA_PROTO_CALL_TIME) {
        return check_host_cost(h, payload_len);
    }
    // The per-block fields mean nothing outside BLOCK/RESULT: they must be 0.
    const unsigned flags_ok = h.type == INA_PROTO_ERROR ? INA_PROTO_F_IN_FLIGHT : 0u;
    if (h.coll != 0 || h.offset != 0 || h.block_elems != 0 || (h.flags & ~flags_ok) != 0) {
        return INA_PROTO_ERR_MALFORMED;
    }
    switch (h.type) {
    case kRetiredCreate:
    case kRetiredCreated:
    case kRetiredJoin:
    case kRetiredJoined:
        return INA_PROTO_ERR_MALFORMED; // protocol 4's JOB_CREATE/JOIN: never sent since
    case INA_PROTO_JOB_OPENED:
    case INA_PROTO_JOB_LEAVE:
    case INA_PROTO_CALL_ABORT:
        if (h.rank >= INA_PROTO_MAX_MEMBERS || payload_len != 0) {
            return INA_PROTO_ERR_MALFORMED;
        }
        return INA_PROTO_OK;
    default:
        // Control messages (GRANT, DENY, ERROR, ...) carry everything in the header.
        return payload_len == 0 ? INA_PROTO_OK : INA_PROTO_ERR_MALFORMED;
    }
}

const char *ina_proto_type_name(unsigned type)
{
    return type < std::size(kTypeNames) ? kTypeNames[type] : "?";
}

const char *ina_proto_status_name(unsigned status)
{
    return status < std::size(kStatusNames) ? kStatusNames[status] : "?";
}

const char *ina_proto_op_name(unsigned op)
{
    return op < std::size(kOpNames) ? kOpNames[op] : "?";
}

const char *ina_proto_dtype_name(unsigned dtype)
{
    return dtype < std::size(kDtypeNames) ? kDtypeNames[dtype] : "?";
}

const char *ina_proto_coll_name(unsigned coll)
{
    return coll < std::size(kCollNames) ? kCollNames[coll] : "?";
}

} // extern "C"

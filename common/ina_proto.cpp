// Wire protocol helpers: the single validator both sides run on every
// received message (see ina_proto.h for the message flow).
#include "ina_proto.h"

#include <cstring>
#include <iterator>

namespace {

bool is_float(unsigned dtype)
{
    return dtype == INA_DT_FLOAT || dtype == INA_DT_DOUBLE || dtype == INA_DT_LONG_DOUBLE;
}

// Name tables, indexed by the enum value; the static_asserts keep them in
// step with ina_proto.h.
constexpr const char *kTypeNames[] = {"?",          "HELLO",      "HELLO_ACK", "JOB_CREATE",
                                      "JOB_CREATED", "JOB_JOIN",   "JOB_JOINED", "JOB_LEAVE",
                                      "BLOCK",      "RESULT",     "DENY",      "ERROR"};
constexpr const char *kStatusNames[] = {"ok",           "malformed",  "version",
                                        "no-job",       "not-member", "no-resources",
                                        "mismatch",     "unsupported", "seg-busy"};
constexpr const char *kOpNames[] = {"sum", "prod", "min", "max",  "land",
                                    "lor", "lxor", "band", "bor", "bxor"};
constexpr const char *kDtypeNames[] = {"int8",  "uint8",  "int16",  "uint16",
                                       "int32", "uint32", "int64",  "uint64",
                                       "float", "double", "long double"};
static_assert(std::size(kTypeNames) == INA_PROTO_TYPE_MAX + 1, "type names");
static_assert(std::size(kStatusNames) == INA_PROTO_STATUS_MAX + 1, "status names");
static_assert(std::size(kOpNames) == INA_OP_COUNT, "op names");
static_assert(std::size(kDtypeNames) == INA_DT_COUNT, "dtype names");

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
    case INA_DT_INT32: case INA_DT_UINT32: case INA_DT_FLOAT: return 4;
    case INA_DT_INT64: case INA_DT_UINT64: case INA_DT_DOUBLE: return 8;
    case INA_DT_LONG_DOUBLE: return sizeof(long double);
    default: return 0;
    }
}

int ina_proto_op_valid(unsigned op, unsigned dtype)
{
    if (op >= INA_OP_COUNT || dtype >= INA_DT_COUNT) {
        return 0;
    }
    if (is_float(dtype)) {
        return op == INA_OP_SUM || op == INA_OP_PROD || op == INA_OP_MIN || op == INA_OP_MAX;
    }
    return 1;
}

ina_proto_status_t ina_proto_check(const void *raw, size_t hdr_len, size_t payload_len)
{
    if (raw == nullptr || hdr_len != sizeof(ina_proto_hdr_t)) {
        return INA_PROTO_ERR_MALFORMED;
    }
    // The AM header may sit at any alignment inside a UCX buffer: copy it out.
    ina_proto_hdr_t h;
    std::memcpy(&h, raw, sizeof(h));
    if (h.magic != INA_PROTO_MAGIC) {
        return INA_PROTO_ERR_MALFORMED;
    }
    if (h.version != INA_PROTO_VERSION) {
        return INA_PROTO_ERR_VERSION;
    }
    if (h.type < INA_PROTO_HELLO || h.type > INA_PROTO_TYPE_MAX || h.reserved != 0 ||
        h.status > INA_PROTO_STATUS_MAX || h.window > INA_PROTO_MAX_WINDOW) {
        return INA_PROTO_ERR_MALFORMED;
    }
    switch (h.type) {
    case INA_PROTO_JOB_CREATE:
        if (h.count == 0 || h.count > INA_PROTO_MAX_MEMBERS || h.window == 0 ||
            payload_len != static_cast<size_t>(h.count) * sizeof(uint32_t)) {
            return INA_PROTO_ERR_MALFORMED;
        }
        return INA_PROTO_OK;
    case INA_PROTO_JOB_JOIN:
    case INA_PROTO_JOB_JOINED:
    case INA_PROTO_JOB_LEAVE:
        if (h.rank >= INA_PROTO_MAX_MEMBERS || payload_len != 0) {
            return INA_PROTO_ERR_MALFORMED;
        }
        return INA_PROTO_OK;
    case INA_PROTO_BLOCK:
    case INA_PROTO_RESULT: {
        if (h.type == INA_PROTO_BLOCK &&
            (h.window == 0 || h.seg != h.sid % h.window || h.rank >= INA_PROTO_MAX_MEMBERS)) {
            return INA_PROTO_ERR_MALFORMED;
        }
        if (h.seg >= INA_PROTO_MAX_WINDOW || h.op >= INA_OP_COUNT || h.dtype >= INA_DT_COUNT) {
            return INA_PROTO_ERR_MALFORMED;
        }
        if (!ina_proto_op_valid(h.op, h.dtype)) {
            return INA_PROTO_ERR_UNSUPPORTED;
        }
        // count is bounded by the Seg size before the multiplication, so
        // count * esz cannot overflow.
        const size_t esz = ina_proto_dtype_size(h.dtype);
        if (h.count == 0 || h.count > INA_PROTO_MAX_SEG_BYTES / esz ||
            payload_len != static_cast<size_t>(h.count) * esz ||
            (h.type == INA_PROTO_BLOCK && h.arg < h.count)) {
            return INA_PROTO_ERR_MALFORMED;
        }
        return INA_PROTO_OK;
    }
    default:
        // Control messages carry everything in the header.
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

} // extern "C"

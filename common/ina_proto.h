/*
 * ina wire protocol: the ONE definition shared by the Open MPI component
 * (ompi_coll_ina) and the aggregation agent (switch_agent / ina-switchd).
 *
 * Transport: UCX active messages (ucp_am_send_nbx). Every message is one AM
 * whose AM *header* is exactly one ina_proto_hdr_t and whose AM *data* is the
 * payload (possibly empty). Client -> agent messages use INA_PROTO_AM_TO_AGENT,
 * agent -> client messages use INA_PROTO_AM_TO_CLIENT.
 *
 * Vocabulary (../shared/SEEDS.md, S0/S1):
 *   JID  job id: one per communicator, unique at the agent.
 *   MID  message id: the n-th offloaded call of a job (0, 1, 2, ...).
 *   SID  sequence id: the block index inside one call.
 *   Seg  the buffer unit a block uses inside the job's lease: seg = sid % window.
 *   window  blocks a rank may have in flight; equals the lease size (S0).
 *
 * Message flow:
 *   HELLO       c->a  first message on a new endpoint.
 *   HELLO_ACK   a->c  count = max window (Segs per lease), arg = Seg size in bytes.
 *   JOB_CREATE  c->a  count = number of members, window = requested window,
 *                     arg = cookie, payload = uint32_t node_id[count]
 *                     (members with equal node_id share a node: Node/Rank bitmaps).
 *   JOB_CREATED a->c  jid, window = granted window, status, arg = cookie.
 *   JOB_JOIN    c->a  jid, rank, arg = cookie: binds this endpoint to (jid, rank).
 *   JOB_JOINED  a->c  jid, rank, status, arg = cookie.
 *   JOB_LEAVE   c->a  jid, rank: the member leaves; the job dies when all left.
 *   BLOCK       c->a  jid, rank, mid, sid, seg, window, op, dtype,
 *                     count = elements in this block, arg = elements of the whole call,
 *                     payload = count * dtype size bytes.
 *   RESULT      a->c  jid, mid, sid, seg, op, dtype, count, payload = reduced block.
 *                     The RESULT of block sid is also the ACK of that block (S0).
 *   DENY        a->c  jid, mid, status: the agent will not aggregate this call; sent
 *                     to every member, so all ranks fall back together.
 *   ERROR       a->c  the sender's message was rejected: status, and the offending
 *                     message's type in op, its jid/mid/sid echoed.
 *
 * Byte order: host order (agent and clients run on the same architecture class;
 * the magic detects a mismatch).
 */
#ifndef INA_PROTO_H
#define INA_PROTO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INA_PROTO_MAGIC   0x31414e49u /* "INA1" in memory on little endian */
#define INA_PROTO_VERSION 1u

/* UCX active-message ids. */
#define INA_PROTO_AM_TO_AGENT  17u
#define INA_PROTO_AM_TO_CLIENT 18u

/* Hard limits the agent enforces (and the client respects). */
#define INA_PROTO_MAX_MEMBERS  65536u
#define INA_PROTO_MAX_WINDOW   1024u
#define INA_PROTO_MAX_SEG_BYTES (1u << 20)

typedef enum ina_proto_type {
    INA_PROTO_HELLO = 1,
    INA_PROTO_HELLO_ACK = 2,
    INA_PROTO_JOB_CREATE = 3,
    INA_PROTO_JOB_CREATED = 4,
    INA_PROTO_JOB_JOIN = 5,
    INA_PROTO_JOB_JOINED = 6,
    INA_PROTO_JOB_LEAVE = 7,
    INA_PROTO_BLOCK = 8,
    INA_PROTO_RESULT = 9,
    INA_PROTO_DENY = 10,
    INA_PROTO_ERROR = 11,
    INA_PROTO_TYPE_MAX = 11
} ina_proto_type_t;

/* Execution status (S1 "execution status"); also the CQE status. */
typedef enum ina_proto_status {
    INA_PROTO_OK = 0,
    INA_PROTO_ERR_MALFORMED = 1,   /* bad magic, size, type or field range */
    INA_PROTO_ERR_VERSION = 2,     /* protocol version not spoken */
    INA_PROTO_ERR_NO_JOB = 3,      /* unknown JID */
    INA_PROTO_ERR_NOT_MEMBER = 4,  /* sender is not (jid, rank) */
    INA_PROTO_ERR_NO_RESOURCES = 5,/* no Segs / jobs left: a DENY reason */
    INA_PROTO_ERR_MISMATCH = 6,    /* op/dtype/count differ from other members */
    INA_PROTO_ERR_UNSUPPORTED = 7, /* (op, dtype) pair the agent cannot reduce */
    INA_PROTO_ERR_SEG_BUSY = 8,    /* block names a Seg still held by another SID */
    INA_PROTO_STATUS_MAX = 8
} ina_proto_status_t;

/* Element types on the wire. Fixed-width: the component maps every MPI
 * predefined C integer/floating type onto one of these by size/signedness. */
typedef enum ina_proto_dtype {
    INA_DT_INT8 = 0,
    INA_DT_UINT8,
    INA_DT_INT16,
    INA_DT_UINT16,
    INA_DT_INT32,
    INA_DT_UINT32,
    INA_DT_INT64,
    INA_DT_UINT64,
    INA_DT_FLOAT,       /* IEEE binary32 */
    INA_DT_DOUBLE,      /* IEEE binary64 */
    INA_DT_LONG_DOUBLE, /* C long double of the host (x87 80-bit in 16 bytes on x86-64) */
    INA_DT_COUNT
} ina_proto_dtype_t;

typedef enum ina_proto_op {
    INA_OP_SUM = 0,
    INA_OP_PROD,
    INA_OP_MIN,
    INA_OP_MAX,
    INA_OP_LAND,
    INA_OP_LOR,
    INA_OP_LXOR,
    INA_OP_BAND,
    INA_OP_BOR,
    INA_OP_BXOR,
    INA_OP_COUNT
} ina_proto_op_t;

/* One header for every message: 48 bytes, naturally aligned, no padding. */
typedef struct ina_proto_hdr {
    uint32_t magic;    /*  0: INA_PROTO_MAGIC */
    uint8_t version;   /*  4: INA_PROTO_VERSION */
    uint8_t type;      /*  5: ina_proto_type_t */
    uint8_t status;    /*  6: ina_proto_status_t */
    uint8_t op;        /*  7: ina_proto_op_t (ERROR: the rejected message's type) */
    uint8_t dtype;     /*  8: ina_proto_dtype_t */
    uint8_t reserved;  /*  9: must be 0 */
    uint16_t window;   /* 10: lease size / window */
    uint32_t jid;      /* 12 */
    uint32_t rank;     /* 16: sender's rank in the job */
    uint32_t sid;      /* 20 */
    uint64_t mid;      /* 24 */
    uint32_t seg;      /* 32: Seg unit inside the lease = sid % window */
    uint32_t count;    /* 36: elements in payload, or member count */
    uint64_t arg;      /* 40: type specific, see above */
} ina_proto_hdr_t;

#ifdef __cplusplus
#define INA_STATIC_ASSERT static_assert
#else
#define INA_STATIC_ASSERT _Static_assert
#endif
INA_STATIC_ASSERT(sizeof(ina_proto_hdr_t) == 48, "ina_proto_hdr_t must be 48 bytes");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, version) == 4, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, window) == 10, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, jid) == 12, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, rank) == 16, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, sid) == 20, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, mid) == 24, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, seg) == 32, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, count) == 36, "layout");
INA_STATIC_ASSERT(offsetof(ina_proto_hdr_t, arg) == 40, "layout");

/* Fill magic/version/type, zero the rest. */
void ina_proto_init(ina_proto_hdr_t *hdr, ina_proto_type_t type);

/* Size in bytes of one element of a wire dtype; 0 if out of range. */
size_t ina_proto_dtype_size(unsigned dtype);

/* Whether MPI defines (op, dtype) and the kernels implement it:
 * every op on integer types; SUM, PROD, MIN, MAX on floating types. */
int ina_proto_op_valid(unsigned op, unsigned dtype);

/* Validate one received message: header bytes as received (hdr_len may be
 * wrong!) and the payload length. Checks magic, version, type range, reserved
 * byte, status range, per-type field ranges (window <= INA_PROTO_MAX_WINDOW,
 * seg < window and seg == sid % window for BLOCK, count <= member limit,
 * rank < INA_PROTO_MAX_MEMBERS for JOB_JOIN/JOINED/LEAVE and BLOCK,
 * op/dtype valid for BLOCK/RESULT, payload_len == count * dtype size for
 * BLOCK/RESULT, == count * 4 for JOB_CREATE, == 0 for the others).
 * Returns INA_PROTO_OK or the status that explains the rejection.
 * Never reads past hdr_len. */
ina_proto_status_t ina_proto_check(const void *hdr, size_t hdr_len, size_t payload_len);

/* Human-readable names, for logs. Never NULL. */
const char *ina_proto_type_name(unsigned type);
const char *ina_proto_status_name(unsigned status);
const char *ina_proto_op_name(unsigned op);
const char *ina_proto_dtype_name(unsigned dtype);

#ifdef __cplusplus
}
#endif

#endif /* INA_PROTO_H */

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The ranks' recovery protocol: what the members of a job tell each other,
 * over the MPI library's point-to-point layer (the component's
 * ina_peer_ops_t), to finish the calls their agent was lost in
 * (docs/ARCHITECTURE.md, "Recovery from a lost agent"). The agent never
 * sees these messages; ina_proto.h is the protocol between ranks and agent.
 *
 * Every message is one ina_peer_hdr_t, then `len` payload bytes.
 *
 *   ASK(mid)             "what do you hold of this call?", to every member;
 *   STATE(mid, ...)      the answer, once the call is over at the member:
 *                        `state` denied, complete, failed or unrecoverable,
 *                        `flags` (HOST_OK, STRUCK), `nblocks`, and as payload
 *                        three bitmaps over the call's blocks: R (it holds
 *                        the RESULT whole and can give it), I (it can give
 *                        what it sent), L (it wanted the RESULT and lacks it);
 *   FETCH(mid, sid, what)  a block's RESULT, or the BLOCK a member sent;
 *   DATA(mid, sid, what, offset, count)  the answer: the bytes, or
 *                        len INA_PEER_NONE (no payload): it cannot.
 *
 * `job` and `channel` name the job alike on every member (JIDs differ: each
 * leaf of a tree numbers its own) and the caller's channel: a message for
 * another job is not this job's to parse.
 *
 * Versions: `version` is this protocol's own, apart from ina_proto.h's. The
 * members of a job normally run one build; a message of another version is
 * dropped (logged), which leaves the call to the recovery's own limits.
 * Byte order: host order, as ina_proto.h.
 */
#ifndef INA_PEER_PROTO_H
#define INA_PEER_PROTO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INA_PEER_MAGIC 0x50414e49u /* "INAP" in memory on little endian */
#define INA_PEER_VERSION 1u        /* 1: this layout. (Before it, without a
                                      version byte, the magic was "INAR".) */
#define INA_PEER_NONE UINT32_MAX   /* DATA's len: the member cannot give it */

typedef enum ina_peer_type {
    INA_PEER_ASK = 1,
    INA_PEER_STATE = 2,
    INA_PEER_FETCH = 3,
    INA_PEER_DATA = 4,
    INA_PEER_TYPE_MAX = 4
} ina_peer_type_t;

/* STATE's state. */
typedef enum ina_peer_state {
    INA_PEER_DENIED = 1,
    INA_PEER_COMPLETE = 2,
    INA_PEER_FAILED = 3,
    INA_PEER_UNRECOVERABLE = 4
} ina_peer_state_t;

/* FETCH's and DATA's what. */
typedef enum ina_peer_what {
    INA_PEER_RESULT = 1, /* the block's RESULT */
    INA_PEER_INPUT = 2   /* the BLOCK the member sent */
} ina_peer_what_t;

/* STATE's flags. */
#define INA_PEER_F_HOST_OK 0x1u /* the member could run the host algorithm */
#define INA_PEER_F_STRUCK  0x2u /* the member had sent BLOCKs of the call to the
                                   agent, which fell silent or away, or to a tree
                                   that lost a part under the call */

typedef struct ina_peer_hdr {
    uint32_t magic;   /*  0: INA_PEER_MAGIC */
    uint8_t version;  /*  4: INA_PEER_VERSION */
    uint8_t type;     /*  5: ina_peer_type_t */
    uint8_t state;    /*  6: STATE */
    uint8_t what;     /*  7: FETCH / DATA */
    uint8_t flags;    /*  8: STATE: INA_PEER_F_* */
    uint8_t reserved[3];
    uint32_t sid;     /* 12: FETCH / DATA */
    uint32_t offset;  /* 16: DATA: the BLOCK's element offset */
    uint32_t count;   /* 20: DATA: its elements */
    uint32_t len;     /* 24: payload bytes (DATA: INA_PEER_NONE, it cannot) */
    uint32_t job;     /* 28: the job's tag, alike on every member */
    uint32_t channel; /* 32: the caller's channel (ina_peer_ops_t) */
    uint32_t pad;
    uint64_t mid;     /* 40 */
    uint64_t nblocks; /* 48: STATE */
} ina_peer_hdr_t;

#ifdef __cplusplus
static_assert(sizeof(ina_peer_hdr_t) == 56, "ina_peer_hdr_t must be 56 bytes");
#else
_Static_assert(sizeof(ina_peer_hdr_t) == 56, "ina_peer_hdr_t must be 56 bytes");
#endif

/* Fill magic, version, type and mid; zero the rest. */
void ina_peer_init(ina_peer_hdr_t *h, ina_peer_type_t type, uint64_t mid);

typedef enum ina_peer_check {
    INA_PEER_CHECK_OK = 0,
    INA_PEER_CHECK_FOREIGN,   /* not a recovery message of ours (magic): not parsed */
    INA_PEER_CHECK_VERSION,   /* ours, of another version */
    INA_PEER_CHECK_MALFORMED  /* ours, but short, of an unknown type, or with a
                                 len that is not its payload's */
} ina_peer_check_t;

/* Check one received message of `len` bytes (any alignment; never reads
 * past len). On OK, *out holds its header. */
ina_peer_check_t ina_peer_check(const void *msg, size_t len, ina_peer_hdr_t *out);

#ifdef __cplusplus
}
#endif

#endif /* INA_PEER_PROTO_H */

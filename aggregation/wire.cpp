// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#include "wire.h"

namespace ina::agg {

namespace {

// The RESULT of block `blk` to `rank` (count and flags set by the caller).
ina_proto_hdr_t result_hdr(const ina_proto_hdr_t &blk, uint32_t rank)
{
    ina_proto_hdr_t r;
    ina_proto_init(&r, INA_PROTO_RESULT);
    r.coll = blk.coll;
    r.op = blk.op;
    r.dtype = blk.dtype;
    r.window = blk.window;
    r.ahead = blk.ahead;
    r.jid = blk.jid;
    r.sid = blk.sid;
    r.mid = blk.mid;
    r.seg = blk.seg;
    r.block_elems = blk.block_elems;
    r.arg = blk.arg;
    r.done = blk.done;
    r.rank = rank;
    return r;
}

} // namespace

void WireSink::job_opened(Member &to, const ina_proto_hdr_t &req, uint32_t jid, uint32_t window,
                          uint32_t ahead, ina_proto_status_t status)
{
    ina_proto_hdr_t r;
    ina_proto_init(&r, INA_PROTO_JOB_OPENED);
    r.status = static_cast<uint8_t>(status);
    r.jid = jid;
    r.rank = req.rank;
    r.window = static_cast<uint16_t>(window);
    r.ahead = static_cast<uint16_t>(ahead);
    r.arg = req.arg;
    send(to, r, {}, 0);
}

void WireSink::decision(Member &to, uint32_t rank, const Decision &d)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, d.grant ? INA_PROTO_GRANT : INA_PROTO_DENY);
    h.status = static_cast<uint8_t>(d.status);
    h.jid = d.jid;
    h.mid = d.mid;
    h.window = static_cast<uint16_t>(d.window);
    h.ahead = static_cast<uint16_t>(d.ahead);
    h.rank = rank;
    send(to, h, {}, 0);
}

void WireSink::result(Member &to, uint32_t rank, const ina_proto_hdr_t &blk, BufRef payload,
                      size_t len)
{
    ina_proto_hdr_t r = result_hdr(blk, rank);
    r.count = blk.block_elems;
    send(to, r, std::move(payload), len);
}

void WireSink::ack(Member &to, uint32_t rank, const ina_proto_hdr_t &blk)
{
    ina_proto_hdr_t r = result_hdr(blk, rank);
    r.flags = INA_PROTO_F_ACK_ONLY; // count 0: the ACK of the member's block, no payload
    send(to, r, {}, 0);
}

void WireSink::error(Member &to, const ina_proto_hdr_t &req, ina_proto_status_t status,
                     const char *, bool in_flight)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_ERROR);
    h.status = static_cast<uint8_t>(status);
    h.flags = in_flight ? INA_PROTO_F_IN_FLIGHT : 0;
    ina_proto_error_set_rejected(&h, req.type);
    h.jid = req.jid;
    h.rank = req.rank;
    h.mid = req.mid;
    h.sid = req.sid;
    if (status == INA_PROTO_ERR_VERSION) {
        // The refused peer learns what it could speak here ("Versions").
        ina_proto_refusal_set_range(&h, INA_PROTO_VERSION_MIN, INA_PROTO_VERSION);
    }
    send(to, h, {}, 0);
}

void serve(Aggregator &agg, WireSink &out, Member &from, const ina_proto_hdr_t &h,
           const void *payload, size_t len, BufRef *own)
{
    switch (h.type) {
    case INA_PROTO_HELLO: {
        uint64_t rndv_blocks = 0;
        if (ina_proto_status_t st = out.hello(from, h, &rndv_blocks); st != INA_PROTO_OK) {
            agg.reject(&from, h, st, "HELLO refused by the transport");
            break;
        }
        ina_proto_hdr_t ack;
        ina_proto_init(&ack, INA_PROTO_HELLO_ACK);
        ina_proto_hello_ack_set_agent(&ack, agg.max_window(), agg.seg_bytes(), rndv_blocks);
        out.send(from, ack, {}, 0);
        break;
    }
    case INA_PROTO_JOB_OPEN:
        agg.job_open(from, h, payload, len);
        break;
    case INA_PROTO_JOB_LEAVE:
        agg.job_leave(from, h);
        break;
    case INA_PROTO_BLOCK:
        agg.block(from, h, payload, own);
        break;
    case INA_PROTO_CALL_READY:
        agg.call_ready(from, h);
        break;
    case INA_PROTO_CALL_ABORT:
        agg.call_abort(from, h);
        break;
    case INA_PROTO_HOST_COST:
    case INA_PROTO_CALL_TIME:
        agg.call_word(from, h);
        break;
    case INA_PROTO_PING: { // liveness: answered whatever the calls are doing
        ina_proto_hdr_t pong;
        ina_proto_init(&pong, INA_PROTO_PONG);
        pong.arg = h.arg;
        out.send(from, pong, {}, 0);
        break;
    }
    case INA_PROTO_PONG: // a child agent's answer to our probe: its arrival is all it says
        break;
    default: // agent-to-client types have no business here
        agg.reject(&from, h, INA_PROTO_ERR_MALFORMED, "not a client-to-agent message");
        break;
    }
}

} // namespace ina::agg

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The aggregation core on the wire: what every transport that speaks the ina
// protocol to members (ina-switchd over UCX; an in-process link in the tests;
// later a node stage or an agent's uplink) shares.
//   WireSink  a Sink that turns each thing the core says into one protocol
//             message (common/ina_proto.h) and hands it to send();
//   serve()   routes one validated message from a member into the core.
#ifndef INA_AGG_WIRE_H
#define INA_AGG_WIRE_H

#include <cstddef>

#include "aggregator.h"
#include "ina_proto.h"
#include "sink.h"

namespace ina::agg {

class WireSink : public Sink {
public:
    // One message to `to`; `payload` (empty: none) stays referenced until the
    // transport has sent its `len` bytes.
    virtual void send(Member &to, const ina_proto_hdr_t &h, BufRef payload, size_t len) = 0;
    // A member said HELLO (`h.count`: its stream segment; `h.arg`: from what
    // size on it takes RESULT payloads by rendezvous, 0 never). Returns OK
    // and, in *rndv_blocks, from what size on this transport takes BLOCK
    // payloads by rendezvous (0: never), for the HELLO_ACK; or why the
    // member cannot be served (it then gets an ERROR). A transport without
    // rendezvous or segments keeps the default.
    virtual ina_proto_status_t hello(Member &from, const ina_proto_hdr_t &h,
                                     uint64_t *rndv_blocks)
    {
        (void) from;
        (void) h;
        *rndv_blocks = 0;
        return INA_PROTO_OK;
    }

    void job_opened(Member &to, const ina_proto_hdr_t &req, uint32_t jid, uint32_t window,
                    uint32_t ahead, ina_proto_status_t status) final;
    void decision(Member &to, uint32_t rank, const Decision &d) final;
    void result(Member &to, uint32_t rank, const ina_proto_hdr_t &blk, BufRef payload,
                size_t len) final;
    void ack(Member &to, uint32_t rank, const ina_proto_hdr_t &blk) final;
    void error(Member &to, const ina_proto_hdr_t &req, ina_proto_status_t status,
               const char *why, bool in_flight) final;
};

// A message from `from` that passed ina_proto_check: HELLO is answered with
// the aggregator's window and Seg size, JOB_OPEN/LEAVE and BLOCK go to
// the aggregator, anything else is refused. `own`: the pool buffer a BLOCK's
// payload was received into, if it was (Aggregator::block). May throw
// std::bad_alloc.
void serve(Aggregator &agg, WireSink &out, Member &from, const ina_proto_hdr_t &h,
           const void *payload, size_t len, BufRef *own = nullptr);

} // namespace ina::agg

#endif

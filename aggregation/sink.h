// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Everything the aggregation core says to members goes through a Sink, which
// the transport implements (the agent queues UCX sends; a test records). The
// core calls it synchronously from its entry points and never expects a
// callback into the core from inside it. Messages to one member are emitted
// in the order the member must see them (a GRANT before the RESULTs of the
// call, the RESULT of a block before anything about a later block).
#ifndef INA_AGG_SINK_H
#define INA_AGG_SINK_H

#include <cstddef>
#include <cstdint>

#include "ina_proto.h"
#include "job.h"
#include "seg_pool.h"

namespace ina::agg {

// A call's decision, as every member of the job hears it (once per member).
struct Decision {
    uint32_t jid;
    uint64_t mid;
    uint32_t window;           // GRANT: the call's lease; DENY: the job's window
    bool grant;                // GRANT, else DENY
    ina_proto_status_t status; // OK for a grant, the reason of a deny
    uint32_t ahead = 0;        // for the job's next call (ina_proto.h "Leases")
};

class Sink {
public:
    virtual ~Sink() = default;

    // JOB_OPEN answered: the job's `jid` (0 if refused), `window` and
    // `ahead` for its first call, OK or why not.
    virtual void job_opened(Member &to, const ina_proto_hdr_t &req, uint32_t jid, uint32_t window,
                            uint32_t ahead, ina_proto_status_t status) = 0;
    // GRANT or DENY of a call to member `rank`.
    virtual void decision(Member &to, uint32_t rank, const Decision &d) = 0;
    // Block complete; `blk` is the header of the block that completed it (all
    // members agree on jid, mid, sid, seg, window, coll, op, dtype, block_elems
    // and arg). result(): the block's `len` bytes to member `rank`, which
    // asked for them; the sink keeps `payload` until it is sent (empty for an
    // empty block). ack(): only the acknowledgement.
    virtual void result(Member &to, uint32_t rank, const ina_proto_hdr_t &blk, BufRef payload,
                        size_t len) = 0;
    virtual void ack(Member &to, uint32_t rank, const ina_proto_hdr_t &blk) = 0;
    // A message of `to` was refused (`req`: its header), or a call `to` takes
    // part in was aborted (`req`: a BLOCK header naming jid, rank, mid;
    // in_flight: it was under way when the tree lost a part under it,
    // INA_PROTO_F_IN_FLIGHT). The core has counted and logged it already;
    // `why` is for the sink's own use.
    virtual void error(Member &to, const ina_proto_hdr_t &req, ina_proto_status_t status,
                       const char *why, bool in_flight) = 0;
};

} // namespace ina::agg

#endif

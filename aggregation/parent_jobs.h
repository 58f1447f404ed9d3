// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A leaf agent's jobs at its parent agent (docs/HIERARCHY.md), whatever
// carries the messages: the Uplink the core talks to, and what the parent
// says back. The leaf is one member of each of its tree jobs at the parent:
// JOB_OPEN as member `group` of `groups` with INA_PROTO_F_CHILDREN (its JID
// as the cookie), then per call CALL_READY or CALL_ABORT and one BLOCK per
// completed block, all addressed to the parent's JID as the leaf's rank
// there; what the parent answers (JOB_OPENED, GRANT, DENY, RESULT, ERROR)
// goes back into the core by the leaf's JID. The transport (ina-switchd's
// ParentLink; fuzz_serve's simulated parent) keeps the connection, its HELLO
// and liveness, and posts what this class hands it. Single-threaded.
#ifndef INA_AGG_PARENT_JOBS_H
#define INA_AGG_PARENT_JOBS_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "aggregator.h"
#include "ina_proto.h"
#include "job.h"
#include "uplink.h"

namespace ina::agg {

class ParentJobs final : public Uplink {
public:
    // The way up. Each call queues one message, addressed and complete; it
    // may throw std::bad_alloc when it cannot queue it (as an Uplink call
    // may: the agent survives it).
    class Wire {
    public:
        virtual ~Wire() = default;
        // JOB_OPEN (with its payload, copied), JOB_LEAVE, CALL_READY or
        // CALL_ABORT (len 0).
        virtual void send(const ina_proto_hdr_t &h, const uint8_t *payload, size_t len) = 0;
        // A BLOCK: p.hdr as the parent's job takes it; its payload is p.len
        // bytes at p.buf.data() + p.offset, kept alive by p.buf until sent.
        virtual void send_block(Partial p) = 0;
    };

    // `parent`: how the logs name the parent (its address).
    ParentJobs(Aggregator &agg, Wire &wire, std::string parent);
    ParentJobs(const ParentJobs &) = delete;
    ParentJobs &operator=(const ParentJobs &) = delete;

    // A message from the parent that passed ina_proto_check, other than the
    // transport's own (HELLO_ACK, PING, PONG: dropped here). Whether it was
    // about a job of this leaf's and went into the core (JOB_OPENED: for a
    // job waiting for it, by its cookie; the others: by the parent's JID);
    // false: dropped without effect. May throw std::bad_alloc (the core's,
    // or the Wire's for a JOB_LEAVE).
    bool deliver(const ina_proto_hdr_t &h, const void *data, size_t len);
    // The connection to the parent is gone: its JIDs meant something on that
    // connection only. The core fails the calls and jobs over several leaves
    // (Aggregator::uplink_lost); a new connection starts with no job.
    void lost();

    // agg::Uplink
    void open(const Job &job) override;
    void leave(const Job &job) override;
    void ready(const Job &job, uint64_t mid, const Call &call) override;
    void abort(const Job &job, uint64_t mid, ina_proto_status_t why) override;
    void partial(const Job &job, Partial p) override;

private:
    // A leaf job's job at the parent.
    struct UpJob {
        uint32_t jid = 0;     // the parent's (0 until JOB_OPENED)
        uint32_t rank = 0;    // this leaf's index there
        uint16_t window = 0;  // the parent's window
        bool leaving = false; // freed here before the parent answered
    };

    // Fill jid/rank/window of a message about leaf job `leaf_jid`; false if
    // its parent job is not open.
    bool address(uint32_t leaf_jid, ina_proto_hdr_t &h) const;
    // deliver() of a JOB_OPENED, by its cookie (the leaf's JID).
    bool opened(const ina_proto_hdr_t &h);

    Aggregator &agg_;
    Wire &wire_;
    std::string parent_;
    std::map<uint32_t, UpJob> up_;      // by the leaf's JID
    std::map<uint32_t, uint32_t> down_; // the parent's JID -> the leaf's
    std::vector<uint8_t> open_bytes_;   // JOB_OPEN's payload (kept: its capacity)
};

} // namespace ina::agg

#endif

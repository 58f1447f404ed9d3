// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A leaf's side of a tree of agents (docs/HIERARCHY.md, "Levels and roles"):
// what the aggregation core asks of the link to its parent agent, for the jobs
// whose members talk to several leaves (Job::uplinked). The leaf is one member
// of the job of the same key at the parent; agg::ParentJobs (parent_jobs.h,
// under ina-switchd's ParentLink and fuzz_serve; test_tree has an in-process
// link of its own) maps the leaf's JIDs to the parent's and answers through
// the Aggregator's uplink_* entry points. Like the Sink, the core calls it
// synchronously and expects no call back from inside.
#ifndef INA_AGG_UPLINK_H
#define INA_AGG_UPLINK_H

#include <cstddef>
#include <cstdint>

#include "ina_proto.h"
#include "job.h"
#include "seg_pool.h"

namespace ina::agg {

class Uplink {
public:
    virtual ~Uplink() = default;

    // Open the job at the parent: JOB_OPEN with job.key(), as member
    // job.tree().group of job.tree().groups (one node each), window
    // job.asked_window(), INA_PROTO_F_CHILDREN. Answered later by
    // Aggregator::uplink_opened (also on failure).
    virtual void open(const Job &job) = 0;
    // The leaf's job is gone: leave the parent's.
    virtual void leave(const Job &job) = 0;
    // CALL_READY: this leaf holds a lease for call `mid` and will send its
    // blocks (coll/op/dtype/total as the call's).
    virtual void ready(const Job &job, uint64_t mid, const Call &call) = 0;
    // CALL_ABORT: this leaf will not take part in call `mid` (why: the
    // reason its members were told, or the loss of one of them).
    virtual void abort(const Job &job, uint64_t mid, ina_proto_status_t why) = 0;
    // One completed block of the leaf's call, as this leaf's BLOCK at the
    // parent: `p.hdr` carries mid, sid, coll, op, dtype, block_elems, arg,
    // offset, count and WANT_RESULT (the transport fills jid, rank, seg and
    // window for the parent's job); the payload is p.len bytes at
    // p.buf.data() + p.offset, kept alive by p.buf until sent. The leaf sends
    // it only when the parent's slot for its SID is free.
    virtual void partial(const Job &job, Partial p) = 0;
};

} // namespace ina::agg

#endif

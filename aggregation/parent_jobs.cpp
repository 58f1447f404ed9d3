// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A leaf's jobs at its parent agent (parent_jobs.h).
#include "parent_jobs.h"

#include <cinttypes>
#include <utility>

#include "log.h"

namespace ina::agg {

ParentJobs::ParentJobs(Aggregator &agg, Wire &wire, std::string parent)
    : agg_(agg), wire_(wire), parent_(std::move(parent))
{
}

bool ParentJobs::address(uint32_t leaf_jid, ina_proto_hdr_t &h) const
{
    auto it = up_.find(leaf_jid);
    if (it == up_.end() || it->second.jid == 0) {
        return false;
    }
    h.jid = it->second.jid;
    h.rank = it->second.rank;
    if (h.type != INA_PROTO_JOB_LEAVE && h.type != INA_PROTO_CALL_ABORT) {
        h.window = it->second.window;
    }
    return true;
}

void ParentJobs::lost()
{
    up_.clear();
    down_.clear();
    agg_.uplink_lost();
}

// ---------------------------------------------------------------- agg::Uplink

void ParentJobs::open(const Job &job)
{
    const uint32_t groups = job.tree().groups;
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_JOB_OPEN);
    h.rank = job.tree().group;
    h.count = groups;
    h.window = static_cast<uint16_t>(job.asked_window());
    h.arg = job.jid(); // the cookie: JOB_OPENED names the leaf's job
    ina_proto_job_open_set_tenant(&h, job.tenant());
    h.flags = INA_PROTO_F_CHILDREN;
    open_bytes_.assign(job.key().begin(), job.key().end());
    open_bytes_.insert(open_bytes_.end(), job.cap().begin(), job.cap().end()); // the members' own
    // The members: one node per leaf.
    for (uint32_t i = 0; i < groups; ++i) {
        const auto *b = reinterpret_cast<const uint8_t *>(&i);
        open_bytes_.insert(open_bytes_.end(), b, b + sizeof(i));
    }
    // A deeper tree: the parent's own place, and the levels above it.
    const auto &above = job.tree().above;
    if (!above.empty()) {
        ina_proto_job_open_set_tree(&h, above[0].groups, above[0].group);
        const auto *b = reinterpret_cast<const uint8_t *>(above.data() + 1);
        open_bytes_.insert(open_bytes_.end(), b,
                           b + (above.size() - 1) * sizeof(ina_proto_tree_level_t));
    }
    wire_.send(h, open_bytes_.data(), open_bytes_.size());
    up_[job.jid()] = UpJob{0, job.tree().group, 0, false};
}

void ParentJobs::leave(const Job &job)
{
    auto it = up_.find(job.jid());
    if (it == up_.end()) {
        return;
    }
    if (it->second.jid == 0) {
        it->second.leaving = true; // leave once the parent answered
        return;
    }
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_JOB_LEAVE);
    address(job.jid(), h);
    wire_.send(h, nullptr, 0);
    down_.erase(it->second.jid);
    up_.erase(it);
}

void ParentJobs::ready(const Job &job, uint64_t mid, const Call &call)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_CALL_READY);
    h.mid = mid;
    h.coll = call.coll;
    h.op = call.op;
    h.dtype = call.dtype;
    h.arg = call.total;
    if (address(job.jid(), h)) {
        wire_.send(h, nullptr, 0);
    }
}

void ParentJobs::abort(const Job &job, uint64_t mid, ina_proto_status_t why)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_CALL_ABORT);
    h.mid = mid;
    h.status = static_cast<uint8_t>(why);
    if (address(job.jid(), h)) {
        wire_.send(h, nullptr, 0);
    }
}

void ParentJobs::partial(const Job &job, Partial p)
{
    if (!address(job.jid(), p.hdr)) {
        return;
    }
    p.hdr.seg = p.hdr.sid % p.hdr.window;
    wire_.send_block(std::move(p));
}

// ---------------------------------------------------------------- from the parent

bool ParentJobs::opened(const ina_proto_hdr_t &h)
{
    const auto leaf_jid = static_cast<uint32_t>(h.arg);
    auto it = up_.find(leaf_jid);
    if (it == up_.end() || it->second.jid != 0) {
        return false;
    }
    if (h.status != INA_PROTO_OK || h.jid == 0) {
        up_.erase(it);
        agg_.uplink_opened(leaf_jid, static_cast<ina_proto_status_t>(h.status), 0);
        return true;
    }
    it->second.jid = h.jid;
    it->second.window = h.window;
    down_[h.jid] = leaf_jid;
    if (it->second.leaving) {
        ina_proto_hdr_t l;
        ina_proto_init(&l, INA_PROTO_JOB_LEAVE);
        address(leaf_jid, l);
        wire_.send(l, nullptr, 0);
        down_.erase(h.jid);
        up_.erase(it);
        return true;
    }
    agg_.uplink_opened(leaf_jid, INA_PROTO_OK, h.window);
    return true;
}

bool ParentJobs::deliver(const ina_proto_hdr_t &h, const void *data, size_t len)
{
    if (h.type == INA_PROTO_JOB_OPENED) {
        return opened(h);
    }
    auto d = down_.find(h.jid);
    if (d == down_.end()) {
        INA_DEBUG("parent: %s for job %u, which is not ours (any more)",
                  ina_proto_type_name(h.type), h.jid);
        return false;
    }
    switch (h.type) {
    case INA_PROTO_GRANT:
    case INA_PROTO_DENY:
        agg_.uplink_decision(d->second, h.mid, h.type == INA_PROTO_GRANT,
                             static_cast<ina_proto_status_t>(h.status));
        return true;
    case INA_PROTO_RESULT:
        agg_.uplink_result(d->second, h, data, len);
        return true;
    case INA_PROTO_ERROR:
        INA_WARN("parent %s refused our %s of job %u mid %" PRIu64 ": %s", parent_.c_str(),
                 ina_proto_type_name(ina_proto_error_rejected(&h)), d->second, h.mid,
                 ina_proto_status_name(h.status));
        agg_.uplink_error(d->second, h.mid, static_cast<ina_proto_status_t>(h.status),
                          (h.flags & INA_PROTO_F_IN_FLIGHT) != 0);
        return true;
    default:
        INA_DEBUG("parent: unexpected %s", ina_proto_type_name(h.type));
        return false;
    }
}

} // namespace ina::agg

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The node stage's calls in shared memory (ina_node.h): where a node's
 * contributions are combined.
 *
 * The layout of the segment and the step counters are in node_group.h.
 * A LocalOp (every member on this node) runs one step at a time: copy in,
 * fold (every rank all of a small step; shard k by local rank k of a large
 * one), copy out.
 */
#include "ina_node.h"
#include "node_group.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <atomic>
#include <cstring>
#include <deque>
#include <new>
#include <string>
#include <vector>

#include "ina_proto.h"
#include "ina_reduce.h"
#include "shm_segment.h"

namespace ina::node {

namespace {

enum class Phase { Free, In, Arrived, Reduce, Reduced, Out };

} // namespace

// A call of a one-node group.
struct LocalOp final : ina_node_op {
    size_t es = 1;          // bytes per element stepped over
    uint64_t total = 0;     // elements (bytes for bcast/allgather) cut into steps
    uint64_t per_step = 0;  // elements per step
    uint64_t nsteps = 0, k = 0;
    uint64_t my_lo = 0, my_hi = 0; // reduce_scatter: this rank's elements
    uint64_t s = 0;         // the current step's number
    Phase phase = Phase::Free;

    uint64_t off() const { return k * per_step; }
    uint64_t len() const { return std::min(per_step, total - off()); }
    bool small() const { return len() * es <= g->small; }

    // Fold elements [lo, hi) of the step (relative to its start) of every
    // rank's slot, in local rank order, into dst.
    void fold(char *dst, uint64_t lo, uint64_t hi) const
    {
        if (hi <= lo) {
            return;
        }
        size_t bytes = (hi - lo) * es;
        std::memcpy(dst, g->slot(s, 0) + lo * es, bytes);
        for (uint32_t i = 1; i < g->L; ++i) {
            ina_reduce(d.op, d.dtype, dst, g->slot(s, i) + lo * es, hi - lo);
        }
    }
    // The part of this step that is this rank's (reduce_scatter), as
    // [lo, hi) relative to the step's start; empty if none.
    void my_part(uint64_t &lo, uint64_t &hi) const
    {
        uint64_t a = std::max(off(), my_lo), b = std::min(off() + len(), my_hi);
        lo = a - off();
        hi = b > a ? b - off() : lo;
    }
    char *rbuf_at_elem(uint64_t global) const
    {
        return static_cast<char *>(d.rbuf) + global * es;
    }

    void begin_step()
    {
        s = ++g->last_step;
        phase = Phase::Free;
    }
    void end_step()
    {
        g->lines[g->me].released.store(s, std::memory_order_release);
        if (++k == nsteps) {
            done = true;
        } else {
            begin_step();
        }
    }
    bool advance() override;
    bool restart() override
    {
        k = 0;
        s = 0;
        phase = Phase::Free;
        done = nsteps == 0;
        decided = true;
        cqe = ina_cqe_t{};
        recovered = false;
        return true;
    }
};

// Run the call's current step as far as the other ranks allow; true if it
// moved.
bool LocalOp::advance()
{
    if (s == 0) {
        begin_step();
    }
    ina_node_group &G = *g;
    const uint32_t me = G.me, L = G.L;
    RankLine &mine = G.lines[me];
    bool moved = false;

    while (!done) {
        switch (phase) {
        case Phase::Free: {
            // Writers wait until every rank is done with this set's previous use.
            bool writes = d.coll == INA_COLL_BCAST ? me == d.root : d.coll != INA_COLL_BARRIER;
            if (writes && s > 2 && !G.all_reached(&RankLine::released, s - 2)) {
                return moved;
            }
            phase = Phase::In;
            [[fallthrough]];
        }
        case Phase::In: {
            const uint64_t o = off(), n = len();
            if (d.coll == INA_COLL_BCAST) {
                if (me == d.root) {
                    std::memcpy(G.result(s), rbuf_at_elem(o), n);
                    mine.arrived.store(s, std::memory_order_release);
                    end_step(); // the root reads nothing back
                    moved = true;
                    continue;
                }
            } else if (d.coll == INA_COLL_ALLGATHER) {
                const char *src = d.sbuf != nullptr
                                      ? static_cast<const char *>(d.sbuf)
                                      : static_cast<const char *>(d.rbuf) + me * d.count;
                std::memcpy(G.slot(s, me), src + o, n);
                mine.arrived.store(s, std::memory_order_release);
            } else if (d.coll == INA_COLL_BARRIER) {
                mine.arrived.store(s, std::memory_order_release);
            } else {
                std::memcpy(G.slot(s, me), static_cast<const char *>(d.sbuf) + o * es, n * es);
                mine.arrived.store(s, std::memory_order_release);
                if (d.coll == INA_COLL_REDUCE && me != d.root && small()) {
                    end_step(); // the root folds it all
                    moved = true;
                    continue;
                }
            }
            moved = true;
            phase = Phase::Arrived;
            [[fallthrough]];
        }
        case Phase::Arrived: {
            bool ready = d.coll == INA_COLL_BCAST
                             ? G.lines[d.root].arrived.load(std::memory_order_acquire) >= s
                             : G.all_reached(&RankLine::arrived, s);
            if (!ready) {
                return moved;
            }
            moved = true;
            phase = is_reduction(d.coll) && !small() ? Phase::Reduce : Phase::Out;
            continue;
        }
        case Phase::Reduce: {
            // Node-level reduce-scatter: this rank folds shard `me` of the step.
            const uint64_t n = len();
            const uint64_t lo = n * me / L, hi = n * (me + 1) / L;
            fold(G.result(s) + lo * es, lo, hi);
            mine.reduced.store(s, std::memory_order_release);
            moved = true;
            if (d.coll == INA_COLL_REDUCE && me != d.root) {
                end_step();
                continue;
            }
            phase = Phase::Reduced;
            [[fallthrough]];
        }
        case Phase::Reduced:
            if (!G.all_reached(&RankLine::reduced, s)) {
                return moved;
            }
            moved = true;
            phase = Phase::Out;
            [[fallthrough]];
        case Phase::Out: {
            const uint64_t o = off(), n = len();
            const bool sm = small();
            switch (d.coll) {
            case INA_COLL_ALLREDUCE:
            case INA_COLL_REDUCE:
                if (sm) {
                    fold(rbuf_at_elem(o), 0, n);
                } else {
                    std::memcpy(rbuf_at_elem(o), G.result(s), n * es);
                }
                break;
            case INA_COLL_REDUCE_SCATTER: {
                uint64_t lo, hi;
                my_part(lo, hi);
                char *dst = rbuf_at_elem(o + lo - my_lo);
                if (sm) {
                    fold(dst, lo, hi);
                } else if (hi > lo) {
                    std::memcpy(dst, G.result(s) + lo * es, (hi - lo) * es);
                }
                break;
            }
            case INA_COLL_BCAST:
                std::memcpy(rbuf_at_elem(o), G.result(s), n);
                break;
            case INA_COLL_ALLGATHER:
                for (uint32_t i = 0; i < L; ++i) {
                    if (i != me || d.sbuf != nullptr) {
                        std::memcpy(static_cast<char *>(d.rbuf) + i * d.count + o,
                                    G.slot(s, i), n);
                    }
                }
                break;
            default: // barrier: nothing to move
                break;
            }
            moved = true;
            end_step();
            continue;
        }
        }
    }
    return moved;
}

} // namespace ina::node

int ina_node_group::progress()
{
    int moved = 0;
    while (!queue.empty()) {
        ina_node_op *op = queue.front();
        moved |= op->advance() ? 1 : 0;
        if (!op->done) {
            break;
        }
        queue.pop_front();
    }
    return moved;
}

extern "C" {

size_t ina_node_segment_bytes(uint32_t nlocal, size_t chunk_bytes)
{
    return ina::node::data_offset(nlocal) + 2 * (static_cast<size_t>(nlocal) + 1) * chunk_bytes;
}

size_t ina_node_chunk_bytes(uint32_t nlocal, size_t segment_max, size_t chunk_max)
{
    size_t head = ina::node::data_offset(nlocal);
    if (nlocal == 0 || segment_max <= head) {
        return 0;
    }
    size_t chunk = std::min(chunk_max, (segment_max - head) / (2 * (static_cast<size_t>(nlocal) + 1)));
    return chunk / 64 * 64;
}

std::vector<ina::node::Region> ina_node_group::regions(const int32_t *numa) const
{
    std::vector<ina::node::Region> out;
    const size_t data = ina::node::data_offset(L);
    for (uint32_t set = 0; set < 2; ++set) {
        for (uint32_t i = 0; i < L; ++i) {
            out.push_back({data + (set * L + i) * chunk, chunk, numa[i]});
        }
    }
    // The result area: shares of one step, each folded (and, on several
    // nodes, sent and taken back) by one rank.
    const uint32_t shares = nnodes > 1 ? nstreams : L;
    for (uint32_t set = 0; set < 2; ++set) {
        const size_t area = data + (2 * static_cast<size_t>(L) + set) * chunk;
        for (uint32_t k = 0; k < shares; ++k) {
            const size_t lo = chunk * k / shares, hi = chunk * (k + 1) / shares;
            out.push_back({area + lo, hi - lo, numa[nnodes > 1 ? leader[k] : k]});
        }
    }
    return out;
}

ina_status_t ina_node_group_open(const ina_node_config_t *cfg, ina_node_group_t **out,
                                 char *err, size_t errlen)
{
    auto say = [&](const std::string &why) {
        if (err != nullptr && errlen > 0) {
            std::snprintf(err, errlen, "%s", why.c_str());
        }
    };
    if (cfg == nullptr || out == nullptr || cfg->name == nullptr || cfg->nlocal == 0 ||
        cfg->index >= cfg->nlocal || cfg->chunk_bytes < 64 || cfg->chunk_bytes % 64 != 0) {
        say("invalid node group configuration");
        return INA_ERR_INVALID;
    }
    try {
        auto g = std::make_unique<ina_node_group>();
        std::string why;
        g->L = cfg->nlocal;
        g->me = cfg->index;
        g->chunk = cfg->chunk_bytes;
        g->small = cfg->small_bytes;
        if (!g->set_layout(*cfg, why)) {
            say(why);
            return INA_ERR_INVALID;
        }
        ina::node::Segment::Place place;
        if (cfg->numa != nullptr) {
            place = [&g, cfg](void *base, size_t bytes) {
                std::string failed;
                size_t n = ina::node::bind_regions(base, bytes, g->regions(cfg->numa), failed);
                g->placement = n > 0 ? std::to_string(n) + " parts bound to their ranks' NUMA nodes"
                                     : "not bound";
                if (!failed.empty()) {
                    g->placement += " (" + failed + ")";
                }
                return n > 0;
            };
        }
        size_t bytes = ina_node_segment_bytes(cfg->nlocal, cfg->chunk_bytes);
        auto r = g->seg.open(cfg->name, bytes, cfg->nlocal, cfg->attach_timeout_ms, why, place);
        if (r != ina::node::Segment::Result::Ok) {
            say(why);
            return r == ina::node::Segment::Result::NoMemory ? INA_ERR_NOMEM : INA_ERR_UNREACHABLE;
        }
        if (g->seg.unplaced()) {
            g->placement += ", then undone: reserving the pages there failed, so they lie "
                            "wherever the kernel had room";
        }
        if (g->placement.empty()) {
            g->placement = cfg->numa == nullptr ? "not placed (no locality)"
                                                : "placed by the rank that created it";
        }
        char *base = static_cast<char *>(g->seg.base());
        g->lines = reinterpret_cast<ina::node::RankLine *>(base + sizeof(ina::node::SegmentHeader));
        g->data = base + ina::node::data_offset(cfg->nlocal);
        *out = g.release();
        return INA_OK;
    } catch (const std::bad_alloc &) {
        say("out of memory");
        return INA_ERR_NOMEM;
    } catch (const std::exception &e) {
        say(e.what());
        return INA_ERR_INVALID;
    }
}

const char *ina_node_group_placement(const ina_node_group_t *group)
{
    return group->placement.c_str();
}

void ina_node_group_close(ina_node_group_t *group)
{
    delete group;
}

int ina_node_shm_path(const char *name, char *buf, size_t len)
{
    int n = std::snprintf(buf, len, "/dev/shm%s", name);
    return n >= 0 && static_cast<size_t>(n) < len ? 0 : -1;
}

ina_status_t ina_node_post(ina_node_group_t *g, const ina_coll_desc_t *desc, ina_node_op_t **out)
{
    if (g == nullptr || desc == nullptr || out == nullptr) {
        return INA_ERR_INVALID;
    }
    const ina_coll_desc_t &d = *desc;
    bool rooted = d.coll == INA_COLL_REDUCE || d.coll == INA_COLL_BCAST;
    if ((rooted && d.root >= g->size) ||
        (d.coll == INA_COLL_REDUCE_SCATTER && d.recvcounts == nullptr)) {
        return INA_ERR_INVALID;
    }
    if (g->nnodes > 1) {
        ina_status_t rc = INA_OK;
        ina_node_op *op = ina::node::make_uplink_op(g, d, &rc);
        if (op == nullptr) {
            return rc;
        }
        *out = op;
        return INA_OK;
    }
    try {
        auto op = std::make_unique<ina::node::LocalOp>();
        op->g = g;
        op->d = d;
        switch (d.coll) {
        case INA_COLL_ALLREDUCE:
        case INA_COLL_REDUCE:
        case INA_COLL_REDUCE_SCATTER:
            if (!ina_proto_op_valid(d.op, d.dtype) || d.op == INA_OP_REPLACE) {
                return INA_ERR_INVALID;
            }
            op->es = ina_proto_dtype_size(d.dtype);
            op->total = d.count;
            if (d.coll == INA_COLL_REDUCE_SCATTER) {
                op->total = 0;
                for (uint32_t i = 0; i < g->L; ++i) {
                    if (i == g->me) {
                        op->my_lo = op->total;
                        op->my_hi = op->total + d.recvcounts[i];
                    }
                    op->total += d.recvcounts[i];
                }
                op->d.recvcounts = nullptr; // not needed any more, and may go
            }
            break;
        case INA_COLL_BCAST:
        case INA_COLL_ALLGATHER:
            op->es = 1;
            op->total = d.count;
            break;
        case INA_COLL_BARRIER:
            op->es = 1;
            op->total = 1;
            break;
        default:
            return INA_ERR_INVALID;
        }
        op->per_step = g->chunk / op->es;
        op->nsteps = op->total == 0 ? 0 : (op->total + op->per_step - 1) / op->per_step;
        if (op->nsteps == 0) {
            op->done = true; // moves nothing, on every rank alike
        } else {
            g->queue.push_back(op.get());
        }
        *out = op.release();
        return INA_OK;
    } catch (const std::bad_alloc &) {
        return INA_ERR_NOMEM;
    }
}

ina_status_t ina_node_repost(ina_node_group_t *g, ina_node_op_t *op)
{
    if (g == nullptr || op == nullptr || op->g != g || !op->done || !op->restart()) {
        return INA_ERR_INVALID;
    }
    if (!op->done) {
        try {
            g->queue.push_back(op);
        } catch (const std::bad_alloc &) {
            op->done = true;
            return INA_ERR_NOMEM;
        }
    }
    return INA_OK;
}

int ina_node_decision(ina_node_op_t *op, ina_cqe_t *cqe)
{
    // Progress even when decided at once (a LocalOp): the first step goes
    // in now, so the other ranks can go on while this one computes.
    if (!op->done) {
        op->g->progress();
    }
    if (!op->decided && !op->done) {
        return 0;
    }
    if (cqe != nullptr) {
        *cqe = op->cqe;
    }
    return 1;
}

int ina_node_test(ina_node_op_t *op, ina_cqe_t *cqe)
{
    if (!op->done) {
        op->g->progress();
    }
    if (!op->done) {
        return 0;
    }
    if (cqe != nullptr) {
        *cqe = op->cqe;
    }
    return 1;
}

int ina_node_op_recovered(const ina_node_op_t *op)
{
    return op != nullptr && op->recovered ? 1 : 0;
}

void ina_node_group_set_job(ina_node_group_t *group, ina_job_t *job)
{
    if (group != nullptr && group->stream != UINT32_MAX) {
        group->job = job;
    }
}

int ina_node_progress(ina_node_group_t *group)
{
    return group->progress();
}

void ina_node_op_free(ina_node_op_t *op)
{
    delete op; // virtual: a LocalOp or an UplinkOp
}

} // extern "C"

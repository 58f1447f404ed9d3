/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The node stage of a communicator on several nodes, with the agent level above
 * it (ina_node.h): the node's ranks combine their contributions in the segment,
 * and only the node's combined contribution crosses the node's link to the
 * agent, in K streams, each led by one local rank (the leaders are spread over
 * the node's packages by the component; the pattern NCCL's CollNet uses for
 * SHARP: node reduce-scatter, one shard per leader up and back, node
 * allgather).
 *
 * The cut of a call (alike on every rank of the communicator: it depends on
 * the call's arguments, the stream jobs' block size, the number of streams
 * and the step size, which the component makes the same on every node):
 *   the call's vector (reductions: the result vector; bcast: the bytes;
 *   allgather: every member's chunk in node order, so that a node's chunks
 *   are one range) is cut into steps of K * G agent blocks; in each step,
 *   stream j carries blocks j*G .. j*G+G-1. So stream j's agent call is the
 *   concatenation of its G blocks of every step: its SID k is block k % G of
 *   stream j's part of step k / G, and every block but the stream's last is
 *   whole, as the engine cuts it.
 * Per step s (buffer set s % 2, node_group.h):
 *   In      every rank copies its contribution in (reductions: its slot;
 *           bcast root: the data; allgather: its chunk's bytes into the
 *           result area) and publishes arrived;
 *   Fold    leader j waits for every rank, folds its part of the step in
 *           local rank order into the result area, and opens its stream's
 *           gate for the step; the engine sends the blocks from there, and
 *           the agent's RESULTs land back in place (node_uplink's stage
 *           callbacks); when all of them are back, the leader publishes
 *           returned;
 *   Out     every rank waits for every leader's return, copies the result
 *           out, and publishes released.
 * A rank fills step s+1 while step s is at the agent (two buffer sets).
 *
 * The decision: each leader posts its stream's call at the call's first
 * step and publishes the agent's verdict for it; the call is offloaded only
 * if every stream was granted. Every node sees the same verdict for each
 * stream (the agent tells every member), so every rank of the communicator
 * reaches the same decision. A fallen-back call's granted streams are
 * drained (their blocks sent, whatever they hold, results dropped) so that
 * the agent's leases come back; this only happens when the agent grants
 * some streams of a call and denies others.
 */
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "ina_geometry.h"
#include "ina_proto.h"
#include "ina_reduce.h"
#include "node_group.h"

bool ina_node_group::set_layout(const ina_node_config_t &cfg, std::string &why)
{
    if (cfg.node_of == nullptr) {
        size = L;
        rank = me;
        return true;
    }
    if (cfg.size == 0 || cfg.rank >= cfg.size) {
        why = "invalid communicator layout";
        return false;
    }
    size = cfg.size;
    rank = cfg.rank;
    node_of.assign(cfg.node_of, cfg.node_of + size);
    nnodes = 1 + *std::max_element(node_of.begin(), node_of.end());
    node = node_of[rank];
    node_first.assign(nnodes + 1, 0);
    for (uint32_t r = 0; r < size; ++r) {
        ++node_first[node_of[r] + 1];
    }
    uint64_t fewest = UINT64_MAX;
    for (uint32_t n = 0; n < nnodes; ++n) {
        fewest = std::min(fewest, node_first[n + 1]);
        node_first[n + 1] += node_first[n];
    }
    order.assign(size, 0);
    std::vector<uint64_t> next(node_first.begin(), node_first.end() - 1);
    uint64_t my_pos = 0;
    for (uint32_t r = 0; r < size; ++r) {
        uint64_t q = next[node_of[r]]++;
        order[q] = r;
        my_pos = r == rank ? q : my_pos;
    }
    if (node_first[node + 1] - node_first[node] != L || my_pos - node_first[node] != me) {
        why = "the layout does not match the group's local ranks";
        return false;
    }
    if (nnodes > 1) {
        nstreams = cfg.nstreams;
        job = cfg.job;
        block_bytes = cfg.block_bytes;
        if (nstreams == 0 || nstreams > fewest || block_bytes == 0) {
            why = "invalid stream configuration";
            return false;
        }
        // Stream j's leader on this node (local index); default: j.
        leader.assign(nstreams, 0);
        std::vector<bool> taken(L, false);
        for (uint32_t j = 0; j < nstreams; ++j) {
            leader[j] = cfg.leaders != nullptr ? cfg.leaders[j] : j;
            if (leader[j] >= L || taken[leader[j]]) {
                why = "invalid stream leaders";
                return false;
            }
            taken[leader[j]] = true;
            stream = leader[j] == me ? j : stream;
        }
        // A leader without a job (it could not open it at the agent) reports
        // its stream unreachable at every call, so the node falls back.
        if (stream == UINT32_MAX && job != nullptr) {
            why = "only a stream leader has a job";
            return false;
        }
    }
    return true;
}

namespace ina::node {

namespace {

using RL = RankLine;

struct UplinkOp final : ina_node_op {
    // The call's cut, alike on every rank of the communicator.
    size_t es = 1;          // bytes per element
    uint64_t T = 0;         // elements of the call's vector
    uint64_t pb = 0;        // elements per agent block
    uint64_t G = 0;         // blocks per stream and step
    uint32_t K = 0;         // streams the call uses
    uint64_t per_step = 0;  // K * G * pb
    uint64_t nsteps = 0;
    uint64_t base = 0;      // the number of the call's first step
    uint64_t seq = 0;       // the call's number among the group's UplinkOps
    uint32_t root_node = 0; // reduce, bcast
    // This rank's part (reduce_scatter: elements; allgather: its chunk's
    // bytes in node order), and the node's (reduce_scatter: its ranks'
    // parts; allgather: its chunks).
    uint64_t my_lo = 0, my_hi = 0;
    uint64_t node_lo = 0, node_hi = 0;
    std::vector<std::pair<uint64_t, uint64_t>> node_parts;

    // The stream this rank leads (g->stream < K).
    ina_call_t *call = nullptr;
    bool call_done = false;
    // The agent was lost under this stream's call: the stream's leaders
    // finish it among themselves (ina_call_recover_*), the blocks and
    // results still going through the stage callbacks.
    bool rescuing = false;
    ina_cqe_t call_cqe{};
    bool verdict_sent = false;
    std::atomic<uint64_t> gate{0};     // steps of the stream ready to send
    std::atomic<uint32_t> got[2];      // RESULTs back, per buffer set
    std::atomic<bool> drain{false};    // fallen back: send anything, keep nothing
    uint64_t ret_next = 0;             // the next step whose return to publish

    // Progress of this rank.
    enum class Fill { Free, In, Fold };
    enum class V { Unknown, Go, Off };
    uint64_t tf = 0, to = 0; // next step to fill, to copy out
    Fill fp = Fill::Free;
    V v = V::Unknown;

    UplinkOp()
    {
        got[0].store(0, std::memory_order_relaxed);
        got[1].store(0, std::memory_order_relaxed);
    }
    ~UplinkOp() override
    {
        if (call != nullptr) {
            ina_call_free(call); // completes it first if it is still out
        }
    }

    bool leads() const { return g->stream < K; }
    uint64_t step_no(uint64_t t) const { return base + t; }
    uint64_t step_off(uint64_t t) const { return t * per_step; }
    uint64_t step_len(uint64_t t) const { return std::min(per_step, T - step_off(t)); }
    // Stream j's part of step t, as [lo, hi) relative to the step.
    void part(uint64_t t, uint64_t &lo, uint64_t &hi) const
    {
        const uint64_t n = step_len(t);
        lo = std::min<uint64_t>(g->stream * G * pb, n);
        hi = std::min(lo + G * pb, n);
    }
    uint64_t blocks_of(uint64_t t) const
    {
        if (d.coll == INA_COLL_BARRIER) {
            return 1;
        }
        uint64_t lo, hi;
        part(t, lo, hi);
        return (hi - lo + pb - 1) / pb;
    }
    uint64_t stream_total() const
    {
        if (d.coll == INA_COLL_BARRIER) {
            return 0;
        }
        uint64_t lo, hi;
        part(nsteps - 1, lo, hi);
        return (nsteps - 1) * G * pb + (hi - lo);
    }
    static bool overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1, uint64_t &lo,
                        uint64_t &hi)
    {
        lo = std::max(a0, b0);
        hi = std::min(a1, b1);
        return lo < hi;
    }

    // ---- the stream's blocks (engine callbacks: atomics only) ----------
    int stage_block(uint64_t sid, ina_stage_block_t *b)
    {
        const uint64_t t = sid / G, k = sid % G;
        if (!drain.load(std::memory_order_acquire) &&
            t >= gate.load(std::memory_order_acquire)) {
            return 0;
        }
        *b = ina_stage_block_t{};
        b->want_result = 1;
        if (d.coll == INA_COLL_BARRIER) {
            return 1;
        }
        const uint64_t rel = (g->stream * G + k) * pb; // in the step
        const uint64_t e = step_off(t) + rel;        // in the call
        const uint32_t n = static_cast<uint32_t>(std::min(pb, T - e));
        b->data = g->result(step_no(t)) + rel * es;
        b->count = n;
        uint64_t lo, hi;
        switch (d.coll) {
        case INA_COLL_REDUCE:
            b->want_result = g->node == root_node;
            break;
        case INA_COLL_REDUCE_SCATTER:
            b->want_result = 0;
            for (const auto &p : node_parts) {
                b->want_result |= overlap(e, e + n, p.first, p.second, lo, hi) ? 1 : 0;
            }
            break;
        case INA_COLL_BCAST:
            if (g->node == root_node) {
                b->want_result = 0; // the data is here already: an ACK is enough
            } else {
                b->count = 0; // a CREDIT
            }
            break;
        case INA_COLL_ALLGATHER:
            if (overlap(e, e + n, node_lo, node_hi, lo, hi)) {
                b->offset = static_cast<uint32_t>(lo - e);
                b->count = static_cast<uint32_t>(hi - lo);
            } else {
                b->count = 0;
            }
            break;
        default:
            break;
        }
        return 1;
    }
    void stage_result(uint64_t sid, const void *data, uint32_t count)
    {
        const uint64_t t = sid / G, k = sid % G;
        if (data != nullptr && count > 0 && !drain.load(std::memory_order_acquire)) {
            std::memcpy(g->result(step_no(t)) + (g->stream * G + k) * pb * es, data, count * es);
        }
        got[step_no(t) & 1].fetch_add(1, std::memory_order_acq_rel);
    }
    static int block_cb(void *arg, uint64_t sid, ina_stage_block_t *b)
    {
        return static_cast<UplinkOp *>(arg)->stage_block(sid, b);
    }
    static void result_cb(void *arg, uint64_t sid, const void *data, uint32_t count)
    {
        static_cast<UplinkOp *>(arg)->stage_result(sid, data, count);
    }

    // ---- the decision ---------------------------------------------------
    void publish(uint64_t code, uint8_t status = 0)
    {
        static_assert(INA_PROTO_STATUS_MAX * 8 + 7 < kVerdictSpan, "verdict bits");
        g->lines[g->me].verdict.store(seq * kVerdictSpan + status * 8u + code,
                                      std::memory_order_release);
        verdict_sent = true;
    }
    void post_stream()
    {
        if (g->job == nullptr) {
            publish(kVerdictUnreachable);
            return;
        }
        ina_staged_desc_t sd{};
        sd.coll = d.coll;
        sd.op = d.op;
        sd.dtype = d.dtype;
        sd.total = stream_total();
        sd.block_bytes = static_cast<uint32_t>(pb * es);
        sd.ops.arg = this;
        sd.ops.block = block_cb;
        sd.ops.result = result_cb;
        ina_outcome_t oc = INA_OFFLOADED;
        ina_status_t rc = ina_job_post_staged(g->job, &sd, &call, &oc);
        if (rc == INA_ERR_LOST && call != nullptr && rescue(true)) {
            // The agent is gone already: the verdict is the recovery's.
        } else if (rc != INA_OK) {
            if (call != nullptr) {
                ina_call_free(call);
            }
            call = nullptr;
            call_cqe.rc = rc;
            publish(kVerdictError);
        } else if (oc != INA_OFFLOADED) {
            call = nullptr;
            publish(oc == INA_FALLBACK_DENIED ? kVerdictDenied : kVerdictUnreachable,
                    ina_job_deny_status(g->job));
        }
    }
    // Start recovering this stream's lost call; host_ok: this node may
    // still fall back (its leaders have not all said go). False: the job
    // cannot recover calls (the caller reports the loss as an error).
    bool rescue(bool host_ok)
    {
        if (!ina_job_has_peers(g->job) || INA_OK != ina_call_recover_start(call, host_ok ? 1 : 0)) {
            return false;
        }
        rescuing = true;
        recovered = true;
        return true;
    }
    // Leaders: learn the stream's verdict. Everyone: combine the leaders'.
    bool check_verdict()
    {
        bool moved = false;
        if (leads() && !verdict_sent && call != nullptr) {
            ina_cqe_t c;
            int known = rescuing ? ina_call_recover_decision(call, &c) : ina_call_decision(call, &c);
            if (known && !rescuing && c.rc == INA_ERR_LOST && ina_job_has_peers(g->job)) {
                // Lost before its verdict: recovered once the call is over
                // at this member (ina_call_test retires it).
                ina_cqe_t t;
                known = 0;
                if (ina_call_test(call, &t)) {
                    moved = rescue(true);
                    known = moved ? 0 : 1;
                    c = t;
                }
            }
            if (known) {
                publish(c.rc != INA_OK                   ? kVerdictError
                        : c.outcome == INA_OFFLOADED       ? kVerdictGo
                        : c.outcome == INA_FALLBACK_DENIED ? kVerdictDenied
                                                           : kVerdictUnreachable,
                        c.outcome == INA_FALLBACK_DENIED ? c.status
                        : c.rc == INA_OK && c.outcome == INA_FALLBACK_UNREACHABLE && rescuing
                            ? INA_NODE_STATUS_LOST // the stream's leaders settled it: lost
                            : 0);
                if (c.rc != INA_OK) {
                    call_cqe = c;
                }
                moved = true;
            }
        }
        uint64_t worst = kVerdictGo;
        uint8_t why = 0; // the first denying stream's DENY status
        bool lost = false; // some stream's leaders found the agent lost (alike on every node)
        for (uint32_t j = 0; j < K; ++j) {
            const uint64_t x = g->lines[g->leader[j]].verdict.load(std::memory_order_acquire);
            if (x <= seq * kVerdictSpan) {
                return moved; // that leader has not heard yet
            }
            const uint64_t code = (x - seq * kVerdictSpan) % 8;
            const uint8_t status = static_cast<uint8_t>((x - seq * kVerdictSpan) / 8);
            if (code == kVerdictDenied && why == 0) {
                why = status;
            }
            lost = lost || (code == kVerdictUnreachable && status == INA_NODE_STATUS_LOST);
            worst = std::max(worst, code);
        }
        if (worst == kVerdictGo) {
            v = V::Go;
            decided = true;
        } else {
            finish(worst, worst == kVerdictUnreachable && lost ? INA_NODE_STATUS_LOST : why);
        }
        return true;
    }
    bool any_error() const
    {
        for (uint32_t j = 0; j < K; ++j) {
            const uint64_t x = g->lines[g->leader[j]].verdict.load(std::memory_order_acquire);
            if (x > seq * kVerdictSpan && (x - seq * kVerdictSpan) % 8 == kVerdictError) {
                return true;
            }
        }
        return false;
    }
    // The call ends without (all of) its result: fallback or error.
    void finish(uint64_t code, uint8_t deny_status = 0)
    {
        v = V::Off;
        if (call != nullptr) {
            // Give the agent its lease back: every block of a granted stream
            // goes out (the other nodes do the same), nothing is kept.
            drain.store(true, std::memory_order_release);
            ina_cqe_t c;
            while (!ina_call_test(call, &c)) {
            }
            ina_call_free(call);
            call = nullptr;
        }
        g->lines[g->me].released.store(step_no(nsteps - 1), std::memory_order_release);
        cqe = ina_cqe_t{};
        switch (code) {
        case kVerdictDenied:
            cqe.outcome = INA_FALLBACK_DENIED;
            cqe.status = deny_status;
            break;
        case kVerdictUnreachable:
            cqe.outcome = INA_FALLBACK_UNREACHABLE;
            cqe.status = deny_status; // INA_NODE_STATUS_LOST: the agent is lost
            break;
        default:
            cqe.rc = call_cqe.rc != INA_OK ? call_cqe.rc : INA_ERR_LOST;
            cqe.status = call_cqe.status;
            break;
        }
        decided = true;
        done = true;
    }

    // ---- the steps ------------------------------------------------------
    bool fill()
    {
        ina_node_group &G_ = *g;
        const uint64_t t = tf, s = step_no(t), o = step_off(t), n = step_len(t);
        bool moved = false;
        switch (fp) {
        case Fill::Free:
            // The agent's results land in the set too: wait for every rank.
            if (s > 2 && !G_.all_reached(&RL::released, s - 2)) {
                return false;
            }
            if (leads()) {
                got[s & 1].store(0, std::memory_order_relaxed);
            }
            fp = Fill::In;
            [[fallthrough]];
        case Fill::In:
            switch (d.coll) {
            case INA_COLL_ALLREDUCE:
            case INA_COLL_REDUCE:
            case INA_COLL_REDUCE_SCATTER:
                std::memcpy(G_.slot(s, G_.me), static_cast<const char *>(d.sbuf) + o * es, n * es);
                break;
            case INA_COLL_BCAST:
                if (G_.rank == d.root) {
                    std::memcpy(G_.result(s), static_cast<const char *>(d.rbuf) + o, n);
                }
                break;
            case INA_COLL_ALLGATHER: {
                uint64_t lo, hi;
                if (overlap(o, o + n, my_lo, my_hi, lo, hi)) {
                    const char *src = d.sbuf != nullptr
                                          ? static_cast<const char *>(d.sbuf)
                                          : static_cast<const char *>(d.rbuf) + G_.rank * d.count;
                    std::memcpy(G_.result(s) + (lo - o), src + (lo - my_lo), hi - lo);
                }
                break;
            }
            default: // barrier
                break;
            }
            G_.lines[G_.me].arrived.store(s, std::memory_order_release);
            moved = true;
            fp = Fill::Fold;
            [[fallthrough]];
        case Fill::Fold:
            if (leads()) {
                // Every rank's part is in (bcast: the root's data). Every
                // rank, even where it brings nothing: a leader that went on
                // alone could post its next call's stream and overwrite its
                // verdict before a slow rank read this one.
                if (!G_.all_reached(&RL::arrived, s)) {
                    return moved;
                }
                if (is_reduction(d.coll)) {
                    uint64_t lo, hi;
                    part(t, lo, hi);
                    if (hi > lo) {
                        char *dst = G_.result(s) + lo * es;
                        std::memcpy(dst, G_.slot(s, 0) + lo * es, (hi - lo) * es);
                        for (uint32_t i = 1; i < G_.L; ++i) {
                            ina_reduce(d.op, d.dtype, dst, G_.slot(s, i) + lo * es, hi - lo);
                        }
                    }
                }
                gate.store(t + 1, std::memory_order_release);
                if (t == 0) {
                    post_stream();
                }
            }
            ++tf;
            fp = Fill::Free;
            return true;
        }
        return moved;
    }
    bool out()
    {
        ina_node_group &G_ = *g;
        const uint64_t t = to, s = step_no(t), o = step_off(t), n = step_len(t);
        if (!G_.leaders_reached(&RL::returned, s, K)) {
            return false;
        }
        char *rbuf = static_cast<char *>(d.rbuf);
        const char *res = G_.result(s);
        uint64_t lo, hi;
        switch (d.coll) {
        case INA_COLL_ALLREDUCE:
            std::memcpy(rbuf + o * es, res, n * es);
            break;
        case INA_COLL_REDUCE:
            if (G_.rank == d.root) {
                std::memcpy(rbuf + o * es, res, n * es);
            }
            break;
        case INA_COLL_REDUCE_SCATTER:
            if (overlap(o, o + n, my_lo, my_hi, lo, hi)) {
                std::memcpy(rbuf + (lo - my_lo) * es, res + (lo - o) * es, (hi - lo) * es);
            }
            break;
        case INA_COLL_BCAST:
            if (G_.rank != d.root) {
                std::memcpy(rbuf + o, res, n);
            }
            break;
        case INA_COLL_ALLGATHER:
            for (uint64_t q = o / d.count; q * d.count < o + n; ++q) {
                const uint32_t member = G_.order[q];
                if (member == G_.rank && d.sbuf == nullptr) {
                    continue; // in place: already there
                }
                overlap(o, o + n, q * d.count, (q + 1) * d.count, lo, hi);
                std::memcpy(rbuf + member * d.count + (lo - q * d.count), res + (lo - o), hi - lo);
            }
            break;
        default:
            break;
        }
        G_.lines[G_.me].released.store(s, std::memory_order_release);
        ++to;
        return true;
    }
    // Leaders: publish, in step order, the steps whose results are all back.
    bool publish_returns()
    {
        bool moved = false;
        const uint64_t ready = gate.load(std::memory_order_relaxed);
        while (ret_next < ready &&
               got[step_no(ret_next) & 1].load(std::memory_order_acquire) == blocks_of(ret_next)) {
            g->lines[g->me].returned.store(step_no(ret_next), std::memory_order_release);
            ++ret_next;
            moved = true;
        }
        return moved;
    }

    bool advance() override
    {
        bool moved = false;
        for (;;) {
            bool m = false;
            if (call != nullptr && !call_done &&
                (rescuing ? ina_call_recover_test(call, &call_cqe)
                          : ina_call_test(call, &call_cqe)) &&
                !(!rescuing && call_cqe.rc == INA_ERR_LOST && rescue(!verdict_sent))) {
                call_done = true;
                m = true;
                if ((call_cqe.rc != INA_OK || call_cqe.outcome != INA_OFFLOADED) &&
                    v == V::Go) {
                    publish(kVerdictError); // the others stop waiting for this stream
                }
            }
            if (v == V::Go && any_error()) {
                finish(kVerdictError);
                return true;
            }
            if (leads()) {
                m |= publish_returns();
            }
            if (tf < nsteps && tf < to + 2 && (tf == 0 || v == V::Go)) {
                m |= fill();
            }
            if (v == V::Unknown && tf > 0) {
                m |= check_verdict();
                if (done) {
                    return true;
                }
            }
            if (v == V::Go && to < tf) {
                m |= out();
            }
            if (v == V::Go && to == nsteps && (!leads() || call_done)) {
                if (call != nullptr) {
                    ina_call_free(call);
                    call = nullptr;
                }
                done = true;
                return true;
            }
            if (!m) {
                return moved;
            }
            moved = true;
        }
    }
};

} // namespace

ina_node_op *make_uplink_op(ina_node_group *g, const ina_coll_desc_t &d, ina_status_t *rc)
{
    try {
        auto op = std::make_unique<UplinkOp>();
        op->g = g;
        op->d = d;
        op->decided = false;
        switch (d.coll) {
        case INA_COLL_ALLREDUCE:
        case INA_COLL_REDUCE:
        case INA_COLL_REDUCE_SCATTER:
            if (!ina_proto_op_valid(d.op, d.dtype) || d.op == INA_OP_REPLACE) {
                *rc = INA_ERR_INVALID;
                return nullptr;
            }
            op->es = ina_proto_dtype_size(d.dtype);
            op->T = d.count;
            if (d.coll == INA_COLL_REDUCE_SCATTER) {
                std::vector<uint64_t> first(g->size + 1, 0);
                for (uint32_t r = 0; r < g->size; ++r) {
                    first[r + 1] = first[r] + d.recvcounts[r];
                }
                op->T = first[g->size];
                op->my_lo = first[g->rank];
                op->my_hi = first[g->rank + 1];
                for (uint64_t q = g->node_first[g->node]; q < g->node_first[g->node + 1]; ++q) {
                    const uint32_t r = g->order[q];
                    if (first[r + 1] > first[r]) {
                        op->node_parts.emplace_back(first[r], first[r + 1]);
                    }
                }
                op->d.recvcounts = nullptr; // the caller's: not kept
            }
            break;
        case INA_COLL_BCAST:
        case INA_COLL_ALLGATHER:
            op->d.op = INA_OP_REPLACE;
            op->d.dtype = INA_DT_UINT8;
            op->T = d.count;
            if (d.coll == INA_COLL_ALLGATHER) {
                op->T = d.count * g->size;
                const uint64_t q = g->node_first[g->node] + g->me;
                op->my_lo = q * d.count;
                op->my_hi = op->my_lo + d.count;
                op->node_lo = g->node_first[g->node] * d.count;
                op->node_hi = g->node_first[g->node + 1] * d.count;
            }
            break;
        case INA_COLL_BARRIER:
            op->d.op = INA_OP_REPLACE;
            op->d.dtype = INA_DT_UINT8;
            op->T = 0;
            break;
        default:
            *rc = INA_ERR_INVALID;
            return nullptr;
        }
        if (d.coll == INA_COLL_REDUCE || d.coll == INA_COLL_BCAST) {
            op->root_node = g->node_of[d.root];
        }
        if (op->T == 0 && d.coll != INA_COLL_BARRIER) {
            op->done = op->decided = true; // moves nothing, on every rank alike
            *rc = INA_OK;
            return op.release();
        }
        // Blocks by the engine's rule for the whole call (ina_geometry.h):
        // a mid-size call travels as several blocks that pipeline.
        op->pb = ina::call_block_bytes(op->T * op->es, g->block_bytes) / op->es;
        if (op->pb == 0) {
            *rc = INA_ERR_INVALID;
            return nullptr;
        }
        const uint64_t nb = d.coll == INA_COLL_BARRIER ? 1 : (op->T + op->pb - 1) / op->pb;
        op->G = g->chunk / (g->nstreams * op->pb * op->es);
        if (op->G == 0) {
            // A step holds less than a block per stream: only a call of one
            // partial block fits (the small tier's calls).
            if (op->T * op->es > g->chunk || nb > 1) {
                *rc = INA_ERR_INVALID;
                return nullptr;
            }
            op->G = 1;
        }
        op->K = static_cast<uint32_t>(std::min<uint64_t>(g->nstreams, (nb + op->G - 1) / op->G));
        op->per_step = op->K * op->G * op->pb;
        op->nsteps = d.coll == INA_COLL_BARRIER ? 1 : (op->T + op->per_step - 1) / op->per_step;
        op->base = g->last_step + 1;
        g->last_step += op->nsteps;
        op->seq = ++g->calls;
        g->queue.push_back(op.get());
        *rc = INA_OK;
        return op.release();
    } catch (const std::bad_alloc &) {
        *rc = INA_ERR_NOMEM;
        return nullptr;
    }
}

} // namespace ina::node

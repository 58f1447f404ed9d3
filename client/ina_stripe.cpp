// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A job striped over several agents (docs/HIERARCHY.md, "Striping"): the
// job is opened at every agent alike, a call is cut into blocks by the usual
// rule (ina_geometry.h) and block sid goes to agent ina_stripe_agent(sid, A).
// Agent k sees its blocks k, k+A, ... as one staged call of its own (block s'
// of that call is the call's block s'A + k), with its own MID, window and
// lease; an agent with no block of a call has no part in it.
//
// One decision per call: the call is offloaded only if every agent with a
// part granted it. On any other verdict the granted parts are given back
// (ina_call_abort) and the caller falls back; every member sees the same
// verdicts, so every member decides alike. Until every verdict is known,
// RESULTs are kept here, out of the caller's buffer (an in-place call's
// input must survive a fallback), and applied once the call is offloaded.
//
// Built on the engine's public API only (staged calls, decisions, aborts):
// each part is an ordinary call of its agent's client.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "ina_client.h"
#include "ina_geometry.h"

using ina::BlockResult;
using ina::BlockSend;
using ina::CallGeometry;
using ina::CallShape;

struct ina_stripe {
    std::vector<ina_job_t *> jobs; // one per agent, in the order given
    ina_job_params_t params{};     // block_bytes: the smallest of the agents'
    uint32_t rank = 0;
    uint8_t deny_status = 0;       // ina_stripe_deny_status
    // Recovery (ina_stripe_set_peers): the caller's progress, called while a
    // post waits for a lost part's recovery to decide.
    void (*progress)(void *) = nullptr;
    void *progress_arg = nullptr;
    bool post_recovered = false; // the latest ina_stripe_post recovered a part
};

struct ina_stripe_call {
    struct Part {
        ina_stripe_call *call = nullptr;
        uint32_t agent = 0;
        ina_call_t *engine = nullptr; // null once completed (or never posted)
        bool decided = false;
        bool rescuing = false; // lost with its agent: the members finish it
        ina_cqe_t cqe{}; // the decision's, then the completion's
    };
    enum class Verdict { open, offloaded, fallback };

    ina_stripe *stripe = nullptr;
    CallGeometry g;
    size_t esz = 1;
    const uint8_t *src = nullptr;
    uint8_t *rbuf = nullptr;
    std::vector<Part> parts;
    Verdict verdict = Verdict::open;
    ina_cqe_t result{}; // the CQE once the verdict is known
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> stash;

    uint32_t nagents() const { return static_cast<uint32_t>(stripe->jobs.size()); }
    bool recovered = false; // some part was lost with its agent and recovered
    bool rescuing()
    {
        for (const Part &p : parts) {
            recovered = recovered || p.rescuing;
        }
        return recovered;
    }

    // ---- the parts' staged ops ------------------------------------------
    static int block_cb(void *arg, uint64_t sub, ina_stage_block_t *b)
    {
        Part &p = *static_cast<Part *>(arg);
        ina_stripe_call &c = *p.call;
        const uint64_t sid = sub * c.nagents() + p.agent;
        const BlockSend s = c.g.send(sid);
        b->offset = s.offset;
        b->count = s.count;
        b->want_result = s.want_result ? 1 : 0;
        // The engine sends from data + offset elements: hand it the place of
        // element 0 of the block, computed without leaving the buffer.
        b->data = s.count > 0 ? reinterpret_cast<const void *>(
                                    reinterpret_cast<uintptr_t>(c.src + s.src) - s.offset * c.esz)
                              : nullptr;
        return 1;
    }
    static void result_cb(void *arg, uint64_t sub, const void *data, uint32_t count)
    {
        Part &p = *static_cast<Part *>(arg);
        ina_stripe_call &c = *p.call;
        const uint64_t sid = sub * c.nagents() + p.agent;
        if (data == nullptr || count == 0 || !c.g.wants(sid)) {
            return; // an ACK
        }
        if (c.verdict == Verdict::offloaded) {
            c.apply(sid, static_cast<const uint8_t *>(data));
        } else if (c.verdict == Verdict::open) {
            const auto *d = static_cast<const uint8_t *>(data);
            c.stash.emplace_back(sid, std::vector<uint8_t>(d, d + count * c.esz));
        } // fallback: dropped
    }
    void apply(uint64_t sid, const uint8_t *data)
    {
        const BlockResult r = g.result(sid);
        for (unsigned i = 0; i < r.npieces; ++i) {
            const BlockResult::Piece &pc = r.piece[i];
            std::memcpy(rbuf + pc.dst, data + static_cast<size_t>(pc.from) * esz,
                        static_cast<size_t>(pc.count) * esz);
        }
    }

    // ---- the decision -----------------------------------------------------
    // One round: every undecided part asked once. True once the verdict is
    // known.
    bool decide()
    {
        if (verdict != Verdict::open) {
            return true;
        }
        bool all = true;
        for (Part &p : parts) {
            if (!p.decided && p.engine != nullptr && p.rescuing) {
                p.decided = ina_call_recover_decision(p.engine, &p.cqe) != 0;
            } else if (!p.decided && p.engine != nullptr) {
                p.decided = ina_call_decision(p.engine, &p.cqe) != 0;
                if (p.decided && p.cqe.rc == INA_ERR_LOST &&
                    ina_job_has_peers(stripe->jobs[p.agent])) {
                    // Lost before its verdict: its members settle it
                    // (nothing reached the caller's buffer: it may still
                    // fall back), once the call is over here.
                    ina_cqe_t t;
                    p.decided = false;
                    if (ina_call_test(p.engine, &t) != 0) {
                        p.rescuing = ina_call_recover_start(p.engine, 1) == INA_OK;
                        p.decided = !p.rescuing;
                        p.cqe = t;
                    }
                }
            }
            all = all && p.decided;
        }
        if (!all) {
            return false;
        }
        bool granted = true, denied = false;
        ina_status_t error = INA_OK;
        uint8_t status = INA_PROTO_OK;
        for (const Part &p : parts) {
            if (p.cqe.rc != INA_OK) {
                error = error != INA_OK ? error : static_cast<ina_status_t>(p.cqe.rc);
                granted = false;
            } else if (p.cqe.outcome != INA_OFFLOADED) {
                granted = false;
                if (p.cqe.outcome == INA_FALLBACK_DENIED &&
                    (!denied || status == INA_PROTO_ERR_ABORTED)) {
                    // The reason: an agent's own, rather than the ABORTED
                    // another member's give-back caused at a granting agent.
                    denied = true;
                    status = p.cqe.status;
                }
            }
        }
        result = ina_cqe_t{};
        result.rc = INA_OK;
        result.blocks = g.nblocks();
        result.mid = parts.front().cqe.mid; // agent 0's part: it has one in every call
        if (granted) {
            verdict = Verdict::offloaded;
            result.outcome = INA_OFFLOADED;
            for (const auto &s : stash) {
                apply(s.first, s.second.data());
            }
            stash.clear();
            return true;
        }
        // Some agent did not grant: give the granted parts back. A DENY is
        // every member's verdict, so it decides even beside a local error
        // (nothing reached the caller's buffer yet: falling back is safe).
        verdict = Verdict::fallback;
        stash.clear();
        for (Part &p : parts) {
            if (p.engine != nullptr && p.cqe.rc == INA_OK && p.cqe.outcome == INA_OFFLOADED) {
                ina_call_abort(p.engine);
            }
        }
        if (denied) {
            result.outcome = INA_FALLBACK_DENIED;
            result.status = status;
        } else if (error != INA_OK) {
            result.rc = error;
        } else {
            result.outcome = INA_FALLBACK_UNREACHABLE;
        }
        return true;
    }

    // One round of completion; true once every part completed and the
    // verdict is known (result holds the CQE).
    bool test()
    {
        const bool decided = decide();
        bool all = true;
        for (Part &p : parts) {
            if (p.engine == nullptr) {
                continue; // completed
            }
            ina_cqe_t cqe{};
            if (p.rescuing && verdict == Verdict::fallback) {
                ina_call_free(p.engine); // the caller falls back: the recovery is given up
                p.engine = nullptr;
                continue;
            }
            int fin = p.rescuing ? ina_call_recover_test(p.engine, &cqe)
                                 : ina_call_test(p.engine, &cqe);
            if (fin != 0 && !p.rescuing && cqe.rc == INA_ERR_LOST &&
                verdict != Verdict::fallback && ina_job_has_peers(stripe->jobs[p.agent]) &&
                ina_call_recover_start(p.engine, verdict == Verdict::open ? 1 : 0) == INA_OK) {
                // Lost in the middle: its members finish it (results reach
                // the caller's buffer only once every part is offloaded).
                p.rescuing = true;
                fin = 0;
            }
            if (fin != 0) {
                ina_call_free(p.engine);
                p.engine = nullptr;
                if (!p.decided) {
                    p.decided = true; // its completion is its verdict
                    p.cqe = cqe;
                } else if (verdict != Verdict::fallback &&
                           !(cqe.rc == INA_OK && cqe.outcome == INA_OFFLOADED)) {
                    p.cqe = cqe; // failed after its GRANT
                }
            }
            all = all && p.engine == nullptr;
        }
        if (!all || !(decided || decide())) {
            return false;
        }
        if (verdict == Verdict::offloaded) {
            for (const Part &p : parts) {
                if (p.cqe.rc != INA_OK || p.cqe.outcome != INA_OFFLOADED) {
                    // Granted everywhere, then a part failed: results of the
                    // others may be in the caller's buffer already.
                    result.rc = p.cqe.rc != INA_OK ? p.cqe.rc : INA_ERR_LOST;
                    result.outcome = INA_OFFLOADED;
                    result.status = p.cqe.status;
                    break;
                }
            }
        }
        return true;
    }

    // Between rounds: yield first, then nap briefly (ranks and agents may
    // share few cores).
    static void pause(unsigned &rounds)
    {
        if (++rounds < 256) {
            sched_yield();
        } else {
            usleep(20);
        }
    }
};

namespace {

template <typename F> int stripe_guard(F &&body) noexcept
{
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return INA_ERR_NOMEM;
    } catch (...) {
        return INA_ERR_INVALID;
    }
}

// Plan `d` for the stripe and post every part; the verdict stays open.
int post_parts(ina_stripe *s, const ina_coll_desc_t &d, std::unique_ptr<ina_stripe_call> &out)
{
    unsigned op = d.op, dtype = d.dtype;
    if (d.coll == INA_COLL_BARRIER) {
        op = INA_OP_REPLACE;
        dtype = INA_DT_UINT8;
    }
    if (d.coll >= INA_COLL_COUNT || !ina_proto_coll_valid(d.coll, op, dtype)) {
        return INA_ERR_INVALID;
    }
    auto c = std::make_unique<ina_stripe_call>();
    c->stripe = s;
    c->esz = ina_proto_dtype_size(dtype);
    CallShape shape;
    shape.coll = d.coll;
    shape.elem_size = c->esz;
    shape.count = d.count;
    shape.nmembers = s->params.nmembers;
    shape.rank = s->rank;
    shape.root = d.root;
    shape.recvcounts = d.recvcounts;
    shape.in_place = d.coll == INA_COLL_ALLGATHER && d.sbuf == nullptr;
    shape.block_bytes = s->params.block_bytes;
    if (!c->g.plan(shape)) {
        return INA_ERR_INVALID;
    }
    // The whole call's block size, as one agent would cut it.
    shape.block_bytes = ina::call_block_bytes(c->g.total() * c->esz, s->params.block_bytes);
    if (!c->g.plan(shape)) {
        return INA_ERR_INVALID;
    }
    c->rbuf = static_cast<uint8_t *>(d.rbuf);
    switch (d.coll) {
    case INA_COLL_BCAST:
        c->src = c->rbuf; // the root's bytes; the others send CREDITs
        break;
    case INA_COLL_ALLGATHER:
        c->src = d.sbuf != nullptr ? static_cast<const uint8_t *>(d.sbuf)
                                   : c->rbuf + c->g.part_first() * c->esz;
        break;
    case INA_COLL_BARRIER:
        break;
    default:
        c->src = static_cast<const uint8_t *>(d.sbuf);
        break;
    }
    const uint32_t A = static_cast<uint32_t>(s->jobs.size());
    const uint64_t n = c->g.nblocks();
    c->parts.reserve(A); // stable: the staged ops point at the parts
    for (uint32_t k = 0; k < A && k < n; ++k) {
        uint64_t total = 0;
        for (uint64_t sid = k; sid < n; sid += A) {
            total += c->g.block_count(sid);
        }
        c->parts.emplace_back();
        ina_stripe_call::Part &p = c->parts.back();
        p.call = c.get();
        p.agent = k;
        ina_staged_desc_t sd{};
        sd.coll = d.coll;
        sd.op = op;
        sd.dtype = dtype;
        sd.total = total; // BARRIER: 0, one block, at agent 0 only
        sd.block_bytes = shape.block_bytes;
        sd.ops.arg = &p;
        sd.ops.block = ina_stripe_call::block_cb;
        sd.ops.result = ina_stripe_call::result_cb;
        ina_outcome_t oc = INA_OFFLOADED;
        const ina_status_t rc = ina_job_post_staged(s->jobs[k], &sd, &p.engine, &oc);
        if (p.engine == nullptr) {
            // Decided before it started (an early DENY, an agent gone), or
            // refused: this part's verdict is known.
            p.decided = true;
            p.cqe.rc = rc;
            p.cqe.outcome = rc == INA_OK ? oc : INA_OFFLOADED;
            p.cqe.status = ina_job_deny_status(s->jobs[k]);
        }
    }
    if (c->parts.empty()) {
        // Moves nothing (and is no BARRIER): complete at once, alike everywhere.
        c->verdict = ina_stripe_call::Verdict::offloaded;
        c->result.rc = INA_OK;
        c->result.outcome = INA_OFFLOADED;
    }
    out = std::move(c);
    return INA_OK;
}

} // namespace

uint32_t ina_stripe_agent(uint64_t sid, uint32_t nagents)
{
    return nagents == 0 ? 0 : static_cast<uint32_t>(sid % nagents);
}

ina_status_t ina_stripe_open(ina_client_t *const *clients, uint32_t nagents,
                             const ina_job_key_t *key,
                             uint32_t nmembers, const uint32_t *node_of_member, uint32_t rank,
                             uint32_t requested_window, uint32_t requested_block_bytes,
                             ina_job_params_t *params, ina_stripe_t **out)
{
    if (out != nullptr) {
        *out = nullptr;
    }
    if (clients == nullptr || nagents == 0 || params == nullptr || out == nullptr) {
        return INA_ERR_INVALID;
    }
    return static_cast<ina_status_t>(stripe_guard([&]() -> int {
        auto s = std::make_unique<ina_stripe>();
        s->rank = rank;
        // The window bounds a member's blocks in flight: spread over the
        // agents, each gets its share (at least one).
        const uint32_t share =
            requested_window == 0 ? 0 : std::max(1u, (requested_window + nagents - 1) / nagents);
        for (uint32_t k = 0; k < nagents; ++k) {
            ina_job_params_t p{};
            ina_job_t *job = nullptr;
            ina_job_open_params_t op{};
            op.mask = INA_JOB_OPEN_SHAPE | INA_JOB_OPEN_STRIPE;
            op.key = key;
            op.nmembers = nmembers;
            op.node_of_member = node_of_member;
            op.rank = rank;
            op.window = share;
            op.block_bytes = requested_block_bytes;
            op.stripe_index = k;
            op.stripe_width = nagents;
            const ina_status_t rc = ina_job_open(clients[k], &op, &p, &job);
            if (rc != INA_OK) {
                for (ina_job_t *j : s->jobs) {
                    ina_job_leave(j);
                }
                return rc;
            }
            s->jobs.push_back(job);
            if (k == 0) {
                s->params = p; // jid and nmembers: agent 0's job
            }
            // Every rank cuts calls alike: by the smallest block of all.
            s->params.block_bytes = std::min(s->params.block_bytes, p.block_bytes);
            s->params.window = std::min(s->params.window, p.window);
        }
        *params = s->params;
        *out = s.release();
        return INA_OK;
    }));
}

void ina_stripe_leave(ina_stripe_t *stripe)
{
    if (stripe == nullptr) {
        return;
    }
    for (ina_job_t *j : stripe->jobs) {
        ina_job_leave(j);
    }
    delete stripe;
}

ina_status_t ina_stripe_post(ina_stripe_t *stripe, const ina_coll_desc_t *desc,
                             int wait_decision, ina_stripe_call_t **call, ina_outcome_t *outcome)
{
    if (call != nullptr) {
        *call = nullptr;
    }
    if (stripe == nullptr || desc == nullptr || call == nullptr || outcome == nullptr) {
        return INA_ERR_INVALID;
    }
    return static_cast<ina_status_t>(stripe_guard([&]() -> int {
        std::unique_ptr<ina_stripe_call> c;
        int rc = post_parts(stripe, *desc, c);
        if (rc != INA_OK) {
            return rc;
        }
        unsigned rounds = 0;
        stripe->deny_status = 0;
        stripe->post_recovered = false;
        if (wait_decision == 0) {
            *outcome = INA_OFFLOADED; // posted: the CQE tells
            *call = c.release();
            return INA_OK;
        }
        while (!c->decide()) {
            if (stripe->progress != nullptr && c->rescuing()) {
                stripe->progress(stripe->progress_arg); // the recovery's messages
            }
            ina_stripe_call::pause(rounds);
        }
        if (c->verdict == ina_stripe_call::Verdict::offloaded) {
            *outcome = INA_OFFLOADED;
            *call = c.release();
            return INA_OK;
        }
        // Fell back (or failed) on every agent's word: finish the parts
        // (their sends read the caller's buffer), then report.
        while (!c->test()) {
            ina_stripe_call::pause(rounds);
        }
        stripe->post_recovered = c->rescuing();
        *outcome = c->result.outcome;
        stripe->deny_status = c->result.outcome == INA_FALLBACK_DENIED ? c->result.status : 0;
        return c->result.rc;
    }));
}

uint8_t ina_stripe_deny_status(const ina_stripe_t *stripe)
{
    return stripe != nullptr ? stripe->deny_status : 0;
}

namespace {
// `tell` (ina_job_host_cost or ina_job_call_time) at every part's job: each
// knows whether the latest call is its to tell (a part given back, or no
// part of the call there, has nothing to say). Returns how many were sent.
uint32_t tell_parts(ina_stripe_t *stripe, int (*tell)(ina_job_t *, uint64_t), uint64_t ns,
                    uint32_t *dropped)
{
    uint32_t sent = 0, failed = 0;
    if (stripe != nullptr) {
        for (ina_job_t *j : stripe->jobs) {
            const int rc = tell(j, ns);
            sent += rc > 0 ? 1 : 0;
            failed += rc < 0 ? 1 : 0;
        }
    }
    if (dropped != nullptr) {
        *dropped = failed;
    }
    return sent;
}
} // namespace

uint32_t ina_stripe_host_cost(ina_stripe_t *stripe, uint64_t ns, uint32_t *dropped)
{
    return tell_parts(stripe, ina_job_host_cost, ns, dropped);
}

uint32_t ina_stripe_call_time(ina_stripe_t *stripe, uint64_t ns, uint32_t *dropped)
{
    return tell_parts(stripe, ina_job_call_time, ns, dropped);
}

int ina_stripe_call_test(ina_stripe_call_t *call, ina_cqe_t *cqe)
{
    if (call == nullptr) {
        return 1;
    }
    const int done = stripe_guard([&] { return call->test() ? 1 : 0; });
    if (done != 0 && cqe != nullptr) {
        *cqe = call->result;
    }
    return done == 1;
}

ina_status_t ina_stripe_call_wait(ina_stripe_call_t *call, ina_cqe_t *cqe)
{
    ina_cqe_t local{};
    unsigned rounds = 0;
    while (!ina_stripe_call_test(call, &local)) {
        if (call->stripe->progress != nullptr && call->rescuing()) {
            call->stripe->progress(call->stripe->progress_arg);
        }
        ina_stripe_call::pause(rounds);
    }
    if (cqe != nullptr) {
        *cqe = local;
    }
    return static_cast<ina_status_t>(local.rc);
}

void ina_stripe_call_free(ina_stripe_call_t *call)
{
    if (call == nullptr) {
        return;
    }
    ina_stripe_call_wait(call, nullptr); // its buffers are the caller's until then
    delete call;
}

ina_status_t ina_stripe_run(ina_stripe_t *stripe, const ina_coll_desc_t *desc, ina_cqe_t *cqe)
{
    ina_cqe_t local{};
    if (cqe == nullptr) {
        cqe = &local;
    }
    *cqe = ina_cqe_t{};
    if (stripe == nullptr || desc == nullptr) {
        cqe->rc = INA_ERR_INVALID;
        return INA_ERR_INVALID;
    }
    const int rc = stripe_guard([&]() -> int {
        std::unique_ptr<ina_stripe_call> c;
        int prc = post_parts(stripe, *desc, c);
        if (prc != INA_OK) {
            return prc;
        }
        unsigned rounds = 0;
        while (!c->test()) {
            ina_stripe_call::pause(rounds);
        }
        *cqe = c->result;
        return c->result.rc;
    });
    cqe->rc = static_cast<ina_status_t>(rc);
    return cqe->rc;
}

void ina_stripe_set_peers(ina_stripe_t *stripe, const ina_peer_ops_t *ops,
                          void (*progress)(void *), void *arg)
{
    if (stripe == nullptr || ops == nullptr) {
        return;
    }
    for (uint32_t k = 0; k < stripe->jobs.size(); ++k) {
        ina_peer_ops_t o = *ops;
        o.channel = k; // the agents' JIDs may be equal: the agent tells the jobs apart
        ina_job_set_peers(stripe->jobs[k], &o);
    }
    stripe->progress = progress;
    stripe->progress_arg = arg;
}

int ina_stripe_peer_message(ina_stripe_t *stripe, uint32_t from, const void *msg, size_t len)
{
    if (stripe == nullptr) {
        return 0;
    }
    for (ina_job_t *j : stripe->jobs) {
        if (ina_job_peer_message(j, from, msg, len)) {
            return 1;
        }
    }
    return 0;
}

void ina_stripe_peer_flush(ina_stripe_t *stripe)
{
    if (stripe != nullptr) {
        for (ina_job_t *j : stripe->jobs) {
            ina_job_peer_flush(j);
        }
    }
}

int ina_stripe_reachable(ina_stripe_t *stripe)
{
    if (stripe == nullptr) {
        return 0;
    }
    for (ina_job_t *j : stripe->jobs) {
        if (!ina_job_reachable(j)) {
            return 0;
        }
    }
    return 1;
}

int ina_stripe_call_recovered(ina_stripe_call_t *call)
{
    return call != nullptr && call->rescuing() ? 1 : 0;
}

int ina_stripe_post_recovered(const ina_stripe_t *stripe)
{
    return stripe != nullptr && stripe->post_recovered ? 1 : 0;
}

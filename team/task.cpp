// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// One call of a team (ina_team.h), and the three ways of carrying it.
#include <new>

#include "team.h"

namespace ina::team {

namespace {

constexpr const char *kAgent = "the agent";
constexpr const char *kAgentLost = "the agent (lost)";
constexpr const char *kStripe = "an agent the job is striped over";

ina_task_result_t offloaded(uint64_t mid)
{
    ina_task_result_t r{};
    r.rc = INA_OK;
    r.outcome = INA_OFFLOADED;
    r.mid = mid;
    return r;
}

// A CQE as a result; `who` decided a fallback.
void set_from_cqe(ina_task_result_t &r, const ina_cqe_t &c, const char *who)
{
    r.rc = c.rc;
    r.outcome = c.outcome;
    r.status = c.status;
    r.mid = c.mid;
    r.who = who;
    r.reason = nullptr;
    r.recovered = 0;
    r.agent_lost = 0;
}

ina_task_result_t error(ina_status_t rc)
{
    ina_task_result_t r{};
    r.rc = rc;
    return r;
}

bool is_offloaded(const ina_task_result_t &r)
{
    return r.rc == INA_OK && r.outcome == INA_OFFLOADED;
}

} // namespace

// ---- the node stage -------------------------------------------------------
//
// Whether the call is offloaded is known once every rank of the node
// reached it and, over several nodes, the stream's agent answered (the
// same for every rank of the communicator); the node's other ranks move it
// on as they come, so the verdict and the end are asked for until they are.

ina_status_t NodePath::post(ina_task &t) const
{
    Team &team = *t.team;
    const char *why = nullptr;
    ina_node_group_t *group = team.node_group(t.params.bytes, &why);
    if (group == nullptr) {
        release(t);
        t.result = {};
        t.result.rc = INA_OK;
        t.result.outcome = INA_FALLBACK_UNREACHABLE;
        t.result.reason = why;
        t.phase = ina_task::Phase::decided;
        return INA_OK;
    }
    if (t.op == nullptr || ina_node_repost(group, t.op) != INA_OK) {
        // (A kept call of another group, or none: planned anew.)
        ina_node_op_free(t.op);
        t.op = nullptr;
        const ina_status_t rc = ina_node_post(group, &t.params.desc, &t.op);
        if (rc != INA_OK) {
            t.op = nullptr;
            return rc;
        }
    }
    t.phase = ina_task::Phase::deciding;
    return INA_OK;
}

bool NodePath::verdict(ina_task &t) const
{
    ina_cqe_t cqe{};
    if (ina_node_decision(t.op, &cqe) == 0) {
        return false;
    }
    set_from_cqe(t.result, cqe, kAgent);
    if (is_offloaded(t.result)) {
        t.phase = ina_task::Phase::running;
        return true;
    }
    // Decided: the call is over.
    t.result.recovered = ina_node_op_recovered(t.op);
    if (cqe.rc == INA_OK && cqe.outcome == INA_FALLBACK_UNREACHABLE &&
        cqe.status == INA_NODE_STATUS_LOST) {
        // The stream leaders settled it without the agent: every rank of
        // the communicator got this very outcome.
        t.result.agent_lost = 1;
        t.result.status = 0;
    }
    release(t);
    t.phase = ina_task::Phase::decided;
    return true;
}

bool NodePath::test(ina_task &t) const
{
    ina_cqe_t cqe{};
    if (ina_node_test(t.op, &cqe) == 0) {
        return false;
    }
    set_from_cqe(t.result, cqe, kAgent);
    t.result.recovered = ina_node_op_recovered(t.op);
    release(t);
    return true;
}

void NodePath::release(ina_task &t) const
{
    // A persistent call of one node keeps its steps to post them again.
    if (t.op != nullptr && !(t.persistent() && t.team->node_only())) {
        ina_node_op_free(t.op);
        t.op = nullptr;
    }
}

// ---- one agent (a flat job, or a tree's leaf) -----------------------------
//
// The verdict is known when the post returns (the engine waits for it),
// except where the agent was lost before this rank heard it: the members
// then settle the call among themselves, still in program order, so a host
// algorithm may run for it. A call lost after the verdict is finished by
// the members too; only a blocking one may still end on the host.

ina_status_t AgentPath::post(ina_task &t) const
{
    Team &team = *t.team;
    ina_job_t *job = team.job();
    ina_outcome_t outcome = INA_OFFLOADED;
    if (job == nullptr) {
        t.result = {};
        t.result.outcome = INA_FALLBACK_UNREACHABLE;
        t.result.who = kAgent;
        t.phase = ina_task::Phase::decided;
        return INA_OK;
    }
    if (t.persistent() && t.plan == nullptr) {
        // Cut into blocks once; a plan that cannot be made is posted whole.
        (void) ina_job_plan(job, &t.params.desc, &t.plan);
    }
    ina_status_t rc = t.plan != nullptr ? ina_job_post_plan(job, t.plan, &t.call, &outcome)
                                        : ina_job_post(job, &t.params.desc, &t.call, &outcome);
    if (rc == INA_ERR_LOST && t.call != nullptr && team.peers()) {
        // Gone before this rank heard the verdict (or before it posted).
        rc = ina_call_recover_start(t.call, 1);
        if (rc == INA_OK) {
            t.phase = ina_task::Phase::recovering;
            return INA_OK;
        }
    }
    if (rc != INA_OK) {
        release(t);
        t.result = error(rc);
        t.phase = ina_task::Phase::decided;
        return INA_OK;
    }
    if (outcome != INA_OFFLOADED) {
        release(t);
        t.result = {};
        t.result.outcome = outcome;
        t.result.status = ina_job_deny_status(job);
        t.result.who = kAgent;
        t.phase = ina_task::Phase::decided;
        return INA_OK;
    }
    if (!t.blocking()) {
        // The engine's progress thread moves it while the caller computes.
        ina_call_background(t.call);
    }
    t.result = offloaded(0);
    t.phase = ina_task::Phase::running;
    return INA_OK;
}

bool AgentPath::verdict(ina_task &t) const
{
    if (t.phase != ina_task::Phase::recovering) {
        return true; // known at the post
    }
    ina_cqe_t cqe{};
    if (ina_call_recover_test(t.call, &cqe) == 0) {
        return false;
    }
    release(t);
    set_from_cqe(t.result, cqe, kAgentLost);
    t.result.recovered = 1;
    // Nobody held anything and every member could run the host algorithm:
    // all of them were in this call and stop asking the agent here.
    t.result.agent_lost = cqe.rc == INA_OK && cqe.outcome == INA_FALLBACK_UNREACHABLE;
    // Offloaded: recovered whole, nothing left to test.
    t.phase = ina_task::Phase::decided;
    return true;
}

bool AgentPath::test(ina_task &t) const
{
    ina_task_result_t &r = t.result;
    ina_cqe_t cqe{};
    if (t.phase == ina_task::Phase::running) {
        if (ina_call_test(t.call, &cqe) == 0) {
            return false;
        }
        if (cqe.rc == INA_ERR_LOST && t.team->peers() &&
            ina_call_recover_start(t.call, t.blocking() ? 1 : 0) == INA_OK) {
            // The agent is gone: finish it with the other members. A
            // non-blocking call never ends on the host now: this rank may
            // have started other collectives since its post.
            t.phase = ina_task::Phase::lost;
            return false;
        }
        set_from_cqe(r, cqe, kAgent);
        release(t);
        return true;
    }
    if (ina_call_recover_test(t.call, &cqe) == 0) {
        return false;
    }
    set_from_cqe(r, cqe, kAgentLost);
    r.recovered = 1;
    r.agent_lost = cqe.rc == INA_OK && cqe.outcome == INA_FALLBACK_UNREACHABLE;
    release(t);
    return true;
}

void AgentPath::release(ina_task &t) const
{
    if (t.call != nullptr) {
        ina_call_free(t.call);
        t.call = nullptr;
    }
}

// ---- striped over several agents ------------------------------------------
//
// The verdict is known when the post returns: every agent with a part of
// the call granted it, or every member falls back. A part lost with its
// agent is recovered inside the stripe.

ina_status_t StripePath::post(ina_task &t) const
{
    ina_stripe_t *stripe = t.team->stripe();
    ina_outcome_t outcome = INA_OFFLOADED;
    const ina_status_t rc = ina_stripe_post(stripe, &t.params.desc, 1, &t.scall, &outcome);
    if (rc == INA_OK && outcome == INA_OFFLOADED) {
        t.result = offloaded(0);
        t.phase = ina_task::Phase::running;
        return INA_OK;
    }
    release(t);
    t.result = rc != INA_OK ? error(rc) : ina_task_result_t{};
    if (rc == INA_OK) {
        t.result.outcome = outcome;
        t.result.status = ina_stripe_deny_status(stripe);
        t.result.who = kStripe;
    }
    t.result.recovered = ina_stripe_post_recovered(stripe);
    // A part's members settled it without its agent, nothing held anywhere
    // and every member in this call: alike everywhere.
    t.result.agent_lost = t.result.recovered && rc == INA_OK && outcome == INA_FALLBACK_UNREACHABLE;
    t.phase = ina_task::Phase::decided;
    return INA_OK;
}

bool StripePath::verdict(ina_task &) const
{
    return true; // known at the post
}

bool StripePath::test(ina_task &t) const
{
    ina_cqe_t cqe{};
    if (ina_stripe_call_test(t.scall, &cqe) == 0) {
        return false;
    }
    set_from_cqe(t.result, cqe, kStripe);
    t.result.recovered = ina_stripe_call_recovered(t.scall);
    release(t);
    return true;
}

void StripePath::release(ina_task &t) const
{
    if (t.scall != nullptr) {
        ina_stripe_call_free(t.scall);
        t.scall = nullptr;
    }
}

} // namespace ina::team

void ina_task::drop()
{
    if (op != nullptr) {
        ina_node_op_free(op);
        op = nullptr;
    }
    if (call != nullptr) {
        ina_call_free(call);
        call = nullptr;
    }
    if (scall != nullptr) {
        ina_stripe_call_free(scall);
        scall = nullptr;
    }
    if (plan != nullptr) {
        ina_call_plan_free(plan);
        plan = nullptr;
    }
}

extern "C" {

ina_status_t ina_task_init(ina_team_t *team, const ina_task_params_t *params, ina_task_t **out)
{
    if (team == nullptr || params == nullptr || out == nullptr) {
        return INA_ERR_INVALID;
    }
    try {
        ina_task *t = team->take_task();
        t->params = *params;
        t->path = nullptr;
        t->phase = ina_task::Phase::idle;
        *out = t;
    } catch (const std::bad_alloc &) {
        *out = nullptr;
        return INA_ERR_NOMEM;
    }
    return INA_OK;
}

ina_status_t ina_task_post(ina_task_t *task)
{
    if (task == nullptr || task->phase != ina_task::Phase::idle) {
        return INA_ERR_INVALID;
    }
    const ina::team::Path &path = task->team->path();
    if (task->path != nullptr && task->path != &path) {
        task->path->release(*task); // kept for another strategy
    }
    task->path = &path;
    try {
        return path.post(*task);
    } catch (const std::bad_alloc &) {
        return INA_ERR_NOMEM;
    }
}

int ina_task_verdict(ina_task_t *task, ina_task_result_t *result)
{
    if (task == nullptr || task->path == nullptr) {
        if (result != nullptr) {
            *result = ina::team::error(INA_ERR_INVALID); // never posted
        }
        return 1;
    }
    if ((task->phase == ina_task::Phase::deciding || task->phase == ina_task::Phase::recovering) &&
        !task->path->verdict(*task)) {
        return 0;
    }
    if (task->phase == ina_task::Phase::decided) {
        task->phase = ina_task::Phase::idle; // over: may be posted again
    }
    if (result != nullptr) {
        *result = task->result;
    }
    // Told once: a test of a call its verdict ended says it no more.
    task->result.recovered = 0;
    task->result.agent_lost = 0;
    return 1;
}

int ina_task_test(ina_task_t *task, ina_task_result_t *result)
{
    if (task == nullptr || task->path == nullptr) {
        if (result != nullptr) {
            *result = ina::team::error(INA_ERR_INVALID); // never posted
        }
        return 1;
    }
    if (task->phase != ina_task::Phase::idle && task->phase != ina_task::Phase::decided &&
        !task->path->test(*task)) {
        return 0;
    }
    // Over (or ended at its verdict: a recovery that finished it whole).
    task->phase = ina_task::Phase::idle;
    if (result != nullptr) {
        *result = task->result;
    }
    return 1;
}

void ina_task_finalize(ina_task_t *task)
{
    if (task == nullptr) {
        return;
    }
    task->drop(); // what a persistent call kept goes too
    task->team->give_task(task);
}

} // extern "C"

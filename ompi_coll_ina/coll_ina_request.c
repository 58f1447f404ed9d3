/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * Running one collective call through the engine, blocking or not, and the
 * request machinery of the non-blocking forms (modelled on coll/ucc: an
 * ompi_request_t subclass from a free list, completed by a progress
 * callback with ompi_request_complete).
 *
 * Every fallback decision is taken identically on all ranks: it depends on
 * the call's arguments, which MPI requires to match (counts, datatype
 * signature, op, root), on the job state that the members agreed on at
 * setup, or on the task's verdict, which the engine guarantees to be the
 * same for every member (offloaded, denied, unreachable). A denied
 * non-blocking call therefore starts the saved non-blocking collective at
 * once, in program order, on every rank.
 *
 * Each call is one task of the communicator's team (team/ina_team.h): the
 * request holds that one handle, whichever strategy carries the call.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "coll_ina.h"
#include "coll_ina_grid.h"

static int ina_req_free(ompi_request_t **request);
static int ina_req_cancel(ompi_request_t *request, int complete);

OBJ_CLASS_INSTANCE(mca_coll_ina_req_t, ompi_coll_base_nbc_request_t, NULL, NULL);

/* coll_ina_required: an offloadable call that cannot be offloaded is an
 * error rather than a silent slowdown. */
static int ina_required_error(mca_coll_ina_module_t *m, const char *why)
{
    opal_show_help("help-coll-ina.txt", "offload-required", true, opal_process_info.nodename,
                   m->rank, m->cid, why);
    return OMPI_ERROR; /* MPI_ERR_OTHER for the application */
}

/* Lost mid-call or rejected: other ranks may already hold the result (or
 * not), so a host re-run could mix results: an MPI error. */
static int ina_failed_error(mca_coll_ina_module_t *m, mca_coll_ina_kind_t kind,
                            const ina_task_result_t *r)
{
    const int rc = INA_OK != r->rc ? r->rc : INA_ERR_PROTO;

    /* The help topic's arguments stay as they were: an installed older
     * help file must still match them. */
    INA_VERBOSE(1, "cid %d: offloaded %s (mid %llu) failed: engine code %d", m->cid,
                mca_coll_ina_kind_name(kind), (unsigned long long) r->mid, rc);
    opal_show_help("help-coll-ina.txt", "offload-failed", true, opal_process_info.nodename, m->rank,
                   m->cid, (unsigned long long) r->mid, rc, ina_proto_status_name(r->status));
    return OMPI_ERROR; /* MPI_ERR_OTHER for the application */
}

/* ---- non-blocking requests --------------------------------------------- */

static int ina_requests_init(void)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    int rc;

    if (c->requests_ready) {
        return OMPI_SUCCESS;
    }
    OBJ_CONSTRUCT(&c->requests, opal_free_list_t);
    rc = opal_free_list_init(&c->requests, sizeof(mca_coll_ina_req_t), opal_cache_line_size,
                             OBJ_CLASS(mca_coll_ina_req_t), 0, 0, 8, -1, 8, NULL, 0, NULL, NULL,
                             NULL);
    if (OPAL_SUCCESS != rc) {
        OBJ_DESTRUCT(&c->requests);
        return rc;
    }
    c->requests_ready = true;
    return OMPI_SUCCESS;
}

void mca_coll_ina_requests_fini(void)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;

    if (c->progress_registered) {
        opal_progress_unregister(mca_coll_ina_progress);
        c->progress_registered = false;
    }
    if (c->requests_ready) {
        OBJ_DESTRUCT(&c->requests);
        c->requests_ready = false;
    }
    mca_coll_ina_persistent_fini();
}

/* The request of one offloaded non-blocking call of `m`: the plan's
 * persistent request (each start), or one from the free list. Active from
 * here; the module is retained until the call completes (MPI lets the
 * communicator be freed with calls in flight: the module, its job and
 * saved fallbacks live until they completed). */
static mca_coll_ina_req_t *ina_req_take(mca_coll_ina_module_t *m, mca_coll_ina_req_t *persistent,
                                        mca_coll_ina_kind_t kind)
{
    mca_coll_ina_req_t *req = persistent;

    if (NULL == req) {
        if (OMPI_SUCCESS != ina_requests_init()) {
            return NULL;
        }
        req = (mca_coll_ina_req_t *) opal_free_list_get(&mca_coll_ina_component.requests);
        if (NULL == req) {
            return NULL;
        }
        OMPI_REQUEST_INIT(&req->super.super, false);
        req->super.super.req_type = OMPI_REQUEST_COLL;
        req->super.super.req_free = ina_req_free;
        req->super.super.req_cancel = ina_req_cancel;
        req->super.super.req_mpi_object.comm = m->comm;
        req->plan = NULL;
        mca_coll_ina_nbc_reset(&req->super);
    }
    req->super.super.req_complete = REQUEST_PENDING;
    req->super.super.req_state = OMPI_REQUEST_ACTIVE;
    req->super.super.req_status = ompi_status_empty; /* not cancelled, no error */
    req->task = NULL;
    req->grid = NULL;
    req->module = m;
    req->kind = kind;
    req->freed = false;
    OBJ_RETAIN(m);
    return req;
}

static mca_coll_ina_req_t *ina_req_get(mca_coll_ina_module_t *m, const mca_coll_ina_plan_t *plan)
{
    return ina_req_take(m, plan->persistent, plan->kind);
}

void mca_coll_ina_nbc_reset(ompi_coll_base_nbc_request_t *nbc)
{
    nbc->cb.req_complete_cb = NULL;
    nbc->req_complete_cb_data = NULL;
    memset(&nbc->data, 0, sizeof(nbc->data));
}

static void ina_req_return(mca_coll_ina_req_t *req)
{
    OMPI_REQUEST_FINI(&req->super.super);
    opal_free_list_return(&mca_coll_ina_component.requests, &req->super.super.super);
}

/* A request taken for a call that did not start (fallback or error). A
 * persistent one stays with its owner, which runs the start otherwise. */
static void ina_req_discard(mca_coll_ina_req_t *req)
{
    mca_coll_ina_module_t *m = req->module;

    req->module = NULL;
    if (NULL == req->plan) {
        ina_req_return(req);
    }
    OBJ_RELEASE(m);
}

/* Mark complete; the module reference goes with the call. */
static void ina_req_complete(mca_coll_ina_req_t *req, int mpi_error)
{
    mca_coll_ina_module_t *m = req->module;

    req->module = NULL;
    req->super.super.req_status.MPI_ERROR = mpi_error;
    if (NULL != req->plan) {
        mca_coll_ina_plan_complete(req->plan); /* a persistent start's part, in place */
    }
    if (req->freed) {
        ina_req_return(req); /* nobody waits for it any more */
    } else {
        ompi_request_complete(&req->super.super, true);
    }
    OBJ_RELEASE(m);
}

static int ina_req_free(ompi_request_t **request)
{
    mca_coll_ina_req_t *req = (mca_coll_ina_req_t *) *request;

    if (!REQUEST_COMPLETE(&req->super.super)) {
        /* Erroneous for a collective, but keep the call's buffers and MID
         * order intact: it is returned when it completes. */
        req->freed = true;
    } else {
        ina_req_return(req);
    }
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int ina_req_cancel(ompi_request_t *request, int complete)
{
    /* A collective cannot be cancelled (MPI forbids it): it completes
     * normally and MPI_Test_cancelled says false. */
    (void) request;
    (void) complete;
    return OMPI_SUCCESS;
}

/* A request already complete (a non-blocking call that moves nothing). */
static int ina_request_done(mca_coll_ina_module_t *m, const mca_coll_ina_plan_t *plan,
                            ompi_request_t **request)
{
    mca_coll_ina_req_t *req = ina_req_get(m, plan);

    if (NULL == req) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *request = &req->super.super;
    ina_req_complete(req, MPI_SUCCESS);
    return MPI_SUCCESS;
}

static bool ina_offloaded(const ina_task_result_t *r)
{
    return INA_OK == r->rc && INA_OFFLOADED == r->outcome;
}

/* Map a finished call's result to the request's status, an MPI error class
 * (what MPI_Wait reports). A granted call cannot end in a fallback: a DENY
 * after the GRANT is the agent's error. */
static int ina_result_to_mpi(mca_coll_ina_module_t *m, mca_coll_ina_kind_t kind,
                             const ina_task_result_t *r)
{
    if (ina_offloaded(r)) {
        return MPI_SUCCESS;
    }
    ina_failed_error(m, kind, r);
    return MPI_ERR_OTHER;
}

/* What a verdict or a completion says beyond its outcome: a call lost with
 * the agent and finished by the members (counted), and whether every member
 * now knows the agent is lost (it stops asking it). */
static void ina_count_recovery(mca_coll_ina_module_t *m, const ina_task_result_t *r)
{
    if (r->recovered) {
        ++m->recovered_calls;
        if (ina_offloaded(r)) {
            ++m->recovered_offloaded;
        }
    }
    if (r->agent_lost) {
        mca_coll_ina_agent_lost(m);
    }
}

/* A call is over: give its task back, unless it is the one a persistent
 * plan keeps to post again (mca_coll_ina_plan_fini gives that back). */
static void ina_task_done(const mca_coll_ina_plan_t *plan, ina_task_t *task)
{
    if (NULL == plan || task != plan->task) {
        ina_task_finalize(task);
    }
}

/* A grid call's result as the request's status. */
static int ina_grid_result_to_mpi(mca_coll_ina_req_t *req, int rc)
{
    if (OMPI_SUCCESS == rc) {
        return MPI_SUCCESS;
    }
    INA_VERBOSE(1, "cid %d: %s on the grid's rings failed: %d", req->module->cid,
                mca_coll_ina_kind_name(req->kind), rc);
    return MPI_ERR_OTHER;
}

int mca_coll_ina_progress(void)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    mca_coll_ina_req_t *req, *next;
    opal_list_t *done = &c->completed;
    ina_task_result_t r;
    int completed = 0;
    static bool busy = false;

    /* ompi_request_complete may run callbacks that call MPI (and so
     * opal_progress) again: never re-enter the list walk. */
    if (busy || opal_list_is_empty(&c->outstanding)) {
        return 0;
    }
    busy = true;
    /* First collect what finished (each test also progresses the engine). */
    OPAL_LIST_FOREACH_SAFE(req, next, &c->outstanding, mca_coll_ina_req_t) {
        if (NULL != req->grid) {
            int rc;
            if (!mca_coll_ina_grid_call_test(req->grid, &rc)) {
                continue;
            }
            mca_coll_ina_grid_call_free(req->grid);
            req->grid = NULL;
            req->super.super.req_status.MPI_ERROR = ina_grid_result_to_mpi(req, rc);
            opal_list_remove_item(&c->outstanding, &req->super.super.super.super);
            opal_list_append(done, &req->super.super.super.super);
            continue;
        }
        if (!ina_task_test(req->task, &r)) {
            continue;
        }
        ina_count_recovery(req->module, &r);
        ina_task_done(req->plan, req->task);
        req->task = NULL;
        req->super.super.req_status.MPI_ERROR = ina_result_to_mpi(req->module, req->kind, &r);
        opal_list_remove_item(&c->outstanding, &req->super.super.super.super);
        opal_list_append(done, &req->super.super.super.super);
    }
    /* Then complete them, outside the walk of the outstanding list. */
    while (NULL != (req = (mca_coll_ina_req_t *) opal_list_remove_first(done))) {
        ina_req_complete(req, req->super.super.req_status.MPI_ERROR);
        ++completed;
    }
    busy = false;
    return completed;
}

/* Put a started call on the outstanding list that mca_coll_ina_progress
 * completes. */
static int ina_req_start(mca_coll_ina_req_t *req, ina_task_t *task)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;

    req->task = task;
    opal_list_append(&c->outstanding, &req->super.super.super.super);
    /* Registered at the first non-blocking call and kept until the
     * component closes (as coll/ucc does): with nothing outstanding the
     * callback returns at once, cheaper than registering per call. */
    if (!c->progress_registered) {
        int rc = opal_progress_register(mca_coll_ina_progress);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
        c->progress_registered = true;
    }
    return OMPI_SUCCESS;
}

int mca_coll_ina_grid_request(struct ina_grid_call *g, ompi_request_t **request)
{
    mca_coll_ina_req_t *req = ina_req_take(g->m, NULL, g->kind);
    int rc;

    if (NULL == req) {
        mca_coll_ina_grid_call_free(g);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *request = &req->super.super;
    if (mca_coll_ina_grid_call_test(g, &rc)) {
        /* Over already (its messages were all in): complete it now. */
        mca_coll_ina_grid_call_free(g);
        ina_req_complete(req, ina_grid_result_to_mpi(req, rc));
        return OMPI_SUCCESS;
    }
    req->grid = g;
    return ina_req_start(req, NULL);
}

/* ---- one call ------------------------------------------------------------ */

static int ina_fallback(mca_coll_ina_module_t *m, mca_coll_ina_kind_t kind,
                        mca_coll_ina_fallback_reason_t reason, const char *detail, bool *fallback)
{
    mca_coll_ina_count_fallback(m, kind, reason, detail);
    *fallback = true;
    return OMPI_SUCCESS;
}

/* The agents' answer was a fallback outcome (denied, or unreachable before
 * anything was sent), the same for every member: fall back, or with
 * coll_ina_required fail if no agent could be asked. `who`: which agent,
 * for the messages. */
static int ina_not_offloaded(mca_coll_ina_module_t *m, mca_coll_ina_kind_t kind,
                             ina_outcome_t outcome, uint8_t status, const char *who, bool *fallback)
{
    const bool denied = INA_FALLBACK_DENIED == outcome;
    char why[128];

    if (denied) {
        /* The agent's reason (0 if it gave none: an early verdict not kept). */
        ++m->denied_by_status[status <= INA_PROTO_STATUS_MAX ? status : 0];
        m->denied_pending = true;
        snprintf(why, sizeof(why), "%s denied the call (%s)", who,
                 0 != status ? ina_proto_status_name(status) : "no reason given");
    } else {
        snprintf(why, sizeof(why), "%s is unreachable", who);
    }
    if (!denied && mca_coll_ina_component.required) {
        return ina_required_error(m, why);
    }
    return ina_fallback(m, kind, denied ? MCA_COLL_INA_FB_DENIED : MCA_COLL_INA_FB_UNREACHABLE, why,
                        fallback);
}

/* Why a call the engine did not offload falls back: the agent's answer
 * (the same for every member), or a reason of this rank's own (the node
 * stage has no segment) where no agent was asked. */
static int ina_task_not_offloaded(mca_coll_ina_module_t *m, mca_coll_ina_kind_t kind,
                                  const ina_task_result_t *r, bool *fallback)
{
    if (NULL != r->reason) {
        if (mca_coll_ina_component.required) {
            return ina_required_error(m, r->reason);
        }
        return ina_fallback(m, kind, MCA_COLL_INA_FB_UNREACHABLE, r->reason, fallback);
    }
    return ina_not_offloaded(m, kind, r->outcome, r->status, r->who, fallback);
}

void mca_coll_ina_host_cost(mca_coll_ina_module_t *m, uint64_t ns)
{
    uint32_t dropped = 0;

    if (!mca_coll_ina_component.host_cost_hint || NULL == m->team) {
        return;
    }
    m->host_costs_sent += ina_team_host_cost(m->team, ns, &dropped);
    if (0 != dropped) {
        /* Only a hint: the agent keeps its model for this one. */
        m->host_costs_dropped += dropped;
        INA_VERBOSE(10, "cid %d: the host cost of a denied call could not be sent", m->cid);
    }
}

void mca_coll_ina_call_time(mca_coll_ina_module_t *m, bool tell)
{
    uint32_t dropped = 0;
    uint64_t ns = 0;

    m->call_time_due = false;
    if (NULL == m->team) {
        return;
    }
    if (tell) {
        ns = mca_coll_ina_now_ns() - m->call_t0;
        ns = ns > 0 ? ns : 1;
    }
    m->call_times_sent += ina_team_call_time(m->team, ns, &dropped);
    if (0 != dropped) {
        /* Only a hint: the agent judges the job by its own view meanwhile. */
        m->call_times_dropped += dropped;
        INA_VERBOSE(10, "cid %d: the time of a call could not be sent", m->cid);
    }
}

/* A blocking call that lost an agent and was finished by the members: its
 * time is the recovery's, no measure of sharing the agent, and the lost
 * agent cannot hear it; it is forgotten. */
static void ina_call_time_recovered(mca_coll_ina_module_t *m, const ina_task_result_t *r)
{
    if (m->call_time_due && r->recovered) {
        mca_coll_ina_call_time(m, false);
    }
}

/* ina_task_not_offloaded for the call posted as `request` (NULL: blocking):
 * a denied blocking call's host algorithm is timed and its cost told to the
 * agents that denied it (MCA_COLL_INA_CALL_PREVIOUS); a non-blocking one's
 * host algorithm outlives its post, which is no measure of its cost: the
 * denial is forgotten. */
static int ina_post_not_offloaded(mca_coll_ina_module_t *m, mca_coll_ina_kind_t kind,
                                  const ina_task_result_t *r, ompi_request_t **request,
                                  bool *fallback)
{
    const int rc = ina_task_not_offloaded(m, kind, r, fallback);

    if (m->denied_pending) {
        if (NULL == request) {
            m->host_cost_due = true;
        } else {
            mca_coll_ina_host_cost(m, 0);
        }
    } else if (m->call_time_due) {
        /* No agent's verdict (one unreachable, or lost in the middle and
         * settled on the host): the call's time says nothing of sharing
         * the agent, and is forgotten. */
        mca_coll_ina_call_time(m, false);
    }
    return rc;
}

/* The call through the communicator's team (team/ina_team.h): the node
 * stage, one agent or a stripe, whichever it was made with. Whether it is
 * offloaded is known before this returns, the same on every member (every
 * rank of the node reaches the call, then one agent round trip; a call
 * lost with the agent before the verdict is settled by the members), so a
 * fallback runs the host algorithm now, in program order, on every rank.
 * The waits progress the rest of MPI (opal_progress), like coll/ucc's
 * blocking wait: while this rank is in a collective, MPI must still move
 * its pending point-to-point transfers, the host (libnbc) schedules of
 * fallen-back non-blocking calls, and a recovery's messages, which another
 * rank may need before it can reach this collective. */
static int ina_post(mca_coll_ina_module_t *m, mca_coll_ina_plan_t *plan, ompi_request_t **request,
                    bool *fallback)
{
    const mca_coll_ina_kind_t kind = plan->kind;
    mca_coll_ina_req_t *req = NULL;
    ina_task_t *task = plan->task;
    ina_task_result_t r;
    ina_status_t erc;
    uint64_t t0;

    if (NULL != request && NULL == (req = ina_req_get(m, plan))) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (NULL == task) {
        ina_task_params_t tp;
        memset(&tp, 0, sizeof(tp));
        tp.flags =
            (plan->reuse ? INA_TASK_PERSISTENT : 0) | (NULL != request ? INA_TASK_NONBLOCKING : 0);
        tp.desc = plan->desc;
        tp.bytes = plan->bytes;
        if (INA_OK != ina_task_init(m->team, &tp, &task)) {
            if (NULL != req) {
                ina_req_discard(req);
            }
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        if (plan->reuse) {
            plan->task = task; /* posted again at each start */
        }
    }
    t0 = mca_coll_ina_now_ns();
    erc = ina_task_post(task);
    if (INA_OK != erc) {
        /* Arguments the component checked already, or no memory for the
         * call's record: an error, never a partial fallback. */
        ina_task_done(plan, task);
        if (NULL != req) {
            ina_req_discard(req);
        }
        return INA_ERR_NOMEM == erc ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_ERR_BAD_PARAM;
    }
    if (mca_coll_ina_component.host_cost_hint) {
        /* A blocking call large enough has its whole time told the agents
         * when it ends, offloaded or on the hosts; any other is forgotten
         * (a non-blocking call's end is the application's wait). */
        if (NULL == request && !m->node_only &&
            plan->bytes >= mca_coll_ina_component.call_time_min_bytes) {
            m->call_time_due = true;
            m->call_t0 = t0;
        } else {
            mca_coll_ina_call_time(m, false);
        }
    }
    while (!ina_task_verdict(task, &r)) {
        opal_progress();
    }
    m->verdict_wait_ns += mca_coll_ina_now_ns() - t0;
    ina_count_recovery(m, &r);
    ina_call_time_recovered(m, &r);
    if (!ina_offloaded(&r)) {
        /* Decided: the call is over. */
        ina_task_done(plan, task);
        if (NULL != req) {
            ina_req_discard(req);
        }
        if (INA_OK != r.rc) {
            return ina_failed_error(m, kind, &r);
        }
        return ina_post_not_offloaded(m, kind, &r, request, fallback);
    }
    ++m->offloaded_calls;
    ++m->offloaded_by_kind[kind];
    if (m->node_only) {
        ++m->node_only_calls;
    }
    if (NULL != req) {
        *request = &req->super.super;
        if (m->node_only && ina_task_test(task, &r)) {
            /* Done already (the other local ranks were there first), as a
             * blocking call would find it: complete the request now, not
             * in a later walk of the outstanding list. */
            ina_task_done(plan, task);
            ina_req_complete(req, ina_result_to_mpi(m, kind, &r));
            return OMPI_SUCCESS;
        }
        return ina_req_start(req, task);
    }
    while (!ina_task_test(task, &r)) {
        opal_progress();
    }
    ina_count_recovery(m, &r);
    ina_call_time_recovered(m, &r);
    ina_task_done(plan, task);
    if (INA_OK == r.rc && INA_OFFLOADED != r.outcome) {
        /* Lost in the middle and settled by the members on the host
         * algorithm: still in this blocking call, so it may start now. */
        --m->offloaded_calls;
        --m->offloaded_by_kind[kind];
        return ina_post_not_offloaded(m, kind, &r, request, fallback);
    }
    if (!ina_offloaded(&r)) {
        return ina_failed_error(m, kind, &r);
    }
    if (m->call_time_due) {
        mca_coll_ina_call_time(m, true);
    }
    return OMPI_SUCCESS;
}

static int ina_try(mca_coll_ina_module_t *m, mca_coll_ina_plan_t *plan, ompi_request_t **request,
                   bool *fallback)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    const mca_coll_ina_kind_t kind = plan->kind;

    *fallback = false;
    if (m->in_fallback > 0) {
        *fallback = true; /* inside a saved collective: neither offloaded nor counted */
        return OMPI_SUCCESS;
    }
    /* A denial's timing belongs to its own call: one whose fallback was not
     * the previous component (the grid's rings, not timed) leaves nothing
     * to the next. */
    if (m->host_cost_due) {
        mca_coll_ina_host_cost(m, 0);
    }
    if (m->call_time_due) {
        mca_coll_ina_call_time(m, false);
    }
    m->denied_pending = false;
    m->host_cost_due = false;
    if (NULL != plan->why) {
        return ina_fallback(m, kind, MCA_COLL_INA_FB_UNSUPPORTED, plan->why, fallback);
    }
    if (c->thread_multiple) {
        /* The engine serves one caller at a time. */
        return ina_fallback(m, kind, MCA_COLL_INA_FB_UNSUPPORTED, "MPI_THREAD_MULTIPLE", fallback);
    }
    if (MCA_COLL_INA_BARRIER != kind && plan->bytes < c->min_bytes) {
        return ina_fallback(m, kind, MCA_COLL_INA_FB_THRESHOLD, "coll_ina_min_bytes", fallback);
    }
    if (!m->node_only) {
        if (m->agent_lost && !mca_coll_ina_resume(m, NULL == request)) {
            return ina_fallback(m, kind, MCA_COLL_INA_FB_UNREACHABLE, "the agent was lost",
                                fallback);
        }
        if (MCA_COLL_INA_JOB_READY != m->job_state) {
            if (c->required) {
                return ina_required_error(m, "no job at the agent for this communicator");
            }
            return ina_fallback(m, kind, MCA_COLL_INA_FB_UNREACHABLE, "no job at the agent",
                                fallback);
        }
    }
    return ina_post(m, plan, request, fallback);
}

/* ---- planned calls --------------------------------------------------------- */

int mca_coll_ina_plan_post(mca_coll_ina_module_t *m, mca_coll_ina_plan_t *plan,
                           ompi_request_t **request, bool *fallback)
{
    if (plan->empty) {
        *fallback = false;
        return NULL != request ? ina_request_done(m, plan, request) : OMPI_SUCCESS;
    }
    return ina_try(m, plan, request, fallback);
}

void mca_coll_ina_plan_complete(const mca_coll_ina_plan_t *plan)
{
    if (NULL != plan->part) {
        memcpy(plan->part_dst, plan->part, plan->part_bytes);
    }
}

void mca_coll_ina_plan_fini(mca_coll_ina_plan_t *plan)
{
    ina_task_finalize(plan->task); /* complete: no start is in flight */
    plan->task = NULL;
    free(plan->counts);
    free(plan->part);
    plan->counts = NULL;
    plan->part = NULL;
}

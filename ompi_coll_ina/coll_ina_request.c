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
 * setup, or on the agent's answer, which the engine guarantees to be the
 * same for every member and known when ina_job_post returns (GRANT / DENY /
 * UNREACHABLE). A denied non-blocking call therefore starts the saved
 * non-blocking collective at once, in program order, on every rank.
 *
 * Waiting: a blocking call waits for its CQE in a loop of ina_call_test and
 * opal_progress, like coll/ucc's blocking wait, and not inside the engine's
 * own ina_call_wait: while this rank is in a collective, MPI must still
 * progress its pending point-to-point transfers and the host (libnbc)
 * schedules of fallen-back non-blocking calls, which another rank may need
 * before it can reach this collective.
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

static int ina_req_free(ompi_request_t **request);
static int ina_req_cancel(ompi_request_t *request, int complete);

OBJ_CLASS_INSTANCE(mca_coll_ina_req_t, ompi_request_t, NULL, NULL);

/* coll_ina_required: an offloadable call that cannot be offloaded is an
 * error rather than a silent slowdown. */
static int ina_required_error(mca_coll_ina_module_t *m, const char *why)
{
    opal_show_help("help-coll-ina.txt", "offload-required", true,
                   opal_process_info.nodename, m->rank, m->cid, why);
    return OMPI_ERROR; /* MPI_ERR_OTHER for the application */
}

/* Lost mid-call or rejected: other ranks may already hold the result (or
 * not), so a host re-run could mix results: an MPI error. */
static int ina_failed_error(mca_coll_ina_module_t *m, mca_coll_ina_kind_t kind, int rc,
                            const ina_cqe_t *cqe)
{
    /* The help topic's arguments stay as they were: an installed older
     * help file must still match them. */
    INA_VERBOSE(1, "cid %d: offloaded %s (mid %llu) failed: engine code %d", m->cid,
                mca_coll_ina_kind_name(kind), (unsigned long long) cqe->mid, rc);
    opal_show_help("help-coll-ina.txt", "offload-failed", true,
                   opal_process_info.nodename, m->rank, m->cid,
                   (unsigned long long) cqe->mid, rc, ina_proto_status_name(cqe->status));
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
                             OBJ_CLASS(mca_coll_ina_req_t), 0, 0, 8, -1, 8, NULL, 0, NULL,
                             NULL, NULL);
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
}

/* The request of one offloaded non-blocking call of `m`: the plan's
 * persistent request (each start), or one from the free list. Active from
 * here; the module is retained until the call completes (MPI lets the
 * communicator be freed with calls in flight: the module, its job and
 * saved fallbacks live until they completed). */
static mca_coll_ina_req_t *ina_req_get(mca_coll_ina_module_t *m, const mca_coll_ina_plan_t *plan)
{
    mca_coll_ina_req_t *req = plan->persistent;

    if (NULL == req) {
        if (OMPI_SUCCESS != ina_requests_init()) {
            return NULL;
        }
        req = (mca_coll_ina_req_t *) opal_free_list_get(&mca_coll_ina_component.requests);
        if (NULL == req) {
            return NULL;
        }
        OMPI_REQUEST_INIT(&req->super, false);
        req->super.req_type = OMPI_REQUEST_COLL;
        req->super.req_free = ina_req_free;
        req->super.req_cancel = ina_req_cancel;
        req->super.req_mpi_object.comm = m->comm;
        req->plan = NULL;
    }
    req->super.req_complete = REQUEST_PENDING;
    req->super.req_state = OMPI_REQUEST_ACTIVE;
    req->super.req_status = ompi_status_empty; /* not cancelled, no error */
    req->call = NULL;
    req->stripe_call = NULL;
    req->node_op = NULL;
    req->module = m;
    req->kind = plan->kind;
    req->freed = false;
    OBJ_RETAIN(m);
    return req;
}

static void ina_req_return(mca_coll_ina_req_t *req)
{
    OMPI_REQUEST_FINI(&req->super);
    opal_free_list_return(&mca_coll_ina_component.requests, &req->super.super);
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
    req->super.req_status.MPI_ERROR = mpi_error;
    if (NULL != req->plan) {
        mca_coll_ina_plan_complete(req->plan); /* a persistent start's part, in place */
    }
    if (req->freed) {
        ina_req_return(req); /* nobody waits for it any more */
    } else {
        ompi_request_complete(&req->super, true);
    }
    OBJ_RELEASE(m);
}

static int ina_req_free(ompi_request_t **request)
{
    mca_coll_ina_req_t *req = (mca_coll_ina_req_t *) *request;

    if (!REQUEST_COMPLETE(&req->super)) {
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
    *request = &req->super;
    ina_req_complete(req, MPI_SUCCESS);
    return MPI_SUCCESS;
}

/* Map a finished call's CQE to the request's status, an MPI error class
 * (what MPI_Wait reports). A granted call cannot end in a fallback: a DENY
 * after the GRANT is the agent's error. */
static int ina_cqe_to_mpi(mca_coll_ina_module_t *m, mca_coll_ina_kind_t kind,
                          const ina_cqe_t *cqe)
{
    if (INA_OK == cqe->rc && INA_OFFLOADED == cqe->outcome) {
        return MPI_SUCCESS;
    }
    ina_failed_error(m, kind, INA_OK != cqe->rc ? cqe->rc : INA_ERR_PROTO, cqe);
    return MPI_ERR_OTHER;
}

/* A node-stage call whose stream this rank leads was lost with the agent
 * and recovered by the stream's leaders: counted as a flat one is. */
static void ina_node_count_recovered(mca_coll_ina_module_t *m, const ina_node_op_t *op,
                                     const ina_cqe_t *cqe)
{
    if (ina_node_op_recovered(op)) {
        /* (Not mca_coll_ina_recovered: only the leaders know, so the
         * communicator does not mark its agent lost from here.) */
        ++m->recovered_calls;
        if (INA_OK == cqe->rc && INA_OFFLOADED == cqe->outcome) {
            ++m->recovered_offloaded;
        }
    }
}

/* A node-stage call is over: free it, unless it is the one a persistent
 * plan keeps to post again (mca_coll_ina_plan_fini frees that). */
static void ina_node_op_release(const mca_coll_ina_plan_t *plan, ina_node_op_t *op)
{
    if (NULL == plan || op != plan->node_op) {
        ina_node_op_free(op);
    }
}

int mca_coll_ina_progress(void)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    mca_coll_ina_req_t *req, *next;
    opal_list_t *done = &c->completed;
    ina_cqe_t cqe;
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
        if (NULL != req->node_op) {
            /* Decided at post: it ends offloaded, or with an error (the
             * agent failed in the middle of the call). */
            if (!ina_node_test(req->node_op, &cqe)) {
                continue;
            }
            ina_node_count_recovered(req->module, req->node_op, &cqe);
            ina_node_op_release(req->plan, req->node_op);
            req->node_op = NULL;
            req->super.req_status.MPI_ERROR = ina_cqe_to_mpi(req->module, req->kind, &cqe);
        } else if (NULL != req->stripe_call) {
            /* Decided at post too: granted by every agent. */
            if (!ina_stripe_call_test(req->stripe_call, &cqe)) {
                continue;
            }
            if (ina_stripe_call_recovered(req->stripe_call)) {
                ++req->module->recovered_calls;
                req->module->recovered_offloaded +=
                    INA_OK == cqe.rc && INA_OFFLOADED == cqe.outcome;
            }
            ina_stripe_call_free(req->stripe_call);
            req->stripe_call = NULL;
            req->super.req_status.MPI_ERROR = ina_cqe_to_mpi(req->module, req->kind, &cqe);
        } else if (req->recovering) {
            if (!ina_call_recover_test(req->call, &cqe)) {
                continue;
            }
            mca_coll_ina_recovered(req->module, &cqe);
            ina_call_free(req->call);
            req->call = NULL;
            req->super.req_status.MPI_ERROR = ina_cqe_to_mpi(req->module, req->kind, &cqe);
        } else {
            if (!ina_call_test(req->call, &cqe)) {
                continue;
            }
            if (INA_ERR_LOST == cqe.rc && req->module->peers &&
                INA_OK == ina_call_recover_start(req->call, 0)) {
                /* The agent is gone: finish it with the other members. Never
                 * the host algorithm now: this rank may have started other
                 * non-blocking collectives since the post. */
                ++req->module->recovered_calls;
                req->recovering = true;
                mca_coll_ina_peers_lost();
                continue;
            }
            ina_call_free(req->call);
            req->call = NULL;
            req->super.req_status.MPI_ERROR = ina_cqe_to_mpi(req->module, req->kind, &cqe);
        }
        opal_list_remove_item(&c->outstanding, &req->super.super.super);
        opal_list_append(done, &req->super.super.super);
    }
    /* Then complete them, outside the walk of the outstanding list. */
    while (NULL != (req = (mca_coll_ina_req_t *) opal_list_remove_first(done))) {
        ina_req_complete(req, req->super.req_status.MPI_ERROR);
        ++completed;
    }
    busy = false;
    return completed;
}

/* Put a started call (an engine call, a striped call or a node-stage call)
 * on the outstanding list that mca_coll_ina_progress completes. */
static int ina_req_start(mca_coll_ina_req_t *req, mca_coll_ina_kind_t kind, ina_call_t *call,
                         ina_stripe_call_t *stripe_call, ina_node_op_t *node_op)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;

    req->call = call;
    req->stripe_call = stripe_call;
    req->node_op = node_op;
    req->kind = kind;
    req->recovering = false;
    if (NULL != call) {
        /* The engine's thread (coll_ina_progress_thread) moves it while the
         * application computes; completion stays ours, in mca_coll_ina_progress. */
        ina_call_background(call);
    }
    opal_list_append(&c->outstanding, &req->super.super.super);
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

/* ---- one call ------------------------------------------------------------ */

static int ina_fallback(mca_coll_ina_module_t *m, mca_coll_ina_kind_t kind,
                        mca_coll_ina_fallback_reason_t reason, const char *detail,
                        bool *fallback)
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
                             ina_outcome_t outcome, uint8_t status, const char *who,
                             bool *fallback)
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
    return ina_fallback(m, kind, denied ? MCA_COLL_INA_FB_DENIED : MCA_COLL_INA_FB_UNREACHABLE,
                        why, fallback);
}

/* Wait for a blocking call's CQE, progressing the rest of MPI meanwhile. */
static void ina_wait(ina_call_t *call, ina_cqe_t *cqe)
{
    while (!ina_call_test(call, cqe)) {
        opal_progress();
    }
}

/* The call through the node stage: on one node it is all of it; on
 * several, the node's part goes to the agent in the communicator's streams.
 * It moves while this rank is in MPI (the blocking wait below, or
 * mca_coll_ina_progress from opal_progress for a non-blocking one). Whether
 * it is offloaded is known before this returns, like a call to the agent
 * (every rank of the node reaches the call, then one agent round trip), so
 * a fallback runs the host algorithm now, in program order, on every rank. */
static int ina_try_node(mca_coll_ina_module_t *m, mca_coll_ina_plan_t *plan,
                        ompi_request_t **request, bool *fallback)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    const mca_coll_ina_kind_t kind = plan->kind;
    mca_coll_ina_req_t *req = NULL;
    ina_node_group_t *group;
    ina_node_op_t *op = NULL;
    const char *why = NULL;
    ina_cqe_t cqe;
    ina_status_t erc;
    uint64_t t0;

    group = mca_coll_ina_node_group(m, plan->bytes, &why);
    if (NULL == group) {
        if (c->required) {
            return ina_required_error(m, why);
        }
        return ina_fallback(m, kind, MCA_COLL_INA_FB_UNREACHABLE, why, fallback);
    }
    if (NULL != request && NULL == (req = ina_req_get(m, plan))) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    t0 = mca_coll_ina_now_ns();
    if (NULL != plan->node_op && INA_OK == ina_node_repost(group, plan->node_op)) {
        op = plan->node_op; /* a persistent start on one node: steps as planned */
        erc = INA_OK;
    } else {
        ina_node_op_free(plan->node_op); /* (another group's) */
        plan->node_op = NULL;
        erc = ina_node_post(group, &plan->desc, &op);
        if (INA_OK == erc && plan->reuse && m->node_only) {
            plan->node_op = op;
        }
    }
    if (INA_OK != erc) {
        /* Arguments the component checked already, or no memory for the
         * call's record: an error, never a partial fallback. */
        if (NULL != req) {
            ina_req_discard(req);
        }
        return INA_ERR_NOMEM == erc ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_ERR_BAD_PARAM;
    }
    /* Its first step goes in here too (ina_node_decision progresses). */
    while (!ina_node_decision(op, &cqe)) {
        opal_progress();
    }
    m->verdict_wait_ns += mca_coll_ina_now_ns() - t0;
    if (INA_OK != cqe.rc || INA_OFFLOADED != cqe.outcome) {
        /* Decided: the op is complete. */
        ina_node_count_recovered(m, op, &cqe);
        ina_node_op_release(plan, op);
        if (INA_OK == cqe.rc && INA_FALLBACK_UNREACHABLE == cqe.outcome &&
            INA_NODE_STATUS_LOST == cqe.status) {
            /* The stream leaders settled it without the agent: every rank
             * of the communicator got this very outcome. */
            mca_coll_ina_agent_lost(m);
            cqe.status = 0;
        }
        if (NULL != req) {
            ina_req_discard(req);
        }
        if (INA_OK != cqe.rc) {
            return ina_failed_error(m, kind, cqe.rc, &cqe);
        }
        return ina_not_offloaded(m, kind, cqe.outcome, cqe.status, "the agent", fallback);
    }
    ++m->offloaded_calls;
    ++m->offloaded_by_kind[kind];
    if (m->node_only) {
        ++m->node_only_calls;
    }
    if (NULL != req) {
        int rc;

        *request = &req->super;
        if (m->node_only && ina_node_test(op, &cqe)) {
            /* Done already (the other local ranks were there first), as a
             * blocking call would find it: complete the request now, not
             * in a later walk of the outstanding list. */
            ina_node_op_release(plan, op);
            ina_req_complete(req, ina_cqe_to_mpi(m, kind, &cqe));
            return OMPI_SUCCESS;
        }
        rc = ina_req_start(req, kind, NULL, NULL, op);
        return rc;
    }
    while (!ina_node_test(op, &cqe)) {
        opal_progress();
    }
    ina_node_count_recovered(m, op, &cqe);
    ina_node_op_free(op);
    if (INA_OK != cqe.rc || INA_OFFLOADED != cqe.outcome) {
        return ina_failed_error(m, kind, INA_OK != cqe.rc ? cqe.rc : INA_ERR_PROTO, &cqe);
    }
    return OMPI_SUCCESS;
}

/* The call striped over several agents (ina_stripe_*): like one agent's,
 * the verdict is known when the post returns (every agent's with a part of
 * the call: offloaded only if all of them granted), so a fallback runs the
 * host algorithm now, on every rank alike. The parts' staged callbacks run
 * in this thread only (ina_stripe_call_test, from the blocking wait or
 * mca_coll_ina_progress): a striped call is not handed to the engine's
 * progress thread. */
static int ina_try_stripe(mca_coll_ina_module_t *m, const mca_coll_ina_plan_t *plan,
                          ompi_request_t **request, bool *fallback)
{
    const mca_coll_ina_kind_t kind = plan->kind;
    mca_coll_ina_req_t *req = NULL;
    ina_stripe_call_t *call = NULL;
    ina_outcome_t outcome = INA_OFFLOADED;
    ina_cqe_t cqe = {.rc = INA_OK};
    ina_status_t erc;
    uint64_t t0;

    if (NULL != request && NULL == (req = ina_req_get(m, plan))) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    t0 = mca_coll_ina_now_ns();
    erc = ina_stripe_post(m->stripe, &plan->desc, 1, &call, &outcome);
    m->verdict_wait_ns += mca_coll_ina_now_ns() - t0;
    if (INA_OK != erc || INA_OFFLOADED != outcome) {
        if (NULL != req) {
            ina_req_discard(req);
        }
        if (ina_stripe_post_recovered(m->stripe)) {
            ++m->recovered_calls;
            if (INA_OK == erc && INA_FALLBACK_UNREACHABLE == outcome) {
                /* A part's members settled it without its agent, nothing held
                 * anywhere and every member in this call: alike everywhere. */
                mca_coll_ina_agent_lost(m);
            }
        }
        if (INA_OK != erc) {
            cqe.rc = erc;
            return ina_failed_error(m, kind, erc, &cqe);
        }
        return ina_not_offloaded(m, kind, outcome, ina_stripe_deny_status(m->stripe),
                                 "an agent the job is striped over", fallback);
    }
    ++m->offloaded_calls;
    ++m->offloaded_by_kind[kind];
    if (NULL != req) {
        *request = &req->super;
        return ina_req_start(req, kind, NULL, call, NULL);
    }
    while (!ina_stripe_call_test(call, &cqe)) {
        opal_progress();
    }
    if (ina_stripe_call_recovered(call)) {
        ++m->recovered_calls;
        m->recovered_offloaded += INA_OK == cqe.rc && INA_OFFLOADED == cqe.outcome;
    }
    ina_stripe_call_free(call);
    if (INA_OK != cqe.rc || INA_OFFLOADED != cqe.outcome) {
        return ina_failed_error(m, kind, INA_OK != cqe.rc ? cqe.rc : INA_ERR_PROTO, &cqe);
    }
    return OMPI_SUCCESS;
}

/* The call to the agent: the plan's engine plan where it is reused
 * (persistent requests: cut into blocks at the first start that reaches
 * the agent, then posted as it is), else its description. */
static ina_status_t ina_post_to_agent(mca_coll_ina_module_t *m, mca_coll_ina_plan_t *plan,
                                      ina_call_t **call, ina_outcome_t *outcome)
{
    if (plan->reuse && NULL == plan->engine) {
        (void) ina_job_plan(m->job, &plan->desc, &plan->engine);
    }
    if (NULL != plan->engine) {
        return ina_job_post_plan(m->job, plan->engine, call, outcome);
    }
    return ina_job_post(m->job, &plan->desc, call, outcome);
}

static int ina_try(mca_coll_ina_module_t *m, mca_coll_ina_plan_t *plan,
                   ompi_request_t **request, bool *fallback)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    const mca_coll_ina_kind_t kind = plan->kind;
    const size_t bytes = plan->bytes;
    const char *unsupported = plan->why;
    mca_coll_ina_req_t *req = NULL;
    ina_call_t *call = NULL;
    ina_outcome_t outcome = INA_OFFLOADED;
    ina_cqe_t cqe = {.rc = INA_OK};
    ina_status_t erc;
    uint64_t t0;

    *fallback = false;
    if (m->in_fallback > 0) {
        *fallback = true; /* inside a saved collective: neither offloaded nor counted */
        return OMPI_SUCCESS;
    }
    if (NULL != unsupported) {
        return ina_fallback(m, kind, MCA_COLL_INA_FB_UNSUPPORTED, unsupported, fallback);
    }
    if (c->thread_multiple) {
        /* The engine serves one caller at a time. */
        return ina_fallback(m, kind, MCA_COLL_INA_FB_UNSUPPORTED, "MPI_THREAD_MULTIPLE",
                            fallback);
    }
    if (MCA_COLL_INA_BARRIER != kind && bytes < c->min_bytes) {
        return ina_fallback(m, kind, MCA_COLL_INA_FB_THRESHOLD, "coll_ina_min_bytes", fallback);
    }
    if (m->node_only) {
        return ina_try_node(m, plan, request, fallback);
    }
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
    if (m->node_uplink) {
        return ina_try_node(m, plan, request, fallback);
    }
    if (NULL != m->stripe) {
        return ina_try_stripe(m, plan, request, fallback);
    }
    if (NULL != request && NULL == (req = ina_req_get(m, plan))) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }

    t0 = mca_coll_ina_now_ns();
    erc = ina_post_to_agent(m, plan, &call, &outcome);
    m->verdict_wait_ns += mca_coll_ina_now_ns() - t0;
    if (INA_ERR_LOST == erc && NULL != call) {
        /* The agent is gone before this rank heard the verdict (or before
         * it posted): the ranks settle the call among themselves, here in
         * program order, so a host algorithm may still start now. */
        erc = (ina_status_t) mca_coll_ina_recover(m, call, true, &cqe);
        ina_call_free(call);
        call = NULL;
        if (INA_OK == erc && INA_OFFLOADED != cqe.outcome) {
            if (NULL != req) {
                ina_req_discard(req);
            }
            return ina_not_offloaded(m, kind, cqe.outcome, cqe.status, "the agent (lost)",
                                     fallback);
        }
        if (INA_OK == erc) {
            ++m->offloaded_calls;
            ++m->offloaded_by_kind[kind];
            if (NULL != req) {
                *request = &req->super;
                ina_req_complete(req, MPI_SUCCESS);
            }
            return OMPI_SUCCESS;
        }
    }
    if (INA_OK != erc) {
        if (NULL != req) {
            ina_req_discard(req);
        }
        cqe.rc = erc;
        return ina_failed_error(m, kind, erc, &cqe);
    }
    if (INA_OFFLOADED != outcome) {
        if (NULL != req) {
            ina_req_discard(req);
        }
        return ina_not_offloaded(m, kind, outcome, ina_job_deny_status(m->job), "the agent",
                                 fallback);
    }
    ++m->offloaded_calls;
    ++m->offloaded_by_kind[kind];
    if (NULL != req) {
        *request = &req->super;
        return ina_req_start(req, kind, call, NULL, NULL);
    }
    ina_wait(call, &cqe);
    if (INA_ERR_LOST == cqe.rc && m->peers) {
        /* Lost in the middle: finish it with the other members; still in
         * this blocking call, so the host algorithm may start now. */
        (void) mca_coll_ina_recover(m, call, true, &cqe);
        if (INA_OK == cqe.rc && INA_OFFLOADED != cqe.outcome) {
            ina_call_free(call);
            --m->offloaded_calls;
            --m->offloaded_by_kind[kind];
            return ina_not_offloaded(m, kind, cqe.outcome, cqe.status, "the agent (lost)",
                                     fallback);
        }
    }
    ina_call_free(call);
    if (INA_OK != cqe.rc || INA_OFFLOADED != cqe.outcome) {
        return ina_failed_error(m, kind, INA_OK != cqe.rc ? cqe.rc : INA_ERR_PROTO, &cqe);
    }
    return OMPI_SUCCESS;
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
    ina_call_plan_free(plan->engine);
    plan->engine = NULL;
    ina_node_op_free(plan->node_op); /* complete: no start is in flight */
    plan->node_op = NULL;
    free(plan->counts);
    free(plan->part);
    plan->counts = NULL;
    plan->part = NULL;
}

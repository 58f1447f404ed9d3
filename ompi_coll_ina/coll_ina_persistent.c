/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * MPI-4 persistent collectives (MPI_Allreduce_init, MPI_Reduce_init,
 * MPI_Bcast_init, MPI_Allgather_init, MPI_Barrier_init,
 * MPI_Reduce_scatter_block_init; Open MPI 4.1's MPIX_*_init of its pcollreq
 * extension alike). *_init plans the call once (mca_coll_ina_plan_t: the
 * engine's description, the wire datatype and op, why it cannot be
 * offloaded if it cannot, a reduce-scatter's counts and in-place part
 * buffer; at its first start that reaches the agent, the engine's cut into
 * blocks too: ina_job_plan); each MPI_Start posts that plan, which decides
 * per start, alike on every rank, between the agent (or the node stage)
 * and the host form of the call (the saved non-blocking collective;
 * coll_ina_request.c). The start completes when that call does;
 * MPI_Request_free releases the plan.
 */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"

#include "coll_ina.h"

typedef struct mca_coll_ina_preq {
    /* The request MPI_*_init returns: an offloaded start completes it as it
     * completes any ina request (coll_ina_request.c), with no request of
     * its own; a start on the host completes it from the host's request. */
    mca_coll_ina_req_t super;
    mca_coll_ina_module_t *module; /* retained until MPI_Request_free */
    mca_coll_ina_plan_t plan;
    /* The call, as MPI_*_init gave it (the host form's arguments). */
    const void *sbuf;
    void *rbuf;
    int count, rcount, root;
    struct ompi_datatype_t *dtype, *rdtype;
    struct ompi_op_t *op;
    ompi_request_t *host; /* the last start's host request, if it ran on the host */
} mca_coll_ina_preq_t;

static OBJ_CLASS_INSTANCE(mca_coll_ina_preq_t, mca_coll_ina_req_t, NULL, NULL);

/* The persistent requests come from a free list, as libnbc's do: when an
 * application's datatype or op is kept for one, MPI_Request_free runs
 * ina_preq_free and then reads the request to release them, so its memory
 * must outlive ina_preq_free. */
static opal_free_list_t ina_preqs;
static bool ina_preqs_ready = false;

static mca_coll_ina_preq_t *ina_preq_get(void)
{
    mca_coll_ina_preq_t *p;

    if (!ina_preqs_ready) {
        OBJ_CONSTRUCT(&ina_preqs, opal_free_list_t);
        if (OPAL_SUCCESS != opal_free_list_init(&ina_preqs, sizeof(mca_coll_ina_preq_t),
                                                opal_cache_line_size,
                                                OBJ_CLASS(mca_coll_ina_preq_t), 0, 0, 4, -1, 4,
                                                NULL, 0, NULL, NULL, NULL)) {
            OBJ_DESTRUCT(&ina_preqs);
            return NULL;
        }
        ina_preqs_ready = true;
    }
    p = (mca_coll_ina_preq_t *) opal_free_list_get(&ina_preqs);
    if (NULL != p) {
        mca_coll_ina_nbc_reset(&p->super.super);
    }
    return p;
}

void mca_coll_ina_persistent_fini(void)
{
    if (ina_preqs_ready) {
        OBJ_DESTRUCT(&ina_preqs);
        ina_preqs_ready = false;
    }
}

/* A start on the host completed: so does the persistent request (its
 * status the host call's). Returns 0: the host request completes as usual,
 * and is freed at the next start or with the persistent request. */
static int ina_preq_host_done(ompi_request_t *host)
{
    mca_coll_ina_preq_t *p = (mca_coll_ina_preq_t *) host->req_complete_cb_data;

    p->super.super.super.req_status.MPI_ERROR = host->req_status.MPI_ERROR;
    ompi_request_complete(&p->super.super.super, true);
    return 0;
}

/* The host form of this start: the saved non-blocking collective. */
static int ina_preq_host(mca_coll_ina_preq_t *p)
{
    mca_coll_ina_module_t *m = p->module;
    ompi_communicator_t *comm = m->comm;
    const int64_t blocks = (int64_t) p->rcount * m->size;
    int rc;

    /* The grid's rings where they serve the start (coll_ina_grid.c). */
    switch (p->plan.kind) {
    case MCA_COLL_INA_ALLREDUCE:
        if (mca_coll_ina_grid_takes(m, p->count, p->dtype, p->op, false, true)) {
            return mca_coll_ina_grid_allreduce(m, p->sbuf, p->rbuf, p->count, p->dtype, p->op,
                                               &p->host);
        }
        break;
    case MCA_COLL_INA_REDUCE:
        if (mca_coll_ina_grid_takes(m, p->count, p->dtype, p->op, true, true)) {
            return mca_coll_ina_grid_reduce(m, p->sbuf, p->rbuf, p->count, p->dtype, p->op,
                                            p->root, &p->host);
        }
        break;
    case MCA_COLL_INA_BCAST:
        if (mca_coll_ina_grid_takes(m, p->count, p->dtype, NULL, true, true)) {
            return mca_coll_ina_grid_bcast(m, p->rbuf, p->count, p->dtype, p->root, &p->host);
        }
        break;
    case MCA_COLL_INA_ALLGATHER:
        if (mca_coll_ina_grid_takes(m, blocks, p->rdtype, NULL, true, true)) {
            return mca_coll_ina_grid_allgather(m, p->sbuf, p->count, p->dtype, p->rbuf, p->rcount,
                                               p->rdtype, &p->host);
        }
        break;
    case MCA_COLL_INA_REDUCE_SCATTER:
        if (mca_coll_ina_grid_takes(m, blocks, p->dtype, p->op, true, true)) {
            return mca_coll_ina_grid_reduce_scatter_block(m, p->sbuf, p->rbuf, p->rcount,
                                                          p->dtype, p->op, &p->host);
        }
        break;
    default:
        break;
    }
    switch (p->plan.kind) {
    case MCA_COLL_INA_ALLREDUCE:
        MCA_COLL_INA_CALL_PREVIOUS(rc, m, iallreduce, p->sbuf, p->rbuf, p->count, p->dtype, p->op,
                                   comm, &p->host);
        break;
    case MCA_COLL_INA_REDUCE:
        MCA_COLL_INA_CALL_PREVIOUS(rc, m, ireduce, p->sbuf, p->rbuf, p->count, p->dtype, p->op,
                                   p->root, comm, &p->host);
        break;
    case MCA_COLL_INA_BCAST:
        MCA_COLL_INA_CALL_PREVIOUS(rc, m, ibcast, p->rbuf, p->count, p->dtype, p->root, comm,
                                   &p->host);
        break;
    case MCA_COLL_INA_BARRIER:
        MCA_COLL_INA_CALL_PREVIOUS(rc, m, ibarrier, comm, &p->host);
        break;
    case MCA_COLL_INA_ALLGATHER:
        MCA_COLL_INA_CALL_PREVIOUS(rc, m, iallgather, p->sbuf, p->count, p->dtype, p->rbuf,
                                   p->rcount, p->rdtype, comm, &p->host);
        break;
    case MCA_COLL_INA_REDUCE_SCATTER:
        MCA_COLL_INA_CALL_PREVIOUS(rc, m, ireduce_scatter_block, p->sbuf, p->rbuf, p->rcount,
                                   p->dtype, p->op, comm, &p->host);
        break;
    default:
        rc = OMPI_ERR_NOT_SUPPORTED;
        break;
    }
    return rc;
}

/* One start: offloaded, or on the host on every rank alike. */
static int ina_preq_post(mca_coll_ina_preq_t *p)
{
    ompi_request_t *offloaded = NULL;
    bool fallback = false;
    int rc = mca_coll_ina_plan_post(p->module, &p->plan, &offloaded, &fallback);

    if (!fallback) {
        return rc; /* p->super is the start's request, or rc the failure */
    }
    p->super.super.super.req_complete = REQUEST_PENDING;
    p->super.super.super.req_state = OMPI_REQUEST_ACTIVE;
    p->super.super.super.req_status = ompi_status_empty;
    rc = ina_preq_host(p);
    if (OMPI_SUCCESS == rc) {
        (void) ompi_request_set_callback(p->host, ina_preq_host_done, p);
    }
    return rc;
}

static int ina_preq_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; ++i) {
        mca_coll_ina_preq_t *p = (mca_coll_ina_preq_t *) requests[i];
        int rc;

        if (NULL != p->host) {
            /* The previous start's, complete (MPI_Start is erroneous on an
             * active request). */
            (void) ompi_request_free(&p->host);
        }
        rc = ina_preq_post(p);
        if (OMPI_SUCCESS != rc) {
            p->host = NULL;
            p->super.super.super.req_state = OMPI_REQUEST_INACTIVE;
            p->super.super.super.req_complete = REQUEST_COMPLETED;
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

static int ina_preq_free(ompi_request_t **request)
{
    mca_coll_ina_preq_t *p = (mca_coll_ina_preq_t *) *request;

    if (OMPI_REQUEST_ACTIVE == p->super.super.super.req_state &&
        !REQUEST_COMPLETE(&p->super.super.super)) {
        return MPI_ERR_REQUEST; /* MPI-4: freeing an active persistent collective */
    }
    if (NULL != p->host) {
        (void) ompi_request_free(&p->host);
    }
    mca_coll_ina_plan_fini(&p->plan);
    if (NULL != p->dtype) {
        OBJ_RELEASE(p->dtype);
    }
    if (NULL != p->rdtype) {
        OBJ_RELEASE(p->rdtype);
    }
    if (NULL != p->op) {
        OBJ_RELEASE(p->op);
    }
    OBJ_RELEASE(p->module);
    OMPI_REQUEST_FINI(&p->super.super.super);
    opal_free_list_return(&ina_preqs, &p->super.super.super.super);
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int ina_preq_cancel(ompi_request_t *request, int complete)
{
    /* A collective cannot be cancelled: each start completes normally. */
    (void) request;
    (void) complete;
    return OMPI_SUCCESS;
}

/* The request of one MPI_*_init, its call planned (`plan`, which it
 * takes; `rc` the plan's result): inactive until MPI_Start. The datatypes,
 * op and module are retained until MPI_Request_free (the caller may free
 * its handles before). */
static int ina_preq_new(mca_coll_ina_module_t *m, mca_coll_ina_plan_t *plan, int rc,
                        const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                        int rcount, struct ompi_datatype_t *rdtype, struct ompi_op_t *op, int root,
                        ompi_request_t **request)
{
    mca_coll_ina_preq_t *p = OMPI_SUCCESS == rc ? ina_preq_get() : NULL;

    if (NULL == p) {
        mca_coll_ina_plan_fini(plan);
        return OMPI_SUCCESS != rc ? rc : OMPI_ERR_OUT_OF_RESOURCE;
    }
    OMPI_REQUEST_INIT(&p->super.super.super, true);
    p->super.super.super.req_type = OMPI_REQUEST_COLL;
    p->super.super.super.req_start = ina_preq_start;
    p->super.super.super.req_free = ina_preq_free;
    p->super.super.super.req_cancel = ina_preq_cancel;
    p->super.super.super.req_mpi_object.comm = m->comm;
    p->super.plan = &p->plan;
    p->super.module = NULL; /* each offloaded start's */
    p->super.freed = false;
    p->module = m;
    p->plan = *plan;
    p->plan.reuse = true;
    p->plan.persistent = &p->super;
    p->sbuf = sbuf;
    p->rbuf = rbuf;
    p->count = count;
    p->rcount = rcount;
    p->root = root;
    p->dtype = dtype;
    p->rdtype = rdtype;
    p->op = op;
    p->host = NULL;
    OBJ_RETAIN(m);
    if (NULL != dtype) {
        OBJ_RETAIN(dtype);
    }
    if (NULL != rdtype) {
        OBJ_RETAIN(rdtype);
    }
    if (NULL != op) {
        OBJ_RETAIN(op);
    }
    *request = &p->super.super.super;
    return OMPI_SUCCESS;
}

int mca_coll_ina_allreduce_init(const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_ina_plan_t plan;
    int rc = mca_coll_ina_allreduce_plan(&plan, sbuf, rbuf, count, dtype, op);

    (void) comm;
    (void) info;
    return ina_preq_new((mca_coll_ina_module_t *) module, &plan, rc, sbuf, rbuf, count, dtype, 0,
                        NULL, op, 0, request);
}

int mca_coll_ina_reduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                             struct ompi_info_t *info, ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    int rc = mca_coll_ina_reduce_plan(&plan, sbuf, rbuf, count, dtype, op, root, m->rank);

    (void) comm;
    (void) info;
    return ina_preq_new(m, &plan, rc, sbuf, rbuf, count, dtype, 0, NULL, op, root, request);
}

int mca_coll_ina_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                            struct ompi_communicator_t *comm, struct ompi_info_t *info,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_ina_plan_t plan;
    int rc = mca_coll_ina_bcast_plan(&plan, buf, count, dtype, root);

    (void) comm;
    (void) info;
    return ina_preq_new((mca_coll_ina_module_t *) module, &plan, rc, NULL, buf, count, dtype, 0,
                        NULL, NULL, root, request);
}

int mca_coll_ina_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_ina_plan_t plan;
    int rc = mca_coll_ina_barrier_plan(&plan);

    (void) comm;
    (void) info;
    return ina_preq_new((mca_coll_ina_module_t *) module, &plan, rc, NULL, NULL, 0, NULL, 0, NULL,
                        NULL, 0, request);
}

int mca_coll_ina_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    int rc = mca_coll_ina_allgather_plan(&plan, m, sbuf, scount, sdtype, rbuf, rcount, rdtype);

    (void) comm;
    (void) info;
    return ina_preq_new(m, &plan, rc, sbuf, rbuf, scount, MPI_IN_PLACE == sbuf ? NULL : sdtype,
                        rcount, rdtype, NULL, 0, request);
}

int mca_coll_ina_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                           struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                           struct ompi_communicator_t *comm,
                                           struct ompi_info_t *info, ompi_request_t **request,
                                           mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    int rc = mca_coll_ina_reduce_scatter_block_plan(&plan, m, sbuf, rbuf, rcount, dtype, op);

    (void) comm;
    (void) info;
    return ina_preq_new(m, &plan, rc, sbuf, rbuf, 0, dtype, rcount, NULL, op, 0, request);
}

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * MPI_Reduce_scatter_block and MPI_Reduce_scatter through the aggregation
 * agent: every member streams the whole input vector, and receives only the
 * blocks that overlap its part of the reduced vector.
 *
 * MPI_IN_PLACE: the input vector is in rbuf and the result (this rank's
 * part) must land at the start of rbuf. The engine reads the input from
 * rbuf (sbuf == rbuf) and writes this rank's part into a separate buffer of
 * recvcounts[rank] elements, copied to rbuf when the call completed:
 * writing the part straight into rbuf would overwrite input elements that
 * the rank may still have to send (its part's element j lands where input
 * element j was, and part elements arrive as soon as their blocks are
 * reduced, not after the whole input was read). The copy costs 1/N of the
 * vector, not the whole input.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "coll_ina.h"

/* Plan a call whose per-rank element counts are `counts` (nmembers entries,
 * the same on every rank; the plan takes them). */
static int ina_reduce_scatter_plan(mca_coll_ina_plan_t *plan, const mca_coll_ina_module_t *m,
                                   const void *sbuf, void *rbuf, uint64_t *counts,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    ina_coll_desc_t *desc = &plan->desc;
    uint64_t total = 0;
    size_t dsize;
    int i;

    memset(plan, 0, sizeof(*plan));
    plan->kind = MCA_COLL_INA_REDUCE_SCATTER;
    plan->counts = counts;
    for (i = 0; i < m->size; ++i) {
        total += counts[i];
    }
    plan->empty = 0 == total;
    plan->why = mca_coll_ina_reduction_to_wire(dtype, op, &desc->dtype, &desc->op);
    if (plan->empty || NULL != plan->why) {
        return OMPI_SUCCESS;
    }
    dsize = ina_proto_dtype_size(desc->dtype);
    plan->bytes = (size_t) total * dsize;
    desc->coll = INA_COLL_REDUCE_SCATTER;
    desc->sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    desc->rbuf = rbuf;
    desc->count = total;
    desc->recvcounts = counts;
    if (MPI_IN_PLACE == sbuf && counts[m->rank] > 0) {
        /* Whether a call is offloaded is decided when it is posted, alike
         * on every rank; a failing allocation here is this rank's error. */
        plan->part_bytes = (size_t) counts[m->rank] * dsize;
        plan->part = malloc(plan->part_bytes);
        if (NULL == plan->part) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        plan->part_dst = rbuf;
        desc->rbuf = plan->part;
    }
    return OMPI_SUCCESS;
}

int mca_coll_ina_reduce_scatter_block_plan(mca_coll_ina_plan_t *plan,
                                           const mca_coll_ina_module_t *m, const void *sbuf,
                                           void *rbuf, int rcount,
                                           struct ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    uint64_t *counts = malloc(sizeof(*counts) * (size_t) m->size);
    int i;

    if (NULL == counts) {
        memset(plan, 0, sizeof(*plan));
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (i = 0; i < m->size; ++i) {
        counts[i] = rcount > 0 ? (uint64_t) rcount : 0;
    }
    return ina_reduce_scatter_plan(plan, m, sbuf, rbuf, counts, dtype, op);
}

/* The blocking call of a plan; the plan is released. */
static int ina_reduce_scatter_run(mca_coll_ina_module_t *m, mca_coll_ina_plan_t *plan, int rc,
                                  bool *fallback)
{
    *fallback = false;
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ina_plan_post(m, plan, NULL, fallback);
        if (!*fallback && OMPI_SUCCESS == rc) {
            mca_coll_ina_plan_complete(plan);
        }
    }
    mca_coll_ina_plan_fini(plan);
    return rc;
}

int mca_coll_ina_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      struct ompi_communicator_t *comm,
                                      mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    bool fallback;
    int rc;

    rc = mca_coll_ina_reduce_scatter_block_plan(&plan, m, sbuf, rbuf, rcount, dtype, op);
    rc = ina_reduce_scatter_run(m, &plan, rc, &fallback);
    if (!fallback) {
        return rc;
    }
    /* On the host: the hyper-square's rings where they serve the call. */
    if (0 == m->in_fallback &&
        mca_coll_ina_grid_takes(m, (int64_t) rcount * m->size, dtype, op, true, false)) {
        return mca_coll_ina_grid_reduce_scatter_block(m, sbuf, rbuf, rcount, dtype, op, NULL);
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, reduce_scatter_block, sbuf, rbuf, rcount, dtype, op, comm);
}

/* The agents do not take a non-blocking reduce-scatter (its persistent
 * form they do): the grid's rings where they serve it, else the previous
 * component's. */
int mca_coll_ina_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm,
                                       ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;

    if (0 == m->in_fallback &&
        mca_coll_ina_grid_takes(m, (int64_t) rcount * m->size, dtype, op, true, true)) {
        return mca_coll_ina_grid_reduce_scatter_block(m, sbuf, rbuf, rcount, dtype, op, request);
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, ireduce_scatter_block, sbuf, rbuf, rcount, dtype, op, comm,
                                 request);
}

int mca_coll_ina_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm,
                                mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    uint64_t *counts;
    bool fallback;
    int i, rc;

    counts = malloc(sizeof(*counts) * (size_t) m->size);
    if (NULL == counts) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (i = 0; i < m->size; ++i) {
        counts[i] = (uint64_t) (rcounts[i] > 0 ? rcounts[i] : 0);
    }
    rc = ina_reduce_scatter_plan(&plan, m, sbuf, rbuf, counts, dtype, op);
    rc = ina_reduce_scatter_run(m, &plan, rc, &fallback);
    if (!fallback) {
        return rc;
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, reduce_scatter, sbuf, rbuf, rcounts, dtype, op, comm);
}

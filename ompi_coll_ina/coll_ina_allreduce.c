/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * MPI_Allreduce and MPI_Iallreduce through the aggregation agent, with a
 * per-call fallback to the collective ina replaced (coll_ina_request.c says
 * why every fallback decision is the same on all ranks).
 */
#include "ompi_config.h"

#include <string.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "coll_ina.h"

/* In place the engine reads and writes rbuf (sbuf == rbuf). */
int mca_coll_ina_allreduce_plan(mca_coll_ina_plan_t *plan, const void *sbuf, void *rbuf,
                                int count, struct ompi_datatype_t *dtype,
                                struct ompi_op_t *op)
{
    ina_coll_desc_t *desc = &plan->desc;

    memset(plan, 0, sizeof(*plan));
    plan->kind = MCA_COLL_INA_ALLREDUCE;
    plan->empty = count <= 0; /* nothing to reduce, on every rank alike */
    plan->why = mca_coll_ina_reduction_to_wire(dtype, op, &desc->dtype, &desc->op);
    if (plan->empty || NULL != plan->why) {
        return OMPI_SUCCESS;
    }
    desc->coll = INA_COLL_ALLREDUCE;
    desc->sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    desc->rbuf = rbuf;
    desc->count = (uint64_t) count;
    plan->bytes = (size_t) count * ina_proto_dtype_size(desc->dtype);
    return OMPI_SUCCESS;
}

int mca_coll_ina_allreduce(const void *sbuf, void *rbuf, int count,
                           struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    bool fallback;
    int rc;

    (void) mca_coll_ina_allreduce_plan(&plan, sbuf, rbuf, count, dtype, op);
    rc = mca_coll_ina_plan_post(m, &plan, NULL, &fallback);
    if (!fallback) {
        return rc;
    }
    /* On the host: the hyper-square's rings where they serve the call (not
     * inside a saved collective, which runs its own algorithm). */
    if (0 == m->in_fallback && mca_coll_ina_grid_takes(m, count, dtype, op, false, false)) {
        return mca_coll_ina_grid_allreduce(m, sbuf, rbuf, count, dtype, op, NULL);
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, allreduce, sbuf, rbuf, count, dtype, op, comm);
}

/* Open MPI agrees on a new communicator's context id with non-blocking
 * allreduces of one MPI_INT on the parent (MAX to propose an id, MIN to
 * confirm it, MIN again to activate), posted from its progress engine. With
 * several creations of one parent in flight, which creation posts next
 * depends on when each rank's earlier reductions completed, so the ranks may
 * post them in different orders: calls of one shape that belong to
 * different creations then meet, and the ranks assign the new context ids
 * to different communicators, a program that can only hang. ina cannot tell
 * those calls apart, so it leaves every call of that shape to the host
 * algorithm (libnbc, whose timing is Open MPI's own), which costs nothing
 * worth offloading: four bytes. Such a call is not counted as a fallback
 * either: it is Open MPI's, not the application's, as a rule. */
static bool ina_context_id_shape(int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    return 1 == count && MPI_INT == dtype && (MPI_MAX == op || MPI_MIN == op);
}

int mca_coll_ina_iallreduce(const void *sbuf, void *rbuf, int count,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    bool fallback;
    int rc;

    if (ina_context_id_shape(count, dtype, op)) {
        /* Open MPI's own call, most likely: neither offloaded nor counted
         * (the communicator's fallback counters are the application's). */
        ++m->in_fallback;
        rc = m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                    m->previous_iallreduce_module);
        --m->in_fallback;
        return rc;
    }
    (void) mca_coll_ina_allreduce_plan(&plan, sbuf, rbuf, count, dtype, op);
    rc = mca_coll_ina_plan_post(m, &plan, request, &fallback);
    if (!fallback) {
        return rc;
    }
    if (0 == m->in_fallback && mca_coll_ina_grid_takes(m, count, dtype, op, false, true)) {
        return mca_coll_ina_grid_allreduce(m, sbuf, rbuf, count, dtype, op, request);
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, iallreduce, sbuf, rbuf, count, dtype, op, comm, request);
}

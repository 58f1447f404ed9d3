/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * MPI_Reduce and MPI_Ireduce through the aggregation agent: every member
 * streams its data, only the root asks for the result blocks (the others
 * get ACK-only results), with a per-call fallback to the saved collective.
 */
#include "ompi_config.h"

#include <string.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "coll_ina.h"

/* MPI_IN_PLACE is the root's: its input is in rbuf, which the engine reads
 * and overwrites (sbuf == rbuf). rbuf means nothing on the other ranks. */
int mca_coll_ina_reduce_plan(mca_coll_ina_plan_t *plan, const void *sbuf, void *rbuf,
                             int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             int root, int rank)
{
    ina_coll_desc_t *desc = &plan->desc;

    memset(plan, 0, sizeof(*plan));
    plan->kind = MCA_COLL_INA_REDUCE;
    plan->empty = count <= 0;
    plan->why = mca_coll_ina_reduction_to_wire(dtype, op, &desc->dtype, &desc->op);
    if (plan->empty || NULL != plan->why) {
        return OMPI_SUCCESS;
    }
    desc->coll = INA_COLL_REDUCE;
    desc->sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    desc->rbuf = (rank == root) ? rbuf : NULL;
    desc->count = (uint64_t) count;
    desc->root = (uint32_t) root;
    plan->bytes = (size_t) count * ina_proto_dtype_size(desc->dtype);
    return OMPI_SUCCESS;
}

int mca_coll_ina_reduce(const void *sbuf, void *rbuf, int count,
                        struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    bool fallback;
    int rc;

    (void) mca_coll_ina_reduce_plan(&plan, sbuf, rbuf, count, dtype, op, root, m->rank);
    rc = mca_coll_ina_plan_post(m, &plan, NULL, &fallback);
    if (!fallback) {
        return rc;
    }
    /* On the host: the hyper-square's rings where they serve the call. */
    if (0 == m->in_fallback && mca_coll_ina_grid_takes(m, count, dtype, op, true, false)) {
        return mca_coll_ina_grid_reduce(m, sbuf, rbuf, count, dtype, op, root, NULL);
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, reduce, sbuf, rbuf, count, dtype, op, root, comm);
}

int mca_coll_ina_ireduce(const void *sbuf, void *rbuf, int count,
                         struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    bool fallback;
    int rc;

    (void) mca_coll_ina_reduce_plan(&plan, sbuf, rbuf, count, dtype, op, root, m->rank);
    rc = mca_coll_ina_plan_post(m, &plan, request, &fallback);
    if (!fallback) {
        return rc;
    }
    if (0 == m->in_fallback && mca_coll_ina_grid_takes(m, count, dtype, op, true, true)) {
        return mca_coll_ina_grid_reduce(m, sbuf, rbuf, count, dtype, op, root, request);
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, ireduce, sbuf, rbuf, count, dtype, op, root, comm, request);
}

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * MPI_Bcast and MPI_Ibcast through the aggregation agent: the root streams
 * its bytes, the others send credits and receive every block. Any datatype
 * whose `count` elements lie contiguous in memory moves as bytes.
 */
#include "ompi_config.h"

#include <string.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "coll_ina.h"

int mca_coll_ina_bcast_plan(mca_coll_ina_plan_t *plan, void *buf, int count,
                            struct ompi_datatype_t *dtype, int root)
{
    ina_coll_desc_t *desc = &plan->desc;
    ptrdiff_t offset = 0;

    memset(plan, 0, sizeof(*plan));
    plan->kind = MCA_COLL_INA_BCAST;
    if (count <= 0) {
        plan->empty = true;
        return OMPI_SUCCESS;
    }
    plan->why = mca_coll_ina_contiguous_bytes(dtype, (size_t) count, &plan->bytes, &offset);
    if (NULL != plan->why) {
        return OMPI_SUCCESS;
    }
    plan->empty = 0 == plan->bytes; /* elements of size 0 */
    desc->coll = INA_COLL_BCAST;
    desc->op = INA_OP_REPLACE;
    desc->dtype = INA_DT_UINT8;
    desc->rbuf = (char *) buf + offset;
    desc->count = (uint64_t) plan->bytes;
    desc->root = (uint32_t) root;
    return OMPI_SUCCESS;
}

int mca_coll_ina_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    bool fallback;
    int rc;

    (void) mca_coll_ina_bcast_plan(&plan, buf, count, dtype, root);
    rc = mca_coll_ina_plan_post(m, &plan, NULL, &fallback);
    if (!fallback) {
        return rc;
    }
    /* On the host: the hyper-square's rings where they serve the call. */
    if (0 == m->in_fallback && mca_coll_ina_grid_takes(m, count, dtype, NULL, true, false)) {
        return mca_coll_ina_grid_bcast(m, buf, count, dtype, root, NULL);
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, bcast, buf, count, dtype, root, comm);
}

int mca_coll_ina_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    bool fallback;
    int rc;

    (void) mca_coll_ina_bcast_plan(&plan, buf, count, dtype, root);
    rc = mca_coll_ina_plan_post(m, &plan, request, &fallback);
    if (!fallback) {
        return rc;
    }
    if (0 == m->in_fallback && mca_coll_ina_grid_takes(m, count, dtype, NULL, true, true)) {
        return mca_coll_ina_grid_bcast(m, buf, count, dtype, root, request);
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, ibcast, buf, count, dtype, root, comm, request);
}

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * MPI_Barrier and MPI_Ibarrier through the aggregation agent: one empty
 * block, completed when every member's credit arrived; its result is the
 * release of every member.
 */
#include "ompi_config.h"

#include <string.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "coll_ina.h"

int mca_coll_ina_barrier_plan(mca_coll_ina_plan_t *plan)
{
    memset(plan, 0, sizeof(*plan));
    plan->kind = MCA_COLL_INA_BARRIER;
    plan->desc.coll = INA_COLL_BARRIER;
    plan->desc.op = INA_OP_REPLACE;
    plan->desc.dtype = INA_DT_UINT8;
    return OMPI_SUCCESS;
}

int mca_coll_ina_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    bool fallback;
    int rc;

    (void) mca_coll_ina_barrier_plan(&plan);
    rc = mca_coll_ina_plan_post(m, &plan, NULL, &fallback);
    if (!fallback) {
        return rc;
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, barrier, comm);
}

int mca_coll_ina_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    bool fallback;
    int rc;

    (void) mca_coll_ina_barrier_plan(&plan);
    rc = mca_coll_ina_plan_post(m, &plan, request, &fallback);
    if (!fallback) {
        return rc;
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, ibarrier, comm, request);
}

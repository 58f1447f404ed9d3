/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * MPI_Barrier and MPI_Ibarrier through the aggregation agent: one empty
 * block, completed when every member's credit arrived; its result is the
 * release of every member.
 */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "coll_ina.h"

static void ina_barrier_desc(ina_coll_desc_t *desc)
{
    desc->coll = INA_COLL_BARRIER;
    desc->op = INA_OP_REPLACE;
    desc->dtype = INA_DT_UINT8;
    desc->sbuf = NULL;
    desc->rbuf = NULL;
    desc->count = 0;
    desc->root = 0;
    desc->recvcounts = NULL;
}

int mca_coll_ina_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    ina_coll_desc_t desc;
    bool fallback;
    int rc;

    ina_barrier_desc(&desc);
    rc = mca_coll_ina_try(m, MCA_COLL_INA_BARRIER, &desc, 0, NULL, NULL, &fallback);
    if (!fallback) {
        return rc;
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, barrier, comm);
}

int mca_coll_ina_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    ina_coll_desc_t desc;
    bool fallback;
    int rc;

    ina_barrier_desc(&desc);
    rc = mca_coll_ina_try(m, MCA_COLL_INA_BARRIER, &desc, 0, NULL, request, &fallback);
    if (!fallback) {
        return rc;
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, ibarrier, comm, request);
}

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * MPI_Bcast and MPI_Ibcast through the aggregation agent: the root streams
 * its bytes, the others send credits and receive every block. Any datatype
 * whose `count` elements lie contiguous in memory moves as bytes.
 */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "coll_ina.h"

static const char *ina_bcast_desc(ina_coll_desc_t *desc, size_t *bytes, void *buf, int count,
                                  struct ompi_datatype_t *dtype, int root)
{
    ptrdiff_t offset = 0;
    const char *why = mca_coll_ina_contiguous_bytes(dtype, (size_t) count, bytes, &offset);

    if (NULL != why) {
        return why;
    }
    desc->coll = INA_COLL_BCAST;
    desc->op = INA_OP_REPLACE;
    desc->dtype = INA_DT_UINT8;
    desc->sbuf = NULL;
    desc->rbuf = (char *) buf + offset;
    desc->count = (uint64_t) *bytes;
    desc->root = (uint32_t) root;
    desc->recvcounts = NULL;
    return NULL;
}

int mca_coll_ina_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    ina_coll_desc_t desc;
    size_t bytes = 0;
    const char *why;
    bool fallback;
    int rc;

    if (count <= 0) {
        return MPI_SUCCESS;
    }
    why = ina_bcast_desc(&desc, &bytes, buf, count, dtype, root);
    if (0 == bytes && NULL == why) {
        return MPI_SUCCESS; /* elements of size 0 */
    }
    rc = mca_coll_ina_try(m, MCA_COLL_INA_BCAST, &desc, bytes, why, NULL, &fallback);
    if (!fallback) {
        return rc;
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, bcast, buf, count, dtype, root, comm);
}

int mca_coll_ina_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    ina_coll_desc_t desc;
    size_t bytes = 0;
    const char *why;
    bool fallback;
    int rc;

    if (count <= 0) {
        return mca_coll_ina_request_done(m, request);
    }
    why = ina_bcast_desc(&desc, &bytes, buf, count, dtype, root);
    if (0 == bytes && NULL == why) {
        return mca_coll_ina_request_done(m, request);
    }
    rc = mca_coll_ina_try(m, MCA_COLL_INA_BCAST, &desc, bytes, why, request, &fallback);
    if (!fallback) {
        return rc;
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, ibcast, buf, count, dtype, root, comm, request);
}

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * MPI_Reduce and MPI_Ireduce through the aggregation agent: every member
 * streams its data, only the root asks for the result blocks (the others
 * get ACK-only results), with a per-call fallback to the saved collective.
 */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "coll_ina.h"

/* Describe the call; NULL or why it cannot be offloaded. MPI_IN_PLACE is
 * the root's: its input is in rbuf, which the engine reads and overwrites
 * (sbuf == rbuf). rbuf means nothing on the other ranks. */
static const char *ina_reduce_desc(ina_coll_desc_t *desc, size_t *bytes, const void *sbuf,
                                   void *rbuf, int count, struct ompi_datatype_t *dtype,
                                   struct ompi_op_t *op, int root, int rank)
{
    const char *why = mca_coll_ina_reduction_to_wire(dtype, op, &desc->dtype, &desc->op);

    if (NULL != why) {
        return why;
    }
    desc->coll = INA_COLL_REDUCE;
    desc->sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
    desc->rbuf = (rank == root) ? rbuf : NULL;
    desc->count = (uint64_t) count;
    desc->root = (uint32_t) root;
    desc->recvcounts = NULL;
    *bytes = (size_t) count * ina_proto_dtype_size(desc->dtype);
    return NULL;
}

int mca_coll_ina_reduce(const void *sbuf, void *rbuf, int count,
                        struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
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
    why = ina_reduce_desc(&desc, &bytes, sbuf, rbuf, count, dtype, op, root, m->rank);
    rc = mca_coll_ina_try(m, MCA_COLL_INA_REDUCE, &desc, bytes, why, NULL, &fallback);
    if (!fallback) {
        return rc;
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, reduce, sbuf, rbuf, count, dtype, op, root, comm);
}

int mca_coll_ina_ireduce(const void *sbuf, void *rbuf, int count,
                         struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
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
    why = ina_reduce_desc(&desc, &bytes, sbuf, rbuf, count, dtype, op, root, m->rank);
    rc = mca_coll_ina_try(m, MCA_COLL_INA_REDUCE, &desc, bytes, why, request, &fallback);
    if (!fallback) {
        return rc;
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, ireduce, sbuf, rbuf, count, dtype, op, root, comm, request);
}

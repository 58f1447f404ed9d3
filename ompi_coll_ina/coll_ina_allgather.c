/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * MPI_Allgather and MPI_Iallgather through the aggregation agent: the result
 * vector is the members' chunks concatenated; each member streams its chunk
 * into its place and receives every block. Contiguous datatypes move as
 * bytes; send and receive types may differ as long as the chunk sizes in
 * bytes agree (MPI requires matching type signatures).
 */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "coll_ina.h"

/* Describe the call; NULL or why it cannot be offloaded. *bytes is the
 * whole result (every chunk). MPI_IN_PLACE: this rank's chunk is already at
 * its place in rbuf (engine sbuf NULL). */
static const char *ina_allgather_desc(ina_coll_desc_t *desc, size_t *bytes, int size,
                                      const void *sbuf, int scount,
                                      struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                      struct ompi_datatype_t *rdtype)
{
    size_t chunk = 0, sbytes = 0;
    ptrdiff_t roffset = 0, soffset = 0;
    const char *why;

    why = mca_coll_ina_contiguous_bytes(rdtype, (size_t) rcount * (size_t) size, bytes,
                                        &roffset);
    if (NULL != why) {
        return why;
    }
    chunk = *bytes / (size_t) size;
    if (MPI_IN_PLACE != sbuf) {
        why = mca_coll_ina_contiguous_bytes(sdtype, (size_t) scount, &sbytes, &soffset);
        if (NULL != why) {
            return why;
        }
        if (sbytes != chunk) {
            return "send and receive sizes differ"; /* erroneous: the host reports it */
        }
    }
    desc->coll = INA_COLL_ALLGATHER;
    desc->op = INA_OP_REPLACE;
    desc->dtype = INA_DT_UINT8;
    desc->sbuf = (MPI_IN_PLACE == sbuf) ? NULL : (const char *) sbuf + soffset;
    desc->rbuf = (char *) rbuf + roffset;
    desc->count = (uint64_t) chunk;
    desc->root = 0;
    desc->recvcounts = NULL;
    return NULL;
}

int mca_coll_ina_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    ina_coll_desc_t desc;
    size_t bytes = 0;
    const char *why;
    bool fallback;
    int rc;

    if (rcount <= 0) {
        return MPI_SUCCESS; /* rcount is the same on every rank */
    }
    why = ina_allgather_desc(&desc, &bytes, m->size, sbuf, scount, sdtype, rbuf, rcount, rdtype);
    why = NULL != why ? why : m->allgather_unsupported;
    if (0 == bytes && NULL == why) {
        return MPI_SUCCESS;
    }
    rc = mca_coll_ina_try(m, MCA_COLL_INA_ALLGATHER, &desc, bytes, why, NULL, &fallback);
    if (!fallback) {
        return rc;
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
}

int mca_coll_ina_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    ina_coll_desc_t desc;
    size_t bytes = 0;
    const char *why;
    bool fallback;
    int rc;

    if (rcount <= 0) {
        return mca_coll_ina_request_done(m, request);
    }
    why = ina_allgather_desc(&desc, &bytes, m->size, sbuf, scount, sdtype, rbuf, rcount, rdtype);
    why = NULL != why ? why : m->allgather_unsupported;
    if (0 == bytes && NULL == why) {
        return mca_coll_ina_request_done(m, request);
    }
    rc = mca_coll_ina_try(m, MCA_COLL_INA_ALLGATHER, &desc, bytes, why, request, &fallback);
    if (!fallback) {
        return rc;
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, iallgather, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                 request);
}

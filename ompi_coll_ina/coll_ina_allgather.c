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

#include <string.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "coll_ina.h"

/* plan->bytes is the whole result (every chunk). MPI_IN_PLACE: this rank's
 * chunk is already at its place in rbuf (engine sbuf NULL). */
static const char *ina_allgather_desc(mca_coll_ina_plan_t *plan, int size, const void *sbuf,
                                      int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                      int rcount, struct ompi_datatype_t *rdtype)
{
    ina_coll_desc_t *desc = &plan->desc;
    size_t chunk = 0, sbytes = 0;
    ptrdiff_t roffset = 0, soffset = 0;
    const char *why;

    why = mca_coll_ina_contiguous_bytes(rdtype, (size_t) rcount * (size_t) size, &plan->bytes,
                                        &roffset);
    if (NULL != why) {
        return why;
    }
    chunk = plan->bytes / (size_t) size;
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
    return NULL;
}

int mca_coll_ina_allgather_plan(mca_coll_ina_plan_t *plan, const mca_coll_ina_module_t *m,
                                const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                void *rbuf, int rcount, struct ompi_datatype_t *rdtype)
{
    memset(plan, 0, sizeof(*plan));
    plan->kind = MCA_COLL_INA_ALLGATHER;
    if (rcount <= 0) {
        plan->empty = true; /* rcount is the same on every rank */
        return OMPI_SUCCESS;
    }
    plan->why = ina_allgather_desc(plan, m->size, sbuf, scount, sdtype, rbuf, rcount, rdtype);
    plan->why = NULL != plan->why ? plan->why : m->allgather_unsupported;
    plan->empty = 0 == plan->bytes && NULL == plan->why;
    return OMPI_SUCCESS;
}

int mca_coll_ina_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    bool fallback;
    int rc;

    (void) mca_coll_ina_allgather_plan(&plan, m, sbuf, scount, sdtype, rbuf, rcount, rdtype);
    rc = mca_coll_ina_plan_post(m, &plan, NULL, &fallback);
    if (!fallback) {
        return rc;
    }
    /* On the host: the hyper-square's rings where they serve the call. */
    if (0 == m->in_fallback &&
        mca_coll_ina_grid_takes(m, (int64_t) rcount * m->size, rdtype, NULL, true, false)) {
        return mca_coll_ina_grid_allgather(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, NULL);
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
}

int mca_coll_ina_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    mca_coll_ina_plan_t plan;
    bool fallback;
    int rc;

    (void) mca_coll_ina_allgather_plan(&plan, m, sbuf, scount, sdtype, rbuf, rcount, rdtype);
    rc = mca_coll_ina_plan_post(m, &plan, request, &fallback);
    if (!fallback) {
        return rc;
    }
    if (0 == m->in_fallback &&
        mca_coll_ina_grid_takes(m, (int64_t) rcount * m->size, rdtype, NULL, true, true)) {
        return mca_coll_ina_grid_allgather(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, request);
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, iallgather, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                 request);
}

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

/* Offload one call whose per-rank element counts are `counts` (nmembers
 * entries, the same on every rank): as mca_coll_ina_try. */
static int ina_reduce_scatter_try(mca_coll_ina_module_t *m, const void *sbuf, void *rbuf,
                                  uint64_t *counts, struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, bool *fallback)
{
    ina_coll_desc_t desc;
    uint64_t total = 0;
    size_t dsize = 0, bytes = 0;
    void *part = NULL;
    const char *why;
    int i, rc;

    for (i = 0; i < m->size; ++i) {
        total += counts[i];
    }
    why = mca_coll_ina_reduction_to_wire(dtype, op, &desc.dtype, &desc.op);
    if (NULL == why) {
        dsize = ina_proto_dtype_size(desc.dtype);
        bytes = (size_t) total * dsize;
        desc.coll = INA_COLL_REDUCE_SCATTER;
        desc.sbuf = (MPI_IN_PLACE == sbuf) ? rbuf : sbuf;
        desc.rbuf = rbuf;
        desc.count = total;
        desc.root = 0;
        desc.recvcounts = counts;
        if (MPI_IN_PLACE == sbuf && counts[m->rank] > 0) {
            /* Whether the call is offloaded is decided below, alike on every
             * rank; a failing allocation here is this rank's MPI error. */
            part = malloc((size_t) counts[m->rank] * dsize);
            if (NULL == part) {
                *fallback = false;
                return OMPI_ERR_OUT_OF_RESOURCE;
            }
            desc.rbuf = part;
        }
    }
    rc = mca_coll_ina_try(m, MCA_COLL_INA_REDUCE_SCATTER, &desc, bytes, why, NULL, fallback);
    if (!*fallback && OMPI_SUCCESS == rc && NULL != part) {
        memcpy(rbuf, part, (size_t) counts[m->rank] * dsize);
    }
    free(part);
    return rc;
}

int mca_coll_ina_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      struct ompi_communicator_t *comm,
                                      mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    uint64_t *counts;
    bool fallback;
    int i, rc;

    if (rcount <= 0) {
        return MPI_SUCCESS;
    }
    counts = malloc(sizeof(*counts) * (size_t) m->size);
    if (NULL == counts) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (i = 0; i < m->size; ++i) {
        counts[i] = (uint64_t) rcount;
    }
    rc = ina_reduce_scatter_try(m, sbuf, rbuf, counts, dtype, op, &fallback);
    free(counts);
    if (!fallback) {
        return rc;
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, reduce_scatter_block, sbuf, rbuf, rcount, dtype, op, comm);
}

int mca_coll_ina_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm,
                                mca_coll_base_module_t *module)
{
    mca_coll_ina_module_t *m = (mca_coll_ina_module_t *) module;
    uint64_t *counts, total = 0;
    bool fallback;
    int i, rc;

    counts = malloc(sizeof(*counts) * (size_t) m->size);
    if (NULL == counts) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (i = 0; i < m->size; ++i) {
        counts[i] = (uint64_t) (rcounts[i] > 0 ? rcounts[i] : 0);
        total += counts[i];
    }
    if (0 == total) {
        free(counts);
        return MPI_SUCCESS;
    }
    rc = ina_reduce_scatter_try(m, sbuf, rbuf, counts, dtype, op, &fallback);
    free(counts);
    if (!fallback) {
        return rc;
    }
    MCA_COLL_INA_RETURN_PREVIOUS(m, reduce_scatter, sbuf, rbuf, rcounts, dtype, op, comm);
}

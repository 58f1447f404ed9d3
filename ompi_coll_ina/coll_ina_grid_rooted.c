/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The hyper-square's rooted collectives (docs/HIERARCHY.md, "The host
 * side"): MPI_Bcast and MPI_Reduce on the grid's rings when the agents do
 * not take them. Both are chains, pipelined in chunks, each chunk's first
 * half one way round a ring and its second half the other way:
 *
 *   bcast: the root's vector to its node's leader; along the root's row
 *   ring from the root's node to every node of the row, then along every
 *   column ring from that row; each leader to its node's ranks.
 *   reduce: each node's ranks folded into its leader, in rank order; along
 *   every column ring to the root's row, folding at every node; along the
 *   root's row ring to the root's node, folding; the result to the root.
 *
 * A chain moves a chunk one link a step, so the next chunk follows one
 * step behind on the link it left: every link carries at most one chunk
 * each way at a time, and a call takes about (vector / 2) / link rate plus
 * the chain's length in chunk steps. Nodes off the root's row sit out the
 * row pass. Every element is folded in an order fixed by the layout and
 * the root: results are bit-identical from run to run. Taken where every
 * node holds as many ranks (the root's node is found from its slot), for
 * contiguous vectors and commutative operations.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"

#include "coll_ina.h"
#include "coll_ina_grid.h"

/* The two chain passes of every chunk of buf (scratch at tmp, or NULL):
 * along the rows (only the root's row takes part) and along the columns,
 * rows first for a bcast, columns first for a reduce. */
static int ina_rooted_rings(mca_coll_ina_module_t *m, char *buf, char *tmp, size_t count,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                            ina_grid_pass_t kind, int tag)
{
    const uint32_t node = (uint32_t) m->grid_slot[root] / m->grid_per_node;
    const uint32_t i0 = node / m->grid_rows, j0 = node % m->grid_rows; /* ring positions */
    const bool in_row = m->grid_col_pos == j0;
    ptrdiff_t lb, extent;
    size_t nst, c;
    ina_stream_t *st = mca_coll_ina_grid_streams(count, dtype, count, &nst);
    int rc, i;

    if (NULL == st) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    ompi_datatype_get_extent(dtype, &lb, &extent);
    for (c = 0; c < nst; ++c) {
        size_t first, len, half;
        ina_lane_t row[2], col[2];
        mca_coll_ina_grid_piece(count, (uint32_t) nst, (uint32_t) c, &first, &len);
        half = 2 == st[c].nl ? len / 2 : len;
        for (i = 0; i < st[c].nl; ++i) {
            const size_t at = first + (0 == i ? 0 : half), n = 0 == i ? half : len - half;
            char *b = buf + (ptrdiff_t) at * extent;
            char *t = NULL != tmp ? tmp + (ptrdiff_t) at * extent : NULL;
            row[i] = mca_coll_ina_grid_lane_chain(b, in_row ? n : 0, m->grid_row, m->grid_cols,
                                                  m->grid_row_pos, i0, 1 == i, t);
            col[i] = mca_coll_ina_grid_lane_chain(b, n, m->grid_col, m->grid_rows,
                                                  m->grid_col_pos, j0, 1 == i, t);
        }
        mca_coll_ina_grid_stream_add(&st[c], kind, INA_GRID_BCAST == kind ? row : col);
        mca_coll_ina_grid_stream_add(&st[c], kind, INA_GRID_BCAST == kind ? col : row);
    }
    rc = mca_coll_ina_grid_run(m, st, nst, dtype, op, extent, tag, 1);
    free(st);
    return rc;
}

/* ---- bcast ------------------------------------------------------------------- */

int mca_coll_ina_grid_bcast(mca_coll_ina_module_t *m, void *buf, int count,
                            struct ompi_datatype_t *dtype, int root)
{
    const int tag = MCA_COLL_BASE_TAG_BCAST;
    struct ompi_communicator_t *comm = m->comm;
    const bool root_here = m->grid_slot[root] / (int) m->grid_per_node ==
                           m->grid_slot[m->rank] / (int) m->grid_per_node;
    int rc = OMPI_SUCCESS, i;

    ++m->grid_calls;
    if (m->rank != m->grid_leader) {
        /* The root to its node's leader; every other rank from its leader. */
        if (m->rank == root) {
            return MCA_PML_CALL(send(buf, count, dtype, m->grid_leader, tag,
                                     MCA_PML_BASE_SEND_STANDARD, comm));
        }
        return MCA_PML_CALL(recv(buf, count, dtype, m->grid_leader, tag, comm,
                                 MPI_STATUS_IGNORE));
    }
    if (root_here && root != m->rank) {
        rc = MCA_PML_CALL(recv(buf, count, dtype, root, tag, comm, MPI_STATUS_IGNORE));
    }
    if (OMPI_SUCCESS == rc) {
        rc = ina_rooted_rings(m, buf, NULL, (size_t) count, dtype, NULL, root, INA_GRID_BCAST,
                              tag);
    }
    for (i = 0; OMPI_SUCCESS == rc && i < m->grid_nlocal; ++i) {
        if (m->grid_local[i] != root) {
            rc = MCA_PML_CALL(send(buf, count, dtype, m->grid_local[i], tag,
                                   MCA_PML_BASE_SEND_STANDARD, comm));
        }
    }
    return rc;
}

/* ---- reduce ------------------------------------------------------------------ */

int mca_coll_ina_grid_reduce(mca_coll_ina_module_t *m, const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root)
{
    const int tag = MCA_COLL_BASE_TAG_REDUCE;
    struct ompi_communicator_t *comm = m->comm;
    const bool root_here = m->grid_slot[root] / (int) m->grid_per_node ==
                           m->grid_slot[m->rank] / (int) m->grid_per_node;
    const char *in = MPI_IN_PLACE == sbuf ? (const char *) rbuf : (const char *) sbuf;
    char *acc = NULL, *tmp = NULL;
    ptrdiff_t lb, extent;
    size_t bytes;
    int rc = OMPI_SUCCESS, i;

    ompi_datatype_get_extent(dtype, &lb, &extent);
    bytes = (size_t) count * (size_t) extent;

    ++m->grid_calls;
    if (m->rank != m->grid_leader) {
        /* This rank's vector to its node's leader; the root the result back. */
        rc = MCA_PML_CALL(send(in, count, dtype, m->grid_leader, tag, MCA_PML_BASE_SEND_STANDARD,
                               comm));
        if (OMPI_SUCCESS == rc && m->rank == root) {
            rc = MCA_PML_CALL(recv(rbuf, count, dtype, m->grid_leader, tag, comm,
                                   MPI_STATUS_IGNORE));
        }
        return rc;
    }
    acc = m->rank == root ? (char *) rbuf : malloc(bytes);
    tmp = malloc(bytes);
    if (NULL == acc || NULL == tmp) {
        rc = OMPI_ERR_OUT_OF_RESOURCE;
        goto out;
    }
    if (acc != in) {
        memcpy(acc, in, bytes);
    }
    /* The node's vectors, folded in rank order. */
    for (i = 0; OMPI_SUCCESS == rc && i < m->grid_nlocal; ++i) {
        rc = MCA_PML_CALL(recv(tmp, count, dtype, m->grid_local[i], tag, comm,
                               MPI_STATUS_IGNORE));
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_ina_grid_fold(tmp, acc, (size_t) count, dtype, op);
        }
    }
    if (OMPI_SUCCESS == rc) {
        rc = ina_rooted_rings(m, acc, tmp, (size_t) count, dtype, op, root, INA_GRID_REDUCE, tag);
    }
    if (OMPI_SUCCESS == rc && root_here && root != m->rank) {
        rc = MCA_PML_CALL(send(acc, count, dtype, root, tag, MCA_PML_BASE_SEND_STANDARD, comm));
    }
out:
    if (acc != rbuf) {
        free(acc);
    }
    free(tmp);
    return rc;
}

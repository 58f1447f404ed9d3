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
static int ina_rooted_rings(ina_grid_call_t *g, char *buf, char *tmp, size_t count, int root,
                            ina_grid_pass_t kind)
{
    const mca_coll_ina_module_t *m = g->m;
    const uint32_t node = (uint32_t) m->grid_slot[root] / m->grid_per_node;
    const uint32_t i0 = node / m->grid_rows, j0 = node % m->grid_rows; /* ring positions */
    const bool in_row = m->grid_col_pos == j0;
    const ptrdiff_t extent = g->extent;
    size_t c;
    int i;

    g->st = mca_coll_ina_grid_streams(count, g->dtype, count, &g->nst);
    if (NULL == g->st) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    g->gap = 1;
    for (c = 0; c < g->nst; ++c) {
        ina_stream_t *st = &g->st[c];
        size_t first, len, half;
        ina_lane_t row[2], col[2];
        mca_coll_ina_grid_piece(count, (uint32_t) g->nst, (uint32_t) c, &first, &len);
        half = 2 == st->nl ? len / 2 : len;
        for (i = 0; i < st->nl; ++i) {
            const size_t at = first + (0 == i ? 0 : half), n = 0 == i ? half : len - half;
            char *b = buf + (ptrdiff_t) at * extent;
            char *t = NULL != tmp ? tmp + (ptrdiff_t) at * extent : NULL;
            row[i] = mca_coll_ina_grid_lane_chain(b, in_row ? n : 0, m->grid_row, m->grid_cols,
                                                  m->grid_row_pos, i0, 1 == i, t);
            col[i] = mca_coll_ina_grid_lane_chain(b, n, m->grid_col, m->grid_rows,
                                                  m->grid_col_pos, j0, 1 == i, t);
        }
        mca_coll_ina_grid_stream_add(st, kind, INA_GRID_BCAST == kind ? row : col);
        mca_coll_ina_grid_stream_add(st, kind, INA_GRID_BCAST == kind ? col : row);
    }
    return OMPI_SUCCESS;
}

/* Whether the root sits on this rank's node. */
static bool ina_root_here(const mca_coll_ina_module_t *m, int root)
{
    return m->grid_slot[root] / (int) m->grid_per_node ==
           m->grid_slot[m->rank] / (int) m->grid_per_node;
}

/* ---- bcast ------------------------------------------------------------------- */

int mca_coll_ina_grid_bcast(mca_coll_ina_module_t *m, void *buf, int count,
                            struct ompi_datatype_t *dtype, int root, ompi_request_t **request)
{
    const bool leader = m->rank == m->grid_leader;
    const size_t n = (size_t) count;
    ina_grid_call_t *g = mca_coll_ina_grid_call_new(
        m, sizeof(*g), MCA_COLL_INA_BCAST, dtype, NULL, 1, leader ? (size_t) m->grid_nlocal : 1,
        MCA_COLL_BASE_TAG_BCAST, NULL != request);
    int rc, i;

    if (NULL == g) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (!leader) {
        /* The root to its node's leader; every other rank from its leader. */
        if (m->rank == root) {
            g->pre[g->npre++] = mca_coll_ina_grid_node_move(buf, n, m->grid_leader, NULL, 0, 0,
                                                            NULL);
        } else {
            g->post[g->npost++] = mca_coll_ina_grid_node_move(NULL, 0, 0, buf, n, m->grid_leader,
                                                              NULL);
        }
        return mca_coll_ina_grid_call_go(g, request);
    }
    if (ina_root_here(m, root) && root != m->rank) {
        g->pre[g->npre++] = mca_coll_ina_grid_node_move(NULL, 0, 0, buf, n, root, NULL);
    }
    for (i = 0; i < m->grid_nlocal; ++i) {
        if (m->grid_local[i] != root) {
            g->post[g->npost++] = mca_coll_ina_grid_node_move(buf, n, m->grid_local[i], NULL, 0,
                                                              0, NULL);
        }
    }
    rc = ina_rooted_rings(g, (char *) buf, NULL, n, root, INA_GRID_BCAST);
    if (OMPI_SUCCESS != rc) {
        mca_coll_ina_grid_call_free(g);
        return rc;
    }
    return mca_coll_ina_grid_call_go(g, request);
}

/* ---- reduce ------------------------------------------------------------------ */

int mca_coll_ina_grid_reduce(mca_coll_ina_module_t *m, const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                             ompi_request_t **request)
{
    const bool leader = m->rank == m->grid_leader;
    const size_t n = (size_t) count;
    ina_grid_call_t *g = mca_coll_ina_grid_call_new(
        m, sizeof(*g), MCA_COLL_INA_REDUCE, dtype, op, leader ? (size_t) m->grid_nlocal : 1, 1,
        MCA_COLL_BASE_TAG_REDUCE, NULL != request);
    const char *in = MPI_IN_PLACE == sbuf ? (const char *) rbuf : (const char *) sbuf;
    char *acc, *tmp;
    size_t bytes;
    int rc, i;

    if (NULL == g) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (!leader) {
        /* This rank's vector to its node's leader; the root the result back. */
        g->pre[g->npre++] = mca_coll_ina_grid_node_move(in, n, m->grid_leader, NULL, 0, 0, NULL);
        if (m->rank == root) {
            g->post[g->npost++] = mca_coll_ina_grid_node_move(NULL, 0, 0, rbuf, n, m->grid_leader,
                                                              NULL);
        }
        return mca_coll_ina_grid_call_go(g, request);
    }
    bytes = n * (size_t) g->extent;
    acc = m->rank == root ? (char *) rbuf : (g->own[0] = malloc(bytes));
    tmp = g->own[1] = malloc(bytes);
    if (NULL == acc || NULL == tmp) {
        mca_coll_ina_grid_call_free(g);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (acc != in) {
        memcpy(acc, in, bytes);
    }
    /* The node's vectors, folded in rank order. */
    for (i = 0; i < m->grid_nlocal; ++i) {
        g->pre[g->npre++] = mca_coll_ina_grid_node_move(NULL, 0, 0, tmp, n, m->grid_local[i], acc);
    }
    if (ina_root_here(m, root) && root != m->rank) {
        g->post[g->npost++] = mca_coll_ina_grid_node_move(acc, n, root, NULL, 0, 0, NULL);
    }
    rc = ina_rooted_rings(g, acc, tmp, n, root, INA_GRID_REDUCE);
    if (OMPI_SUCCESS != rc) {
        mca_coll_ina_grid_call_free(g);
        return rc;
    }
    return mca_coll_ina_grid_call_go(g, request);
}

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The hyper-square's per-rank collectives (docs/HIERARCHY.md, "The host
 * side"): MPI_Allgather and MPI_Reduce_scatter_block on the grid's rings
 * when the agents do not take them, the two halves of the grid's allreduce.
 *
 *   allgather: each node's ranks to the node's leader; an allgather along
 *   the column rings (each node's block, grid_per_node ranks' worth), then
 *   along the row rings (each node's column of blocks); the whole vector
 *   back to the node's ranks.
 *   reduce_scatter_block: each node's ranks' vectors folded into the
 *   node's leader, in rank order; a reduce-scatter along the row rings
 *   (each piece a column of nodes' blocks), then along the column rings
 *   (each piece a node's blocks); each of the node's ranks its block.
 *
 * The rings work on the node-major order (m->grid_slot): each rank's block
 * where its node sits on the rings, so that every ring piece is one
 * contiguous run. The leader copies the blocks into that order and back.
 * A call is pipelined in chunks as the allreduce is: chunk c is the same
 * range of elements of every rank's block, laid out as a region of its own,
 * so that each chunk's pieces stay contiguous. Every block is reduced in an
 * order fixed by the layout: results are bit-identical on every rank and
 * from run to run.
 *
 * Taken where the communicator sits on whole groups of a described grid
 * with the same number of ranks on every node, for blocks of a datatype
 * whose elements are one contiguous run from its start and, for the
 * reduction, a commutative operation; anything else goes to the algorithm
 * ina replaced.
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

/* A call's layout on a leader: blocks of `count` elements of `extent`
 * bytes, cut in chunks; chunk c is elements [first(c), first(c) + len(c))
 * of every block, and its region of the work buffer holds those runs of
 * every rank, slot by slot. */
typedef struct ina_blocks {
    size_t count, nchunks, ranks;
    ptrdiff_t extent;
} ina_blocks_t;

static ina_blocks_t ina_blocks(const mca_coll_ina_module_t *m, size_t count,
                               struct ompi_datatype_t *dtype)
{
    ina_blocks_t b = {count, 0, (size_t) m->size, 0};
    ptrdiff_t lb;
    size_t size = 0;

    ompi_datatype_get_extent(dtype, &lb, &b.extent);
    ompi_datatype_type_size(dtype, &size);
    b.nchunks = mca_coll_ina_grid_chunks(count * b.ranks, size);
    b.nchunks = b.nchunks < count ? b.nchunks : count;
    return b;
}

static void ina_blocks_chunk(const ina_blocks_t *b, size_t c, size_t *first, size_t *len)
{
    mca_coll_ina_grid_piece(b->count, (uint32_t) b->nchunks, (uint32_t) c, first, len);
}

/* Rank r's run of chunk c in the work buffer (the chunk's region starts at
 * element ranks x first). */
static char *ina_blocks_run(const ina_blocks_t *b, const mca_coll_ina_module_t *m, char *work,
                            size_t c, int r)
{
    size_t first, len;

    ina_blocks_chunk(b, c, &first, &len);
    return work + (ptrdiff_t) (b->ranks * first + (size_t) m->grid_slot[r] * len) * b->extent;
}

/* Rank r's block, between a buffer in rank order and the work buffer. */
static void ina_blocks_copy(const ina_blocks_t *b, const mca_coll_ina_module_t *m, char *work,
                            char *ranked, int r, bool to_work)
{
    size_t c, first, len;

    for (c = 0; c < b->nchunks; ++c) {
        char *run = ina_blocks_run(b, m, work, c, r);
        ina_blocks_chunk(b, c, &first, &len);
        char *at = ranked + (ptrdiff_t) ((size_t) r * b->count + first) * b->extent;
        memcpy(to_work ? run : at, to_work ? at : run, len * (size_t) b->extent);
    }
}

/* n elements on from p, where there is a p (an allgather has no scratch). */
static char *ina_after(char *p, size_t n, ptrdiff_t extent)
{
    return NULL != p ? p + (ptrdiff_t) n * extent : NULL;
}

/* One stream per chunk: passes over a node's pieces along the column ring
 * (slots of a node's blocks) and along the row ring (slots of a column of
 * nodes' blocks), in the order given, each both ways round. */
static int ina_blocks_rings(ina_grid_call_t *g, const ina_blocks_t *b, char *work, char *tmp,
                            bool columns_first, ina_grid_pass_t kind)
{
    const mca_coll_ina_module_t *m = g->m;
    const size_t per_node = m->grid_per_node, rows = m->grid_rows;
    size_t c;

    g->st = calloc(b->nchunks, sizeof(*g->st));
    if (NULL == g->st) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    g->nst = b->nchunks;
    for (c = 0; c < b->nchunks; ++c) {
        ina_stream_t *st = &g->st[c];
        size_t first, len;
        ina_blocks_chunk(b, c, &first, &len);
        const ptrdiff_t at = (ptrdiff_t) (b->ranks * first) * b->extent;
        char *region = work + at, *scratch = NULL != tmp ? tmp + at : NULL;
        const size_t node = per_node * len, column = rows * node; /* elements */
        char *mine = region + (ptrdiff_t) ((size_t) m->grid_row_pos * column) * b->extent;
        ina_lane_t col[2], row[2];
        st->nl = mca_coll_ina_grid_lanes();
        const size_t nh = 2 == st->nl ? node / 2 : node, ch = 2 == st->nl ? column / 2 : column;
        col[0] = mca_coll_ina_grid_lane_slots(mine, node, nh, m->grid_col, m->grid_rows,
                                              m->grid_col_pos, false, scratch);
        col[1] = mca_coll_ina_grid_lane_slots(mine + (ptrdiff_t) nh * b->extent, node, node - nh,
                                              m->grid_col, m->grid_rows, m->grid_col_pos, true,
                                              ina_after(scratch, nh, b->extent));
        row[0] = mca_coll_ina_grid_lane_slots(region, column, ch, m->grid_row, m->grid_cols,
                                              m->grid_row_pos, false, scratch);
        row[1] = mca_coll_ina_grid_lane_slots(region + (ptrdiff_t) ch * b->extent, column,
                                              column - ch, m->grid_row, m->grid_cols,
                                              m->grid_row_pos, true,
                                              ina_after(scratch, ch, b->extent));
        mca_coll_ina_grid_stream_add(st, kind, columns_first ? col : row);
        mca_coll_ina_grid_stream_add(st, kind, columns_first ? row : col);
    }
    return OMPI_SUCCESS;
}

/* A per-rank collective's call on a leader: the layout, the buffer in rank
 * order (the call's receive buffer, or the node's folded vectors), the work
 * buffer in node-major order, and this rank's part of a reduce-scatter. */
typedef struct ina_blocks_call {
    ina_grid_call_t g;
    ina_blocks_t b;
    char *ranked, *work, *part;
} ina_blocks_call_t;

/* The blocks of this node's ranks into the work buffer (allgather). */
static int ina_blocks_node_in(ina_grid_call_t *g)
{
    ina_blocks_call_t *k = (ina_blocks_call_t *) g;
    const mca_coll_ina_module_t *m = g->m;
    int i;

    ina_blocks_copy(&k->b, m, k->work, k->ranked, m->rank, true);
    for (i = 0; i < m->grid_nlocal; ++i) {
        ina_blocks_copy(&k->b, m, k->work, k->ranked, m->grid_local[i], true);
    }
    return OMPI_SUCCESS;
}

/* Every rank's block into the work buffer (reduce-scatter), or back out of
 * it (allgather). */
static int ina_blocks_all_in(ina_grid_call_t *g)
{
    ina_blocks_call_t *k = (ina_blocks_call_t *) g;
    int i;

    for (i = 0; i < g->m->size; ++i) {
        ina_blocks_copy(&k->b, g->m, k->work, k->ranked, i, true);
    }
    return OMPI_SUCCESS;
}

static int ina_blocks_all_out(ina_grid_call_t *g)
{
    ina_blocks_call_t *k = (ina_blocks_call_t *) g;
    int i;

    for (i = 0; i < g->m->size; ++i) {
        ina_blocks_copy(&k->b, g->m, k->work, k->ranked, i, false);
    }
    return OMPI_SUCCESS;
}

/* The node's ranks' blocks out of the work buffer (reduce-scatter): this
 * rank's into its receive buffer, the others' to be sent from `ranked`. */
static int ina_blocks_node_out(ina_grid_call_t *g)
{
    ina_blocks_call_t *k = (ina_blocks_call_t *) g;
    const mca_coll_ina_module_t *m = g->m;
    int i;

    ina_blocks_copy(&k->b, m, k->work, k->ranked, m->rank, false);
    memcpy(k->part, k->ranked + (ptrdiff_t) m->rank * (ptrdiff_t) k->b.count * k->b.extent,
           k->b.count * (size_t) k->b.extent);
    for (i = 0; i < m->grid_nlocal; ++i) {
        ina_blocks_copy(&k->b, m, k->work, k->ranked, m->grid_local[i], false);
    }
    return OMPI_SUCCESS;
}

/* ---- allgather --------------------------------------------------------------- */

int mca_coll_ina_grid_allgather(mca_coll_ina_module_t *m, const void *sbuf, int scount,
                                struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                struct ompi_datatype_t *rdtype, ompi_request_t **request)
{
    const bool leader = m->rank == m->grid_leader;
    const size_t n = (size_t) rcount, nl = leader ? (size_t) m->grid_nlocal : 1;
    ina_blocks_call_t *k = (ina_blocks_call_t *) mca_coll_ina_grid_call_new(
        m, sizeof(*k), MCA_COLL_INA_ALLGATHER, rdtype, NULL, nl, nl, MCA_COLL_BASE_TAG_ALLGATHER,
        NULL != request);
    ina_grid_call_t *g = &k->g;
    char *all = (char *) rbuf, *own;
    int rc = OMPI_SUCCESS, i;

    if (NULL == k) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    k->b = ina_blocks(m, n, rdtype);
    own = all + (ptrdiff_t) m->rank * rcount * k->b.extent;
    if (MPI_IN_PLACE != sbuf) {
        rc = ompi_datatype_sndrcv(sbuf, scount, sdtype, own, rcount, rdtype);
    }
    if (OMPI_SUCCESS != rc) {
        mca_coll_ina_grid_call_free(g);
        return rc;
    }
    if (!leader) {
        /* This rank's block to its node's leader, every block back. */
        g->pre[g->npre++] = mca_coll_ina_grid_node_move(own, n, m->grid_leader, NULL, 0, 0, NULL);
        g->post[g->npost++] = mca_coll_ina_grid_node_move(NULL, 0, 0, all, n * k->b.ranks,
                                                          m->grid_leader, NULL);
        return mca_coll_ina_grid_call_go(g, request);
    }
    for (i = 0; i < m->grid_nlocal; ++i) {
        const int r = m->grid_local[i];
        g->pre[g->npre++] = mca_coll_ina_grid_node_move(
            NULL, 0, 0, all + (ptrdiff_t) r * rcount * k->b.extent, n, r, NULL);
        g->post[g->npost++] = mca_coll_ina_grid_node_move(all, n * k->b.ranks, r, NULL, 0, 0,
                                                          NULL);
    }
    k->ranked = all;
    k->work = g->own[0] = malloc(n * k->b.ranks * (size_t) k->b.extent);
    rc = NULL == k->work ? OMPI_ERR_OUT_OF_RESOURCE
                         : ina_blocks_rings(g, &k->b, k->work, NULL, true, INA_GRID_AG);
    if (OMPI_SUCCESS != rc) {
        mca_coll_ina_grid_call_free(g);
        return rc;
    }
    g->after_pre = ina_blocks_node_in;
    g->after_rings = ina_blocks_all_out;
    return mca_coll_ina_grid_call_go(g, request);
}

/* ---- reduce_scatter_block ---------------------------------------------------- */

int mca_coll_ina_grid_reduce_scatter_block(mca_coll_ina_module_t *m, const void *sbuf, void *rbuf,
                                           int rcount, struct ompi_datatype_t *dtype,
                                           struct ompi_op_t *op, ompi_request_t **request)
{
    const bool leader = m->rank == m->grid_leader;
    const size_t n = (size_t) rcount, nl = leader ? (size_t) m->grid_nlocal : 1;
    ina_blocks_call_t *k = (ina_blocks_call_t *) mca_coll_ina_grid_call_new(
        m, sizeof(*k), MCA_COLL_INA_REDUCE_SCATTER, dtype, op, nl, nl,
        MCA_COLL_BASE_TAG_REDUCE_SCATTER_BLOCK, NULL != request);
    ina_grid_call_t *g = &k->g;
    const char *in = MPI_IN_PLACE == sbuf ? (const char *) rbuf : (const char *) sbuf;
    size_t total, bytes;
    char *acc, *tmp;
    int rc = OMPI_SUCCESS, i;

    if (NULL == k) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    k->b = ina_blocks(m, n, dtype);
    total = n * k->b.ranks;
    bytes = total * (size_t) k->b.extent;
    if (!leader) {
        /* This rank's vector to its node's leader, its block back. */
        g->pre[g->npre++] = mca_coll_ina_grid_node_move(in, total, m->grid_leader, NULL, 0, 0,
                                                        NULL);
        g->post[g->npost++] = mca_coll_ina_grid_node_move(NULL, 0, 0, rbuf, n, m->grid_leader,
                                                          NULL);
        return mca_coll_ina_grid_call_go(g, request);
    }
    acc = g->own[0] = malloc(bytes);
    tmp = g->own[1] = malloc(bytes);
    k->work = g->own[2] = malloc(bytes);
    if (NULL == acc || NULL == tmp || NULL == k->work) {
        mca_coll_ina_grid_call_free(g);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* The node's vectors, folded in rank order; each of the node's ranks
     * its block (acc, in rank order, as the room). */
    memcpy(acc, in, bytes);
    for (i = 0; i < m->grid_nlocal; ++i) {
        const int r = m->grid_local[i];
        g->pre[g->npre++] = mca_coll_ina_grid_node_move(NULL, 0, 0, tmp, total, r, acc);
        g->post[g->npost++] = mca_coll_ina_grid_node_move(
            acc + (ptrdiff_t) r * rcount * k->b.extent, n, r, NULL, 0, 0, NULL);
    }
    k->ranked = acc;
    k->part = (char *) rbuf;
    rc = ina_blocks_rings(g, &k->b, k->work, tmp, false, INA_GRID_RS);
    if (OMPI_SUCCESS != rc) {
        mca_coll_ina_grid_call_free(g);
        return rc;
    }
    g->after_pre = ina_blocks_all_in;
    g->after_rings = ina_blocks_node_out;
    return mca_coll_ina_grid_call_go(g, request);
}

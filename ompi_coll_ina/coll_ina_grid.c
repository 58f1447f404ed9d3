/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The host side of the hyper-square (docs/HIERARCHY.md, "The host side"):
 * what runs a call the agents do not take when the communicator covers a
 * rectangle of whole groups of the grid the topology file describes
 * (ina_topology_grid). Every row and every column of the grid's nodes closes
 * into a ring whose every step is one link (ina_grid_ring), so an allreduce
 * goes
 *   1. each node's ranks to the node's leader (its lowest rank), folded in
 *      rank order;
 *   2. reduce-scatter along the leaders' row rings (cols - 1 steps, a
 *      cols-th of the vector each);
 *   3. allreduce of each node's row piece along the column rings
 *      (reduce-scatter and allgather, 2 (rows - 1) steps of a cols x rows-th);
 *   4. allgather along the row rings (cols - 1 steps);
 *   5. the leader's result to its node's ranks.
 * 2 (cols + rows - 2) link steps instead of a flat ring's 2 (p - 1), each
 * over one link that no other step of the call uses at that time. Every
 * piece is reduced once, in an order fixed by the layout, then copied: the
 * result is bit-identical on every rank and from run to run.
 *
 * Messages are the PML's, on the communicator, with the allreduce's
 * collective tag (as Open MPI's own host algorithms): no sockets of ours.
 * Only commutative operations (the rings do not fold in rank order) on
 * datatypes whose `count` elements are one contiguous block; anything else,
 * and calls below coll_ina_grid_min_bytes with coll_ina_host=auto, go to the
 * algorithm ina replaced.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"

#include "coll_ina.h"

#define INA_GRID_TAG MCA_COLL_BASE_TAG_ALLREDUCE

/* ---- set-up (at enable: local, identical on every member) ------------------- */

void mca_coll_ina_grid_setup(mca_coll_ina_module_t *m)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    const uint32_t n = (uint32_t) m->size;
    uint32_t cols = 0, rows = 0, *node_of = NULL, *ring = NULL;
    char **names = NULL;
    char host[256], why[256] = "";
    int *leader = NULL;
    uint32_t r, k, me_node, x, y;

    mca_coll_ina_grid_fini(m);
    if (MCA_COLL_INA_HOST_PREVIOUS == c->host || NULL == c->topo) {
        m->grid_why = MCA_COLL_INA_HOST_PREVIOUS == c->host ? "coll_ina_host=previous"
                                                             : "no topology file";
        return;
    }
    node_of = malloc(sizeof(*node_of) * n);
    names = calloc(n, sizeof(*names));
    if (NULL == node_of || NULL == names) {
        m->grid_why = "out of memory";
        goto out;
    }
    for (r = 0; r < n; ++r) {
        mca_coll_ina_host_of(m->comm, (int) r, host, sizeof(host));
        if (NULL == (names[r] = strdup(host))) {
            m->grid_why = "out of memory";
            goto out;
        }
    }
    if (INA_OK != ina_topology_grid(c->topo, (const char *const *) names, n, &cols, &rows,
                                    node_of, why, sizeof(why)) ||
        0 == cols) {
        snprintf(m->grid_reason, sizeof(m->grid_reason), "%s",
                 '\0' != why[0] ? why : "the topology file describes no grid");
        m->grid_why = m->grid_reason;
        goto out;
    }
    /* Each node's leader: its lowest rank. */
    leader = malloc(sizeof(*leader) * (size_t) cols * rows);
    ring = malloc(sizeof(*ring) * (size_t) (cols > rows ? cols : rows));
    m->grid_row = malloc(sizeof(*m->grid_row) * cols);
    m->grid_col = malloc(sizeof(*m->grid_col) * rows);
    m->grid_local = malloc(sizeof(*m->grid_local) * n);
    if (NULL == leader || NULL == ring || NULL == m->grid_row || NULL == m->grid_col ||
        NULL == m->grid_local) {
        m->grid_why = "out of memory";
        mca_coll_ina_grid_fini(m);
        m->grid_why = "out of memory";
        goto out;
    }
    for (k = 0; k < cols * rows; ++k) {
        leader[k] = -1;
    }
    for (r = 0; r < n; ++r) {
        if (leader[node_of[r]] < 0) {
            leader[node_of[r]] = (int) r;
        }
    }
    me_node = node_of[m->rank];
    m->grid_leader = leader[me_node];
    m->grid_nlocal = 0;
    for (r = 0; r < n; ++r) { /* the node's other ranks, ascending */
        if (node_of[r] == me_node && (int) r != m->grid_leader) {
            m->grid_local[m->grid_nlocal++] = (int) r;
        }
    }
    /* This node's row and column rings, in the order their links run. */
    x = me_node % cols;
    y = me_node / cols;
    ina_grid_ring(cols, ring);
    for (k = 0; k < cols; ++k) {
        m->grid_row[k] = leader[y * cols + ring[k]];
        m->grid_row_pos = ring[k] == x ? k : m->grid_row_pos;
    }
    ina_grid_ring(rows, ring);
    for (k = 0; k < rows; ++k) {
        m->grid_col[k] = leader[ring[k] * cols + x];
        m->grid_col_pos = ring[k] == y ? k : m->grid_col_pos;
    }
    m->grid_cols = cols;
    m->grid_rows = rows;
    m->grid_why = NULL;
    INA_VERBOSE(10, "cid %d: on a grid of %u x %u nodes (this rank's node at column %u, row %u, "
                    "%d rank%s there): the host algorithms use its rings",
                m->cid, cols, rows, x, y, m->grid_nlocal + 1, 0 == m->grid_nlocal ? "" : "s");
out:
    if (NULL != m->grid_why) {
        INA_VERBOSE(10, "cid %d: no grid for the host algorithms: %s", m->cid, m->grid_why);
    }
    for (r = 0; NULL != names && r < n; ++r) {
        free(names[r]);
    }
    free(names);
    free(node_of);
    free(leader);
    free(ring);
}

void mca_coll_ina_grid_fini(mca_coll_ina_module_t *m)
{
    free(m->grid_row);
    free(m->grid_col);
    free(m->grid_local);
    m->grid_row = m->grid_col = m->grid_local = NULL;
    m->grid_cols = m->grid_rows = 0;
    m->grid_nlocal = 0;
    m->grid_leader = -1;
    m->grid_row_pos = m->grid_col_pos = 0;
}

/* ---- the rings -------------------------------------------------------------- */

/* Piece i of `count` elements cut in n: its first element and length. */
static void ina_piece(size_t count, uint32_t n, uint32_t i, size_t *first, size_t *len)
{
    const size_t base = count / n, extra = count % n;
    *first = (size_t) i * base + (i < extra ? i : extra);
    *len = base + (i < extra ? 1 : 0);
}

/* into = in OP into, over len elements (the MPI-level local reduction: the
 * operation's own kernels, whatever the type; its headers are not all
 * installed, so not ompi_op_reduce). */
static int ina_fold(const void *in, void *into, size_t len, struct ompi_datatype_t *dtype,
                    struct ompi_op_t *op)
{
    return 0 == len ? OMPI_SUCCESS : PMPI_Reduce_local(in, into, (int) len, dtype, op);
}

/* Send `slen` elements at sbuf to `to` while receiving `rlen` at rbuf from
 * `from`, both on the collective tag. */
static int ina_exchange(const void *sbuf, size_t slen, int to, void *rbuf, size_t rlen, int from,
                        struct ompi_datatype_t *dtype, struct ompi_communicator_t *comm)
{
    ompi_request_t *reqs[2];
    int rc = MCA_PML_CALL(irecv(rbuf, rlen, dtype, from, INA_GRID_TAG, comm, &reqs[0]));
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    rc = MCA_PML_CALL(isend(sbuf, slen, dtype, to, INA_GRID_TAG, MCA_PML_BASE_SEND_STANDARD,
                            comm, &reqs[1]));
    if (OMPI_SUCCESS != rc) {
        ompi_request_cancel(reqs[0]);
        (void) ompi_request_wait(&reqs[0], MPI_STATUS_IGNORE);
        return rc;
    }
    return ompi_request_wait_all(2, reqs, MPI_STATUSES_IGNORE);
}

/* Ring reduce-scatter of buf's `count` elements over the n members of
 * `ring` (communicator ranks in the order of the links), this rank at `pos`:
 * afterwards it holds piece (pos + 1) mod n reduced over every member. tmp:
 * room for the largest piece. */
static int ina_ring_reduce_scatter(char *buf, size_t count, const int *ring, uint32_t n,
                                   uint32_t pos, char *tmp, struct ompi_datatype_t *dtype,
                                   struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                   ptrdiff_t extent)
{
    const int next = ring[(pos + 1) % n], prev = ring[(pos + n - 1) % n];
    uint32_t s;
    for (s = 0; s + 1 < n; ++s) {
        size_t sfirst, slen, rfirst, rlen;
        ina_piece(count, n, (pos + n - s) % n, &sfirst, &slen);
        ina_piece(count, n, (pos + 2 * n - s - 1) % n, &rfirst, &rlen);
        int rc = ina_exchange(buf + (ptrdiff_t) sfirst * extent, slen, next, tmp, rlen, prev,
                              dtype, comm);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        rc = ina_fold(tmp, buf + (ptrdiff_t) rfirst * extent, rlen, dtype, op);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

/* Ring allgather: this rank holds piece (pos + 1) mod n of buf; afterwards
 * every piece. */
static int ina_ring_allgather(char *buf, size_t count, const int *ring, uint32_t n, uint32_t pos,
                              struct ompi_datatype_t *dtype, struct ompi_communicator_t *comm,
                              ptrdiff_t extent)
{
    const int next = ring[(pos + 1) % n], prev = ring[(pos + n - 1) % n];
    uint32_t s;
    for (s = 0; s + 1 < n; ++s) {
        size_t sfirst, slen, rfirst, rlen;
        ina_piece(count, n, (pos + 1 + n - s) % n, &sfirst, &slen);
        ina_piece(count, n, (pos + n - s) % n, &rfirst, &rlen);
        int rc = ina_exchange(buf + (ptrdiff_t) sfirst * extent, slen, next,
                              buf + (ptrdiff_t) rfirst * extent, rlen, prev, dtype, comm);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

/* ---- allreduce -------------------------------------------------------------- */

bool mca_coll_ina_grid_takes(const mca_coll_ina_module_t *m, const void *sbuf, const void *rbuf,
                             int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    const mca_coll_ina_component_t *c = &mca_coll_ina_component;
    size_t size = 0;
    int commute = 0;

    if (0 == m->grid_cols || count <= 0 || MPI_SUCCESS != PMPI_Op_commutative(op, &commute) ||
        !commute ||
        !ompi_datatype_is_contiguous_memory_layout(dtype, count)) {
        return false;
    }
    (void) sbuf;
    (void) rbuf;
    ompi_datatype_type_size(dtype, &size);
    return MCA_COLL_INA_HOST_GRID == c->host || size * (size_t) count >= c->grid_min_bytes;
}

int mca_coll_ina_grid_allreduce(mca_coll_ina_module_t *m, const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    struct ompi_communicator_t *comm = m->comm;
    ptrdiff_t lb, extent;
    size_t first, len;
    char *buf = (char *) rbuf, *tmp = NULL, *piece;
    int rc = OMPI_SUCCESS, i;

    ompi_datatype_get_extent(dtype, &lb, &extent);
    if (MPI_IN_PLACE != sbuf) {
        rc = ompi_datatype_copy_content_same_ddt(dtype, count, buf, (char *) sbuf);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    ++m->grid_calls;
    if (m->rank != m->grid_leader) {
        /* 1 and 5: this rank's vector to its node's leader, the result back. */
        rc = MCA_PML_CALL(send(buf, count, dtype, m->grid_leader, INA_GRID_TAG,
                               MCA_PML_BASE_SEND_STANDARD, comm));
        if (OMPI_SUCCESS == rc) {
            rc = MCA_PML_CALL(recv(buf, count, dtype, m->grid_leader, INA_GRID_TAG, comm,
                                   MPI_STATUS_IGNORE));
        }
        return rc;
    }
    tmp = malloc((size_t) count * (size_t) extent);
    if (NULL == tmp) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* 1: the node's other ranks, folded in rank order. */
    for (i = 0; OMPI_SUCCESS == rc && i < m->grid_nlocal; ++i) {
        rc = MCA_PML_CALL(recv(tmp, count, dtype, m->grid_local[i], INA_GRID_TAG, comm,
                               MPI_STATUS_IGNORE));
        if (OMPI_SUCCESS == rc) {
            rc = ina_fold(tmp, buf, (size_t) count, dtype, op);
        }
    }
    /* 2: the row's reduce-scatter; this node then holds row piece
     * (pos + 1) mod cols, as does every node of its column. */
    if (OMPI_SUCCESS == rc) {
        rc = ina_ring_reduce_scatter(buf, (size_t) count, m->grid_row, m->grid_cols,
                                     m->grid_row_pos, tmp, dtype, op, comm, extent);
    }
    /* 3: that piece's allreduce along the column. */
    ina_piece((size_t) count, m->grid_cols, (m->grid_row_pos + 1) % m->grid_cols, &first, &len);
    piece = buf + (ptrdiff_t) first * extent;
    if (OMPI_SUCCESS == rc && m->grid_rows > 1) {
        rc = ina_ring_reduce_scatter(piece, len, m->grid_col, m->grid_rows, m->grid_col_pos, tmp,
                                     dtype, op, comm, extent);
        if (OMPI_SUCCESS == rc) {
            rc = ina_ring_allgather(piece, len, m->grid_col, m->grid_rows, m->grid_col_pos, dtype,
                                    comm, extent);
        }
    }
    /* 4: the row's allgather. */
    if (OMPI_SUCCESS == rc) {
        rc = ina_ring_allgather(buf, (size_t) count, m->grid_row, m->grid_cols, m->grid_row_pos,
                                dtype, comm, extent);
    }
    /* 5: the result to the node's other ranks. */
    for (i = 0; OMPI_SUCCESS == rc && i < m->grid_nlocal; ++i) {
        rc = MCA_PML_CALL(send(buf, count, dtype, m->grid_local[i], INA_GRID_TAG,
                               MCA_PML_BASE_SEND_STANDARD, comm));
    }
    free(tmp);
    return rc;
}

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
 * over one link that no other step of the call uses at that time. Each
 * ring carries the vector's first half one way round and its second half
 * the other way at once, so every link is busy in both directions. Every
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
    const char *const *names = NULL;
    char why[256] = "";
    int *leader = NULL;
    uint32_t r, k, me_node, x, y;

    mca_coll_ina_grid_fini(m);
    if (MCA_COLL_INA_HOST_PREVIOUS == c->host || NULL == c->topo) {
        m->grid_why = MCA_COLL_INA_HOST_PREVIOUS == c->host ? "coll_ina_host=previous"
                                                             : "no topology file";
        return;
    }
    node_of = malloc(sizeof(*node_of) * n);
    names = mca_coll_ina_host_names(m);
    if (NULL == node_of || NULL == names) {
        m->grid_why = "out of memory";
        goto out;
    }
    if (INA_OK != ina_topology_grid(c->topo, names, n, &cols, &rows, node_of, why, sizeof(why)) ||
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

/* A lane: one half of a vector going round one ring in one direction.
 * Both directions of a ring run at once, each half on one direction of
 * every link, so every link carries data both ways at every step. */
typedef struct ina_lane {
    char *buf;         /* the lane's elements */
    size_t count;
    const int *ring;   /* the ring's members in the order of its links */
    uint32_t n;        /* its length */
    uint32_t pos;      /* this rank's position in the lane's direction */
    bool backward;     /* the lane runs the ring the other way round */
    char *tmp;         /* reduce-scatter: room for the largest piece */
} ina_lane_t;

static ina_lane_t ina_lane(char *buf, size_t count, const int *ring, uint32_t n, uint32_t pos,
                           bool backward, char *tmp)
{
    ina_lane_t l = {buf, count, ring, n, backward ? (n - pos) % n : pos, backward, tmp};
    return l;
}

/* The communicator rank at position k of the lane's direction. */
static int ina_lane_member(const ina_lane_t *l, uint32_t k)
{
    return l->ring[l->backward ? (l->n - k % l->n) % l->n : k % l->n];
}

/* One step of every lane at once: each sends piece `send[i]` of its vector
 * to its next member and receives piece `recv[i]` from its previous one,
 * into `into[i]` (or in place when NULL). A piece goes as fragments of at
 * most coll_ina_grid_frag_bytes, each below the transport's eager limit: a
 * larger message would first wait for the receiver's go-ahead, which comes
 * back over the link the other lane fills the other way, behind its data.
 * Fragments of a pair match in the order both sides post them. */
static int ina_lanes_step(ina_lane_t *lanes, int nl, const uint32_t *send, const uint32_t *recv,
                          char *const *into, struct ompi_datatype_t *dtype,
                          struct ompi_communicator_t *comm, ptrdiff_t extent,
                          ompi_request_t ***reqs, size_t *cap)
{
    const size_t frag_bytes = mca_coll_ina_component.grid_frag_bytes;
    const size_t frag = frag_bytes >= (size_t) extent ? frag_bytes / (size_t) extent : 1;
    size_t need = 0, nreq = 0, k;
    int i, rc = OMPI_SUCCESS;

    for (i = 0; i < nl; ++i) {
        size_t first, slen, rlen;
        ina_piece(lanes[i].count, lanes[i].n, send[i], &first, &slen);
        ina_piece(lanes[i].count, lanes[i].n, recv[i], &first, &rlen);
        need += (slen + frag - 1) / frag + (rlen + frag - 1) / frag;
    }
    if (need > *cap) {
        ompi_request_t **more = realloc(*reqs, need * sizeof(**reqs));
        if (NULL == more) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        *reqs = more;
        *cap = need;
    }
    for (i = 0; OMPI_SUCCESS == rc && i < nl; ++i) {
        ina_lane_t *l = &lanes[i];
        size_t sfirst, slen, rfirst, rlen;
        ina_piece(l->count, l->n, send[i], &sfirst, &slen);
        ina_piece(l->count, l->n, recv[i], &rfirst, &rlen);
        char *rbase = NULL != into[i] ? into[i] : l->buf + (ptrdiff_t) rfirst * extent;
        const int from = ina_lane_member(l, l->pos + l->n - 1), to = ina_lane_member(l, l->pos + 1);
        for (k = 0; OMPI_SUCCESS == rc && k < rlen; k += frag) {
            rc = MCA_PML_CALL(irecv(rbase + (ptrdiff_t) k * extent, rlen - k < frag ? rlen - k : frag,
                                    dtype, from, INA_GRID_TAG, comm, &(*reqs)[nreq]));
            nreq += OMPI_SUCCESS == rc ? 1 : 0;
        }
        for (k = 0; OMPI_SUCCESS == rc && k < slen; k += frag) {
            rc = MCA_PML_CALL(isend(l->buf + (ptrdiff_t) (sfirst + k) * extent,
                                    slen - k < frag ? slen - k : frag, dtype, to, INA_GRID_TAG,
                                    MCA_PML_BASE_SEND_STANDARD, comm, &(*reqs)[nreq]));
            nreq += OMPI_SUCCESS == rc ? 1 : 0;
        }
    }
    if (OMPI_SUCCESS != rc) {
        for (k = 0; k < nreq; ++k) {
            ompi_request_cancel((*reqs)[k]);
        }
    }
    const int wrc = 0 != nreq ? ompi_request_wait_all(nreq, *reqs, MPI_STATUSES_IGNORE)
                              : OMPI_SUCCESS;
    return OMPI_SUCCESS != rc ? rc : wrc;
}

/* Ring reduce-scatter of every lane (all of one length n): afterwards this
 * rank holds, in each lane, piece (pos + 1) mod n reduced over every member
 * (pos the lane's own). */
static int ina_lanes_reduce_scatter(ina_lane_t *lanes, int nl, struct ompi_datatype_t *dtype,
                                    struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                    ptrdiff_t extent, ompi_request_t ***reqs, size_t *cap)
{
    const uint32_t n = lanes[0].n;
    uint32_t send[2], recv[2], s;
    char *into[2];
    int i, rc;

    for (s = 0; s + 1 < n; ++s) {
        for (i = 0; i < nl; ++i) {
            send[i] = (lanes[i].pos + n - s) % n;
            recv[i] = (lanes[i].pos + 2 * n - s - 1) % n;
            into[i] = lanes[i].tmp;
        }
        rc = ina_lanes_step(lanes, nl, send, recv, into, dtype, comm, extent, reqs, cap);
        for (i = 0; OMPI_SUCCESS == rc && i < nl; ++i) {
            size_t first, len;
            ina_piece(lanes[i].count, n, recv[i], &first, &len);
            rc = ina_fold(lanes[i].tmp, lanes[i].buf + (ptrdiff_t) first * extent, len, dtype, op);
        }
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

/* Ring allgather of every lane: this rank holds piece (pos + 1) mod n of
 * each; afterwards every piece. */
static int ina_lanes_allgather(ina_lane_t *lanes, int nl, struct ompi_datatype_t *dtype,
                               struct ompi_communicator_t *comm, ptrdiff_t extent,
                               ompi_request_t ***reqs, size_t *cap)
{
    const uint32_t n = lanes[0].n;
    uint32_t send[2], recv[2], s;
    char *into[2] = {NULL, NULL};
    int i, rc;

    for (s = 0; s + 1 < n; ++s) {
        for (i = 0; i < nl; ++i) {
            send[i] = (lanes[i].pos + 1 + n - s) % n;
            recv[i] = (lanes[i].pos + n - s) % n;
        }
        rc = ina_lanes_step(lanes, nl, send, recv, into, dtype, comm, extent, reqs, cap);
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
    char *buf = (char *) rbuf, *tmp = NULL;
    ompi_request_t **reqs = NULL; /* the steps' requests, grown as needed */
    size_t cap = 0;
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
    /* 2: the row's reduce-scatter, the vector's first half one way round
     * the ring and its second half the other way; this node then holds, of
     * each half, the piece every node of its column holds. */
    const int nl = mca_coll_ina_component.grid_both_ways ? 2 : 1;
    const size_t half = 2 == nl ? (size_t) count / 2 : (size_t) count;
    ina_lane_t row[2] = {
        ina_lane(buf, half, m->grid_row, m->grid_cols, m->grid_row_pos, false, tmp),
        ina_lane(buf + (ptrdiff_t) half * extent, (size_t) count - half, m->grid_row,
                 m->grid_cols, m->grid_row_pos, true, tmp + (ptrdiff_t) half * extent)};
    if (OMPI_SUCCESS == rc) {
        rc = ina_lanes_reduce_scatter(row, nl, dtype, op, comm, extent, &reqs, &cap);
    }
    /* 3: those pieces' allreduce along the column, again one each way. */
    if (OMPI_SUCCESS == rc) {
        ina_lane_t col[2];
        for (i = 0; i < nl; ++i) {
            size_t first, len;
            ina_piece(row[i].count, row[i].n, (row[i].pos + 1) % row[i].n, &first, &len);
            col[i] = ina_lane(row[i].buf + (ptrdiff_t) first * extent, len, m->grid_col,
                              m->grid_rows, m->grid_col_pos, 1 == i, row[i].tmp);
        }
        rc = ina_lanes_reduce_scatter(col, nl, dtype, op, comm, extent, &reqs, &cap);
        if (OMPI_SUCCESS == rc) {
            rc = ina_lanes_allgather(col, nl, dtype, comm, extent, &reqs, &cap);
        }
    }
    /* 4: the row's allgather. */
    if (OMPI_SUCCESS == rc) {
        rc = ina_lanes_allgather(row, nl, dtype, comm, extent, &reqs, &cap);
    }
    /* 5: the result to the node's other ranks. */
    for (i = 0; OMPI_SUCCESS == rc && i < m->grid_nlocal; ++i) {
        rc = MCA_PML_CALL(send(buf, count, dtype, m->grid_local[i], INA_GRID_TAG,
                               MCA_PML_BASE_SEND_STANDARD, comm));
    }
    free(tmp);
    free(reqs);
    return rc;
}

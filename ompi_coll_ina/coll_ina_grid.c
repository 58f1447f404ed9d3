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
 * result is bit-identical on every rank and from run to run (for a given
 * layout and chunking).
 *
 * Steps 2 to 4 are pipelined in chunks (coll_ina_grid_chunks, each at least
 * coll_ina_grid_chunk_bytes): while one chunk runs its column phases on the
 * column links, the next chunks' row phases fill the row links, so the
 * column phases cost almost nothing (docs/PERFORMANCE.md has the bound).
 * The ring engine (lanes, passes, streams) is in coll_ina_grid.h.
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
#include "coll_ina_grid.h"

#define INA_GRID_TAG MCA_COLL_BASE_TAG_ALLREDUCE

/* ---- set-up (at enable: local, identical on every member) ------------------- */

void mca_coll_ina_grid_setup(mca_coll_ina_module_t *m)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    const uint32_t n = (uint32_t) m->size;
    uint32_t cols = 0, rows = 0, *node_of = NULL, *ring = NULL, *row_pos = NULL, *col_pos = NULL;
    uint32_t *on_node = NULL;
    const char *const *names = NULL;
    char why[256] = "";
    int *leader = NULL, partial = 0;
    uint32_t r, k, me_node, x, y;

    mca_coll_ina_grid_fini(m);
    m->grid_none = MCA_COLL_INA_HP_NO_GRID;
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
    if (INA_OK != ina_topology_grid(c->topo, names, n, &cols, &rows, node_of, &partial, why,
                                    sizeof(why)) ||
        0 == cols) {
        snprintf(m->grid_reason, sizeof(m->grid_reason), "%s",
                 '\0' != why[0] ? why : "the topology file describes no grid");
        m->grid_why = m->grid_reason;
        m->grid_none = partial ? MCA_COLL_INA_HP_PARTIAL : MCA_COLL_INA_HP_NO_GRID;
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
    /* The per-rank collectives' slots: every node's ranks, ring positions
     * major (where the nodes hold equal numbers of ranks). */
    row_pos = malloc(sizeof(*row_pos) * cols);
    col_pos = malloc(sizeof(*col_pos) * rows);
    on_node = calloc((size_t) cols * rows, sizeof(*on_node));
    m->grid_slot = malloc(sizeof(*m->grid_slot) * n);
    if (NULL == row_pos || NULL == col_pos || NULL == on_node || NULL == m->grid_slot) {
        mca_coll_ina_grid_fini(m);
        m->grid_why = "out of memory";
        goto out;
    }
    ina_grid_ring(cols, ring);
    for (k = 0; k < cols; ++k) {
        row_pos[ring[k]] = k;
    }
    ina_grid_ring(rows, ring);
    for (k = 0; k < rows; ++k) {
        col_pos[ring[k]] = k;
    }
    for (r = 0; r < n; ++r) {
        ++on_node[node_of[r]];
    }
    m->grid_per_node = on_node[0];
    for (k = 0; k < cols * rows; ++k) {
        m->grid_per_node = on_node[k] == m->grid_per_node ? m->grid_per_node : 0;
        on_node[k] = 0; /* from here: ranks of the node seen so far */
    }
    for (r = 0; 0 != m->grid_per_node && r < n; ++r) {
        const uint32_t node = node_of[r];
        m->grid_slot[r] = (int) (((size_t) row_pos[node % cols] * rows + col_pos[node / cols]) *
                                     m->grid_per_node + on_node[node]++);
    }
    if (0 == m->grid_per_node) {
        free(m->grid_slot);
        m->grid_slot = NULL;
    }
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
    free(row_pos);
    free(col_pos);
    free(on_node);
}

void mca_coll_ina_grid_fini(mca_coll_ina_module_t *m)
{
    free(m->grid_row);
    free(m->grid_col);
    free(m->grid_local);
    free(m->grid_slot);
    m->grid_row = m->grid_col = m->grid_local = m->grid_slot = NULL;
    m->grid_per_node = 0;
    m->grid_cols = m->grid_rows = 0;
    m->grid_nlocal = 0;
    m->grid_leader = -1;
    m->grid_row_pos = m->grid_col_pos = 0;
}

/* ---- the rings (coll_ina_grid.h) ------------------------------------------- */

void mca_coll_ina_grid_piece(size_t count, uint32_t n, uint32_t i, size_t *first, size_t *len)
{
    const size_t base = count / n, extra = count % n;
    *first = (size_t) i * base + (i < extra ? i : extra);
    *len = base + (i < extra ? 1 : 0);
}

/* The MPI-level local reduction: the operation's own kernels, whatever the
 * type (its headers are not all installed, so not ompi_op_reduce). */
int mca_coll_ina_grid_fold(const void *in, void *into, size_t len, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op)
{
    return 0 == len ? OMPI_SUCCESS : PMPI_Reduce_local(in, into, (int) len, dtype, op);
}

int mca_coll_ina_grid_lanes(void)
{
    return mca_coll_ina_component.grid_both_ways ? 2 : 1;
}

ina_lane_t mca_coll_ina_grid_lane_split(char *buf, size_t count, const int *ring, uint32_t n,
                                        uint32_t pos, bool backward, char *tmp)
{
    ina_lane_t l = {buf, ring, n, backward ? (n - pos) % n : pos, backward, tmp, count, 0, 0, 0};
    return l;
}

ina_lane_t mca_coll_ina_grid_lane_chain(char *buf, size_t count, const int *ring, uint32_t n,
                                        uint32_t pos, uint32_t root, bool backward, char *tmp)
{
    ina_lane_t l = mca_coll_ina_grid_lane_split(buf, count, ring, n, pos, backward, tmp);
    l.root = backward ? (n - root) % n : root;
    return l;
}

ina_lane_t mca_coll_ina_grid_lane_slots(char *buf, size_t stride, size_t plen, const int *ring,
                                        uint32_t n, uint32_t pos, bool backward, char *tmp)
{
    ina_lane_t l = {buf, ring, n, backward ? (n - pos) % n : pos, backward, tmp, 0, stride, plen, 0};
    return l;
}

/* Piece j of the lane: its first element and length. A slot lane's piece j
 * starts at the member of lane position j - 1 (a reduce-scatter leaves it
 * there; an allgather starts there), whose ring position is j - 1 one way
 * round and n - (j - 1) the other. */
static void ina_lane_piece(const ina_lane_t *l, uint32_t j, size_t *first, size_t *len)
{
    if (0 == l->stride) {
        mca_coll_ina_grid_piece(l->count, l->n, j, first, len);
        return;
    }
    *first = (size_t) (l->backward ? (l->n + 1 - j) % l->n : (j + l->n - 1) % l->n) * l->stride;
    *len = l->plen;
}

/* The communicator rank at position k of the lane's direction. */
static int ina_lane_member(const ina_lane_t *l, uint32_t k)
{
    return l->ring[l->backward ? (l->n - k % l->n) % l->n : k % l->n];
}

/* Step s of a pass over the lane. A reduce-scatter: afterwards this rank
 * holds piece (pos + 1) mod n reduced over every member. An allgather:
 * from that piece to every piece. A bcast chain: the whole lane from the
 * member at lane position `root` to each next one, one link a step. A
 * reduce chain: the whole lane folded on its way from the member after
 * `root` round to `root`. */
static ina_move_t ina_step_move(const ina_lane_t *l, ina_grid_pass_t kind, uint32_t s,
                                ptrdiff_t extent)
{
    ina_move_t mv = {NULL, NULL, NULL, 0, 0, ina_lane_member(l, l->pos + 1),
                     ina_lane_member(l, l->pos + l->n - 1), false};
    const uint32_t d = (l->pos + l->n - l->root) % l->n; /* from the root, the lane's way */
    size_t first, len;
    uint32_t send = 0, recv = 0;

    switch (kind) {
    case INA_GRID_RS:
    case INA_GRID_AG:
        send = INA_GRID_RS == kind ? (l->pos + l->n - s) % l->n : (l->pos + 1 + l->n - s) % l->n;
        recv = INA_GRID_RS == kind ? (l->pos + 2 * l->n - s - 1) % l->n : (l->pos + l->n - s) % l->n;
        ina_lane_piece(l, send, &first, &len);
        mv.sbuf = l->buf + (ptrdiff_t) first * extent;
        mv.slen = len;
        ina_lane_piece(l, recv, &first, &len);
        mv.rbuf = l->buf + (ptrdiff_t) first * extent;
        mv.rlen = len;
        if (INA_GRID_RS == kind) {
            mv.fold = mv.rbuf;
            mv.rbuf = l->tmp;
        }
        break;
    case INA_GRID_BCAST:
        mv.sbuf = mv.rbuf = l->buf;
        mv.slen = d == s && s + 1 < l->n ? l->count : 0;
        mv.rlen = d == s + 1 ? l->count : 0;
        break;
    case INA_GRID_REDUCE:
        mv.sbuf = l->buf;
        mv.slen = d == s + 1 ? l->count : 0;
        mv.rbuf = l->tmp;
        mv.rlen = (d == s + 2 || (0 == d && s + 2 == l->n)) ? l->count : 0;
        mv.fold = 0 != mv.rlen ? l->buf : NULL;
        break;
    }
    return mv;
}

static int ina_reqs_room(ina_reqs_t *q, size_t more)
{
    if (q->n + more > q->cap) {
        ompi_request_t **r = realloc(q->r, (q->n + more) * sizeof(*r));
        if (NULL == r) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        q->r = r;
        q->cap = q->n + more;
    }
    return OMPI_SUCCESS;
}

/* Post one move. A ring's piece goes as fragments of at most
 * coll_ina_grid_frag_bytes, each below the transport's eager limit: a larger
 * message would first wait for the receiver's go-ahead, which comes back
 * over the link the other lane fills the other way, behind its data. A
 * node move goes whole (shared memory copies it once). */
static int ina_move_post(const ina_move_t *mv, struct ompi_datatype_t *dtype, ptrdiff_t extent,
                         struct ompi_communicator_t *comm, int tag, ina_reqs_t *q)
{
    const size_t frag_bytes = mca_coll_ina_component.grid_frag_bytes;
    const size_t most = mv->slen > mv->rlen ? mv->slen : mv->rlen;
    const size_t frag = mv->whole ? (0 != most ? most : 1)
                        : frag_bytes >= (size_t) extent ? frag_bytes / (size_t) extent
                                                        : 1;
    size_t k;
    int rc;

    rc = ina_reqs_room(q, (mv->slen + frag - 1) / frag + (mv->rlen + frag - 1) / frag);
    for (k = 0; OMPI_SUCCESS == rc && k < mv->rlen; k += frag) {
        rc = MCA_PML_CALL(irecv(mv->rbuf + (ptrdiff_t) k * extent,
                                mv->rlen - k < frag ? mv->rlen - k : frag, dtype, mv->from, tag,
                                comm, &q->r[q->n]));
        q->n += OMPI_SUCCESS == rc ? 1 : 0;
    }
    for (k = 0; OMPI_SUCCESS == rc && k < mv->slen; k += frag) {
        rc = MCA_PML_CALL(isend(mv->sbuf + (ptrdiff_t) k * extent,
                                mv->slen - k < frag ? mv->slen - k : frag, dtype, mv->to, tag,
                                MCA_PML_BASE_SEND_STANDARD, comm, &q->r[q->n]));
        q->n += OMPI_SUCCESS == rc ? 1 : 0;
    }
    return rc;
}

/* Wait for a tick's requests (cancelling them all if posting failed). */
static int ina_reqs_wait(ina_reqs_t *q, int rc)
{
    size_t k;

    if (OMPI_SUCCESS != rc) {
        for (k = 0; k < q->n; ++k) {
            ompi_request_cancel(q->r[k]);
        }
    }
    const int wrc = 0 != q->n ? ompi_request_wait_all(q->n, q->r, MPI_STATUSES_IGNORE)
                              : OMPI_SUCCESS;
    q->n = 0;
    return OMPI_SUCCESS != rc ? rc : wrc;
}

void mca_coll_ina_grid_stream_add(ina_stream_t *st, ina_grid_pass_t kind, const ina_lane_t *lanes)
{
    int i;

    st->kind[st->npasses] = kind;
    for (i = 0; i < st->nl; ++i) {
        st->lane[st->npasses][i] = lanes[i];
    }
    ++st->npasses;
}

static uint32_t ina_stream_steps(const ina_stream_t *st)
{
    return st->pass < st->npasses ? st->lane[st->pass][0].n - 1 : 0;
}

/* Past passes without steps (a ring of one). */
static void ina_stream_settle(ina_stream_t *st)
{
    while (st->pass < st->npasses && st->step >= ina_stream_steps(st)) {
        ++st->pass;
        st->step = 0;
    }
}

size_t mca_coll_ina_grid_chunks(size_t count, size_t elem_size)
{
    const mca_coll_ina_component_t *c = &mca_coll_ina_component;
    const size_t most = c->grid_chunks > 1 ? (size_t) c->grid_chunks : 1;
    const size_t chunk = c->grid_chunk_bytes > elem_size ? c->grid_chunk_bytes : elem_size;
    size_t k;

    if (0 == elem_size) {
        return 1;
    }
    k = count * elem_size / chunk;
    k = k < 1 ? 1 : k;
    return k < most ? k : most;
}

ina_stream_t *mca_coll_ina_grid_streams(size_t count, struct ompi_datatype_t *dtype, size_t most,
                                        size_t *nst)
{
    size_t elem_size = 0, c;
    ina_stream_t *st;

    ompi_datatype_type_size(dtype, &elem_size);
    *nst = mca_coll_ina_grid_chunks(count, elem_size);
    *nst = *nst < most ? *nst : most;
    *nst = *nst < 1 ? 1 : *nst;
    st = calloc(*nst, sizeof(*st));
    for (c = 0; NULL != st && c < *nst; ++c) {
        st[c].nl = mca_coll_ina_grid_lanes();
    }
    return st;
}

/* ---- one call, tick by tick (coll_ina_grid.h) -------------------------------- */

enum { INA_CALL_PRE, INA_CALL_RINGS, INA_CALL_POST, INA_CALL_DONE };

ina_move_t mca_coll_ina_grid_node_move(const void *sbuf, size_t slen, int to, void *rbuf,
                                       size_t rlen, int from, void *fold)
{
    ina_move_t mv = {(char *) sbuf, (char *) rbuf, (char *) fold, slen, rlen, to, from, true};
    return mv;
}

ina_grid_call_t *mca_coll_ina_grid_call_new(mca_coll_ina_module_t *m, size_t size,
                                            mca_coll_ina_kind_t kind,
                                            struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                            size_t npre, size_t npost, int tag, bool nonblocking)
{
    ina_grid_call_t *g = calloc(1, size);
    ptrdiff_t lb;

    if (NULL == g) {
        return NULL;
    }
    g->pre = calloc(npre + npost + 1, sizeof(*g->pre));
    if (NULL == g->pre) {
        free(g);
        return NULL;
    }
    g->post = g->pre + npre;
    g->m = m;
    g->kind = kind;
    g->dtype = dtype;
    g->op = op;
    ompi_datatype_get_extent(dtype, &lb, &g->extent);
    /* Every member reserves in the same order: its calls on the
     * communicator are in the same order (MPI's rule for collectives). */
    g->tag = nonblocking ? ompi_coll_base_nbc_reserve_tags(m->comm, 1) : tag;
    g->rc = OMPI_SUCCESS;
    return g;
}

void mca_coll_ina_grid_call_free(ina_grid_call_t *g)
{
    size_t k;

    if (NULL == g) {
        return;
    }
    for (k = 0; k < sizeof(g->own) / sizeof(g->own[0]); ++k) {
        free(g->own[k]);
    }
    free(g->pre);
    free(g->st);
    free(g->mv);
    free(g->q.r);
    free(g);
}

static void ina_rings_begin(ina_grid_call_t *g)
{
    size_t c;

    for (c = 0; c < g->nst; ++c) {
        g->st[c].pass = 0;
        g->st[c].step = 0;
        ina_stream_settle(&g->st[c]);
    }
    if (0 == g->gap) {
        g->gap = 0 != g->nst && g->st[0].npasses > 0 ? g->st[0].lane[0][0].n - 1 : 1;
    }
    g->gap = g->gap < 1 ? 1 : g->gap;
    g->tick = 0;
    g->started = g->first_live = 0;
}

/* The rings' next tick: one step of every running stream (false: all over). */
static bool ina_rings_moves(ina_grid_call_t *g)
{
    size_t c, i;

    if (g->first_live >= g->nst) {
        return false;
    }
    if (0 == g->tick % g->gap && g->started < g->nst) {
        ++g->started;
    }
    for (g->nm = 0, c = g->first_live; c < g->started; ++c) {
        ina_stream_t *st = &g->st[c];
        for (i = 0; st->pass < st->npasses && i < (size_t) st->nl; ++i) {
            g->mv[g->nm++] = ina_step_move(&st->lane[st->pass][i], st->kind[st->pass], st->step,
                                           g->extent);
        }
    }
    return true;
}

static void ina_rings_advance(ina_grid_call_t *g)
{
    size_t c;

    for (c = g->first_live; c < g->started; ++c) {
        if (g->st[c].pass < g->st[c].npasses) {
            ++g->st[c].step;
            ina_stream_settle(&g->st[c]);
        }
    }
    while (g->first_live < g->started && g->st[g->first_live].pass >= g->st[g->first_live].npasses) {
        ++g->first_live;
    }
    if (g->first_live == g->started && g->started < g->nst) {
        g->tick = (g->tick / g->gap + 1) * g->gap - 1; /* nothing running: start the next now */
    }
    ++g->tick;
}

/* A hook's failure ends the call. */
static bool ina_call_hook(ina_grid_call_t *g, ina_grid_hook_t hook)
{
    if (NULL != hook && OMPI_SUCCESS != (g->rc = hook(g))) {
        g->phase = INA_CALL_DONE;
        return false;
    }
    return true;
}

/* The next tick's moves in g->mv (false: the call is over). */
static bool ina_call_next(ina_grid_call_t *g)
{
    for (;;) {
        switch (g->phase) {
        case INA_CALL_PRE:
            if (g->at < g->npre) {
                g->mv[0] = g->pre[g->at++];
                g->nm = 1;
                return true;
            }
            g->phase = INA_CALL_RINGS;
            ina_rings_begin(g);
            if (!ina_call_hook(g, g->after_pre)) {
                return false;
            }
            break;
        case INA_CALL_RINGS:
            if (ina_rings_moves(g)) {
                return true;
            }
            g->phase = INA_CALL_POST;
            if (!ina_call_hook(g, g->after_rings)) {
                return false;
            }
            break;
        case INA_CALL_POST:
            g->phase = INA_CALL_DONE;
            if (0 != g->npost) {
                memcpy(g->mv, g->post, g->npost * sizeof(*g->mv));
                g->nm = g->npost;
                return true;
            }
            break;
        default:
            return false;
        }
    }
}

static int ina_call_post(ina_grid_call_t *g)
{
    size_t i;
    int rc = OMPI_SUCCESS;

    for (i = 0; OMPI_SUCCESS == rc && i < g->nm; ++i) {
        rc = ina_move_post(&g->mv[i], g->dtype, g->extent, g->m->comm, g->tag, &g->q);
    }
    return rc;
}

/* A tick's messages are all in: fold what came, move the rings on. */
static int ina_call_tick_done(ina_grid_call_t *g)
{
    size_t i;
    int rc = OMPI_SUCCESS;

    for (i = 0; OMPI_SUCCESS == rc && i < g->nm; ++i) {
        if (NULL != g->mv[i].fold) {
            rc = mca_coll_ina_grid_fold(g->mv[i].rbuf, g->mv[i].fold, g->mv[i].rlen, g->dtype,
                                        g->op);
        }
    }
    if (INA_CALL_RINGS == g->phase) {
        ina_rings_advance(g);
    }
    return rc;
}

static int ina_call_begin(ina_grid_call_t *g)
{
    const size_t most = 2 * g->nst > g->npost ? 2 * g->nst : g->npost;

    g->mv = malloc((most > 1 ? most : 1) * sizeof(*g->mv));
    g->phase = INA_CALL_PRE;
    return NULL == g->mv ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
}

bool mca_coll_ina_grid_call_test(ina_grid_call_t *g, int *rc)
{
    size_t k;

    for (;;) {
        if (g->posted) {
            for (k = 0; k < g->q.n; ++k) {
                if (!REQUEST_COMPLETE(g->q.r[k])) {
                    return false;
                }
            }
            g->posted = false;
            g->rc = ina_reqs_wait(&g->q, OMPI_SUCCESS); /* all complete: frees them */
            if (OMPI_SUCCESS == g->rc) {
                g->rc = ina_call_tick_done(g);
            }
            if (OMPI_SUCCESS != g->rc) {
                break;
            }
        }
        if (!ina_call_next(g)) {
            break;
        }
        g->rc = ina_call_post(g);
        if (OMPI_SUCCESS != g->rc) {
            g->rc = ina_reqs_wait(&g->q, g->rc); /* cancels what was posted */
            break;
        }
        g->posted = true;
    }
    *rc = g->rc;
    return true;
}

int mca_coll_ina_grid_call_go(ina_grid_call_t *g, ompi_request_t **request)
{
    mca_coll_ina_module_t *m;
    int rc;

    if (NULL == g) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    m = g->m;
    ++m->grid_calls;
    rc = ina_call_begin(g);
    if (OMPI_SUCCESS == rc && NULL != request) {
        return mca_coll_ina_grid_request(g, request); /* takes g */
    }
    while (OMPI_SUCCESS == rc && ina_call_next(g)) {
        rc = ina_reqs_wait(&g->q, ina_call_post(g));
        if (OMPI_SUCCESS == rc) {
            rc = ina_call_tick_done(g);
        }
    }
    rc = OMPI_SUCCESS != rc ? rc : g->rc;
    mca_coll_ina_grid_call_free(g);
    if (m->call_time_due) {
        /* A blocking call the agents denied ends here, on the rings: its
         * whole time goes to them as after the previous component's. */
        mca_coll_ina_call_time(m, true);
    }
    return rc;
}

/* ---- allreduce -------------------------------------------------------------- */

/* Count a call the grid does not take, and say why at verbose level 10. */
static bool ina_grid_refuses(mca_coll_ina_module_t *m, mca_coll_ina_host_reason_t why,
                             const char *detail)
{
    ++m->host_previous[why];
    INA_VERBOSE(10, "cid %d: the previous component's algorithm runs the call: %s", m->cid,
                detail);
    return false;
}

bool mca_coll_ina_grid_takes(mca_coll_ina_module_t *m, int64_t elems,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op, bool blocks,
                             bool nonblocking)
{
    const mca_coll_ina_component_t *c = &mca_coll_ina_component;
    ptrdiff_t lb = 0, extent = 0, true_lb = 0, true_extent = 0;
    size_t size = 0;
    int commute = 0;

    if (0 == m->grid_cols) {
        return ina_grid_refuses(m, m->grid_none, m->grid_why);
    }
    if (blocks && NULL == m->grid_slot) {
        return ina_grid_refuses(m, MCA_COLL_INA_HP_UNEQUAL,
                                "the grid's nodes hold unequal numbers of ranks");
    }
    if (elems <= 0) {
        return false; /* nothing moves: the previous component's, not counted */
    }
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    ompi_datatype_type_size(dtype, &size);
    /* The rings cut the vector at element boundaries from its start. */
    if (elems > INT32_MAX || !ompi_datatype_is_contiguous_memory_layout(dtype, (int32_t) elems) ||
        0 != lb || 0 != true_lb || (size_t) extent != size || (size_t) true_extent != size) {
        return ina_grid_refuses(m, MCA_COLL_INA_HP_LAYOUT,
                                "a datatype whose elements are not one run from its start");
    }
    if (NULL != op && (MPI_SUCCESS != PMPI_Op_commutative(op, &commute) || !commute)) {
        return ina_grid_refuses(m, MCA_COLL_INA_HP_LAYOUT, "an op that is not commutative");
    }
    if (MCA_COLL_INA_HOST_GRID != c->host && size * (size_t) elems < c->grid_min_bytes) {
        return ina_grid_refuses(m, MCA_COLL_INA_HP_SMALL, "below coll_ina_grid_min_bytes");
    }
    if (nonblocking && c->thread_multiple) {
        /* The progress callback walks its list unlocked. */
        return ina_grid_refuses(m, MCA_COLL_INA_HP_THREADS,
                                "a non-blocking call under MPI_THREAD_MULTIPLE");
    }
    return true;
}

/* Steps 2 to 4 on a leader, chunk by chunk: each chunk's first half one
 * way round the row ring and its second half the other way (reduce-scatter),
 * then of each half the piece the row left here along the column ring
 * (reduce-scatter and allgather), then the row's allgather. */
static int ina_grid_allreduce_rings(ina_grid_call_t *g, char *buf, char *tmp, size_t count)
{
    const mca_coll_ina_module_t *m = g->m;
    const ptrdiff_t extent = g->extent;
    size_t c;
    int i;

    g->st = mca_coll_ina_grid_streams(count, g->dtype, count, &g->nst);
    if (NULL == g->st) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (c = 0; c < g->nst; ++c) {
        ina_stream_t *st = &g->st[c];
        size_t first, len, half;
        ina_lane_t row[2], col[2];
        mca_coll_ina_grid_piece(count, (uint32_t) g->nst, (uint32_t) c, &first, &len);
        char *b = buf + (ptrdiff_t) first * extent, *t = tmp + (ptrdiff_t) first * extent;
        half = 2 == st->nl ? len / 2 : len;
        row[0] = mca_coll_ina_grid_lane_split(b, half, m->grid_row, m->grid_cols, m->grid_row_pos,
                                              false, t);
        row[1] = mca_coll_ina_grid_lane_split(b + (ptrdiff_t) half * extent, len - half,
                                              m->grid_row, m->grid_cols, m->grid_row_pos, true,
                                              t + (ptrdiff_t) half * extent);
        for (i = 0; i < st->nl; ++i) {
            size_t pfirst, plen;
            mca_coll_ina_grid_piece(row[i].count, row[i].n, (row[i].pos + 1) % row[i].n, &pfirst,
                                    &plen);
            col[i] = mca_coll_ina_grid_lane_split(row[i].buf + (ptrdiff_t) pfirst * extent, plen,
                                                  m->grid_col, m->grid_rows, m->grid_col_pos,
                                                  1 == i, row[i].tmp);
        }
        mca_coll_ina_grid_stream_add(st, INA_GRID_RS, row);
        mca_coll_ina_grid_stream_add(st, INA_GRID_RS, col);
        mca_coll_ina_grid_stream_add(st, INA_GRID_AG, col);
        mca_coll_ina_grid_stream_add(st, INA_GRID_AG, row);
    }
    return OMPI_SUCCESS;
}

int mca_coll_ina_grid_allreduce(mca_coll_ina_module_t *m, const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                ompi_request_t **request)
{
    const bool leader = m->rank == m->grid_leader;
    const size_t n = (size_t) count;
    ina_grid_call_t *g = mca_coll_ina_grid_call_new(m, sizeof(*g), MCA_COLL_INA_ALLREDUCE, dtype,
                                                    op, leader ? (size_t) m->grid_nlocal : 1,
                                                    leader ? (size_t) m->grid_nlocal : 1,
                                                    INA_GRID_TAG, NULL != request);
    char *buf = (char *) rbuf, *tmp;
    int rc = OMPI_SUCCESS, i;

    if (NULL == g) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (MPI_IN_PLACE != sbuf) {
        rc = ompi_datatype_copy_content_same_ddt(dtype, count, buf, (char *) sbuf);
    }
    if (OMPI_SUCCESS != rc) {
        mca_coll_ina_grid_call_free(g);
        return rc;
    }
    if (!leader) {
        /* 1 and 5: this rank's vector to its node's leader, the result back. */
        g->pre[g->npre++] = mca_coll_ina_grid_node_move(buf, n, m->grid_leader, NULL, 0, 0, NULL);
        g->post[g->npost++] = mca_coll_ina_grid_node_move(NULL, 0, 0, buf, n, m->grid_leader,
                                                          NULL);
        return mca_coll_ina_grid_call_go(g, request);
    }
    tmp = g->own[0] = malloc(n * (size_t) g->extent);
    if (NULL == tmp) {
        rc = OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* 1: the node's other ranks, folded in rank order. */
    for (i = 0; i < m->grid_nlocal; ++i) {
        g->pre[g->npre++] = mca_coll_ina_grid_node_move(NULL, 0, 0, tmp, n, m->grid_local[i], buf);
    }
    /* 2 to 4: the rows' and columns' rings, chunk by chunk. */
    if (OMPI_SUCCESS == rc) {
        rc = ina_grid_allreduce_rings(g, buf, tmp, n);
    }
    /* 5: the result to the node's other ranks. */
    for (i = 0; i < m->grid_nlocal; ++i) {
        g->post[g->npost++] = mca_coll_ina_grid_node_move(buf, n, m->grid_local[i], NULL, 0, 0,
                                                          NULL);
    }
    if (OMPI_SUCCESS != rc) {
        mca_coll_ina_grid_call_free(g);
        return rc;
    }
    return mca_coll_ina_grid_call_go(g, request);
}

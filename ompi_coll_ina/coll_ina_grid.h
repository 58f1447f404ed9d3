/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The hyper-square's ring engine (coll_ina_grid.c), shared by the grid's
 * collectives (coll_ina_grid.c: allreduce; coll_ina_grid_blocks.c:
 * allgather and reduce_scatter_block; coll_ina_grid_rooted.c: bcast and
 * reduce), blocking or not.
 *
 * A lane is a vector going round one ring (a row or a column of the grid's
 * nodes) in one direction, cut in one piece per member. A pass is a ring
 * reduce-scatter (afterwards a member holds one piece, reduced over the
 * ring) or a ring allgather (from that piece to every piece), one ring step
 * at a time. A stream is one chunk of a call: a list of passes, each over
 * one lane or two (the chunk's halves, one each way round, so that every
 * link carries data both ways). The engine runs a call's streams pipelined:
 * stream c starts when stream c - 1 has finished its first pass, so a
 * stream's later passes use the other rings' links while the next streams'
 * first passes fill theirs. Each tick posts one step of every running
 * stream, in the same order on every rank (the messages of a pair match in
 * that order), and waits for all of it: a blocking call in a loop, a
 * non-blocking one from the component's progress callback (each on a tag of
 * its own, so that calls in flight together never match each other's
 * messages).
 */
#ifndef MCA_COLL_INA_GRID_H
#define MCA_COLL_INA_GRID_H

#include "coll_ina.h"

typedef struct ina_lane {
    char *buf;       /* the lane's elements */
    const int *ring; /* the ring's members in the order of its links */
    uint32_t n;      /* its length */
    uint32_t pos;    /* this rank's position in the lane's direction */
    bool backward;   /* the lane runs the ring the other way round */
    char *tmp;       /* reduce-scatter: room for the largest piece */
    /* The pieces: `count` elements split evenly in n (stride 0); or n
     * slots of `plen` elements, `stride` apart, slot k the piece of the
     * member at ring position k (the one it holds after a reduce-scatter,
     * and before an allgather). */
    size_t count, stride, plen;
    uint32_t root;   /* a chain's end (bcast: its start), as a lane position */
} ina_lane_t;

/* A lane of `count` elements cut evenly. */
ina_lane_t mca_coll_ina_grid_lane_split(char *buf, size_t count, const int *ring, uint32_t n,
                                        uint32_t pos, bool backward, char *tmp);
/* A lane of `count` elements that a chain carries whole, from (bcast) or to
 * (reduce) the member at ring position root. */
ina_lane_t mca_coll_ina_grid_lane_chain(char *buf, size_t count, const int *ring, uint32_t n,
                                        uint32_t pos, uint32_t root, bool backward, char *tmp);
/* A lane of n slots of plen elements, stride apart (ring position order). */
ina_lane_t mca_coll_ina_grid_lane_slots(char *buf, size_t stride, size_t plen, const int *ring,
                                        uint32_t n, uint32_t pos, bool backward, char *tmp);

typedef enum {
    INA_GRID_RS,    /* ring reduce-scatter */
    INA_GRID_AG,    /* ring allgather */
    INA_GRID_BCAST, /* chain from the root round the ring */
    INA_GRID_REDUCE /* chain round the ring to the root, folding */
} ina_grid_pass_t;

#define INA_GRID_PASSES 4

typedef struct ina_stream {
    int npasses;
    int pass;      /* the one running (npasses: done) */
    uint32_t step; /* its step */
    int nl;        /* lanes per pass: 2 (both ways) or 1 */
    ina_grid_pass_t kind[INA_GRID_PASSES];
    ina_lane_t lane[INA_GRID_PASSES][2];
} ina_stream_t;

/* Lanes each pass has: 2 with coll_ina_grid_both_ways, else 1. */
int mca_coll_ina_grid_lanes(void);

/* Append a pass of st->nl lanes to the stream. */
void mca_coll_ina_grid_stream_add(ina_stream_t *st, ina_grid_pass_t kind, const ina_lane_t *lanes);

/* Piece i of `count` elements cut in n: its first element and length. */
void mca_coll_ina_grid_piece(size_t count, uint32_t n, uint32_t i, size_t *first, size_t *len);

/* How many chunks (streams) a call of `count` elements pipelines in. */
size_t mca_coll_ina_grid_chunks(size_t count, size_t elem_size);

/* A call's streams, empty, one per chunk (*nst of them, at most `most`):
 * free() them after the run. NULL: out of memory. */
ina_stream_t *mca_coll_ina_grid_streams(size_t count, struct ompi_datatype_t *dtype, size_t most,
                                        size_t *nst);

/* into = in OP into, over len elements. */
int mca_coll_ina_grid_fold(const void *in, void *into, size_t len, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op);

/* One message pair of a tick: send slen elements at sbuf to `to` (none
 * where slen is 0), receive rlen into rbuf from `from`, and for a reduction
 * fold what came into `fold` once the tick is over. A ring's move goes in
 * fragments (coll_ina_grid_frag_bytes); a move between a node's ranks and
 * their leader goes whole. */
typedef struct ina_move {
    char *sbuf, *rbuf, *fold;
    size_t slen, rlen;
    int to, from;
    bool whole;
} ina_move_t;

/* A move between this rank and another of its node, whole. */
ina_move_t mca_coll_ina_grid_node_move(const void *sbuf, size_t slen, int to, void *rbuf,
                                       size_t rlen, int from, void *fold);

/* The requests of one tick, grown as needed. */
typedef struct ina_reqs {
    ompi_request_t **r;
    size_t n, cap;
} ina_reqs_t;

typedef struct ina_grid_call ina_grid_call_t;
typedef int (*ina_grid_hook_t)(ina_grid_call_t *g);

/* One call on the grid, blocking or not: what it moves, tick by tick.
 *   pre:   moves of one tick each, in order (a node's ranks to its
 *          leader, each folded before the next comes: rank order);
 *   after_pre: local work once they are in (a layout's copies; or NULL);
 *   rings: the streams, pipelined (stream c starts c x gap ticks after
 *          the first; gap 0: the first pass's steps, as long as a ring
 *          pass keeps its links; a chain moves off a link after one tick,
 *          so chains pipeline with a gap of 1);
 *   after_rings: local work once the rings are done (or NULL);
 *   post:  moves of one last tick (the results to the node's ranks).
 * A collective allocates the call with room for what its hooks need after
 * it (mca_coll_ina_grid_call_new), fills it in, and gives it to
 * mca_coll_ina_grid_call_go, which frees it once it is over, with the
 * buffers put in `own`. */
struct ina_grid_call {
    mca_coll_ina_module_t *m;
    mca_coll_ina_kind_t kind;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    ptrdiff_t extent;
    int tag;
    ina_move_t *pre, *post;
    size_t npre, npost;
    ina_grid_hook_t after_pre, after_rings;
    ina_stream_t *st;
    size_t nst;
    uint32_t gap;
    void *own[4];
    /* The engine's: where the call is. */
    int phase;
    size_t at;                                 /* pre moves done */
    uint64_t tick;                             /* the rings' */
    size_t started, first_live;                /* streams started, streams over */
    ina_move_t *mv;                            /* this tick's moves */
    size_t nm;
    ina_reqs_t q;                              /* their requests */
    bool posted;                               /* a tick is in flight */
    int rc;
};

/* A call of kind `kind` on the module's communicator, of `size` bytes
 * (sizeof the collective's struct that starts with an ina_grid_call_t), with
 * room for npre + npost node moves; for a non-blocking call (`nonblocking`)
 * its own tag, reserved as libnbc reserves its, else `tag`. NULL: out of
 * memory. */
ina_grid_call_t *mca_coll_ina_grid_call_new(mca_coll_ina_module_t *m, size_t size,
                                            mca_coll_ina_kind_t kind,
                                            struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                            size_t npre, size_t npost, int tag,
                                            bool nonblocking);
/* Run the call: to its end where request is NULL (the call's result), else
 * start it and set *request, which the component's progress completes. The
 * call is freed either way (g NULL: out of memory). */
int mca_coll_ina_grid_call_go(ina_grid_call_t *g, ompi_request_t **request);
/* Progress a started call without blocking: true once it is over (*rc its
 * result); then free it with mca_coll_ina_grid_call_free. */
bool mca_coll_ina_grid_call_test(ina_grid_call_t *g, int *rc);
void mca_coll_ina_grid_call_free(ina_grid_call_t *g);

#endif /* MCA_COLL_INA_GRID_H */

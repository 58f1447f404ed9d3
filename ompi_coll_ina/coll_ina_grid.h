/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The hyper-square's ring engine (coll_ina_grid.c), shared by the grid's
 * collectives (coll_ina_grid.c: allreduce; coll_ina_grid_blocks.c:
 * allgather and reduce_scatter_block).
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
 * that order), and waits for all of it.
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

/* Run the streams to their end, on the communicator with `tag`, stream c
 * starting c x gap ticks after the first (0: the first pass's steps: a
 * ring pass keeps its links for that long; a chain moves off a link after
 * one tick, so chains pipeline with a gap of 1). */
int mca_coll_ina_grid_run(mca_coll_ina_module_t *m, ina_stream_t *st, size_t nst,
                          struct ompi_datatype_t *dtype, struct ompi_op_t *op, ptrdiff_t extent,
                          int tag, uint32_t gap);

#endif /* MCA_COLL_INA_GRID_H */

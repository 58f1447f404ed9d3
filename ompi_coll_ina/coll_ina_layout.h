/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The node layout of a communicator, as pure functions: no Open MPI, no
 * communication, unit-tested without MPI (tests/unit/test_component_layout.cpp).
 *
 * The component gives every member a raw node key (what the runtime says
 * about the proc, or the test override), then numbers the keys densely:
 * node ids 0..nnodes-1 in order of first appearance by rank, which is what
 * the agent's Node bitmap and the node stage index by. Every rank computes
 * the same layout from the same keys, so no rank has to send it to another.
 */
#ifndef MCA_COLL_INA_LAYOUT_H
#define MCA_COLL_INA_LAYOUT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where a raw node key comes from: the kind sits in the high 32 bits, so
 * keys of different kinds never collide. */
typedef enum ina_layout_key_kind {
    INA_LAYOUT_KEY_NODEID = 0, /* the runtime's node id of the proc */
    INA_LAYOUT_KEY_TEST = 1,   /* coll_ina_test_node_size: world rank / K */
    INA_LAYOUT_KEY_ALONE = 2   /* no node id, not known to share a node: a
                                  node of its own (value: the member's rank) */
} ina_layout_key_kind_t;

static inline uint64_t ina_layout_key(ina_layout_key_kind_t kind, uint32_t value)
{
    return ((uint64_t) kind << 32) | value;
}

/* The test override: with node_size K > 0, world ranks [0, K) sit on node
 * 0, [K, 2K) on node 1, ... Returns 0 and sets *key; returns -1 when there
 * is no override (node_size <= 0). */
int ina_layout_test_key(int node_size, uint32_t world_rank, uint64_t *key);

/* Number n raw keys densely: node_of[i] = index of keys[i] among the
 * distinct keys ordered by their first appearance (keys[0] is on node 0).
 * Returns the number of nodes (0 when n is 0), or -1 if out of memory.
 * O(n log n), so that a large communicator with many nodes stays cheap. */
int ina_layout_number(const uint64_t *keys, int n, uint32_t *node_of);

/* The members on rank's node, in rank order (rank included), written to
 * local[] (room for n); returns how many. */
int ina_layout_local_ranks(const uint32_t *node_of, int n, int rank, int *local);

/* The members of the least (*fewest) and the most (*most) populated of
 * the nnodes nodes; 0 and 0 when n or nnodes is 0. */
void ina_layout_node_sizes(const uint32_t *node_of, int n, int nnodes, int *fewest, int *most);

/* From a locality string of Open MPI (PMIx key pmix.locstr, e.g.
 * "SK0:L30:L20:L10:CR0:HT0:NM0"), the logical index of the package
 * (prefix "SK") or NUMA node ("NM") the proc is bound to: the index if it
 * is bound within exactly one such object, -1 otherwise (NULL string,
 * not bound, bound across several, no such field). */
int ina_layout_locality_index(const char *locality, const char *prefix);

/* The stream leaders of a node: leaders[j] (j < k <= nlocal) is the local
 * index that leads stream j. package[i] is the package of local rank i
 * (-1 if unknown). The leaders go round robin over the packages (in order
 * of their first local rank), local ranks in order within each, so that k
 * streams spread their folding and their traffic over all of the node's
 * packages and memory; if any package is unknown, local ranks 0..k-1.
 * Every rank of the node computes the same leaders from the same input. */
void ina_layout_stream_leaders(const int *package, int nlocal, int k, int *leaders);

#ifdef __cplusplus
}
#endif

#endif /* MCA_COLL_INA_LAYOUT_H */

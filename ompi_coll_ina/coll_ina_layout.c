/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The node layout of a communicator as pure functions (see coll_ina_layout.h).
 */
#include <stdlib.h>
#include <string.h>

#include "coll_ina_layout.h"

int ina_layout_test_key(int node_size, uint32_t world_rank, uint64_t *key)
{
    if (node_size <= 0) {
        return -1;
    }
    *key = ina_layout_key(INA_LAYOUT_KEY_TEST, world_rank / (uint32_t) node_size);
    return 0;
}

typedef struct ina_layout_entry {
    uint64_t key;
    int index; /* the member */
} ina_layout_entry_t;

/* By key, then by member: the first entry of each run of equal keys is the
 * key's first appearance. */
static int ina_layout_by_key(const void *a, const void *b)
{
    const ina_layout_entry_t *x = (const ina_layout_entry_t *) a;
    const ina_layout_entry_t *y = (const ina_layout_entry_t *) b;

    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return x->index < y->index ? -1 : (x->index > y->index);
}

int ina_layout_number(const uint64_t *keys, int n, uint32_t *node_of)
{
    ina_layout_entry_t *e;
    uint32_t nnodes = 0;
    int i, first = 0;

    if (n <= 0) {
        return 0;
    }
    e = malloc(sizeof(*e) * (size_t) n);
    if (NULL == e) {
        return -1;
    }
    for (i = 0; i < n; ++i) {
        e[i].key = keys[i];
        e[i].index = i;
    }
    qsort(e, (size_t) n, sizeof(*e), ina_layout_by_key);
    /* Mark each member with the first member of its key... */
    for (i = 0; i < n; ++i) {
        if (0 == i || e[i].key != e[i - 1].key) {
            first = e[i].index;
        }
        node_of[e[i].index] = (uint32_t) first;
    }
    free(e);
    /* ...then number those firsts in rank order: a member that is the first
     * of its key opens the next node, the others take their first's id
     * (already numbered, it has a lower rank). */
    for (i = 0; i < n; ++i) {
        if (node_of[i] == (uint32_t) i) {
            node_of[i] = nnodes++;
        } else {
            node_of[i] = node_of[node_of[i]];
        }
    }
    return (int) nnodes;
}

int ina_layout_local_ranks(const uint32_t *node_of, int n, int rank, int *local)
{
    int i, count = 0;

    if (rank < 0 || rank >= n) {
        return 0;
    }
    for (i = 0; i < n; ++i) {
        if (node_of[i] == node_of[rank]) {
            local[count++] = i;
        }
    }
    return count;
}

void ina_layout_node_sizes(const uint32_t *node_of, int n, int nnodes, int *fewest, int *most)
{
    int *count, i;

    *fewest = *most = 0;
    if (n <= 0 || nnodes <= 0) {
        return;
    }
    if (NULL == (count = calloc((size_t) nnodes, sizeof(*count)))) {
        *fewest = 1; /* safe bounds: one stream, room for every member */
        *most = n;
        return;
    }
    for (i = 0; i < n; ++i) {
        ++count[node_of[i]];
    }
    *fewest = count[0];
    for (i = 0; i < nnodes; ++i) {
        *fewest = count[i] < *fewest ? count[i] : *fewest;
        *most = count[i] > *most ? count[i] : *most;
    }
    free(count);
}

int ina_layout_locality_index(const char *locality, const char *prefix)
{
    size_t plen = strlen(prefix);
    const char *f = locality;

    while (NULL != f && '\0' != *f) {
        const char *end = strchr(f, ':');
        size_t len = NULL == end ? strlen(f) : (size_t) (end - f);
        if (len > plen && 0 == strncmp(f, prefix, plen)) {
            /* One index: digits only ("0-1" or "0,2" spans several). */
            long v = 0;
            size_t i;
            for (i = plen; i < len; ++i) {
                if (f[i] < '0' || f[i] > '9' || v > 1000000) {
                    return -1;
                }
                v = v * 10 + (f[i] - '0');
            }
            return (int) v;
        }
        f = NULL == end ? NULL : end + 1;
    }
    return -1;
}

void ina_layout_stream_leaders(const int *package, int nlocal, int k, int *leaders)
{
    int i, j, taken = 0, unknown = 0;

    for (i = 0; i < nlocal; ++i) {
        unknown |= package[i] < 0;
    }
    if (unknown) {
        for (j = 0; j < k; ++j) {
            leaders[j] = j;
        }
        return;
    }
    /* Round r takes, for each package in order of first appearance, its
     * r-th local rank. A package's first rank is the one with no earlier
     * rank of the same package; its r-th, the r-th of that package. */
    for (int round = 0; taken < k && round < nlocal; ++round) {
        for (i = 0; i < nlocal && taken < k; ++i) {
            int first = 1, nth = -1;
            for (j = 0; j < i && first; ++j) {
                first = package[j] != package[i];
            }
            if (!first) {
                continue;
            }
            for (j = i; j < nlocal; ++j) {
                if (package[j] == package[i] && ++nth == round) {
                    leaders[taken++] = j;
                    break;
                }
            }
        }
    }
}

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * Where the pages of a node segment live (hwloc memory binding).
 *
 * Each part of the segment is read and written mostly by one rank: a slot
 * by the rank that copies its contribution in, a share of the result area
 * by the rank that folds it (and, on several nodes, sends it to the agent
 * and takes the agent's result back). The rank that creates the segment
 * binds each part to the NUMA node of that rank before the memory is
 * reserved, so the pages are allocated there from the start (Linux keeps a
 * shared memory policy per tmpfs file range; the reservation allocates by
 * it). Binding is a placement hint of the segment, never a condition: a
 * part whose rank's NUMA node is unknown is left to the kernel's default,
 * and a reservation that fails under the binding is retried without it.
 */
#ifndef INA_NODE_NUMA_PLACEMENT_H
#define INA_NODE_NUMA_PLACEMENT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ina::node {

// Bytes [offset, offset + length) of a segment belong on NUMA node `numa`
// (hwloc logical index, as in Open MPI's locality strings "NM<i>").
struct Region {
    size_t offset = 0;
    size_t length = 0;
    int numa = -1;
};

// Bind the whole pages of each region of the mapping [base, base + bytes)
// to its NUMA node; regions with numa < 0, or without a whole page, stay as
// they are. Returns how many regions were bound; `why` says what failed
// (hwloc unavailable, a NUMA index this machine does not have, ...).
size_t bind_regions(void *base, size_t bytes, const std::vector<Region> &regions,
                    std::string &why);
// Back to the default policy on the whole mapping.
void unbind_all(void *base, size_t bytes);
// The NUMA node (logical index) every page of [addr, addr + length) is
// bound to, or -1 if they are not all bound to one node (tests, logs).
int bound_numa(const void *addr, size_t length);

} // namespace ina::node

#endif

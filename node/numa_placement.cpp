/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * Memory binding of node segments through hwloc (numa_placement.h).
 */
#include "numa_placement.h"

#include "hwloc_handles.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>

namespace ina::node {

namespace {

// This process's view of the machine, loaded once, and only when a segment
// is placed: the NUMA nodes and PUs only (hwloc keeps those whatever the
// filters), which is cheap even on a large node.
hwloc_topology_t topology(std::string &why)
{
    static std::once_flag once;
    static HwlocTopology topo;
    static std::string failure;
    std::call_once(once, [] {
        hwloc_topology_t raw = nullptr;
        if (hwloc_topology_init(&raw) != 0) {
            failure = std::string("hwloc_topology_init: ") + std::strerror(errno);
            return;
        }
        HwlocTopology t(raw);
        (void)hwloc_topology_set_all_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_NONE);
        if (hwloc_topology_load(raw) != 0) {
            failure = std::string("hwloc_topology_load: ") + std::strerror(errno);
            return;
        }
        topo = std::move(t);
    });
    why = failure;
    return topo.get();
}

size_t page_size()
{
    static const size_t p = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    return p;
}

} // namespace

size_t bind_regions(void *base, size_t bytes, const std::vector<Region> &regions,
                    std::string &why)
{
    hwloc_topology_t topo = nullptr;
    size_t bound = 0;
    const size_t page = page_size();
    for (const Region &r : regions) {
        if (r.numa < 0 || r.offset >= bytes) {
            continue;
        }
        // Whole pages only: a page shared with a neighbour keeps the default.
        const size_t lo = (r.offset + page - 1) / page * page;
        const size_t hi = std::min(r.offset + r.length, bytes) / page * page;
        if (lo >= hi) {
            continue;
        }
        if (topo == nullptr && (topo = topology(why)) == nullptr) {
            return bound;
        }
        hwloc_obj_t numa = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE,
                                                 static_cast<unsigned>(r.numa));
        if (numa == nullptr || numa->nodeset == nullptr) {
            why = "this machine has no NUMA node " + std::to_string(r.numa);
            continue;
        }
        if (hwloc_set_area_membind(topo, static_cast<char *>(base) + lo, hi - lo, numa->nodeset,
                                   HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET) != 0) {
            why = std::string("hwloc_set_area_membind: ") + std::strerror(errno);
            continue;
        }
        ++bound;
    }
    return bound;
}

void unbind_all(void *base, size_t bytes)
{
    std::string why;
    hwloc_topology_t topo = topology(why);
    if (topo != nullptr) {
        (void)hwloc_set_area_membind(topo, base, bytes / page_size() * page_size(),
                                     hwloc_topology_get_complete_nodeset(topo),
                                     HWLOC_MEMBIND_DEFAULT, HWLOC_MEMBIND_BYNODESET);
    }
}

int bound_numa(const void *addr, size_t length)
{
    std::string why;
    hwloc_topology_t topo = topology(why);
    HwlocBitmap set(hwloc_bitmap_alloc());
    hwloc_membind_policy_t policy;
    if (topo == nullptr || set == nullptr ||
        hwloc_get_area_membind(topo, addr, length, set.get(), &policy,
                               HWLOC_MEMBIND_BYNODESET) != 0 ||
        policy != HWLOC_MEMBIND_BIND || hwloc_bitmap_weight(set.get()) != 1) {
        return -1;
    }
    hwloc_obj_t numa = hwloc_get_numanode_obj_by_os_index(
        topo, static_cast<unsigned>(hwloc_bitmap_first(set.get())));
    return numa == nullptr ? -1 : static_cast<int>(numa->logical_index);
}

} // namespace ina::node

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Owning handles of hwloc objects (destroyed / freed on destruction), for
// every user of hwloc here: the agent's --bind, the node segment's
// placement, their tests. Include after <hwloc.h> is on the include path
// (HWLOC_CFLAGS).
#ifndef INA_HWLOC_HANDLES_H
#define INA_HWLOC_HANDLES_H

#include <hwloc.h>

#include <memory>

namespace ina {

struct HwlocTopologyDeleter {
    void operator()(hwloc_topology *t) const { hwloc_topology_destroy(t); }
};
using HwlocTopology = std::unique_ptr<hwloc_topology, HwlocTopologyDeleter>;

struct HwlocBitmapDeleter {
    void operator()(hwloc_bitmap_s *b) const { hwloc_bitmap_free(b); }
};
using HwlocBitmap = std::unique_ptr<hwloc_bitmap_s, HwlocBitmapDeleter>;

} // namespace ina

#endif

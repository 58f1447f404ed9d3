// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Binding ina-switchd to a part of the machine with hwloc, so that on a
// shared host it keeps a core (or a NUMA node, or a package) of its own and
// its Seg pool lands in that memory. Spec: "core:N", "numa:N", "package:N"
// or "pu:N" with N a logical index (as `lstopo` numbers them), "auto" (the
// cores and memory nearest the network device with the listen address), or
// "none".
#ifndef INA_AGENT_BIND_H
#define INA_AGENT_BIND_H

#include <string>

namespace ina {

// Bind this process (every thread, now and later) to `spec`'s CPUs and, for
// a NUMA node, its memory. True on success with a line for the log in
// `where`; false with the reason in `err` (unknown spec, no such object,
// binding refused by the system). `listen_host`: the address the agent
// listens on (for "auto").
bool bind_process(const std::string &spec, const std::string &listen_host, std::string &where,
                  std::string &err);

} // namespace ina

#endif

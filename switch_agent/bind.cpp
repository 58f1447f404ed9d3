// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#include "bind.h"

#include "hwloc_handles.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace ina {

namespace {

// "cpus 0-3": the OS indices of a set, as /proc and taskset show them.
std::string list_of(hwloc_const_bitmap_t set)
{
    char *s = nullptr;
    if (hwloc_bitmap_list_asprintf(&s, set) < 0 || s == nullptr) {
        return "?";
    }
    std::string out(s);
    std::free(s);
    return out;
}

bool parse_spec(const std::string &spec, hwloc_obj_type_t *type, unsigned *index)
{
    static const struct {
        const char *name;
        hwloc_obj_type_t type;
    } kinds[] = {{"core", HWLOC_OBJ_CORE},
                 {"numa", HWLOC_OBJ_NUMANODE},
                 {"package", HWLOC_OBJ_PACKAGE},
                 {"pu", HWLOC_OBJ_PU}};
    const size_t colon = spec.find(':');
    if (colon == std::string::npos || colon + 1 == spec.size()) {
        return false;
    }
    const std::string kind = spec.substr(0, colon);
    const std::string num = spec.substr(colon + 1);
    if (num.find_first_not_of("0123456789") != std::string::npos || num.size() > 6) {
        return false;
    }
    for (const auto &k : kinds) {
        if (kind == k.name) {
            *type = k.type;
            *index = static_cast<unsigned>(std::strtoul(num.c_str(), nullptr, 10));
            return true;
        }
    }
    return false;
}

} // namespace

bool bind_process(const std::string &spec, std::string &where, std::string &err)
{
    if (spec == "none") {
        where = "not bound";
        return true;
    }
    hwloc_obj_type_t type = HWLOC_OBJ_CORE;
    unsigned index = 0;
    if (!parse_spec(spec, &type, &index)) {
        err = "--bind wants core:N, numa:N, package:N, pu:N or none, got '" + spec + "'";
        return false;
    }
    hwloc_topology_t raw = nullptr;
    if (hwloc_topology_init(&raw) != 0) {
        err = std::string("hwloc_topology_init: ") + std::strerror(errno);
        return false;
    }
    HwlocTopology topo(raw);
    if (hwloc_topology_load(topo.get()) != 0) {
        err = std::string("hwloc_topology_load: ") + std::strerror(errno);
        return false;
    }
    const int count = hwloc_get_nbobjs_by_type(topo.get(), type);
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo.get(), type, index);
    if (obj == nullptr || obj->cpuset == nullptr || hwloc_bitmap_iszero(obj->cpuset)) {
        err = "--bind " + spec + ": this machine has " + std::to_string(count < 0 ? 0 : count) +
              " " + hwloc_obj_type_string(type) + " object(s) with CPUs (logical 0.." +
              std::to_string(count > 0 ? count - 1 : 0) + ")";
        return false;
    }
    if (hwloc_set_cpubind(topo.get(), obj->cpuset, HWLOC_CPUBIND_PROCESS) != 0) {
        err = "--bind " + spec + ": binding to cpus " + list_of(obj->cpuset) +
              " refused: " + std::strerror(errno);
        return false;
    }
    where = "bound to " + spec + " (cpus " + list_of(obj->cpuset) + ")";
    if (type == HWLOC_OBJ_NUMANODE) {
        // Memory too, so the Seg pool is allocated there; a system without
        // memory binding still has the CPU binding.
        if (hwloc_set_membind(topo.get(), obj->nodeset, HWLOC_MEMBIND_BIND,
                              HWLOC_MEMBIND_PROCESS | HWLOC_MEMBIND_BYNODESET) == 0) {
            where += ", memory on NUMA node " + list_of(obj->nodeset);
        } else {
            where += std::string(", memory not bound: ") + std::strerror(errno);
        }
    }
    return true;
}

} // namespace ina

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#include "bind.h"

#include "hwloc_handles.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>

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

// This machine's topology (with its network devices: `io`), or null with
// the reason in `err`.
HwlocTopology load_topology(bool io, std::string &err)
{
    hwloc_topology_t raw = nullptr;
    if (hwloc_topology_init(&raw) != 0) {
        err = std::string("hwloc_topology_init: ") + std::strerror(errno);
        return nullptr;
    }
    HwlocTopology topo(raw);
    if (io) {
        hwloc_topology_set_io_types_filter(topo.get(), HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
        // Linux's sysfs places the network devices (and their PCI parents):
        // no plugin needed. libpciaccess's (pci) leaves its allocations
        // behind at exit (LeakSanitizer, agent_ops), the GPU ones load vendor
        // libraries.
        for (const char *plugin : {"pci", "opencl", "gl"}) {
            hwloc_topology_set_components(topo.get(), HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
                                          plugin);
        }
    }
    if (hwloc_topology_load(topo.get()) != 0) {
        err = std::string("hwloc_topology_load: ") + std::strerror(errno);
        return nullptr;
    }
    return topo;
}

// The interface that has `host` (a numeric or resolvable address) as one
// of its addresses; empty if none (or the wildcard address).
std::string interface_of(const std::string &host)
{
    addrinfo hints{};
    hints.ai_flags = AI_ADDRCONFIG;
    addrinfo *res = nullptr;
    if (host.empty() || getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) {
        return {};
    }
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> ai(res, &freeaddrinfo);
    ifaddrs *ifs = nullptr;
    if (getifaddrs(&ifs) != 0) {
        return {};
    }
    std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> guard(ifs, &freeifaddrs);
    for (const addrinfo *a = ai.get(); a != nullptr; a = a->ai_next) {
        for (const ifaddrs *i = ifs; i != nullptr; i = i->ifa_next) {
            if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != a->ai_family) {
                continue;
            }
            bool same = false;
            if (a->ai_family == AF_INET) {
                same = reinterpret_cast<const sockaddr_in *>(a->ai_addr)->sin_addr.s_addr ==
                       reinterpret_cast<const sockaddr_in *>(i->ifa_addr)->sin_addr.s_addr;
            } else if (a->ai_family == AF_INET6) {
                same = std::memcmp(&reinterpret_cast<const sockaddr_in6 *>(a->ai_addr)->sin6_addr,
                                   &reinterpret_cast<const sockaddr_in6 *>(i->ifa_addr)->sin6_addr,
                                   sizeof(in6_addr)) == 0;
            }
            if (same) {
                return i->ifa_name;
            }
        }
    }
    return {};
}

// --bind auto: the cores (and memory) nearest the network device that has
// the listen address. Not bound, with the reason in `where`, when there is
// no one such device or it is as near to every core (virtual, or a machine
// of one NUMA node).
bool bind_near_device(const std::string &host, std::string &where, std::string &err)
{
    if (host.empty() || host == "0.0.0.0" || host == "::" || host == "*") {
        where = "not bound (--bind auto: listening on every address, so on no one device; "
                "give --listen the address of the clients' network)";
        return true;
    }
    const std::string ifname = interface_of(host);
    if (ifname.empty()) {
        where = "not bound (--bind auto: no interface of this host has the address " + host + ")";
        return true;
    }
    const HwlocTopology topo = load_topology(true, err);
    if (!topo) {
        return false;
    }
    hwloc_obj_t dev = nullptr;
    for (hwloc_obj_t o = hwloc_get_next_osdev(topo.get(), nullptr); o != nullptr;
         o = hwloc_get_next_osdev(topo.get(), o)) {
        if (o->name != nullptr && ifname == o->name) {
            dev = o;
            break;
        }
    }
    hwloc_obj_t near = dev != nullptr ? hwloc_get_non_io_ancestor_obj(topo.get(), dev) : nullptr;
    const hwloc_obj_t all = hwloc_get_root_obj(topo.get());
    if (near == nullptr || near->cpuset == nullptr ||
        hwloc_bitmap_isequal(near->cpuset, all->cpuset)) {
        where = "not bound (--bind auto: " + ifname + " is as near to every core" +
                (dev == nullptr ? ", a device hwloc does not place (virtual?)" : "") + ")";
        return true;
    }
    if (hwloc_set_cpubind(topo.get(), near->cpuset, HWLOC_CPUBIND_PROCESS) != 0) {
        err = "--bind auto: binding to cpus " + list_of(near->cpuset) + " near " + ifname +
              " refused: " + std::strerror(errno);
        return false;
    }
    where = "bound near " + ifname + " (cpus " + list_of(near->cpuset) + ")";
    if (hwloc_set_membind(topo.get(), near->nodeset, HWLOC_MEMBIND_BIND,
                          HWLOC_MEMBIND_PROCESS | HWLOC_MEMBIND_BYNODESET) == 0) {
        where += ", memory on NUMA node " + list_of(near->nodeset);
    }
    return true;
}

} // namespace

bool bind_process(const std::string &spec, const std::string &listen_host, std::string &where,
                  std::string &err)
{
    if (spec == "none") {
        where = "not bound";
        return true;
    }
    if (spec == "auto") {
        return bind_near_device(listen_host, where, err);
    }
    hwloc_obj_type_t type = HWLOC_OBJ_CORE;
    unsigned index = 0;
    if (!parse_spec(spec, &type, &index)) {
        err = "--bind wants core:N, numa:N, package:N, pu:N, auto or none, got '" + spec + "'";
        return false;
    }
    const HwlocTopology topo = load_topology(false, err);
    if (!topo) {
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

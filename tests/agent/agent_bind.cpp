// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// ina-switchd --bind: the daemon runs exactly on the CPUs of the object it
// was asked for (every core of this machine, and NUMA node 0), as the kernel
// reports them (/proc/PID/status, Cpus_allowed_list) against hwloc's view of
// the machine; an object that does not exist, or a malformed spec, is a clear
// error and no daemon is left running.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "hwloc_handles.h"
#include "ina_client.h"

namespace {

using Bitmap = ina::HwlocBitmap;

// The CPUs the kernel lets `pid` run on.
Bitmap allowed_cpus(int pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    const std::string key = "Cpus_allowed_list:";
    while (std::getline(in, line)) {
        if (line.compare(0, key.size(), key) == 0) {
            Bitmap b(hwloc_bitmap_alloc());
            if (hwloc_bitmap_list_sscanf(b.get(), line.c_str() + key.size()) == 0) {
                return b;
            }
        }
    }
    return nullptr;
}

std::string str(hwloc_const_bitmap_t set)
{
    char *s = nullptr;
    hwloc_bitmap_list_asprintf(&s, set);
    std::string out(s != nullptr ? s : "?");
    std::free(s);
    return out;
}

// Start the daemon bound to `spec`: 0 and its pid, or the spawn's status.
int spawn(const char *agent, const char *spec, int *pid, std::string &err)
{
    char addr[128];
    char why[512] = "";
    const char *const args[] = {"--bind", spec, "--log-level", "warn", nullptr};
    int rc = ina_agent_spawn(agent, "127.0.0.1", args, addr, sizeof(addr), pid, why, sizeof(why));
    err = why;
    return rc;
}

bool expect_bound(const char *agent, const std::string &spec, hwloc_const_bitmap_t want)
{
    int pid = -1;
    std::string err;
    if (spawn(agent, spec.c_str(), &pid, err) != INA_OK) {
        std::printf("--bind %s: the daemon did not start: %s: FAILED\n", spec.c_str(),
                    err.c_str());
        return false;
    }
    Bitmap got = allowed_cpus(pid);
    const bool ok = got && hwloc_bitmap_isequal(got.get(), want);
    std::printf("--bind %s: runs on cpus %s, want %s: %s\n", spec.c_str(),
                got ? str(got.get()).c_str() : "?", str(want).c_str(), ok ? "ok" : "FAILED");
    ina_agent_stop(pid, 5000);
    return ok;
}

bool expect_refused(const char *agent, const std::string &spec, const char *why)
{
    int pid = -1;
    std::string err;
    const int rc = spawn(agent, spec.c_str(), &pid, err);
    const bool ok = rc != INA_OK && pid == -1 &&
                    err.find("exited with status 2") != std::string::npos;
    std::printf("--bind %s (%s): refused (%s): %s\n", spec.c_str(), why, err.c_str(),
                ok ? "ok" : "FAILED");
    if (pid > 0) {
        ina_agent_stop(pid, 5000);
    }
    return ok;
}

} // namespace

int main()
{
    const char *agent = std::getenv("INA_SWITCHD");
    if (agent == nullptr || access(agent, X_OK) != 0) {
        std::printf("SKIP: INA_SWITCHD not set or not executable\n");
        return 77;
    }
    hwloc_topology_t raw = nullptr;
    if (hwloc_topology_init(&raw) != 0 || hwloc_topology_load(raw) != 0) {
        std::printf("FAIL: hwloc cannot load this machine's topology\n");
        return 1;
    }
    ina::HwlocTopology topo(raw);
    int failed = 0;
    const int ncores = hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_CORE);
    for (int i = 0; i < ncores; ++i) {
        hwloc_obj_t core = hwloc_get_obj_by_type(topo.get(), HWLOC_OBJ_CORE, i);
        failed += !expect_bound(agent, "core:" + std::to_string(i), core->cpuset);
    }
    if (hwloc_obj_t numa = hwloc_get_obj_by_type(topo.get(), HWLOC_OBJ_NUMANODE, 0)) {
        failed += !expect_bound(agent, "numa:0", numa->cpuset);
    }
    failed += !expect_refused(agent, "core:" + std::to_string(ncores), "no such core");
    failed += !expect_refused(agent, "socket:0", "unknown kind");
    failed += !expect_refused(agent, "core:-1", "malformed index");
    std::printf("%s: %d failure(s)\n", failed == 0 ? "PASS" : "FAIL", failed);
    return failed == 0 ? 0 : 1;
}

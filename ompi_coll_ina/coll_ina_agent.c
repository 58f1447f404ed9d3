/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * coll/ina: the process-wide connection to the aggregation agent: where
 * it is (coll_ina_agent, the launcher's word, an embedded agent started by
 * rank 0), the job secret, the engine clients, and which agents this
 * process still reaches.
 */
#include "ompi_config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "mpi.h"
#include "ompi/version.h"
#include "ompi/communicator/communicator.h"
#include "ompi/proc/proc.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/mca/coll/base/base.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/hwloc/hwloc-internal.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "coll_ina.h"

/* ---- agent address and connection ------------------------------------- */

static void ina_warn_unreachable(const char *addr, const char *why)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;

    if (c->unreachable_warned) {
        return;
    }
    c->unreachable_warned = true;
    opal_show_help("help-coll-ina.txt", "agent-unreachable", true,
                   opal_process_info.nodename, addr, why,
                   c->required ? "fail with an MPI error" : "use the host algorithms");
}

/* The CPUs this job may use on this node: hwloc's allowed set, which a
 * cgroup cpuset (a batch system's allocation, a container) restricts, not
 * this rank's own binding (a rank bound to one core still shares a node of
 * many). A CPU quota (cgroup cpu.max) is not seen. */
static long ina_node_cpus(void)
{
    if (NULL != opal_hwloc_topology) {
        hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(opal_hwloc_topology);
        int n = NULL != allowed ? hwloc_bitmap_weight(allowed) : -1;
        if (n > 0) {
            return n;
        }
    }
    return sysconf(_SC_NPROCESSORS_ONLN);
}

/* More processes on this node than CPUs once the agent is counted (Open
 * MPI does not know it): this rank, its local peers, and maybe the agent.
 * Blocking calls poll in opal_progress (coll_ina_request.c), so there the
 * agent's own polling would hold the core a rank needs, and the other way
 * round. */
static bool ina_node_oversubscribed(void)
{
    long cpus = ina_node_cpus();

    return cpus > 0 && (long) opal_process_info.num_local_peers + 2 > cpus;
}

/* coll_ina_progress_thread, with -1 (auto) decided from this node's cores:
 * measured on 2 cores with 4 ranks (docs/perf-history/persistent-and-openmpi5.md,
 * "Persistent collectives"), the thread of each rank took the cores the ranks and the
 * agent needed and made every started call at the agent slower. */
static bool ina_want_thread(void)
{
    long cpus;

    if (mca_coll_ina_component.progress_thread >= 0) {
        return 0 != mca_coll_ina_component.progress_thread;
    }
    cpus = ina_node_cpus();
    return cpus > 0 && cpus >= 2 * ((long) opal_process_info.num_local_peers + 1) + 1;
}

/* Whether waiting must leave the CPU to others between polls: Open MPI's
 * mpi_yield_when_idle as the user set it, or as Open MPI set it for an
 * oversubscribed node (it may do so only late in MPI_Init), or a node
 * oversubscribed by the agent. */
static bool ina_yield_when_idle(void)
{
    const bool *set = NULL;
    int idx = mca_base_var_find("ompi", "mpi", NULL, "yield_when_idle");

    if (opal_progress_yield_when_idle || ina_node_oversubscribed()) {
        return true;
    }
    return idx >= 0 && OPAL_SUCCESS == mca_base_var_get_value(idx, &set, NULL, NULL) &&
           NULL != set && *set;
}

/* Whether every member of `comm` shares this process's node. */
static bool ina_comm_one_node(ompi_communicator_t *comm)
{
    int i;

    for (i = 0; i < ompi_comm_size(comm); ++i) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, i);
        if (proc != ompi_proc_local() && !OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)) {
            return false;
        }
    }
    return true;
}

/* Embedded agent: launch rank 0 starts ina-switchd (Open MPI 5: as the
 * component opens; 4.1: in MPI_COMM_WORLD's enable). It listens on
 * loopback when the whole job shares rank 0's node (`one_node`), else on
 * every interface and is advertised under rank 0's host name. Writes "" on
 * failure. Which address reaches the agent depends on where the processes
 * really run: Open MPI's locality decides, not the module's node layout,
 * which coll_ina_test_node_size may spread over pretend nodes. */
static void ina_spawn_embedded(bool one_node, char *addr, size_t addrlen)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    char segs[16], spin[16], rndv[16], err[256] = "", spawned[256] = "";
    const char *args[] = {"--segs", segs, "--bind", c->agent_bind, "--spin-us", spin,
                          "--rndv-bytes", rndv,
                          ina_yield_when_idle() ? "--spin-yield" : NULL, NULL};
    const char *colon;
    int pid = -1;

    snprintf(segs, sizeof(segs), "%d", c->agent_segs);
    /* No block is larger than a Seg (at most INA_PROTO_MAX_SEG_BYTES). */
    snprintf(rndv, sizeof(rndv), "%d",
             mca_coll_ina_component.rndv_bytes <= 0 ? 0
             : mca_coll_ina_component.rndv_bytes > (int) INA_PROTO_MAX_SEG_BYTES ? (int) INA_PROTO_MAX_SEG_BYTES
                                                               : mca_coll_ina_component.rndv_bytes);
    /* Measured on 2 cores, 2 ranks: an agent that polls there only slows the
     * ranks that poll in opal_progress (docs/perf-history/agent-data-path.md,
     * "Waiting"). */
    snprintf(spin, sizeof(spin), "%d",
             mca_coll_ina_component.spin_us > 0 && !ina_node_oversubscribed() ? mca_coll_ina_component.spin_us : 0);
    addr[0] = '\0';
    if (INA_OK != ina_agent_spawn(c->agent_path, one_node ? "127.0.0.1" : "0.0.0.0",
                                  args, spawned, sizeof(spawned), &pid, err, sizeof(err))) {
        opal_show_help("help-coll-ina.txt", "agent-spawn-failed", true,
                       opal_process_info.nodename, c->agent_path, err);
        return;
    }
    c->agent_pid = pid;
    colon = strrchr(spawned, ':');
    if (one_node || NULL == colon) {
        snprintf(addr, addrlen, "%s", spawned);
    } else {
        snprintf(addr, addrlen, "%s%s", opal_process_info.nodename, colon);
    }
    INA_VERBOSE(5, "embedded agent %s started (pid %d, %d Segs), advertised as %s",
                c->agent_path, pid, c->agent_segs, addr);
}

/* coll_ina_agent names running agents: "HOST:PORT", or several separated
 * by commas (a job striped over them, in that order). A list that cannot
 * be used (an empty entry, too many) leaves no agent, with the reason. */
static void ina_parse_agents(void)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    const char *p = c->agent, *end;
    char why[256] = "";
    size_t len;

    c->nagents = 0;
    c->agent_addr_known = true;
    for (;;) {
        end = strchr(p, ',');
        len = NULL != end ? (size_t) (end - p) : strlen(p);
        if (0 == len || len >= sizeof(c->agent_addr[0])) {
            snprintf(why, sizeof(why), "coll_ina_agent \"%s\": entry %u is %s", c->agent,
                     c->nagents + 1, 0 == len ? "empty" : "too long");
            break;
        }
        if (MCA_COLL_INA_MAX_AGENTS == c->nagents) {
            snprintf(why, sizeof(why), "coll_ina_agent \"%s\" names more than %d agents",
                     c->agent, MCA_COLL_INA_MAX_AGENTS);
            break;
        }
        snprintf(c->agent_addr[c->nagents++], sizeof(c->agent_addr[0]), "%.*s", (int) len, p);
        if (NULL == end) {
            return;
        }
        p = end + 1;
    }
    c->nagents = 0;
    ina_warn_unreachable("(none)", why);
}

/* The secret every job's capability is sealed with (ina_job_key_seal;
 * docs/ARCHITECTURE.md, "Job setup"): one per MPI job, known to its
 * processes only. The launcher may hand every process of a job the same
 * random 128-bit key for its transports (ina_compat_launcher_key: ORTE's
 * in the environment, which only the job's user can read). False without
 * it (rank 0 draws one instead). */
/* A secret written as two 64-bit hexadecimal halves, "HI-LO". */
static bool ina_parse_secret(const char *v, uint8_t *secret)
{
    unsigned long long hi = 0, lo = 0;
    int end = 0;

    if (2 != sscanf(v, "%16llx-%16llx%n", &hi, &lo, &end) || '\0' != v[end] ||
        (0 == hi && 0 == lo)) {
        return false;
    }
    memcpy(secret, &hi, sizeof(hi));
    memcpy(secret + sizeof(hi), &lo, sizeof(lo));
    return true;
}

static bool ina_launcher_secret(uint8_t *secret)
{
    char *v = ina_compat_launcher_key();
    bool ok = NULL != v && ina_parse_secret(v, secret);

    free(v);
    return ok;
}

/* Launch rank 0's word to the others: the embedded agent's address and,
 * without the launcher's, the job's secret. On Open MPI 5 it goes through
 * the launch's key-value store under these keys; on 4.1 it is broadcast
 * over MPI_COMM_WORLD. */
typedef struct ina_world_word {
    char addr[sizeof(((mca_coll_ina_component_t *) 0)->agent_addr[0])];
    uint8_t secret[sizeof(((mca_coll_ina_component_t *) 0)->secret)];
} ina_world_word_t;
#define INA_STORE_KEY_AGENT "coll.ina.agent"
#define INA_STORE_KEY_SECRET "coll.ina.secret"

/* A drawn secret; all zero if the system gave no randomness (every job is
 * then refused at the agent, every call on the host, alike on every rank:
 * the all-zero capability). */
static void ina_draw_secret(uint8_t *secret, size_t len)
{
    if ((ssize_t) len != getrandom(secret, len, 0)) {
        memset(secret, 0, len);
    }
}

/* How the agent is found, where that needs no word from launch rank 0
 * (coll_ina_topology: this host's agent; coll_ina_agent naming running
 * agents); true if it needs one (the embedded agent). */
static bool ina_agent_needs_word(int my_rank, ompi_communicator_t *comm)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;

    if (c->agent_addr_known) {
        return false;
    }
    if ('\0' != c->topology[0]) {
        /* Every process reads the file and finds its host's agent: no
         * communication, no embedded agent. */
        char err[512] = "", host[256];
        const char *found = NULL;
        c->nagents = 0;
        c->agent_addr_known = true;
        if (INA_OK != ina_topology_load(c->topology, &c->topo, err, sizeof(err))) {
            INA_VERBOSE(1, "coll_ina_topology unusable: %s", err);
            opal_show_help("help-coll-ina.txt", "topology-invalid", true,
                           opal_process_info.nodename, err);
            c->unreachable_warned = true; /* said why already */
        } else {
            mca_coll_ina_host_of(comm, my_rank, host, sizeof(host));
            found = ina_topology_agent_for(c->topo, host);
            if (NULL == found && 0 == ina_topology_agents(c->topo)) {
                /* A file of the hosts' grid alone: no agent, by design. */
                INA_VERBOSE(10, "topology %s names no agent: the host algorithms for every "
                                "call", c->topology);
            } else if (NULL == found) {
                snprintf(err, sizeof(err), "host \"%s\" is in no hosts line of %s", host,
                         c->topology);
                ina_warn_unreachable("(none)", err);
            } else {
                snprintf(c->agent_addr[0], sizeof(c->agent_addr[0]), "%s", found);
                c->nagents = 1;
                INA_VERBOSE(10, "topology %s: host %s talks to agent %s", c->topology, host,
                            found);
            }
        }
        return false;
    }
    if (0 != strcmp(c->agent, "auto")) {
        /* Running agents were named: every process knows them already. */
        ina_parse_agents();
        return false;
    }
    return true;
}

/* The embedded agent's address as told, "" for none. */
static void ina_take_agent_word(const char *addr)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;

    snprintf(c->agent_addr[0], sizeof(c->agent_addr[0]), "%s", addr);
    c->nagents = '\0' != addr[0] ? 1 : 0;
    c->agent_addr_known = true;
}

void mca_coll_ina_launch_publish(void)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    uint32_t nprocs = 0, local = 0;
    bool one_node;
    char hex[40], addr[sizeof(c->agent_addr[0])] = "";
    unsigned long long hi, lo;

    if (!INA_COMPAT_HAS_LAUNCH_STORE || !ina_compat_launch_rank0() ||
        !ina_compat_launch_size(&nprocs, &local) || (!c->enable && !c->explicitly_selected) ||
        c->priority < 0) {
        return;
    }
    if (!c->secret_known) {
        c->secret_known = ina_launcher_secret(c->secret);
        if (!c->secret_known) {
            ina_draw_secret(c->secret, sizeof(c->secret));
            memcpy(&hi, c->secret, sizeof(hi));
            memcpy(&lo, c->secret + sizeof(hi), sizeof(lo));
            snprintf(hex, sizeof(hex), "%016llx-%016llx", hi, lo);
            if (!ina_compat_store_put(INA_STORE_KEY_SECRET, hex)) {
                INA_VERBOSE(1, "cannot put the job's secret in the launch's store: the other "
                               "processes' jobs will be refused at the agent");
            }
            c->secret_known = true;
            INA_VERBOSE(10, "no secret from the launcher: launch rank 0's, in the launch's "
                            "store");
        }
    }
    /* The embedded agent, where a communicator of this launch may need it:
     * unless the node stage alone serves every communicator, all members
     * being on one node (the same rule as each communicator's, applied to
     * the launch: coll_ina_test_node_size pretends nodes). */
    one_node = c->test_node_size > 0 ? (uint32_t) c->test_node_size >= nprocs
                                     : local >= nprocs;
    if (nprocs < 2 || (c->node_stage && one_node) || '\0' != c->topology[0] ||
        0 != strcmp(c->agent, "auto")) {
        return;
    }
    ina_spawn_embedded(local >= nprocs, addr, sizeof(addr));
    ina_take_agent_word(addr);
    if (!ina_compat_store_put(INA_STORE_KEY_AGENT, addr)) {
        INA_VERBOSE(1, "cannot put the embedded agent's address in the launch's store: the "
                       "other processes will find no agent");
    }
}

/* Launch rank 0's word read from the launch's store (Open MPI 5). */
static void ina_read_launch_store(bool want_secret, bool want_agent)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    char *v;

    if (want_secret) {
        v = ina_compat_store_get_rank0(INA_STORE_KEY_SECRET);
        c->secret_known = NULL != v && ina_parse_secret(v, c->secret);
        if (!c->secret_known) {
            /* Alike on every rank but rank 0, which then refuses nothing:
             * its jobs and theirs never meet, every call of theirs on the
             * host (the agent refuses the all-zero capability). */
            memset(c->secret, 0, sizeof(c->secret));
            c->secret_known = true;
            INA_VERBOSE(1, "no secret from the launcher nor from launch rank 0: every job "
                           "refused at the agent");
        }
        free(v);
    }
    if (want_agent) {
        v = ina_compat_store_get_rank0(INA_STORE_KEY_AGENT);
        ina_take_agent_word(NULL != v ? v : "");
        if (NULL == v) {
            INA_VERBOSE(1, "launch rank 0 named no embedded agent");
        }
        free(v);
    }
}

int mca_coll_ina_agent_setup(mca_coll_ina_module_t *module)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    ina_world_word_t word;
    bool spawn, draw = false;
    int rc;

    if (!c->secret_known) {
        c->secret_known = ina_launcher_secret(c->secret);
        draw = !c->secret_known; /* alike everywhere: one launcher */
    }
    spawn = ina_agent_needs_word(module->rank, module->comm);
    if (!spawn && !draw) {
        return OMPI_SUCCESS;
    }
    if (INA_COMPAT_HAS_LAUNCH_STORE) {
        ina_read_launch_store(draw, spawn);
        return OMPI_SUCCESS;
    }
    /* Open MPI 4.1: only MPI_COMM_WORLD's enable gets here (the first of
     * every process's communicators, and each needs the agent if any does:
     * it spans them all). */
    if (&ompi_mpi_comm_world.comm != module->comm) {
        return OMPI_SUCCESS;
    }
    memset(&word, 0, sizeof(word));
    if (0 == module->rank) {
        if (spawn) {
            ina_spawn_embedded(ina_comm_one_node(module->comm), word.addr, sizeof(word.addr));
        }
        if (draw) {
            ina_draw_secret(word.secret, sizeof(word.secret));
        }
    }
    /* The lower-priority bcast of WORLD is fully enabled (modules are enabled
     * in increasing priority) and the PML is up during comm_select; WORLD
     * is never activated from the progress engine (no MPI_Comm_idup). */
    rc = module->previous_bcast(&word, (int) sizeof(word), MPI_BYTE, 0, module->comm,
                                module->previous_bcast_module);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (draw) {
        memcpy(c->secret, word.secret, sizeof(c->secret));
        c->secret_known = true;
        INA_VERBOSE(10, "no secret from the launcher: rank 0's, broadcast over MPI_COMM_WORLD");
    }
    if (spawn) {
        word.addr[sizeof(word.addr) - 1] = '\0';
        ina_take_agent_word(word.addr);
    }
    return OMPI_SUCCESS;
}

/* JOB_OPEN's tenant: coll_ina_tenant, or this mpirun (the launcher's
 * address and the job family, as in the job key). Never 0 (no tenant), top
 * bit clear (the agent's own numbering of jobs without one). */
static uint64_t ina_tenant_id(void)
{
    static const char tag[] = "ina tenant 1";
    const char *launcher = ina_compat_launch_name();
    uint32_t family = ina_compat_launch_of(OMPI_PROC_MY_NAME);
    ina_job_key_t key;
    uint64_t t = 0;
    size_t i;

    ina_job_key_init(&key);
    ina_job_key_add(&key, tag, sizeof(tag));
    if (NULL != mca_coll_ina_component.tenant && '\0' != mca_coll_ina_component.tenant[0]) {
        ina_job_key_add(&key, mca_coll_ina_component.tenant, strlen(mca_coll_ina_component.tenant));
    } else {
        if (NULL != launcher) {
            ina_job_key_add(&key, launcher, strlen(launcher));
        }
        ina_job_key_add(&key, &family, sizeof(family));
    }
    for (i = 0; i < sizeof(t); ++i) {
        t = (t << 8) | key.bytes[i];
    }
    t &= ~(UINT64_C(1) << 63);
    return 0 != t ? t : 1;
}

/* The engine's log lines go where the component's go. */
static void ina_engine_log(void *arg, int level, const char *line)
{
    (void) arg;
    opal_output_verbose(level, mca_coll_ina_component.output, "coll:ina: engine: %s", line);
}

/* How this process connects to an agent (within `timeout_ms`). */
static void ina_client_cfg(ina_client_config_t *cfg, int timeout_ms)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->connect_timeout_ms = timeout_ms;
    cfg->progress_timeout_ms = mca_coll_ina_component.timeout_ms;
    cfg->verbose = mca_coll_ina_component.verbose;
    cfg->progress_thread = ina_want_thread() && !mca_coll_ina_component.thread_multiple;
    cfg->log_fn = ina_engine_log;
    cfg->log_arg = NULL;
    cfg->spin_us = mca_coll_ina_component.spin_us > 0 ? mca_coll_ina_component.spin_us : -1; /* the engine's 0 is its default */
    cfg->spin_yield = ina_yield_when_idle();
    cfg->rndv_bytes = mca_coll_ina_component.rndv_bytes > 0 ? mca_coll_ina_component.rndv_bytes : 0;
    cfg->tenant = ina_tenant_id();
    cfg->liveness_ms = mca_coll_ina_component.liveness_ms > 0 ? mca_coll_ina_component.liveness_ms
                                                              : -1; /* the engine's 0 is its default */
    cfg->proto_lowest = mca_coll_ina_component.test_proto_lowest;
    cfg->proto_highest = mca_coll_ina_component.test_proto_highest;
}

/* Alternative j of agent slot k ("HOST:PORT|HOST:PORT...": the agent, then
 * its standbys) into addr; false when there is none. */
static bool ina_agent_alternative(uint32_t k, int j, char *addr, size_t len)
{
    const char *p = mca_coll_ina_component.agent_addr[k], *end;

    for (; j > 0 && NULL != p; --j) {
        p = strchr(p, '|');
        p = NULL != p ? p + 1 : NULL;
    }
    if (NULL == p) {
        return false;
    }
    end = strchr(p, '|');
    snprintf(addr, len, "%.*s", (int) (NULL != end ? (size_t) (end - p) : strlen(p)), p);
    return true;
}

uint32_t mca_coll_ina_clients(ina_client_t **clients)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    ina_client_config_t cfg;
    char err[256] = "", addr[sizeof(c->agent_addr[0])];
    uint32_t k;
    int rc;

    if (!c->connect_tried) {
        c->connect_tried = true;
        if (!c->agent_addr_known || 0 == c->nagents) {
            ina_warn_unreachable(c->agent_addr_known ? "(none)" : c->agent,
                                 c->agent_addr_known ? "the embedded agent did not start"
                                                     : "the agent address is unknown to "
                                                       "this process");
            return 0;
        }
        ina_client_cfg(&cfg, c->timeout_ms);
        INA_VERBOSE(10, "tenant %016" PRIx64, cfg.tenant);
        for (k = 0; k < c->nagents; ++k) {
            (void) ina_agent_alternative(k, 0, addr, sizeof(addr));
            cfg.agent_addr = addr;
            rc = ina_client_connect(&cfg, &c->client[k], err, sizeof(err));
            if (INA_OK != rc) {
                /* A job striped over these agents needs every one of them. */
                c->client[k] = NULL;
                ina_warn_unreachable(addr, err);
                break;
            }
            c->agent_alt[k] = 0;
            INA_VERBOSE(10, "connected to agent %s (%u of %u)", addr, k + 1, c->nagents);
        }
    }
    for (k = 0; k < c->nagents; ++k) {
        if (NULL == c->client[k] || !ina_client_alive(c->client[k])) {
            return 0;
        }
        clients[k] = c->client[k];
    }
    return c->nagents;
}

void mca_coll_ina_agent_drop(uint32_t k)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    ina_client_t **grown;

    if (NULL == c->client[k]) {
        return;
    }
    /* Jobs of communicators that have not given it up yet still point to
     * it: it is disconnected at close, as the others. */
    grown = realloc(c->retired, sizeof(*grown) * (size_t) (c->nretired + 1));
    if (NULL != grown) {
        c->retired = grown;
        c->retired[c->nretired++] = c->client[k];
    } /* else: left to the process's exit (a dead connection) */
    c->client[k] = NULL;
}

int mca_coll_ina_agent_reach(uint32_t k)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    ina_client_config_t cfg;
    char err[256] = "", addr[sizeof(c->agent_addr[0])];
    int j;

    if (k >= c->nagents) {
        return -1;
    }
    if (NULL != c->client[k] && ina_client_progress(c->client[k])) {
        return c->agent_alt[k];
    }
    mca_coll_ina_agent_drop(k);
    /* A dead agent's port refuses at once; a dead host's takes the timeout,
     * which a running job should not wait out at every try. */
    ina_client_cfg(&cfg, c->timeout_ms < 2000 ? c->timeout_ms : 2000);
    for (j = 0; ina_agent_alternative(k, j, addr, sizeof(addr)); ++j) {
        cfg.agent_addr = addr;
        if (INA_OK == ina_client_connect(&cfg, &c->client[k], err, sizeof(err))) {
            c->agent_alt[k] = j;
            INA_VERBOSE(5, "connected again to agent %s", addr);
            return j;
        }
        c->client[k] = NULL;
        INA_VERBOSE(10, "agent %s still unreachable: %s", addr, err);
    }
    return -1;
}

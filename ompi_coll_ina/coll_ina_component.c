/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * coll/ina component: MCA parameters, open/close, MPI_T performance
 * variables, and the process-wide connection to the aggregation agent.
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

/* ina_config.h is our autoconf header: its PACKAGE_* describe ina, not Open MPI. */
#undef PACKAGE_BUGREPORT
#undef PACKAGE_NAME
#undef PACKAGE_STRING
#undef PACKAGE_TARNAME
#undef PACKAGE_URL
#undef PACKAGE_VERSION
#include "ina_config.h"
#include "coll_ina.h"


static int ina_register(void);
static int ina_open(void);
static int ina_close(void);

/* coll_ina_progress_thread: kept here rather than in the component struct,
 * it is read only when the client connects. -1: auto (ina_want_thread). */
static int ina_progress_thread = -1;
/* coll_ina_spin_us: likewise, read when the client connects and when rank 0
 * starts the embedded agent. */
static int ina_spin_us = 100;
/* coll_ina_rndv_bytes: likewise. */
static int ina_rndv_bytes = 0;
/* coll_ina_tenant: likewise (a string: MCA has no 64-bit unsigned type). */
static char *ina_tenant = NULL;

mca_coll_ina_component_t mca_coll_ina_component = {
    .super = {
        .collm_version = {
            INA_COLL_BASE_VERSION,
            .mca_component_name = "ina",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_open_component = ina_open,
            .mca_close_component = ina_close,
            .mca_register_component_params = ina_register,
        },
        .collm_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = mca_coll_ina_init_query,
        .collm_comm_query = mca_coll_ina_comm_query,
    },
    .priority = 90,
    .output = -1,
    .agent_pid = -1,
};

static int ina_register(void)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    const mca_base_component_t *v = &c->super.collm_version;

    c->priority = 90;
    (void) mca_base_component_var_register(v, "priority",
        "Priority of the ina coll component (higher than the default components, "
        "so that ina is stacked on top of them)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_READONLY, &c->priority);

    c->verbose = 0;
    (void) mca_base_component_var_register(v, "verbose",
        "Verbosity of the ina coll component (0 = quiet; 1 = per-communicator "
        "counters at free; 10 = every fallback with its reason; 100 = engine trace)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_LOCAL, &c->verbose);

    c->enable = false;
    (void) mca_base_component_var_register(v, "enable",
        "Stack ina on top of the default coll components for every communicator. "
        "Without it ina is only used when the coll selection names it (--mca coll ina)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_3,
        MCA_BASE_VAR_SCOPE_READONLY, &c->enable);

    c->agent = "auto";
    (void) mca_base_component_var_register(v, "agent",
        "Aggregation agent: \"auto\" starts an embedded ina-switchd on the node of "
        "MPI_COMM_WORLD rank 0; otherwise host:port of a running ina-switchd, or a "
        "comma-separated list of them: each communicator's job is striped over those "
        "agents (block k of a call goes to agent k mod their number, docs/HIERARCHY.md). "
        "An entry may name standbys after the agent, host:port|host:port...: a "
        "communicator that lost its agent resumes offload on the first of them every "
        "member reaches (coll_ina_resume_interval)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_3,
        MCA_BASE_VAR_SCOPE_READONLY, &c->agent);

    c->topology = "";
    (void) mca_base_component_var_register(v, "topology",
        "File naming the cluster's agents and the hosts each serves (lines \"agent "
        "NAME HOST:PORT [parent NAME]\" and \"hosts NAME HOSTLIST\", docs/HIERARCHY.md); "
        "when set, each process talks to the agent of its host and coll_ina_agent is "
        "not used; empty (default): coll_ina_agent",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_3,
        MCA_BASE_VAR_SCOPE_READONLY, &c->topology);

    c->agent_path = INA_SWITCHD_PATH;
    (void) mca_base_component_var_register(v, "agent_path",
        "Executable of the embedded agent (coll_ina_agent = auto)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->agent_path);

    c->agent_bind = "none";
    (void) mca_base_component_var_register(v, "agent_bind",
        "Where the embedded agent runs (ina-switchd --bind): core:N, numa:N, package:N "
        "or pu:N, a logical index as lstopo numbers them, or none",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->agent_bind);

    c->agent_segs = 1024;
    (void) mca_base_component_var_register(v, "agent_segs",
        "Number of Seg buffer units of the embedded agent",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->agent_segs);

    c->block_size = 65536;
    (void) mca_base_component_var_register(v, "block_size",
        "Bytes per block (SID) an offloaded call is cut into; the agent may lower it "
        "to its Seg size",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->block_size);

    c->window = 16;
    (void) mca_base_component_var_register(v, "window",
        "Blocks in flight per rank (sliding window = requested Seg lease per communicator)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->window);

    c->required = false;
    (void) mca_base_component_var_register(v, "required",
        "Offload is required: if the agent cannot be reached or a communicator cannot "
        "get a job, offloadable calls return an MPI error instead of falling back",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4,
        MCA_BASE_VAR_SCOPE_READONLY, &c->required);

    c->recover = true;
    (void) mca_base_component_var_register(v, "recover",
        "An agent lost in the middle of a call: the ranks finish the call among themselves "
        "(results that arrived are reused, the rest rebuilt from the inputs), later calls of "
        "the communicator run the host algorithms until offload may resume "
        "(coll_ina_resume_interval); 0: the call fails with an MPI error. Flat, node stage, "
        "striped and tree communicators; not a tree of agents with the node stage "
        "(docs/ARCHITECTURE.md, \"Recovery from a lost agent\")",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4,
        MCA_BASE_VAR_SCOPE_READONLY, &c->recover);

    c->resume_interval = 100;
    (void) mca_base_component_var_register(v, "resume_interval",
        "A communicator whose agent was lost runs its collectives on the host; after "
        "this many of them its members check together (at a blocking collective) whether "
        "they reach the agent, or a standby of coll_ina_agent, again, and if they all do "
        "offload resumes; the interval doubles after each failed check, up to 32 times "
        "this. 0: never resume",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->resume_interval);

    c->timeout_ms = 30000;
    (void) mca_base_component_var_register(v, "timeout",
        "Milliseconds without progress from the agent before it is declared lost "
        "(also the connect timeout)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->timeout_ms);

    c->liveness_ms = 1000;
    (void) mca_base_component_var_register(v, "liveness_ms",
        "Milliseconds in which an agent that answers nothing, though probed, while "
        "calls wait on it is declared lost and its calls recovered by the ranks (a "
        "frozen agent, a dead link); probes start after a third of it. Only time a "
        "rank spends in MPI counts. 0: no probes (coll_ina_timeout alone)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->liveness_ms);

    c->min_bytes = 0;
    (void) mca_base_component_var_register(v, "min_bytes",
        "Offload only calls of at least this many bytes (smaller ones use the "
        "host algorithm)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->min_bytes);

    c->test_node_size = 0;
    (void) mca_base_component_var_register(v, "test_node_size",
        "For tests only: K > 0 makes the component group the members of a "
        "communicator into nodes as if world ranks [0, K) ran on node 0, [K, 2K) on "
        "node 1, ... (the agent's Node bitmap, the node layout pvars), whatever "
        "node they run on; 0 (default): the node ids of Open MPI's runtime",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_READONLY, &c->test_node_size);

    c->test_proto_lowest = 0;
    (void) mca_base_component_var_register(v, "test_proto_lowest",
        "For tests only: the lowest ina protocol version this process offers the agent; "
        "0 (default): the oldest this build speaks; negative: that many below this "
        "build's version",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_READONLY, &c->test_proto_lowest);
    c->test_proto_highest = 0;
    (void) mca_base_component_var_register(v, "test_proto_highest",
        "For tests only: the highest ina protocol version this process offers the agent "
        "(-1: the previous version, as a component of the previous ina release); 0 "
        "(default): this build's",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_READONLY, &c->test_proto_highest);

    c->test_hosts = "";
    (void) mca_base_component_var_register(v, "test_hosts",
        "For tests only: comma-separated host names by world rank, used instead of "
        "the real ones to look ranks up in coll_ina_topology; empty (default): the "
        "runtime's host names",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_READONLY, &c->test_hosts);

    c->test_no_job = -1;
    (void) mca_base_component_var_register(v, "test_no_job",
        "For tests only: the process of this world rank opens no job at the agent, as "
        "if the agent had refused it (its calls fall back; the agent denies the "
        "others'); -1 (default): none",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_READONLY, &c->test_no_job);

    c->test_package_size = 0;
    (void) mca_base_component_var_register(v, "test_package_size",
        "For tests only: P > 0 makes the node stage pick its stream leaders as if "
        "local ranks [0, P) of each node shared package 0, [P, 2P) package 1, ...; "
        "0 (default): the packages in Open MPI's locality of the procs",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_READONLY, &c->test_package_size);

    c->node_stage = true;
    (void) mca_base_component_var_register(v, "node_stage",
        "Node stage: the ranks of a communicator that share a node combine their "
        "contributions in shared memory, and only the node's result goes to the "
        "agent (once per call, in coll_ina_node_streams streams); a communicator "
        "on one node runs its collectives in shared memory alone, without the agent",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4,
        MCA_BASE_VAR_SCOPE_READONLY, &c->node_stage);

    c->node_streams = 0;
    (void) mca_base_component_var_register(v, "node_streams",
        "Streams from each node to the agent, each led by one local rank (0: one per "
        "rank of the communicator's least populated node)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->node_streams);

    c->node_segment_bytes = 4u << 20;
    (void) mca_base_component_var_register(v, "node_segment_bytes",
        "Most bytes of the shared-memory segment of one communicator on one node (it "
        "holds two steps of every local rank's contribution and of the result)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->node_segment_bytes);

    c->node_chunk_bytes = 256u << 10;
    (void) mca_base_component_var_register(v, "node_chunk_bytes",
        "Bytes per local rank and step of the node stage (lowered to fit "
        "coll_ina_node_segment_bytes)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->node_chunk_bytes);

    c->node_small_bytes = 2048;
    (void) mca_base_component_var_register(v, "node_small_bytes",
        "Node-stage steps of at most this many bytes are reduced whole by every rank "
        "(one synchronisation); larger ones are reduce-scattered among the local ranks",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->node_small_bytes);

    ina_progress_thread = -1;
    (void) mca_base_component_var_register(v, "progress_thread",
        "Run an engine thread that keeps non-blocking offloaded calls moving while "
        "the application computes between post and wait (it sleeps while none is "
        "outstanding; never under MPI_THREAD_MULTIPLE, where nothing is offloaded). "
        "1: on, 0: off, -1 (default): on where the node has a core for every local "
        "rank and its thread, and one more for an agent; off where it has fewer, as "
        "the thread would then take the cores the ranks and the agent wait on",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &ina_progress_thread);

    ina_spin_us = 100;
    (void) mca_base_component_var_register(v, "spin_us",
        "Microseconds a rank (and the embedded agent) polls for the agent's reply "
        "before sleeping on the event fd, while calls are outstanding; less when "
        "recent waits were short, none when they were longer. 0: never poll, "
        "always sleep. Polls yield the CPU under mpi_yield_when_idle (or when "
        "Open MPI finds the node oversubscribed)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &ina_spin_us);

    ina_rndv_bytes = 0;
    (void) mca_base_component_var_register(v, "rndv_bytes",
        "Blocks and results of at least this many bytes travel by rendezvous: the "
        "receiver fetches them straight into their place (a Seg buffer at the "
        "agent, the receive buffer at a rank), by RDMA where UCX has a verbs "
        "device. The ranks ask for it for results; the embedded agent is started "
        "with it for blocks (a standalone ina-switchd: --rndv-bytes). 0: never, "
        "every message eager (the default; on TCP rendezvous is slower)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &ina_rndv_bytes);

    ina_tenant = NULL;
    (void) mca_base_component_var_register(v, "tenant",
        "The application this process belongs to, as the agent's scheduler sees "
        "it: jobs (communicators) of one tenant do not compete for the agent. "
        "Empty (the default): one tenant per mpirun (from the launcher's address "
        "and job family); otherwise any string, hashed (processes that give the "
        "same one are one tenant)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &ina_tenant);

    return mca_coll_ina_pvars_register();
}

/* Whether the coll framework's selection string asks for ina by name
 * ("ina" or "ina,basic"; "^ina" or an empty selection is not asking). */
static bool ina_named_in_selection(void)
{
    const void *value = NULL;
    const char *sel, *p;
    int idx;

    idx = mca_base_var_find("ompi", "coll", NULL, NULL);
    if (idx < 0 || OPAL_SUCCESS != mca_base_var_get_value(idx, &value, NULL, NULL) ||
        NULL == value || NULL == (sel = *(const char *const *) value) || '^' == sel[0]) {
        return false;
    }
    for (p = sel; NULL != (p = strstr(p, "ina")); p += 3) {
        if ((p == sel || ',' == p[-1]) && (',' == p[3] || '\0' == p[3])) {
            return true;
        }
    }
    return false;
}

static int ina_open(void)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0, major = 0, minor = 0;

    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    c->explicitly_selected = ina_named_in_selection();
#ifdef MCA_COLL_INA_HELP_DIR
    /* Uninstalled builds: find help-coll-ina.txt in the source tree too
     * (installed, it sits in Open MPI's pkgdatadir, searched by default). */
    (void) opal_show_help_add_dir(MCA_COLL_INA_HELP_DIR);
#endif

    /* The component is compiled against one series' coll API
     * (coll_ina_compat.h); refuse to run inside another series. */
    if (MPI_SUCCESS != MPI_Get_library_version(lib, &len) ||
        2 != sscanf(lib, "Open MPI v%d.%d", &major, &minor) ||
        OMPI_MAJOR_VERSION != major || OMPI_MINOR_VERSION != minor) {
        if (c->explicitly_selected) {
            opal_show_help("help-coll-ina.txt", "version-mismatch", true,
                           OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, lib);
        }
        INA_VERBOSE(1, "built for Open MPI %d.%d but running in \"%s\": declining",
                    OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, lib);
        opal_output_close(c->output);
        c->output = -1;
        return OMPI_ERR_NOT_SUPPORTED;
    }

    c->nagents = 0;
    c->agent_addr_known = false;
    c->agent_pid = -1;
    memset(c->client, 0, sizeof(c->client));
    c->topo = NULL;
    c->connect_tried = false;
    c->unreachable_warned = false;
    c->live_jobs = 0;
    c->requests_ready = false;
    c->progress_registered = false;
    OBJ_CONSTRUCT(&c->outstanding, opal_list_t);
    OBJ_CONSTRUCT(&c->completed, opal_list_t);
    OBJ_CONSTRUCT(&c->key_epochs, opal_hash_table_t);
    if (OPAL_SUCCESS != opal_hash_table_init(&c->key_epochs, 64)) {
        OBJ_DESTRUCT(&c->key_epochs);
        OBJ_DESTRUCT(&c->completed);
        OBJ_DESTRUCT(&c->outstanding);
        opal_output_close(c->output);
        c->output = -1;
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    OBJ_CONSTRUCT(&c->modules, opal_hash_table_t);
    OBJ_CONSTRUCT(&c->modules_lock, opal_mutex_t);
    if (OPAL_SUCCESS != opal_hash_table_init(&c->modules, 64)) {
        OBJ_DESTRUCT(&c->modules_lock);
        OBJ_DESTRUCT(&c->modules);
        OBJ_DESTRUCT(&c->key_epochs);
        OBJ_DESTRUCT(&c->completed);
        OBJ_DESTRUCT(&c->outstanding);
        opal_output_close(c->output);
        c->output = -1;
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* After the state above: a process that ended every MPI session
     * and starts another opens the component anew. */
    mca_coll_ina_launch_publish();
    return OMPI_SUCCESS;
}

static int ina_close(void)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;

    /* MPI_Finalize completed every request: none is outstanding. */
    mca_coll_ina_requests_fini();
    OBJ_DESTRUCT(&c->completed);
    OBJ_DESTRUCT(&c->outstanding);
    OBJ_DESTRUCT(&c->key_epochs);
    OBJ_DESTRUCT(&c->modules);
    OBJ_DESTRUCT(&c->modules_lock);
    /* Communicators are gone by now; a job still alive here belongs to a
     * communicator Open MPI never destroyed, so keep its client (the process
     * is exiting anyway) rather than free it under the job. */
    for (uint32_t k = 0; k < MCA_COLL_INA_MAX_AGENTS; ++k) {
        if (NULL != c->client[k] && 0 == c->live_jobs) {
            ina_client_disconnect(c->client[k]);
        }
        c->client[k] = NULL;
    }
    for (int j = 0; j < c->nretired; ++j) {
        if (0 == c->live_jobs) {
            ina_client_disconnect(c->retired[j]);
        }
    }
    free(c->retired);
    c->retired = NULL;
    c->nretired = 0;
    ina_topology_free(c->topo);
    c->topo = NULL;
    if (c->agent_pid > 0) {
        INA_VERBOSE(10, "stopping the embedded agent (pid %d)", c->agent_pid);
        ina_agent_stop(c->agent_pid, 2000);
        c->agent_pid = -1;
    }
    if (c->output >= 0) {
        opal_output_close(c->output);
        c->output = -1;
    }
    return OMPI_SUCCESS;
}

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

    if (ina_progress_thread >= 0) {
        return 0 != ina_progress_thread;
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
             ina_rndv_bytes <= 0 ? 0
             : ina_rndv_bytes > (int) INA_PROTO_MAX_SEG_BYTES ? (int) INA_PROTO_MAX_SEG_BYTES
                                                               : ina_rndv_bytes);
    /* Measured on 2 cores, 2 ranks: an agent that polls there only slows the
     * ranks that poll in opal_progress (docs/perf-history/agent-data-path.md,
     * "Waiting"). */
    snprintf(spin, sizeof(spin), "%d",
             ina_spin_us > 0 && !ina_node_oversubscribed() ? ina_spin_us : 0);
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
            if (NULL == found) {
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
    if (NULL != ina_tenant && '\0' != ina_tenant[0]) {
        ina_job_key_add(&key, ina_tenant, strlen(ina_tenant));
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
    cfg->spin_us = ina_spin_us > 0 ? ina_spin_us : -1; /* the engine's 0 is its default */
    cfg->spin_yield = ina_yield_when_idle();
    cfg->rndv_bytes = ina_rndv_bytes > 0 ? ina_rndv_bytes : 0;
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

/* ---- the module of a communicator -------------------------------------- */

/* Which module serves a communicator cannot be read from comm->c_coll: a
 * component stacked above ina (coll/monitoring, coll/sync, a tool's
 * interposition layer) owns the slots there and calls ina's functions from
 * its own. Nor can it hang on the communicator as an attribute, as
 * coll/hcoll and coll/ucc do: Open MPI 5 gives a communicator made from a
 * group (MPI Sessions) a fresh attribute table after its collectives are
 * enabled, and a process's attribute keys end with its last session. So
 * the component keeps its modules by communicator itself. */

static uint64_t ina_comm_key(const ompi_communicator_t *comm)
{
    return (uint64_t) (uintptr_t) comm;
}

void mca_coll_ina_comm_attach(mca_coll_ina_module_t *module)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    int rc;

    OPAL_THREAD_LOCK(&c->modules_lock);
    rc = opal_hash_table_set_value_uint64(&c->modules, ina_comm_key(module->comm), module);
    OPAL_THREAD_UNLOCK(&c->modules_lock);
    if (OPAL_SUCCESS != rc) {
        INA_VERBOSE(1, "cid %d: cannot record its module (rc %d): its MPI_T counters read 0",
                    module->cid, rc);
    }
}

void mca_coll_ina_comm_detach(mca_coll_ina_module_t *module)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    void *value = NULL;

    /* Only its own entry: the communicator's memory may already serve a
     * newer communicator whose module a component above ina held back. */
    OPAL_THREAD_LOCK(&c->modules_lock);
    if (OPAL_SUCCESS == opal_hash_table_get_value_uint64(&c->modules,
                                                         ina_comm_key(module->comm), &value) &&
        value == module) {
        (void) opal_hash_table_remove_value_uint64(&c->modules, ina_comm_key(module->comm));
    }
    OPAL_THREAD_UNLOCK(&c->modules_lock);
}

/* ina's module of `comm`, or NULL (ina not enabled on it). */
static mca_coll_ina_module_t *ina_comm_module(ompi_communicator_t *comm)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    void *value = NULL;

    if (NULL == comm) {
        return NULL;
    }
    OPAL_THREAD_LOCK(&c->modules_lock);
    if (OPAL_SUCCESS != opal_hash_table_get_value_uint64(&c->modules, ina_comm_key(comm),
                                                         &value)) {
        value = NULL;
    }
    OPAL_THREAD_UNLOCK(&c->modules_lock);
    return (mca_coll_ina_module_t *) value;
}

/* ---- MPI_T performance variables --------------------------------------- */

/* Which counter a pvar reads: index into ina_pvar_defs. */
typedef struct ina_pvar_def {
    const char *name;
    const char *desc;
    int reason; /* -1: offloaded, -2: fallback total, -3: node only, -4: denied by the
                   agent's reason, -5: verdict wait, -6: denied calls' host time,
                   -7: recovered calls (kind 0: all, 1: offloaded, 2: resumed),
                   else a fallback reason */
    int kind;   /* with -1: a collective's offloaded counter, or -1 for all; with -4:
                   the DENY status, or -1 for every other one */
} ina_pvar_def_t;

static const ina_pvar_def_t ina_pvar_defs[] = {
    {"offloaded_calls", "Calls of this communicator offloaded (to the agent, or done by "
                        "the node stage alone)", -1, -1},
    {"recovered_calls", "Calls of this communicator the ranks finished among themselves "
                        "after the agent was lost in the middle (coll_ina_recover)", -7, 0},
    {"recovered_offloaded", "Recovered calls finished from the results and inputs the "
                            "ranks held (the others ran the host algorithm)", -7, 1},
    {"resumed", "Times offload resumed on this communicator after its agent was lost "
                "(coll_ina_resume_interval)", -7, 2},
    {"node_only_calls", "Offloaded calls of this communicator done by the node stage "
                        "alone (shared memory, no agent)", -3, -1},
    {"fallback_calls", "Offloadable-kind calls of this communicator that ran the host "
                       "algorithm (all reasons)", -2, -1},
    {"fallback_unsupported", "Fallbacks: datatype, op or layout not offloadable",
     MCA_COLL_INA_FB_UNSUPPORTED, -1},
    {"fallback_below_threshold", "Fallbacks: message below coll_ina_min_bytes",
     MCA_COLL_INA_FB_THRESHOLD, -1},
    {"fallback_denied", "Fallbacks: the agent denied the call", MCA_COLL_INA_FB_DENIED, -1},
    {"fallback_unreachable", "Fallbacks: no agent or no job for this communicator",
     MCA_COLL_INA_FB_UNREACHABLE, -1},
    {"denied_busy", "Denials: another application's call held the agent (or another "
                    "application held it: --policy exclusive)", -4, INA_PROTO_ERR_BUSY},
    {"denied_outscored", "Denials: another application's call, predicted while this one "
                         "would run, scored higher (--policy tdm)", -4,
     INA_PROTO_ERR_OUTSCORED},
    {"denied_no_resources", "Denials: the agent's Seg pool had no lease free", -4,
     INA_PROTO_ERR_NO_RESOURCES},
    {"denied_other", "Denials for any other reason (the job incomplete at the agent, the "
                     "agent drained by its operator, its "
                     "parent agent, another striped agent's denial)", -4, -1},
    {"verdict_wait_ns", "Nanoseconds this communicator's calls waited for the agents' "
                        "verdicts (granted or denied)", -5, -1},
    {"denied_host_ns", "Nanoseconds this communicator's denied calls spent in the host "
                       "algorithm (a non-blocking call: its post)", -6, -1},
    {"offloaded_allreduce", "MPI_Allreduce and MPI_Iallreduce calls offloaded", -1,
     MCA_COLL_INA_ALLREDUCE},
    {"offloaded_reduce", "MPI_Reduce and MPI_Ireduce calls offloaded", -1, MCA_COLL_INA_REDUCE},
    {"offloaded_bcast", "MPI_Bcast and MPI_Ibcast calls offloaded", -1, MCA_COLL_INA_BCAST},
    {"offloaded_barrier", "MPI_Barrier and MPI_Ibarrier calls offloaded", -1,
     MCA_COLL_INA_BARRIER},
    {"offloaded_allgather", "MPI_Allgather and MPI_Iallgather calls offloaded", -1,
     MCA_COLL_INA_ALLGATHER},
    {"offloaded_reduce_scatter", "MPI_Reduce_scatter and MPI_Reduce_scatter_block calls "
                                 "offloaded", -1, MCA_COLL_INA_REDUCE_SCATTER},
};

/* A continuous COUNTER handle reports the increase since its allocation:
 * Open MPI reads the variable once right after the BIND notification and
 * subtracts that base from every later read. ina's counters are meant to be
 * read as totals of the communicator (alloc, read, free), so that first read
 * returns 0: the handle counts from the communicator's creation.
 * MPI_T_pvar_reset still rebases as usual. MPI_T calls are serialised by
 * Open MPI's MPI_T lock, so one flag suffices. */
static bool ina_pvar_bind_pending = false;

static int ina_pvar_get(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    const ina_pvar_def_t *def = (const ina_pvar_def_t *) pvar->ctx;
    ompi_communicator_t *comm = (ompi_communicator_t *) obj;
    unsigned long long *out = (unsigned long long *) value;
    mca_coll_ina_module_t *m;

    *out = 0;
    if (ina_pvar_bind_pending) {
        ina_pvar_bind_pending = false;
        return OPAL_SUCCESS;
    }
    m = ina_comm_module(comm);
    if (NULL == m) {
        return OPAL_SUCCESS; /* ina is not enabled on this communicator */
    }
    if (-1 == def->reason) {
        *out = def->kind < 0 ? m->offloaded_calls : m->offloaded_by_kind[def->kind];
    } else if (-2 == def->reason) {
        *out = m->fallback_calls;
    } else if (-3 == def->reason) {
        *out = m->node_only_calls;
    } else if (-4 == def->reason && def->kind >= 0) {
        *out = m->denied_by_status[def->kind];
    } else if (-4 == def->reason) {
        unsigned s;
        for (s = 0; s <= INA_PROTO_STATUS_MAX; ++s) {
            if (INA_PROTO_ERR_BUSY != s && INA_PROTO_ERR_OUTSCORED != s &&
                INA_PROTO_ERR_NO_RESOURCES != s) {
                *out += m->denied_by_status[s];
            }
        }
    } else if (-5 == def->reason) {
        *out = m->verdict_wait_ns;
    } else if (-6 == def->reason) {
        *out = m->denied_host_ns;
    } else if (-7 == def->reason) {
        *out = 0 == def->kind ? m->recovered_calls
                              : 1 == def->kind ? m->recovered_offloaded : m->resumed;
    } else {
        *out = m->fallback_by_reason[def->reason];
    }
    return OPAL_SUCCESS;
}

static int ina_pvar_notify(struct mca_base_pvar_t *pvar, mca_base_pvar_event_t event,
                           void *obj, int *count)
{
    (void) pvar;
    (void) obj;
    if (MCA_BASE_PVAR_HANDLE_BIND == event) {
        *count = 1;
        ina_pvar_bind_pending = true;
    }
    return OPAL_SUCCESS;
}

/* The node layout of a communicator, as ina computed it (coll_ina_module.c):
 * fixed for its life, so SIZE class variables read directly. */
typedef enum ina_layout_what {
    INA_LAYOUT_NODES,
    INA_LAYOUT_LOCAL,
    INA_LAYOUT_MEMBERS,
    INA_LAYOUT_STREAMS,
    INA_LAYOUT_LEAVES,
    INA_LAYOUT_AGENTS
} ina_layout_what_t;

typedef struct ina_layout_pvar_def {
    const char *name;
    const char *desc;
    ina_layout_what_t what;
} ina_layout_pvar_def_t;

static const ina_layout_pvar_def_t ina_layout_pvar_defs[] = {
    {"job_nodes", "Nodes the members of this communicator sit on, as ina grouped them "
                  "(the Node bitmap of its job at the agent)", INA_LAYOUT_NODES},
    {"local_ranks", "Members of this communicator on this rank's node, this rank "
                    "included (what the node stage reduces among)", INA_LAYOUT_LOCAL},
    {"job_members", "Members of this communicator's job(s) at the agent: its ranks, or "
                    "with the node stage on several nodes one per node (0: no job)",
     INA_LAYOUT_MEMBERS},
    {"node_streams", "Streams each node of this communicator sends to the agent, each "
                     "one job led by one local rank (0: no node stage uplink)",
     INA_LAYOUT_STREAMS},
    {"job_leaves", "Leaf agents serving this communicator's job: 1 for one agent, more "
                   "for a tree of agents (coll_ina_topology; 0: no job)", INA_LAYOUT_LEAVES},
    {"job_agents", "Agents this communicator's job is striped over (coll_ina_agent "
                   "naming several): 1 when it is not striped, 0: no job", INA_LAYOUT_AGENTS},
};

static int ina_layout_pvar_get(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    const ina_layout_pvar_def_t *def = (const ina_layout_pvar_def_t *) pvar->ctx;
    mca_coll_ina_module_t *m = ina_comm_module((ompi_communicator_t *) obj);
    unsigned long long *out = (unsigned long long *) value;

    /* 0: ina is not enabled on this communicator. */
    *out = 0;
    if (NULL == m) {
        return OPAL_SUCCESS;
    }
    switch (def->what) {
    case INA_LAYOUT_NODES:
        *out = (unsigned long long) m->nnodes;
        break;
    case INA_LAYOUT_LOCAL:
        *out = (unsigned long long) m->nlocal;
        break;
    case INA_LAYOUT_MEMBERS:
        *out = MCA_COLL_INA_JOB_READY == m->job_state ? m->job_params.nmembers : 0;
        break;
    case INA_LAYOUT_STREAMS:
        *out = m->node_uplink ? (unsigned long long) m->nstreams : 0;
        break;
    case INA_LAYOUT_LEAVES:
        *out = MCA_COLL_INA_JOB_READY == m->job_state ? m->nleaves : 0;
        break;
    case INA_LAYOUT_AGENTS:
        *out = MCA_COLL_INA_JOB_READY == m->job_state ? m->nagents : 0;
        break;
    }
    return OPAL_SUCCESS;
}

static int ina_layout_pvar_notify(struct mca_base_pvar_t *pvar, mca_base_pvar_event_t event,
                                  void *obj, int *count)
{
    (void) pvar;
    (void) obj;
    if (MCA_BASE_PVAR_HANDLE_BIND == event) {
        *count = 1;
    }
    return OPAL_SUCCESS;
}

int mca_coll_ina_pvars_register(void)
{
    size_t i;
    int rc;

    for (i = 0; i < sizeof(ina_layout_pvar_defs) / sizeof(ina_layout_pvar_defs[0]); ++i) {
        rc = mca_base_component_pvar_register(
            &mca_coll_ina_component.super.collm_version, ina_layout_pvar_defs[i].name,
            ina_layout_pvar_defs[i].desc, OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_SIZE,
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_MPI_COMM,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
            ina_layout_pvar_get, NULL, ina_layout_pvar_notify,
            (void *) &ina_layout_pvar_defs[i]);
        if (rc < 0) {
            return rc;
        }
    }

    for (i = 0; i < sizeof(ina_pvar_defs) / sizeof(ina_pvar_defs[0]); ++i) {
        rc = mca_base_component_pvar_register(
            &mca_coll_ina_component.super.collm_version, ina_pvar_defs[i].name,
            ina_pvar_defs[i].desc, OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER,
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_MPI_COMM,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
            ina_pvar_get, NULL, ina_pvar_notify, (void *) &ina_pvar_defs[i]);
        if (rc < 0) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * coll/ina: its MCA parameters (registered with the component, read by
 * the other files through mca_coll_ina_component).
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

int mca_coll_ina_register_params(void)
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

    {
        static const mca_base_var_enum_value_t modes[] = {
            {MCA_COLL_INA_HOST_AUTO, "auto"},
            {MCA_COLL_INA_HOST_GRID, "grid"},
            {MCA_COLL_INA_HOST_PREVIOUS, "previous"},
            {0, NULL}};
        mca_base_var_enum_t *e = NULL;
        c->host = MCA_COLL_INA_HOST_AUTO;
        (void) mca_base_var_enum_create("coll_ina_host_modes", modes, &e);
        (void) mca_base_component_var_register(v, "host",
            "What runs a call the agents do not take (denied, below coll_ina_min_bytes, "
            "no agent, an unsupported type): \"auto\" the rows and columns of the "
            "hyper-square the topology file describes (coll_ina_topology, \"square\" lines) "
            "for MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather, MPI_Bcast and "
            "MPI_Reduce, blocking, non-blocking and persistent, where the "
            "communicator covers whole groups of it and the call has at least "
            "coll_ina_grid_min_bytes, else the algorithm ina replaced; \"grid\" the grid for "
            "every call it can take; \"previous\" the algorithm ina replaced",
            MCA_BASE_VAR_TYPE_INT, e, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
            &c->host);
        if (NULL != e) {
            OBJ_RELEASE(e);
        }
    }

    c->grid_min_bytes = 16384;
    (void) mca_base_component_var_register(v, "grid_min_bytes",
        "With coll_ina_host=auto, the smallest call the grid's rings run: below it "
        "2 (columns + rows - 2) ring steps cost more than the algorithm ina replaced",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->grid_min_bytes);

    c->grid_both_ways = true;
    (void) mca_base_component_var_register(v, "grid_both_ways",
        "The grid's rings carry half the vector each way round at once (both "
        "directions of every link); false: the whole vector one way",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_READONLY, &c->grid_both_ways);

    c->grid_frag_bytes = 32768;
    (void) mca_base_component_var_register(v, "grid_frag_bytes",
        "The grid's rings send each step's piece in messages of at most this many "
        "bytes: below the transport's eager limit (btl_tcp_eager_limit), a message goes "
        "at once instead of waiting for the receiver's go-ahead",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_READONLY, &c->grid_frag_bytes);

    c->grid_chunks = 128;
    (void) mca_base_component_var_register(v, "grid_chunks",
        "The grid's rings pipeline a call in up to this many chunks: one chunk's "
        "column phases run on the column links while the next chunks' row phases use "
        "the row links (each chunk at least coll_ina_grid_chunk_bytes); 1: no pipeline",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_READONLY, &c->grid_chunks);

    c->grid_chunk_bytes = 131072;
    (void) mca_base_component_var_register(v, "grid_chunk_bytes",
        "The smallest chunk the grid's rings pipeline a call in (coll_ina_grid_chunks): "
        "a smaller one costs a ring step's fixed cost for too few bytes",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_READONLY, &c->grid_chunk_bytes);

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

    c->progress_thread = -1;
    (void) mca_base_component_var_register(v, "progress_thread",
        "Run an engine thread that keeps non-blocking offloaded calls moving while "
        "the application computes between post and wait (it sleeps while none is "
        "outstanding; never under MPI_THREAD_MULTIPLE, where nothing is offloaded). "
        "1: on, 0: off, -1 (default): on where the node has a core for every local "
        "rank and its thread, and one more for an agent; off where it has fewer, as "
        "the thread would then take the cores the ranks and the agent wait on",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->progress_thread);

    c->spin_us = 100;
    (void) mca_base_component_var_register(v, "spin_us",
        "Microseconds a rank (and the embedded agent) polls for the agent's reply "
        "before sleeping on the event fd, while calls are outstanding; less when "
        "recent waits were short, none when they were longer. 0: never poll, "
        "always sleep. Polls yield the CPU under mpi_yield_when_idle (or when "
        "Open MPI finds the node oversubscribed)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->spin_us);

    c->rndv_bytes = 0;
    (void) mca_base_component_var_register(v, "rndv_bytes",
        "Blocks and results of at least this many bytes travel by rendezvous: the "
        "receiver fetches them straight into their place (a Seg buffer at the "
        "agent, the receive buffer at a rank), by RDMA where UCX has a verbs "
        "device. The ranks ask for it for results; the embedded agent is started "
        "with it for blocks (a standalone ina-switchd: --rndv-bytes). 0: never, "
        "every message eager (the default; on TCP rendezvous is slower)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->rndv_bytes);

    c->tenant = NULL;
    (void) mca_base_component_var_register(v, "tenant",
        "The application this process belongs to, as the agent's scheduler sees "
        "it: jobs (communicators) of one tenant do not compete for the agent. "
        "Empty (the default): one tenant per mpirun (from the launcher's address "
        "and job family); otherwise any string, hashed (processes that give the "
        "same one are one tenant)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->tenant);

    c->host_cost_hint = true;
    (void) mca_base_component_var_register(v, "host_cost_hint",
        "Tell the agent what calls it denied cost on the hosts (protocol 16), so "
        "that its scheduler weighs measured costs instead of its model: after a "
        "denied blocking call, rank 0 of the agent's job sends the time the host "
        "algorithm took (never blocking; an agent of an older protocol is told nothing). "
        "Also governs the whole calls' times (protocol 17, coll_ina_call_time_min_bytes): "
        "off, neither is sent",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_READONLY, &c->host_cost_hint);

    c->call_time_min_bytes = 65536;
    (void) mca_base_component_var_register(v, "call_time_min_bytes",
        "With coll_ina_host_cost_hint, after every blocking call of at least this many "
        "bytes that reached an agent, offloaded or denied, rank 0 of the agent's job "
        "tells it what the whole call took (protocol 17), by which its harm guard "
        "judges whether sharing the agent slows the job down (never blocking; an agent "
        "of an older protocol is told nothing)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_READONLY, &c->call_time_min_bytes);

    return mca_coll_ina_pvars_register();
}

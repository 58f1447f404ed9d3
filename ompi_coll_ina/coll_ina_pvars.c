/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * coll/ina: the communicators' modules by communicator (for MPI_T), and
 * the MPI_T performance variables (the offload counters, the node layout).
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
                   -8: calls the grid's rings ran, -9: calls the previous
                   component ran instead (kind: the reason, or -1 for all),
                   -10: host costs told the agents (kind 0: sent, 1: dropped),
                   -11: call times told the agents (the same), else a fallback
                   reason */
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
    {"host_costs_sent", "HOST_COSTs this rank sent: what a blocking call an agent denied "
                        "cost on the hosts, told to that agent by rank 0 of its job "
                        "(coll_ina_host_cost_hint)", -10, 0},
    {"host_costs_dropped", "HOST_COSTs this rank could not send (the agent gone, the send "
                           "failed): dropped", -10, 1},
    {"call_times_sent", "CALL_TIMEs this rank sent: what a blocking call that reached the "
                        "agents took in all, told to each by rank 0 of its job "
                        "(coll_ina_host_cost_hint, coll_ina_call_time_min_bytes)", -11, 0},
    {"call_times_dropped", "CALL_TIMEs this rank could not send (the agent gone, the send "
                           "failed): dropped", -11, 1},
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
    {"grid_calls", "Calls the agents did not take that the hyper-square's rings ran on the "
                   "hosts (coll_ina_host)", -8, -1},
    {"host_previous_calls", "Calls of the grid's five collectives the agents did not take "
                            "that the previous component ran instead of the grid's rings "
                            "(all reasons)", -9, -1},
    {"host_previous_no_grid", "Not on the grid: no grid under this communicator (none "
                              "described, a host off it, every rank on one node, or "
                              "coll_ina_host previous)", -9, MCA_COLL_INA_HP_NO_GRID},
    {"host_previous_partial", "Not on the grid: the ranks cover part of a group of the grid, "
                              "or leave a group of their rectangle empty", -9,
     MCA_COLL_INA_HP_PARTIAL},
    {"host_previous_unequal", "Not on the grid: an allgather, reduce-scatter, bcast or reduce "
                              "on nodes holding unequal numbers of ranks", -9,
     MCA_COLL_INA_HP_UNEQUAL},
    {"host_previous_layout", "Not on the grid: a datatype whose elements are not one run from "
                             "its start, or an op that is not commutative", -9,
     MCA_COLL_INA_HP_LAYOUT},
    {"host_previous_small", "Not on the grid: below coll_ina_grid_min_bytes (coll_ina_host "
                            "auto)", -9, MCA_COLL_INA_HP_SMALL},
    {"host_previous_threads", "Not on the grid: a non-blocking call under "
                              "MPI_THREAD_MULTIPLE", -9, MCA_COLL_INA_HP_THREADS},
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
    } else if (-10 == def->reason) {
        *out = 0 == def->kind ? m->host_costs_sent : m->host_costs_dropped;
    } else if (-11 == def->reason) {
        *out = 0 == def->kind ? m->call_times_sent : m->call_times_dropped;
    } else if (-8 == def->reason) {
        *out = m->grid_calls;
    } else if (-9 == def->reason && def->kind >= 0) {
        *out = m->host_previous[def->kind];
    } else if (-9 == def->reason) {
        int k;
        for (k = 0; k < MCA_COLL_INA_HP_COUNT; ++k) {
            *out += m->host_previous[k];
        }
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
    INA_LAYOUT_AGENTS,
    INA_LAYOUT_GRID
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
    {"grid_nodes", "Nodes of the hyper-square this communicator covers, whose rings run "
                   "the calls the agents do not take (coll_ina_host; 0: no grid under it)",
     INA_LAYOUT_GRID},
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
    case INA_LAYOUT_GRID:
        *out = (unsigned long long) m->grid_cols * m->grid_rows;
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

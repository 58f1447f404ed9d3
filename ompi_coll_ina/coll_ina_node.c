/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The node stage of a communicator: its shared-memory group among the
 * members on this node (node/ina_node.h), opened without communication. On
 * one node it is the whole collective; on several, it also carries the
 * node's part to the agent in the communicator's stream jobs.
 *
 * Every local rank derives the segment's name from what all of them know
 * alike: the user, the job, the communicator's context id and the world
 * names of its members. The group is opened at the first call that runs
 * the node stage, which every member makes (collectives are called by all,
 * in one order), so module enable does no collective work; the first rank
 * to get there creates the segment, the others attach, and the name is
 * removed when the last one attached. The file's path is registered with
 * the runtime first, so a job killed before that leaves nothing behind.
 * Two groups per communicator (coll_ina.h): a small one for calls of one
 * small step, and the large one, each opened when a call first needs it.
 *
 * A context id is reused only after every member freed the communicator
 * that had it, and the name goes when the last member attached: two live
 * groups never share a name.
 */
#include "ompi_config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ompi/communicator/communicator.h"
#include "ompi/group/group.h"
#include "ompi/proc/proc.h"
#include "opal/util/proc.h"

#include "coll_ina.h"

/* FNV-1a over the world names of the members, so that communicators with
 * the same context id and different members (disjoint splits) differ. */
static uint64_t ina_members_hash(ompi_communicator_t *comm, int size)
{
    uint64_t h = 1469598103934665603ull;
    int r;

    for (r = 0; r < size; ++r) {
        opal_process_name_t name = ompi_group_get_proc_name(comm->c_local_group, r);
        const unsigned char *p = (const unsigned char *) &name;
        size_t i;
        for (i = 0; i < sizeof(name); ++i) {
            h = (h ^ p[i]) * 1099511628211ull;
        }
    }
    return h;
}

static const char *ina_node_open(mca_coll_ina_module_t *m, int tier)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    static char why[256];
    char name[128], path[160];
    ina_node_config_t cfg;
    ina_comm_gid_t gid;
    ina_status_t rc;
    size_t chunk;

    if (0 == tier) {
        chunk = MCA_COLL_INA_NODE_SMALL_CHUNK;
    } else {
        /* Sized for the most populated node, so that every node cuts a call
         * into the same steps (the agent's streams must match). */
        chunk = ina_node_chunk_bytes((uint32_t) m->nlocal_max, c->node_segment_bytes,
                                     c->node_chunk_bytes);
        if (0 == chunk) {
            snprintf(why, sizeof(why),
                     "coll_ina_node_segment_bytes %zu is too small for %d ranks",
                     c->node_segment_bytes, m->nlocal_max);
            return why;
        }
        if (m->node_uplink && chunk < (size_t) m->nstreams * m->job_params.block_bytes) {
            snprintf(why, sizeof(why),
                     "steps of %zu bytes (coll_ina_node_segment_bytes %zu, %d ranks) hold "
                     "less than a %u-byte block for each of %d streams",
                     chunk, c->node_segment_bytes, m->nlocal_max,
                     m->job_params.block_bytes, m->nstreams);
            return why;
        }
    }
    /* The node's index too: tests lay several "nodes" out on one machine. */
    gid = ina_compat_comm_gid(m->comm);
    snprintf(name, sizeof(name), "/ina-%u-%x-%llx.%llx-%016llx-%u%c", (unsigned) getuid(),
             (unsigned) OMPI_PROC_MY_NAME->jobid, (unsigned long long) gid.base,
             (unsigned long long) gid.sub,
             (unsigned long long) ina_members_hash(m->comm, m->size),
             m->node_of[m->rank], 0 == tier ? 's' : 'l');
    /* Before the file exists: if the job dies before every rank attached,
     * the runtime removes it. */
    if (0 == ina_node_shm_path(name, path, sizeof(path))) {
        ina_compat_register_cleanup(path);
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.name = name;
    cfg.nlocal = (uint32_t) m->nlocal;
    cfg.index = (uint32_t) m->local_index;
    cfg.size = (uint32_t) m->size;
    cfg.rank = (uint32_t) m->rank;
    cfg.node_of = m->node_of;
    if (m->node_uplink) {
        cfg.nstreams = (uint32_t) m->nstreams;
        cfg.leaders = m->leaders;
        cfg.job = m->job; /* NULL unless this rank leads a stream */
        cfg.block_bytes = m->job_params.block_bytes;
    }
    cfg.chunk_bytes = chunk;
    cfg.small_bytes = c->node_small_bytes;
    cfg.attach_timeout_ms = c->timeout_ms;
    cfg.numa = m->numa_of;
    rc = ina_node_group_open(&cfg, &m->node_group[tier], why, sizeof(why));
    if (INA_OK != rc) {
        m->node_group[tier] = NULL;
        return why;
    }
    INA_VERBOSE(10, "cid %d: node stage in %s (%d ranks, steps of %zu bytes, %zu bytes; %s)",
                m->cid, name, m->nlocal, chunk, ina_node_segment_bytes(cfg.nlocal, chunk),
                ina_node_group_placement(m->node_group[tier]));
    return NULL;
}

ina_node_group_t *mca_coll_ina_node_group(mca_coll_ina_module_t *m, size_t bytes,
                                          const char **why)
{
    /* Uplink: a small call is also one agent block. */
    int tier = bytes <= MCA_COLL_INA_NODE_SMALL_CHUNK &&
                       (!m->node_uplink || bytes <= m->job_params.block_bytes)
                   ? 0 : 1;

    if (MCA_COLL_INA_NODE_NONE == m->node_state[tier]) {
        const char *err = ina_node_open(m, tier);
        if (NULL != err) {
            /* Every local rank sees the same outcome (shm_segment.h). */
            INA_VERBOSE(1, "cid %d: no %s node segment, host algorithms for such calls: %s",
                        m->cid, 0 == tier ? "small" : "large", err);
            m->node_state[tier] = MCA_COLL_INA_NODE_UNAVAILABLE;
        } else {
            m->node_state[tier] = MCA_COLL_INA_NODE_READY;
        }
    }
    if (MCA_COLL_INA_NODE_READY != m->node_state[tier]) {
        *why = "no shared-memory segment for the node stage";
        return NULL;
    }
    return m->node_group[tier];
}

void mca_coll_ina_node_fini(mca_coll_ina_module_t *m)
{
    for (int t = 0; t < MCA_COLL_INA_NODE_TIERS; ++t) {
        if (NULL != m->node_group[t]) {
            ina_node_group_close(m->node_group[t]);
            m->node_group[t] = NULL;
        }
    }
}

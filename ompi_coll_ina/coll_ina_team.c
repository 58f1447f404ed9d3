/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * The communicator's team (team/ina_team.h): the engine's one object per
 * communicator, made from what every member knows alike without
 * communication. With the node stage, its shared-memory group among the
 * members on this node: on one node it is the whole collective; on
 * several, it also carries the node's part to the agent in the
 * communicator's stream jobs (the team joins this rank's,
 * coll_ina_module.c).
 *
 * Every local rank derives the segment's name from what all of them know
 * alike: the user, the job, the communicator's context id and the world
 * names of its members. The group is opened at the first call that runs
 * the node stage, which every member makes (collectives are called by all,
 * in one order), so module enable does no collective work; the first rank
 * to get there creates the segment, the others attach, and the name is
 * removed when the last one attached. The file's path is registered with
 * the runtime first, so a job killed before that leaves nothing behind.
 * Two groups per communicator: a small one for calls of one small step,
 * and the large one, each opened when a call first needs it.
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

static void ina_team_log(void *arg, int level, const char *line)
{
    (void) arg;
    opal_output_verbose(level, mca_coll_ina_component.output, "coll:ina: %s", line);
}

static void ina_segment_created(void *arg, const char *path)
{
    char copy[256];

    (void) arg;
    /* (PMIx takes a non-const path, and copies it.) */
    snprintf(copy, sizeof(copy), "%s", path);
    ina_compat_register_cleanup(copy);
}

int mca_coll_ina_team_make(mca_coll_ina_module_t *m)
{
    mca_coll_ina_component_t *c = &mca_coll_ina_component;
    ina_team_params_t p;
    ina_comm_gid_t gid;
    char name[128], label[32];

    if (NULL != m->team) {
        return OMPI_SUCCESS;
    }
    memset(&p, 0, sizeof(p));
    snprintf(label, sizeof(label), "cid %d", m->cid);
    p.mask = INA_TEAM_LOG;
    p.log_fn = ina_team_log;
    p.verbose = c->verbose;
    p.label = label;
    if (m->node_only || m->node_uplink) {
        /* The node's index too: tests lay several "nodes" out on one
         * machine. (The team adds a letter for each group's size.) */
        gid = ina_compat_comm_gid(m->comm);
        snprintf(name, sizeof(name), "/ina-%u-%x-%llx.%llx-%016llx-%u", (unsigned) getuid(),
                 (unsigned) OMPI_PROC_MY_NAME->jobid, (unsigned long long) gid.base,
                 (unsigned long long) gid.sub,
                 (unsigned long long) ina_members_hash(m->comm, m->size),
                 m->node_of[m->rank]);
        p.mask |= INA_TEAM_NODE;
        p.node.config.name = name;
        p.node.config.nlocal = (uint32_t) m->nlocal;
        p.node.config.index = (uint32_t) m->local_index;
        p.node.config.size = (uint32_t) m->size;
        p.node.config.rank = (uint32_t) m->rank;
        p.node.config.node_of = m->node_of;
        if (m->node_uplink) {
            p.node.config.nstreams = (uint32_t) m->nstreams;
            p.node.config.leaders = m->leaders;
        }
        p.node.config.small_bytes = c->node_small_bytes;
        p.node.config.attach_timeout_ms = c->timeout_ms;
        p.node.config.numa = m->numa_of;
        p.node.small_chunk_bytes = MCA_COLL_INA_NODE_SMALL_CHUNK;
        p.node.segment_bytes = c->node_segment_bytes;
        p.node.chunk_bytes = c->node_chunk_bytes;
        p.node.nlocal_max = (uint32_t) m->nlocal_max;
        p.node.created = ina_segment_created;
    }
    return INA_OK == ina_team_create(&p, &m->team) ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
}

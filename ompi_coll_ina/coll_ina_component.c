/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * coll/ina component: the component itself, its open and close. Its
 * parameters are in coll_ina_params.c, the connection to the agent in
 * coll_ina_agent.c, the MPI_T variables in coll_ina_pvars.c.
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


static int ina_open(void);
static int ina_close(void);

mca_coll_ina_component_t mca_coll_ina_component = {
    .super = {
        .collm_version = {
            INA_COLL_BASE_VERSION,
            .mca_component_name = "ina",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_open_component = ina_open,
            .mca_close_component = ina_close,
            .mca_register_component_params = mca_coll_ina_register_params,
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

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * `--mca coll ina` alone must run any MPI program, but ina implements only
 * a few collectives while Open MPI 4.1's selection (mca_coll_base_comm_select)
 * fails a communicator unless every blocking, non-blocking and persistent
 * slot and reduce_local are filled.
 *
 * The selection string kept Open MPI's own components out of the coll
 * framework, but they are still in the component repository (every .so of
 * the component path is indexed at startup) or, built into the library,
 * among the framework's static components. When the selection names ina,
 * this file loads `basic` (blocking collectives + reduce_local, any
 * communicator), `libnbc` (non-blocking and persistent collectives with
 * real progress, intercommunicators included) and `inter` (the blocking
 * rooted, gather and reduce collectives of intercommunicators, which Open
 * MPI's default selection gives to it: basic's scatter_inter segfaults in
 * 4.1.4), and `tuned` (the blocking algorithms Open MPI picks by default,
 * above basic's: a call ina falls back runs what it would run without ina;
 * basic's allreduce, a reduce then a bcast, took twice tuned's ring over
 * 100 Mbit/s links at 1 MiB) from the repository into the framework's
 * component list during
 * init_query, exactly as the framework would have had they been selected: register, open (libnbc registers its progress function there),
 * init_query. From then on they take part in every communicator's selection
 * at their low priority, below ina, so the base enables them, ina saves their
 * functions as its fallbacks, their modules are retained and released with
 * each communicator, and the framework closes and unloads them at
 * MPI_Finalize like any selected component.
 */
#include "ompi_config.h"

#include <string.h>

#include "ompi/mca/coll/coll.h"
#include "ompi/mca/coll/base/base.h"
#include "opal/mca/base/base.h"
#include "opal/mca/base/mca_base_component_repository.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "coll_ina.h"

/* The smallest stock set that fills every slot (Open MPI 4.1 requires all
 * blocking, non-blocking and persistent slots, and filling a non-blocking
 * slot with a blocking call deadlocks legal programs), and serves
 * intercommunicators, which ina declines, as the default selection would
 * (4.1.4's basic scatter_inter segfaults): `inter` (priority 40) above basic's (10) intercommunicator versions
 * of allgather(v), allreduce, bcast, gather(v), reduce and scatter(v).
 * Then `tuned` (30) for the intracommunicators' blocking collectives, where
 * the installation has it: without it basic's serve, as before. */
static const struct {
    const char *name;
    bool required;
} ina_hosted[] = {{"basic", true}, {"libnbc", true}, {"inter", true}, {"tuned", false}};

static bool ina_framework_has(const char *name)
{
    mca_base_component_list_item_t *cli;

    OPAL_LIST_FOREACH(cli, &ompi_coll_base_framework.framework_components,
                      mca_base_component_list_item_t) {
        if (0 == strcmp(cli->cli_component->mca_component_name, name)) {
            return true;
        }
    }
    return false;
}

/* Load (or, built into the library, take), register, open and
 * (optionally) init_query one component. */
static int ina_host_one(opal_list_t *repository, const char *name, bool call_init_query,
                        bool enable_progress_threads, bool enable_mpi_threads)
{
    mca_base_framework_t *fw = &ompi_coll_base_framework;
    mca_base_component_repository_item_t *ri, *found = NULL;
    mca_base_component_list_item_t *cli;
    const mca_base_component_t *comp = NULL, *const *s;
    const mca_coll_base_component_t *coll;
    const char *from = "the library";
    int rc;

    /* Built in (Open MPI 5.0 as Debian builds it has every coll component
     * in libmpi, none in the component path). */
    for (s = fw->framework_static_components; NULL != s && NULL != *s && NULL == comp; ++s) {
        if (0 == strcmp((*s)->mca_component_name, name)) {
            comp = *s;
        }
    }
    if (NULL != comp) {
        cli = OBJ_NEW(mca_base_component_list_item_t);
        if (NULL == cli) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        cli->cli_component = comp;
        opal_list_append(&fw->framework_components, &cli->super);
    } else {
        if (NULL != repository) {
            OPAL_LIST_FOREACH(ri, repository, mca_base_component_repository_item_t) {
                if (0 == strcmp(ri->ri_name, name)) {
                    found = ri;
                    break;
                }
            }
        }
        if (NULL == found) {
            return OMPI_ERR_NOT_FOUND;
        }
        /* Appends the component to fw->framework_components on success. */
        rc = mca_base_component_repository_open(fw, found);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
        cli = (mca_base_component_list_item_t *) opal_list_get_last(&fw->framework_components);
        comp = cli->cli_component;
        from = found->ri_path;
    }
    coll = (const mca_coll_base_component_t *) comp;

    if (NULL != comp->mca_register_component_params &&
        OPAL_SUCCESS != (rc = comp->mca_register_component_params())) {
        goto release;
    }
    if (NULL != comp->mca_open_component && OPAL_SUCCESS != (rc = comp->mca_open_component())) {
        goto release;
    }
    if (call_init_query && NULL != coll->collm_init_query &&
        OPAL_SUCCESS != (rc = coll->collm_init_query(enable_progress_threads,
                                                     enable_mpi_threads))) {
        goto close;
    }
    INA_VERBOSE(10, "hosting coll/%s (from %s) for the collectives ina leaves to it",
                name, from);
    return OMPI_SUCCESS;

close:
    if (NULL != comp->mca_close_component) {
        (void) comp->mca_close_component();
    }
release:
    opal_list_remove_item(&fw->framework_components, &cli->super);
    OBJ_RELEASE(cli);
    if (NULL != found) {
        mca_base_component_repository_release(comp);
    }
    return rc;
}

int mca_coll_ina_host_components(bool enable_progress_threads, bool enable_mpi_threads)
{
    mca_base_framework_t *fw = &ompi_coll_base_framework;
    mca_base_component_list_item_t *last;
    opal_list_t *repository = NULL;
    bool call_init_query;
    size_t i;
    int rc;

    /* mca_coll_base_find_available is iterating over the framework's list
     * (safe iteration: the successor is read before each init_query).
     * Components appended after the last item are not visited, so they get
     * their init_query here; if ina is not last, the loop reaches them. */
    last = (mca_base_component_list_item_t *) opal_list_get_last(&fw->framework_components);
    call_init_query = (last->cli_component == &mca_coll_ina_component.super.collm_version);

    for (i = 0; i < sizeof(ina_hosted) / sizeof(ina_hosted[0]); ++i) {
        const char *name = ina_hosted[i].name;

        if (ina_framework_has(name)) {
            continue; /* selected by the user: the framework handles it */
        }
        if (NULL == repository &&
            OPAL_SUCCESS != mca_base_component_repository_get_components(fw, &repository)) {
            repository = NULL; /* built-in components only */
        }
        rc = ina_host_one(repository, name, call_init_query, enable_progress_threads,
                          enable_mpi_threads);
        if (OMPI_SUCCESS != rc && !ina_hosted[i].required) {
            INA_VERBOSE(1, "coll/%s not hosted (%d): coll/basic's algorithms run what ina "
                        "leaves to it", name, rc);
            continue;
        }
        if (OMPI_SUCCESS != rc) {
            opal_show_help("help-coll-ina.txt", "host-component", true,
                           opal_process_info.nodename, name, rc);
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

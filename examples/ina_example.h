/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * What every example program answers before MPI_Init (so without mpirun
 * too): --help (and -h) prints its usage on stdout, --version its version;
 * both exit 0.
 */
#ifndef INA_EXAMPLE_H
#define INA_EXAMPLE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina_config.h"

static inline void ina_example_info(int argc, char **argv, const char *name, const char *usage)
{
    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--help") || 0 == strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            exit(0);
        }
        if (0 == strcmp(argv[i], "--version")) {
            printf("%s (ina) %s\n", name, PACKAGE_VERSION);
            exit(0);
        }
    }
}

#endif

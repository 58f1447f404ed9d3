/* Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause */
/*
 * Debian's libopenmpi-dev installs Open MPI's internal headers but not this
 * one, which ompi/op/op.h includes (and through it
 * ompi/mca/coll/base/coll_base_util.h, whose non-blocking request ina's
 * requests extend). op.h uses one macro of it, converting a C int to a
 * Fortran INTEGER; Debian's Open MPI has 4-byte Fortran INTEGERs, the size
 * of a C int, where Open MPI's own header defines both conversions as the
 * identity. Found only after Open MPI's include directories
 * (-idirafter): an installation that ships the header uses its own.
 */
#ifndef INA_OMPI_FINT_2_INT_H
#define INA_OMPI_FINT_2_INT_H

#if OMPI_SIZEOF_FORTRAN_INTEGER != SIZEOF_INT
#error "this Open MPI's Fortran INTEGER is not a C int: it must ship fint_2_int.h"
#endif

#define OMPI_INT_2_FINT(a) (a)
#define OMPI_FINT_2_INT(a) (a)

#endif

/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * MPI predefined datatype / op -> wire ina_proto_dtype_t / ina_proto_op_t,
 * and the contiguity test of the data-moving collectives.
 *
 * Reductions: only predefined types map, each onto the wire type whose C
 * representation is the same (the agent's kernels reduce that); integer
 * types map by size and signedness, so the table follows the ABI of the
 * compiler that built Open MPI and us (configure checks: same mpicc). Every
 * entry is checked against the datatype's size and extent at init. Which
 * ops a type takes is MPI's rule, which ina_proto_op_valid mirrors, except
 * MPI_BYTE (bitwise ops only, although it travels as UINT8). MPI_CHAR and
 * MPI_WCHAR are not reduction types in MPI: they are left to the host
 * collective, which reports the error.
 */
#include "ompi_config.h"

#include <limits.h>
#include <stddef.h>

#include "mpi.h"
#include "ompi/datatype/ompi_datatype.h"

#include "coll_ina.h"

/* Wire type of a C integer type of `bytes` bytes. */
#define INA_WIRE_INT(bytes, is_signed)                                          \
    ((bytes) == 1 ? ((is_signed) ? INA_DT_INT8 : INA_DT_UINT8) :                \
     (bytes) == 2 ? ((is_signed) ? INA_DT_INT16 : INA_DT_UINT16) :              \
     (bytes) == 4 ? ((is_signed) ? INA_DT_INT32 : INA_DT_UINT32) :              \
     (bytes) == 8 ? ((is_signed) ? INA_DT_INT64 : INA_DT_UINT64) : -1)

#define INA_WIRE_CTYPE(type, is_signed) INA_WIRE_INT(sizeof(type), (is_signed))

/* Ops a map entry restricts itself to (bit i = ina_proto_op_t i); 0: all
 * that ina_proto_op_valid accepts for the wire type. */
#define INA_OPS_BITWISE ((1u << INA_OP_BAND) | (1u << INA_OP_BOR) | (1u << INA_OP_BXOR))

typedef struct ina_dtype_map {
    MPI_Datatype mpi;
    int wire;          /* ina_proto_dtype_t, -1: not offloadable */
    unsigned ops_only; /* 0 or a mask of the allowed ops */
} ina_dtype_map_t;

/* MPI handles are addresses of Open MPI's predefined objects: the table is
 * filled at init_query (in MPI_Init, single-threaded), then only read. */
static ina_dtype_map_t ina_dtypes[64];
static int ina_ndtypes = 0;

static void ina_map(MPI_Datatype mpi, int wire, unsigned ops_only)
{
    ompi_datatype_t *dt = (ompi_datatype_t *) mpi;
    size_t size = 0;
    ptrdiff_t extent = 0;

    if (ina_ndtypes >= (int) (sizeof(ina_dtypes) / sizeof(ina_dtypes[0]))) {
        return;
    }
    /* The wire element must be the MPI element byte for byte: same size
     * (pair types: the C struct, padding included, is the extent). */
    if (wire >= 0) {
        ompi_datatype_type_size(dt, &size);
        ompi_datatype_type_extent(dt, &extent);
        if ((size_t) extent != ina_proto_dtype_size((unsigned) wire) ||
            size > (size_t) extent) {
            INA_VERBOSE(20, "datatype %s: extent %ld does not match the wire type: not offloaded",
                        dt->name, (long) extent);
            wire = -1;
        }
    }
    ina_dtypes[ina_ndtypes].mpi = mpi;
    ina_dtypes[ina_ndtypes].wire = wire;
    ina_dtypes[ina_ndtypes].ops_only = ops_only;
    ++ina_ndtypes;
}

void mca_coll_ina_dtype_init(void)
{
    ina_ndtypes = 0;
    /* C integers (and the multi-language integers MPI allows in reductions). */
    ina_map(MPI_SIGNED_CHAR, INA_DT_INT8, 0);
    ina_map(MPI_UNSIGNED_CHAR, INA_DT_UINT8, 0);
    ina_map(MPI_SHORT, INA_WIRE_CTYPE(short, 1), 0);
    ina_map(MPI_UNSIGNED_SHORT, INA_WIRE_CTYPE(unsigned short, 0), 0);
    ina_map(MPI_INT, INA_WIRE_CTYPE(int, 1), 0);
    ina_map(MPI_UNSIGNED, INA_WIRE_CTYPE(unsigned, 0), 0);
    ina_map(MPI_LONG, INA_WIRE_CTYPE(long, 1), 0);
    ina_map(MPI_UNSIGNED_LONG, INA_WIRE_CTYPE(unsigned long, 0), 0);
    ina_map(MPI_LONG_LONG_INT, INA_WIRE_CTYPE(long long, 1), 0);
    ina_map(MPI_LONG_LONG, INA_WIRE_CTYPE(long long, 1), 0);
    ina_map(MPI_UNSIGNED_LONG_LONG, INA_WIRE_CTYPE(unsigned long long, 0), 0);
    ina_map(MPI_INT8_T, INA_DT_INT8, 0);
    ina_map(MPI_UINT8_T, INA_DT_UINT8, 0);
    ina_map(MPI_INT16_T, INA_DT_INT16, 0);
    ina_map(MPI_UINT16_T, INA_DT_UINT16, 0);
    ina_map(MPI_INT32_T, INA_DT_INT32, 0);
    ina_map(MPI_UINT32_T, INA_DT_UINT32, 0);
    ina_map(MPI_INT64_T, INA_DT_INT64, 0);
    ina_map(MPI_UINT64_T, INA_DT_UINT64, 0);
    ina_map(MPI_AINT, INA_WIRE_CTYPE(MPI_Aint, 1), 0);
    ina_map(MPI_OFFSET, INA_WIRE_CTYPE(MPI_Offset, 1), 0);
    ina_map(MPI_COUNT, INA_WIRE_CTYPE(MPI_Count, 1), 0);
    /* MPI_BYTE: bitwise ops only (MPI's "byte" class). */
    ina_map(MPI_BYTE, INA_DT_UINT8, INA_OPS_BITWISE);
    /* Floating point. */
    ina_map(MPI_FLOAT, INA_DT_FLOAT, 0);
    ina_map(MPI_DOUBLE, INA_DT_DOUBLE, 0);
    ina_map(MPI_LONG_DOUBLE, INA_DT_LONG_DOUBLE, 0);
    /* Logical: C _Bool and C++ bool (one byte, 0 or 1). */
    ina_map(MPI_C_BOOL, INA_DT_BOOL, 0);
    ina_map(MPI_CXX_BOOL, INA_DT_BOOL, 0);
    /* Complex (MPI_C_COMPLEX is the same handle as MPI_C_FLOAT_COMPLEX). */
    ina_map(MPI_C_FLOAT_COMPLEX, INA_DT_FLOAT_COMPLEX, 0);
    ina_map(MPI_C_DOUBLE_COMPLEX, INA_DT_DOUBLE_COMPLEX, 0);
    ina_map(MPI_C_LONG_DOUBLE_COMPLEX, INA_DT_LONG_DOUBLE_COMPLEX, 0);
    ina_map(MPI_CXX_FLOAT_COMPLEX, INA_DT_FLOAT_COMPLEX, 0);
    ina_map(MPI_CXX_DOUBLE_COMPLEX, INA_DT_DOUBLE_COMPLEX, 0);
    ina_map(MPI_CXX_LONG_DOUBLE_COMPLEX, INA_DT_LONG_DOUBLE_COMPLEX, 0);
    /* MINLOC/MAXLOC pairs, laid out as MPI's C structs. */
    ina_map(MPI_FLOAT_INT, INA_DT_FLOAT_INT, 0);
    ina_map(MPI_DOUBLE_INT, INA_DT_DOUBLE_INT, 0);
    ina_map(MPI_LONG_INT, INA_DT_LONG_INT, 0);
    ina_map(MPI_2INT, INA_DT_2INT, 0);
    ina_map(MPI_SHORT_INT, INA_DT_SHORT_INT, 0);
    ina_map(MPI_LONG_DOUBLE_INT, INA_DT_LONG_DOUBLE_INT, 0);
}

static int ina_op_to_wire(struct ompi_op_t *op)
{
    MPI_Op h = (MPI_Op) op;

    if (MPI_SUM == h) return INA_OP_SUM;
    if (MPI_PROD == h) return INA_OP_PROD;
    if (MPI_MIN == h) return INA_OP_MIN;
    if (MPI_MAX == h) return INA_OP_MAX;
    if (MPI_LAND == h) return INA_OP_LAND;
    if (MPI_LOR == h) return INA_OP_LOR;
    if (MPI_LXOR == h) return INA_OP_LXOR;
    if (MPI_BAND == h) return INA_OP_BAND;
    if (MPI_BOR == h) return INA_OP_BOR;
    if (MPI_BXOR == h) return INA_OP_BXOR;
    if (MPI_MINLOC == h) return INA_OP_MINLOC;
    if (MPI_MAXLOC == h) return INA_OP_MAXLOC;
    /* MPI_REPLACE / MPI_NO_OP (one-sided only) and user-defined ops, which
     * may be non-commutative or compute anything: the host reduces them. */
    return -1;
}

const char *mca_coll_ina_reduction_to_wire(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                           unsigned *wire_dtype, unsigned *wire_op)
{
    const ina_dtype_map_t *map = NULL;
    int i, wop;

    for (i = 0; i < ina_ndtypes; ++i) {
        if (ina_dtypes[i].mpi == (MPI_Datatype) dtype) {
            map = &ina_dtypes[i];
            break;
        }
    }
    if (NULL == map || map->wire < 0) {
        return ompi_datatype_is_predefined(dtype) ? "datatype is not a reduction type ina maps"
                                                  : "derived datatype";
    }
    wop = ina_op_to_wire(op);
    if (wop < 0) {
        return "user-defined or non-reduction op";
    }
    if ((0 != map->ops_only && 0 == (map->ops_only & (1u << wop))) ||
        !ina_proto_op_valid((unsigned) wop, (unsigned) map->wire)) {
        return "op not defined on this datatype";
    }
    *wire_dtype = (unsigned) map->wire;
    *wire_op = (unsigned) wop;
    return NULL;
}

const char *mca_coll_ina_contiguous_bytes(struct ompi_datatype_t *dtype, size_t count,
                                          size_t *bytes, ptrdiff_t *offset)
{
    ptrdiff_t true_lb = 0, true_extent = 0;
    size_t size = 0;

    ompi_datatype_type_size(dtype, &size);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    /* For count > 1 Open MPI's test only asks whether one element is
     * contiguous and has no gap to the next; 2 stands for any larger count
     * (the parameter is a 32-bit int). */
    if (0 != count &&
        !ompi_datatype_is_contiguous_memory_layout(dtype, count > 1 ? 2 : 1)) {
        return "non-contiguous datatype";
    }
    if (0 != count && (size_t) true_extent != size) {
        return "datatype with holes";
    }
    *bytes = count * size;
    *offset = true_lb;
    return NULL;
}

/*
 * MPI predefined datatype / op -> wire ina_proto_dtype_t / ina_proto_op_t.
 *
 * Only predefined C integer and floating types map: they are contiguous by
 * definition, and their C representation is what the agent's kernels
 * reduce. Integer types map by size and signedness, so the table follows
 * the ABI of the compiler that built Open MPI and us (checked by configure:
 * same mpicc).
 */
#include "ompi_config.h"

#include <limits.h>
#include <stddef.h>

#include "mpi.h"

#include "coll_ina.h"

/* Wire type of a C integer type of `bytes` bytes. */
#define INA_WIRE_INT(bytes, is_signed)                                          \
    ((bytes) == 1 ? ((is_signed) ? INA_DT_INT8 : INA_DT_UINT8) :                \
     (bytes) == 2 ? ((is_signed) ? INA_DT_INT16 : INA_DT_UINT16) :              \
     (bytes) == 4 ? ((is_signed) ? INA_DT_INT32 : INA_DT_UINT32) :              \
     (bytes) == 8 ? ((is_signed) ? INA_DT_INT64 : INA_DT_UINT64) : -1)

#define INA_WIRE_CTYPE(type, is_signed) INA_WIRE_INT(sizeof(type), (is_signed))

/* x86-64 long double: 80-bit x87 in 16 bytes, what INA_DT_LONG_DOUBLE means. */
#define INA_WIRE_LONG_DOUBLE (16 == sizeof(long double) ? INA_DT_LONG_DOUBLE : -1)

typedef struct ina_dtype_map {
    MPI_Datatype mpi;
    int wire;
} ina_dtype_map_t;

/* MPI handles are addresses of Open MPI's predefined objects: the table is
 * filled at component open (single-threaded), then only read. */
static ina_dtype_map_t ina_dtypes[32];
static int ina_ndtypes = 0;

void mca_coll_ina_dtype_init(void)
{
    int n = 0;
#define INA_MAP(handle_, wire_) \
    do { ina_dtypes[n].mpi = (handle_); ina_dtypes[n].wire = (wire_); ++n; } while (0)
    INA_MAP(MPI_CHAR, INA_WIRE_INT(1, CHAR_MIN < 0));
    INA_MAP(MPI_SIGNED_CHAR, INA_DT_INT8);
    INA_MAP(MPI_UNSIGNED_CHAR, INA_DT_UINT8);
    INA_MAP(MPI_SHORT, INA_WIRE_CTYPE(short, 1));
    INA_MAP(MPI_UNSIGNED_SHORT, INA_WIRE_CTYPE(unsigned short, 0));
    INA_MAP(MPI_INT, INA_WIRE_CTYPE(int, 1));
    INA_MAP(MPI_UNSIGNED, INA_WIRE_CTYPE(unsigned, 0));
    INA_MAP(MPI_LONG, INA_WIRE_CTYPE(long, 1));
    INA_MAP(MPI_UNSIGNED_LONG, INA_WIRE_CTYPE(unsigned long, 0));
    INA_MAP(MPI_LONG_LONG_INT, INA_WIRE_CTYPE(long long, 1));
    INA_MAP(MPI_LONG_LONG, INA_WIRE_CTYPE(long long, 1));
    INA_MAP(MPI_UNSIGNED_LONG_LONG, INA_WIRE_CTYPE(unsigned long long, 0));
    INA_MAP(MPI_INT8_T, INA_DT_INT8);
    INA_MAP(MPI_UINT8_T, INA_DT_UINT8);
    INA_MAP(MPI_INT16_T, INA_DT_INT16);
    INA_MAP(MPI_UINT16_T, INA_DT_UINT16);
    INA_MAP(MPI_INT32_T, INA_DT_INT32);
    INA_MAP(MPI_UINT32_T, INA_DT_UINT32);
    INA_MAP(MPI_INT64_T, INA_DT_INT64);
    INA_MAP(MPI_UINT64_T, INA_DT_UINT64);
    INA_MAP(MPI_AINT, INA_WIRE_CTYPE(MPI_Aint, 1));
    INA_MAP(MPI_OFFSET, INA_WIRE_CTYPE(MPI_Offset, 1));
    INA_MAP(MPI_COUNT, INA_WIRE_CTYPE(MPI_Count, 1));
    INA_MAP(MPI_FLOAT, 4 == sizeof(float) ? INA_DT_FLOAT : -1);
    INA_MAP(MPI_DOUBLE, 8 == sizeof(double) ? INA_DT_DOUBLE : -1);
    INA_MAP(MPI_LONG_DOUBLE, INA_WIRE_LONG_DOUBLE);
#undef INA_MAP
    ina_ndtypes = n;
}

int mca_coll_ina_dtype_to_wire(struct ompi_datatype_t *dtype)
{
    int i;

    for (i = 0; i < ina_ndtypes; ++i) {
        if (ina_dtypes[i].mpi == (MPI_Datatype) dtype) {
            return ina_dtypes[i].wire;
        }
    }
    return -1;
}

int mca_coll_ina_op_to_wire(struct ompi_op_t *op)
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
    /* MINLOC/MAXLOC (pair types), REPLACE/NO_OP and user ops stay on the host. */
    return -1;
}

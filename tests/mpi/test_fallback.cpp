// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Calls ina must not offload fall back per call to Open MPI's own algorithms,
// give correct values, and are counted as fallbacks: a user-defined op on a
// predefined type, on a contiguous derived type and on a non-contiguous
// (vector) type, and a non-commutative op. Offloadable calls in between
// (pairs with MINLOC/MAXLOC, a double sum) still go through the agent.
#include "ina_mpi_test.h"

using namespace inatest;

namespace {

// A user-defined sum of ints that understands the three datatypes it is used
// with: MPI_INT, 4 contiguous ints, and a vector of kStride-strided ints.
constexpr int kStride = 2;
int g_vector_len = 0;
MPI_Datatype g_quad = MPI_DATATYPE_NULL, g_strided = MPI_DATATYPE_NULL;

void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    auto *a = static_cast<int *>(in);
    auto *b = static_cast<int *>(inout);
    if (*dt == g_strided) {
        MPI_Aint lb, extent;
        MPI_Type_get_extent(*dt, &lb, &extent);
        const int per = static_cast<int>(extent / sizeof(int));
        for (int e = 0; e < *len; ++e) {
            for (int k = 0; k < g_vector_len; ++k) b[e * per + k * kStride] += a[e * per + k * kStride];
        }
        return;
    }
    const int ints = (*dt == g_quad ? 4 : 1) * *len;
    for (int i = 0; i < ints; ++i) {
        b[i] += a[i];
    }
}

// Decimal concatenation (a, b) -> "ab": associative, not commutative, so MPI
// must combine the ranks' values in rank order.
void noncomm(void *in, void *inout, int *len, MPI_Datatype *)
{
    auto *a = static_cast<long *>(in);
    auto *b = static_cast<long *>(inout);
    for (int i = 0; i < *len; ++i) {
        long shift = 1;
        for (long t = b[i]; t > 0; t /= 10) shift *= 10;
        b[i] = a[i] * shift + b[i];
    }
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Counters counters;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    long checks = 0;
    const int n = 1000;

    // 1. user-defined commutative op on MPI_INT.
    MPI_Op usum;
    MPI_Op_create(user_sum, 1, &usum);
    std::vector<int> in(n), out(n);
    for (int i = 0; i < n; ++i) in[i] = rank * 1000 + i;
    MPI_Allreduce(in.data(), out.data(), n, MPI_INT, usum, comm);
    for (int i = 0; i < n; ++i) {
        ++checks;
        INA_CHECK(out[i] == 1000 * size * (size - 1) / 2 + size * i, "user op [%d]=%d", i, out[i]);
    }

    // 2. MINLOC on MPI_2INT (offloaded: pairs are reduced by the agent).
    struct { int v, idx; } p_in[4], p_out[4];
    for (int i = 0; i < 4; ++i) { p_in[i].v = (rank * 7 + i * 3) % size; p_in[i].idx = rank; }
    MPI_Allreduce(p_in, p_out, 4, MPI_2INT, MPI_MINLOC, comm);
    for (int i = 0; i < 4; ++i) {
        int best = -1, bidx = -1;
        for (int r = 0; r < size; ++r) {
            int v = (r * 7 + i * 3) % size;
            if (best < 0 || v < best) { best = v; bidx = r; }
        }
        ++checks;
        INA_CHECK(p_out[i].v == best && p_out[i].idx == bidx, "minloc [%d] = (%d,%d) want (%d,%d)",
                  i, p_out[i].v, p_out[i].idx, best, bidx);
    }

    // 3. MAXLOC on MPI_DOUBLE_INT (offloaded).
    struct { double v; int idx; } m_in[3], m_out[3];
    for (int i = 0; i < 3; ++i) { m_in[i].v = static_cast<double>((rank + i) % 3); m_in[i].idx = rank; }
    MPI_Allreduce(m_in, m_out, 3, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
    for (int i = 0; i < 3; ++i) {
        double best = -1;
        int bidx = -1;
        for (int r = 0; r < size; ++r) {
            double v = static_cast<double>((r + i) % 3);
            if (v > best) { best = v; bidx = r; }
        }
        ++checks;
        INA_CHECK(m_out[i].v == best && m_out[i].idx == bidx, "maxloc [%d] = (%g,%d) want (%g,%d)",
                  i, m_out[i].v, m_out[i].idx, best, bidx);
    }

    // 4. user op on a contiguous derived type, and on a strided vector type
    //    (every other int of a 2n buffer), both falling back.
    MPI_Datatype quad, strided;
    MPI_Type_contiguous(4, MPI_INT, &quad);
    MPI_Type_commit(&quad);
    MPI_Type_vector(n, 1, kStride, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    g_quad = quad;
    g_strided = strided;
    g_vector_len = n;
    std::vector<int> q_in(4 * 50), q_out(4 * 50);
    for (int i = 0; i < 200; ++i) q_in[i] = rank + i;
    MPI_Allreduce(q_in.data(), q_out.data(), 50, quad, usum, comm);
    for (int i = 0; i < 200; ++i) {
        ++checks;
        INA_CHECK(q_out[i] == size * (size - 1) / 2 + size * i, "contiguous derived [%d]=%d", i, q_out[i]);
    }
    std::vector<int> s_in(kStride * n), s_out(kStride * n, -5);
    for (int i = 0; i < kStride * n; ++i) s_in[i] = rank * 3 + i;
    MPI_Allreduce(s_in.data(), s_out.data(), 1, strided, usum, comm);
    for (int i = 0; i < kStride * (n - 1) + 1; ++i) {
        ++checks;
        int want = i % kStride ? -5 : 3 * size * (size - 1) / 2 + size * i;
        INA_CHECK(s_out[i] == want, "vector [%d]=%d want %d", i, s_out[i], want);
    }
    MPI_Type_free(&quad);
    MPI_Type_free(&strided);

    // 4. non-commutative user op: rank order must be kept.
    MPI_Op nc;
    MPI_Op_create(noncomm, 0, &nc);
    long l_in = rank % 9 + 1, l_out = 0;
    MPI_Allreduce(&l_in, &l_out, 1, MPI_LONG, nc, comm);
    long want = 0;
    for (int r = 0; r < size; ++r) want = want * 10 + (r % 9 + 1);
    ++checks;
    INA_CHECK(l_out == want, "non-commutative op gave %ld want %ld", l_out, want);

    // 5. an offloadable call in the same communicator still offloads.
    std::vector<double> d_in(3000), d_out(3000), d_ref(3000);
    fill_input(d_in, Op::Sum, rank, 77);
    reference(d_ref, Op::Sum, comm, 77);
    MPI_Allreduce(d_in.data(), d_out.data(), 3000, MPI_DOUBLE, MPI_SUM, comm);
    size_t bad = 0;
    for (int i = 0; i < 3000; ++i) bad += !same_bits(d_out[i], d_ref[i]);
    ++checks;
    INA_CHECK(bad == 0, "double sum after fallbacks: %zu wrong", bad);

    long long off = counters.offloaded(comm), fb = counters.fallbacks(comm);
    ++checks;
    INA_CHECK(off == 3, "offloaded counter %lld, want 3 (MINLOC, MAXLOC, double sum)", off);
    ++checks;
    INA_CHECK(fb == 4, "fallback counter %lld, want 4 (user op x3, non-commutative)", fb);

    MPI_Op_free(&usum);
    MPI_Op_free(&nc);
    MPI_Comm_free(&comm);
    counters.close();
    int code = finish("test_fallback", checks);
    MPI_Finalize();
    return code;
}

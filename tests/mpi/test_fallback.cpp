// Calls ina must not offload fall back per call to Open MPI's own algorithms,
// give correct values, and are counted as fallbacks: a user-defined op, a
// pair type with MINLOC or MAXLOC, a non-commutative op.
// Offloadable calls in between still go through the agent.
#include "ina_mpi_test.h"

using namespace inatest;

namespace {

void user_sum(void *in, void *inout, int *len, MPI_Datatype *)
{
    auto *a = static_cast<int *>(in);
    auto *b = static_cast<int *>(inout);
    for (int i = 0; i < *len; ++i) {
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

    // 2. MINLOC on MPI_2INT (pair types are not offloaded yet).
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

    // 3. MAXLOC on MPI_DOUBLE_INT.
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
    reference(d_ref, Op::Sum, size, 77);
    MPI_Allreduce(d_in.data(), d_out.data(), 3000, MPI_DOUBLE, MPI_SUM, comm);
    size_t bad = 0;
    for (int i = 0; i < 3000; ++i) bad += !same_bits(d_out[i], d_ref[i]);
    ++checks;
    INA_CHECK(bad == 0, "double sum after fallbacks: %zu wrong", bad);

    long long off = counters.offloaded(comm), fb = counters.fallbacks(comm);
    ++checks;
    INA_CHECK(off == 1, "offloaded counter %lld, want 1", off);
    ++checks;
    INA_CHECK(fb == 4, "fallback counter %lld, want 4", fb);

    MPI_Op_free(&usum);
    MPI_Op_free(&nc);
    MPI_Comm_free(&comm);
    counters.close();
    int code = finish("test_fallback", checks);
    MPI_Finalize();
    return code;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The node stage (node/ina_node.h) over threads: each thread is one local
// rank with its own mapping of the group's segment, as separate processes
// would have. Every collective, small steps (each rank folds all) and large
// ones (reduce-scatter among the ranks, then copy out), many steps per call,
// several calls in flight, in place; results against references computed
// here by plain loops in local rank order (floats bit for bit). Also the
// segment's life: its name is gone once every rank attached, mismatched
// parameters are an error, and memory that cannot be reserved is the same
// "no memory" answer on every rank; the segment's parts bound to the NUMA
// nodes of the ranks that use them.
#include "check_main.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <sched.h>
#include <sys/mman.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "ina_node.h"
#include "ina_proto.h"
#include "node_group.h" // the segment's layout: where each part is placed

namespace {

std::atomic<int> name_seq{0};

std::string fresh_name()
{
    return "/ina-unit-" + std::to_string(getpid()) + "-" + std::to_string(name_seq++);
}

bool shm_exists(const std::string &name)
{
    return access(("/dev/shm" + name).c_str(), F_OK) == 0;
}

// Run body(rank, group) on L threads sharing one group; the groups are
// closed after every thread finished. numa: the placement (ina_node.h).
void with_group(uint32_t L, size_t chunk, size_t small,
                const std::function<void(uint32_t, ina_node_group_t *)> &body,
                const int32_t *numa = nullptr)
{
    const std::string name = fresh_name();
    std::vector<ina_node_group_t *> groups(L, nullptr);
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (uint32_t r = 0; r < L; ++r) {
        threads.emplace_back([&, r] {
            ina_node_config_t cfg{};
            cfg.name = name.c_str();
            cfg.nlocal = L;
            cfg.index = r;
            cfg.chunk_bytes = chunk;
            cfg.small_bytes = small;
            cfg.attach_timeout_ms = 10000;
            cfg.numa = numa;
            char err[256] = "";
            if (ina_node_group_open(&cfg, &groups[r], err, sizeof(err)) != INA_OK) {
                std::fprintf(stderr, "rank %u: %s\n", r, err);
                ++failures;
                return;
            }
            body(r, groups[r]);
        });
    }
    for (auto &t : threads) {
        t.join();
    }
    ck_assert_int_eq(failures.load(), 0);
    ck_assert_msg(!shm_exists(name), "segment name still there after every rank attached");
    for (auto *g : groups) {
        ina_node_group_close(g);
    }
}

void run(ina_node_group_t *g, const ina_coll_desc_t &d)
{
    ina_node_op_t *op = nullptr;
    ck_assert_int_eq(ina_node_post(g, &d, &op), INA_OK);
    while (!ina_node_test(op, nullptr)) {
        sched_yield();
    }
    ina_node_op_free(op);
}

// Inputs with mixed magnitudes, so that a different summation order would
// give different bits.
float in_f(uint32_t r, size_t i)
{
    uint32_t x = static_cast<uint32_t>(i * 2654435761u) ^ (r * 40503u + 17u);
    x ^= x >> 13;
    return std::ldexp(static_cast<float>(x % 1000) + 0.1f * r, static_cast<int>(x % 40) - 20);
}
int64_t in_i(uint32_t r, size_t i)
{
    return static_cast<int64_t>(0x7ffffffffffff000ll) + static_cast<int64_t>(r * 977 + i);
}

// Left fold in rank order, the documented order.
float ref_sum_f(uint32_t L, size_t i)
{
    float acc = in_f(0, i);
    for (uint32_t r = 1; r < L; ++r) {
        acc = acc + in_f(r, i);
    }
    return acc;
}
int64_t ref_sum_i(uint32_t L, size_t i)
{
    uint64_t acc = 0;
    for (uint32_t r = 0; r < L; ++r) {
        acc += static_cast<uint64_t>(in_i(r, i));
    }
    return static_cast<int64_t>(acc);
}

bool same(float a, float b)
{
    return std::memcmp(&a, &b, sizeof a) == 0;
}

// Allreduce float sum: counts below, at and above one step, small and large.
void allreduce_case(uint32_t L, size_t chunk, size_t small, size_t count, bool in_place)
{
    with_group(L, chunk, small, [&](uint32_t r, ina_node_group_t *g) {
        std::vector<float> in(count), out(count, -1.0f);
        for (size_t i = 0; i < count; ++i) {
            in[i] = in_f(r, i);
        }
        ina_coll_desc_t d{};
        d.coll = INA_COLL_ALLREDUCE;
        d.op = INA_OP_SUM;
        d.dtype = INA_DT_FLOAT;
        d.sbuf = in_place ? out.data() : in.data();
        d.rbuf = out.data();
        d.count = count;
        if (in_place) {
            out = in;
        }
        run(g, d);
        for (size_t i = 0; i < count; ++i) {
            ck_assert_msg(same(out[i], ref_sum_f(L, i)), "L=%u count=%zu rank %u [%zu]: %a vs %a",
                          L, count, r, i, out[i], ref_sum_f(L, i));
        }
    });
}

START_TEST(allreduce_float_bit_exact)
{
    for (uint32_t L : {1u, 2u, 3u, 4u, 8u}) {
        allreduce_case(L, 256, 64, 1, false);     // one element: small step
        allreduce_case(L, 256, 64, 13, false);    // small, one step
        allreduce_case(L, 256, 64, 64, false);    // exactly one large step
        allreduce_case(L, 256, 64, 1001, false);  // many large steps, ragged end
        allreduce_case(L, 4096, 4096, 3000, true); // small steps, several, in place
    }
}
END_TEST

START_TEST(allreduce_int_wraps_and_many_in_flight)
{
    const uint32_t L = 4;
    const size_t count = 700, calls = 5;
    with_group(L, 512, 128, [&](uint32_t r, ina_node_group_t *g) {
        std::vector<std::vector<int64_t>> in(calls, std::vector<int64_t>(count)),
            out(calls, std::vector<int64_t>(count, 0));
        std::vector<ina_node_op_t *> ops(calls);
        for (size_t c = 0; c < calls; ++c) {
            for (size_t i = 0; i < count; ++i) {
                in[c][i] = in_i(r, i + c);
            }
            ina_coll_desc_t d{};
            d.coll = INA_COLL_ALLREDUCE;
            d.op = INA_OP_SUM;
            d.dtype = INA_DT_INT64;
            d.sbuf = in[c].data();
            d.rbuf = out[c].data();
            d.count = count - c * 100; // different sizes, one order
            ck_assert_int_eq(ina_node_post(g, &d, &ops[c]), INA_OK);
        }
        // Wait in reverse order: the group runs them in posted order anyway.
        for (size_t c = calls; c-- > 0;) {
            while (!ina_node_test(ops[c], nullptr)) {
                sched_yield();
            }
            ina_node_op_free(ops[c]);
        }
        for (size_t c = 0; c < calls; ++c) {
            for (size_t i = 0; i < count - c * 100; ++i) {
                ck_assert(out[c][i] == ref_sum_i(L, i + c));
            }
        }
    });
}
END_TEST

// A persistent request's starts: one call posted, then posted again
// (ina_node_repost) with new inputs in the same buffers, each result exact
// on every rank, a plain call between two starts; a call still in flight
// is refused.
START_TEST(posted_again)
{
    const uint32_t L = 3;
    const size_t count = 1000; // several steps of 512 B
    with_group(L, 512, 128, [&](uint32_t r, ina_node_group_t *g) {
        std::vector<int64_t> in(count), out(count, 0), other(10), other_out(10);
        ina_coll_desc_t d{};
        d.coll = INA_COLL_ALLREDUCE;
        d.op = INA_OP_SUM;
        d.dtype = INA_DT_INT64;
        d.sbuf = in.data();
        d.rbuf = out.data();
        d.count = count;
        ina_node_op_t *op = nullptr;
        for (size_t start = 0; start < 20; ++start) {
            for (size_t i = 0; i < count; ++i) {
                in[i] = in_i(r, i + start);
            }
            if (start == 0) {
                ck_assert_int_eq(ina_node_post(g, &d, &op), INA_OK);
            } else {
                ck_assert_int_eq(ina_node_repost(g, op), INA_OK);
            }
            if (start == 5) {
                ck_assert_int_eq(ina_node_repost(g, op), INA_ERR_INVALID); // in flight
            }
            while (!ina_node_test(op, nullptr)) {
                sched_yield();
            }
            for (size_t i = 0; i < count; ++i) {
                ck_assert_msg(out[i] == ref_sum_i(L, i + start), "start %zu rank %u [%zu]", start,
                              r, i);
            }
            if (start == 10) { // a call of its own between two starts
                ina_coll_desc_t o = d;
                for (size_t i = 0; i < other.size(); ++i) {
                    other[i] = in_i(r, i);
                }
                o.sbuf = other.data();
                o.rbuf = other_out.data();
                o.count = other.size();
                run(g, o);
                for (size_t i = 0; i < other.size(); ++i) {
                    ck_assert(other_out[i] == ref_sum_i(L, i));
                }
            }
        }
        ck_assert_int_eq(ina_node_repost(nullptr, op), INA_ERR_INVALID);
        ina_node_op_free(op);
    });
}
END_TEST

START_TEST(reduce_every_root)
{
    const uint32_t L = 3;
    for (size_t count : {5, 900}) {
        for (uint32_t root = 0; root < L; ++root) {
            with_group(L, 256, 64, [&](uint32_t r, ina_node_group_t *g) {
                std::vector<float> in(count), out(count, -1.0f);
                for (size_t i = 0; i < count; ++i) {
                    in[i] = in_f(r, i);
                }
                ina_coll_desc_t d{};
                d.coll = INA_COLL_REDUCE;
                d.op = INA_OP_SUM;
                d.dtype = INA_DT_FLOAT;
                d.sbuf = in.data();
                d.rbuf = out.data();
                d.count = count;
                d.root = root;
                run(g, d);
                for (size_t i = 0; i < count; ++i) {
                    if (r == root) {
                        ck_assert(same(out[i], ref_sum_f(L, i)));
                    } else {
                        ck_assert(same(out[i], -1.0f)); // untouched elsewhere
                    }
                }
            });
        }
    }
}
END_TEST

START_TEST(reduce_scatter_uneven)
{
    const uint32_t L = 4;
    for (size_t scale : {1, 100}) {
        std::vector<uint64_t> counts = {3 * scale, 0, 1 * scale, 5 * scale};
        size_t total = 0;
        for (auto c : counts) {
            total += c;
        }
        with_group(L, 256, 64, [&](uint32_t r, ina_node_group_t *g) {
            std::vector<float> in(total), out(counts[r] + 1, -1.0f);
            for (size_t i = 0; i < total; ++i) {
                in[i] = in_f(r, i);
            }
            size_t first = 0;
            for (uint32_t k = 0; k < r; ++k) {
                first += counts[k];
            }
            ina_coll_desc_t d{};
            d.coll = INA_COLL_REDUCE_SCATTER;
            d.op = INA_OP_SUM;
            d.dtype = INA_DT_FLOAT;
            d.sbuf = in.data();
            d.rbuf = out.data();
            d.recvcounts = counts.data();
            run(g, d);
            for (size_t i = 0; i < counts[r]; ++i) {
                ck_assert(same(out[i], ref_sum_f(L, first + i)));
            }
            ck_assert(same(out[counts[r]], -1.0f)); // nothing past its part
        });
    }
}
END_TEST

START_TEST(bcast_and_allgather)
{
    const uint32_t L = 5;
    for (size_t bytes : {1, 300, 5000}) {
        for (uint32_t root : {0u, 4u, 2u}) {
            with_group(L, 256, 64, [&](uint32_t r, ina_node_group_t *g) {
                std::vector<uint8_t> buf(bytes);
                for (size_t i = 0; i < bytes; ++i) {
                    buf[i] = static_cast<uint8_t>(r == root ? i * 7 + 1 : 0xee);
                }
                ina_coll_desc_t d{};
                d.coll = INA_COLL_BCAST;
                d.op = INA_OP_REPLACE;
                d.dtype = INA_DT_UINT8;
                d.rbuf = buf.data();
                d.count = bytes;
                d.root = root;
                run(g, d);
                for (size_t i = 0; i < bytes; ++i) {
                    ck_assert_int_eq(buf[i], static_cast<uint8_t>(i * 7 + 1));
                }
            });
        }
        for (bool in_place : {false, true}) {
            with_group(L, 256, 64, [&](uint32_t r, ina_node_group_t *g) {
                std::vector<uint8_t> mine(bytes), all(bytes * L, 0xee);
                for (size_t i = 0; i < bytes; ++i) {
                    mine[i] = static_cast<uint8_t>(r * 31 + i);
                }
                if (in_place) {
                    std::memcpy(all.data() + r * bytes, mine.data(), bytes);
                }
                ina_coll_desc_t d{};
                d.coll = INA_COLL_ALLGATHER;
                d.op = INA_OP_REPLACE;
                d.dtype = INA_DT_UINT8;
                d.sbuf = in_place ? nullptr : mine.data();
                d.rbuf = all.data();
                d.count = bytes;
                run(g, d);
                for (uint32_t k = 0; k < L; ++k) {
                    for (size_t i = 0; i < bytes; ++i) {
                        ck_assert_int_eq(all[k * bytes + i], static_cast<uint8_t>(k * 31 + i));
                    }
                }
            });
        }
    }
}
END_TEST

// A barrier lets nobody out before everyone came in.
START_TEST(barrier_orders)
{
    const uint32_t L = 4;
    std::atomic<int> entered{0};
    with_group(L, 256, 64, [&](uint32_t r, ina_node_group_t *g) {
        for (int round = 1; round <= 20; ++round) {
            if (r == static_cast<uint32_t>(round) % L) {
                usleep(1000); // one late rank each round
            }
            ++entered;
            ina_coll_desc_t d{};
            d.coll = INA_COLL_BARRIER;
            d.op = INA_OP_REPLACE;
            d.dtype = INA_DT_UINT8;
            run(g, d);
            ck_assert_int_ge(entered.load(), round * static_cast<int>(L));
            // Second barrier: nobody enters round+1 before all checked.
            run(g, d);
        }
    });
}
END_TEST

START_TEST(mismatched_parameters_are_an_error)
{
    const std::string name = fresh_name();
    ina_node_config_t a{};
    a.name = name.c_str();
    a.nlocal = 2;
    a.index = 0;
    a.chunk_bytes = 256;
    a.small_bytes = 64;
    a.attach_timeout_ms = 2000;
    ina_node_config_t b = a;
    b.index = 1;
    b.chunk_bytes = 512;
    ina_node_group_t *ga = nullptr, *gb = nullptr;
    char err[256] = "";
    ck_assert_int_eq(ina_node_group_open(&a, &ga, err, sizeof(err)), INA_OK);
    ck_assert(shm_exists(name)); // one of two attached: the name stays
    ck_assert_int_ne(ina_node_group_open(&b, &gb, err, sizeof(err)), INA_OK);
    ck_assert_msg(std::strstr(err, "disagree") != nullptr, "%s", err);
    ina_node_group_close(ga);
    shm_unlink(name.c_str()); // a broken job leaves it to the runtime's cleanup
}
END_TEST

// Memory that cannot be reserved: every rank hears "no memory", nobody
// crashes later, and the name is removed by the last to attach.
START_TEST(no_memory_is_the_same_everywhere)
{
    const std::string name = fresh_name();
    const uint32_t L = 3;
    std::vector<int> rcs(L, 99);
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < L; ++r) {
        threads.emplace_back([&, r] {
            ina_node_config_t cfg{};
            cfg.name = name.c_str();
            cfg.nlocal = L;
            cfg.index = r;
            cfg.chunk_bytes = size_t(1) << 42; // far more than /dev/shm holds
            cfg.small_bytes = 64;
            cfg.attach_timeout_ms = 10000;
            ina_node_group_t *g = nullptr;
            char err[256] = "";
            rcs[r] = ina_node_group_open(&cfg, &g, err, sizeof(err));
        });
    }
    for (auto &t : threads) {
        t.join();
    }
    for (uint32_t r = 0; r < L; ++r) {
        ck_assert_int_eq(rcs[r], INA_ERR_NOMEM);
    }
    ck_assert(!shm_exists(name));
}
END_TEST

// The creator binds every rank's slots and result shares to that rank's
// NUMA node before it reserves the memory; every rank sees the policy.
// Ranks of unknown placement (-1) stay with the default. This machine's
// NUMA node 0 stands for all (one node is enough to see the binding).
START_TEST(segment_parts_bound_to_their_ranks)
{
    const uint32_t L = 3;
    const size_t chunk = 64 << 10;
    const int32_t numa[L] = {0, -1, 0};
    // Where memory binding is not allowed (a container without
    // CAP_SYS_NICE) nothing is bound, and the segment works all the same.
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void *probe = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
    ck_assert(probe != MAP_FAILED);
    std::string why;
    const bool can_bind = ina::node::bind_regions(probe, 2 * page, {{0, 2 * page, 0}}, why) == 1;
    munmap(probe, 2 * page);
    if (!can_bind) {
        std::printf("note: memory binding is not available here (%s)\n", why.c_str());
    }
    with_group(L, chunk, 64, [&](uint32_t r, ina_node_group_t *g) {
        for (uint64_t s = 0; s < 2; ++s) {
            for (uint32_t i = 0; i < L; ++i) {
                ck_assert_int_eq(ina::node::bound_numa(g->slot(s, i), chunk),
                                 can_bind ? numa[i] : -1);
            }
            // Result shares: local rank k folds the k-th third.
            ck_assert_int_eq(ina::node::bound_numa(g->result(s), 16 << 10), can_bind ? 0 : -1);
            ck_assert_int_eq(ina::node::bound_numa(g->result(s) + chunk / 3 + 4096, 8 << 10), -1);
        }
        // Calls work on the placed segment.
        std::vector<int64_t> in(20000, r + 1), out(20000, 0);
        ina_coll_desc_t d{};
        d.coll = INA_COLL_ALLREDUCE;
        d.op = INA_OP_SUM;
        d.dtype = INA_DT_INT64;
        d.count = in.size();
        d.sbuf = in.data();
        d.rbuf = out.data();
        run(g, d);
        for (int64_t x : out) {
            ck_assert_int_eq(x, 6);
        }
    }, numa);
}
END_TEST

START_TEST(chunk_fits_the_segment)
{
    ck_assert_uint_eq(ina_node_chunk_bytes(4, 4u << 20, 128u << 10), 128u << 10);
    size_t c = ina_node_chunk_bytes(128, 4u << 20, 128u << 10);
    ck_assert_uint_gt(c, 0);
    ck_assert_uint_eq(c % 64, 0);
    ck_assert_uint_le(ina_node_segment_bytes(128, c), 4u << 20);
    ck_assert_uint_eq(ina_node_chunk_bytes(4, 4096, 128u << 10), 0);
}
END_TEST

} // namespace

int main()
{
    return ina_test::run_suite("node_stage", "shared memory",
                               {allreduce_float_bit_exact, allreduce_int_wraps_and_many_in_flight,
                                posted_again, reduce_every_root, reduce_scatter_uneven, bcast_and_allgather,
                                barrier_orders, mismatched_parameters_are_an_error,
                                no_memory_is_the_same_everywhere,
                                segment_parts_bound_to_their_ranks, chunk_fits_the_segment},
                               120);
}

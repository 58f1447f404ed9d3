// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Unit tests of the component's node layout (coll_ina_layout.h): dense node
// numbering by first appearance in rank order, the test override
// (coll_ina_test_node_size) and the local ranks of a member, checked against
// layouts written out by hand and, for random keys, against a reference
// numbering computed here with a map.
#include <check.h>
#include "check_main.h"

#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <vector>

#include "coll_ina_layout.h"

static std::vector<uint32_t> number(const std::vector<uint64_t> &keys, int *nnodes)
{
    std::vector<uint32_t> node_of(keys.size() + 1, 0xdeadbeef);
    *nnodes = ina_layout_number(keys.data(), static_cast<int>(keys.size()), node_of.data());
    ck_assert_uint_eq(node_of[keys.size()], 0xdeadbeef); // nothing written past n
    node_of.resize(keys.size());
    return node_of;
}

static std::vector<int> local_of(const std::vector<uint32_t> &node_of, int rank)
{
    std::vector<int> local(node_of.size());
    int n = ina_layout_local_ranks(node_of.data(), static_cast<int>(node_of.size()), rank,
                                   local.data());
    local.resize(n);
    return local;
}

START_TEST(test_dense_first_appearance)
{
    int nnodes = -1;
    // Node ids of the runtime are arbitrary: numbered by first appearance.
    std::vector<uint64_t> keys = {ina_layout_key(INA_LAYOUT_KEY_NODEID, 7),
                                  ina_layout_key(INA_LAYOUT_KEY_NODEID, 3),
                                  ina_layout_key(INA_LAYOUT_KEY_NODEID, 7),
                                  ina_layout_key(INA_LAYOUT_KEY_NODEID, 0),
                                  ina_layout_key(INA_LAYOUT_KEY_NODEID, 3)};
    std::vector<uint32_t> got = number(keys, &nnodes);
    ck_assert_int_eq(nnodes, 3);
    ck_assert(got == (std::vector<uint32_t>{0, 1, 0, 2, 1}));

    // One node.
    got = number(std::vector<uint64_t>(4, 42), &nnodes);
    ck_assert_int_eq(nnodes, 1);
    ck_assert(got == (std::vector<uint32_t>{0, 0, 0, 0}));

    // Every member alone (keys falling in rank order and against it).
    got = number({9, 8, 7, 6}, &nnodes);
    ck_assert_int_eq(nnodes, 4);
    ck_assert(got == (std::vector<uint32_t>{0, 1, 2, 3}));

    // Empty.
    ck_assert_int_eq(ina_layout_number(nullptr, 0, nullptr), 0);
}
END_TEST

START_TEST(test_kinds_do_not_collide)
{
    int nnodes = -1;
    // The same value under different kinds is a different node.
    std::vector<uint64_t> keys = {ina_layout_key(INA_LAYOUT_KEY_NODEID, 1),
                                  ina_layout_key(INA_LAYOUT_KEY_TEST, 1),
                                  ina_layout_key(INA_LAYOUT_KEY_ALONE, 1),
                                  ina_layout_key(INA_LAYOUT_KEY_NODEID, 1)};
    std::vector<uint32_t> got = number(keys, &nnodes);
    ck_assert_int_eq(nnodes, 3);
    ck_assert(got == (std::vector<uint32_t>{0, 1, 2, 0}));
}
END_TEST

START_TEST(test_override_rule)
{
    uint64_t key = 0;
    ck_assert_int_eq(ina_layout_test_key(0, 5, &key), -1);
    ck_assert_int_eq(ina_layout_test_key(-3, 5, &key), -1);
    ck_assert_int_eq(ina_layout_test_key(2, 0, &key), 0);
    ck_assert_uint_eq(key, ina_layout_key(INA_LAYOUT_KEY_TEST, 0));
    ck_assert_int_eq(ina_layout_test_key(2, 1, &key), 0);
    ck_assert_uint_eq(key, ina_layout_key(INA_LAYOUT_KEY_TEST, 0));
    ck_assert_int_eq(ina_layout_test_key(2, 4, &key), 0);
    ck_assert_uint_eq(key, ina_layout_key(INA_LAYOUT_KEY_TEST, 2));
    ck_assert_int_eq(ina_layout_test_key(1, UINT32_MAX, &key), 0);
    ck_assert_uint_eq(key, ina_layout_key(INA_LAYOUT_KEY_TEST, UINT32_MAX));

    // np 5, K = 2: nodes {0,1} {2,3} {4}.
    std::vector<uint64_t> keys(5);
    for (uint32_t r = 0; r < 5; ++r) ck_assert_int_eq(ina_layout_test_key(2, r, &keys[r]), 0);
    int nnodes = -1;
    std::vector<uint32_t> got = number(keys, &nnodes);
    ck_assert_int_eq(nnodes, 3);
    ck_assert(got == (std::vector<uint32_t>{0, 0, 1, 1, 2}));
    ck_assert(local_of(got, 0) == (std::vector<int>{0, 1}));
    ck_assert(local_of(got, 3) == (std::vector<int>{2, 3}));
    ck_assert(local_of(got, 4) == (std::vector<int>{4}));

    // A communicator of world ranks in reverse order (4 3 2 1 0), K = 2:
    // world rank 4 is first, so its node is 0.
    for (uint32_t i = 0; i < 5; ++i) ck_assert_int_eq(ina_layout_test_key(2, 4 - i, &keys[i]), 0);
    got = number(keys, &nnodes);
    ck_assert_int_eq(nnodes, 3);
    ck_assert(got == (std::vector<uint32_t>{0, 1, 1, 2, 2}));
    ck_assert(local_of(got, 2) == (std::vector<int>{1, 2}));
    ck_assert(local_of(got, 0) == (std::vector<int>{0}));
}
END_TEST

START_TEST(test_local_ranks)
{
    std::vector<uint32_t> node_of = {1, 0, 1, 2, 0, 1};
    ck_assert(local_of(node_of, 0) == (std::vector<int>{0, 2, 5}));
    ck_assert(local_of(node_of, 4) == (std::vector<int>{1, 4}));
    ck_assert(local_of(node_of, 3) == (std::vector<int>{3}));
    // Out of range: none.
    ck_assert(local_of(node_of, 6).empty());
    ck_assert(local_of(node_of, -1).empty());
}
END_TEST

START_TEST(test_random_against_reference)
{
    std::mt19937_64 rng(12345);
    for (int trial = 0; trial < 200; ++trial) {
        int n = 1 + static_cast<int>(rng() % 300);
        int distinct = 1 + static_cast<int>(rng() % 40);
        std::vector<uint64_t> pool(distinct);
        for (uint64_t &k : pool) k = rng();
        std::vector<uint64_t> keys(n);
        for (uint64_t &k : keys) k = pool[rng() % distinct];

        std::map<uint64_t, uint32_t> seen;
        std::vector<uint32_t> want(n);
        for (int i = 0; i < n; ++i) {
            auto it = seen.emplace(keys[i], static_cast<uint32_t>(seen.size())).first;
            want[i] = it->second;
        }
        int nnodes = -1;
        std::vector<uint32_t> got = number(keys, &nnodes);
        ck_assert_int_eq(nnodes, static_cast<int>(seen.size()));
        ck_assert(got == want);
        int r = static_cast<int>(rng() % n);
        std::vector<int> lw;
        for (int i = 0; i < n; ++i) {
            if (keys[i] == keys[r]) lw.push_back(i);
        }
        ck_assert(local_of(got, r) == lw);
    }
}
END_TEST

// The least and most populated nodes: the stream count and the step size
// every node of an uneven layout agrees on.
START_TEST(test_node_sizes)
{
    int fewest = -1, most = -1;
    std::vector<uint32_t> node_of = {0, 0, 0, 1, 2, 2};
    ina_layout_node_sizes(node_of.data(), 6, 3, &fewest, &most);
    ck_assert_int_eq(fewest, 1);
    ck_assert_int_eq(most, 3);
    node_of = {0, 1, 0, 1};
    ina_layout_node_sizes(node_of.data(), 4, 2, &fewest, &most);
    ck_assert_int_eq(fewest, 2);
    ck_assert_int_eq(most, 2);
    ina_layout_node_sizes(node_of.data(), 0, 0, &fewest, &most);
    ck_assert_int_eq(fewest, 0);
    ck_assert_int_eq(most, 0);
}
END_TEST

// Open MPI's locality strings: one package / NUMA node, or -1.
START_TEST(test_locality_index)
{
    const char *bound = "SK1:L30:L20:L10:CR0:HT0:NM3";
    ck_assert_int_eq(ina_layout_locality_index(bound, "SK"), 1);
    ck_assert_int_eq(ina_layout_locality_index(bound, "NM"), 3);
    ck_assert_int_eq(ina_layout_locality_index("SK12:NM0", "SK"), 12);
    // Bound across several, not bound, no such field, empty fields.
    ck_assert_int_eq(ina_layout_locality_index("SK0-1:NM0,2", "SK"), -1);
    ck_assert_int_eq(ina_layout_locality_index("SK0-1:NM0,2", "NM"), -1);
    ck_assert_int_eq(ina_layout_locality_index(nullptr, "SK"), -1);
    ck_assert_int_eq(ina_layout_locality_index("", "SK"), -1);
    ck_assert_int_eq(ina_layout_locality_index("L30:CR0", "NM"), -1);
    ck_assert_int_eq(ina_layout_locality_index("SK:NM", "SK"), -1);
    ck_assert_int_eq(ina_layout_locality_index("::SK2::", "SK"), 2);
}
END_TEST

// Stream leaders round robin over packages; local ranks in order without.
START_TEST(test_stream_leaders)
{
    int leaders[8];
    // Two packages of four (map by core): 0, 4, 1, 5.
    std::vector<int> pk = {0, 0, 0, 0, 1, 1, 1, 1};
    ina_layout_stream_leaders(pk.data(), 8, 4, leaders);
    ck_assert_int_eq(leaders[0], 0);
    ck_assert_int_eq(leaders[1], 4);
    ck_assert_int_eq(leaders[2], 1);
    ck_assert_int_eq(leaders[3], 5);
    // Every rank leads when k = nlocal; packages in order of first rank
    // (map by socket: 1 0 1 0 ...) and uneven packages.
    pk = {1, 0, 1, 0, 1, 1};
    ina_layout_stream_leaders(pk.data(), 6, 6, leaders);
    const int want[] = {0, 1, 2, 3, 4, 5};
    for (int j = 0; j < 6; ++j) {
        ck_assert_int_eq(leaders[j], want[j]);
    }
    pk = {0, 0, 0, 1};
    ina_layout_stream_leaders(pk.data(), 4, 3, leaders);
    ck_assert_int_eq(leaders[0], 0);
    ck_assert_int_eq(leaders[1], 3);
    ck_assert_int_eq(leaders[2], 1);
    // One package unknown: local ranks 0..k-1.
    pk = {0, -1, 1, 1};
    ina_layout_stream_leaders(pk.data(), 4, 2, leaders);
    ck_assert_int_eq(leaders[0], 0);
    ck_assert_int_eq(leaders[1], 1);
    // Random layouts: k distinct local ranks, and each package leads
    // either ceil or floor of its fair share (as many as it can).
    std::mt19937 rng(5);
    for (int trial = 0; trial < 500; ++trial) {
        const int n = 1 + static_cast<int>(rng() % 8), k = 1 + static_cast<int>(rng() % n);
        std::vector<int> p(n);
        for (int &x : p) x = static_cast<int>(rng() % 3);
        std::vector<int> l(k);
        ina_layout_stream_leaders(p.data(), n, k, l.data());
        std::vector<int> seen(n, 0);
        std::map<int, int> per, size;
        for (int x : l) {
            ck_assert(x >= 0 && x < n);
            ck_assert_int_eq(seen[x]++, 0);
            ++per[p[x]];
        }
        for (int x : p) ++size[x];
        for (const auto &kv : size) {
            for (const auto &other : size) {
                // A package with fewer leaders than another has no rank left.
                if (per[kv.first] + 1 < per[other.first]) {
                    ck_assert_int_eq(per[kv.first], kv.second);
                }
            }
        }
    }
}
END_TEST

int main()
{
    return ina_test::run_suite("component_layout", "layout",
                               {test_dense_first_appearance,
                                test_kinds_do_not_collide,
                                test_override_rule,
                                test_local_ranks,
                                test_random_against_reference,
                                test_node_sizes,
                                test_locality_index,
                                test_stream_leaders});
}

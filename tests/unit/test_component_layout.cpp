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

int main()
{
    return ina_test::run_suite("component_layout", "layout",
                               {test_dense_first_appearance,
                                test_kinds_do_not_collide,
                                test_override_rule,
                                test_local_ranks,
                                test_random_against_reference,
                                test_node_sizes});
}

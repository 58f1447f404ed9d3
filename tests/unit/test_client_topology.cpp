// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// What every rank derives alike for a communicator, without communicating:
// the topology file (client/ina_topology.h: host lists, agents and their
// parents, the errors a user gets for a wrong file, the plan) and the job
// key (ina_job_key_*, client/ina_client.h).
#include <check.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "check_main.h"
#include "ina_client.h"
#include "ina_siphash.h"
#include "ina_topology.h"

using ina::topo::expand_hostlist;
using ina::topo::Plan;
using ina::topo::Topology;

namespace {

std::vector<std::string> expand(const std::string &list)
{
    std::vector<std::string> out;
    std::string err;
    ck_assert_msg(expand_hostlist(list, out, err), "\"%s\": %s", list.c_str(), err.c_str());
    return out;
}

// The file is refused with exactly `want`.
void expect_error(const std::string &text, const std::string &want)
{
    Topology t;
    std::string err;
    ck_assert_msg(!Topology::parse(text, t, err), "accepted: %s", text.c_str());
    ck_assert_msg(err == want, "for:\n%s\ngot:  %s\nwant: %s", text.c_str(), err.c_str(),
                  want.c_str());
}

const char *kTwoLeaves = "# a spine over two leaves\n"
                         "agent leaf1 10.0.2.1:17300 parent spine   # declared before it\n"
                         "agent spine 10.0.0.1:17300\n"
                         "agent leaf0 10.0.1.1:17300 parent spine\n"
                         "hosts leaf0 node[01-04]\n"
                         "hosts leaf1 node[05-08],gpu1\n"
                         "\n"
                         "agent lone [fe80::1]:17301\n"
                         "hosts lone login[1,3]\n";

} // namespace

START_TEST(test_hostlists)
{
    ck_assert(expand("a") == std::vector<std::string>({"a"}));
    ck_assert(expand("n[1-3]") == std::vector<std::string>({"n1", "n2", "n3"}));
    // The lower bound's width is the padding; suffixes and lists mix.
    ck_assert(expand("n[08-10]-ib,x[1,3]y") ==
              std::vector<std::string>({"n08-ib", "n09-ib", "n10-ib", "x1y", "x3y"}));
    ck_assert(expand("r[7]") == std::vector<std::string>({"r7"}));
    const std::vector<std::string> many = expand("c[0000-1023]");
    ck_assert_uint_eq(many.size(), 1024);
    ck_assert_str_eq(many.front().c_str(), "c0000");
    ck_assert_str_eq(many.back().c_str(), "c1023");
    std::vector<std::string> out;
    std::string err;
    for (const char *bad : {"", "a,,b", "n[1-3", "n1-3]", "n[[1]]", "n[3-1]", "n[a-b]", "n[]",
                            "n[1]x[2]", "n[0-99999999]"}) {
        ck_assert_msg(!expand_hostlist(bad, out, err), "accepted \"%s\"", bad);
        ck_assert(!err.empty());
    }
}
END_TEST

START_TEST(test_parse_and_lookup)
{
    Topology t;
    std::string err;
    ck_assert_msg(Topology::parse(kTwoLeaves, t, err), "%s", err.c_str());
    ck_assert_uint_eq(t.agents().size(), 4);
    const int leaf0 = t.agent_of("node02"), leaf1 = t.agent_of("gpu1");
    ck_assert_str_eq(t.agents()[leaf0].name.c_str(), "leaf0");
    ck_assert_str_eq(t.agents()[leaf1].name.c_str(), "leaf1");
    ck_assert_str_eq(t.agents()[leaf1].address.c_str(), "10.0.2.1:17300");
    ck_assert_int_eq(t.agent_of("node09"), -1);
    ck_assert_int_eq(t.agent_of("node2"), -1); // padding is part of the name
    const std::vector<int> up = t.path_to_root(leaf0);
    ck_assert_uint_eq(up.size(), 2);
    ck_assert_str_eq(t.agents()[up[1]].name.c_str(), "spine");
    ck_assert_int_eq(t.root_of(leaf1), up[1]);
    const int lone = t.agent_of("login3");
    ck_assert_int_eq(t.root_of(lone), lone);
    ck_assert_str_eq(t.agents()[lone].address.c_str(), "[fe80::1]:17301");
}
END_TEST

START_TEST(test_parse_errors)
{
    // Each wrong file names the line and what is wrong.
    expect_error("agent a 1.2.3.4:1\nswitch b 1.2.3.4:2\n",
                 "line 2: unknown statement \"switch\" (agent or hosts)");
    expect_error("agent a 1.2.3.4\n", "line 1: \"1.2.3.4\" is not HOST:PORT");
    expect_error("agent a h:x1\n", "line 1: \"h:x1\" is not HOST:PORT");
    expect_error("agent a h:1 father b\n", "line 1: want \"agent NAME HOST:PORT [parent NAME]\"");
    expect_error("agent a h:1\nagent a h:2\n", "line 2: agent \"a\" declared twice");
    expect_error("agent a h:1 parent z\n", "line 1: parent \"z\" is no agent");
    expect_error("agent a h:1 parent c\nagent b h:2 parent a\nagent c h:3 parent b\n",
                 "line 1: agent \"a\" is in a cycle of parents");
    expect_error("agent a h:1 parent a\n", "line 1: agent \"a\" is in a cycle of parents");
    expect_error("agent a h:1\nhosts b n1\n", "line 2: hosts of \"b\", which is no agent");
    expect_error("agent a h:1\nhosts a n1, n2\n",
                 "line 2: want \"hosts NAME HOSTLIST\" (no spaces in the list)");
    expect_error("agent a h:1\nhosts a n[2-1]\n",
                 "line 2: range \"2-1\" in \"n[2-1]\" runs backwards");
    expect_error("agent a h:1\nagent b h:2\nhosts a n[1-4]\nhosts b n[4-6]\n",
                 "line 4: host \"n4\" already belongs to agent \"a\"");
    // The same host twice for the same agent is harmless.
    Topology t;
    std::string err;
    ck_assert(Topology::parse("agent a h:1\nhosts a n[1-2]\nhosts a n2\n", t, err));
}
END_TEST

START_TEST(test_plan)
{
    Topology t;
    std::string err;
    ck_assert(Topology::parse(kTwoLeaves, t, err));
    // Leaves in the order of their first rank: leaf1 (rank 0) before leaf0.
    Plan p;
    ck_assert_msg(ina::topo::plan(t, {"node05", "node01", "gpu1", "node01", "node04"}, p, err),
                  "%s", err.c_str());
    ck_assert_uint_eq(p.leaves.size(), 2);
    ck_assert_str_eq(t.agents()[p.leaves[0]].name.c_str(), "leaf1");
    ck_assert_str_eq(t.agents()[p.leaves[1]].name.c_str(), "leaf0");
    ck_assert_str_eq(t.agents()[p.root].name.c_str(), "spine");
    ck_assert(p.leaf_of_rank == std::vector<uint32_t>({0, 1, 0, 1, 1}));
    ck_assert(p.members[0] == std::vector<uint32_t>({0, 2}));
    ck_assert(p.members[1] == std::vector<uint32_t>({1, 3, 4}));
    // One leaf: the root is the leaf's own root.
    ck_assert(ina::topo::plan(t, {"node03", "node03"}, p, err));
    ck_assert_uint_eq(p.leaves.size(), 1);
    // Errors: an unmapped host, agents of two trees in one communicator.
    ck_assert(!ina::topo::plan(t, {"node01", "elsewhere"}, p, err));
    ck_assert_str_eq(err.c_str(),
                     "host \"elsewhere\" of rank 1 is in no hosts line of the topology");
    ck_assert(!ina::topo::plan(t, {"node01", "login1"}, p, err));
    ck_assert_str_eq(err.c_str(), "rank 1 talks to agent \"lone\", in another tree than rank "
                                  "0's (root \"lone\" vs \"spine\")");
    // Several leaves must each be a child of the root: not the root itself,
    // not deeper (the agents build trees of depth 2).
    Topology deep;
    ck_assert(Topology::parse("agent s h:1\nagent a h:2 parent s\nagent b h:3 parent a\n"
                              "hosts s n0\nhosts a n1\nhosts b n2\n",
                              deep, err));
    ck_assert(!ina::topo::plan(deep, {"n1", "n0"}, p, err));
    ck_assert_str_eq(err.c_str(), "rank 1 talks to agent \"s\", the root of the tree: a "
                                  "communicator over several leaf agents needs each to be a "
                                  "child of the root (depth 2)");
    ck_assert(!ina::topo::plan(deep, {"n1", "n2"}, p, err));
    ck_assert_str_eq(err.c_str(), "rank 1 talks to agent \"b\", 2 levels below the root: a "
                                  "communicator over several leaf agents needs each to be a "
                                  "child of the root (depth 2)");
    ck_assert(ina::topo::plan(deep, {"n2", "n2"}, p, err)); // one leaf: any depth
}
END_TEST

// The C API the component uses: a file read from disk, lookups, the plan,
// and the errors with the file's name.
START_TEST(test_c_api)
{
    char path[] = "/tmp/ina-topology-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const std::string text = std::string(kTwoLeaves);
    ck_assert_int_eq(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
    ina_topology_t *t = nullptr;
    char err[256] = "";
    ck_assert_int_eq(ina_topology_load(path, &t, err, sizeof(err)), INA_OK);
    ck_assert_str_eq(ina_topology_agent_for(t, "node02"), "10.0.1.1:17300");
    ck_assert_str_eq(ina_topology_agent_for(t, "gpu1"), "10.0.2.1:17300");
    ck_assert_ptr_null(ina_topology_agent_for(t, "elsewhere"));
    const char *hosts[] = {"node05", "node01", "gpu1", "node01", "node04"};
    uint32_t nleaves = 0, leaf_of[5] = {};
    ck_assert_int_eq(ina_topology_plan(t, hosts, 5, &nleaves, leaf_of, err, sizeof(err)), INA_OK);
    ck_assert_uint_eq(nleaves, 2);
    ck_assert_uint_eq(leaf_of[0], 0);
    ck_assert_uint_eq(leaf_of[1], 1);
    ck_assert_uint_eq(leaf_of[2], 0);
    const char *bad[] = {"node01", "elsewhere"};
    ck_assert_int_eq(ina_topology_plan(t, bad, 2, &nleaves, nullptr, err, sizeof(err)),
                     INA_ERR_INVALID);
    ck_assert_str_eq(err, "host \"elsewhere\" of rank 1 is in no hosts line of the topology");
    ina_topology_free(t);

    // A wrong file names itself and the line.
    FILE *f = std::fopen(path, "w");
    std::fputs("agent a 1.2.3.4:5\nhosts b node1\n", f);
    std::fclose(f);
    ck_assert_int_eq(ina_topology_load(path, &t, err, sizeof(err)), INA_ERR_INVALID);
    ck_assert_ptr_null(t);
    ck_assert_msg(std::strstr(err, path) == err && std::strstr(err, ": line 2: ") != nullptr,
                  "%s", err);
    unlink(path);
    ck_assert_int_eq(ina_topology_load(path, &t, err, sizeof(err)), INA_ERR_INVALID);
    ck_assert_msg(std::strstr(err, "No such file") != nullptr, "%s", err);
}
END_TEST

std::string key_hex(const ina_job_key_t &k)
{
    std::string s;
    char b[3];
    for (uint8_t x : k.bytes) {
        std::snprintf(b, sizeof(b), "%02x", x);
        s += b;
    }
    return s;
}

std::string key_of(const std::string &text)
{
    ina_job_key_t k;
    ina_job_key_init(&k);
    ina_job_key_add(&k, text.data(), text.size());
    return key_hex(k);
}

START_TEST(test_job_key)
{
    // FNV-1a 128 reference values (the empty input is the offset basis).
    ck_assert(key_of("") == "6c62272e07bb014262b821756295c58d");
    ck_assert(key_of("a") == "d228cb696f1a8caf78912b704e4a8964");
    ck_assert(key_of("foobar") == "343e1662793c64bf6f0d3597ba446f18");
    // Added in pieces or at once: the same key; the order matters.
    ina_job_key_t k;
    ina_job_key_init(&k);
    ina_job_key_add(&k, "foo", 3);
    ina_job_key_add(&k, "bar", 3);
    ck_assert(key_hex(k) == key_of("foobar"));
    ck_assert(key_of("barfoo") != key_of("foobar"));
}
END_TEST

// SipHash-2-4 against the reference implementation's vectors (key 00..0f,
// message 00..len-1), and the capability it seals a job key with.
START_TEST(test_siphash_and_seal)
{
    uint8_t key[16], msg[64];
    for (int i = 0; i < 64; ++i) {
        msg[i] = static_cast<uint8_t>(i);
        if (i < 16) {
            key[i] = static_cast<uint8_t>(i);
        }
    }
    ck_assert_uint_eq(ina_siphash24(key, msg, 0), 0x726fdb47dd0e0e31ull);
    ck_assert_uint_eq(ina_siphash24(key, msg, 1), 0x74f839c593dc67fdull);
    ck_assert_uint_eq(ina_siphash24(key, msg, 8), 0x93f5f5799a932462ull);
    ck_assert_uint_eq(ina_siphash24(key, msg, 15), 0xa129ca6149be45e5ull);
    ck_assert_uint_eq(ina_siphash24(key, msg, 63), 0x958a324ceb064572ull);

    // init leaves no capability; seal gives one that depends on the key and
    // on the secret, and is the same wherever it is computed.
    ina_job_key_t a, b;
    ina_job_key_init(&a);
    ck_assert(std::all_of(a.cap, a.cap + sizeof(a.cap), [](uint8_t x) { return x == 0; }));
    ina_job_key_add(&a, "job", 3);
    b = a;
    ina_job_key_seal(&a, key);
    ina_job_key_seal(&b, key);
    ck_assert(std::memcmp(a.cap, b.cap, sizeof(a.cap)) == 0);
    ck_assert(std::memcmp(a.bytes, b.bytes, sizeof(a.bytes)) == 0); // the name is unchanged
    ck_assert(std::memcmp(a.cap, a.cap + 8, 8) != 0);               // two different halves
    uint8_t other[16];
    std::memcpy(other, key, sizeof(other));
    other[15] ^= 1;
    ina_job_key_seal(&b, other);
    ck_assert(std::memcmp(a.cap, b.cap, sizeof(a.cap)) != 0);
    ina_job_key_add(&b, "!", 1);
    ina_job_key_seal(&b, key);
    ck_assert(std::memcmp(a.cap, b.cap, sizeof(a.cap)) != 0);
}
END_TEST

int main()
{
    return ina_test::run_suite("client_topology", "topology",
                               {test_hostlists, test_parse_and_lookup, test_parse_errors,
                                test_plan, test_job_key, test_siphash_and_seal, test_c_api});
}

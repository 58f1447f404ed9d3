// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// What every rank derives alike for a communicator, without communicating:
// the topology file (client/ina_topology.h: host lists, agents and their
// parents, the errors a user gets for a wrong file, the plan of trees of
// any depth and each rank's place in it) and the job key (ina_job_key_*,
// client/ina_client.h).
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

// A 2x2 grid of groups (16 nodes n01..n16), its lines out of order, beside
// an agent that serves some of the same hosts.
const char *kGrid2x2 = "agent a 10.0.0.1:17300\n"
                       "hosts a n[01-08]\n"
                       "square 1 1 n13 n14 n15 n16   # D's group last... or not\n"
                       "square 0 0 n01 n02 n03 n04\n"
                       "\n"
                       "square 0 1 n09 n10 n11 n12\n"
                       "square 1 0 n05 n06 n07 n08\n";

Topology parsed(const std::string &text)
{
    Topology t;
    std::string err;
    ck_assert_msg(Topology::parse(text, t, err), "refused: %s\n%s", err.c_str(), text.c_str());
    return t;
}

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

// The squares: the grid of nodes they make, in any order of lines, beside
// agents or alone; files without squares have no grid.
START_TEST(test_grid_parse)
{
    const Topology one = parsed("square 0 0 a b c d\n");
    ck_assert_uint_eq(one.grid().groups_x, 1);
    ck_assert_uint_eq(one.grid().groups_y, 1);
    ck_assert(one.grid().host_of_node == std::vector<std::string>({"a", "b", "c", "d"}));
    ck_assert_uint_eq(one.grid().node_of_host.at("c"), 2);

    // 2x1: B of group 0 is column 1, A of group 1 column 2.
    const Topology wide = parsed("square 1 0 e f g h\nsquare 0 0 a b c d\n");
    ck_assert_uint_eq(wide.grid().cols(), 4);
    ck_assert_uint_eq(wide.grid().rows(), 2);
    ck_assert(wide.grid().host_of_node ==
              std::vector<std::string>({"a", "b", "e", "f", "c", "d", "g", "h"}));

    const Topology t = parsed(kGrid2x2);
    const ina::topo::Grid &g = t.grid();
    ck_assert_uint_eq(g.groups_x, 2);
    ck_assert_uint_eq(g.groups_y, 2);
    ck_assert_uint_eq(g.cols(), 4);
    ck_assert_uint_eq(g.rows(), 4);
    // Group (1, 1)'s D is the far corner; group (0, 1)'s A row 2, column 0.
    ck_assert_str_eq(g.host_of_node[15].c_str(), "n16");
    ck_assert_str_eq(g.host_of_node[2 * 4 + 0].c_str(), "n09");
    ck_assert_str_eq(g.host_of_node[1 * 4 + 2].c_str(), "n07");
    ck_assert_uint_eq(g.node_of_host.size(), 16);
    // The agents are as before: the grid is beside them.
    ck_assert_int_eq(t.agent_of("n05"), 0);
    ck_assert_int_eq(t.agent_of("n09"), -1);

    // No squares: no grid, the rest unchanged.
    const Topology none = parsed(kTwoLeaves);
    ck_assert(none.grid().empty());
    ck_assert_uint_eq(none.grid().cols(), 0);
    ck_assert_int_eq(none.agent_of("node05"), 0); // leaf1, declared first
}
END_TEST

START_TEST(test_grid_parse_errors)
{
    expect_error("square 0 0 a b c d\nsquare 1 1 e f g h\n",
                 "line 2: no square at (1, 0), inside the 2x2 groups the squares span (this one "
                 "at (1, 1) among them): the squares must fill a rectangle from (0, 0)");
    // A row that does not start at 0.
    expect_error("square 1 0 a b c d\n",
                 "line 1: no square at (0, 0), inside the 2x1 groups the squares span (this one "
                 "at (1, 0) among them): the squares must fill a rectangle from (0, 0)");
    // An L: (1, 1) missing; the first of the farthest is named.
    expect_error("square 0 0 a b c d\nsquare 1 0 e f g h\nsquare 0 1 i j k l\n",
                 "line 2: no square at (1, 1), inside the 2x2 groups the squares span (this one "
                 "at (1, 0) among them): the squares must fill a rectangle from (0, 0)");
    // Far out: refused without building the grid it would span.
    expect_error("square 0 0 a b c d\nsquare 99999 99999 e f g h\n",
                 "line 2: no square at (1, 0), inside the 100000x100000 groups the squares span "
                 "(this one at (99999, 99999) among them): the squares must fill a rectangle "
                 "from (0, 0)");
    expect_error("square 0 0 a b c d\nsquare 0 0 e f g h\n",
                 "line 2: group (0, 0) already given on line 1");
    expect_error("square 0 0 a b c d\n\nsquare 1 0 e f a h\n",
                 "line 3: host \"a\" is already a node of the grid (line 1)");
    expect_error("square 0 0 a b c a\n",
                 "line 1: host \"a\" is already a node of the grid (line 1)");
    expect_error("square 0 0 a b c\n", "line 1: want \"square GX GY HOSTA HOSTB HOSTC HOSTD\"");
    expect_error("square 0 0 a b c d e\n", "line 1: want \"square GX GY HOSTA HOSTB HOSTC HOSTD\"");
    expect_error("square x 0 a b c d\n", "line 1: \"x\" is not a group position (0 to 99999)");
    expect_error("square 0 -1 a b c d\n", "line 1: \"-1\" is not a group position (0 to 99999)");
    expect_error("square 0 100000 a b c d\n",
                 "line 1: \"100000\" is not a group position (0 to 99999)");
    expect_error("square 0 0 n[1-4] b c d\n",
                 "line 1: \"n[1-4]\" is not a host name (one host per node)");
    // The agents' errors still come first where they are first.
    expect_error("agent a h:1\nsquare 0 0 a b c d\nhosts b n1\n",
                 "line 3: hosts of \"b\", which is no agent");
}
END_TEST

// ina_topology_grid over a file on disk: the ranks' hosts to nodes, the
// rectangle renumbered from its corner, and the reasons for no grid.
START_TEST(test_grid_map)
{
    char path[] = "/tmp/ina-topology-grid-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const std::string text = kGrid2x2;
    ck_assert_int_eq(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
    ina_topology_t *t = nullptr;
    char err[256] = "";
    ck_assert_int_eq(ina_topology_load(path, &t, err, sizeof(err)), INA_OK);
    unlink(path);
    uint32_t cols = 9, rows = 9, node[16];

    // One rank a node, the whole grid, ranks in host order: rank r on
    // host n(r+1), whose node is the grid's row-major position.
    std::vector<std::string> names;
    for (int i = 1; i <= 16; ++i) {
        char h[8];
        std::snprintf(h, sizeof(h), "n%02d", i);
        names.push_back(h);
    }
    std::vector<const char *> hosts;
    for (const std::string &n : names) {
        hosts.push_back(n.c_str());
    }
    ck_assert_int_eq(ina_topology_grid(t, hosts.data(), 16, &cols, &rows, node, nullptr, err, sizeof(err)),
                     INA_OK);
    ck_assert_uint_eq(cols, 4);
    ck_assert_uint_eq(rows, 4);
    ck_assert_str_eq(err, "");
    const uint32_t want_all[16] = {0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15};
    for (int r = 0; r < 16; ++r) {
        ck_assert_msg(node[r] == want_all[r], "rank %d: node %u, want %u", r, node[r], want_all[r]);
    }

    // Eight ranks on one group's four nodes, interleaved.
    const char *shared[] = {"n01", "n02", "n03", "n04", "n04", "n03", "n02", "n01"};
    ck_assert_int_eq(ina_topology_grid(t, shared, 8, &cols, &rows, node, nullptr, err, sizeof(err)), INA_OK);
    ck_assert_uint_eq(cols, 2);
    ck_assert_uint_eq(rows, 2);
    const uint32_t want_shared[8] = {0, 1, 2, 3, 3, 2, 1, 0};
    for (int r = 0; r < 8; ++r) {
        ck_assert_uint_eq(node[r], want_shared[r]);
    }

    // The right column of groups, (1, 0) over (1, 1): 2 across, 4 down,
    // numbered from its own corner (n05 is node 0, n16 node 7).
    const char *right[] = {"n16", "n05", "n06", "n07", "n08", "n13", "n14", "n15"};
    ck_assert_int_eq(ina_topology_grid(t, right, 8, &cols, &rows, node, nullptr, err, sizeof(err)), INA_OK);
    ck_assert_uint_eq(cols, 2);
    ck_assert_uint_eq(rows, 4);
    const uint32_t want_right[8] = {7, 0, 1, 2, 3, 4, 5, 6};
    for (int r = 0; r < 8; ++r) {
        ck_assert_uint_eq(node[r], want_right[r]);
    }

    // No grid, and why: INA_OK with 0 x 0.
    // Partial: every host on the grid, but not whole groups.
    const auto no_grid = [&](const std::vector<const char *> &h, const char *why,
                             int want_partial = 0) {
        cols = rows = 9;
        int partial = 7;
        ck_assert_int_eq(ina_topology_grid(t, h.data(), static_cast<uint32_t>(h.size()), &cols,
                                           &rows, node, &partial, err, sizeof(err)),
                         INA_OK);
        ck_assert_uint_eq(cols, 0);
        ck_assert_uint_eq(rows, 0);
        ck_assert_int_eq(partial, want_partial);
        ck_assert_msg(std::strcmp(err, why) == 0, "got:  %s\nwant: %s", err, why);
    };
    no_grid({"n01", "n02", "n03"},
            "group (0, 0) is covered in part: its node D (host \"n04\") holds no rank: the "
            "ranks must cover whole groups",
            1);
    // Groups (0, 0) and (1, 0) whole, but (1, 1)'s n13 beside them.
    no_grid({"n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n13"},
            "group (0, 1) holds no rank, inside the rectangle of groups (0, 0) to (1, 1) that the "
            "ranks span: they must cover a rectangle of groups",
            1);
    no_grid({"n01", "n02", "n03", "n04", "login1"},
            "host \"login1\" of rank 4 is not on the grid (in no square line)");
    no_grid({"n06", "n06"}, "every rank is on one node (host \"n06\"): no rings to run");
    no_grid({}, "no ranks");

    // Bad arguments.
    ck_assert_int_eq(ina_topology_grid(nullptr, shared, 8, &cols, &rows, node, nullptr, err, sizeof(err)),
                     INA_ERR_INVALID);
    ck_assert_int_eq(ina_topology_grid(t, shared, 8, nullptr, &rows, node, nullptr, err, sizeof(err)),
                     INA_ERR_INVALID);
    ck_assert_int_eq(ina_topology_grid(t, shared, 8, &cols, &rows, nullptr, nullptr, err, sizeof(err)),
                     INA_ERR_INVALID);
    const char *unknown[] = {"n01", nullptr};
    ck_assert_int_eq(ina_topology_grid(t, unknown, 2, &cols, &rows, node, nullptr, err, sizeof(err)),
                     INA_ERR_INVALID);
    ck_assert_str_eq(err, "the host of rank 1 is unknown");
    ina_topology_free(t);

    // A file without squares: no grid, said so.
    Topology plain = parsed(kTwoLeaves);
    ina::topo::GridMap m;
    std::string why;
    ck_assert(!ina::topo::grid_map(plain.grid(), {"node01", "node02"}, m, why));
    ck_assert_str_eq(why.c_str(), "the topology describes no grid (no square statement)");
    ck_assert_uint_eq(m.cols, 0);
}
END_TEST

// Two positions of a row (or a column) that one link joins: one group's
// A-B (2g, 2g + 1), or the same letter of neighbouring groups (two apart).
bool linked(uint32_t a, uint32_t b)
{
    const uint32_t lo = std::min(a, b), hi = std::max(a, b);
    return (hi - lo == 1 && lo % 2 == 0) || hi - lo == 2;
}

START_TEST(test_grid_ring)
{
    uint32_t ring[12];
    ina_grid_ring(2, ring);
    ck_assert_uint_eq(ring[0], 0);
    ck_assert_uint_eq(ring[1], 1);
    ina_grid_ring(4, ring);
    ck_assert(std::vector<uint32_t>(ring, ring + 4) == std::vector<uint32_t>({0, 1, 3, 2}));
    ina_grid_ring(6, ring);
    ck_assert(std::vector<uint32_t>(ring, ring + 6) == std::vector<uint32_t>({0, 1, 3, 5, 4, 2}));
    // Every length: each position once, every step (the last back to the
    // first included) one link.
    for (uint32_t n = 2; n <= 12; n += 2) {
        std::fill(ring, ring + 12, 99u);
        ina_grid_ring(n, ring);
        std::vector<uint32_t> sorted(ring, ring + n);
        std::sort(sorted.begin(), sorted.end());
        for (uint32_t k = 0; k < n; ++k) {
            ck_assert_uint_eq(sorted[k], k);
            ck_assert_msg(linked(ring[k], ring[(k + 1) % n]), "n %u: %u to %u is no link", n,
                          ring[k], ring[(k + 1) % n]);
        }
    }
    // No such ring: nothing written.
    std::fill(ring, ring + 12, 99u);
    ina_grid_ring(3, ring);
    ina_grid_ring(0, ring);
    ina_grid_ring(4, nullptr);
    ck_assert_uint_eq(ring[0], 99);
}
END_TEST

START_TEST(test_plan)
{
    Topology t;
    std::string err;
    ck_assert(Topology::parse(kTwoLeaves, t, err));
    // Leaves in the order of their first rank: leaf1 (rank 0) before leaf0;
    // both under the spine, the top, one level up.
    Plan p;
    ck_assert_msg(ina::topo::plan(t, {"node05", "node01", "gpu1", "node01", "node04"}, p, err),
                  "%s", err.c_str());
    ck_assert_uint_eq(p.levels, 1);
    ck_assert_uint_eq(p.agents.size(), 1);
    ck_assert_uint_eq(p.leaves().size(), 2);
    ck_assert_str_eq(t.agents()[p.leaves()[0]].name.c_str(), "leaf1");
    ck_assert_str_eq(t.agents()[p.leaves()[1]].name.c_str(), "leaf0");
    ck_assert_str_eq(t.agents()[p.top].name.c_str(), "spine");
    ck_assert(p.leaf_of_rank() == std::vector<uint32_t>({0, 1, 0, 1, 1}));
    ck_assert(p.members[0] == std::vector<uint32_t>({0, 2}));
    ck_assert(p.members[1] == std::vector<uint32_t>({1, 3, 4}));
    // One leaf: no levels, the leaf is the top.
    ck_assert(ina::topo::plan(t, {"node03", "node03"}, p, err));
    ck_assert_uint_eq(p.levels, 0);
    ck_assert_uint_eq(p.leaves().size(), 1);
    ck_assert_str_eq(t.agents()[p.top].name.c_str(), "leaf0");
    ck_assert(p.leaf_of_rank() == std::vector<uint32_t>({0, 0}));
    // Errors: an unmapped host, agents of two trees in one communicator.
    ck_assert(!ina::topo::plan(t, {"node01", "elsewhere"}, p, err));
    ck_assert_str_eq(err.c_str(),
                     "host \"elsewhere\" of rank 1 is in no hosts line of the topology");
    ck_assert(!ina::topo::plan(t, {"node01", "login1"}, p, err));
    ck_assert_str_eq(err.c_str(), "rank 1 talks to agent \"lone\", in another tree than rank "
                                  "0's (root \"lone\" vs \"spine\")");
    // Every leaf as deep as the others below the top: a rank on the top
    // itself beside one below it is refused, whichever comes first.
    Topology chain;
    ck_assert(Topology::parse("agent s h:1\nagent a h:2 parent s\nagent b h:3 parent a\n"
                              "hosts s n0\nhosts a n1\nhosts b n2\n",
                              chain, err));
    ck_assert(!ina::topo::plan(chain, {"n1", "n0"}, p, err));
    ck_assert_str_eq(err.c_str(), "rank 1 talks to agent \"s\", the top \"s\" itself, while "
                                  "rank 0's is 1 level below: every leaf of a communicator "
                                  "must be as deep as the others");
    ck_assert(!ina::topo::plan(chain, {"n1", "n2"}, p, err));
    ck_assert_str_eq(err.c_str(), "rank 1 talks to agent \"b\", 1 level below the top \"a\", "
                                  "while rank 0's is the top itself: every leaf of a "
                                  "communicator must be as deep as the others");
    ck_assert(ina::topo::plan(chain, {"n2", "n2"}, p, err)); // one leaf: any depth
    ck_assert_uint_eq(p.levels, 0);
    ck_assert_str_eq(chain.agents()[p.top].name.c_str(), "b");
}
END_TEST

namespace {

// core; spines s0, s1; leaves l0, l1 under s0 and l2, l3 under s1; hosts a
// to h, two per leaf; and a stray leaf x right under core.
const char *kThreeLevels = "agent core c:1\n"
                           "agent s0 s:1 parent core\n"
                           "agent s1 s:2 parent core\n"
                           "agent l0 l:0 parent s0\n"
                           "agent l1 l:1 parent s0\n"
                           "agent l2 l:2 parent s1\n"
                           "agent l3 l:3 parent s1\n"
                           "agent x l:9 parent core\n"
                           "hosts l0 a,b\nhosts l1 c,d\nhosts l2 e,f\nhosts l3 g,h\n"
                           "hosts x x1\n";

// Four levels below the file's root t: t0; u0, u1; v0 under u0, v1 and v2
// under u1; leaves w0 to w3 (w2 and w3 both under v2), host nK on wK.
const char *kFourLevels = "agent t h:1\nagent t0 h:1 parent t\n"
                          "agent u0 h:1 parent t0\nagent u1 h:1 parent t0\n"
                          "agent v0 h:1 parent u0\nagent v1 h:1 parent u1\n"
                          "agent v2 h:1 parent u1\n"
                          "agent w0 h:1 parent v0\nagent w1 h:1 parent v1\n"
                          "agent w2 h:1 parent v2\nagent w3 h:1 parent v2\n"
                          "hosts w0 n0\nhosts w1 n1\nhosts w2 n2\nhosts w3 n3\n";

Plan plan_of(const Topology &t, const std::vector<std::string> &hosts)
{
    Plan p;
    std::string err;
    ck_assert_msg(ina::topo::plan(t, hosts, p, err), "%s", err.c_str());
    return p;
}

std::vector<std::string> names_of(const Topology &t, const std::vector<int> &agents)
{
    std::vector<std::string> out;
    for (int a : agents) {
        out.push_back(t.agents()[a].name);
    }
    return out;
}

// The C API's view of a plan: levels, group_of_rank level-major.
struct CPlan {
    uint32_t levels = 0;
    std::vector<uint32_t> groups;
    uint32_t n = 0;

    // Rank r's place; the entries past `levels` must stay untouched.
    std::vector<ina_proto_tree_level_t> place(uint32_t r) const
    {
        std::vector<ina_proto_tree_level_t> out(INA_TOPOLOGY_MAX_LEVELS,
                                                ina_proto_tree_level_t{99, 99});
        ina_topology_place(groups.data(), n, levels, r, out.data());
        ck_assert(std::all_of(out.begin() + levels, out.end(), [](ina_proto_tree_level_t l) {
            return l.groups == 99 && l.group == 99;
        }));
        out.resize(levels);
        return out;
    }
};

// A place as {groups, group} pairs, flattened, for one comparison.
std::vector<uint32_t> flat(const std::vector<ina_proto_tree_level_t> &place)
{
    std::vector<uint32_t> out;
    for (const ina_proto_tree_level_t &l : place) {
        out.push_back(l.groups);
        out.push_back(l.group);
    }
    return out;
}

CPlan c_plan(const ina_topology_t *t, const std::vector<const char *> &hosts)
{
    CPlan c;
    c.n = static_cast<uint32_t>(hosts.size());
    c.groups.assign(hosts.size() * INA_TOPOLOGY_MAX_LEVELS, 0xdead);
    char err[256] = "";
    ck_assert_msg(ina_topology_plan(t, hosts.data(), c.n, &c.levels, c.groups.data(), err,
                                    sizeof(err)) == INA_OK,
                  "%s", err);
    ck_assert_uint_le(c.levels, INA_TOPOLOGY_MAX_LEVELS);
    // Exactly max(levels, 1) levels written, nothing beyond.
    const size_t used = hosts.size() * std::max<uint32_t>(c.levels, 1);
    ck_assert(std::all_of(c.groups.begin() + used, c.groups.end(),
                          [](uint32_t g) { return g == 0xdead; }));
    c.groups.resize(used);
    return c;
}

ina_topology_t *load_text(const std::string &text)
{
    char path[] = "/tmp/ina-topology-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
    ina_topology_t *t = nullptr;
    char err[256] = "";
    const ina_status_t st = ina_topology_load(path, &t, err, sizeof(err));
    unlink(path);
    ck_assert_msg(st == INA_OK, "%s", err);
    return t;
}

// A tree whose leaves l0 and l1 hang `depth` levels below the root "t",
// each at the end of its own chain of agents; host n0 on l0, n1 on l1.
std::string two_chains(size_t depth)
{
    std::string text = "agent t h:1\n";
    for (int side = 0; side < 2; ++side) {
        std::string parent = "t";
        for (size_t d = 1; d <= depth; ++d) {
            const std::string name = d == depth ? "l" + std::to_string(side)
                                                : "c" + std::to_string(side) + "_" +
                                                      std::to_string(d);
            text += "agent " + name + " h:1 parent " + parent + "\n";
            parent = name;
        }
        text += "hosts l" + std::to_string(side) + " n" + std::to_string(side) + "\n";
    }
    return text;
}

} // namespace

// Trees deeper than leaf and top: the levels, each level's agents numbered
// by first rank, and the errors.
START_TEST(test_plan_deep)
{
    Topology t;
    std::string err;
    ck_assert_msg(Topology::parse(kThreeLevels, t, err), "%s", err.c_str());

    // All eight ranks: leaf, spine, core.
    Plan p = plan_of(t, {"a", "b", "c", "d", "e", "f", "g", "h"});
    ck_assert_uint_eq(p.levels, 2);
    ck_assert_str_eq(t.agents()[p.top].name.c_str(), "core");
    ck_assert_uint_eq(p.agents.size(), 2);
    ck_assert(names_of(t, p.agents[0]) == std::vector<std::string>({"l0", "l1", "l2", "l3"}));
    ck_assert(names_of(t, p.agents[1]) == std::vector<std::string>({"s0", "s1"}));
    ck_assert(p.group_of_rank[0] == std::vector<uint32_t>({0, 0, 1, 1, 2, 2, 3, 3}));
    ck_assert(p.group_of_rank[1] == std::vector<uint32_t>({0, 0, 0, 0, 1, 1, 1, 1}));

    // Only under s0: s0 is the top, one level.
    p = plan_of(t, {"d", "a", "c"});
    ck_assert_uint_eq(p.levels, 1);
    ck_assert_str_eq(t.agents()[p.top].name.c_str(), "s0");
    ck_assert(names_of(t, p.leaves()) == std::vector<std::string>({"l1", "l0"}));
    ck_assert(p.leaf_of_rank() == std::vector<uint32_t>({0, 1, 0}));

    // Interleaved: every level numbered by first rank, not by name.
    p = plan_of(t, {"g", "a", "c", "h", "e", "b"});
    ck_assert_uint_eq(p.levels, 2);
    ck_assert(names_of(t, p.agents[0]) == std::vector<std::string>({"l3", "l0", "l1", "l2"}));
    ck_assert(names_of(t, p.agents[1]) == std::vector<std::string>({"s1", "s0"}));
    ck_assert(p.group_of_rank[0] == std::vector<uint32_t>({0, 1, 2, 0, 3, 1}));
    ck_assert(p.group_of_rank[1] == std::vector<uint32_t>({0, 1, 1, 0, 0, 1}));
    ck_assert(p.members[1] == std::vector<uint32_t>({1, 5}));

    // One leaf under all that: no levels.
    p = plan_of(t, {"f", "e", "f"});
    ck_assert_uint_eq(p.levels, 0);
    ck_assert_str_eq(t.agents()[p.top].name.c_str(), "l2");

    // Unequal depths: x is a child of core, l2 and l3 grandchildren.
    ck_assert(!ina::topo::plan(t, {"e", "a", "x1"}, p, err));
    ck_assert_str_eq(err.c_str(), "rank 2 talks to agent \"x\", 1 level below the top \"core\", "
                                  "while rank 0's is 2 levels below: every leaf of a "
                                  "communicator must be as deep as the others");
    ck_assert(!ina::topo::plan(t, {"x1", "x1", "h"}, p, err));
    ck_assert_str_eq(err.c_str(), "rank 2 talks to agent \"l3\", 2 levels below the top "
                                  "\"core\", while rank 0's is 1 level below: every leaf of a "
                                  "communicator must be as deep as the others");
    // Another tree, an unmapped host.
    Topology two;
    ck_assert(Topology::parse(std::string(kThreeLevels) + "agent other o:1\nhosts other z\n",
                              two, err));
    ck_assert(!ina::topo::plan(two, {"a", "h", "z"}, p, err));
    ck_assert_str_eq(err.c_str(), "rank 2 talks to agent \"other\", in another tree than rank "
                                  "0's (root \"other\" vs \"core\")");
    ck_assert(!ina::topo::plan(t, {"a", "h", "i"}, p, err));
    ck_assert_str_eq(err.c_str(), "host \"i\" of rank 2 is in no hosts line of the topology");

    // Depth 4: four agents from a leaf to the top, which is not the file's
    // root (t0 hangs under t); an agent with one child still is a level.
    Topology four;
    ck_assert(Topology::parse(kFourLevels, four, err));
    p = plan_of(four, {"n3", "n0", "n2", "n1"});
    ck_assert_uint_eq(p.levels, 3);
    ck_assert_str_eq(four.agents()[p.top].name.c_str(), "t0");
    ck_assert(names_of(four, p.agents[0]) ==
              std::vector<std::string>({"w3", "w0", "w2", "w1"}));
    ck_assert(names_of(four, p.agents[1]) == std::vector<std::string>({"v2", "v0", "v1"}));
    ck_assert(names_of(four, p.agents[2]) == std::vector<std::string>({"u1", "u0"}));
    ck_assert(p.group_of_rank[1] == std::vector<uint32_t>({0, 1, 0, 2}));
    ck_assert(p.group_of_rank[2] == std::vector<uint32_t>({0, 1, 0, 0}));

    // The limit: INA_TOPOLOGY_MAX_LEVELS levels above the leaves, no more.
    Topology deep;
    ck_assert(Topology::parse(two_chains(INA_TOPOLOGY_MAX_LEVELS), deep, err));
    p = plan_of(deep, {"n0", "n1"});
    ck_assert_uint_eq(p.levels, INA_TOPOLOGY_MAX_LEVELS);
    ck_assert_uint_eq(p.group_of_rank.size(), INA_TOPOLOGY_MAX_LEVELS);
    ck_assert(Topology::parse(two_chains(INA_TOPOLOGY_MAX_LEVELS + 1), deep, err));
    ck_assert(!ina::topo::plan(deep, {"n0", "n1"}, p, err));
    const std::string want = "rank 0 talks to agent \"l0\", " +
                             std::to_string(INA_TOPOLOGY_MAX_LEVELS + 1) +
                             " levels below the top \"t\": the agents take at most " +
                             std::to_string(INA_TOPOLOGY_MAX_LEVELS) +
                             " levels above a communicator's leaves";
    ck_assert_str_eq(err.c_str(), want.c_str());
}
END_TEST

// The C API over the same trees: group_of_rank level by level, and each
// rank's place (how many agents under its parent, which one is its own).
START_TEST(test_c_plan_and_place)
{
    ina_topology_t *t = load_text(kThreeLevels);

    CPlan c = c_plan(t, {"a", "b", "c", "d", "e", "f", "g", "h"});
    ck_assert_uint_eq(c.levels, 2);
    ck_assert(c.groups == std::vector<uint32_t>({0, 0, 1, 1, 2, 2, 3, 3,   // leaves
                                                 0, 0, 0, 0, 1, 1, 1, 1})); // spines
    // {groups, group} at the leaf level, then at the spine level.
    ck_assert(flat(c.place(0)) == std::vector<uint32_t>({2, 0, 2, 0}));
    ck_assert(flat(c.place(3)) == std::vector<uint32_t>({2, 1, 2, 0}));
    ck_assert(flat(c.place(4)) == std::vector<uint32_t>({2, 0, 2, 1}));
    ck_assert(flat(c.place(7)) == std::vector<uint32_t>({2, 1, 2, 1})); // on l3

    // One leaf under each spine: each alone under its parent.
    c = c_plan(t, {"a", "e", "b"});
    ck_assert_uint_eq(c.levels, 2);
    ck_assert(flat(c.place(0)) == std::vector<uint32_t>({1, 0, 2, 0}));
    ck_assert(flat(c.place(1)) == std::vector<uint32_t>({1, 0, 2, 1}));
    ck_assert(flat(c.place(2)) == flat(c.place(0)));

    // Interleaved (g, a, c, h, e, b): leaves l3, l0, l1, l2 and spines s1,
    // s0 by first rank; under s1, l3 (rank 0) comes before l2 (rank 4).
    c = c_plan(t, {"g", "a", "c", "h", "e", "b"});
    ck_assert(flat(c.place(0)) == std::vector<uint32_t>({2, 0, 2, 0})); // l3 under s1
    ck_assert(flat(c.place(4)) == std::vector<uint32_t>({2, 1, 2, 0})); // l2 under s1
    ck_assert(flat(c.place(1)) == std::vector<uint32_t>({2, 0, 2, 1})); // l0 under s0
    ck_assert(flat(c.place(2)) == std::vector<uint32_t>({2, 1, 2, 1})); // l1 under s0
    ck_assert(flat(c.place(5)) == flat(c.place(1)));

    // Under s0 only: one level, the top is s0.
    c = c_plan(t, {"c", "a"});
    ck_assert_uint_eq(c.levels, 1);
    ck_assert(c.groups == std::vector<uint32_t>({0, 1}));
    ck_assert(flat(c.place(1)) == std::vector<uint32_t>({2, 1}));

    // One leaf: levels 0, level 0 all zeros, nothing placed.
    c = c_plan(t, {"b", "a"});
    ck_assert_uint_eq(c.levels, 0);
    ck_assert(c.groups == std::vector<uint32_t>({0, 0}));
    ck_assert(c.place(1).empty());

    // Errors come with their reason; the group array may be NULL.
    const char *uneven[] = {"a", "x1"};
    uint32_t levels = 0;
    char err[256] = "";
    ck_assert_int_eq(ina_topology_plan(t, uneven, 2, &levels, nullptr, err, sizeof(err)),
                     INA_ERR_INVALID);
    ck_assert_msg(std::strstr(err, "must be as deep as the others") != nullptr, "%s", err);
    const char *all[] = {"h", "a"};
    ck_assert_int_eq(ina_topology_plan(t, all, 2, &levels, nullptr, err, sizeof(err)), INA_OK);
    ck_assert_uint_eq(levels, 2);
    ina_topology_free(t);

    // Depth 4 at the C API (ranks on w3, w0, w2, w1): three levels above
    // the leaves; siblings counted under each parent, not across the level.
    ina_topology_t *four = load_text(kFourLevels);
    c = c_plan(four, {"n3", "n0", "n2", "n1"});
    ck_assert_uint_eq(c.levels, 3);
    ck_assert(flat(c.place(0)) == std::vector<uint32_t>({2, 0, 2, 0, 2, 0})); // w3, v2, u1
    ck_assert(flat(c.place(1)) == std::vector<uint32_t>({1, 0, 1, 0, 2, 1})); // w0, v0, u0
    ck_assert(flat(c.place(2)) == std::vector<uint32_t>({2, 1, 2, 0, 2, 0})); // w2, v2, u1
    ck_assert(flat(c.place(3)) == std::vector<uint32_t>({1, 0, 2, 1, 2, 0})); // w1, v1, u1
    ina_topology_free(four);
    // Two single chains: one agent per parent until the top.
    ina_topology_t *chains = load_text(two_chains(3));
    c = c_plan(chains, {"n1", "n0"});
    ck_assert_uint_eq(c.levels, 3);
    ck_assert(flat(c.place(0)) == std::vector<uint32_t>({1, 0, 1, 0, 2, 0}));
    ck_assert(flat(c.place(1)) == std::vector<uint32_t>({1, 0, 1, 0, 2, 1}));
    ina_topology_free(chains);
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
    // Two leaves under the spine: one level, the leaves numbered as before.
    uint32_t levels = 0, leaf_of[5] = {};
    ck_assert_int_eq(ina_topology_plan(t, hosts, 5, &levels, leaf_of, err, sizeof(err)), INA_OK);
    ck_assert_uint_eq(levels, 1);
    ck_assert_uint_eq(leaf_of[0], 0);
    ck_assert_uint_eq(leaf_of[1], 1);
    ck_assert_uint_eq(leaf_of[2], 0);
    ck_assert_uint_eq(leaf_of[3], 1);
    ck_assert_uint_eq(leaf_of[4], 1);
    ina_proto_tree_level_t place = {};
    ina_topology_place(leaf_of, 5, levels, 4, &place);
    ck_assert_uint_eq(place.groups, 2);
    ck_assert_uint_eq(place.group, 1);
    const char *bad[] = {"node01", "elsewhere"};
    ck_assert_int_eq(ina_topology_plan(t, bad, 2, &levels, nullptr, err, sizeof(err)),
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
                                test_plan, test_plan_deep, test_c_plan_and_place, test_job_key,
                                test_siphash_and_seal, test_c_api, test_grid_parse,
                                test_grid_parse_errors, test_grid_map, test_grid_ring});
}

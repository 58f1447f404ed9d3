// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The cluster's agents and which hosts each serves, from one file written
// once for the cluster (docs/HIERARCHY.md, "Which agent a rank talks to").
// Pure: parsing and mapping only, no I/O beyond the text given, so that
// every rank derives the same plan from the same file and the same host
// names, without communicating.
//
// File format, one statement per line, '#' starts a comment:
//   agent NAME HOST:PORT [parent NAME]   an ina-switchd; its parent, if any
//   hosts NAME HOSTLIST                  the hosts whose ranks talk to agent NAME
//   square GX GY HOSTA HOSTB HOSTC HOSTD the hyper-square's group at (GX, GY)
// HOSTLIST is Slurm's compact form: comma-separated names, each with at most
// one bracket range list, e.g. "node[01-04,09],login1" (zero padding kept).
// Agents may be declared in any order; parents must form trees (no cycles);
// a host belongs to one agent at most.
// The squares describe the hosts' own links (the hyper-square, ina_client.h;
// docs/HIERARCHY.md, "The host side"): one line per group of four, in any
// order, their positions filling a rectangle of groups from (0, 0); a host
// is one node of the grid at most. Agents and grid are independent: a host
// may be in both, either or neither.
#ifndef INA_CLIENT_TOPOLOGY_H
#define INA_CLIENT_TOPOLOGY_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ina::topo {

struct Agent {
    std::string name;
    std::string address;  // HOST:PORT as written
    int parent = -1;      // index into Topology::agents(), -1 for a root
    int line = 0;         // where it was declared (for messages)
};

// The hyper-square as a grid of nodes: cols() x rows(), both even. Group
// (gx, gy) is the 2x2 square of nodes at columns 2gx, 2gx + 1 and rows 2gy,
// 2gy + 1: A top left, B top right, C bottom left, D bottom right.
struct Grid {
    uint32_t groups_x = 0;                        // groups across (0: the file describes no grid)
    uint32_t groups_y = 0;                        // groups down
    std::vector<std::string> host_of_node;        // [row * cols() + column]
    std::map<std::string, uint32_t> node_of_host; // the inverse

    uint32_t cols() const { return 2 * groups_x; }
    uint32_t rows() const { return 2 * groups_y; }
    bool empty() const { return groups_x == 0; }
};

class Topology {
public:
    // Parse the file's text. False with `err` = "line N: why" on the first
    // error; `out` is then unspecified.
    static bool parse(const std::string &text, Topology &out, std::string &err);

    const std::vector<Agent> &agents() const { return agents_; }
    // Index of the agent serving `host`, -1 if the file does not map it.
    int agent_of(const std::string &host) const;
    // The agents from `agent` up to its root, `agent` first.
    std::vector<int> path_to_root(int agent) const;
    int root_of(int agent) const { return path_to_root(agent).back(); }
    // The squares' grid; empty() when the file has no square statement.
    const Grid &grid() const { return grid_; }

private:
    std::vector<Agent> agents_;
    Grid grid_;
    std::map<std::string, int> by_name_;
    std::map<std::string, int> host_agent_;
};

// Expand a HOSTLIST. False with `err` on a malformed one (unbalanced or
// nested brackets, a reversed or non-numeric range, an empty name).
bool expand_hostlist(const std::string &list, std::vector<std::string> &out, std::string &err);

// The words of one line of a file in this format ('#' starts a comment);
// empty for a blank or comment line.
std::vector<std::string> line_words(const std::string &line);

// How one communicator maps onto the agents: its ranks' hosts (index =
// rank) looked up in the topology. The leaves are the agents the ranks
// talk to; the top is the agent nearest the leaves above all of them (their
// lowest common ancestor: not the file's root when every leaf lies under
// one spine). A leaf's job goes up to its parent, whose job goes up to its
// own, and so on to the top, so every leaf must be the same number of
// steps (`levels`) below the top. At each level the agents are numbered in
// the order of their first rank, so every rank numbers them alike.
struct Plan {
    uint32_t levels = 0; // steps from every leaf up to the top (0: one leaf)
    int top = -1;        // agent index (the one leaf when levels is 0)
    // Per level l < max(levels, 1), l = 0 the leaves, l = levels the top
    // (not kept: it is one agent):
    std::vector<std::vector<int>> agents;             // [l][group]: agent index
    std::vector<std::vector<uint32_t>> group_of_rank; // [l][rank]: index into agents[l]
    std::vector<std::vector<uint32_t>> members;       // ranks of each leaf, ascending

    const std::vector<int> &leaves() const { return agents.front(); }
    const std::vector<uint32_t> &leaf_of_rank() const { return group_of_rank.front(); }
};

// False with `err` when a host is not in the topology, the ranks' agents
// lie in different trees or at different depths below the top (a rank
// talking to the top itself while others talk to agents below it is one),
// or the leaves are more than INA_TOPOLOGY_MAX_LEVELS (ina_client.h) below
// the top.
bool plan(const Topology &topo, const std::vector<std::string> &rank_hosts, Plan &out,
          std::string &err);

// Where a communicator's ranks sit on the grid (ina_topology_grid): the
// ranks' hosts must be exactly the nodes of a rectangle of whole groups.
struct GridMap {
    uint32_t cols = 0, rows = 0;        // nodes of the rectangle; 0 x 0: no grid
    uint32_t group_x = 0, group_y = 0;  // its corner, in groups of the file's grid
    std::vector<uint32_t> node_of_rank; // row * cols + column, from the corner
    // With no grid: every host is on it, but they cover part of a group or
    // leave a group of their rectangle empty.
    bool partial = false;
};

// False with `why` (the reason, for the caller to fall back and count) when
// the file has no grid, a host is not on it, the ranks sit on one node, or
// their nodes are not exactly a rectangle of whole groups.
bool grid_map(const Grid &grid, const std::vector<std::string> &rank_hosts, GridMap &out,
              std::string &why);

} // namespace ina::topo

#endif

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Jobs side by side on the hyper-square (docs/HIERARCHY.md, "The host
// side"): each job on a rectangle of whole groups of its own, so that the
// rings its host algorithms run along rows and columns (ina_grid_ring) use
// links no other job's rings use. Pure: the grid's size, the jobs placed
// and the request in, a rectangle out; the state file's text in and out;
// no I/O (ina-switchctl place does that).
//
// Why a rectangle of whole groups has rings of its own: along a row of
// nodes, positions 2g and 2g + 1 are one group's A-B (or C-D) link, and
// each node links to the same letter of the next group, two positions on.
// The ring goes out along the odd positions and back along the even ones,
// turning inside the first and the last group (0-1 and n-2 - n-1): every
// step is a link between two nodes of the rectangle, and none wraps around
// the grid. Columns alike with A-C and B-D. Two rectangles that share no
// group therefore share no ring link. A rectangle cut through a group
// would need the link from a B to the next group's A, which does not
// exist: hence whole groups.
#ifndef INA_CLIENT_GRID_PLACE_H
#define INA_CLIENT_GRID_PLACE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ina_topology.h"

namespace ina::grid {

// Groups gx .. gx + w - 1 across, gy .. gy + h - 1 down.
struct Rect {
    uint32_t gx = 0, gy = 0, w = 0, h = 0;

    uint32_t groups() const { return w * h; }
    bool overlaps(const Rect &o) const
    {
        return gx < o.gx + o.w && o.gx < gx + w && gy < o.gy + o.h && o.gy < gy + h;
    }
    bool operator==(const Rect &o) const
    {
        return gx == o.gx && gy == o.gy && w == o.w && h == o.h;
    }
};

struct Job {
    std::string name;
    Rect rect;
    // How heavily the job leans on its neighbours: the links between its
    // groups and the groups around it carry none of its rings, but its
    // other traffic (point to point, routes that detour) may cross them.
    // 0: none, the job only takes its groups.
    double weight = 0;
};

// Whole groups for `nodes` nodes (rounded up); 0 for none.
uint32_t groups_for_nodes(uint32_t nodes);

// A rectangle of groups_for_nodes(nodes) groups of the groups_x x groups_y
// grid that no job of `load` overlaps; std::nullopt when there is none (or
// nodes is 0). Among the free ones: the squarest shape (a 2x3 before a
// 1x6: a row ring plus a column ring is shortest for a square), then the least loaded (the weights of the
// placed jobs times the length of the border each shares with it), then
// the lowest position (row, then column, of its corner), then the wider.
std::optional<Rect> place(uint32_t groups_x, uint32_t groups_y, const std::vector<Job> &load,
                          uint32_t nodes);

// The load a rectangle would bear (place's second criterion).
double border_load(const Rect &r, const std::vector<Job> &load);

// The state file of ina-switchctl place: one job a line, "NAME GX GY W H
// [WEIGHT]", '#' starts a comment. False with `err` = "line N: why" on a
// malformed line, a name twice, a rectangle off the groups_x x groups_y
// grid or overlapping another.
bool parse_state(const std::string &text, uint32_t groups_x, uint32_t groups_y,
                 std::vector<Job> &jobs, std::string &err);
// What parse_state reads back as `jobs`.
std::string format_state(const std::vector<Job> &jobs);
// A name the state file can hold: one word, no '#'.
bool valid_job_name(const std::string &name);

// The hosts of a rectangle in the order of ina_topology_grid's numbering
// (row by row of nodes from its corner): rank r of a job started on them in
// this order, one rank a node, sits on node r.
std::vector<std::string> hosts_of(const topo::Grid &grid, const Rect &r);

// A Slurm host list that expand_hostlist (ina_topology.h) turns back into
// `hosts`, in sorted order: names that end in digits share brackets with
// those of the same prefix and as many digits ("n[01-04,09]"); others as
// they are.
std::string compress_hostlist(const std::vector<std::string> &hosts);

} // namespace ina::grid

#endif

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Topology file parsing and the per-communicator plan (ina_topology.h).
#include "ina_topology.h"
#include "ina_client.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "ina_ucx.h"

namespace ina::topo {

namespace {

// More hosts than any cluster has: a typo like "n[0-99999999]" is an error,
// not an allocation of gigabytes.
constexpr size_t kMaxHosts = 1u << 20;

bool all_digits(const std::string &s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
        return std::isdigit(c) != 0;
    });
}

// One item "prefix[ranges]suffix" or a plain name.
bool expand_item(const std::string &item, std::vector<std::string> &out, std::string &err)
{
    const size_t open = item.find('[');
    if (open == std::string::npos) {
        if (item.find(']') != std::string::npos) {
            err = "']' without '[' in \"" + item + "\"";
            return false;
        }
        out.push_back(item);
        return true;
    }
    const size_t close = item.find(']', open);
    if (close == std::string::npos || item.find('[', open + 1) < close ||
        item.find_first_of("[]", close + 1) != std::string::npos) {
        err = "unbalanced or nested brackets in \"" + item + "\"";
        return false;
    }
    const std::string prefix = item.substr(0, open);
    const std::string suffix = item.substr(close + 1);
    std::stringstream ranges(item.substr(open + 1, close - open - 1));
    std::string r;
    bool any = false;
    while (std::getline(ranges, r, ',')) {
        const size_t dash = r.find('-');
        const std::string lo_s = r.substr(0, dash);
        const std::string hi_s = dash == std::string::npos ? lo_s : r.substr(dash + 1);
        if (!all_digits(lo_s) || !all_digits(hi_s) || lo_s.size() > 9 || hi_s.size() > 9) {
            err = "range \"" + r + "\" in \"" + item + "\" is not N or N-M";
            return false;
        }
        const unsigned long lo = std::stoul(lo_s);
        const unsigned long hi = std::stoul(hi_s);
        if (hi < lo) {
            err = "range \"" + r + "\" in \"" + item + "\" runs backwards";
            return false;
        }
        if (out.size() + (hi - lo + 1) > kMaxHosts) {
            err = "more than " + std::to_string(kMaxHosts) + " hosts";
            return false;
        }
        for (unsigned long v = lo; v <= hi; ++v) {
            std::string num = std::to_string(v);
            if (num.size() < lo_s.size()) { // the lower bound's width: zero padding
                num.insert(0, lo_s.size() - num.size(), '0');
            }
            out.push_back(prefix + num + suffix);
        }
        any = true;
    }
    if (!any) {
        err = "empty range list in \"" + item + "\"";
        return false;
    }
    return true;
}

} // namespace

bool expand_hostlist(const std::string &list, std::vector<std::string> &out, std::string &err)
{
    out.clear();
    std::string item;
    int depth = 0;
    const auto flush = [&]() {
        if (item.empty()) {
            err = "empty host name in \"" + list + "\"";
            return false;
        }
        bool ok = expand_item(item, out, err);
        item.clear();
        return ok;
    };
    for (char c : list) {
        if (c == ',' && depth == 0) {
            if (!flush()) {
                return false;
            }
            continue;
        }
        depth += c == '[' ? 1 : c == ']' ? -1 : 0;
        if (depth < 0 || depth > 1) {
            err = "unbalanced or nested brackets in \"" + list + "\"";
            return false;
        }
        item += c;
    }
    return flush();
}

std::vector<std::string> line_words(const std::string &line)
{
    std::istringstream words(line.substr(0, line.find('#')));
    std::vector<std::string> w;
    for (std::string t; words >> t;) {
        w.push_back(t);
    }
    return w;
}

bool Topology::parse(const std::string &text, Topology &out, std::string &err)
{
    out = Topology();
    struct HostsLine {
        int line;
        std::string agent;
        std::string list;
    };
    std::vector<HostsLine> hosts;
    std::vector<std::string> parent_names;
    // The squares by position, with the line that gave each.
    std::map<std::pair<uint32_t, uint32_t>, int> square_line;
    struct Square {
        uint32_t gx, gy;
        std::array<std::string, 4> host; // A, B, C, D
    };
    std::vector<Square> squares;
    std::map<std::string, int> grid_host_line;
    std::istringstream in(text);
    std::string raw;
    int lineno = 0;
    const auto fail = [&](int line, const std::string &why) {
        err = "line " + std::to_string(line) + ": " + why;
        return false;
    };
    while (std::getline(in, raw)) {
        ++lineno;
        const std::vector<std::string> w = line_words(raw);
        if (w.empty()) {
            continue;
        }
        if (w[0] == "agent") {
            if (w.size() != 3 && !(w.size() == 5 && w[3] == "parent")) {
                return fail(lineno, "want \"agent NAME HOST:PORT [parent NAME]\"");
            }
            std::string host, port;
            if (!ina::ucx::split_host_port(w[2], host, port) || !all_digits(port)) {
                return fail(lineno, "\"" + w[2] + "\" is not HOST:PORT");
            }
            if (!out.by_name_.emplace(w[1], static_cast<int>(out.agents_.size())).second) {
                return fail(lineno, "agent \"" + w[1] + "\" declared twice");
            }
            out.agents_.push_back(Agent{w[1], w[2], -1, lineno});
            parent_names.push_back(w.size() == 5 ? w[4] : std::string());
        } else if (w[0] == "hosts") {
            if (w.size() != 3) {
                return fail(lineno, "want \"hosts NAME HOSTLIST\" (no spaces in the list)");
            }
            hosts.push_back(HostsLine{lineno, w[1], w[2]});
        } else if (w[0] == "square") {
            if (w.size() != 7) {
                return fail(lineno, "want \"square GX GY HOSTA HOSTB HOSTC HOSTD\"");
            }
            // Five digits: more groups than any machine has, and the
            // rectangle check below stays cheap whatever is written.
            for (int i = 1; i <= 2; ++i) {
                if (!all_digits(w[i]) || w[i].size() > 5) {
                    return fail(lineno, "\"" + w[i] + "\" is not a group position (0 to 99999)");
                }
            }
            Square sq{static_cast<uint32_t>(std::stoul(w[1])),
                      static_cast<uint32_t>(std::stoul(w[2])),
                      {w[3], w[4], w[5], w[6]}};
            const std::string where =
                "(" + std::to_string(sq.gx) + ", " + std::to_string(sq.gy) + ")";
            auto [at, fresh] = square_line.emplace(std::make_pair(sq.gx, sq.gy), lineno);
            if (!fresh) {
                return fail(lineno, "group " + where + " already given on line " +
                                        std::to_string(at->second));
            }
            for (const std::string &h : sq.host) {
                // One node is one host: a list here would be a typo.
                if (h.find_first_of("[],") != std::string::npos) {
                    return fail(lineno, "\"" + h + "\" is not a host name (one host per node)");
                }
                auto [seen, first] = grid_host_line.emplace(h, lineno);
                if (!first) {
                    return fail(lineno, "host \"" + h + "\" is already a node of the grid (line " +
                                            std::to_string(seen->second) + ")");
                }
            }
            squares.push_back(std::move(sq));
        } else {
            return fail(lineno, "unknown statement \"" + w[0] + "\" (agent or hosts)");
        }
    }
    if (!squares.empty()) {
        // The positions must fill the rectangle they span from (0, 0): as
        // many squares as its groups, else the first position missing (in
        // row order; found within squares.size() + 1 steps, however far
        // the largest position is).
        uint32_t gx_max = 0, gy_max = 0;
        for (const Square &sq : squares) {
            gx_max = std::max(gx_max, sq.gx);
            gy_max = std::max(gy_max, sq.gy);
        }
        const uint64_t across = uint64_t{gx_max} + 1, down = uint64_t{gy_max} + 1;
        if (across * down != squares.size()) {
            uint64_t hole = 0;
            while (square_line.count({static_cast<uint32_t>(hole % across),
                                      static_cast<uint32_t>(hole / across)}) != 0) {
                ++hole;
            }
            // Named: the square farthest out (first in the file on a tie),
            // one of those that make the rectangle reach past the hole.
            const Square *far = &squares.front();
            for (const Square &sq : squares) {
                if (sq.gx + sq.gy > far->gx + far->gy) {
                    far = &sq;
                }
            }
            return fail(square_line.at({far->gx, far->gy}),
                        "no square at (" + std::to_string(hole % across) + ", " +
                            std::to_string(hole / across) + "), inside the " +
                            std::to_string(across) + "x" + std::to_string(down) +
                            " groups the squares span (this one at (" + std::to_string(far->gx) +
                            ", " + std::to_string(far->gy) +
                            ") among them): the squares must fill a rectangle from (0, 0)");
        }
        Grid &g = out.grid_;
        g.groups_x = static_cast<uint32_t>(across);
        g.groups_y = static_cast<uint32_t>(down);
        g.host_of_node.resize(size_t{g.cols()} * g.rows());
        for (Square &sq : squares) {
            for (uint32_t letter = 0; letter < 4; ++letter) {
                const uint32_t col = 2 * sq.gx + letter % 2, row = 2 * sq.gy + letter / 2;
                const uint32_t node = row * g.cols() + col;
                g.node_of_host.emplace(sq.host[letter], node);
                g.host_of_node[node] = std::move(sq.host[letter]);
            }
        }
    }
    // Parents, declared anywhere in the file.
    for (size_t i = 0; i < out.agents_.size(); ++i) {
        if (parent_names[i].empty()) {
            continue;
        }
        auto it = out.by_name_.find(parent_names[i]);
        if (it == out.by_name_.end()) {
            return fail(out.agents_[i].line, "parent \"" + parent_names[i] + "\" is no agent");
        }
        out.agents_[i].parent = it->second;
    }
    // Trees: following parents from any agent ends at a root.
    for (size_t i = 0; i < out.agents_.size(); ++i) {
        int a = static_cast<int>(i);
        for (size_t steps = 0; a >= 0; ++steps) {
            if (steps > out.agents_.size()) {
                return fail(out.agents_[i].line,
                            "agent \"" + out.agents_[i].name + "\" is in a cycle of parents");
            }
            a = out.agents_[a].parent;
        }
    }
    for (const HostsLine &h : hosts) {
        auto it = out.by_name_.find(h.agent);
        if (it == out.by_name_.end()) {
            return fail(h.line, "hosts of \"" + h.agent + "\", which is no agent");
        }
        std::vector<std::string> names;
        std::string why;
        if (!expand_hostlist(h.list, names, why)) {
            return fail(h.line, why);
        }
        for (const std::string &n : names) {
            auto [at, fresh] = out.host_agent_.emplace(n, it->second);
            if (!fresh && at->second != it->second) {
                return fail(h.line, "host \"" + n + "\" already belongs to agent \"" +
                                        out.agents_[at->second].name + "\"");
            }
        }
    }
    return true;
}

int Topology::agent_of(const std::string &host) const
{
    auto it = host_agent_.find(host);
    return it == host_agent_.end() ? -1 : it->second;
}

std::vector<int> Topology::path_to_root(int agent) const
{
    std::vector<int> path;
    for (int a = agent; a >= 0; a = agents_[a].parent) {
        path.push_back(a);
    }
    return path;
}

namespace {

// "2 levels below the top \"core\"", or what depth 0 is.
std::string depth_words(size_t depth, const std::string &top)
{
    if (depth == 0) {
        return "the top \"" + top + "\" itself";
    }
    return std::to_string(depth) + (depth == 1 ? " level" : " levels") + " below the top \"" +
           top + "\"";
}

} // namespace

bool plan(const Topology &topo, const std::vector<std::string> &rank_hosts, Plan &out,
          std::string &err)
{
    out = Plan();
    std::vector<int> leaves;
    std::vector<uint32_t> leaf_of_rank;
    leaf_of_rank.reserve(rank_hosts.size());
    std::vector<std::vector<int>> up; // each leaf's path to its root, the leaf first
    std::map<int, uint32_t> leaf_index;
    int root = -1;
    for (size_t r = 0; r < rank_hosts.size(); ++r) {
        const int a = topo.agent_of(rank_hosts[r]);
        if (a < 0) {
            err = "host \"" + rank_hosts[r] + "\" of rank " + std::to_string(r) +
                  " is in no hosts line of the topology";
            return false;
        }
        auto [it, fresh] = leaf_index.emplace(a, static_cast<uint32_t>(leaves.size()));
        if (fresh) {
            up.push_back(topo.path_to_root(a));
            const int its_root = up.back().back();
            if (root >= 0 && its_root != root) {
                err = "rank " + std::to_string(r) + " talks to agent \"" + topo.agents()[a].name +
                      "\", in another tree than rank 0's (root \"" +
                      topo.agents()[its_root].name + "\" vs \"" + topo.agents()[root].name +
                      "\")";
                return false;
            }
            root = its_root;
            leaves.push_back(a);
            out.members.emplace_back();
        }
        leaf_of_rank.push_back(it->second);
        out.members[it->second].push_back(static_cast<uint32_t>(r));
    }
    if (leaves.empty()) {
        out.agents.push_back(std::move(leaves));
        out.group_of_rank.push_back(std::move(leaf_of_rank));
        return true;
    }

    // The top: the lowest common ancestor of the leaves, i.e. the lowest
    // agent of the longest stretch that every path shares from the root
    // down (at least the root: one tree).
    size_t shared = up[0].size();
    for (const std::vector<int> &path : up) {
        size_t c = 0;
        while (c < shared && c < path.size() &&
               path[path.size() - 1 - c] == up[0][up[0].size() - 1 - c]) {
            ++c;
        }
        shared = c;
    }
    out.top = up[0][up[0].size() - shared];
    const std::string &top_name = topo.agents()[out.top].name;

    // Each leaf's job goes up one parent at a time and the top combines
    // one level of children, so the leaves must all be equally deep. Rank
    // 0's leaf is the reference; the first leaf (by first rank) that
    // differs is named, with its first rank.
    const size_t depth = up[0].size() - shared;
    for (size_t l = 1; l < leaves.size(); ++l) {
        const size_t d = up[l].size() - shared;
        if (d != depth) {
            err = "rank " + std::to_string(out.members[l].front()) + " talks to agent \"" +
                  topo.agents()[leaves[l]].name + "\", " + depth_words(d, top_name) +
                  ", while rank 0's is " +
                  (depth == 0 ? std::string("the top itself")
                              : std::to_string(depth) + (depth == 1 ? " level" : " levels") +
                                    " below") +
                  ": every leaf of a communicator must be as deep as the others";
            return false;
        }
    }
    if (depth > INA_TOPOLOGY_MAX_LEVELS) {
        err = "rank 0 talks to agent \"" + topo.agents()[leaves[0]].name + "\", " +
              depth_words(depth, top_name) + ": the agents take at most " +
              std::to_string(INA_TOPOLOGY_MAX_LEVELS) + " levels above a communicator's leaves";
        return false;
    }
    out.levels = static_cast<uint32_t>(depth);

    // The levels above the leaves. A level-l agent's first rank is the
    // first rank of its first leaf, and the leaves are numbered in order of
    // their first rank, so numbering each level's agents as they appear
    // along the leaves in leaf order numbers them in order of first rank.
    for (size_t l = 1; l < depth; ++l) {
        std::vector<int> agents;
        std::vector<uint32_t> group_of_leaf(leaves.size());
        std::map<int, uint32_t> index;
        for (size_t f = 0; f < leaves.size(); ++f) {
            auto [it, fresh] = index.emplace(up[f][l], static_cast<uint32_t>(agents.size()));
            if (fresh) {
                agents.push_back(up[f][l]);
            }
            group_of_leaf[f] = it->second;
        }
        std::vector<uint32_t> groups;
        groups.reserve(leaf_of_rank.size());
        for (uint32_t leaf : leaf_of_rank) {
            groups.push_back(group_of_leaf[leaf]);
        }
        out.agents.push_back(std::move(agents));
        out.group_of_rank.push_back(std::move(groups));
    }
    out.agents.insert(out.agents.begin(), std::move(leaves));
    out.group_of_rank.insert(out.group_of_rank.begin(), std::move(leaf_of_rank));
    return true;
}

bool grid_map(const Grid &grid, const std::vector<std::string> &rank_hosts, GridMap &out,
              std::string &why)
{
    out = GridMap();
    if (grid.empty()) {
        why = "the topology describes no grid (no square statement)";
        return false;
    }
    if (rank_hosts.empty()) {
        why = "no ranks";
        return false;
    }
    std::vector<uint32_t> node_of_rank;
    node_of_rank.reserve(rank_hosts.size());
    std::vector<bool> held(grid.host_of_node.size());
    uint32_t col_lo = grid.cols(), col_hi = 0, row_lo = grid.rows(), row_hi = 0;
    for (size_t r = 0; r < rank_hosts.size(); ++r) {
        auto it = grid.node_of_host.find(rank_hosts[r]);
        if (it == grid.node_of_host.end()) {
            why = "host \"" + rank_hosts[r] + "\" of rank " + std::to_string(r) +
                  " is not on the grid (in no square line)";
            return false;
        }
        const uint32_t node = it->second, col = node % grid.cols(), row = node / grid.cols();
        held[node] = true;
        node_of_rank.push_back(node);
        col_lo = std::min(col_lo, col);
        col_hi = std::max(col_hi, col);
        row_lo = std::min(row_lo, row);
        row_hi = std::max(row_hi, row);
    }
    if (col_lo == col_hi && row_lo == row_hi) {
        why = "every rank is on one node (host \"" + rank_hosts[0] + "\"): no rings to run";
        return false;
    }
    // The groups the ranks' nodes reach into; each must be held whole.
    // Only a rectangle of whole groups has rings of its own: its rows and
    // columns start on an A or C node and end on a B or D, which is where
    // a ring turns back (ina_grid_ring).
    const uint32_t gx_lo = col_lo / 2, gx_hi = col_hi / 2, gy_lo = row_lo / 2, gy_hi = row_hi / 2;
    const auto group_words = [](uint32_t gx, uint32_t gy) {
        return "group (" + std::to_string(gx) + ", " + std::to_string(gy) + ")";
    };
    for (uint32_t gy = gy_lo; gy <= gy_hi; ++gy) {
        for (uint32_t gx = gx_lo; gx <= gx_hi; ++gx) {
            int present = 0;
            uint32_t missing = 4; // the first letter without a rank
            for (uint32_t letter = 0; letter < 4; ++letter) {
                const uint32_t node = (2 * gy + letter / 2) * grid.cols() + 2 * gx + letter % 2;
                present += held[node] ? 1 : 0;
                missing = held[node] || missing < 4 ? missing : letter;
            }
            if (present == 0) {
                why = group_words(gx, gy) + " holds no rank, inside the rectangle of groups (" +
                      std::to_string(gx_lo) + ", " + std::to_string(gy_lo) + ") to (" +
                      std::to_string(gx_hi) + ", " + std::to_string(gy_hi) +
                      ") that the ranks span: they must cover a rectangle of groups";
                out.partial = true;
                return false;
            }
            if (present < 4) {
                const uint32_t node = (2 * gy + missing / 2) * grid.cols() + 2 * gx + missing % 2;
                why = group_words(gx, gy) + " is covered in part: its node " +
                      std::string(1, "ABCD"[missing]) + " (host \"" + grid.host_of_node[node] +
                      "\") holds no rank: the ranks must cover whole groups";
                out.partial = true;
                return false;
            }
        }
    }
    out.group_x = gx_lo;
    out.group_y = gy_lo;
    out.cols = 2 * (gx_hi - gx_lo + 1);
    out.rows = 2 * (gy_hi - gy_lo + 1);
    for (uint32_t &node : node_of_rank) {
        node = (node / grid.cols() - 2 * gy_lo) * out.cols + node % grid.cols() - 2 * gx_lo;
    }
    out.node_of_rank = std::move(node_of_rank);
    return true;
}

} // namespace ina::topo

// ---------------------------------------------------------------- C API

struct ina_topology {
    ina::topo::Topology topo;
};

namespace {
void put_err(char *err, size_t errlen, const std::string &why)
{
    if (err != nullptr && errlen > 0) {
        std::snprintf(err, errlen, "%s", why.c_str());
    }
}

// The ranks' host names of a C call, every one given (false and why in err
// where one is missing).
bool host_names(const char *const *hosts, uint32_t n, std::vector<std::string> &names, char *err,
                size_t errlen)
{
    names.reserve(n);
    for (uint32_t r = 0; r < n; ++r) {
        if (hosts[r] == nullptr) {
            put_err(err, errlen, "the host of rank " + std::to_string(r) + " is unknown");
            return false;
        }
        names.emplace_back(hosts[r]);
    }
    return true;
}
} // namespace

ina_status_t ina_topology_load(const char *path, ina_topology_t **out, char *err, size_t errlen)
{
    if (out == nullptr) {
        return INA_ERR_INVALID;
    }
    *out = nullptr;
    if (path == nullptr) {
        put_err(err, errlen, "no file named");
        return INA_ERR_INVALID;
    }
    try {
        std::ifstream in(path);
        if (!in) {
            put_err(err, errlen, std::string(path) + ": " + std::strerror(errno));
            return INA_ERR_INVALID;
        }
        std::ostringstream text;
        text << in.rdbuf();
        auto t = std::make_unique<ina_topology>();
        std::string why;
        if (!ina::topo::Topology::parse(text.str(), t->topo, why)) {
            put_err(err, errlen, std::string(path) + ": " + why);
            return INA_ERR_INVALID;
        }
        *out = t.release();
        return INA_OK;
    } catch (const std::bad_alloc &) {
        return INA_ERR_NOMEM;
    }
}

void ina_topology_free(ina_topology_t *topo)
{
    delete topo;
}

uint32_t ina_topology_agents(const ina_topology_t *topo)
{
    return topo == nullptr ? 0 : static_cast<uint32_t>(topo->topo.agents().size());
}

const char *ina_topology_agent_for(const ina_topology_t *topo, const char *host)
{
    if (topo == nullptr || host == nullptr) {
        return nullptr;
    }
    const int a = topo->topo.agent_of(host);
    return a < 0 ? nullptr : topo->topo.agents()[static_cast<size_t>(a)].address.c_str();
}

ina_status_t ina_topology_plan(const ina_topology_t *topo, const char *const *hosts, uint32_t n,
                               uint32_t *levels, uint32_t *group_of_rank, char *err,
                               size_t errlen)
{
    if (topo == nullptr || hosts == nullptr || levels == nullptr) {
        return INA_ERR_INVALID;
    }
    try {
        std::vector<std::string> names;
        if (!host_names(hosts, n, names, err, errlen)) {
            return INA_ERR_INVALID;
        }
        ina::topo::Plan p;
        std::string why;
        if (!ina::topo::plan(topo->topo, names, p, why)) {
            put_err(err, errlen, why);
            return INA_ERR_INVALID;
        }
        *levels = p.levels;
        if (group_of_rank != nullptr) {
            // Level-major, max(levels, 1) levels: plan() keeps as many.
            for (const std::vector<uint32_t> &level : p.group_of_rank) {
                group_of_rank = std::copy(level.begin(), level.end(), group_of_rank);
            }
        }
        return INA_OK;
    } catch (const std::bad_alloc &) {
        return INA_ERR_NOMEM;
    }
}

void ina_topology_place(const uint32_t *group_of_rank, uint32_t n, uint32_t levels, uint32_t r,
                        ina_proto_tree_level_t *place)
{
    if (group_of_rank == nullptr || place == nullptr || r >= n) {
        return; // no rank to place: nothing written (a void C function)
    }
    // Level k's agents are numbered in order of their first rank
    // (ina_topology_plan), so a number first appears in the ranks right
    // after all smaller ones did: scanning the ranks, an agent's first rank
    // is where its number equals the count of agents seen so far. That
    // finds each of them once without a set (no allocation), and ordering
    // r's siblings by first rank is ordering them by number. A level-k
    // agent has one parent, so the parent at its first rank is its parent.
    for (uint32_t k = 0; k < levels; ++k) {
        const uint32_t *level = group_of_rank + static_cast<size_t>(k) * n;
        // At the highest level the parent is the top, everyone's.
        const uint32_t *above = k + 1 < levels ? level + n : nullptr;
        const uint32_t mine = level[r];
        uint32_t seen = 0, groups = 0, group = 0;
        for (uint32_t s = 0; s < n; ++s) {
            if (level[s] != seen) {
                continue; // not the first rank of an agent
            }
            ++seen;
            if (above == nullptr || above[s] == above[r]) {
                group += level[s] < mine ? 1 : 0;
                ++groups;
            }
        }
        place[k] = ina_proto_tree_level_t{groups, group};
    }
}

ina_status_t ina_topology_grid(const ina_topology_t *topo, const char *const *hosts, uint32_t n,
                               uint32_t *cols, uint32_t *rows, uint32_t *node_of_rank,
                               int *partial, char *err, size_t errlen)
{
    if (topo == nullptr || cols == nullptr || rows == nullptr ||
        (n > 0 && (hosts == nullptr || node_of_rank == nullptr))) {
        return INA_ERR_INVALID;
    }
    *cols = 0;
    *rows = 0;
    if (partial != nullptr) {
        *partial = 0;
    }
    try {
        std::vector<std::string> names;
        if (!host_names(hosts, n, names, err, errlen)) {
            return INA_ERR_INVALID;
        }
        ina::topo::GridMap m;
        std::string why;
        if (!ina::topo::grid_map(topo->topo.grid(), names, m, why)) {
            // Not an error: the caller runs its other algorithms, and says why.
            if (partial != nullptr) {
                *partial = m.partial ? 1 : 0;
            }
            put_err(err, errlen, why);
            return INA_OK;
        }
        std::copy(m.node_of_rank.begin(), m.node_of_rank.end(), node_of_rank);
        *cols = m.cols;
        *rows = m.rows;
        put_err(err, errlen, "");
        return INA_OK;
    } catch (const std::bad_alloc &) {
        return INA_ERR_NOMEM;
    }
}

void ina_grid_ring(uint32_t n, uint32_t *ring)
{
    if (ring == nullptr || n < 2 || n % 2 != 0) {
        return; // no such ring: nothing written (a void C function)
    }
    // Along a row: positions 2g and 2g + 1 are one group's A-B (or C-D)
    // link, and each letter links to the same letter of the next group, two
    // positions on. So the odd positions form one chain out, the even ones
    // another back, joined at both ends inside a group: every step a link,
    // none leaving the positions 0..n-1 (the same down a column: A-C, B-D).
    uint32_t k = 0;
    ring[k++] = 0;
    for (uint32_t odd = 1; odd < n; odd += 2) {
        ring[k++] = odd;
    }
    for (uint32_t even = n - 2; even >= 2; even -= 2) {
        ring[k++] = even;
    }
}

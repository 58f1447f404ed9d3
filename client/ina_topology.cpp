// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Topology file parsing and the per-communicator plan (ina_topology.h).
#include "ina_topology.h"
#include "ina_client.h"

#include <algorithm>
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
    std::istringstream in(text);
    std::string raw;
    int lineno = 0;
    const auto fail = [&](int line, const std::string &why) {
        err = "line " + std::to_string(line) + ": " + why;
        return false;
    };
    while (std::getline(in, raw)) {
        ++lineno;
        std::istringstream words(raw.substr(0, raw.find('#')));
        std::vector<std::string> w;
        for (std::string t; words >> t;) {
            w.push_back(t);
        }
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
        } else {
            return fail(lineno, "unknown statement \"" + w[0] + "\" (agent or hosts)");
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

bool plan(const Topology &topo, const std::vector<std::string> &rank_hosts, Plan &out,
          std::string &err)
{
    out = Plan();
    std::map<int, uint32_t> leaf_index;
    for (size_t r = 0; r < rank_hosts.size(); ++r) {
        const int a = topo.agent_of(rank_hosts[r]);
        if (a < 0) {
            err = "host \"" + rank_hosts[r] + "\" of rank " + std::to_string(r) +
                  " is in no hosts line of the topology";
            return false;
        }
        auto [it, fresh] = leaf_index.emplace(a, static_cast<uint32_t>(out.leaves.size()));
        if (fresh) {
            const int root = topo.root_of(a);
            if (out.root >= 0 && root != out.root) {
                err = "rank " + std::to_string(r) + " talks to agent \"" + topo.agents()[a].name +
                      "\", in another tree than rank 0's (root \"" +
                      topo.agents()[root].name + "\" vs \"" + topo.agents()[out.root].name +
                      "\")";
                return false;
            }
            out.root = root;
            out.leaves.push_back(a);
            out.members.emplace_back();
        }
        out.leaf_of_rank.push_back(it->second);
        out.members[it->second].push_back(static_cast<uint32_t>(r));
    }
    // Several leaves: the agents build trees of depth 2 (docs/HIERARCHY.md),
    // so each leaf must be a child of the root, never the root itself or
    // deeper.
    for (size_t l = 0; out.leaves.size() > 1 && l < out.leaves.size(); ++l) {
        const size_t depth = topo.path_to_root(out.leaves[l]).size() - 1;
        if (depth != 1) {
            const Agent &a = topo.agents()[out.leaves[l]];
            err = "rank " + std::to_string(out.members[l].front()) + " talks to agent \"" +
                  a.name + "\", " +
                  (depth == 0 ? std::string("the root of the tree")
                              : std::to_string(depth) + " levels below the root") +
                  ": a communicator over several leaf agents needs each to be a child of "
                  "the root (depth 2)";
            return false;
        }
    }
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

const char *ina_topology_agent_for(const ina_topology_t *topo, const char *host)
{
    if (topo == nullptr || host == nullptr) {
        return nullptr;
    }
    const int a = topo->topo.agent_of(host);
    return a < 0 ? nullptr : topo->topo.agents()[static_cast<size_t>(a)].address.c_str();
}

ina_status_t ina_topology_plan(const ina_topology_t *topo, const char *const *hosts, uint32_t n,
                               uint32_t *nleaves, uint32_t *leaf_of_rank, char *err,
                               size_t errlen)
{
    if (topo == nullptr || hosts == nullptr || nleaves == nullptr) {
        return INA_ERR_INVALID;
    }
    try {
        std::vector<std::string> names;
        names.reserve(n);
        for (uint32_t r = 0; r < n; ++r) {
            if (hosts[r] == nullptr) {
                put_err(err, errlen, "the host of rank " + std::to_string(r) + " is unknown");
                return INA_ERR_INVALID;
            }
            names.emplace_back(hosts[r]);
        }
        ina::topo::Plan p;
        std::string why;
        if (!ina::topo::plan(topo->topo, names, p, why)) {
            put_err(err, errlen, why);
            return INA_ERR_INVALID;
        }
        *nleaves = static_cast<uint32_t>(p.leaves.size());
        if (leaf_of_rank != nullptr) {
            std::copy(p.leaf_of_rank.begin(), p.leaf_of_rank.end(), leaf_of_rank);
        }
        return INA_OK;
    } catch (const std::bad_alloc &) {
        return INA_ERR_NOMEM;
    }
}

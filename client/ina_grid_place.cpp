// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Placing jobs on rectangles of groups of the hyper-square, and the state
// file of the jobs placed (ina_grid_place.h).
#include "ina_grid_place.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace ina::grid {

uint32_t groups_for_nodes(uint32_t nodes)
{
    return nodes / 4 + (nodes % 4 != 0 ? 1 : 0);
}

namespace {

// How many groups of `a`'s edge touch `b` (0 when they do not share an edge).
uint32_t shared_border(const Rect &a, const Rect &b)
{
    const auto overlap = [](uint32_t lo1, uint32_t len1, uint32_t lo2, uint32_t len2) {
        const uint32_t lo = std::max(lo1, lo2), hi = std::min(lo1 + len1, lo2 + len2);
        return hi > lo ? hi - lo : 0;
    };
    uint32_t n = 0;
    if (a.gx + a.w == b.gx || b.gx + b.w == a.gx) {
        n += overlap(a.gy, a.h, b.gy, b.h);
    }
    if (a.gy + a.h == b.gy || b.gy + b.h == a.gy) {
        n += overlap(a.gx, a.w, b.gx, b.w);
    }
    return n;
}

} // namespace

double border_load(const Rect &r, const std::vector<Job> &load)
{
    double sum = 0;
    for (const Job &j : load) {
        sum += j.weight * shared_border(r, j.rect);
    }
    return sum;
}

std::optional<Rect> place(uint32_t groups_x, uint32_t groups_y, const std::vector<Job> &load,
                          uint32_t nodes)
{
    const uint32_t want = groups_for_nodes(nodes);
    if (want == 0 || uint64_t{groups_x} * groups_y < want) {
        return std::nullopt;
    }
    // The shapes w x h == want that fit the grid, squarest first: with the
    // area fixed, the larger the short side, the squarer. Both orientations
    // of a shape are equally square and compete on load and position.
    std::map<uint32_t, std::vector<Rect>, std::greater<>> shapes_by_short_side;
    for (uint32_t w = 1; w <= std::min(want, groups_x); ++w) {
        if (want % w == 0 && want / w <= groups_y) {
            shapes_by_short_side[std::min(w, want / w)].push_back(Rect{0, 0, w, want / w});
        }
    }
    for (const auto &[side, shapes] : shapes_by_short_side) {
        std::optional<Rect> best;
        std::tuple<double, uint32_t, uint32_t, uint32_t> best_key{};
        for (const Rect &shape : shapes) {
            for (uint32_t gy = 0; gy + shape.h <= groups_y; ++gy) {
                for (uint32_t gx = 0; gx + shape.w <= groups_x; ++gx) {
                    const Rect r{gx, gy, shape.w, shape.h};
                    if (std::any_of(load.begin(), load.end(),
                                    [&](const Job &j) { return j.rect.overlaps(r); })) {
                        continue;
                    }
                    // Wider first on a tie: longer rows, fewer rows.
                    const auto key = std::make_tuple(border_load(r, load), gy, gx, groups_x - r.w);
                    if (!best || key < best_key) {
                        best = r;
                        best_key = key;
                    }
                }
            }
        }
        if (best) {
            return best;
        }
    }
    return std::nullopt;
}

bool valid_job_name(const std::string &name)
{
    return !name.empty() && name.find('#') == std::string::npos &&
           std::none_of(name.begin(), name.end(), [](unsigned char c) {
               return std::isspace(c) != 0 || std::iscntrl(c) != 0;
           });
}

namespace {

bool small_number(const std::string &s, uint32_t &out)
{
    if (s.empty() || s.size() > 5 ||
        !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
        return false;
    }
    out = static_cast<uint32_t>(std::stoul(s));
    return true;
}

std::string rect_words(const Rect &r)
{
    return std::to_string(r.w) + "x" + std::to_string(r.h) + " groups at (" + std::to_string(r.gx) +
           ", " + std::to_string(r.gy) + ")";
}

} // namespace

bool parse_state(const std::string &text, uint32_t groups_x, uint32_t groups_y,
                 std::vector<Job> &jobs, std::string &err)
{
    jobs.clear();
    std::vector<int> lines; // where each job was read, for messages
    std::istringstream in(text);
    std::string raw;
    int lineno = 0;
    const auto fail = [&](const std::string &why) {
        err = "line " + std::to_string(lineno) + ": " + why;
        return false;
    };
    while (std::getline(in, raw)) {
        ++lineno;
        const std::vector<std::string> w = topo::line_words(raw);
        if (w.empty()) {
            continue;
        }
        if (w.size() != 5 && w.size() != 6) {
            return fail("want \"NAME GX GY W H [WEIGHT]\"");
        }
        Job j;
        j.name = w[0];
        uint32_t *fields[] = {&j.rect.gx, &j.rect.gy, &j.rect.w, &j.rect.h};
        for (int i = 0; i < 4; ++i) {
            if (!small_number(w[1 + i], *fields[i])) {
                return fail("\"" + w[1 + i] + "\" is not a number of groups (0 to 99999)");
            }
        }
        if (w.size() == 6) {
            char *end = nullptr;
            j.weight = std::strtod(w[5].c_str(), &end);
            if (*end != '\0' || !std::isfinite(j.weight) || j.weight < 0) {
                return fail("\"" + w[5] + "\" is not a weight (a number >= 0)");
            }
        }
        if (j.rect.w == 0 || j.rect.h == 0) {
            return fail("job \"" + j.name + "\" has no groups");
        }
        if (j.rect.gx + j.rect.w > groups_x || j.rect.gy + j.rect.h > groups_y) {
            return fail("job \"" + j.name + "\" on " + rect_words(j.rect) + " is off the " +
                        std::to_string(groups_x) + "x" + std::to_string(groups_y) +
                        " groups of the grid");
        }
        for (size_t k = 0; k < jobs.size(); ++k) {
            if (jobs[k].name == j.name) {
                return fail("job \"" + j.name + "\" listed twice (line " +
                            std::to_string(lines[k]) + ")");
            }
            if (jobs[k].rect.overlaps(j.rect)) {
                return fail("job \"" + j.name + "\" on " + rect_words(j.rect) + " overlaps job \"" +
                            jobs[k].name + "\" (line " + std::to_string(lines[k]) + ")");
            }
        }
        jobs.push_back(std::move(j));
        lines.push_back(lineno);
    }
    return true;
}

std::string format_state(const std::vector<Job> &jobs)
{
    std::string s = "# ina-switchctl place: NAME GX GY W H [WEIGHT], rectangles of groups\n";
    for (const Job &j : jobs) {
        s += j.name + " " + std::to_string(j.rect.gx) + " " + std::to_string(j.rect.gy) + " " +
             std::to_string(j.rect.w) + " " + std::to_string(j.rect.h);
        if (j.weight != 0) {
            char w[32];
            std::snprintf(w, sizeof(w), " %.17g", j.weight); // reads back the same double
            s += w;
        }
        s += "\n";
    }
    return s;
}

std::vector<std::string> hosts_of(const topo::Grid &grid, const Rect &r)
{
    std::vector<std::string> hosts;
    hosts.reserve(size_t{r.groups()} * 4);
    for (uint32_t row = 2 * r.gy; row < 2 * (r.gy + r.h); ++row) {
        for (uint32_t col = 2 * r.gx; col < 2 * (r.gx + r.w); ++col) {
            hosts.push_back(grid.host_of_node.at(size_t{row} * grid.cols() + col));
        }
    }
    return hosts;
}

std::string compress_hostlist(const std::vector<std::string> &hosts)
{
    // By (prefix, digits); names without trailing digits have none. One
    // width a bracket: expand_hostlist pads to the lower bound's width, so
    // "n[9-10]" and "n[09-10]" both hold a 2-digit n10 and neither an
    // n010; keeping widths apart keeps every range exact. More than 9
    // digits is more than a range may have: such names stay as they are.
    std::map<std::pair<std::string, size_t>, std::set<uint64_t>> numbered;
    std::set<std::string> plain;
    for (const std::string &h : hosts) {
        size_t digits = 0;
        while (digits < h.size() &&
               std::isdigit(static_cast<unsigned char>(h[h.size() - 1 - digits]))) {
            ++digits;
        }
        if (digits == 0 || digits > 9) {
            plain.insert(h);
            continue;
        }
        numbered[{h.substr(0, h.size() - digits), digits}].insert(
            std::stoull(h.substr(h.size() - digits)));
    }
    std::vector<std::string> items(plain.begin(), plain.end());
    for (const auto &[key, values] : numbered) {
        const auto &[prefix, width] = key;
        const auto padded = [width = width](uint64_t v) {
            std::string s = std::to_string(v);
            return std::string(width - std::min(width, s.size()), '0') + s;
        };
        if (values.size() == 1) {
            items.push_back(prefix + padded(*values.begin()));
            continue;
        }
        std::string ranges;
        for (auto it = values.begin(); it != values.end();) {
            const uint64_t lo = *it;
            uint64_t hi = lo;
            for (++it; it != values.end() && *it == hi + 1; ++it) {
                hi = *it;
            }
            ranges += (ranges.empty() ? "" : ",") + padded(lo) + (hi > lo ? "-" + padded(hi) : "");
        }
        items.push_back(prefix + "[" + ranges + "]");
    }
    std::sort(items.begin(), items.end());
    std::string list;
    for (const std::string &item : items) {
        list += (list.empty() ? "" : ",") + item;
    }
    return list;
}

} // namespace ina::grid

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Jobs side by side on the hyper-square (client/ina_grid_place.h): the
// rectangle of groups chosen for a job on an empty, a loaded and a full
// grid; the state file of ina-switchctl place read back as written, and
// refused with the line when wrong; the hosts of a rectangle and their
// Slurm list.
#include <check.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "check_main.h"
#include "ina_grid_place.h"
#include "ina_topology.h"

using ina::grid::Job;
using ina::grid::place;
using ina::grid::Rect;

namespace {

void expect_at(uint32_t gx_n, uint32_t gy_n, const std::vector<Job> &load, uint32_t nodes,
               const Rect &want)
{
    const std::optional<Rect> r = place(gx_n, gy_n, load, nodes);
    ck_assert_msg(r.has_value(), "%u nodes on %ux%u: none", nodes, gx_n, gy_n);
    ck_assert_msg(*r == want, "%u nodes on %ux%u: %ux%u at (%u, %u), want %ux%u at (%u, %u)", nodes,
                  gx_n, gy_n, r->w, r->h, r->gx, r->gy, want.w, want.h, want.gx, want.gy);
}

std::vector<Job> state_of(const std::string &text, uint32_t gx_n, uint32_t gy_n)
{
    std::vector<Job> jobs;
    std::string err;
    ck_assert_msg(ina::grid::parse_state(text, gx_n, gy_n, jobs, err), "%s", err.c_str());
    return jobs;
}

void expect_list(const std::vector<std::string> &hosts, const std::string &want)
{
    const std::string got = ina::grid::compress_hostlist(hosts);
    ck_assert_msg(got == want, "got %s, want %s", got.c_str(), want.c_str());
}

void expect_state_error(const std::string &text, const std::string &want)
{
    std::vector<Job> jobs;
    std::string err;
    ck_assert_msg(!ina::grid::parse_state(text, 4, 2, jobs, err), "accepted: %s", text.c_str());
    ck_assert_msg(err == want, "got:  %s\nwant: %s", err.c_str(), want.c_str());
}

} // namespace

START_TEST(test_empty_grid)
{
    ck_assert_uint_eq(ina::grid::groups_for_nodes(0), 0);
    ck_assert_uint_eq(ina::grid::groups_for_nodes(1), 1);
    ck_assert_uint_eq(ina::grid::groups_for_nodes(8), 2);
    ck_assert_uint_eq(ina::grid::groups_for_nodes(9), 3);
    // From the corner, squarest, the wider of two orientations.
    expect_at(4, 4, {}, 4, Rect{0, 0, 1, 1});
    expect_at(4, 4, {}, 6, Rect{0, 0, 2, 1}); // rounded up to two groups
    expect_at(4, 4, {}, 16, Rect{0, 0, 2, 2});
    expect_at(4, 4, {}, 24, Rect{0, 0, 3, 2}); // 2x3 and 3x2 before 1x6
    expect_at(4, 4, {}, 64, Rect{0, 0, 4, 4});
    // Only the shapes that fit: 6 groups on a 6x1 grid, 3 on a 1x4.
    expect_at(6, 1, {}, 24, Rect{0, 0, 6, 1});
    expect_at(1, 4, {}, 12, Rect{0, 0, 1, 3});
    // 5 groups are 5x1 or 1x5: neither fits 4x4. Too many, or none asked.
    ck_assert(!place(4, 4, {}, 20));
    ck_assert(!place(4, 4, {}, 68));
    ck_assert(!place(4, 4, {}, 0));
    ck_assert(!place(0, 0, {}, 4));
}
END_TEST

START_TEST(test_loaded_grid)
{
    // Free groups only: beside a job, not on it; the squarest shape that
    // has room, though a squarer one would fit an empty grid.
    const std::vector<Job> corner = {{"a", Rect{0, 0, 1, 1}, 0}};
    expect_at(2, 2, corner, 8, Rect{1, 0, 1, 2}); // row 0 first
    expect_at(2, 2, corner, 4, Rect{1, 0, 1, 1});
    const std::vector<Job> middle = {{"m", Rect{1, 1, 1, 1}, 0}};
    ck_assert(!place(3, 3, middle, 16)); // every 2x2 holds (1, 1)
    expect_at(3, 3, middle, 12, Rect{0, 0, 3, 1});
    expect_at(4, 3, middle, 16, Rect{2, 0, 2, 2});

    // Least loaded: the weights of the neighbours along the border.
    const std::vector<Job> two = {{"heavy", Rect{0, 0, 1, 1}, 3}, {"light", Rect{3, 0, 1, 1}, 1}};
    expect_at(4, 1, two, 4, Rect{2, 0, 1, 1});
    // Without weights the lowest position wins: groups stay packed.
    const std::vector<Job> unweighted = {{"a", Rect{0, 0, 1, 1}, 0}, {"b", Rect{3, 0, 1, 1}, 0}};
    expect_at(4, 1, unweighted, 4, Rect{1, 0, 1, 1});
    // A longer border weighs more: a 2x1 under a 2x1 touches it along 2
    // groups, a 1x1 under or beside it along 1, one at its corner not at all.
    const std::vector<Job> wide = {{"w", Rect{0, 0, 2, 1}, 1}};
    ck_assert(ina::grid::border_load(Rect{1, 1, 1, 1}, wide) == 1);
    ck_assert(ina::grid::border_load(Rect{0, 1, 2, 1}, wide) == 2);
    ck_assert(ina::grid::border_load(Rect{2, 0, 1, 1}, wide) == 1);
    ck_assert(ina::grid::border_load(Rect{2, 1, 1, 1}, wide) == 0); // a corner only
    expect_at(3, 2, wide, 4, Rect{2, 1, 1, 1});
    // Squarest comes before least loaded: the 2x2s all touch the bottom
    // row, the 4x1 at the top does not.
    const std::vector<Job> bottom = {{"b", Rect{0, 2, 4, 1}, 5}};
    ck_assert(ina::grid::border_load(Rect{0, 0, 4, 1}, bottom) == 0);
    expect_at(4, 3, bottom, 16, Rect{0, 0, 2, 2});
}
END_TEST

START_TEST(test_full_grid_and_release)
{
    std::vector<Job> jobs;
    // Four 1-group jobs fill a 2x2 grid, packed row by row.
    const Rect want[] = {{0, 0, 1, 1}, {1, 0, 1, 1}, {0, 1, 1, 1}, {1, 1, 1, 1}};
    for (const Rect &w : want) {
        const std::optional<Rect> r = place(2, 2, jobs, 4);
        ck_assert(r && *r == w);
        jobs.push_back({"j" + std::to_string(jobs.size()), *r, 0});
    }
    ck_assert(!place(2, 2, jobs, 4));
    ck_assert(!place(2, 2, jobs, 1));
    // Released: its groups are free again, and only they.
    jobs.erase(jobs.begin() + 2);
    ck_assert(!place(2, 2, jobs, 8));
    expect_at(2, 2, jobs, 3, Rect{0, 1, 1, 1});
    jobs.erase(jobs.begin() + 2); // and (1, 1): the bottom row
    expect_at(2, 2, jobs, 8, Rect{0, 1, 2, 1});
}
END_TEST

START_TEST(test_state_file)
{
    const std::vector<Job> jobs = {{"a", Rect{0, 0, 2, 1}, 0},
                                   {"b-1", Rect{2, 0, 1, 2}, 0.25},
                                   {"c", Rect{3, 1, 1, 1}, 7}};
    const std::string text = ina::grid::format_state(jobs);
    const std::vector<Job> back = state_of(text, 4, 2);
    ck_assert_uint_eq(back.size(), jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
        ck_assert_str_eq(back[i].name.c_str(), jobs[i].name.c_str());
        ck_assert(back[i].rect == jobs[i].rect);
        ck_assert(back[i].weight == jobs[i].weight);
    }
    ck_assert(ina::grid::format_state(back) == text);
    ck_assert(state_of("", 1, 1).empty());
    ck_assert(state_of("# nothing\n\n   \n", 1, 1).empty());
    ck_assert_uint_eq(state_of("x 0 0 1 1 # a comment\n", 1, 1).size(), 1);

    expect_state_error("a 0 0 1\n", "line 1: want \"NAME GX GY W H [WEIGHT]\"");
    expect_state_error("a 0 0 1 1 1 1\n", "line 1: want \"NAME GX GY W H [WEIGHT]\"");
    expect_state_error("a 0 x 1 1\n", "line 1: \"x\" is not a number of groups (0 to 99999)");
    expect_state_error("a 0 0 1 1 -2\n", "line 1: \"-2\" is not a weight (a number >= 0)");
    expect_state_error("a 0 0 1 1 nan\n", "line 1: \"nan\" is not a weight (a number >= 0)");
    expect_state_error("a 0 0 0 1\n", "line 1: job \"a\" has no groups");
    expect_state_error(
        "\na 3 0 2 1\n",
        "line 2: job \"a\" on 2x1 groups at (3, 0) is off the 4x2 groups of the grid");
    expect_state_error("a 0 0 1 1\na 1 0 1 1\n", "line 2: job \"a\" listed twice (line 1)");
    expect_state_error("a 0 0 2 2\nb 1 1 1 1\n",
                       "line 2: job \"b\" on 1x1 groups at (1, 1) overlaps job \"a\" (line 1)");

    ck_assert(ina::grid::valid_job_name("job-1.x"));
    ck_assert(!ina::grid::valid_job_name(""));
    ck_assert(!ina::grid::valid_job_name("a b"));
    ck_assert(!ina::grid::valid_job_name("a#b"));
}
END_TEST

START_TEST(test_hosts_and_slurm_list)
{
    ina::topo::Topology t;
    std::string err;
    ck_assert(ina::topo::Topology::parse("square 0 0 n01 n02 n03 n04\n"
                                         "square 1 0 n05 n06 n07 n08\n"
                                         "square 0 1 n09 n10 n11 n12\n"
                                         "square 1 1 n13 n14 n15 n16\n",
                                         t, err));
    // Row by row of nodes from the corner: ina_topology_grid's numbering.
    ck_assert(ina::grid::hosts_of(t.grid(), Rect{1, 0, 1, 2}) ==
              std::vector<std::string>({"n05", "n06", "n07", "n08", "n13", "n14", "n15", "n16"}));
    ck_assert(ina::grid::hosts_of(t.grid(), Rect{0, 1, 2, 1}) ==
              std::vector<std::string>({"n09", "n10", "n13", "n14", "n11", "n12", "n15", "n16"}));

    expect_list({"n05", "n06", "n07", "n08", "n13", "n14", "n15", "n16"}, "n[05-08,13-16]");
    expect_list({"n3"}, "n3");
    expect_list({"login", "n2", "n1", "gpu7", "gpu9"}, "gpu[7,9],login,n[1-2]");
    // Widths apart: each bracket expands to exactly its names.
    expect_list({"n8", "n9", "n10", "n11"}, "n[10-11],n[8-9]");
    expect_list({"r1n1", "r1n2", "r2n1"}, "r1n[1-2],r2n1");
    expect_list({"x1234567890"}, "x1234567890");
    // Back through expand_hostlist: the same hosts, sorted.
    const std::vector<std::string> hosts = {"c0099", "c0100", "c0101", "b7", "a",
                                            "c0098", "b10", "b8", "d0", "d00"};
    std::vector<std::string> back;
    const std::string list = ina::grid::compress_hostlist(hosts);
    ck_assert_msg(ina::topo::expand_hostlist(list, back, err), "%s: %s", list.c_str(), err.c_str());
    std::vector<std::string> sorted_back = back, sorted_hosts = hosts;
    std::sort(sorted_back.begin(), sorted_back.end());
    std::sort(sorted_hosts.begin(), sorted_hosts.end());
    ck_assert(sorted_back == sorted_hosts);
}
END_TEST

int main()
{
    return ina_test::run_suite("grid_place", "place",
                               {test_empty_grid, test_loaded_grid, test_full_grid_and_release,
                                test_state_file, test_hosts_and_slurm_list});
}

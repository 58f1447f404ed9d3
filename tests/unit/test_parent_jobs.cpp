// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// agg::ParentJobs, a leaf's jobs at its parent agent, between a leaf
// Aggregator with two members and a parent the test plays by hand: what
// goes up is recorded (and must pass ina_proto_check), what comes down is
// handed to deliver() as ParentLink does. Checks that JOB_OPENED maps the
// parent's JID to the leaf's (what goes up after it is addressed to the
// parent's job as the leaf's rank there, what comes down for it reaches the
// leaf's job: GRANT, RESULT), that a message for a job that is not this
// leaf's is dropped without effect, that a job freed before the parent
// answered is left once it does, and that a lost parent takes the book
// with it.
#include <check.h>

#include <cstring>
#include <vector>

#include "aggregation_fakes.h"
#include "check_main.h"
#include "parent_jobs.h"

using namespace agg_test;

namespace {

constexpr uint32_t kGroup = 1; // this leaf's index among the job's leaves
constexpr uint32_t kGroups = 2;
constexpr uint32_t kWindow = 4; // the members' and the parent's
constexpr uint32_t kParentJid = 500;

struct Sent {
    ina_proto_hdr_t h;
    std::vector<std::byte> payload;
};

// The way up, recorded.
struct RecordingWire final : ParentJobs::Wire {
    std::vector<Sent> sent;

    void send(const ina_proto_hdr_t &h, const uint8_t *payload, size_t len) override
    {
        expect_valid(h, len);
        const auto *b = reinterpret_cast<const std::byte *>(payload);
        sent.push_back({h, std::vector<std::byte>(b, b + len)});
    }
    void send_block(Partial p) override
    {
        expect_valid(p.hdr, p.len);
        std::vector<std::byte> bytes;
        if (p.len != 0) {
            bytes.assign(p.buf.data() + p.offset, p.buf.data() + p.offset + p.len);
        }
        sent.push_back({p.hdr, std::move(bytes)});
    }
};

// A leaf with its two members, its jobs at the parent in between.
struct Leaf {
    Rig rig{small_config(16)};
    RecordingWire wire;
    ParentJobs jobs{rig.agg, wire, "the test's parent"};
    Member members[2];

    Leaf()
    {
        rig.agg.set_uplink(&jobs);
        members[0].id = 1;
        members[1].id = 2;
    }

    // Both members open their part of a job over kGroups leaves: its JID
    // here. The JOB_OPEN went up.
    uint32_t open(uint32_t tag)
    {
        uint32_t jid = 0;
        for (uint32_t r = 0; r < 2; ++r) {
            const Event e =
                open_job(rig.agg, rig.sink, members[r], tag, {7, 8}, kWindow, r, kGroup, kGroups);
            ck_assert_int_eq(e.status, INA_PROTO_OK);
            jid = e.jid;
        }
        rig.sink.events.clear();
        return jid;
    }

    // The parent's message, checked as the link's channel would.
    bool deliver(const ina_proto_hdr_t &h, const std::vector<std::byte> &payload = {})
    {
        expect_valid(h, payload.size());
        return jobs.deliver(h, payload.data(), payload.size());
    }

    bool opened(uint32_t leaf_jid, uint32_t parent_jid, ina_proto_status_t st = INA_PROTO_OK)
    {
        ina_proto_hdr_t h = from_parent(INA_PROTO_JOB_OPENED, parent_jid);
        h.status = static_cast<uint8_t>(st);
        h.window = st == INA_PROTO_OK ? kWindow : 0;
        h.arg = leaf_jid; // the cookie
        return deliver(h);
    }

    static ina_proto_hdr_t from_parent(ina_proto_type_t type, uint32_t parent_jid, uint64_t mid = 0)
    {
        ina_proto_hdr_t h;
        ina_proto_init(&h, type);
        h.jid = parent_jid;
        h.rank = kGroup;
        h.mid = mid;
        return h;
    }

    // Member r's whole block 0 of an int32 sum of 4 elements, call `mid`.
    void block(uint32_t jid, uint32_t r, uint64_t mid)
    {
        const int32_t v[4] = {int32_t(r + 1), 10, 100, 1000};
        const ina_proto_hdr_t h = block_hdr(jid, r, mid, 0, kWindow, INA_COLL_ALLREDUCE, INA_OP_SUM,
                                            INA_DT_INT32, 0, 4, 4, 4, true);
        rig.agg.block(members[r], h, v);
    }
};

} // namespace

// JOB_OPEN goes up with the leaf's JID as its cookie; the parent's JOB_OPENED
// maps the parent's JID to it: the call's CALL_READY and its partial go up
// addressed to the parent's job as this leaf's rank, and the parent's GRANT
// and RESULT for that JID reach the leaf's members (uplink_decision,
// uplink_result).
START_TEST(test_parent_jobs_opened_maps_jids)
{
    Leaf leaf;
    const uint32_t jid = leaf.open(1);
    ck_assert_uint_eq(leaf.wire.sent.size(), 1);
    const ina_proto_hdr_t &open = leaf.wire.sent[0].h;
    ck_assert_uint_eq(open.type, INA_PROTO_JOB_OPEN);
    ck_assert_uint_eq(open.arg, jid);
    ck_assert_uint_eq(open.rank, kGroup);
    ck_assert_uint_eq(open.count, kGroups);
    ck_assert_uint_eq(open.window, kWindow);
    ck_assert_uint_eq(open.flags, INA_PROTO_F_CHILDREN);
    ck_assert(leaf.opened(jid, kParentJid));
    ck_assert(leaf.rig.sink.events.empty());
    ck_assert_uint_eq(leaf.wire.sent.size(), 1);

    // A call: the leaf's lease, its vote up, then its partial.
    leaf.block(jid, 0, 0);
    ck_assert_uint_eq(leaf.wire.sent.size(), 2);
    const ina_proto_hdr_t ready = leaf.wire.sent[1].h;
    ck_assert_uint_eq(ready.type, INA_PROTO_CALL_READY);
    ck_assert_uint_eq(ready.jid, kParentJid);
    ck_assert_uint_eq(ready.rank, kGroup);
    ck_assert_uint_eq(ready.window, kWindow);
    ck_assert_uint_eq(ready.mid, 0);
    leaf.block(jid, 1, 0);
    ck_assert_uint_eq(leaf.wire.sent.size(), 3);
    const Sent part = leaf.wire.sent[2];
    ck_assert_uint_eq(part.h.type, INA_PROTO_BLOCK);
    ck_assert_uint_eq(part.h.jid, kParentJid);
    ck_assert_uint_eq(part.h.rank, kGroup);
    ck_assert_uint_eq(part.h.window, kWindow);
    ck_assert_uint_eq(part.h.sid, 0);
    ck_assert_uint_eq(part.h.seg, 0);
    ck_assert_uint_eq(part.payload.size(), 4 * sizeof(int32_t));
    const int32_t want_part[4] = {1 + 2, 20, 200, 2000};
    ck_assert_int_eq(std::memcmp(part.payload.data(), want_part, sizeof(want_part)), 0);
    ck_assert(leaf.rig.sink.events.empty()); // the GRANT waits for the parent's

    ina_proto_hdr_t grant = Leaf::from_parent(INA_PROTO_GRANT, kParentJid, 0);
    grant.window = kWindow;
    ck_assert(leaf.deliver(grant));
    ck_assert_uint_eq(leaf.rig.sink.count(Event::Kind::kDecision), 2);
    for (const Event &e : leaf.rig.sink.events) {
        ck_assert(e.d.grant);
        ck_assert_uint_eq(e.d.jid, jid);
    }
    leaf.rig.sink.events.clear();

    // The parent's RESULT of the block: the sum over both leaves.
    ina_proto_hdr_t res = part.h;
    res.type = INA_PROTO_RESULT;
    res.flags = 0;
    res.count = res.block_elems;
    const int32_t sum[4] = {3 + 5, 40, 400, 4000};
    std::vector<std::byte> payload(sizeof(sum));
    std::memcpy(payload.data(), sum, sizeof(sum));
    ck_assert(leaf.deliver(res, payload));
    ck_assert_uint_eq(leaf.rig.sink.count(Event::Kind::kResult), 2);
    for (const Event &e : leaf.rig.sink.events) {
        ck_assert_uint_eq(e.hdr.jid, jid);
        ck_assert(e.payload == payload);
    }
    ck_assert_uint_eq(leaf.rig.agg.counters().parent_results, 1);
    expect_pool_whole(leaf.rig);
    ck_assert_uint_eq(leaf.wire.sent.size(), 3);
}
END_TEST

// What names no job of this leaf's at the parent is dropped: no member
// hears anything, nothing goes up, and the job goes on as if it never came
// (a JOB_OPENED for another cookie, or a second one for ours; GRANT, DENY,
// RESULT, ERROR for a JID the parent did not give this leaf; the link's own
// messages).
START_TEST(test_parent_jobs_unknown_dropped)
{
    Leaf leaf;
    const uint32_t jid = leaf.open(2);
    const size_t up = leaf.wire.sent.size();
    auto nothing_happened = [&] {
        ck_assert(leaf.rig.sink.events.empty());
        ck_assert_uint_eq(leaf.wire.sent.size(), up);
        ck_assert_uint_eq(leaf.rig.agg.live_jobs(), 1);
    };
    // Before JOB_OPENED: nothing is known by the parent's JIDs yet.
    ck_assert(!leaf.deliver(Leaf::from_parent(INA_PROTO_GRANT, kParentJid)));
    ck_assert(!leaf.opened(jid + 1, kParentJid)); // not a cookie of ours
    nothing_happened();
    ck_assert(leaf.opened(jid, kParentJid));
    ck_assert(!leaf.opened(jid, kParentJid + 1)); // ours, answered already
    const uint32_t other = kParentJid + 7;
    ck_assert(!leaf.deliver(Leaf::from_parent(INA_PROTO_GRANT, other)));
    ina_proto_hdr_t deny = Leaf::from_parent(INA_PROTO_DENY, other);
    deny.status = INA_PROTO_ERR_NO_RESOURCES;
    ck_assert(!leaf.deliver(deny));
    ina_proto_hdr_t error = Leaf::from_parent(INA_PROTO_ERROR, other);
    error.status = INA_PROTO_ERR_NOT_MEMBER;
    error.op = INA_PROTO_BLOCK;
    ck_assert(!leaf.deliver(error));
    ina_proto_hdr_t res = block_hdr(other, kGroup, 0, 0, kWindow, INA_COLL_ALLREDUCE, INA_OP_SUM,
                                    INA_DT_INT32, 0, 4, 4, 4, false);
    res.type = INA_PROTO_RESULT;
    res.flags = INA_PROTO_F_ACK_ONLY;
    res.count = 0;
    ck_assert(!leaf.deliver(res));
    ck_assert(!leaf.deliver(Leaf::from_parent(INA_PROTO_PING, kParentJid)));
    nothing_happened();

    // The mapping from before still holds: the job's call runs.
    leaf.block(jid, 0, 0);
    leaf.block(jid, 1, 0);
    ck_assert_uint_eq(leaf.wire.sent.size(), up + 2); // CALL_READY, BLOCK
    ck_assert_uint_eq(leaf.wire.sent.back().h.jid, kParentJid);
    ck_assert(leaf.deliver(Leaf::from_parent(INA_PROTO_GRANT, kParentJid, 0)));
    ck_assert_uint_eq(leaf.rig.sink.count(Event::Kind::kDecision), 2);
}
END_TEST

// A job freed at the leaf before the parent answered its JOB_OPEN: nothing
// goes up until then; the JOB_OPENED is answered with JOB_LEAVE for the
// parent's job, and the parent's JID means nothing here after it.
START_TEST(test_parent_jobs_left_before_opened)
{
    Leaf leaf;
    const uint32_t jid = leaf.open(3);
    leave(leaf.rig, leaf.members[0], jid, 0);
    leave(leaf.rig, leaf.members[1], jid, 1);
    ck_assert_uint_eq(leaf.rig.agg.live_jobs(), 0);
    ck_assert_uint_eq(leaf.wire.sent.size(), 1); // the JOB_OPEN
    ck_assert(leaf.opened(jid, kParentJid));
    ck_assert_uint_eq(leaf.wire.sent.size(), 2);
    const ina_proto_hdr_t &bye = leaf.wire.sent[1].h;
    ck_assert_uint_eq(bye.type, INA_PROTO_JOB_LEAVE);
    ck_assert_uint_eq(bye.jid, kParentJid);
    ck_assert_uint_eq(bye.rank, kGroup);
    ck_assert(!leaf.deliver(Leaf::from_parent(INA_PROTO_GRANT, kParentJid)));
    ck_assert(leaf.rig.sink.events.empty());
}
END_TEST

// The parent refuses the job: the leaf's calls of it end (UPSTREAM) and its
// later messages for the cookie are dropped. A job the parent opened is left
// there when the leaf frees it.
START_TEST(test_parent_jobs_refused_and_left)
{
    Leaf leaf;
    const uint32_t refused = leaf.open(4);
    ck_assert(leaf.opened(refused, 0, INA_PROTO_ERR_NO_RESOURCES));
    ck_assert(!leaf.opened(refused, kParentJid));
    leaf.block(refused, 0, 0);
    ck_assert_uint_eq(leaf.rig.sink.count(Event::Kind::kError), 2); // every member
    for (const Event &e : leaf.rig.sink.events) {
        ck_assert(e.kind != Event::Kind::kDecision || !e.d.grant);
        ck_assert(e.kind != Event::Kind::kError || e.status == INA_PROTO_ERR_UPSTREAM);
    }
    ck_assert_uint_eq(leaf.wire.sent.size(), 1); // nothing went up for it but JOB_OPEN
    leaf.rig.sink.events.clear();

    const uint32_t jid = leaf.open(5);
    ck_assert(leaf.opened(jid, kParentJid));
    leave(leaf.rig, leaf.members[0], jid, 0);
    leave(leaf.rig, leaf.members[1], jid, 1);
    const ina_proto_hdr_t &bye = leaf.wire.sent.back().h;
    ck_assert_uint_eq(bye.type, INA_PROTO_JOB_LEAVE);
    ck_assert_uint_eq(bye.jid, kParentJid);
    ck_assert_uint_eq(bye.rank, kGroup);
    ck_assert(!leaf.deliver(Leaf::from_parent(INA_PROTO_GRANT, kParentJid)));
}
END_TEST

// A lost parent: the call under way ends on every member (uplink_lost), and
// the parent's JIDs of that connection mean nothing any more.
START_TEST(test_parent_jobs_lost)
{
    Leaf leaf;
    const uint32_t jid = leaf.open(6);
    ck_assert(leaf.opened(jid, kParentJid));
    leaf.block(jid, 0, 0);
    const size_t up = leaf.wire.sent.size();
    leaf.jobs.lost();
    ck_assert_uint_eq(leaf.rig.sink.count(Event::Kind::kError), 2);
    for (const Event &e : leaf.rig.sink.events) {
        ck_assert_int_eq(e.status, INA_PROTO_ERR_UPSTREAM);
    }
    leaf.rig.sink.events.clear();
    ck_assert(!leaf.deliver(Leaf::from_parent(INA_PROTO_GRANT, kParentJid, 0)));
    ck_assert(!leaf.opened(jid, kParentJid));
    ck_assert(leaf.rig.sink.events.empty());
    ck_assert_uint_eq(leaf.wire.sent.size(), up);
}
END_TEST

// A tree of three levels: the members place this leaf (kGroup of kGroups
// under its spine) and the spine (2 of 3 under the core). The JOB_OPEN up
// puts the spine's place in its tree fields and carries nothing more above
// it: the spine's own JOB_OPEN at the core ends the tree there.
START_TEST(test_parent_jobs_open_passes_places_up)
{
    Leaf leaf;
    const std::vector<ina_proto_tree_level_t> above = {{3, 2}, {4, 1}};
    uint32_t jid = 0;
    for (uint32_t r = 0; r < 2; ++r) {
        const Event e = open_job(leaf.rig.agg, leaf.rig.sink, leaf.members[r], 9, {0, 1}, kWindow,
                                 r, kGroup, kGroups, 0, test_cap(), above);
        ck_assert_int_eq(e.status, INA_PROTO_OK);
        jid = e.jid;
    }
    ck_assert_uint_eq(leaf.wire.sent.size(), 1);
    const Sent &open = leaf.wire.sent[0];
    ck_assert_uint_eq(open.h.rank, kGroup);
    ck_assert_uint_eq(open.h.count, kGroups);
    ck_assert_uint_eq(ina_proto_job_open_leaves(&open.h), 3); // the spine: 2 of 3
    ck_assert_uint_eq(ina_proto_job_open_leaf(&open.h), 2);
    ck_assert_uint_eq(ina_proto_job_open_levels_above(&open.h, open.payload.size()), 1);
    const ina_proto_tree_level_t core =
        ina_proto_job_open_level_above(&open.h, open.payload.data(), 0);
    ck_assert_uint_eq(core.groups, 4);
    ck_assert_uint_eq(core.group, 1);
    ck_assert(leaf.opened(jid, kParentJid));
    // A member that places the spine otherwise describes another job.
    Member other;
    other.id = 3;
    const std::vector<ina_proto_tree_level_t> wrong = {{3, 1}, {4, 1}};
    const Event e = open_job(leaf.rig.agg, leaf.rig.sink, other, 9, {0, 1}, kWindow, 0, kGroup,
                             kGroups, 0, test_cap(), wrong);
    ck_assert_int_eq(e.status, INA_PROTO_ERR_MISMATCH);
}
END_TEST

// An agent in the middle of a tree (its members are child agents, its job
// goes on up): it takes its lease at the first child's vote but says
// CALL_READY to its parent only once every child voted; the parent's GRANT
// then reaches every child.
START_TEST(test_parent_jobs_middle_votes_once_children_did)
{
    Leaf mid;
    uint32_t jid = 0;
    for (uint32_t r = 0; r < 2; ++r) {
        const Event e = open_job(mid.rig.agg, mid.rig.sink, mid.members[r], 10, {0, 1}, kWindow,
                                 r, kGroup, kGroups, 0, test_cap(), {}, INA_PROTO_F_CHILDREN);
        ck_assert_int_eq(e.status, INA_PROTO_OK);
        jid = e.jid;
    }
    mid.rig.sink.events.clear();
    ck_assert_uint_eq(mid.wire.sent.size(), 1);
    ck_assert(mid.opened(jid, kParentJid));
    auto vote = [&](uint32_t r) {
        ina_proto_hdr_t h;
        ina_proto_init(&h, INA_PROTO_CALL_READY);
        h.jid = jid;
        h.rank = r;
        h.mid = 0;
        h.window = kWindow;
        h.coll = INA_COLL_ALLREDUCE;
        h.op = INA_OP_SUM;
        h.dtype = INA_DT_INT32;
        h.arg = 4;
        expect_valid(h, 0);
        mid.rig.agg.call_ready(mid.members[r], h);
    };
    vote(0);
    ck_assert_uint_eq(mid.wire.sent.size(), 1); // child 1 has not voted: nothing up
    ck_assert(mid.rig.sink.events.empty());
    vote(1);
    ck_assert_uint_eq(mid.wire.sent.size(), 2);
    ck_assert_uint_eq(mid.wire.sent[1].h.type, INA_PROTO_CALL_READY);
    ck_assert_uint_eq(mid.wire.sent[1].h.jid, kParentJid);
    ck_assert(mid.rig.sink.events.empty()); // the GRANT is the parent's to give
    vote(1); // a vote again changes nothing
    ck_assert_uint_eq(mid.wire.sent.size(), 2);
    ina_proto_hdr_t grant = Leaf::from_parent(INA_PROTO_GRANT, kParentJid, 0);
    grant.window = kWindow;
    ck_assert(mid.deliver(grant));
    ck_assert_uint_eq(mid.rig.sink.count(Event::Kind::kDecision), 2);
    for (const Event &e : mid.rig.sink.events) {
        ck_assert(e.d.grant);
    }
}
END_TEST

int main()
{
    return ina_test::run_suite("parent_jobs", "parent_jobs",
                               {test_parent_jobs_opened_maps_jids, test_parent_jobs_unknown_dropped,
                                test_parent_jobs_left_before_opened,
                                test_parent_jobs_refused_and_left, test_parent_jobs_lost,
                                test_parent_jobs_open_passes_places_up,
                                test_parent_jobs_middle_votes_once_children_did});
}

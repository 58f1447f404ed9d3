// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A tree of agents without a transport: two leaf Aggregators, each with its
// members, under one spine Aggregator, linked in process (a leaf's Uplink
// queues what it says to the spine; the spine's Sink queues what it says to
// each leaf; the test delivers both in order). Checks what docs/HIERARCHY.md
// promises: each level reduces in member order (the tree's association,
// bit-identical in any interleaving), a leaf sends one partial per block and
// releases its Seg only when the parent's RESULT came back and went on, the
// members hear GRANT only once every leaf holds a lease, and a DENY by a leaf
// or by the spine reaches every member of every leaf alike, and a malformed
// partial from a leaf ends the call on every member alike.
#include <check.h>

#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <new>
#include <random>
#include <vector>

#include "aggregation_fakes.h"
#include "check_main.h"

using namespace agg_test;

namespace {

constexpr uint32_t kLeaves = 2;
constexpr uint32_t kPerLeaf = 2;
constexpr uint32_t kWindow = 4;

struct Tree;

// The spine's member that stands for one leaf, and that leaf's link up.
struct LeafLink final : Member, Uplink {
    Tree *tree = nullptr;
    uint32_t index = 0;
    std::map<uint32_t, uint32_t> up_jid; // leaf JID -> spine JID
    std::map<uint32_t, uint32_t> down;   // spine JID -> leaf JID
    std::map<uint32_t, uint16_t> up_win; // leaf JID -> spine window
    uint64_t partials = 0;
    // Changes a partial on its way up (a child agent gone wrong), if set.
    std::function<void(ina_proto_hdr_t &)> tamper;
    // The next n partials cannot be queued: partial() throws std::bad_alloc,
    // as ParentLink may (the agent survives it).
    int fail_partials = 0;

    void open(const Job &job) override;
    void leave(const Job &job) override;
    void ready(const Job &job, uint64_t mid, const Call &call) override;
    void abort(const Job &job, uint64_t mid, ina_proto_status_t why) override;
    void partial(const Job &job, Partial p) override;
};

// The spine's sink: routes what it says to the leaf it names.
struct SpineSink final : Sink {
    Tree *tree = nullptr;
    void job_opened(Member &to, const ina_proto_hdr_t &req, uint32_t jid, uint32_t window,
                    uint32_t ahead, ina_proto_status_t status) override;
    void decision(Member &to, uint32_t rank, const Decision &d) override;
    void result(Member &to, uint32_t rank, const ina_proto_hdr_t &blk, BufRef payload,
                size_t len) override;
    void ack(Member &to, uint32_t rank, const ina_proto_hdr_t &blk) override;
    void error(Member &to, const ina_proto_hdr_t &req, ina_proto_status_t status,
               const char *why, bool in_flight) override;
};

struct Tree {
    SpineSink spine_sink;
    TestScheduler *spine_sched = nullptr;
    Aggregator spine;
    LeafLink links[kLeaves];
    std::unique_ptr<Rig> leaves[kLeaves];
    Member members[kLeaves][kPerLeaf];
    std::deque<std::function<void()>> wire; // messages in flight, in order

    explicit Tree(const AggregatorConfig &cfg = small_config(64))
        : spine(cfg,
                [this](SegPool &pool) {
                    auto s = std::make_unique<TestScheduler>(pool);
                    spine_sched = s.get();
                    return s;
                },
                spine_sink)
    {
        spine_sink.tree = this;
        for (uint32_t l = 0; l < kLeaves; ++l) {
            links[l].tree = this;
            links[l].index = l;
            links[l].id = 100 + l;
            leaves[l] = std::make_unique<Rig>(small_config(64));
            leaves[l]->agg.set_uplink(&links[l]);
            for (uint32_t r = 0; r < kPerLeaf; ++r) {
                members[l][r].id = 10 * l + r;
            }
        }
    }
    void deliver()
    {
        while (!wire.empty()) {
            auto f = std::move(wire.front());
            wire.pop_front();
            f();
        }
    }
    // Every member opens the job (each leaf's part of a communicator of
    // kLeaves * kPerLeaf ranks); returns the leaves' JIDs.
    std::vector<uint32_t> open(uint32_t tag)
    {
        std::vector<uint32_t> jids(kLeaves);
        for (uint32_t l = 0; l < kLeaves; ++l) {
            for (uint32_t r = 0; r < kPerLeaf; ++r) {
                const Event e = open_job(leaves[l]->agg, leaves[l]->sink, members[l][r], tag,
                                         {7, 8}, kWindow, r, l, kLeaves);
                ck_assert_int_eq(e.status, INA_PROTO_OK);
                jids[l] = e.jid;
            }
            leaves[l]->sink.events.clear();
        }
        deliver();
        return jids;
    }
};

void LeafLink::open(const Job &job)
{
    const uint32_t leaf_jid = job.jid();
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_JOB_OPEN);
    h.rank = job.tree().group;
    h.count = job.tree().groups;
    h.window = static_cast<uint16_t>(job.asked_window());
    h.arg = leaf_jid; // the cookie
    h.flags = INA_PROTO_F_CHILDREN;
    std::vector<uint8_t> payload(job.key().begin(), job.key().end());
    payload.insert(payload.end(), job.cap().begin(), job.cap().end()); // the members' own
    for (uint32_t i = 0; i < job.tree().groups; ++i) {
        const auto *b = reinterpret_cast<const uint8_t *>(&i);
        payload.insert(payload.end(), b, b + 4);
    }
    expect_valid(h, payload.size());
    tree->wire.push_back([this, h, payload] { tree->spine.job_open(*this, h, payload.data(), payload.size()); });
}

void LeafLink::leave(const Job &job)
{
    const uint32_t leaf_jid = job.jid();
    tree->wire.push_back([this, leaf_jid] {
        ina_proto_hdr_t h;
        ina_proto_init(&h, INA_PROTO_JOB_LEAVE);
        h.jid = up_jid.at(leaf_jid);
        h.rank = index;
        tree->spine.job_leave(*this, h);
    });
}

void LeafLink::ready(const Job &job, uint64_t mid, const Call &call)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_CALL_READY);
    h.jid = up_jid.at(job.jid());
    h.rank = index;
    h.mid = mid;
    h.window = up_win.at(job.jid());
    h.coll = call.coll;
    h.op = call.op;
    h.dtype = call.dtype;
    h.arg = call.total;
    expect_valid(h, 0);
    tree->wire.push_back([this, h] { tree->spine.call_ready(*this, h); });
}

void LeafLink::abort(const Job &job, uint64_t mid, ina_proto_status_t why)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_CALL_ABORT);
    h.jid = up_jid.at(job.jid());
    h.rank = index;
    h.mid = mid;
    h.status = static_cast<uint8_t>(why);
    expect_valid(h, 0);
    tree->wire.push_back([this, h] { tree->spine.call_abort(*this, h); });
}

void LeafLink::partial(const Job &job, Partial p)
{
    if (fail_partials > 0) {
        --fail_partials;
        throw std::bad_alloc();
    }
    ina_proto_hdr_t h = p.hdr;
    h.jid = up_jid.at(job.jid());
    h.rank = index;
    h.window = up_win.at(job.jid());
    h.seg = h.sid % h.window;
    expect_valid(h, p.len);
    if (tamper) {
        tamper(h);
    }
    ++partials;
    std::vector<std::byte> data(p.len);
    if (p.len > 0) {
        std::memcpy(data.data(), p.buf.data() + p.offset, p.len);
    }
    tree->wire.push_back([this, h, data] { tree->spine.block(*this, h, data.data()); });
}

void SpineSink::job_opened(Member &to, const ina_proto_hdr_t &req, uint32_t jid, uint32_t window,
                           uint32_t ahead, ina_proto_status_t status)
{
    auto &l = static_cast<LeafLink &>(to);
    const uint32_t leaf_jid = static_cast<uint32_t>(req.arg);
    tree->wire.push_back([&l, leaf_jid, jid, window, status] {
        l.up_jid[leaf_jid] = jid;
        l.down[jid] = leaf_jid;
        l.up_win[leaf_jid] = static_cast<uint16_t>(window);
        l.tree->leaves[l.index]->agg.uplink_opened(leaf_jid, status, window);
    });
}

void SpineSink::decision(Member &to, uint32_t, const Decision &d)
{
    auto &l = static_cast<LeafLink &>(to);
    tree->wire.push_back([&l, d] {
        l.tree->leaves[l.index]->agg.uplink_decision(l.down.at(d.jid), d.mid, d.grant, d.status);
    });
}

void SpineSink::result(Member &to, uint32_t, const ina_proto_hdr_t &blk, BufRef payload,
                       size_t len)
{
    auto &l = static_cast<LeafLink &>(to);
    std::vector<std::byte> data(payload.data(), payload.data() + len);
    tree->wire.push_back([&l, blk, data] {
        l.tree->leaves[l.index]->agg.uplink_result(l.down.at(blk.jid), blk, data.data(),
                                                   data.size());
    });
}

void SpineSink::ack(Member &to, uint32_t, const ina_proto_hdr_t &blk)
{
    auto &l = static_cast<LeafLink &>(to);
    tree->wire.push_back([&l, blk] {
        l.tree->leaves[l.index]->agg.uplink_result(l.down.at(blk.jid), blk, nullptr, 0);
    });
}

void SpineSink::error(Member &to, const ina_proto_hdr_t &req, ina_proto_status_t status,
                      const char *, bool in_flight)
{
    auto &l = static_cast<LeafLink &>(to);
    tree->wire.push_back([&l, req, status, in_flight] {
        auto it = l.down.find(req.jid);
        if (it != l.down.end()) {
            l.tree->leaves[l.index]->agg.uplink_error(it->second, req.mid, status, in_flight);
        }
    });
}

// One call driven by every member of every leaf: blocks in window order, in
// an interleaving the test picks, and what each member heard.
struct TreeCall {
    Tree &t;
    std::vector<uint32_t> jids;
    uint64_t mid;
    unsigned coll, op, dtype;
    uint32_t block_elems;
    uint64_t total;
    // Per member (leaf-major): the payload of each block, piece offset/count.
    std::function<void(uint32_t m, uint32_t sid, uint32_t &off, uint32_t &cnt,
                       std::vector<std::byte> &bytes)>
        piece;
    uint32_t nblocks() const { return static_cast<uint32_t>((total + block_elems - 1) / block_elems); }
    static constexpr uint32_t N = kLeaves * kPerLeaf;
    std::vector<uint32_t> next = std::vector<uint32_t>(N, 0);
    std::vector<std::vector<bool>> got = std::vector<std::vector<bool>>(N);
    std::vector<int> grants = std::vector<int>(N, 0);
    std::vector<int> denies = std::vector<int>(N, 0);
    std::vector<int> errors = std::vector<int>(N, 0);
    std::vector<ina_proto_status_t> error_status = std::vector<ina_proto_status_t>(N);
    std::vector<bool> error_in_flight = std::vector<bool>(N, false);
    std::vector<ina_proto_status_t> deny_status = std::vector<ina_proto_status_t>(N);
    std::vector<std::vector<std::byte>> result = std::vector<std::vector<std::byte>>(N);

    bool allow_errors = false; // an ERROR for the call is expected

    bool can_send(uint32_t m) const
    {
        return denies[m] == 0 && errors[m] == 0 && next[m] < nblocks() &&
               (next[m] < kWindow || got[m][next[m] - kWindow]);
    }
    void send(uint32_t m)
    {
        const uint32_t l = m / kPerLeaf, r = m % kPerLeaf, sid = next[m]++;
        const uint32_t sc = static_cast<uint32_t>(
            std::min<uint64_t>(block_elems, total - uint64_t{sid} * block_elems));
        uint32_t off = 0, cnt = sc;
        std::vector<std::byte> bytes;
        piece(m, sid, off, cnt, bytes);
        ina_proto_hdr_t h = block_hdr(jids[l], r, mid, sid, kWindow, coll, op, dtype, off, cnt,
                                      coll == INA_COLL_BARRIER ? 0 : sc, total, true);
        t.leaves[l]->agg.block(t.members[l][r], h, bytes.data());
    }
    void drain()
    {
        t.deliver();
        const size_t esz = ina_proto_dtype_size(dtype);
        for (uint32_t l = 0; l < kLeaves; ++l) {
            for (Event &e : t.leaves[l]->sink.events) {
                const uint32_t m = l * kPerLeaf + static_cast<uint32_t>(e.to - t.members[l]);
                if (e.kind == Event::Kind::kDecision) {
                    ck_assert_uint_eq(e.d.mid, mid);
                    (e.d.grant ? grants : denies)[m]++;
                    deny_status[m] = e.d.status;
                } else if (e.kind == Event::Kind::kResult) {
                    ck_assert_msg(grants[m] == 1, "member %u: RESULT before GRANT", m);
                    ck_assert(!got[m][e.hdr.sid]);
                    got[m][e.hdr.sid] = true;
                    std::memcpy(result[m].data() + size_t{e.hdr.sid} * block_elems * esz,
                                e.payload.data(), e.payload.size());
                } else if (e.kind == Event::Kind::kError && allow_errors) {
                    ck_assert_uint_eq(e.hdr.mid, mid);
                    errors[m]++;
                    error_status[m] = e.status;
                    error_in_flight[m] = (e.hdr.flags & INA_PROTO_F_IN_FLIGHT) != 0;
                } else {
                    ck_abort_msg("member %u: unexpected event %d", m, static_cast<int>(e.kind));
                }
            }
            t.leaves[l]->sink.events.clear();
        }
    }
    // Send until nobody can, picking members at random; `order` limits who.
    void run(std::mt19937 &rng, const std::vector<uint32_t> &who = {})
    {
        for (uint32_t m = 0; m < N; ++m) {
            got[m].assign(nblocks(), false);
            result[m].assign(total * ina_proto_dtype_size(dtype), std::byte{0});
        }
        for (;;) {
            std::vector<uint32_t> ready;
            for (uint32_t m = 0; m < N; ++m) {
                if (can_send(m) && (who.empty() || std::count(who.begin(), who.end(), m))) {
                    ready.push_back(m);
                }
            }
            if (ready.empty()) {
                return;
            }
            send(ready[rng() % ready.size()]);
            drain();
        }
    }
};

double value(uint32_t m, uint64_t i) { return 1.0 / (3.0 + m) + 1e-9 * static_cast<double>(i); }

} // namespace

// ALLREDUCE of doubles: every member gets the tree's sum, (a0 + a1) + (b0 +
// b1), bit-identical whatever the interleaving; one partial per block and
// leaf crosses each leaf's link; every lease comes back.
START_TEST(test_tree_allreduce_order)
{
    for (unsigned seed = 1; seed <= 20; ++seed) {
        Tree t;
        const std::vector<uint32_t> jids = t.open(seed);
        TreeCall c{t, jids, 0, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_DOUBLE, 64, 64 * 9 + 5};
        c.piece = [&](uint32_t m, uint32_t sid, uint32_t &, uint32_t &cnt,
                      std::vector<std::byte> &bytes) {
            bytes.resize(size_t{cnt} * sizeof(double));
            auto *d = reinterpret_cast<double *>(bytes.data());
            for (uint32_t i = 0; i < cnt; ++i) {
                d[i] = value(m, uint64_t{sid} * 64 + i);
            }
        };
        std::mt19937 rng(seed);
        c.run(rng);
        for (uint32_t m = 0; m < TreeCall::N; ++m) {
            ck_assert_int_eq(c.grants[m], 1);
            for (uint32_t s = 0; s < c.nblocks(); ++s) {
                ck_assert(c.got[m][s]);
            }
            const auto *d = reinterpret_cast<const double *>(c.result[m].data());
            for (uint64_t i = 0; i < c.total; ++i) {
                const double want =
                    (value(0, i) + value(1, i)) + (value(2, i) + value(3, i));
                ck_assert_msg(std::memcmp(&d[i], &want, sizeof(double)) == 0,
                              "seed %u member %u element %llu", seed, m,
                              static_cast<unsigned long long>(i));
            }
        }
        for (uint32_t l = 0; l < kLeaves; ++l) {
            ck_assert_uint_eq(t.links[l].partials, c.nblocks());
            ck_assert_uint_eq(t.leaves[l]->agg.counters().partials_up, c.nblocks());
            ck_assert_uint_eq(t.leaves[l]->agg.counters().parent_results, c.nblocks());
            ck_assert_uint_eq(t.leaves[l]->agg.pool().free_segs(), t.leaves[l]->agg.pool().size());
        }
        ck_assert_uint_eq(t.spine.counters().ready_in, kLeaves);
        ck_assert_uint_eq(t.spine.counters().blocks_in, kLeaves * c.nblocks());
        ck_assert_uint_eq(t.spine.pool().free_segs(), t.spine.pool().size());
    }
}
END_TEST

// ALLGATHER: each leaf sends its members' chunks up as one piece; every
// member gets every chunk.
START_TEST(test_tree_allgather)
{
    Tree t;
    const std::vector<uint32_t> jids = t.open(99);
    const uint32_t chunk = 50; // bytes per member: blocks of 64 cut chunks
    TreeCall c{t, jids, 0, INA_COLL_ALLGATHER, INA_OP_REPLACE, INA_DT_UINT8, 64,
               chunk * TreeCall::N};
    c.piece = [&](uint32_t m, uint32_t sid, uint32_t &off, uint32_t &cnt,
                  std::vector<std::byte> &bytes) {
        const uint64_t lo = uint64_t{sid} * 64, hi = lo + cnt;
        const uint64_t mlo = std::max<uint64_t>(lo, uint64_t{m} * chunk);
        const uint64_t mhi = std::min<uint64_t>(hi, uint64_t{m + 1} * chunk);
        off = 0;
        cnt = 0;
        bytes.clear();
        if (mlo < mhi) {
            off = static_cast<uint32_t>(mlo - lo);
            cnt = static_cast<uint32_t>(mhi - mlo);
            for (uint64_t i = mlo; i < mhi; ++i) {
                bytes.push_back(static_cast<std::byte>(i * 7 + m));
            }
        }
    };
    std::mt19937 rng(5);
    c.run(rng);
    for (uint32_t m = 0; m < TreeCall::N; ++m) {
        ck_assert_int_eq(c.grants[m], 1);
        for (uint64_t i = 0; i < c.total; ++i) {
            ck_assert_uint_eq(static_cast<unsigned>(c.result[m][i]),
                              static_cast<unsigned>(static_cast<std::byte>(i * 7 + i / chunk)));
        }
    }
}
END_TEST

// The GRANT waits for every leaf: while only leaf 0's members called, they
// hear nothing (leaf 1 has not voted); once a member of leaf 1 sends, all do.
START_TEST(test_tree_grant_waits_for_every_leaf)
{
    Tree t;
    const std::vector<uint32_t> jids = t.open(7);
    TreeCall c{t, jids, 0, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, 16, 16 * 8};
    c.piece = [](uint32_t m, uint32_t sid, uint32_t &, uint32_t &cnt,
                 std::vector<std::byte> &bytes) {
        bytes.resize(size_t{cnt} * 4);
        auto *d = reinterpret_cast<int32_t *>(bytes.data());
        for (uint32_t i = 0; i < cnt; ++i) {
            d[i] = static_cast<int32_t>(m * 1000 + sid * 16 + i);
        }
    };
    std::mt19937 rng(3);
    c.run(rng, {0, 1});
    ck_assert_uint_eq(t.spine.counters().ready_in, 1);
    for (uint32_t m = 0; m < TreeCall::N; ++m) {
        ck_assert_int_eq(c.grants[m] + c.denies[m], 0);
    }
    ck_assert_uint_eq(t.links[0].partials, kWindow); // a window's worth went up, and waits
    for (uint32_t m = 0; m < TreeCall::N; ++m) {
        c.got[m].resize(c.nblocks());
    }
    c.send(2);
    c.drain();
    for (uint32_t m = 0; m < TreeCall::N; ++m) {
        ck_assert_int_eq(c.grants[m], 1);
    }
}
END_TEST

// A partial the link could not queue (std::bad_alloc) stays whole at the
// leaf and goes up at its next flush: the call completes, exact.
START_TEST(test_tree_partial_not_queued)
{
    Tree t;
    const std::vector<uint32_t> jids = t.open(11);
    TreeCall c{t, jids, 0, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, 16, 16 * 8};
    c.piece = [](uint32_t m, uint32_t sid, uint32_t &, uint32_t &cnt,
                 std::vector<std::byte> &bytes) {
        bytes.resize(size_t{cnt} * 4);
        auto *d = reinterpret_cast<int32_t *>(bytes.data());
        for (uint32_t i = 0; i < cnt; ++i) {
            d[i] = static_cast<int32_t>(m * 1000 + sid * 16 + i);
        }
    };
    t.links[0].fail_partials = 1;
    c.send(0);
    bool threw = false;
    try {
        c.send(1); // completes leaf 0's block 0: its partial cannot go up
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    ck_assert(threw);
    ck_assert_uint_eq(t.links[0].partials, 0);
    c.drain();
    std::mt19937 rng(11);
    c.run(rng); // leaf 0's next block takes the first one up with it
    for (uint32_t m = 0; m < TreeCall::N; ++m) {
        ck_assert_int_eq(c.grants[m], 1);
        const auto *d = reinterpret_cast<const int32_t *>(c.result[m].data());
        for (uint32_t i = 0; i < c.total; ++i) {
            ck_assert_int_eq(d[i], static_cast<int32_t>(6000 + 4 * i));
        }
    }
    ck_assert_uint_eq(t.links[0].partials, c.nblocks());
    ck_assert_uint_eq(t.leaves[0]->agg.pool().free_segs(), t.leaves[0]->agg.pool().size());
}
END_TEST

// A DENY by one leaf (its scheduler) or by the spine: every member of both
// leaves hears the same DENY once, nothing is offloaded, every lease is back.
START_TEST(test_tree_deny_by_leaf_or_spine)
{
    for (int who = 0; who < 3; ++who) { // leaf 0, leaf 1, the spine
        Tree t;
        const std::vector<uint32_t> jids = t.open(11);
        TestScheduler *s = who < 2 ? t.leaves[who]->sched : t.spine_sched;
        s->mode = TestScheduler::Mode::kDeny;
        s->deny_status = INA_PROTO_ERR_UNSUPPORTED;
        TreeCall c{t, jids, 0, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, 8, 40};
        c.piece = [](uint32_t, uint32_t, uint32_t &, uint32_t &cnt,
                     std::vector<std::byte> &bytes) { bytes.assign(size_t{cnt} * 8, std::byte{1}); };
        std::mt19937 rng(who);
        c.run(rng);
        for (uint32_t m = 0; m < TreeCall::N; ++m) {
            ck_assert_msg(c.denies[m] == 1 && c.grants[m] == 0, "who %d member %u", who, m);
            ck_assert_int_eq(c.deny_status[m], INA_PROTO_ERR_UNSUPPORTED);
        }
        for (uint32_t l = 0; l < kLeaves; ++l) {
            ck_assert_uint_eq(t.leaves[l]->agg.pool().free_segs(), t.leaves[l]->agg.pool().size());
            ck_assert_uint_eq(t.leaves[l]->agg.counters().parent_results, 0);
        }
        ck_assert_uint_eq(t.spine.pool().free_segs(), t.spine.pool().size());
        if (who == 2) {
            ck_assert_uint_eq(t.spine.counters().calls_granted, 0);
        }
        ck_assert_uint_eq(t.spine.counters().calls_denied, 1);
    }
}
END_TEST

// A malformed partial from a child agent (wrong op, a size other than the
// call's, more elements than a Seg holds, a block before the child's vote):
// the spine refuses it, and since that leaf's part of the block is lost, the
// call ends on every member of both leaves alike: all DENY when it comes
// before the GRANT, else all GRANT then one ERROR. Nothing wrong is
// delivered, every lease comes back on all three agents, the job goes on.
START_TEST(test_tree_malformed_partial)
{
    const std::vector<std::function<void(ina_proto_hdr_t &)>> tampers = {
        [](ina_proto_hdr_t &h) { h.op = INA_OP_MAX; },
        [](ina_proto_hdr_t &h) { h.arg += 1; },
        [](ina_proto_hdr_t &h) { h.block_elems = 1u << 20; },
        [](ina_proto_hdr_t &h) { h.count = h.block_elems - 1; },
    };
    for (size_t k = 0; k < tampers.size(); ++k) {
        // Seeds 4 and 5: leaf 0's members call first, so its bad partial
        // reaches the spine before leaf 1 voted (before any GRANT).
        for (int seed = 0; seed < 6; ++seed) {
            const bool early = seed >= 4;
            const uint32_t bad_leaf = early ? 0 : static_cast<uint32_t>(seed % 2);
            const uint32_t bad_sid = early ? 0 : 1;
            Tree t;
            const std::vector<uint32_t> jids = t.open(13);
            t.links[bad_leaf].tamper = [&, k, bad_sid](ina_proto_hdr_t &h) {
                if (h.sid == bad_sid) {
                    tampers[k](h);
                }
            };
            TreeCall c{t, jids, 0, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, 8, 64};
            c.allow_errors = true;
            c.piece = [](uint32_t m, uint32_t sid, uint32_t &, uint32_t &cnt,
                         std::vector<std::byte> &bytes) {
                bytes.resize(size_t{cnt} * 8);
                auto *d = reinterpret_cast<int64_t *>(bytes.data());
                for (uint32_t i = 0; i < cnt; ++i) {
                    d[i] = static_cast<int64_t>(m * 100000 + sid * 8 + i);
                }
            };
            std::mt19937 rng(static_cast<unsigned>(seed));
            if (early) {
                c.run(rng, {0, 1});
            }
            c.run(rng);
            const bool denied = c.denies[0] == 1;
            ck_assert_msg(denied == early, "k %zu seed %d: denies %d grants %d errors %d", k, seed, c.denies[0], c.grants[0], c.errors[0]);
            for (uint32_t m = 0; m < TreeCall::N; ++m) {
                ck_assert_msg(denied ? c.denies[m] == 1 && c.grants[m] == 0 && c.errors[m] == 0
                                     : c.grants[m] == 1 && c.denies[m] == 0 && c.errors[m] == 1,
                              "tamper %zu seed %d member %u: grants %d denies %d errors %d", k,
                              seed, m, c.grants[m], c.denies[m], c.errors[m]);
                // What did arrive is right (block 0 may have completed).
                for (uint32_t sid = 0; sid < c.nblocks(); ++sid) {
                    if (!c.got[m][sid]) {
                        continue;
                    }
                    const auto *d = reinterpret_cast<const int64_t *>(c.result[m].data());
                    for (uint32_t i = 0; i < 8; ++i) {
                        int64_t want = 0;
                        for (uint32_t q = 0; q < TreeCall::N; ++q) {
                            want += static_cast<int64_t>(q * 100000 + sid * 8 + i);
                        }
                        ck_assert_int_eq(d[sid * 8 + i], want);
                    }
                }
                ck_assert(!c.got[m][bad_sid]);
            }
            ck_assert_uint_ge(t.spine.counters().rejected[INA_PROTO_ERR_MISMATCH] +
                                  t.spine.counters().rejected[INA_PROTO_ERR_MALFORMED],
                              1);
            for (uint32_t l = 0; l < kLeaves; ++l) {
                ck_assert_uint_eq(t.leaves[l]->agg.pool().free_segs(),
                                  t.leaves[l]->agg.pool().size());
            }
            ck_assert_uint_eq(t.spine.pool().free_segs(), t.spine.pool().size());
            // The job goes on: the next call, untampered, is offloaded.
            t.links[bad_leaf].tamper = nullptr;
            TreeCall next{t, jids, 1, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, 8, 16};
            next.piece = c.piece;
            next.run(rng);
            for (uint32_t m = 0; m < TreeCall::N; ++m) {
                ck_assert_int_eq(next.grants[m], 1);
                ck_assert(next.got[m][0] && next.got[m][1]);
            }
        }
    }
}
END_TEST

// The tree loses a part under a call in flight (the parent, or a sibling
// leaf): every member's ERROR says the call was under way (its members
// rebuild it among themselves). A later call that the broken tree refuses
// gets the same status without that word (its members go to the host).
START_TEST(test_tree_loss_in_flight)
{
    for (const bool parent_lost : {true, false}) {
        Tree t;
        const std::vector<uint32_t> jids = t.open(7);
        auto fill = [](uint32_t m, uint32_t sid, uint32_t &, uint32_t &cnt,
                       std::vector<std::byte> &bytes) {
            bytes.resize(size_t{cnt} * sizeof(int64_t));
            auto *d = reinterpret_cast<int64_t *>(bytes.data());
            for (uint32_t i = 0; i < cnt; ++i) {
                d[i] = static_cast<int64_t>(m * 1000 + sid * 8 + i);
            }
        };
        // One member of each leaf sends its first window; the others never
        // come, so the call stays open at both leaves and the spine.
        TreeCall c{t, jids, 0, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, 8, 8 * 12};
        c.piece = fill;
        c.allow_errors = true;
        std::mt19937 rng(7);
        c.run(rng, {0, kPerLeaf});
        const uint32_t lost = kLeaves - 1; // the sibling leaf lost (parent_lost: none)
        if (parent_lost) {
            for (uint32_t l = 0; l < kLeaves; ++l) {
                t.leaves[l]->agg.uplink_lost();
            }
        } else {
            t.spine.member_lost(t.links[lost]);
        }
        c.drain();
        const ina_proto_status_t want =
            parent_lost ? INA_PROTO_ERR_UPSTREAM : INA_PROTO_ERR_NOT_MEMBER;
        for (uint32_t m = 0; m < TreeCall::N; ++m) {
            if (!parent_lost && m / kPerLeaf == lost) {
                continue; // its leaf is gone (not asked here)
            }
            ck_assert_msg(c.errors[m] == 1 && c.error_status[m] == want && c.error_in_flight[m],
                          "parent_lost %d member %u: errors %d status %d in flight %d",
                          parent_lost, m, c.errors[m], c.error_status[m],
                          static_cast<int>(c.error_in_flight[m]));
        }
        // The next call at leaf 0: refused by the broken tree, not in flight.
        TreeCall next{t, jids, 1, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, 8, 8 * 12};
        next.piece = fill;
        next.allow_errors = true;
        next.run(rng, {0});
        for (uint32_t m = 0; m < kPerLeaf; ++m) {
            ck_assert_msg(next.errors[m] == 1 && next.error_status[m] == want &&
                              !next.error_in_flight[m],
                          "parent_lost %d member %u: next call errors %d status %d in flight %d",
                          parent_lost, m, next.errors[m], next.error_status[m],
                          static_cast<int>(next.error_in_flight[m]));
        }
    }
}
END_TEST

// A job over several leaves at an agent without a parent: refused at
// JOB_OPEN (UPSTREAM), so its calls never wait for members that cannot come.
START_TEST(test_tree_job_without_parent_refused)
{
    Rig rig;
    Member m;
    const Event e = open_job(rig.agg, rig.sink, m, 1, {0}, 4, 0, 0, 2);
    ck_assert_int_eq(e.status, INA_PROTO_ERR_UPSTREAM);
    ck_assert_uint_eq(rig.agg.live_jobs(), 0);
}
END_TEST

// A spine whose window is narrower than its leaves' (max window 2 against
// their 4): a leaf's completed block waits for its slot at the spine, and
// the leaf counts those and their time (what ina-switchctl status shows of a
// level whose window is short); the sums stay exact.
START_TEST(test_tree_partials_wait_for_a_narrow_parent)
{
    AggregatorConfig narrow = small_config(64);
    narrow.max_window = 2;
    Tree t(narrow);
    const std::vector<uint32_t> jids = t.open(21);
    TreeCall c{t, jids, 0, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, 16, 16 * 12};
    c.piece = [](uint32_t m, uint32_t sid, uint32_t &, uint32_t &cnt,
                 std::vector<std::byte> &bytes) {
        bytes.resize(size_t{cnt} * 4);
        auto *d = reinterpret_cast<int32_t *>(bytes.data());
        for (uint32_t i = 0; i < cnt; ++i) {
            d[i] = static_cast<int32_t>(m * 1000 + sid * 16 + i);
        }
    };
    std::mt19937 rng(21);
    c.run(rng);
    uint64_t waited = 0;
    for (uint32_t l = 0; l < kLeaves; ++l) {
        const Counters &k = t.leaves[l]->agg.counters();
        ck_assert_uint_eq(k.partials_up, c.nblocks());
        ck_assert_uint_le(k.partials_waited, c.nblocks());
        waited += k.partials_waited;
        ck_assert(k.partials_waited > 0 || k.partial_wait_ns == 0);
    }
    ck_assert_msg(waited > 0, "no partial waited for the spine's narrower window");
    for (uint32_t m = 0; m < TreeCall::N; ++m) {
        ck_assert_int_eq(c.grants[m], 1);
        const auto *d = reinterpret_cast<const int32_t *>(c.result[m].data());
        for (uint32_t i = 0; i < c.total; ++i) {
            ck_assert_int_eq(d[i], static_cast<int32_t>(6000 + 4 * i));
        }
    }
}
END_TEST

int main()
{
    return ina_test::run_suite("tree", "tree",
                               {test_tree_allreduce_order, test_tree_allgather,
                                test_tree_grant_waits_for_every_leaf,
                                test_tree_deny_by_leaf_or_spine, test_tree_partial_not_queued,
                                test_tree_malformed_partial, test_tree_loss_in_flight,
                                test_tree_job_without_parent_refused,
                                test_tree_partials_wait_for_a_narrow_parent},
                               60);
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Test doubles for driving the aggregation core (agg::Aggregator) without a
// transport: a Sink that records everything the core says, a scheduler whose
// answers the test sets, header builders that produce messages the wire
// validator accepts, and a simulation of members that send blocks the way a
// client does (the first window at once, block sid + window only after the
// RESULT of block sid), in an order the test picks.
#ifndef INA_TEST_AGGREGATION_FAKES_H
#define INA_TEST_AGGREGATION_FAKES_H

#include <check.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <vector>

#include "aggregator.h"
#include "ina_proto.h"
#include "ina_test_proto.h"

namespace agg_test {

using namespace ina::agg;

struct Event {
    enum class Kind { kOpened, kDecision, kResult, kAck, kError };
    explicit Event(Kind k) : kind(k) {}
    Kind kind;
    Member *to = nullptr;
    uint32_t rank = 0;
    ina_proto_hdr_t hdr{};           // the request / block / offending message
    ina_proto_status_t status = INA_PROTO_OK;
    Decision d{};
    uint32_t jid = 0;                // kOpened
    uint32_t window = 0;             // kOpened
    uint32_t ahead = 0;              // kOpened
    std::vector<std::byte> payload;  // kResult: a copy
    bool has_buffer = false;         // kResult: the reference was not empty
};

class FakeSink final : public Sink {
public:
    std::vector<Event> events;
    // Keep the result references, as sends in flight would; else drop them at once.
    bool hold_refs = false;
    std::vector<BufRef> held;
    // The next n decisions cannot be sent: decision() throws std::bad_alloc,
    // as a transport out of memory may (the agent survives it).
    int throw_decisions = 0;

    void job_opened(Member &to, const ina_proto_hdr_t &req, uint32_t jid, uint32_t window,
                    uint32_t ahead, ina_proto_status_t status) override
    {
        Event e(Event::Kind::kOpened);
        e.to = &to;
        e.hdr = req;
        e.jid = jid;
        e.window = window;
        e.ahead = ahead;
        e.status = status;
        events.push_back(std::move(e));
    }
    void decision(Member &to, uint32_t rank, const Decision &d) override
    {
        if (throw_decisions > 0) {
            --throw_decisions;
            throw std::bad_alloc();
        }
        Event e(Event::Kind::kDecision);
        e.to = &to;
        e.rank = rank;
        e.d = d;
        e.status = d.status;
        events.push_back(std::move(e));
    }
    void result(Member &to, uint32_t rank, const ina_proto_hdr_t &blk, BufRef payload,
                size_t len) override
    {
        Event e(Event::Kind::kResult);
        e.to = &to;
        e.rank = rank;
        e.hdr = blk;
        e.has_buffer = static_cast<bool>(payload);
        if (payload) {
            e.payload.assign(payload.data(), payload.data() + len);
        } else {
            ck_assert_uint_eq(len, 0);
        }
        events.push_back(std::move(e));
        if (hold_refs) {
            held.push_back(std::move(payload));
        }
    }
    void ack(Member &to, uint32_t rank, const ina_proto_hdr_t &blk) override
    {
        Event e(Event::Kind::kAck);
        e.to = &to;
        e.rank = rank;
        e.hdr = blk;
        events.push_back(std::move(e));
    }
    void error(Member &to, const ina_proto_hdr_t &req, ina_proto_status_t status,
               const char *why, bool in_flight) override
    {
        ck_assert_ptr_nonnull(why);
        Event e(Event::Kind::kError);
        e.to = &to;
        e.hdr = req;
        e.hdr.flags = in_flight ? INA_PROTO_F_IN_FLIGHT : 0;
        e.status = status;
        events.push_back(std::move(e));
    }

    size_t count(Event::Kind k, const Member *to = nullptr) const
    {
        return static_cast<size_t>(std::count_if(events.begin(), events.end(), [&](const Event &e) {
            return e.kind == k && (to == nullptr || e.to == to);
        }));
    }
};

// Answers as the test says; records every hook. Leases come from the pool,
// like a real policy's.
class TestScheduler final : public Scheduler {
public:
    enum class Mode {
        kFree,          // grant while the pool has the lease, else deny
        kFreeOrDefer,   // grant while the pool has the lease, else defer
        kDefer,         // always defer
        kDeny           // always deny with deny_status
    };
    struct Done {
        uint32_t jid;
        uint64_t mid;
        size_t lease_size;
    };

    explicit TestScheduler(SegPool &pool) : pool_(pool) {}

    Mode mode = Mode::kFree;
    ina_proto_status_t deny_status = INA_PROTO_ERR_NO_RESOURCES;
    uint32_t lease_size = 0; // Segs a grant leases (0: the job's window)
    uint32_t ahead_word = 0; // ahead() (0: the job's window)
    std::vector<CallRequest> asked;
    std::vector<Done> done;
    std::vector<JobInfo> created;
    std::vector<uint32_t> freed;
    int ticks = 0;

    Verdict decide(const CallRequest &req) override
    {
        asked.push_back(req);
        std::vector<uint32_t> lease;
        switch (mode) {
        case Mode::kDefer:
            return Verdict::defer();
        case Mode::kDeny:
            return Verdict::deny(deny_status);
        case Mode::kFree:
        case Mode::kFreeOrDefer:
            if (pool_.acquire(lease_size != 0 ? lease_size : req.window, lease)) {
                return Verdict::grant(std::move(lease));
            }
            return mode == Mode::kFree ? Verdict::deny(INA_PROTO_ERR_NO_RESOURCES)
                                       : Verdict::defer();
        }
        return Verdict::deny(INA_PROTO_ERR_NO_RESOURCES);
    }
    void on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease) override
    {
        done.push_back(Done{jid, mid, lease.size()});
        pool_.release(lease);
        lease.clear();
    }
    void on_job_created(const JobInfo &job) override { created.push_back(job); }
    uint32_t ahead(uint32_t, uint32_t window) const override
    {
        return ahead_word != 0 ? ahead_word : window;
    }
    void on_job_freed(uint32_t jid) override { freed.push_back(jid); }
    void tick(Clock::time_point) override { ++ticks; }

private:
    SegPool &pool_;
};

inline AggregatorConfig small_config(uint32_t segs = 16, uint32_t seg_bytes = 4096)
{
    AggregatorConfig c;
    c.segs = segs;
    c.seg_bytes = seg_bytes;
    c.max_window = 8;
    return c;
}

// An Aggregator with a FakeSink and a TestScheduler.
struct Rig {
    FakeSink sink;
    TestScheduler *sched = nullptr;
    Aggregator agg;

    explicit Rig(const AggregatorConfig &cfg = small_config())
        : agg(cfg,
              [this](SegPool &pool) {
                  auto s = std::make_unique<TestScheduler>(pool);
                  sched = s.get();
                  return s;
              },
              sink)
    {
    }
};

inline void expect_valid(const ina_proto_hdr_t &h, size_t payload_len)
{
    ck_assert_int_eq(ina_proto_check(&h, sizeof(h), payload_len), INA_PROTO_OK);
}

inline ina_proto_hdr_t block_hdr(uint32_t jid, uint32_t rank, uint64_t mid, uint32_t sid,
                                 uint32_t window, unsigned coll, unsigned op, unsigned dtype,
                                 uint32_t offset, uint32_t count, uint32_t block_elems,
                                 uint64_t total, bool want)
{
    ina_proto_hdr_t h = ina_test::block_hdr(jid, rank, mid, sid, window, coll, op, dtype, offset,
                                            count, block_elems, total, want);
    expect_valid(h, static_cast<size_t>(count) * ina_proto_dtype_size(dtype));
    return h;
}

// The capability the tests' members bring unless a test says otherwise
// (any nonzero bytes: the agent only compares them).
inline JobCap test_cap(uint8_t fill = 0x5a)
{
    JobCap cap;
    cap.fill(fill);
    return cap;
}

// JOB_OPEN by `m` as `rank` of the job whose key starts with `tag`
// (the rest zero), described by `node_ids` and `window`: the sink's event.
// `leaves` > 0: the member's part of a job over that many leaf agents, at
// leaf `leaf` (JOB_OPEN's tree fields). `tenant`: JOB_OPEN's. `cap`: the
// capability it brings.
inline Event open_job(Aggregator &agg, FakeSink &sink, Member &m, uint32_t tag,
                      const std::vector<uint32_t> &node_ids, uint32_t window, uint32_t rank,
                      uint32_t leaf = 0, uint32_t leaves = 0, uint64_t tenant = 0,
                      const JobCap &cap = test_cap(),
                      const std::vector<ina_proto_tree_level_t> &above = {}, uint16_t flags = 0)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_JOB_OPEN);
    h.rank = rank;
    h.count = static_cast<uint32_t>(node_ids.size());
    h.window = static_cast<uint16_t>(window);
    h.arg = 0xc00c1e;
    h.offset = leaf;
    h.block_elems = leaves;
    h.mid = tenant;
    std::vector<uint8_t> payload(INA_PROTO_JOB_KEY_BYTES, 0);
    std::memcpy(payload.data(), &tag, sizeof(tag));
    payload.insert(payload.end(), cap.begin(), cap.end());
    const auto *ids = reinterpret_cast<const uint8_t *>(node_ids.data());
    payload.insert(payload.end(), ids, ids + node_ids.size() * sizeof(uint32_t));
    const auto *up = reinterpret_cast<const uint8_t *>(above.data());
    payload.insert(payload.end(), up, up + above.size() * sizeof(ina_proto_tree_level_t));
    h.flags = flags;
    expect_valid(h, payload.size());
    agg.job_open(m, h, payload.data(), payload.size());
    ck_assert(!sink.events.empty());
    const Event e = sink.events.back();
    ck_assert(e.kind == Event::Kind::kOpened);
    ck_assert_ptr_eq(e.to, &m);
    ck_assert_uint_eq(e.hdr.arg, 0xc00c1e);
    return e;
}

// A job of node_ids.size() members, members[r] opening it as rank r, under
// a key of its own. Returns its JID; the sink is emptied.
inline uint32_t make_job(Rig &rig, const std::vector<Member *> &members,
                         const std::vector<uint32_t> &node_ids, uint32_t window)
{
    static uint32_t jobs = 0;
    const uint32_t tag = 0x10000 + jobs++;
    uint32_t jid = 0;
    for (uint32_t r = 0; r < members.size(); ++r) {
        const Event e = open_job(rig.agg, rig.sink, *members[r], tag, node_ids, window, r);
        ck_assert_int_eq(e.status, INA_PROTO_OK);
        ck_assert(r == 0 || e.jid == jid);
        jid = e.jid;
    }
    rig.sink.events.clear();
    return jid;
}

inline void leave(Rig &rig, Member &m, uint32_t jid, uint32_t rank)
{
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_JOB_LEAVE);
    h.jid = jid;
    h.rank = rank;
    expect_valid(h, 0);
    rig.agg.job_leave(m, h);
}

// Members sending the blocks of one reduction call (every member brings the
// whole block) the way clients do; the test picks who sends next. Checks
// what every member hears: one decision, then exactly one RESULT (or ACK,
// for members that do not want it) per block, in the order it sent them.
class CallSim {
public:
    CallSim(Rig &rig, std::vector<Member *> members, uint32_t jid, uint64_t mid, uint32_t window,
            unsigned coll, unsigned op, unsigned dtype, uint32_t block_elems, uint64_t total,
            std::vector<std::vector<std::byte>> data, std::vector<bool> want)
        : rig_(rig), members_(std::move(members)), jid_(jid), mid_(mid), window_(window),
          coll_(coll), op_(op), dtype_(dtype), block_elems_(block_elems), total_(total),
          data_(std::move(data)), want_(std::move(want)),
          esz_(ina_proto_dtype_size(dtype)),
          nblocks_(static_cast<uint32_t>((total + block_elems - 1) / block_elems)),
          next_(members_.size(), 0), got_(members_.size(), std::vector<bool>(nblocks_, false)),
          decided_(members_.size(), 0), granted_(members_.size(), false),
          result_(members_.size(), std::vector<std::byte>(total * esz_))
    {
    }

    uint32_t nblocks() const { return nblocks_; }
    // Ranks that may send their next block now.
    std::vector<uint32_t> ready() const
    {
        std::vector<uint32_t> r;
        for (uint32_t i = 0; i < members_.size(); ++i) {
            if (next_[i] < nblocks_ && (next_[i] < window_ || got_[i][next_[i] - window_])) {
                r.push_back(i);
            }
        }
        return r;
    }
    ina_proto_hdr_t header(uint32_t rank, uint32_t sid) const
    {
        const uint32_t sc = static_cast<uint32_t>(
            std::min<uint64_t>(block_elems_, total_ - static_cast<uint64_t>(sid) * block_elems_));
        return block_hdr(jid_, rank, mid_, sid, window_, coll_, op_, dtype_, 0, sc, sc, total_,
                         want_[rank]);
    }
    const void *payload(uint32_t rank, uint32_t sid) const
    {
        return data_[rank].data() + static_cast<size_t>(sid) * block_elems_ * esz_;
    }
    // Member `rank` sends its next block.
    void send(uint32_t rank)
    {
        const uint32_t sid = next_[rank]++;
        rig_.agg.block(*members_[rank], header(rank, sid), payload(rank, sid));
        drain();
    }
    // Send in random order until nobody can; returns how many were sent.
    size_t run(std::mt19937 &rng)
    {
        size_t n = 0;
        for (std::vector<uint32_t> r = ready(); !r.empty(); r = ready()) {
            send(r[rng() % r.size()]);
            ++n;
        }
        return n;
    }
    // Take what the sink heard about this call.
    void drain()
    {
        std::vector<Event> rest;
        for (Event &e : rig_.sink.events) {
            const uint32_t r = rank_of(e.to);
            if (r == UINT32_MAX) {
                rest.push_back(std::move(e));
                continue;
            }
            if (e.kind == Event::Kind::kDecision && e.d.jid == jid_ && e.d.mid == mid_) {
                ck_assert_uint_eq(e.rank, r);
                ck_assert_uint_eq(e.d.window, window_);
                ck_assert_int_eq(decided_[r], 0); // once per member
                ++decided_[r];
                granted_[r] = e.d.grant;
                deny_status_ = e.d.status;
            } else if ((e.kind == Event::Kind::kResult || e.kind == Event::Kind::kAck) &&
                       e.hdr.jid == jid_ && e.hdr.mid == mid_) {
                ck_assert_uint_eq(e.rank, r);
                ck_assert_msg(granted_[r], "RESULT before GRANT");
                const uint32_t sid = e.hdr.sid;
                ck_assert_uint_lt(sid, nblocks_);
                ck_assert_msg(!got_[r][sid], "second RESULT of sid %u to rank %u", sid, r);
                ck_assert_uint_lt(sid, next_[r]); // only for blocks it sent
                got_[r][sid] = true;
                ck_assert(want_[r] == (e.kind == Event::Kind::kResult));
                if (e.kind == Event::Kind::kResult) {
                    const size_t off = static_cast<size_t>(sid) * block_elems_ * esz_;
                    ck_assert_uint_eq(e.payload.size(), static_cast<size_t>(e.hdr.block_elems) * esz_);
                    std::memcpy(result_[r].data() + off, e.payload.data(), e.payload.size());
                }
            } else {
                rest.push_back(std::move(e));
            }
        }
        rig_.sink.events.swap(rest);
    }

    bool all_decided() const
    {
        return std::all_of(decided_.begin(), decided_.end(), [](int d) { return d == 1; });
    }
    bool nobody_decided() const
    {
        return std::all_of(decided_.begin(), decided_.end(), [](int d) { return d == 0; });
    }
    bool granted(uint32_t rank) const { return granted_[rank]; }
    ina_proto_status_t deny_status() const { return deny_status_; }
    bool complete() const
    {
        for (const auto &g : got_) {
            if (!std::all_of(g.begin(), g.end(), [](bool b) { return b; })) {
                return false;
            }
        }
        return true;
    }
    size_t results_heard() const
    {
        size_t n = 0;
        for (const auto &g : got_) {
            n += static_cast<size_t>(std::count(g.begin(), g.end(), true));
        }
        return n;
    }
    const std::vector<std::byte> &result(uint32_t rank) const { return result_[rank]; }

private:
    uint32_t rank_of(const Member *m) const
    {
        for (uint32_t i = 0; i < members_.size(); ++i) {
            if (members_[i] == m) {
                return i;
            }
        }
        return UINT32_MAX;
    }

    Rig &rig_;
    std::vector<Member *> members_;
    uint32_t jid_;
    uint64_t mid_;
    uint32_t window_;
    unsigned coll_, op_, dtype_;
    uint32_t block_elems_;
    uint64_t total_;
    std::vector<std::vector<std::byte>> data_;
    std::vector<bool> want_;
    size_t esz_;
    uint32_t nblocks_;
    std::vector<uint32_t> next_;
    std::vector<std::vector<bool>> got_;
    std::vector<int> decided_;
    std::vector<bool> granted_;
    ina_proto_status_t deny_status_ = INA_PROTO_OK;
    std::vector<std::vector<std::byte>> result_;
};

// Members as stable handles.
struct Members {
    std::vector<std::unique_ptr<Member>> owned;
    explicit Members(size_t n)
    {
        for (size_t i = 0; i < n; ++i) {
            owned.push_back(std::make_unique<Member>());
            owned.back()->id = 100 + i;
        }
    }
    std::vector<Member *> ptrs() const
    {
        std::vector<Member *> p;
        for (const auto &m : owned) {
            p.push_back(m.get());
        }
        return p;
    }
    Member &operator[](size_t i) { return *owned[i]; }
};

template <typename T> std::vector<std::byte> bytes_of(const std::vector<T> &v)
{
    std::vector<std::byte> b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// Everything back: every Seg free, every payload buffer on its free list.
inline void expect_pool_whole(const Rig &rig)
{
    ck_assert_uint_eq(rig.agg.pool().free_segs(), rig.agg.pool().size());
    ck_assert_uint_eq(rig.agg.pool().buffers().free_count(), rig.agg.pool().buffers().allocated());
}

inline std::vector<std::vector<std::byte>> int_data(uint32_t nranks, uint64_t total, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::vector<std::vector<std::byte>> d;
    for (uint32_t r = 0; r < nranks; ++r) {
        std::vector<int32_t> v(total);
        for (auto &x : v) {
            x = static_cast<int32_t>(rng());
        }
        d.push_back(bytes_of(v));
    }
    return d;
}

inline std::vector<int32_t> int_sum(const std::vector<std::vector<std::byte>> &d, uint64_t total)
{
    std::vector<uint32_t> acc(total, 0); // wrapping arithmetic
    for (const auto &b : d) {
        for (uint64_t i = 0; i < total; ++i) {
            int32_t x;
            std::memcpy(&x, b.data() + i * sizeof(x), sizeof(x));
            acc[i] += static_cast<uint32_t>(x);
        }
    }
    std::vector<int32_t> out(total);
    std::memcpy(out.data(), acc.data(), total * sizeof(int32_t));
    return out;
}

} // namespace agg_test

#endif

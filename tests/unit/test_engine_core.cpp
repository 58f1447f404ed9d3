// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The client engine and the aggregation core joined without any transport:
// every client talks to one in-process agg::Aggregator through a Channel
// (client/channel.h) whose post() hands the message to agg::serve() and whose
// progress() delivers what the core's WireSink queued for that member. This
// is the layering a node stage uses (the engine's calls over a channel, the
// same core that ina-switchd runs); here it checks that the two layers alone
// compute every collective exactly, in one thread, with no UCX at all.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <cinttypes>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sched/free_seg.h"
#include "ina_client.h"
#include "ina_engine.h"
#include "ina_reduce.h"
#include "wire.h"

// Last: Check defines a macro fail(), a name the engine uses.
#include <check.h>
#include "check_main.h"

namespace {

using ina::client::Channel;
using ina::client::ChannelEvents;
using ina::client::SendOp;

struct Msg {
    ina_proto_hdr_t hdr;
    std::vector<std::byte> payload;
};

struct LoopMember final : ina::agg::Member {
    std::deque<Msg> inbox;
    unsigned version = 0; // the protocol its connection speaks (HELLO)
};

// The agent's policy (grant while Segs are free), unless a test tells it to
// deny or to keep calls waiting.
class SwitchScheduler final : public ina::agg::Scheduler {
public:
    enum class Mode { policy, deny, defer };
    explicit SwitchScheduler(ina::agg::SegPool &pool) : policy_(pool) {}
    ina::agg::Verdict decide(const ina::agg::CallRequest &req) override
    {
        switch (mode) {
        case Mode::deny:
            return ina::agg::Verdict::deny(INA_PROTO_ERR_NO_RESOURCES);
        case Mode::defer:
            return ina::agg::Verdict::defer();
        default:
            return policy_.decide(req);
        }
    }
    void on_call_done(uint32_t jid, uint64_t mid, std::vector<uint32_t> &lease) override
    {
        policy_.on_call_done(jid, mid, lease);
    }
    // The members' word as the scheduler hears it (HOST_COST, CALL_TIME),
    // in the order it came.
    struct Told {
        uint8_t type;
        uint8_t coll;
        uint64_t bytes;
        double secs;
    };
    void on_host_cost(uint32_t, uint8_t coll, uint64_t bytes, double secs) override
    {
        told.push_back(Told{INA_PROTO_HOST_COST, coll, bytes, secs});
    }
    void on_call_time(uint32_t, uint8_t coll, uint64_t bytes, double secs) override
    {
        told.push_back(Told{INA_PROTO_CALL_TIME, coll, bytes, secs});
    }
    Mode mode = Mode::policy;
    std::vector<Told> told;

private:
    ina::sched::FreeSegScheduler policy_;
};

// The in-process "agent": an Aggregator whose messages land in the members' inboxes.
class Hub final : public ina::agg::WireSink {
public:
    explicit Hub(uint32_t seg_bytes)
        : agg_(config(seg_bytes),
               [this](ina::agg::SegPool &pool) {
                   auto s = std::make_unique<SwitchScheduler>(pool);
                   sched_ = s.get();
                   return s;
               },
               *this)
    {
    }
    ina::agg::Aggregator &agg() { return agg_; }
    SwitchScheduler &sched() { return *sched_; }
    // The agent dies after sending `n` more RESULTs (a RESULT to each
    // member counts): nothing leaves it any more, and its members' links
    // report it gone.
    void die_after(int n) { results_left_ = n; }
    void die() { dead_ = true; }
    bool dead() const { return dead_; }
    // The agent stops (a hung process, a dead link): what the members send
    // goes nowhere and nothing comes back, but no link reports a loss.
    void freeze() { frozen_ = true; }
    bool frozen() const { return frozen_; }
    // Member links in the order they connected (a Group's: rank order).
    // cut(r) ends member r's link at both ends, as a link that a member
    // closed after its liveness verdict: the agent loses that member (its
    // open calls end on the others), the member sees its agent gone.
    std::vector<std::function<void()>> &links() { return links_; }
    void cut(uint32_t r) { links_.at(r)(); }

    // The version the member's connection speaks, chosen as ina-switchd
    // chooses it, and stamped on everything sent to it.
    ina_proto_status_t hello(ina::agg::Member &from, const ina_proto_hdr_t &h,
                             uint64_t *rndv_blocks) override
    {
        *rndv_blocks = 0;
        const unsigned v = ina_proto_version_choose(ina_proto_hello_lowest(&h),
                                                    ina_proto_hello_highest(&h),
                                                    INA_PROTO_VERSION_MIN, INA_PROTO_VERSION);
        static_cast<LoopMember &>(from).version = v;
        return v != 0 ? INA_PROTO_OK : INA_PROTO_ERR_VERSION;
    }

    void send(ina::agg::Member &to, const ina_proto_hdr_t &h, ina::agg::BufRef payload,
              size_t len) override
    {
        if (h.type == INA_PROTO_RESULT && results_left_ >= 0 && results_left_-- == 0) {
            dead_ = true; // the agent dies before this RESULT goes out
        }
        if (dead_ || frozen_) {
            return;
        }
        Msg m{h, {}};
        if (const unsigned v = static_cast<LoopMember &>(to).version; v != 0) {
            m.hdr.version = static_cast<uint8_t>(v);
        }
        if (len > 0) {
            const auto *p = static_cast<const std::byte *>(payload.data());
            m.payload.assign(p, p + len);
        }
        static_cast<LoopMember &>(to).inbox.push_back(std::move(m));
    }

private:
    static ina::agg::AggregatorConfig config(uint32_t seg_bytes)
    {
        ina::agg::AggregatorConfig c;
        c.segs = 64;
        c.seg_bytes = seg_bytes;
        c.max_window = 4;
        return c;
    }
    SwitchScheduler *sched_ = nullptr;
    std::vector<std::function<void()>> links_;
    int results_left_ = -1;
    bool dead_ = false;
    bool frozen_ = false;
    ina::agg::Aggregator agg_;
};

class LoopChannel final : public Channel {
public:
    LoopChannel(Hub &hub, ChannelEvents &events) : hub_(hub), events_(events)
    {
        hub_.links().push_back([this] { close(true); });
    }
    ~LoopChannel() override { close(true); }

    bool progress() override
    {
        if (member_.inbox.empty()) {
            return false;
        }
        std::deque<Msg> msgs;
        msgs.swap(member_.inbox);
        for (const Msg &m : msgs) {
            events_.on_message(m.hdr, m.payload.data(), m.payload.size());
        }
        return true;
    }
    Posted post(const ina_proto_hdr_t &hdr, const void *payload, size_t len, SendOp *) override
    {
        if (closed_ || hub_.dead() || ina_proto_check(&hdr, sizeof(hdr), len) != INA_PROTO_OK) {
            return Posted::failed;
        }
        if (hub_.frozen()) {
            return Posted::done; // into a socket buffer nobody reads
        }
        // The core reduces or copies the payload before it returns.
        ina::agg::serve(hub_.agg(), hub_, member_, hdr, payload, len);
        return Posted::done;
    }
    bool arm() override { return member_.inbox.empty(); }
    int wake_fd() const override { return -1; } // poll() ignores it: a short nap
    void signal() override {}
    bool alive() const override { return !closed_ && !hub_.dead(); }
    void close(bool) override
    {
        if (!closed_) {
            closed_ = true;
            hub_.agg().member_lost(member_);
        }
    }
    bool closed() const override { return closed_; }

private:
    Hub &hub_;
    ChannelEvents &events_;
    LoopMember member_;
    bool closed_ = false;
};

constexpr uint32_t kRanks = 4;
constexpr uint32_t kSegBytes = 1024; // small Segs: every call below spans several blocks
// The secret the ranks share, as an MPI job's processes share their launcher's.
constexpr uint8_t kTestSecret[16] = {'u', 'n', 'i', 't', ' ', 's', 'e', 'c', 'r', 'e', 't'};

// A client of `hub` over a LoopChannel (liveness_ms as the config's).
// proto_highest: the highest protocol version offered (0: this build's;
// -1: the previous one, as ina_client_config_t says).
ina_client_t *loop_client(Hub &hub, int liveness_ms = 0, int proto_highest = 0,
                          bool progress_thread = false)
{
    ina_client_config_t cfg{};
    cfg.agent_addr = "in-process";
    cfg.connect_timeout_ms = 1000;
    cfg.progress_timeout_ms = 10000;
    cfg.liveness_ms = liveness_ms;
    cfg.progress_thread = progress_thread ? 1 : 0;
    cfg.proto_lowest = proto_highest < 0 ? proto_highest : 0;
    cfg.proto_highest = proto_highest;
    ina_client_t *client = nullptr;
    std::string err;
    int rc = ina::client::connect_over(
        cfg,
        [&hub](ChannelEvents &ev, bool, std::unique_ptr<Channel> &out, std::string &) {
            out = std::make_unique<LoopChannel>(hub, ev);
            return static_cast<int>(INA_OK);
        },
        "in-process", &client, err);
    ck_assert_msg(rc == INA_OK, "connect_over: %s", err.c_str());
    return client;
}

struct Group {
    // progress_threads: every member's client runs the engine's progress
    // thread (asleep until a call is handed to it: ina_call_background).
    explicit Group(uint32_t n, int liveness_ms = 0, uint32_t seg_bytes = kSegBytes,
                   int proto_highest = 0, bool progress_threads = false)
        : hub(seg_bytes), clients(n, nullptr), jobs(n, nullptr)
    {
        for (uint32_t r = 0; r < n; ++r) {
            clients[r] = loop_client(hub, liveness_ms, proto_highest, progress_threads);
        }
        std::vector<uint32_t> nodes(n);
        for (uint32_t r = 0; r < n; ++r) {
            nodes[r] = r / 2; // two ranks per node: Node and Rank bitmaps both in play
        }
        // Every member opens the job by key (one key per group of this process).
        static uint32_t groups = 0;
        ina_job_key_init(&key);
        ina_job_key_add(&key, &groups, sizeof(groups));
        ina_job_key_seal(&key, kTestSecret);
        ++groups;
        for (uint32_t r = 0; r < n; ++r) {
            ina_job_params_t params;
            ina_job_open_params_t op{}; // the agent's largest window and block
            op.key = &key;
            op.nmembers = n;
            op.node_of_member = nodes.data();
            op.rank = r;
            ck_assert_int_eq(ina_job_open(clients[r], &op, &params, &jobs[r]), INA_OK);
            ck_assert_uint_eq(params.block_bytes, seg_bytes);
        }
    }
    ina_job_key_t key; // sealed: the job every member opened
    ~Group()
    {
        for (uint32_t r = 0; r < clients.size(); ++r) {
            ina_job_leave(jobs[r]);
            ina_client_disconnect(clients[r]);
        }
    }

    // Post the call of every rank, then test them round-robin until all
    // completed (one thread plays every rank); each must be offloaded.
    void run(std::vector<ina_coll_desc_t> &descs)
    {
        std::vector<ina_call_t *> calls(descs.size(), nullptr);
        for (uint32_t r = 0; r < descs.size(); ++r) {
            ina_outcome_t outcome;
            ck_assert_int_eq(ina_job_post(jobs[r], &descs[r], &calls[r], &outcome), INA_OK);
            ck_assert_int_eq(outcome, INA_OFFLOADED);
        }
        finish(calls);
    }

    // Test posted calls round-robin until all completed, each offloaded;
    // free them.
    static void finish(std::vector<ina_call_t *> &calls)
    {
        std::vector<bool> done(calls.size(), false);
        for (size_t left = calls.size(), spins = 0; left > 0; ++spins) {
            ck_assert_msg(spins < 100000, "calls did not complete");
            for (uint32_t r = 0; r < calls.size(); ++r) {
                ina_cqe_t cqe;
                if (!done[r] && ina_call_test(calls[r], &cqe)) {
                    ck_assert_int_eq(cqe.rc, INA_OK);
                    ck_assert_int_eq(cqe.outcome, INA_OFFLOADED);
                    ina_call_free(calls[r]);
                    done[r] = true;
                    --left;
                }
            }
        }
    }

    Hub hub;
    std::vector<ina_client_t *> clients;
    std::vector<ina_job_t *> jobs;
};

float input_f(uint32_t rank, size_t i)
{
    return static_cast<float>((i * 7 + rank * 13) % 101) * 0.37f - 11.0f + 1e-3f * rank;
}

// ALLREDUCE of floats on every rank, and its check: every rank's result is
// the agent's documented order (rank order), bit for bit. A striped job's
// agents each fold their blocks the same way.
struct FloatSums {
    explicit FloatSums(size_t n)
        : in(kRanks, std::vector<float>(n)), out(kRanks, std::vector<float>(n, -1.0f)),
          d(kRanks)
    {
        for (uint32_t r = 0; r < kRanks; ++r) {
            for (size_t i = 0; i < n; ++i) {
                in[r][i] = input_f(r, i);
            }
            d[r] = ina_coll_desc_t{INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_FLOAT, in[r].data(),
                                   out[r].data(), n, 0, nullptr};
        }
    }
    void check() const
    {
        for (size_t i = 0; i < in[0].size(); ++i) {
            float want = in[0][i];
            for (uint32_t r = 1; r < kRanks; ++r) {
                want += in[r][i];
            }
            for (uint32_t r = 0; r < kRanks; ++r) {
                ck_assert_msg(std::memcmp(&out[r][i], &want, sizeof(float)) == 0,
                              "rank %u element %zu: %a, want %a", r, i, out[r][i], want);
            }
        }
    }
    std::vector<std::vector<float>> in, out;
    std::vector<ina_coll_desc_t> d;
};

// ALLREDUCE of int32 on every rank: element i of rank r is i + r; the
// results read `fill` until a call writes them. Every rank's result is
// the exact sum.
struct IntSums {
    explicit IntSums(size_t n, int32_t fill = 0)
        : in(kRanks, std::vector<int32_t>(n)), out(kRanks, std::vector<int32_t>(n, fill)),
          d(kRanks)
    {
        for (uint32_t r = 0; r < kRanks; ++r) {
            for (size_t i = 0; i < n; ++i) {
                in[r][i] = static_cast<int32_t>(i + r);
            }
            d[r] = ina_coll_desc_t{INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, in[r].data(),
                                   out[r].data(), n, 0, nullptr};
        }
    }
    std::vector<std::vector<int32_t>> in, out;
    std::vector<ina_coll_desc_t> d;
};

START_TEST(test_allreduce_float_exact)
{
    Group g(kRanks);
    FloatSums f(1000); // 4000 bytes: 4 blocks of 1 KiB through a window of 4
    g.run(f.d);
    f.check();
}
END_TEST

START_TEST(test_reduce_scatter_and_bcast)
{
    Group g(kRanks);
    // Reduce_scatter of int32 with uneven parts, then a Bcast of bytes from rank 2.
    const uint64_t counts[kRanks] = {300, 0, 517, 41};
    const uint64_t total = 300 + 0 + 517 + 41;
    std::vector<std::vector<int32_t>> in(kRanks, std::vector<int32_t>(total));
    std::vector<std::vector<int32_t>> out(kRanks);
    std::vector<ina_coll_desc_t> d(kRanks);
    for (uint32_t r = 0; r < kRanks; ++r) {
        for (uint64_t i = 0; i < total; ++i) {
            in[r][i] = static_cast<int32_t>(i * 2654435761u + r * 40503u); // wraps
        }
        out[r].assign(counts[r] + 1, 0x5a5a5a5a);
        d[r] = ina_coll_desc_t{INA_COLL_REDUCE_SCATTER, INA_OP_SUM, INA_DT_INT32, in[r].data(),
                               out[r].data(), total, 0, counts};
    }
    g.run(d);
    uint64_t first = 0;
    for (uint32_t r = 0; r < kRanks; ++r) {
        for (uint64_t i = 0; i < counts[r]; ++i) {
            uint32_t want = 0;
            for (uint32_t q = 0; q < kRanks; ++q) {
                want += static_cast<uint32_t>(in[q][first + i]);
            }
            ck_assert_int_eq(out[r][i], static_cast<int32_t>(want));
        }
        ck_assert_int_eq(out[r][counts[r]], 0x5a5a5a5a); // nothing past its part
        first += counts[r];
    }

    const size_t bytes = 2500;
    std::vector<std::vector<uint8_t>> buf(kRanks, std::vector<uint8_t>(bytes));
    for (uint32_t r = 0; r < kRanks; ++r) {
        for (size_t i = 0; i < bytes; ++i) {
            buf[r][i] = static_cast<uint8_t>(r == 2 ? i * 31 + 7 : 0);
        }
        d[r] = ina_coll_desc_t{INA_COLL_BCAST, INA_OP_REPLACE, INA_DT_UINT8, nullptr,
                               buf[r].data(), bytes, 2, nullptr};
    }
    g.run(d);
    for (uint32_t r = 0; r < kRanks; ++r) {
        ck_assert(buf[r] == buf[2]);
    }
}
END_TEST

// A call planned once per rank (ina_job_plan) and posted many times with new
// inputs (ina_job_post_plan), as a persistent collective is: every post
// exact. The plan keeps its reduce-scatter counts (the caller's array is
// gone after planning), and posts on another job of the same members (a
// communicator's job opened anew, at an agent with other Segs: cut again
// there) as well.
START_TEST(test_planned_call_posted_again)
{
    Group g(kRanks);
    FloatSums f(1500);
    std::vector<ina_call_plan_t *> plans(kRanks, nullptr);
    for (uint32_t r = 0; r < kRanks; ++r) {
        ck_assert_int_eq(ina_job_plan(g.jobs[r], &f.d[r], &plans[r]), INA_OK);
    }
    auto post_all = [&](std::vector<ina_job_t *> &jobs) {
        std::vector<ina_call_t *> calls(kRanks, nullptr);
        for (uint32_t r = 0; r < kRanks; ++r) {
            ina_outcome_t outcome;
            ck_assert_int_eq(ina_job_post_plan(jobs[r], plans[r], &calls[r], &outcome), INA_OK);
            ck_assert_int_eq(outcome, INA_OFFLOADED);
        }
        Group::finish(calls);
    };
    for (int start = 0; start < 20; ++start) {
        for (uint32_t r = 0; r < kRanks; ++r) {
            for (size_t i = 0; i < f.in[r].size(); ++i) {
                f.in[r][i] = input_f(r + static_cast<uint32_t>(start), i);
            }
        }
        post_all(g.jobs);
        f.check();
    }
    Group other(kRanks, 0, 2 * kSegBytes);
    post_all(other.jobs);
    f.check();
    for (ina_call_plan_t *p : plans) {
        ina_call_plan_free(p);
    }

    // A reduce-scatter: its counts read only while planning.
    const uint64_t total = 4 * 250;
    std::vector<std::vector<int32_t>> in(kRanks, std::vector<int32_t>(total)), out(kRanks);
    for (uint32_t r = 0; r < kRanks; ++r) {
        std::vector<uint64_t> counts(kRanks, 250);
        for (uint64_t i = 0; i < total; ++i) {
            in[r][i] = static_cast<int32_t>(i * 40503u + r);
        }
        out[r].assign(250, 0);
        const ina_coll_desc_t d{INA_COLL_REDUCE_SCATTER, INA_OP_SUM, INA_DT_INT32, in[r].data(),
                                out[r].data(), total, 0, counts.data()};
        ck_assert_int_eq(ina_job_plan(g.jobs[r], &d, &plans[r]), INA_OK);
        std::fill(counts.begin(), counts.end(), 0); // the caller's array, changed
    }
    post_all(other.jobs); // cut again from the counts the plan kept
    for (uint32_t r = 0; r < kRanks; ++r) {
        for (uint64_t i = 0; i < 250; ++i) {
            uint32_t want = 0;
            for (uint32_t q = 0; q < kRanks; ++q) {
                want += static_cast<uint32_t>(in[q][r * 250 + i]);
            }
            ck_assert_int_eq(out[r][i], static_cast<int32_t>(want));
        }
        ina_call_plan_free(plans[r]);
    }

    // What the wire cannot carry is refused when planned.
    const ina_coll_desc_t bad{INA_COLL_ALLREDUCE, INA_OP_BAND, INA_DT_FLOAT, f.in[0].data(),
                              f.out[0].data(), 10, 0, nullptr};
    ina_call_plan_t *none = nullptr;
    ck_assert_int_eq(ina_job_plan(g.jobs[0], &bad, &none), INA_ERR_INVALID);
    ck_assert_ptr_null(none);
    ina_call_plan_free(nullptr);
}
END_TEST

START_TEST(test_leases_back_after_calls)
{
    Group g(kRanks);
    std::vector<std::vector<double>> v(kRanks, std::vector<double>(700, 1.5));
    std::vector<ina_coll_desc_t> d(kRanks);
    for (int round = 0; round < 3; ++round) {
        for (uint32_t r = 0; r < kRanks; ++r) { // in place
            d[r] = ina_coll_desc_t{INA_COLL_ALLREDUCE, INA_OP_MAX, INA_DT_DOUBLE, v[r].data(),
                                   v[r].data(), v[r].size(), 0, nullptr};
            v[r][round] = 10.0 * r + round;
        }
        g.run(d);
        for (uint32_t r = 0; r < kRanks; ++r) {
            ck_assert(v[r][round] == 10.0 * (kRanks - 1) + round);
            // Certification: this round's BLOCKs said every earlier call
            // was complete at every rank; its RESULTs say so back.
            ck_assert_uint_eq(ina_job_certified(g.jobs[r]), static_cast<uint64_t>(round));
        }
    }
    const ina::agg::SegPool &pool = g.hub.agg().pool();
    ck_assert_uint_eq(pool.free_segs(), pool.size());
    ck_assert_uint_eq(g.hub.agg().counters().calls_granted, 3);
}
END_TEST

// Recovery's kept blocks (ina_job_keep_blocks): each rank keeps the last
// window of every call it completes (its input) until the
// certified mark passes the call: one call at a time in a run of blocking
// calls; nothing with keeping off.
START_TEST(test_kept_until_certified)
{
    Group g(kRanks);
    const size_t elems = 1536; // 12 KiB: 12 blocks of 1 KiB, the last 4 kept
    std::vector<std::vector<double>> v(kRanks, std::vector<double>(elems, 0.25));
    std::vector<ina_coll_desc_t> d(kRanks);
    for (uint32_t r = 0; r < kRanks; ++r) {
        ina_job_keep_blocks(g.jobs[r], r != 0); // rank 0 keeps nothing
    }
    for (int round = 0; round < 3; ++round) {
        for (uint32_t r = 0; r < kRanks; ++r) { // in place
            d[r] = ina_coll_desc_t{INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_DOUBLE, v[r].data(),
                                   v[r].data(), elems, 0, nullptr};
        }
        g.run(d);
        for (uint32_t r = 0; r < kRanks; ++r) {
            size_t bytes = 0;
            const size_t calls = ina_job_kept_calls(g.jobs[r], &bytes);
            if (r == 0) {
                ck_assert_uint_eq(calls, 0);
                ck_assert_uint_eq(bytes, 0);
            } else {
                // This round's call only (the earlier ones are certified):
                // its last 4 blocks of input, 1 KiB each.
                ck_assert_uint_eq(calls, 1);
                ck_assert_uint_eq(bytes, 4 * kSegBytes);
            }
        }
    }
}
END_TEST

// The members' point-to-point link for recovery, in process: mailboxes.
struct PeerLink {
    struct Box {
        PeerLink *link;
        uint32_t me;
    };
    explicit PeerLink(Group &g)
        : boxes(g.jobs.size()), mail(g.jobs.size()), bytes_in(g.jobs.size()),
          owner(std::this_thread::get_id())
    {
        for (uint32_t r = 0; r < g.jobs.size(); ++r) {
            boxes[r] = Box{this, r};
            const ina_peer_ops_t o = ops(r);
            ina_job_set_peers(g.jobs[r], &o);
        }
    }
    // Member r's end of the link.
    ina_peer_ops_t ops(uint32_t r)
    {
        return ina_peer_ops_t{&boxes[r], [](void *arg, uint32_t to, const void *msg, size_t len) {
                                  auto *b = static_cast<Box *>(arg);
                                  if (std::this_thread::get_id() != b->link->owner) {
                                      ++b->link->off_thread; // (and not delivered)
                                      return 0;
                                  }
                                  const auto *p = static_cast<const uint8_t *>(msg);
                                  b->link->mail[to].push_back({b->me, {p, p + len}});
                                  b->link->bytes_in[to] += len;
                                  return 0;
                              },
                              0};
    }
    // Hand every waiting message to its member; whether there was any.
    bool deliver(Group &g)
    {
        bool any = false;
        for (uint32_t r = 0; r < mail.size(); ++r) {
            while (!mail[r].empty()) {
                auto m = std::move(mail[r].front());
                mail[r].pop_front();
                ina_job_peer_message(g.jobs[r], m.first, m.second.data(), m.second.size());
                any = true;
            }
        }
        return any;
    }
    std::vector<Box> boxes;
    std::vector<std::deque<std::pair<uint32_t, std::vector<uint8_t>>>> mail;
    std::vector<size_t> bytes_in; // per member: what was sent to it
    // Messages sent from another thread than the one that made the link
    // (the caller's): each would have raced the caller inside its MPI.
    std::thread::id owner;
    std::atomic<size_t> off_thread{0};
};

// Every rank's call to completion, recovering those the lost agent left
// unfinished (host_ok: what each rank says it could do): their CQEs.
std::vector<ina_cqe_t> run_recovering(Group &g, PeerLink &link, std::vector<ina_coll_desc_t> &d,
                                      bool host_ok, uint32_t *recovered = nullptr,
                                      const std::function<void()> &posted = nullptr)
{
    const uint32_t n = static_cast<uint32_t>(d.size());
    std::vector<ina_call_t *> calls(n, nullptr);
    std::vector<ina_cqe_t> cqes(n);
    std::vector<int> phase(n, 0); // 0 running, 1 recovering, 2 done
    for (uint32_t r = 0; r < n; ++r) {
        ina_outcome_t outcome;
        const int rc = ina_job_post(g.jobs[r], &d[r], &calls[r], &outcome);
        ck_assert(rc == INA_OK || rc == INA_ERR_LOST);
        ck_assert_msg(calls[r] != nullptr, "rank %u: post rc %d outcome %d", r, rc, outcome); // with peers a lost post still gives the call
    }
    if (posted) {
        posted();
    }
    for (size_t spins = 0, left = n; left > 0; ++spins) {
        ck_assert_msg(spins < 200000, "calls did not complete");
        link.deliver(g);
        for (uint32_t r = 0; r < n; ++r) {
            ina_cqe_t cqe;
            if (phase[r] == 0 && ina_call_test(calls[r], &cqe)) {
                if (cqe.rc == INA_ERR_LOST) {
                    ck_assert_int_eq(ina_call_recover_start(calls[r], host_ok), INA_OK);
                    phase[r] = 1;
                    if (recovered != nullptr) {
                        ++*recovered;
                    }
                } else {
                    cqes[r] = cqe;
                    phase[r] = 2;
                    --left;
                }
            } else if (phase[r] == 1 && ina_call_recover_test(calls[r], &cqe)) {
                cqes[r] = cqe;
                phase[r] = 2;
                --left;
            }
        }
    }
    link.deliver(g);
    for (uint32_t r = 0; r < n; ++r) {
        ina_call_free(calls[r]);
    }
    return cqes;
}

// Every rank's call ended with rc and outcome.
void expect_all(const std::vector<ina_cqe_t> &c, int rc, int outcome)
{
    for (uint32_t r = 0; r < c.size(); ++r) {
        ck_assert_msg(c[r].rc == rc && c[r].outcome == outcome, "rank %u: rc %d outcome %d", r,
                      c[r].rc, c[r].outcome);
    }
}

// The agent dies at every point of a 12-block float allreduce (after 0, 1,
// ..., all of its 48 RESULTs): every rank still completes the call with the
// exact, rank-order sum the agent would have given, bit for bit, whatever
// it got before; and the next call, with the agent gone, too (all ranks
// recover it by exchange). With host_ok and nothing held anywhere, the
// ranks agree to run the host algorithm instead.
START_TEST(test_recover_lost_agent)
{
    const size_t elems = 12 * kSegBytes / sizeof(float);
    for (int k = 0; k <= 48; k += 1) {
        Group g(kRanks);
        PeerLink link(g);
        FloatSums warm(64);
        g.run(warm.d); // MID 0 complete everywhere, kept until certified
        warm.check();
        g.hub.die_after(k);
        FloatSums f(elems);
        uint32_t recovered = 0;
        std::vector<ina_cqe_t> c = run_recovering(g, link, f.d, false, &recovered);
        // Until the agent's last RESULT, somebody lacks a block and recovers.
        ck_assert_msg(k == 48 ? recovered == 0 : recovered > 0, "k %d: %u recovered", k,
                      recovered);
        for (uint32_t r = 0; r < kRanks; ++r) {
            ck_assert_msg(c[r].rc == INA_OK && c[r].outcome == INA_OFFLOADED,
                          "k %d rank %u: rc %d outcome %d", k, r, c[r].rc, c[r].outcome);
        }
        f.check();
        // The agent is gone: the next call is recovered by exchange alone.
        FloatSums next(300);
        recovered = 0;
        c = run_recovering(g, link, next.d, false, &recovered);
        ck_assert_uint_eq(recovered, kRanks);
        expect_all(c, INA_OK, INA_OFFLOADED);
        next.check();
        // A REDUCE_SCATTER (uneven parts, in place on rank 1) lost at the
        // same point of its own RESULTs: every part exact.
        {
            Group h(kRanks);
            PeerLink hl(h);
            const uint64_t counts[kRanks] = {700, 2, 1300, 1070};
            const uint64_t total = 700 + 2 + 1300 + 1070; // 12 blocks of 256 int32
            std::vector<std::vector<int32_t>> in(kRanks, std::vector<int32_t>(total));
            std::vector<std::vector<int32_t>> out(kRanks);
            std::vector<ina_coll_desc_t> rd(kRanks);
            for (uint32_t r = 0; r < kRanks; ++r) {
                for (uint64_t i = 0; i < total; ++i) {
                    in[r][i] = static_cast<int32_t>(i * 2654435761u + r * 40503u + k);
                }
                out[r].assign(counts[r], 0);
                rd[r] = ina_coll_desc_t{INA_COLL_REDUCE_SCATTER, INA_OP_SUM, INA_DT_INT32,
                                        in[r].data(), r == 1 ? in[r].data() : out[r].data(),
                                        total, 0, counts};
            }
            const std::vector<std::vector<int32_t>> orig = in;
            h.hub.die_after(k);
            c = run_recovering(h, hl, rd, false);
            uint64_t first = 0;
            for (uint32_t r = 0; r < kRanks; ++r) {
                ck_assert_msg(c[r].rc == INA_OK && c[r].outcome == INA_OFFLOADED,
                              "k %d rank %u: reduce_scatter rc %d", k, r, c[r].rc);
                const int32_t *got = r == 1 ? in[r].data() : out[r].data();
                for (uint64_t i = 0; i < counts[r]; ++i) {
                    uint32_t want = 0;
                    for (uint32_t q = 0; q < kRanks; ++q) {
                        want += static_cast<uint32_t>(orig[q][first + i]);
                    }
                    ck_assert_msg(got[i] == static_cast<int32_t>(want),
                                  "k %d rank %u part [%" PRIu64 "]", k, r, i);
                }
                first += counts[r];
            }
        }
        // ... or by the host, when every rank may run it.
        FloatSums host(300);
        c = run_recovering(g, link, host.d, true);
        expect_all(c, INA_OK, INA_FALLBACK_UNREACHABLE);
    }
}
END_TEST

// A member asks the others about its lost call before they have taken
// their last RESULTs in: their calls, still running when the ASK comes,
// end as the agent ended them (complete, kept), and each then answers the
// ASK it put aside. Here the agent dies before its very last RESULT (the
// last member's last block), with the others' last RESULTs still in their
// links; the last member alone recovers, from what they kept. (In a tree,
// the leaf of a node's leader dies while the spine completes the call for
// the other leaf's members: the recovery that hung once in a CI run.)
// `threads`: the members asked take their last RESULTs on the engine's
// progress thread (their calls handed to it, as a non-blocking collective's
// are); the answers composed there must go out from the caller's thread (a
// caller's MPI is not that thread's to use), at its next entry.
void recover_asked_before_done(bool threads)
{
    Group g(kRanks, 0, kSegBytes, 0, threads);
    PeerLink link(g);
    FloatSums warm(64);
    g.run(warm.d);
    warm.check();
    const uint32_t late = kRanks - 1;
    FloatSums f(12 * kSegBytes / sizeof(float)); // 12 blocks: 48 RESULTs
    g.hub.die_after(12 * kRanks - 1);
    std::vector<ina_call_t *> calls(kRanks, nullptr);
    for (uint32_t r = 0; r < kRanks; ++r) {
        ina_outcome_t outcome;
        ck_assert_int_eq(ina_job_post(g.jobs[r], &f.d[r], &calls[r], &outcome), INA_OK);
    }
    std::vector<int> phase(kRanks, 0); // 0 running, 1 recovering, 2 done
    std::vector<ina_cqe_t> cqes(kRanks);
    // Every member's call runs until the agent is gone; then only the
    // late member's, until it knows its call lost and asks the others.
    for (size_t spins = 0; !g.hub.dead(); ++spins) {
        ck_assert_msg(spins < 100000, "the agent did not die");
        for (uint32_t r = 0; r < kRanks && !g.hub.dead(); ++r) {
            ina_cqe_t cqe;
            if (phase[r] == 0 && ina_call_test(calls[r], &cqe)) {
                cqes[r] = cqe;
                phase[r] = 2;
            }
        }
    }
    for (size_t spins = 0; phase[late] == 0; ++spins) {
        ck_assert_msg(spins < 100000, "the late member's call did not end");
        ina_cqe_t cqe;
        if (ina_call_test(calls[late], &cqe)) {
            ck_assert_int_eq(cqe.rc, INA_ERR_LOST);
            ck_assert_int_eq(ina_call_recover_start(calls[late], false), INA_OK);
            phase[late] = 1;
        }
    }
    uint32_t asked_running = 0; // members its ASK found with the call still running
    for (uint32_t r = 0; r < kRanks; ++r) {
        asked_running += r != late && phase[r] == 0 ? 1 : 0;
    }
    ck_assert_uint_gt(asked_running, 0);
    link.deliver(g); // the ASKs, to members whose calls still run
    if (threads) {
        // Their progress threads take the last RESULTs in and complete the
        // calls (kept); this thread only looks, and its looks (entries)
        // send what those threads composed.
        for (uint32_t r = 0; r < kRanks; ++r) {
            if (phase[r] != 0) {
                continue;
            }
            const size_t before = ina_job_kept_calls(g.jobs[r], nullptr);
            ina_call_background(calls[r]);
            for (int ms = 0; ina_job_kept_calls(g.jobs[r], nullptr) == before; ++ms) {
                ck_assert_msg(ms < 10000, "member %u's progress thread did not complete its call",
                              r);
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        }
        ck_assert_uint_eq(link.off_thread, 0);
    }
    for (size_t spins = 0, left = asked_running + 1; left > 0; ++spins) {
        ck_assert_msg(spins < 200000, "calls did not complete");
        link.deliver(g);
        for (uint32_t r = 0; r < kRanks; ++r) {
            ina_cqe_t cqe;
            if ((phase[r] == 0 && ina_call_test(calls[r], &cqe)) ||
                (phase[r] == 1 && ina_call_recover_test(calls[r], &cqe))) {
                cqes[r] = cqe;
                phase[r] = 2;
                --left;
            }
        }
    }
    link.deliver(g);
    for (uint32_t r = 0; r < kRanks; ++r) {
        ina_call_free(calls[r]);
    }
    expect_all(cqes, INA_OK, INA_OFFLOADED);
    f.check();
    ck_assert_uint_eq(link.off_thread, 0);
}

START_TEST(test_recover_asked_before_done)
{
    recover_asked_before_done(false);
}
END_TEST

START_TEST(test_recover_asked_before_done_threaded)
{
    recover_asked_before_done(true);
}
END_TEST

// A member's link to the agent ends in the middle of a call (it found the
// agent silent before the others and left, as one whose liveness verdict
// came first does): the agent ends the call on the others with NOT_MEMBER,
// flagged in flight. With peers that is a loss the members settle among
// themselves, as the member that left does, never a failed call: every
// member ends it offloaded and exact. The next call, the job short of a
// member, is refused by the agent (NOT_MEMBER, not in flight) and settled
// among the members alike.
START_TEST(test_recover_member_left)
{
    Group g(kRanks);
    PeerLink link(g);
    FloatSums warm(64);
    g.run(warm.d);
    warm.check();
    FloatSums f(12 * kSegBytes / sizeof(float)); // 12 blocks: a window out, more to come
    uint32_t recovered = 0;
    std::vector<ina_cqe_t> c = run_recovering(g, link, f.d, false, &recovered,
                                              [&] { g.hub.cut(0); });
    ck_assert_uint_eq(recovered, kRanks);
    expect_all(c, INA_OK, INA_OFFLOADED);
    f.check();
    FloatSums next(300);
    recovered = 0;
    c = run_recovering(g, link, next.d, false, &recovered);
    ck_assert_uint_eq(recovered, kRanks);
    expect_all(c, INA_OK, INA_OFFLOADED);
    next.check();
}
END_TEST

// The agent dies with a call's BLOCKs in it and no RESULT out: though every
// member could run the host algorithm, the call struck in flight is rebuilt
// among the members, with the agent's bits. The next, a 64-block allreduce
// posted after the loss by members that cannot run the host algorithm:
// nobody holds any of it, so each block is rebuilt by one member, in turn,
// and the others fetch its RESULT from that one. Each member takes in about
// 2(n-1)/n of the call (as in a reduce-scatter then an allgather), not the
// n-1 times it that every member rebuilding every block would take; the
// result is the agent's, bit for bit, on every member. A call posted after
// the loss by members that can run the host algorithm runs it.
START_TEST(test_recover_rebuilds_take_turns)
{
    const size_t elems = 64 * kSegBytes / sizeof(float);
    const size_t call = elems * sizeof(float);
    Group g(kRanks);
    PeerLink link(g);
    FloatSums warm(64);
    g.run(warm.d);
    warm.check();
    g.hub.die_after(0);
    FloatSums struck(300);
    std::vector<ina_cqe_t> c = run_recovering(g, link, struck.d, true);
    expect_all(c, INA_OK, INA_OFFLOADED);
    struck.check();
    std::fill(link.bytes_in.begin(), link.bytes_in.end(), 0);
    FloatSums f(elems);
    uint32_t recovered = 0;
    c = run_recovering(g, link, f.d, false, &recovered);
    ck_assert_uint_eq(recovered, kRanks);
    for (uint32_t r = 0; r < kRanks; ++r) {
        ck_assert_int_eq(c[r].rc, INA_OK);
        ck_assert_int_eq(c[r].outcome, INA_OFFLOADED);
        // Payload 2(n-1)/n of the call; each of its 64 blocks costs every
        // member a few headers (FETCH, DATA, STATE) on top.
        const size_t most = 2 * (kRanks - 1) * call / kRanks + 64 * kRanks * 128;
        ck_assert_msg(link.bytes_in[r] <= most, "member %u took in %zu bytes, at most %zu", r,
                      link.bytes_in[r], most);
    }
    f.check();
    FloatSums host(300);
    c = run_recovering(g, link, host.d, true);
    expect_all(c, INA_OK, INA_FALLBACK_UNREACHABLE);
}
END_TEST

// A member with no job (its agent out of its reach when the job opened: it
// runs every call on the host) still answers the others' recoveries, from
// the job's key alone: "denied". With their agent gone, the others settle
// their call on the host with it (FALLBACK_DENIED) instead of waiting for
// its word forever. A message of another job is not its to answer.
START_TEST(test_recover_member_without_job)
{
    Group g(kRanks);
    PeerLink link(g);
    const uint32_t absent = kRanks - 1;
    g.hub.die();
    FloatSums f(300);
    std::vector<ina_call_t *> calls(absent, nullptr);
    std::vector<bool> done(absent, false);
    for (uint32_t r = 0; r < absent; ++r) {
        ina_outcome_t outcome;
        const int rc = ina_job_post(g.jobs[r], &f.d[r], &calls[r], &outcome);
        ck_assert(rc == INA_OK || rc == INA_ERR_LOST);
        ck_assert(calls[r] != nullptr);
        ina_cqe_t cqe;
        if (rc == INA_OK) {
            while (!ina_call_test(calls[r], &cqe)) {
            }
            ck_assert_int_eq(cqe.rc, INA_ERR_LOST);
        }
        ck_assert_int_eq(ina_call_recover_start(calls[r], 1), INA_OK);
    }
    ina_job_key_t other = g.key;
    other.cap[0] ^= 1;
    const ina_peer_ops_t ops = link.ops(absent);
    uint32_t answered = 0;
    for (size_t spins = 0, left = absent; left > 0; ++spins) {
        ck_assert_msg(spins < 200000, "the recoveries did not end");
        auto &box = link.mail[absent];
        while (!box.empty()) {
            auto m = std::move(box.front());
            box.pop_front();
            ck_assert_int_eq(ina_peer_answer_absent(&other, &ops, m.first, m.second.data(),
                                                    m.second.size()),
                             0);
            ck_assert_int_eq(ina_peer_answer_absent(&g.key, &ops, m.first, m.second.data(),
                                                    m.second.size()),
                             1);
            ++answered;
        }
        for (uint32_t r = 0; r < absent; ++r) {
            while (!link.mail[r].empty()) {
                auto m = std::move(link.mail[r].front());
                link.mail[r].pop_front();
                ina_job_peer_message(g.jobs[r], m.first, m.second.data(), m.second.size());
            }
            ina_cqe_t cqe;
            if (!done[r] && ina_call_recover_test(calls[r], &cqe)) {
                ck_assert_int_eq(cqe.rc, INA_OK);
                ck_assert_int_eq(cqe.outcome, INA_FALLBACK_DENIED);
                done[r] = true;
                --left;
            }
        }
    }
    ck_assert_uint_eq(answered, absent); // one question from each of the others
    const uint8_t junk[3] = {1, 2, 3};
    ck_assert_int_eq(ina_peer_answer_absent(&g.key, &ops, 0, junk, sizeof(junk)), 0);
    for (ina_call_t *c : calls) {
        ina_call_free(c);
    }
}
END_TEST

// A member gives a lost call up without recovering it: its caller settled
// the call on the host for a reason of its own (a node stage whose other
// stream fell back; a stripe whose other part did). The others, recovering
// it, hear "denied" from that member and settle on the host with it
// (FALLBACK_DENIED), whether they asked before it freed the call (the
// question waits for that) or after. Before, the question waited for an
// answer that never came: a node leader recovering a stream's call whose
// other node had already fallen back waited forever
// (nojob-kill-np4-k2-alone, with Open MPI 5.0 under load).
START_TEST(test_recover_member_gave_up)
{
    for (int asked_first = 0; asked_first < 2; ++asked_first) {
        Group g(kRanks);
        PeerLink link(g);
        FloatSums warm(64);
        g.run(warm.d);
        warm.check();
        g.hub.die_after(0); // the BLOCKs at the agent, no RESULT out
        FloatSums f(3 * kSegBytes / sizeof(float));
        const uint32_t quits = kRanks - 1;
        std::vector<ina_call_t *> calls(kRanks, nullptr);
        std::vector<int> phase(kRanks, 0); // 0 running, 1 recovering, 2 done
        for (uint32_t r = 0; r < kRanks; ++r) {
            ina_outcome_t outcome;
            const int rc = ina_job_post(g.jobs[r], &f.d[r], &calls[r], &outcome);
            ck_assert(rc == INA_OK || rc == INA_ERR_LOST);
            ck_assert(calls[r] != nullptr);
        }
        ina_cqe_t cqe;
        while (!ina_call_test(calls[quits], &cqe)) {
        }
        ck_assert_int_eq(cqe.rc, INA_ERR_LOST);
        bool freed = false;
        if (!asked_first) {
            ina_call_free(calls[quits]); // settled on the host, no recovery
            freed = true;
        }
        uint32_t left = quits, started = 0;
        for (size_t spins = 0; left > 0; ++spins) {
            ck_assert_msg(spins < 200000, "asked first %d: the recoveries did not end",
                          asked_first);
            link.deliver(g);
            if (!freed && started == quits) {
                // Every question to it is in (and waits): now it gives up.
                ina_call_free(calls[quits]);
                freed = true;
            }
            for (uint32_t r = 0; r < quits; ++r) {
                if (phase[r] == 0 && ina_call_test(calls[r], &cqe)) {
                    ck_assert_int_eq(cqe.rc, INA_ERR_LOST);
                    ck_assert_int_eq(ina_call_recover_start(calls[r], 1), INA_OK);
                    phase[r] = 1;
                    ++started;
                } else if (phase[r] == 1 && ina_call_recover_test(calls[r], &cqe)) {
                    ck_assert_msg(cqe.rc == INA_OK && cqe.outcome == INA_FALLBACK_DENIED,
                                  "asked first %d rank %u: rc %d outcome %d", asked_first, r,
                                  cqe.rc, cqe.outcome);
                    ck_assert_msg(freed, "rank %u settled before the member gave up", r);
                    phase[r] = 2;
                    --left;
                }
            }
        }
        for (uint32_t r = 0; r < quits; ++r) {
            ina_call_free(calls[r]);
        }
    }
}
END_TEST

// A tree's job (ina_job_set_groups: ranks 0-1 at leaf 0, 2-3 at leaf 1):
// with the agent gone before any RESULT, every block is rebuilt by the
// members, reduced as a tree of agents folds it, (r0 + r1) + (r2 + r3) in
// float, bit for bit, which is not the flat order ((r0 + r1) + r2) + r3 for
// these inputs.
START_TEST(test_recover_tree_order)
{
    Group g(kRanks);
    PeerLink link(g);
    const uint32_t leaf_of[kRanks] = {0, 0, 1, 1};
    for (uint32_t r = 0; r < kRanks; ++r) {
        ina_job_set_groups(g.jobs[r], leaf_of, kRanks, 1);
    }
    FloatSums warm(64);
    g.run(warm.d);
    g.hub.die_after(0);
    FloatSums f(3 * kSegBytes / sizeof(float));
    uint32_t recovered = 0;
    std::vector<ina_cqe_t> c = run_recovering(g, link, f.d, false, &recovered);
    ck_assert_uint_eq(recovered, kRanks);
    size_t differ = 0;
    for (size_t i = 0; i < f.in[0].size(); ++i) {
        const float tree = (f.in[0][i] + f.in[1][i]) + (f.in[2][i] + f.in[3][i]);
        const float flat = ((f.in[0][i] + f.in[1][i]) + f.in[2][i]) + f.in[3][i];
        differ += std::memcmp(&tree, &flat, sizeof(float)) != 0;
        for (uint32_t r = 0; r < kRanks; ++r) {
            ck_assert_msg(c[r].rc == INA_OK && c[r].outcome == INA_OFFLOADED, "rank %u", r);
            ck_assert_msg(std::memcmp(&f.out[r][i], &tree, sizeof(float)) == 0,
                          "rank %u element %zu: %a, want the tree's %a", r, i, f.out[r][i], tree);
        }
    }
    ck_assert_msg(differ > 0, "the inputs do not tell the two orders apart");
}
END_TEST

// A tree of three levels (leaves 0 | 1 | 2 = ranks 0 | 1 | 2-3; leaf 0 under
// spine 0, leaves 1 and 2 under spine 1, both under a core): the rebuilt
// blocks fold as those agents do, r0 + (r1 + (r2 + r3)), bit for bit, which
// is neither the flat order nor the leaves' alone ((r0 + r1) + (r2 + r3)).
START_TEST(test_recover_deep_tree_order)
{
    Group g(kRanks);
    PeerLink link(g);
    const uint32_t groups[2 * kRanks] = {0, 1, 2, 2, /* spines: */ 0, 1, 1, 1};
    for (uint32_t r = 0; r < kRanks; ++r) {
        ina_job_set_groups(g.jobs[r], groups, kRanks, 2);
    }
    FloatSums warm(64);
    g.run(warm.d);
    g.hub.die_after(0);
    FloatSums f(3 * kSegBytes / sizeof(float));
    uint32_t recovered = 0;
    std::vector<ina_cqe_t> c = run_recovering(g, link, f.d, false, &recovered);
    ck_assert_uint_eq(recovered, kRanks);
    size_t differ_flat = 0, differ_leaves = 0;
    for (size_t i = 0; i < f.in[0].size(); ++i) {
        const float deep = f.in[0][i] + (f.in[1][i] + (f.in[2][i] + f.in[3][i]));
        const float flat = ((f.in[0][i] + f.in[1][i]) + f.in[2][i]) + f.in[3][i];
        const float leaves = (f.in[0][i] + f.in[1][i]) + (f.in[2][i] + f.in[3][i]);
        differ_flat += std::memcmp(&deep, &flat, sizeof(float)) != 0;
        differ_leaves += std::memcmp(&deep, &leaves, sizeof(float)) != 0;
        for (uint32_t r = 0; r < kRanks; ++r) {
            ck_assert_msg(c[r].rc == INA_OK && c[r].outcome == INA_OFFLOADED, "rank %u", r);
            ck_assert_msg(std::memcmp(&f.out[r][i], &deep, sizeof(float)) == 0,
                          "rank %u element %zu: %a, want the tree's %a", r, i, f.out[r][i], deep);
        }
    }
    ck_assert_msg(differ_flat > 0 && differ_leaves > 0,
                  "the inputs do not tell the orders apart");
}
END_TEST

// A staged member as the node stage is one: its blocks are produced into a
// ring of R block areas, each reused only once its previous block's RESULT
// came back (so block t waits on the RESULT of block t - R), and a RESULT
// lands in place, over the BLOCK it answers.
struct StagedMember {
    static constexpr uint64_t kB = kSegBytes / sizeof(float), kR = 3;
    explicit StagedMember(uint32_t rank, uint64_t nblocks, int salt)
        : in(nblocks * kB), out(nblocks * kB, -1.0f), ring(kR * kB), got(nblocks, false)
    {
        for (size_t i = 0; i < in.size(); ++i) {
            in[i] = input_f(rank, i + static_cast<size_t>(salt));
        }
    }
    static int block(void *arg, uint64_t sid, ina_stage_block_t *b)
    {
        auto *m = static_cast<StagedMember *>(arg);
        if (sid >= kR && !m->got[sid - kR]) {
            return 0; // its area still holds an earlier block
        }
        float *area = m->ring.data() + (sid % kR) * kB;
        std::memcpy(area, m->in.data() + sid * kB, kB * sizeof(float));
        b->data = area;
        b->offset = 0;
        b->count = static_cast<uint32_t>(kB);
        b->want_result = 1;
        return 1;
    }
    static void result(void *arg, uint64_t sid, const void *data, uint32_t count)
    {
        auto *m = static_cast<StagedMember *>(arg);
        ck_assert_uint_eq(count, kB);
        float *area = m->ring.data() + (sid % kR) * kB;
        std::memcpy(area, data, kB * sizeof(float)); // in place, as the node stage does
        std::memcpy(m->out.data() + sid * kB, area, kB * sizeof(float));
        ck_assert(!m->got[sid]);
        m->got[sid] = true;
    }
    std::vector<float> in, out, ring;
    std::vector<bool> got;
};

// Every member's staged float allreduce to its end, recovering it when the
// agent is lost; every result the agent's rank-order sum, bit for bit.
void run_staged(Group &g, PeerLink &link, uint64_t nblocks, int salt, uint32_t *recovered)
{
    std::vector<std::unique_ptr<StagedMember>> m;
    std::vector<ina_call_t *> calls(kRanks, nullptr);
    std::vector<int> phase(kRanks, 0);
    for (uint32_t r = 0; r < kRanks; ++r) {
        m.push_back(std::make_unique<StagedMember>(r, nblocks, salt));
        ina_staged_desc_t sd{};
        sd.coll = INA_COLL_ALLREDUCE;
        sd.op = INA_OP_SUM;
        sd.dtype = INA_DT_FLOAT;
        sd.total = nblocks * StagedMember::kB;
        sd.ops = ina_stage_ops_t{m[r].get(), StagedMember::block, StagedMember::result};
        ina_outcome_t oc;
        const int rc = ina_job_post_staged(g.jobs[r], &sd, &calls[r], &oc);
        ck_assert(rc == INA_OK || rc == INA_ERR_LOST);
        ck_assert(calls[r] != nullptr);
    }
    for (size_t spins = 0, left = kRanks; left > 0; ++spins) {
        ck_assert_msg(spins < 200000, "staged calls did not complete");
        link.deliver(g);
        for (uint32_t r = 0; r < kRanks; ++r) {
            ina_cqe_t cqe;
            if (phase[r] == 0 && ina_call_test(calls[r], &cqe)) {
                if (cqe.rc == INA_ERR_LOST) {
                    ck_assert_int_eq(ina_call_recover_start(calls[r], 0), INA_OK);
                    phase[r] = 1;
                    ++*recovered;
                    continue;
                }
                phase[r] = 2;
            } else if (phase[r] == 1 && ina_call_recover_test(calls[r], &cqe)) {
                phase[r] = 2;
            } else {
                continue;
            }
            ck_assert_msg(cqe.rc == INA_OK && cqe.outcome == INA_OFFLOADED,
                          "rank %u: rc %d outcome %d", r, cqe.rc, cqe.outcome);
            --left;
        }
    }
    link.deliver(g);
    for (uint32_t r = 0; r < kRanks; ++r) {
        ina_call_free(calls[r]);
    }
    for (size_t i = 0; i < m[0]->in.size(); ++i) {
        float want = m[0]->in[i];
        for (uint32_t r = 1; r < kRanks; ++r) {
            want += m[r]->in[i];
        }
        for (uint32_t r = 0; r < kRanks; ++r) {
            ck_assert_msg(std::memcmp(&m[r]->out[i], &want, sizeof(float)) == 0,
                          "rank %u element %zu: %a, want %a", r, i, m[r]->out[i], want);
        }
    }
}

// Staged calls (the node stage's streams) lost with the agent at every point
// of a 12-block allreduce: the members finish it among themselves while
// each keeps producing blocks only as its earlier results come back (a
// RESULT overwrites its BLOCK in place): every result exact, bit for bit;
// and the next staged call, with the agent gone, is done by the members
// alone.
START_TEST(test_recover_staged)
{
    for (int k = 0; k <= 48; k += 1) {
        Group g(kRanks);
        PeerLink link(g);
        uint32_t recovered = 0;
        run_staged(g, link, 2, 0, &recovered); // certified marks move on
        ck_assert_uint_eq(recovered, 0);
        g.hub.die_after(k);
        run_staged(g, link, 12, k, &recovered);
        ck_assert_msg(k == 48 ? recovered == 0 : recovered > 0, "k %d: %u recovered", k,
                      recovered);
        recovered = 0;
        run_staged(g, link, 7, k + 1, &recovered);
        ck_assert_uint_eq(recovered, kRanks);
    }
}
END_TEST

} // namespace

// ina_call_abort (striping: another agent denied the call): rank 0 gives
// its granted call back; the agent ends it on every member, so rank 1's
// posted call and ranks 2-3's later posts all end as INA_FALLBACK_DENIED
// (status ABORTED), never as an error, nothing is written to any receive
// buffer, and the next call is offloaded with every lease back.
START_TEST(test_call_abort_falls_back_everywhere)
{
    Group g(kRanks);
    const size_t n = 1000; // four blocks
    IntSums sums(n, -7);
    std::vector<std::vector<int32_t>> &out = sums.out;
    std::vector<ina_coll_desc_t> &d = sums.d;
    ina_call_t *calls[2] = {nullptr, nullptr};
    for (uint32_t r = 0; r < 2; ++r) {
        ina_outcome_t outcome;
        ck_assert_int_eq(ina_job_post(g.jobs[r], &d[r], &calls[r], &outcome), INA_OK);
        ck_assert_int_eq(outcome, INA_OFFLOADED);
    }
    ina_call_abort(calls[0]);
    for (uint32_t r = 0; r < 2; ++r) {
        ina_cqe_t cqe;
        ck_assert_int_eq(ina_call_wait(calls[r], &cqe), INA_OK);
        ck_assert_int_eq(cqe.outcome, INA_FALLBACK_DENIED);
        ck_assert_int_eq(cqe.status, INA_PROTO_ERR_ABORTED);
        ina_call_free(calls[r]);
    }
    for (uint32_t r = 2; r < kRanks; ++r) {
        ina_cqe_t cqe;
        ck_assert_int_eq(ina_job_run(g.jobs[r], &d[r], &cqe), INA_OK);
        ck_assert_int_eq(cqe.outcome, INA_FALLBACK_DENIED);
        ck_assert_int_eq(cqe.status, INA_PROTO_ERR_ABORTED);
    }
    for (uint32_t r = 0; r < kRanks; ++r) {
        ck_assert(out[r] == std::vector<int32_t>(n, -7));
    }
    ck_assert_uint_eq(g.hub.agg().counters().calls_aborted, 1);
    g.run(d);
    for (uint32_t r = 0; r < kRanks; ++r) {
        ck_assert_int_eq(out[r][5], 4 * 5 + 6);
    }
    const ina::agg::SegPool &pool = g.hub.agg().pool();
    ck_assert_uint_eq(pool.free_segs(), pool.size());
}
END_TEST

// HOST_COST (protocol 16): after a call the agent denied, only member 0
// tells it what the call cost on the hosts, once, with the call's result
// vector in bytes; nothing after a granted call or for ns 0 (forgotten),
// and nothing at all on a connection of protocol 15.
START_TEST(test_host_cost_after_denial)
{
    for (int previous = 0; previous <= 1; ++previous) {
        Group g(kRanks, 0, kSegBytes, previous ? -2 : 0);
        IntSums sums(1000);
        std::vector<ina_coll_desc_t> &d = sums.d;
        auto deny_all = [&] {
            g.hub.sched().mode = SwitchScheduler::Mode::deny;
            for (uint32_t r = 0; r < kRanks; ++r) {
                ina_cqe_t cqe;
                ck_assert_int_eq(ina_job_run(g.jobs[r], &d[r], &cqe), INA_OK);
                ck_assert_int_eq(cqe.outcome, INA_FALLBACK_DENIED);
            }
            g.hub.sched().mode = SwitchScheduler::Mode::policy;
        };
        const ina::agg::Counters &c = g.hub.agg().counters();
        deny_all();
        for (uint32_t r = 0; r < kRanks; ++r) {
            ck_assert_int_eq(ina_job_host_cost(g.jobs[r], 123456), r == 0 && !previous ? 1 : 0);
        }
        ck_assert_int_eq(ina_job_host_cost(g.jobs[0], 123456), 0); // once per call
        ck_assert_uint_eq(c.host_costs, previous ? 0 : 1);
        deny_all();
        ck_assert_int_eq(ina_job_host_cost(g.jobs[0], 0), 0); // not timed: forgotten
        ck_assert_int_eq(ina_job_host_cost(g.jobs[0], 123456), 0);
        deny_all();
        g.run(d); // a granted call after the denial: the latest call is not denied
        ck_assert_int_eq(ina_job_host_cost(g.jobs[0], 123456), 0);
        ck_assert_uint_eq(c.host_costs, previous ? 0 : 1);
        ck_assert_uint_eq(c.rejected[INA_PROTO_ERR_MALFORMED], 0);
        ck_assert_uint_eq(c.calls_denied, 3);
    }
}
END_TEST

// CALL_TIME (protocol 17), as the component drives it: after a blocking
// call of coll_ina_call_time_min_bytes or more, granted or denied (then
// after its HOST_COST), member 0 alone tells the agent what the whole call
// took, once, with the call's result vector in bytes; a call the component
// does not time (non-blocking, persistent, below the minimum) is forgotten
// with ns 0 at its post, so nothing goes for it, before its end or after.
// A send that fails (the agent gone) is an error the caller counts as
// dropped. On a connection of protocol 16 nothing is ever sent (HOST_COST
// still is).
START_TEST(test_call_time)
{
    for (int previous = 0; previous <= 1; ++previous) {
        Group g(kRanks, 0, kSegBytes, previous ? -1 : 0);
        const size_t n = 1000;
        IntSums sums(n);
        std::vector<ina_coll_desc_t> &d = sums.d;
        const ina::agg::Counters &c = g.hub.agg().counters();
        const std::vector<SwitchScheduler::Told> &told = g.hub.sched().told;
        const int want = previous ? 0 : 1;

        // A granted blocking call: one CALL_TIME, from member 0.
        g.run(d);
        for (uint32_t r = 0; r < kRanks; ++r) {
            ck_assert_int_eq(ina_job_call_time(g.jobs[r], 2000000), r == 0 ? want : 0);
        }
        ck_assert_int_eq(ina_job_call_time(g.jobs[0], 2000000), 0); // once per call
        ck_assert_uint_eq(c.call_times, static_cast<uint64_t>(want));
        ck_assert_uint_eq(told.size(), static_cast<size_t>(want));
        if (want) {
            ck_assert_uint_eq(told[0].type, INA_PROTO_CALL_TIME);
            ck_assert_uint_eq(told[0].coll, INA_COLL_ALLREDUCE);
            ck_assert_uint_eq(told[0].bytes, n * sizeof(int32_t));
            ck_assert(told[0].secs > 0.0019 && told[0].secs < 0.0021);
        }

        // A denied blocking call: its host part (HOST_COST, protocol 16 has
        // it), then the whole call (CALL_TIME), each once, from member 0.
        g.hub.sched().mode = SwitchScheduler::Mode::deny;
        for (uint32_t r = 0; r < kRanks; ++r) {
            ina_cqe_t cqe;
            ck_assert_int_eq(ina_job_run(g.jobs[r], &d[r], &cqe), INA_OK);
            ck_assert_int_eq(cqe.outcome, INA_FALLBACK_DENIED);
        }
        g.hub.sched().mode = SwitchScheduler::Mode::policy;
        for (uint32_t r = 0; r < kRanks; ++r) {
            ck_assert_int_eq(ina_job_host_cost(g.jobs[r], 1000000), r == 0 ? 1 : 0);
            ck_assert_int_eq(ina_job_call_time(g.jobs[r], 3000000), r == 0 ? want : 0);
        }
        ck_assert_int_eq(ina_job_call_time(g.jobs[0], 3000000), 0);
        ck_assert_uint_eq(c.call_times, static_cast<uint64_t>(2 * want));
        ck_assert_uint_eq(c.host_costs, 1);
        ck_assert_uint_eq(told.size(), static_cast<size_t>(2 * want + 1));
        ck_assert_uint_eq(told[want].type, INA_PROTO_HOST_COST);
        if (want) {
            ck_assert_uint_eq(told[2].type, INA_PROTO_CALL_TIME);
            ck_assert_uint_eq(told[2].bytes, n * sizeof(int32_t));
            ck_assert(told[2].secs > 0.0029 && told[2].secs < 0.0031);
        }

        // A call not timed (a smaller one, granted): forgotten at its post,
        // nothing sent after it.
        g.run(d);
        for (uint32_t r = 0; r < kRanks; ++r) {
            ck_assert_int_eq(ina_job_call_time(g.jobs[r], 0), 0);
        }
        ck_assert_int_eq(ina_job_call_time(g.jobs[0], 2000000), 0);

        // A non-blocking call: forgotten while in flight, nothing at its end.
        std::vector<ina_call_t *> calls(kRanks, nullptr);
        for (uint32_t r = 0; r < kRanks; ++r) {
            ina_outcome_t oc;
            ck_assert_int_eq(ina_job_post(g.jobs[r], &d[r], &calls[r], &oc), INA_OK);
            ck_assert_int_eq(oc, INA_OFFLOADED);
            ck_assert_int_eq(ina_job_call_time(g.jobs[r], 0), 0);
        }
        Group::finish(calls);
        ck_assert_int_eq(ina_job_call_time(g.jobs[0], 2000000), 0);
        ck_assert_uint_eq(c.call_times, static_cast<uint64_t>(2 * want));

        // The agent gone: member 0's send fails (an error: dropped), and
        // never blocks; on protocol 16 there was nothing to send.
        g.run(d);
        g.hub.die();
        const int rc = ina_job_call_time(g.jobs[0], 2000000);
        ck_assert_int_eq(rc, previous ? 0 : INA_ERR_UNREACHABLE);
        ck_assert_uint_eq(c.call_times, static_cast<uint64_t>(2 * want));
        ck_assert_uint_eq(c.rejected[INA_PROTO_ERR_MALFORMED], 0);
    }
}
END_TEST

// ---- striping over two in-process agents (ina_stripe_*) -------------------

constexpr uint32_t kAgents = 2;

// kRanks ranks, each with one client per agent, one striped job.
struct StripeGroup {
    StripeGroup() : hubs{Hub(kSegBytes), Hub(kSegBytes)}, stripes(kRanks, nullptr)
    {
        clients.assign(kRanks, std::vector<ina_client_t *>(kAgents, nullptr));
        for (uint32_t r = 0; r < kRanks; ++r) {
            for (uint32_t k = 0; k < kAgents; ++k) {
                clients[r][k] = loop_client(hubs[k]);
            }
        }
        const std::vector<uint32_t> nodes = {0, 1, 2, 3};
        ina_job_key_t key;
        ina_job_key_init(&key);
        ina_job_key_add(&key, "stripe", 6);
        ina_job_key_seal(&key, kTestSecret);
        for (uint32_t r = 0; r < kRanks; ++r) {
            ina_job_params_t params;
            ck_assert_int_eq(ina_stripe_open(clients[r].data(), kAgents, &key, kRanks,
                                             nodes.data(), r, 0, 0, &params, &stripes[r]),
                             INA_OK);
            ck_assert_uint_eq(params.block_bytes, kSegBytes);
        }
    }
    ~StripeGroup()
    {
        for (uint32_t r = 0; r < kRanks; ++r) {
            ina_stripe_leave(stripes[r]);
            for (ina_client_t *c : clients[r]) {
                ina_client_disconnect(c);
            }
        }
    }
    // Post every rank's call (without waiting for the verdicts), then test
    // them round-robin; every CQE must have `want` as its outcome.
    void run(std::vector<ina_coll_desc_t> &d, ina_outcome_t want = INA_OFFLOADED,
             const std::function<void()> &between = nullptr)
    {
        std::vector<ina_stripe_call_t *> calls(kRanks, nullptr);
        for (uint32_t r = 0; r < kRanks; ++r) {
            ina_outcome_t oc;
            ck_assert_int_eq(ina_stripe_post(stripes[r], &d[r], 0, &calls[r], &oc), INA_OK);
        }
        if (between) {
            between();
        }
        std::vector<bool> done(kRanks, false);
        for (size_t left = kRanks, spins = 0; left > 0; ++spins) {
            ck_assert_msg(spins < 100000, "striped calls did not complete");
            for (uint32_t r = 0; r < kRanks; ++r) {
                ina_cqe_t cqe;
                if (!done[r] && ina_stripe_call_test(calls[r], &cqe)) {
                    ck_assert_int_eq(cqe.rc, INA_OK);
                    ck_assert_int_eq(cqe.outcome, want);
                    ina_stripe_call_free(calls[r]);
                    done[r] = true;
                    --left;
                }
            }
        }
    }
    void expect_leases_back()
    {
        for (Hub &h : hubs) {
            ck_assert_uint_eq(h.agg().pool().free_segs(), h.agg().pool().size());
        }
    }

    Hub hubs[kAgents];
    std::vector<std::vector<ina_client_t *>> clients;
    std::vector<ina_stripe_t *> stripes;
};

// Every collective over two agents: block sid goes to agent sid mod 2 (each
// agent's share of the blocks counted), results exact (floats bit-identical
// to a flat agent's rank order: each agent folds its blocks alike).
START_TEST(test_stripe_every_collective)
{
    StripeGroup g;
    std::vector<ina_coll_desc_t> d(kRanks);
    // ALLREDUCE of floats: 1000 elements, 4 blocks of 1 KiB: 2 per agent.
    FloatSums f(1000);
    g.run(f.d);
    for (uint32_t k = 0; k < kAgents; ++k) {
        ck_assert_uint_eq(g.hubs[k].agg().counters().blocks_in, 2 * kRanks);
        ck_assert_uint_eq(g.hubs[k].agg().counters().calls_granted, 1);
    }
    f.check();
    // ALLREDUCE in place (int64, 5 blocks: 3 at agent 0, 2 at agent 1),
    // REDUCE to rank 2, REDUCE_SCATTER with uneven parts.
    const size_t m = 600;
    std::vector<std::vector<int64_t>> iv(kRanks, std::vector<int64_t>(m)), ov = iv;
    auto ival = [](uint32_t r, size_t i) { return static_cast<int64_t>(i * 1000003 + r * 7); };
    for (uint32_t r = 0; r < kRanks; ++r) {
        for (size_t i = 0; i < m; ++i) {
            iv[r][i] = ival(r, i);
        }
        d[r] = ina_coll_desc_t{INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT64, iv[r].data(),
                               iv[r].data(), m, 0, nullptr};
    }
    g.run(d);
    for (uint32_t r = 0; r < kRanks; ++r) {
        for (size_t i = 0; i < m; ++i) {
            ck_assert_int_eq(iv[r][i], 4 * static_cast<int64_t>(i * 1000003) + 7 * 6);
        }
    }
    for (uint32_t r = 0; r < kRanks; ++r) {
        for (size_t i = 0; i < m; ++i) {
            iv[r][i] = ival(r, i);
        }
        std::fill(ov[r].begin(), ov[r].end(), -1);
        d[r] = ina_coll_desc_t{INA_COLL_REDUCE, INA_OP_MAX, INA_DT_INT64, iv[r].data(),
                               ov[r].data(), m, 2, nullptr};
    }
    g.run(d);
    for (uint32_t r = 0; r < kRanks; ++r) {
        for (size_t i = 0; i < m; ++i) {
            ck_assert_int_eq(ov[r][i], r == 2 ? ival(3, i) : -1);
        }
    }
    const uint64_t counts[kRanks] = {250, 0, 301, 49};
    for (uint32_t r = 0; r < kRanks; ++r) {
        std::fill(ov[r].begin(), ov[r].end(), -1);
        d[r] = ina_coll_desc_t{INA_COLL_REDUCE_SCATTER, INA_OP_SUM, INA_DT_INT64, iv[r].data(),
                               ov[r].data(), m, 0, counts};
    }
    g.run(d);
    for (uint32_t r = 0, first = 0; r < kRanks; first += static_cast<uint32_t>(counts[r]), ++r) {
        for (uint64_t i = 0; i < counts[r]; ++i) {
            ck_assert_int_eq(ov[r][i], 4 * static_cast<int64_t>((first + i) * 1000003) + 42);
        }
        ck_assert_int_eq(ov[r][counts[r]], -1);
    }
    // BCAST from rank 1, ALLGATHER (and in place), BARRIER.
    const size_t bytes = 3000;
    std::vector<std::vector<uint8_t>> b(kRanks, std::vector<uint8_t>(bytes * kRanks));
    for (uint32_t r = 0; r < kRanks; ++r) {
        for (size_t i = 0; i < bytes; ++i) {
            b[r][i] = static_cast<uint8_t>(r == 1 ? i * 13 + 5 : 0);
        }
        d[r] = ina_coll_desc_t{INA_COLL_BCAST, INA_OP_REPLACE, INA_DT_UINT8, nullptr, b[r].data(),
                               bytes, 1, nullptr};
    }
    g.run(d);
    for (uint32_t r = 0; r < kRanks; ++r) {
        for (size_t i = 0; i < bytes; ++i) {
            ck_assert_uint_eq(b[r][i], static_cast<uint8_t>(i * 13 + 5));
        }
    }
    std::vector<std::vector<uint8_t>> mine(kRanks, std::vector<uint8_t>(bytes));
    for (int in_place = 0; in_place < 2; ++in_place) {
        for (uint32_t r = 0; r < kRanks; ++r) {
            std::fill(b[r].begin(), b[r].end(), 0);
            for (size_t i = 0; i < bytes; ++i) {
                mine[r][i] = static_cast<uint8_t>(r * 59 + i);
            }
            if (in_place) {
                std::memcpy(b[r].data() + r * bytes, mine[r].data(), bytes);
            }
            d[r] = ina_coll_desc_t{INA_COLL_ALLGATHER, INA_OP_REPLACE, INA_DT_UINT8,
                                   in_place ? nullptr : mine[r].data(), b[r].data(), bytes, 0,
                                   nullptr};
        }
        g.run(d);
        for (uint32_t r = 0; r < kRanks; ++r) {
            for (uint32_t q = 0; q < kRanks; ++q) {
                ck_assert(std::memcmp(b[r].data() + q * bytes, mine[q].data(), bytes) == 0);
            }
        }
    }
    const uint64_t barriers0 = g.hubs[0].agg().counters().calls_granted;
    const uint64_t barriers1 = g.hubs[1].agg().counters().calls_granted;
    for (uint32_t r = 0; r < kRanks; ++r) {
        d[r] = ina_coll_desc_t{INA_COLL_BARRIER, INA_OP_REPLACE, INA_DT_UINT8, nullptr, nullptr,
                               0, 0, nullptr};
    }
    g.run(d);
    // One block: agent 0 alone serves it.
    ck_assert_uint_eq(g.hubs[0].agg().counters().calls_granted, barriers0 + 1);
    ck_assert_uint_eq(g.hubs[1].agg().counters().calls_granted, barriers1);
    g.expect_leases_back();
}
END_TEST

// CALL_TIME over a stripe: every agent with a part of the call hears its
// whole time (each judges the job by it), from member 0 alone, with its
// part's bytes; a call of one block has a part at agent 0 only, so agent 1
// hears nothing of it; a call forgotten (ns 0) is told nowhere.
START_TEST(test_stripe_call_time)
{
    StripeGroup g;
    auto tell = [&](uint64_t ns, uint32_t want0) {
        for (uint32_t r = 0; r < kRanks; ++r) {
            uint32_t dropped = 7;
            ck_assert_uint_eq(ina_stripe_call_time(g.stripes[r], ns, &dropped),
                              r == 0 ? want0 : 0);
            ck_assert_uint_eq(dropped, 0);
        }
    };
    auto heard = [&](uint64_t at0, uint64_t at1) {
        ck_assert_uint_eq(g.hubs[0].agg().counters().call_times, at0);
        ck_assert_uint_eq(g.hubs[1].agg().counters().call_times, at1);
    };
    FloatSums f(1000); // 4 blocks of 1 KiB: 2 per agent
    g.run(f.d);
    f.check();
    tell(4000000, 2);
    tell(4000000, 0); // once per call
    heard(1, 1);
    uint64_t parts = 0;
    for (uint32_t k = 0; k < kAgents; ++k) {
        const std::vector<SwitchScheduler::Told> &told = g.hubs[k].sched().told;
        ck_assert_uint_eq(told.size(), 1);
        ck_assert_uint_eq(told[0].type, INA_PROTO_CALL_TIME);
        ck_assert_uint_gt(told[0].bytes, 0);
        ck_assert(told[0].secs > 0.0039 && told[0].secs < 0.0041);
        parts += told[0].bytes;
    }
    ck_assert_uint_eq(parts, 1000 * sizeof(float)); // each agent its part's bytes
    FloatSums one(10); // one block: agent 0's alone
    g.run(one.d);
    one.check();
    tell(4000000, 1);
    heard(2, 1);
    g.run(f.d);
    tell(0, 0); // not timed: forgotten at both
    tell(4000000, 0);
    heard(2, 1);
    for (uint32_t k = 0; k < kAgents; ++k) {
        ck_assert_uint_eq(g.hubs[k].agg().counters().rejected[INA_PROTO_ERR_MALFORMED], 0);
    }
    g.expect_leases_back();
}
END_TEST

// One of two agents denies: every rank falls back alike, the other agent's
// lease comes back (its part given back), and no receive buffer was touched
// (in place: the input is intact). Then agent 1 keeps the call waiting while
// agent 0 completes its blocks: those RESULTs stay out of the buffers until
// agent 1 denies. Then everything is granted again.
START_TEST(test_stripe_one_agent_denies)
{
    for (uint32_t who = 0; who < kAgents; ++who) {
        StripeGroup g;
        const size_t n = 1000;
        std::vector<std::vector<int32_t>> v(kRanks, std::vector<int32_t>(n));
        std::vector<ina_coll_desc_t> d(kRanks);
        auto reset = [&] {
            for (uint32_t r = 0; r < kRanks; ++r) {
                for (size_t i = 0; i < n; ++i) {
                    v[r][i] = static_cast<int32_t>(i * 3 + r);
                }
                d[r] = ina_coll_desc_t{INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, v[r].data(),
                                       v[r].data(), n, 0, nullptr};
            }
        };
        auto intact = [&] {
            for (uint32_t r = 0; r < kRanks; ++r) {
                for (size_t i = 0; i < n; ++i) {
                    ck_assert_int_eq(v[r][i], static_cast<int32_t>(i * 3 + r));
                }
            }
        };
        reset();
        g.hubs[who].sched().mode = SwitchScheduler::Mode::deny;
        g.run(d, INA_FALLBACK_DENIED);
        intact();
        g.expect_leases_back();
        // The other agent granted its part (and, all blocks in, may have
        // completed it before the ranks gave it back).
        ck_assert_uint_eq(g.hubs[1 - who].agg().counters().calls_granted, 1);
        ck_assert_uint_eq(g.hubs[who].agg().counters().calls_denied, 1);
        // Its host cost goes to the agent that denied it, from member 0 alone.
        for (uint32_t r = 0; r < kRanks; ++r) {
            uint32_t dropped = 7;
            ck_assert_uint_eq(ina_stripe_host_cost(g.stripes[r], 5000, &dropped), r == 0 ? 1 : 0);
            ck_assert_uint_eq(dropped, 0);
        }
        ck_assert_uint_eq(g.hubs[who].agg().counters().host_costs, 1);
        ck_assert_uint_eq(g.hubs[1 - who].agg().counters().host_costs, 0);
        // Its whole time goes to both: each judges the job by it.
        for (uint32_t r = 0; r < kRanks; ++r) {
            uint32_t dropped = 7;
            ck_assert_uint_eq(ina_stripe_call_time(g.stripes[r], 9000, &dropped), r == 0 ? 2 : 0);
            ck_assert_uint_eq(dropped, 0);
        }
        ck_assert_uint_eq(g.hubs[who].agg().counters().call_times, 1);
        ck_assert_uint_eq(g.hubs[1 - who].agg().counters().call_times, 1);

        // Agent `who` defers; the other completes every block of its part.
        g.hubs[who].sched().mode = SwitchScheduler::Mode::defer;
        reset();
        g.run(d, INA_FALLBACK_DENIED, [&] {
            for (int i = 0; i < 50; ++i) {
                for (uint32_t r = 0; r < kRanks; ++r) {
                    for (ina_client_t *c : g.clients[r]) {
                        ina_client_progress(c);
                    }
                }
            }
            // Its part is complete there (the lease is back: every RESULT
            // went out) and delivered, yet nothing reached the buffers.
            const ina::agg::SegPool &other = g.hubs[1 - who].agg().pool();
            ck_assert_uint_eq(g.hubs[1 - who].agg().counters().calls_granted, 2);
            ck_assert_uint_eq(other.free_segs(), other.size());
            intact();
            g.hubs[who].sched().mode = SwitchScheduler::Mode::deny;
            g.hubs[who].agg().tick(ina::agg::Clock::now());
        });
        intact();
        g.expect_leases_back();

        g.hubs[who].sched().mode = SwitchScheduler::Mode::policy;
        reset();
        g.run(d);
        for (uint32_t r = 0; r < kRanks; ++r) {
            ck_assert_int_eq(v[r][10], 4 * 30 + 6);
        }
        g.expect_leases_back();
    }
}
END_TEST

// Liveness (ina_client_config_t.liveness_ms): an agent that stops in the
// middle of a call without closing anything is found by its silence, and
// every call waiting on it fails as lost (to be recovered by the ranks).
constexpr int kLivenessMs = 300;

START_TEST(test_liveness_frozen_agent)
{
    Group g(kRanks, kLivenessMs);
    const size_t elems = 12 * kSegBytes / sizeof(float); // more blocks than a window
    FloatSums f(elems);
    std::vector<ina_call_t *> calls(kRanks, nullptr);
    for (uint32_t r = 0; r < kRanks; ++r) {
        ina_outcome_t outcome;
        ck_assert_int_eq(ina_job_post(g.jobs[r], &f.d[r], &calls[r], &outcome), INA_OK);
        ck_assert_int_eq(outcome, INA_OFFLOADED);
    }
    g.hub.freeze();
    // The limit: the engine's 30 s progress timeout is far; a hang guard of
    // 100 times the liveness limit, never a measure of speed.
    const auto start = std::chrono::steady_clock::now();
    const auto guard = start + std::chrono::milliseconds(100 * kLivenessMs);
    std::vector<bool> done(kRanks, false);
    for (uint32_t left = kRanks; left > 0;) {
        ck_assert_msg(std::chrono::steady_clock::now() < guard, "frozen agent not found");
        for (uint32_t r = 0; r < kRanks; ++r) {
            ina_cqe_t cqe;
            if (!done[r] && ina_call_test(calls[r], &cqe)) {
                ck_assert_int_eq(cqe.rc, INA_ERR_LOST);
                ck_assert(!ina_client_alive(g.clients[r]));
                ina_call_free(calls[r]);
                done[r] = true;
                --left;
            }
        }
    }
    // Found only after the probes went unanswered for the whole limit.
    ck_assert(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(kLivenessMs));
}
END_TEST

// A live agent whose call waits (a member not there yet, for many times
// the liveness limit) answers the probes: nobody is declared lost, and the
// call completes exactly once the member comes.
START_TEST(test_liveness_waiting_is_not_lost)
{
    Group g(kRanks, kLivenessMs);
    FloatSums f(300);
    std::vector<ina_call_t *> calls(kRanks, nullptr);
    for (uint32_t r = 0; r + 1 < kRanks; ++r) {
        ina_outcome_t outcome;
        ck_assert_int_eq(ina_job_post(g.jobs[r], &f.d[r], &calls[r], &outcome), INA_OK);
        ck_assert_int_eq(outcome, INA_OFFLOADED);
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(8 * kLivenessMs);
    while (std::chrono::steady_clock::now() < until) {
        for (uint32_t r = 0; r + 1 < kRanks; ++r) {
            ina_cqe_t cqe;
            ck_assert_msg(!ina_call_test(calls[r], &cqe), "rank %u: call ended (rc %d)", r,
                          cqe.rc);
            ck_assert(ina_client_alive(g.clients[r]));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ina_outcome_t outcome;
    ck_assert_int_eq(ina_job_post(g.jobs[kRanks - 1], &f.d[kRanks - 1], &calls[kRanks - 1],
                                  &outcome),
                     INA_OK);
    Group::finish(calls);
    f.check();
}
END_TEST

int main()
{
    return ina_test::run_suite("engine_core", "in-process",
                               {test_allreduce_float_exact,
                                test_reduce_scatter_and_bcast,
                                test_planned_call_posted_again,
                                test_leases_back_after_calls,
                                test_kept_until_certified,
                                test_recover_lost_agent,
                                test_recover_staged,
                                test_recover_rebuilds_take_turns,
                                test_recover_member_without_job,
                                test_recover_member_gave_up,
                                test_recover_member_left,
                                test_recover_asked_before_done,
                                test_recover_asked_before_done_threaded,
                                test_recover_tree_order,
                                test_recover_deep_tree_order,
                                test_call_abort_falls_back_everywhere,
                                test_host_cost_after_denial,
                                test_call_time,
                                test_stripe_every_collective,
                                test_stripe_one_agent_denies,
                                test_stripe_call_time,
                                test_liveness_frozen_agent,
                                test_liveness_waiting_is_not_lost});
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The client engine and the aggregation core joined without any transport:
// every client talks to one in-process agg::Aggregator through a Channel
// (client/channel.h) whose post() hands the message to agg::serve() and whose
// progress() delivers what the core's WireSink queued for that member. This
// is the layering a node stage uses (the engine's calls over a channel, the
// same core that ina-switchd runs); here it checks that the two layers alone
// compute every collective exactly, in one thread, with no UCX at all.
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
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
};

// The in-process "agent": an Aggregator whose messages land in the members' inboxes.
class Hub final : public ina::agg::WireSink {
public:
    explicit Hub(uint32_t seg_bytes)
        : agg_(config(seg_bytes),
               [](ina::agg::SegPool &pool) {
                   return std::make_unique<ina::sched::FreeSegScheduler>(pool);
               },
               *this)
    {
    }
    ina::agg::Aggregator &agg() { return agg_; }

    void send(ina::agg::Member &to, const ina_proto_hdr_t &h, ina::agg::BufRef payload,
              size_t len) override
    {
        Msg m{h, {}};
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
    ina::agg::Aggregator agg_;
};

class LoopChannel final : public Channel {
public:
    LoopChannel(Hub &hub, ChannelEvents &events) : hub_(hub), events_(events) {}
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
        if (closed_ || ina_proto_check(&hdr, sizeof(hdr), len) != INA_PROTO_OK) {
            return Posted::failed;
        }
        // The core reduces or copies the payload before it returns.
        ina::agg::serve(hub_.agg(), hub_, member_, hdr, payload);
        return Posted::done;
    }
    bool arm() override { return member_.inbox.empty(); }
    int wake_fd() const override { return -1; } // poll() ignores it: a short nap
    void signal() override {}
    bool alive() const override { return !closed_; }
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

struct Group {
    explicit Group(uint32_t n) : hub(kSegBytes), clients(n, nullptr), jobs(n, nullptr)
    {
        ina_client_config_t cfg{"in-process", 1000, 10000, 0, 0, nullptr, nullptr};
        for (uint32_t r = 0; r < n; ++r) {
            std::string err;
            int rc = ina::client::connect_over(
                cfg,
                [this](ChannelEvents &ev, bool, std::unique_ptr<Channel> &out, std::string &) {
                    out = std::make_unique<LoopChannel>(hub, ev);
                    return static_cast<int>(INA_OK);
                },
                "in-process", &clients[r], err);
            ck_assert_msg(rc == INA_OK, "connect_over: %s", err.c_str());
        }
        std::vector<uint32_t> nodes(n);
        for (uint32_t r = 0; r < n; ++r) {
            nodes[r] = r / 2; // two ranks per node: Node and Rank bitmaps both in play
        }
        // Every member opens the job by key (one key per group of this process).
        static uint32_t groups = 0;
        ina_job_key_t key;
        ina_job_key_init(&key);
        ina_job_key_add(&key, &groups, sizeof(groups));
        ++groups;
        for (uint32_t r = 0; r < n; ++r) {
            ina_job_params_t params;
            ck_assert_int_eq(ina_job_open(clients[r], key.bytes, n, nodes.data(), r, 0, 0, &params,
                                          &jobs[r]),
                             INA_OK);
            ck_assert_uint_eq(params.block_bytes, kSegBytes);
        }
    }
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
        std::vector<bool> done(descs.size(), false);
        for (size_t left = descs.size(), spins = 0; left > 0; ++spins) {
            ck_assert_msg(spins < 100000, "calls did not complete");
            for (uint32_t r = 0; r < descs.size(); ++r) {
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

START_TEST(test_allreduce_float_exact)
{
    Group g(kRanks);
    const size_t n = 1000; // 4000 bytes: 4 blocks of 1 KiB through a window of 4
    std::vector<std::vector<float>> in(kRanks, std::vector<float>(n));
    std::vector<std::vector<float>> out(kRanks, std::vector<float>(n, -1.0f));
    std::vector<ina_coll_desc_t> d(kRanks);
    for (uint32_t r = 0; r < kRanks; ++r) {
        for (size_t i = 0; i < n; ++i) {
            in[r][i] = input_f(r, i);
        }
        d[r] = ina_coll_desc_t{INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_FLOAT, in[r].data(),
                               out[r].data(), n, 0, nullptr};
    }
    g.run(d);
    for (size_t i = 0; i < n; ++i) {
        float want = in[0][i]; // the agent's documented order: rank order
        for (uint32_t r = 1; r < kRanks; ++r) {
            want += in[r][i];
        }
        for (uint32_t r = 0; r < kRanks; ++r) {
            ck_assert_msg(std::memcmp(&out[r][i], &want, sizeof(float)) == 0,
                          "rank %u element %zu: %a, want %a", r, i, out[r][i], want);
        }
    }
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
        }
    }
    const ina::agg::SegPool &pool = g.hub.agg().pool();
    ck_assert_uint_eq(pool.free_segs(), pool.size());
    ck_assert_uint_eq(g.hub.agg().counters().calls_granted, 3);
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
    std::vector<std::vector<int32_t>> in(kRanks, std::vector<int32_t>(n));
    std::vector<std::vector<int32_t>> out(kRanks, std::vector<int32_t>(n, -7));
    std::vector<ina_coll_desc_t> d(kRanks);
    for (uint32_t r = 0; r < kRanks; ++r) {
        for (size_t i = 0; i < n; ++i) {
            in[r][i] = static_cast<int32_t>(i + r);
        }
        d[r] = ina_coll_desc_t{INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, in[r].data(),
                               out[r].data(), n, 0, nullptr};
    }
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

int main()
{
    return ina_test::run_suite("engine_core", "in-process",
                               {test_allreduce_float_exact,
                                test_reduce_scatter_and_bcast,
                                test_leases_back_after_calls,
                                test_call_abort_falls_back_everywhere});
}

// Agent test: allreduce through a real ina-switchd with 2..8 simulated ranks
// (one UCX endpoint each), several dtype/op pairs, multi-block calls with a
// sliding window, blocks sent in random interleavings across ranks and SIDs.
// Every RESULT must equal, bit for bit, the rank-order reference computed
// with ina_reduce, on every rank.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "agent_harness.h"
#include "ina_reduce.h"

using namespace ina_test;

namespace {

struct CallSpec {
    unsigned dtype;
    unsigned op;
    uint64_t total;      // elements of the call
    uint32_t block_elems; // elements per block (last one may be shorter)
};

// Random input of one rank. Floats mix magnitudes so that the summation
// order changes the rounding (the agent must not reduce in arrival order).
std::vector<uint8_t> make_input(const CallSpec &s, std::mt19937_64 &rng)
{
    size_t esz = ina_proto_dtype_size(s.dtype);
    std::vector<uint8_t> buf(s.total * esz, 0);
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    std::uniform_int_distribution<int> expo(-3, 9);
    for (uint64_t i = 0; i < s.total; ++i) {
        double v = s.op == INA_OP_PROD ? 1.0 + 0.5 * unit(rng) : unit(rng) * std::pow(10.0, expo(rng));
        uint8_t *p = buf.data() + i * esz;
        switch (s.dtype) {
        case INA_DT_FLOAT: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
        case INA_DT_DOUBLE: std::memcpy(p, &v, 8); break;
        case INA_DT_LONG_DOUBLE: { long double l = v; std::memcpy(p, &l, 10); break; }
        default: {
            uint64_t bits = rng();
            if (s.op >= INA_OP_LAND && s.op <= INA_OP_LXOR) {
                bits %= 3; // many zeros: logical ops see both truth values
            }
            std::memcpy(p, &bits, esz);
        }
        }
    }
    return buf;
}

// One call of spec on ranks 0..n-1 (endpoint eps[r]) in job jid. Inputs are
// drawn from data_seed; blocks go out in an order drawn from seed, respecting
// each rank's sliding window (S0). Returns the number of RESULTs checked.
uint64_t run_call(Client &c, const std::vector<size_t> &eps, uint32_t jid, uint32_t window,
                  uint64_t mid, const CallSpec &s, unsigned data_seed, unsigned seed)
{
    const uint32_t n = static_cast<uint32_t>(eps.size());
    const size_t esz = ina_proto_dtype_size(s.dtype);
    const uint32_t nblocks = static_cast<uint32_t>((s.total + s.block_elems - 1) / s.block_elems);
    std::mt19937_64 data_rng(data_seed);
    std::vector<std::vector<uint8_t>> in;
    for (uint32_t r = 0; r < n; ++r) {
        in.push_back(make_input(s, data_rng));
    }
    std::mt19937_64 rng(seed);
    std::vector<uint8_t> ref(in[0]);
    for (uint32_t r = 1; r < n; ++r) {
        CHECK_OR_FAIL(ina_reduce(s.op, s.dtype, ref.data(), in[r].data(), s.total) == 0,
                      "reference reduce failed");
    }
    std::vector<std::vector<bool>> sent(n, std::vector<bool>(nblocks, false));
    std::vector<std::vector<bool>> got(n, std::vector<bool>(nblocks, false));
    std::vector<uint32_t> low(n, 0); // lowest unsent SID per rank
    uint64_t received = 0;
    const uint64_t expected = static_cast<uint64_t>(n) * nblocks;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);

    while (received < expected) {
        CHECK_OR_FAIL(std::chrono::steady_clock::now() < deadline,
                      "call %s/%s n=%u timed out (%lu of %lu results)", ina_proto_dtype_name(s.dtype),
                      ina_proto_op_name(s.op), n, (unsigned long)received, (unsigned long)expected);
        // Every (rank, SID) its window allows now; send one of them at random.
        std::vector<std::pair<uint32_t, uint32_t>> ready;
        for (uint32_t r = 0; r < n; ++r) {
            for (uint32_t sid = low[r]; sid < nblocks && sid < low[r] + 2 * window; ++sid) {
                if (!sent[r][sid] && (sid < window || got[r][sid - window])) {
                    ready.emplace_back(r, sid);
                }
            }
        }
        if (!ready.empty()) {
            auto [r, sid] = ready[rng() % ready.size()];
            uint64_t first = static_cast<uint64_t>(sid) * s.block_elems;
            uint32_t cnt = static_cast<uint32_t>(std::min<uint64_t>(s.block_elems, s.total - first));
            ina_proto_hdr_t h = block_hdr(jid, r, mid, sid, window, s.op, s.dtype, cnt, s.total);
            c.send(eps[r], h, in[r].data() + first * esz, cnt * esz);
            sent[r][sid] = true;
            while (low[r] < nblocks && sent[r][low[r]]) {
                ++low[r];
            }
        } else {
            c.progress();
        }
        // Check what came back.
        auto &box = c.inbox();
        for (size_t i = 0; i < box.size();) {
            const Msg &m = box[i];
            if (m.hdr.jid != jid) {
                ++i;
                continue;
            }
            CHECK_OR_FAIL(m.hdr.type == INA_PROTO_RESULT, "got %s (%s) instead of RESULT",
                          ina_proto_type_name(m.hdr.type), ina_proto_status_name(m.hdr.status));
            uint32_t r = m.hdr.rank, sid = m.hdr.sid;
            CHECK_OR_FAIL(r < n && sid < nblocks && m.hdr.mid == mid, "RESULT for rank %u sid %u mid %lu",
                          r, sid, (unsigned long)m.hdr.mid);
            CHECK_OR_FAIL(sent[r][sid] && !got[r][sid], "RESULT sid %u rank %u unexpected", sid, r);
            uint64_t first = static_cast<uint64_t>(sid) * s.block_elems;
            uint32_t cnt = static_cast<uint32_t>(std::min<uint64_t>(s.block_elems, s.total - first));
            CHECK_OR_FAIL(m.hdr.count == cnt && m.hdr.seg == sid % window &&
                              m.hdr.op == s.op && m.hdr.dtype == s.dtype,
                          "RESULT header fields wrong");
            CHECK_OR_FAIL(same_bits(s.dtype, m.payload.data(), ref.data() + first * esz, cnt),
                          "%s/%s n=%u seed=%u: RESULT sid %u on rank %u differs from the "
                          "rank-order reference",
                          ina_proto_dtype_name(s.dtype), ina_proto_op_name(s.op), n, seed, sid, r);
            got[r][sid] = true;
            ++received;
            box.erase(box.begin() + static_cast<long>(i));
        }
    }
    return received;
}

} // namespace

int main()
{
    arm_watchdog(240);
    Daemon d;
    Client c;
    const uint32_t kRanks = 8;
    std::vector<size_t> all;
    for (uint32_t r = 0; r < kRanks; ++r) {
        all.push_back(c.connect(d.address()));
        uint32_t maxw = 0;
        uint64_t segb = 0;
        c.hello(all.back(), &maxw, &segb);
        CHECK_OR_FAIL(maxw == 64 && segb == 65536, "HELLO_ACK: max window %u seg bytes %lu", maxw,
                      (unsigned long)segb);
    }
    std::printf("checked: HELLO_ACK on %u endpoints (max window 64, Seg 65536 B)\n", kRanks);

    const CallSpec specs[] = {
        {INA_DT_FLOAT, INA_OP_SUM, 1000, 64},   {INA_DT_DOUBLE, INA_OP_SUM, 513, 32},
        {INA_DT_DOUBLE, INA_OP_PROD, 300, 50},  {INA_DT_FLOAT, INA_OP_MAX, 200, 40},
        {INA_DT_INT32, INA_OP_SUM, 777, 100},   {INA_DT_INT64, INA_OP_MIN, 129, 16},
        {INA_DT_UINT8, INA_OP_BXOR, 4000, 1024}, {INA_DT_INT16, INA_OP_LAND, 90, 30},
        {INA_DT_UINT64, INA_OP_PROD, 64, 8},    {INA_DT_LONG_DOUBLE, INA_OP_SUM, 70, 16},
        {INA_DT_DOUBLE, INA_OP_SUM, 20000, 8192}, // full 64 KiB Segs
    };
    uint64_t results = 0;
    unsigned calls = 0;
    for (uint32_t n : {2u, 3u, 5u, 8u}) {
        std::vector<size_t> eps(all.begin(), all.begin() + n);
        std::vector<uint32_t> nodes(n);
        for (uint32_t r = 0; r < n; ++r) {
            nodes[r] = 100 + r / 2; // two ranks per node
        }
        uint32_t window = 0;
        uint32_t jid = c.create_job(eps[0], nodes, 4, &window);
        CHECK_OR_FAIL(window == 4, "granted window %u, asked 4", window);
        for (uint32_t r = 0; r < n; ++r) {
            CHECK_OR_FAIL(c.join(eps[r], jid, r) == INA_PROTO_OK, "join rank %u failed", r);
        }
        uint64_t mid = 0;
        for (const CallSpec &s : specs) {
            unsigned seed = 1000 * n + static_cast<unsigned>(mid);
            results += run_call(c, eps, jid, window, mid, s, seed, seed);
            ++mid;
            ++calls;
        }
        for (uint32_t r = 0; r < n; ++r) {
            c.leave(eps[r], jid, r);
            c.fence(eps[r]);
        }
    }
    std::printf("checked: %u calls (11 dtype/op/size specs x 2,3,5,8 ranks, 2 ranks per node, "
                "window 4, multi-block) = %lu RESULTs bit-identical to the rank-order reference on "
                "every rank\n", calls, (unsigned long)results);

    // Same float data, different interleavings: identical bits every time.
    {
        const uint32_t n = 6;
        std::vector<size_t> eps(all.begin(), all.begin() + n);
        std::vector<uint32_t> nodes = {1, 1, 1, 2, 2, 3};
        uint32_t window = 0;
        uint32_t jid = c.create_job(eps[0], nodes, 3, &window);
        for (uint32_t r = 0; r < n; ++r) {
            CHECK_OR_FAIL(c.join(eps[r], jid, r) == INA_PROTO_OK, "join rank %u failed", r);
        }
        // Same inputs (data seed 42) every time; only the interleaving changes.
        const CallSpec s{INA_DT_FLOAT, INA_OP_SUM, 2048, 128};
        for (unsigned seed = 1; seed <= 6; ++seed) {
            results += run_call(c, eps, jid, window, seed - 1, s, 42, seed);
        }
        for (uint32_t r = 0; r < n; ++r) {
            c.leave(eps[r], jid, r);
            c.fence(eps[r]);
        }
        std::printf("checked: float sum, 6 ranks on 3 nodes, same inputs in 6 random "
                    "interleavings across ranks and SIDs, every RESULT equal to the rank-order reference\n");
    }

    int rc = d.terminate();
    CHECK_OR_FAIL(rc == 0, "ina-switchd exit status %d after SIGTERM", rc);
    long out = d.counter("results_out");
    CHECK_OR_FAIL(out == static_cast<long>(results), "agent counted %ld results, client got %lu",
                  out, (unsigned long)results);
    CHECK_OR_FAIL(d.counter("jobs_live") == 0, "jobs left at exit: %ld", d.counter("jobs_live"));
    std::printf("checked: SIGTERM -> exit 0, agent results_out=%ld matches, jobs_live=0\n", out);
    std::printf("PASS agent_allreduce\n");
    return 0;
}

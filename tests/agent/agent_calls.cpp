// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#include "agent_calls.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

namespace ina_test {

namespace {

Range intersect(Range a, Range b)
{
    Range r{std::max(a.lo, b.lo), std::min(a.hi, b.hi)};
    return r.empty() ? Range{} : r;
}

CallPlan base_plan(unsigned coll, unsigned op, unsigned dtype, uint32_t n, uint64_t total,
                   uint32_t block_elems)
{
    CallPlan p;
    p.coll = coll;
    p.op = op;
    p.dtype = dtype;
    p.n = n;
    p.total = total;
    p.block_elems = block_elems;
    const size_t bytes = total * ina_proto_dtype_size(dtype);
    p.input.assign(n, std::vector<uint8_t>(bytes, 0));
    p.contrib.assign(n, Range{});
    p.wants.assign(n, Range{});
    p.expect.assign(bytes, 0);
    return p;
}

CallPlan reduction_plan(unsigned coll, unsigned op, unsigned dtype, uint32_t n, uint64_t total,
                        uint32_t block_elems, std::mt19937_64 &rng)
{
    CallPlan p = base_plan(coll, op, dtype, n, total, block_elems);
    for (uint32_t r = 0; r < n; ++r) {
        fill_random(op, dtype, p.input[r].data(), total, rng);
        p.contrib[r] = {0, total};
    }
    return p;
}

} // namespace

namespace {

// A floating value of mixed magnitude (near 1 for PROD, so products stay finite).
double draw(unsigned op, std::mt19937_64 &rng)
{
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    std::uniform_int_distribution<int> expo(-3, 9);
    return op == INA_OP_PROD ? 1.0 + 0.5 * unit(rng) : unit(rng) * std::pow(10.0, expo(rng));
}

template <typename T> void put(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }

// x87 long double: its 10 value bytes; the padding stays 0.
void put_ld(uint8_t *p, long double v) { std::memcpy(p, &v, 10); }

} // namespace

void fill_random(unsigned op, unsigned dtype, uint8_t *dst, uint64_t count, std::mt19937_64 &rng)
{
    const size_t esz = ina_proto_dtype_size(dtype);
    std::memset(dst, 0, count * esz);
    for (uint64_t i = 0; i < count; ++i) {
        uint8_t *p = dst + i * esz;
        // MINLOC/MAXLOC pairs: few distinct values so that ties (smallest
        // index wins) happen often; MPI's struct layouts (value, then int).
        const int idx = static_cast<int>(rng() % 64);
        const int small = static_cast<int>(rng() % 5) - 2;
        switch (dtype) {
        case INA_DT_FLOAT: put(p, static_cast<float>(draw(op, rng))); break;
        case INA_DT_DOUBLE: put(p, draw(op, rng)); break;
        case INA_DT_LONG_DOUBLE: put_ld(p, draw(op, rng)); break;
        case INA_DT_BOOL: p[0] = static_cast<uint8_t>(rng() % 2); break;
        case INA_DT_FLOAT_COMPLEX:
            put(p, static_cast<float>(draw(op, rng)));
            put(p + 4, static_cast<float>(draw(op, rng)));
            break;
        case INA_DT_DOUBLE_COMPLEX:
            put(p, draw(op, rng));
            put(p + 8, draw(op, rng));
            break;
        case INA_DT_LONG_DOUBLE_COMPLEX:
            put_ld(p, draw(op, rng));
            put_ld(p + esz / 2, draw(op, rng));
            break;
        case INA_DT_FLOAT_INT: put(p, static_cast<float>(small) * 0.5f); put(p + 4, idx); break;
        case INA_DT_DOUBLE_INT: put(p, small * 0.25); put(p + 8, idx); break;
        case INA_DT_LONG_INT: put(p, static_cast<long>(small)); put(p + 8, idx); break;
        case INA_DT_2INT: put(p, small); put(p + 4, idx); break;
        case INA_DT_SHORT_INT: put(p, static_cast<short>(small)); put(p + 4, idx); break;
        case INA_DT_LONG_DOUBLE_INT: put_ld(p, small * 0.125L); put(p + 16, idx); break;
        default: {
            uint64_t bits = rng();
            if (op >= INA_OP_LAND && op <= INA_OP_LXOR) {
                bits %= 3; // many zeros: logical ops see both truth values
            }
            std::memcpy(p, &bits, esz);
        }
        }
    }
}

void reduce_reference(CallPlan &plan,
                      const std::function<void(uint8_t *acc, const uint8_t *in, uint64_t n)> &fold)
{
    plan.expect = plan.input[0];
    for (uint32_t r = 1; r < plan.n; ++r) {
        fold(plan.expect.data(), plan.input[r].data(), plan.total);
    }
}

CallPlan plan_allreduce(unsigned op, unsigned dtype, uint32_t n, uint64_t count,
                        uint32_t block_elems, std::mt19937_64 &rng)
{
    CallPlan p = reduction_plan(INA_COLL_ALLREDUCE, op, dtype, n, count, block_elems, rng);
    p.wants.assign(n, Range{0, count});
    return p;
}

CallPlan plan_reduce(unsigned op, unsigned dtype, uint32_t n, uint64_t count, uint32_t root,
                     uint32_t block_elems, std::mt19937_64 &rng)
{
    CallPlan p = reduction_plan(INA_COLL_REDUCE, op, dtype, n, count, block_elems, rng);
    p.wants[root] = {0, count};
    return p;
}

CallPlan plan_reduce_scatter(unsigned op, unsigned dtype, const std::vector<uint64_t> &parts,
                             uint32_t block_elems, std::mt19937_64 &rng)
{
    uint64_t total = 0;
    for (uint64_t part : parts) {
        total += part;
    }
    const uint32_t n = static_cast<uint32_t>(parts.size());
    CallPlan p = reduction_plan(INA_COLL_REDUCE_SCATTER, op, dtype, n, total, block_elems, rng);
    uint64_t at = 0;
    for (uint32_t r = 0; r < n; ++r) {
        p.wants[r] = {at, at + parts[r]};
        at += parts[r];
    }
    return p;
}

CallPlan plan_bcast(uint32_t n, uint64_t bytes, uint32_t root, uint32_t block_bytes,
                    std::mt19937_64 &rng)
{
    CallPlan p = base_plan(INA_COLL_BCAST, INA_OP_REPLACE, INA_DT_UINT8, n, bytes, block_bytes);
    for (uint32_t r = 0; r < n; ++r) {
        // Non-roots hold garbage in their buffers; none of it may leak out.
        fill_random(INA_OP_REPLACE, INA_DT_UINT8, p.input[r].data(), bytes, rng);
        if (r != root) {
            p.wants[r] = {0, bytes};
        }
    }
    p.contrib[root] = {0, bytes};
    p.expect = p.input[root];
    return p;
}

CallPlan plan_allgather(uint32_t n, uint64_t chunk, uint32_t block_bytes, std::mt19937_64 &rng)
{
    const uint64_t total = n * chunk;
    CallPlan p = base_plan(INA_COLL_ALLGATHER, INA_OP_REPLACE, INA_DT_UINT8, n, total, block_bytes);
    for (uint32_t r = 0; r < n; ++r) {
        fill_random(INA_OP_REPLACE, INA_DT_UINT8, p.input[r].data(), total, rng);
        p.contrib[r] = {r * chunk, (r + 1) * chunk};
        p.wants[r] = {0, total};
        std::memcpy(p.expect.data() + r * chunk, p.input[r].data() + r * chunk, chunk);
    }
    return p;
}

CallPlan plan_barrier(uint32_t n)
{
    CallPlan p = base_plan(INA_COLL_BARRIER, INA_OP_REPLACE, INA_DT_UINT8, n, 0, 1);
    // The empty result is "wanted": everybody gets the plain RESULT of the
    // one empty block (flags 0, count 0).
    p.wants.assign(n, Range{0, 1});
    return p;
}

RunStats run_calls(Client &c, const std::vector<size_t> &eps, uint32_t jid, uint32_t window,
                   uint64_t first_mid, const std::vector<CallPlan> &calls, unsigned seed)
{
    const uint32_t n = static_cast<uint32_t>(eps.size());
    const size_t ncalls = calls.size();
    struct State {
        std::vector<std::vector<bool>> sent, got; // [rank][sid]
        std::vector<uint32_t> low;                // per rank: lowest unsent SID
        std::vector<bool> posted, granted;        // per rank
    };
    std::vector<State> st(ncalls);
    uint64_t expected = 0;
    for (size_t i = 0; i < ncalls; ++i) {
        const CallPlan &p = calls[i];
        CHECK_OR_FAIL(p.n == n, "plan for %u ranks run on %u", p.n, n);
        st[i].sent.assign(n, std::vector<bool>(p.nblocks(), false));
        st[i].got = st[i].sent;
        st[i].low.assign(n, 0);
        st[i].posted.assign(n, false);
        st[i].granted.assign(n, false);
        expected += static_cast<uint64_t>(n) * p.nblocks();
    }
    std::mt19937_64 rng(seed);
    RunStats stats;
    uint64_t received = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);

    struct Ready {
        size_t call;
        uint32_t rank, sid;
    };
    std::vector<Ready> ready;
    while (received < expected) {
        CHECK_OR_FAIL(std::chrono::steady_clock::now() < deadline,
                      "%zu calls from mid %lu on %u ranks timed out (%lu of %lu results)", ncalls,
                      (unsigned long)first_mid, n, (unsigned long)received,
                      (unsigned long)expected);
        // Every (call, rank, SID) that posting order and the window allow now.
        ready.clear();
        for (size_t i = 0; i < ncalls; ++i) {
            const uint32_t nb = calls[i].nblocks();
            for (uint32_t r = 0; r < n; ++r) {
                if (i > 0 && !st[i - 1].posted[r]) {
                    continue;
                }
                const uint32_t low = st[i].low[r];
                for (uint32_t sid = low; sid < nb && sid < low + 2 * window; ++sid) {
                    if (!st[i].sent[r][sid] && (sid < window || st[i].got[r][sid - window])) {
                        ready.push_back({i, r, sid});
                    }
                }
            }
        }
        if (!ready.empty()) {
            const Ready pick = ready[rng() % ready.size()];
            const CallPlan &p = calls[pick.call];
            const size_t esz = ina_proto_dtype_size(p.dtype);
            const Range blk = p.block(pick.sid);
            const Range mine = intersect(p.contrib[pick.rank], blk);
            const bool want = p.coll == INA_COLL_BARRIER
                                  ? !p.wants[pick.rank].empty()
                                  : !intersect(p.wants[pick.rank], blk).empty();
            ina_proto_hdr_t h = block_hdr(
                jid, pick.rank, first_mid + pick.call, pick.sid, window, p.coll, p.op, p.dtype,
                static_cast<uint32_t>(mine.empty() ? 0 : mine.lo - blk.lo),
                static_cast<uint32_t>(mine.hi - mine.lo), static_cast<uint32_t>(blk.hi - blk.lo),
                p.total, want);
            c.send(eps[pick.rank], h, p.input[pick.rank].data() + mine.lo * esz,
                   (mine.hi - mine.lo) * esz);
            State &s = st[pick.call];
            s.sent[pick.rank][pick.sid] = true;
            s.posted[pick.rank] = true;
            while (s.low[pick.rank] < p.nblocks() && s.sent[pick.rank][s.low[pick.rank]]) {
                ++s.low[pick.rank];
            }
        } else {
            c.progress();
        }
        // Check what came back.
        auto &box = c.inbox();
        for (size_t k = 0; k < box.size();) {
            const Msg &m = box[k];
            if (m.hdr.jid != jid) {
                ++k;
                continue;
            }
            const uint32_t r = m.hdr.rank;
            CHECK_OR_FAIL(m.hdr.mid >= first_mid && m.hdr.mid < first_mid + ncalls && r < n,
                          "%s for mid %lu rank %u: not a running call",
                          ina_proto_type_name(m.hdr.type), (unsigned long)m.hdr.mid, r);
            const size_t i = m.hdr.mid - first_mid;
            const CallPlan &p = calls[i];
            State &s = st[i];
            if (m.hdr.type == INA_PROTO_GRANT) {
                CHECK_OR_FAIL(!s.granted[r], "mid %lu rank %u: second GRANT",
                              (unsigned long)m.hdr.mid, r);
                s.granted[r] = true;
                ++stats.grants;
                box.erase(box.begin() + static_cast<long>(k));
                continue;
            }
            CHECK_OR_FAIL(m.hdr.type == INA_PROTO_RESULT,
                          "mid %lu (%s) rank %u got %s (%s) instead of RESULT",
                          (unsigned long)m.hdr.mid, ina_proto_coll_name(p.coll), r,
                          ina_proto_type_name(m.hdr.type), ina_proto_status_name(m.hdr.status));
            const uint32_t sid = m.hdr.sid;
            if (!s.granted[r]) {
                // The agent sent no GRANT where this RESULT went out with it:
                // the RESULT is the GRANT (a GRANT after it is a second one).
                s.granted[r] = true;
                ++stats.implied_grants;
            }
            CHECK_OR_FAIL(sid < p.nblocks() && s.sent[r][sid] && !s.got[r][sid],
                          "mid %lu rank %u: RESULT of sid %u unexpected", (unsigned long)m.hdr.mid,
                          r, sid);
            const Range blk = p.block(sid);
            const uint32_t block_elems = static_cast<uint32_t>(blk.hi - blk.lo);
            CHECK_OR_FAIL(m.hdr.coll == p.coll && m.hdr.op == p.op && m.hdr.dtype == p.dtype &&
                              m.hdr.seg == sid % window && m.hdr.block_elems == block_elems &&
                              m.hdr.arg == p.total,
                          "mid %lu rank %u sid %u: RESULT header fields wrong",
                          (unsigned long)m.hdr.mid, r, sid);
            const bool want = p.coll == INA_COLL_BARRIER ? !p.wants[r].empty()
                                                         : !intersect(p.wants[r], blk).empty();
            const size_t esz = ina_proto_dtype_size(p.dtype);
            if (want) {
                CHECK_OR_FAIL(m.hdr.flags == 0 && m.hdr.count == block_elems &&
                                  m.payload.size() == block_elems * esz,
                              "mid %lu (%s) rank %u sid %u: RESULT without the block",
                              (unsigned long)m.hdr.mid, ina_proto_coll_name(p.coll), r, sid);
                CHECK_OR_FAIL(same_bits(p.dtype, m.payload.data(), p.expect.data() + blk.lo * esz,
                                        block_elems),
                              "mid %lu (%s %s/%s, %u ranks, seed %u) rank %u sid %u: RESULT "
                              "differs from the reference",
                              (unsigned long)m.hdr.mid, ina_proto_coll_name(p.coll),
                              ina_proto_dtype_name(p.dtype), ina_proto_op_name(p.op), n, seed, r,
                              sid);
                ++stats.results;
                stats.result_bytes += m.payload.size();
            } else {
                CHECK_OR_FAIL(m.hdr.flags == INA_PROTO_F_ACK_ONLY && m.hdr.count == 0 &&
                                  m.payload.empty(),
                              "mid %lu (%s) rank %u sid %u: expected an ACK_ONLY RESULT, got "
                              "flags %u count %u",
                              (unsigned long)m.hdr.mid, ina_proto_coll_name(p.coll), r, sid,
                              m.hdr.flags, m.hdr.count);
                ++stats.acks;
            }
            s.got[r][sid] = true;
            ++received;
            box.erase(box.begin() + static_cast<long>(k));
        }
    }
    for (size_t i = 0; i < ncalls; ++i) {
        for (uint32_t r = 0; r < n; ++r) {
            CHECK_OR_FAIL(st[i].granted[r], "mid %lu rank %u: completed without a GRANT",
                          (unsigned long)(first_mid + i), r);
        }
    }
    return stats;
}

} // namespace ina_test

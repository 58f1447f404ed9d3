// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Agent test: the agent rejects bad input and keeps serving everybody else.
// - malformed messages (bad magic, truncated header, wrong version, bad dtype,
//   payload length mismatch, seg != sid % window, unsupported op, wrong
//   direction, unknown job, and the v2 fields: bad coll, REPLACE in a
//   reduction, a reducing op in a BCAST, partial or CREDIT reduction blocks,
//   piece past the block, unknown or ACK_ONLY flags on a BLOCK, reserved bits,
//   non-empty BARRIER, block_elems beyond the call or the agent's Seg) each
//   answered with ERROR that names the status and the offending type and
//   echoes jid/mid/sid;
// - MISMATCH to the offender only, the Seg staying usable for the others:
//   coll/op/dtype/block_elems/size differing between members, a second BCAST
//   root, a partial BCAST root block, a BCAST nobody brought data for,
//   overlapping ALLGATHER pieces, an ALLGATHER block left with a gap, a
//   BARRIER block against an ALLREDUCE block of the same MID;
// - a foreign block claiming another job's rank (NOT_MEMBER) does not disturb
//   the victim's call, whose RESULT stays exact;
// - a duplicate contribution is dropped;
// - pool exhaustion (--segs 4, two jobs of window 4): DENY to every member of
//   the denied call, the granted call completes, and the pool is whole after.
#include <algorithm>
#include <cstring>
#include <vector>

#include "agent_harness.h"

using namespace ina_test;

namespace {

// ERRORs the test provoked, by status, to compare with the agent's counters.
long g_expected[INA_PROTO_STATUS_MAX + 1];

constexpr uint32_t kCount = 16; // int32 elements per block

std::vector<int32_t> block_data(uint32_t rank, uint32_t sid)
{
    std::vector<int32_t> v(kCount);
    for (uint32_t i = 0; i < kCount; ++i) {
        v[i] = static_cast<int32_t>((rank + 1) * 1000003u + sid * 7919u + i * 31u);
    }
    return v;
}

std::vector<int32_t> reference(uint32_t n, uint32_t sid)
{
    std::vector<int32_t> ref(kCount, 0);
    for (uint32_t r = 0; r < n; ++r) {
        auto v = block_data(r, sid);
        for (uint32_t i = 0; i < kCount; ++i) {
            ref[i] = static_cast<int32_t>(static_cast<uint32_t>(ref[i]) + static_cast<uint32_t>(v[i]));
        }
    }
    return ref;
}

void send_block(Client &c, size_t ep, uint32_t jid, uint32_t rank, uint64_t mid, uint32_t sid,
                uint32_t window, uint64_t total)
{
    auto v = block_data(rank, sid);
    c.send(ep, allreduce_hdr(jid, rank, mid, sid, window, INA_OP_SUM, INA_DT_INT32, kCount, total),
           v.data(), v.size() * sizeof(int32_t));
}

// Wait for the RESULT of (jid, mid, sid) on every rank in ranks and check it.
void expect_results(Client &c, uint32_t jid, uint64_t mid, uint32_t sid, uint32_t n,
                    const std::vector<uint32_t> &ranks)
{
    auto ref = reference(n, sid);
    for (uint32_t r : ranks) {
        Msg m = c.wait_for(
            [&](const Msg &m) {
                return m.hdr.jid == jid && m.hdr.rank == r &&
                       (m.hdr.type != INA_PROTO_RESULT || (m.hdr.mid == mid && m.hdr.sid == sid));
            },
            10000, "RESULT");
        CHECK_OR_FAIL(m.hdr.type == INA_PROTO_RESULT, "jid %u rank %u got %s (%s) instead of RESULT",
                      jid, r, ina_proto_type_name(m.hdr.type), ina_proto_status_name(m.hdr.status));
        CHECK_OR_FAIL(m.payload.size() == kCount * 4 &&
                          std::memcmp(m.payload.data(), ref.data(), kCount * 4) == 0,
                      "jid %u mid %lu sid %u: RESULT on rank %u differs from the reference", jid,
                      (unsigned long)mid, sid, r);
    }
}

// Send one message and require an ERROR with this status for it.
void expect_error(Client &c, size_t ep, const void *hdr, size_t hdr_len, const void *data,
                  size_t len, ina_proto_status_t status, const char *what)
{
    ina_proto_hdr_t sent{};
    std::memcpy(&sent, hdr, std::min(hdr_len, sizeof(sent)));
    c.send(ep, hdr, hdr_len, data, len);
    Msg m = c.wait_for([](const Msg &m) { return m.hdr.type == INA_PROTO_ERROR; }, 10000, what);
    CHECK_OR_FAIL(m.hdr.status == status, "%s: ERROR status %s, expected %s", what,
                  ina_proto_status_name(m.hdr.status), ina_proto_status_name(status));
    CHECK_OR_FAIL(m.hdr.op == sent.type && m.hdr.jid == sent.jid && m.hdr.mid == sent.mid &&
                      m.hdr.sid == sent.sid,
                  "%s: ERROR does not echo type/jid/mid/sid", what);
    ++g_expected[status];
    std::printf("checked: %-34s -> ERROR %s\n", what, ina_proto_status_name(status));
}

void malformed_suite(Client &c, size_t ep, uint32_t jid, uint32_t rank)
{
    const uint32_t w = 4;
    auto v = block_data(0, 0);
    const size_t vb = v.size() * sizeof(int32_t);
    ina_proto_hdr_t h = allreduce_hdr(jid, 0, 0, 0, w, INA_OP_SUM, INA_DT_INT32, kCount, kCount);

    ina_proto_hdr_t bad = h;
    bad.magic ^= 0xffu;
    expect_error(c, ep, &bad, sizeof(bad), v.data(), vb, INA_PROTO_ERR_MALFORMED, "bad magic");
    expect_error(c, ep, &h, 20, v.data(), vb, INA_PROTO_ERR_MALFORMED, "truncated header (20 B)");
    expect_error(c, ep, &h, 48, v.data(), vb, INA_PROTO_ERR_MALFORMED, "v1-sized header (48 B)");
    bad = h;
    bad.version = 1;
    expect_error(c, ep, &bad, sizeof(bad), v.data(), vb, INA_PROTO_ERR_VERSION, "version 1");
    bad = h;
    bad.dtype = 200;
    expect_error(c, ep, &bad, sizeof(bad), v.data(), vb, INA_PROTO_ERR_MALFORMED, "bad dtype");
    expect_error(c, ep, &h, sizeof(h), v.data(), vb - 4, INA_PROTO_ERR_MALFORMED,
                 "payload length mismatch");
    bad = allreduce_hdr(jid, 0, 0, 5, w, INA_OP_SUM, INA_DT_INT32, kCount, kCount);
    bad.seg = 2;
    expect_error(c, ep, &bad, sizeof(bad), v.data(), vb, INA_PROTO_ERR_MALFORMED,
                 "seg != sid % window");
    bad = allreduce_hdr(jid, 0, 0, 0, w, INA_OP_BAND, INA_DT_FLOAT, kCount, kCount);
    expect_error(c, ep, &bad, sizeof(bad), v.data(), vb, INA_PROTO_ERR_UNSUPPORTED,
                 "bitwise op on float");
    bad = h;
    bad.type = INA_PROTO_RESULT;
    expect_error(c, ep, &bad, sizeof(bad), v.data(), vb, INA_PROTO_ERR_MALFORMED,
                 "agent-to-client type sent to agent");
    ina_proto_hdr_t grant;
    ina_proto_init(&grant, INA_PROTO_GRANT);
    grant.jid = jid;
    expect_error(c, ep, &grant, sizeof(grant), nullptr, 0, INA_PROTO_ERR_MALFORMED,
                 "GRANT sent to agent");
    bad = allreduce_hdr(jid + 1000, 0, 0, 0, w, INA_OP_SUM, INA_DT_INT32, kCount, kCount);
    expect_error(c, ep, &bad, sizeof(bad), v.data(), vb, INA_PROTO_ERR_NO_JOB, "unknown job");
    ina_proto_hdr_t hello;
    ina_proto_init(&hello, INA_PROTO_HELLO);
    expect_error(c, ep, &hello, sizeof(hello), v.data(), vb, INA_PROTO_ERR_MALFORMED,
                 "HELLO with a payload");
    hello.block_elems = 4;
    expect_error(c, ep, &hello, sizeof(hello), nullptr, 0, INA_PROTO_ERR_MALFORMED,
                 "HELLO with block fields set");
    hello.block_elems = 0;
    hello.count = ina::ucx::kStreamSegBytes / 2; // a peer that could not take our fragments
    expect_error(c, ep, &hello, sizeof(hello), nullptr, 0, INA_PROTO_ERR_MISMATCH,
                 "HELLO with another stream segment");

    // The v2 block fields.
    bad = h;
    bad.coll = INA_COLL_COUNT;
    expect_error(c, ep, &bad, sizeof(bad), v.data(), vb, INA_PROTO_ERR_MALFORMED, "bad coll");
    bad = block_hdr(jid, 0, 0, 0, w, INA_COLL_ALLREDUCE, INA_OP_REPLACE, INA_DT_UINT8, 0, 64, 64,
                    64, true);
    expect_error(c, ep, &bad, sizeof(bad), v.data(), vb, INA_PROTO_ERR_MALFORMED,
                 "REPLACE in an ALLREDUCE");
    bad = block_hdr(jid, 0, 0, 0, w, INA_COLL_BCAST, INA_OP_SUM, INA_DT_UINT8, 0, 64, 64, 64,
                    true);
    expect_error(c, ep, &bad, sizeof(bad), v.data(), vb, INA_PROTO_ERR_MALFORMED,
                 "SUM in a BCAST");
    bad = block_hdr(jid, 0, 0, 0, w, INA_COLL_REDUCE, INA_OP_SUM, INA_DT_INT32, 0, kCount / 2,
                    kCount, kCount, true);
    expect_error(c, ep, &bad, sizeof(bad), v.data(), vb / 2, INA_PROTO_ERR_MALFORMED,
                 "reduction block with half its data");
    bad = block_hdr(jid, 0, 0, 0, w, INA_COLL_ALLREDUCE, INA_OP_SUM, INA_DT_INT32, 0, 0, kCount,
                    kCount, true);
    expect_error(c, ep, &bad, sizeof(bad), nullptr, 0, INA_PROTO_ERR_MALFORMED,
                 "reduction CREDIT");
    bad = block_hdr(jid, 0, 0, 0, w, INA_COLL_ALLGATHER, INA_OP_REPLACE, INA_DT_UINT8, 40, 32, 64,
                    64, true);
    expect_error(c, ep, &bad, sizeof(bad), v.data(), 32, INA_PROTO_ERR_MALFORMED,
                 "piece past the end of its block");
    bad = h;
    bad.flags = 0x4;
    expect_error(c, ep, &bad, sizeof(bad), v.data(), vb, INA_PROTO_ERR_MALFORMED,
                 "unknown flag bit");
    bad = h;
    bad.flags = INA_PROTO_F_ACK_ONLY;
    expect_error(c, ep, &bad, sizeof(bad), v.data(), vb, INA_PROTO_ERR_MALFORMED,
                 "ACK_ONLY flag on a BLOCK");
    ina_proto_init(&bad, INA_PROTO_JOB_LEAVE);
    bad.jid = jid;
    bad.done = 1; // certification is a BLOCK's and a RESULT's word only
    expect_error(c, ep, &bad, sizeof(bad), nullptr, 0, INA_PROTO_ERR_MALFORMED,
                 "done on a JOB_LEAVE");
    bad = block_hdr(jid, 0, 0, 0, w, INA_COLL_BARRIER, INA_OP_REPLACE, INA_DT_UINT8, 0, 0, 1, 0,
                    true);
    expect_error(c, ep, &bad, sizeof(bad), nullptr, 0, INA_PROTO_ERR_MALFORMED,
                 "BARRIER block with block_elems 1");
    bad = allreduce_hdr(jid, 0, 0, 0, w, INA_OP_SUM, INA_DT_INT32, kCount, kCount - 1);
    expect_error(c, ep, &bad, sizeof(bad), v.data(), vb, INA_PROTO_ERR_MALFORMED,
                 "block_elems beyond the call");
    // Valid for the protocol (<= 1 MiB), but larger than this agent's 64 KiB
    // Seg: only a member gets this far.
    bad = block_hdr(jid, rank, 0, 0, w, INA_COLL_BCAST, INA_OP_REPLACE, INA_DT_UINT8, 0, 0, 65537,
                    1 << 20, true);
    expect_error(c, ep, &bad, sizeof(bad), nullptr, 0, INA_PROTO_ERR_MALFORMED,
                 "block larger than the agent's Seg");
}

// A block that breaks a per-Seg rule: MISMATCH to its sender, nobody else hears.
void expect_mismatch(Client &c, size_t ep, const ina_proto_hdr_t &h, const void *data,
                     const char *what)
{
    const size_t len = static_cast<size_t>(h.count) * ina_proto_dtype_size(h.dtype);
    expect_error(c, ep, &h, sizeof(h), data, len, INA_PROTO_ERR_MISMATCH, what);
}

// Wait for every rank's reply to (jid, mid, sid): the payload `ref` for the
// ranks in `want`, an ACK_ONLY RESULT for the others.
void expect_block(Client &c, uint32_t jid, uint64_t mid, uint32_t sid, uint32_t n,
                  const std::vector<uint32_t> &want, const std::vector<uint8_t> &ref)
{
    for (uint32_t r = 0; r < n; ++r) {
        Msg m = c.wait_for(
            [&](const Msg &m) { return m.hdr.jid == jid && m.hdr.rank == r; }, 10000, "RESULT");
        CHECK_OR_FAIL(m.hdr.type == INA_PROTO_RESULT && m.hdr.mid == mid && m.hdr.sid == sid,
                      "jid %u rank %u: got %s (%s) mid %lu sid %u instead of RESULT mid %lu sid %u",
                      jid, r, ina_proto_type_name(m.hdr.type), ina_proto_status_name(m.hdr.status),
                      (unsigned long)m.hdr.mid, m.hdr.sid, (unsigned long)mid, sid);
        if (std::find(want.begin(), want.end(), r) != want.end()) {
            CHECK_OR_FAIL(m.hdr.flags == 0 && m.payload == ref,
                          "jid %u mid %lu sid %u: RESULT on rank %u differs from the reference",
                          jid, (unsigned long)mid, sid, r);
        } else {
            CHECK_OR_FAIL(m.hdr.flags == INA_PROTO_F_ACK_ONLY && m.payload.empty(),
                          "jid %u mid %lu sid %u: rank %u should get an ACK only", jid,
                          (unsigned long)mid, sid, r);
        }
    }
}

// The per-Seg consistency rules of v2 on a live 4-rank job: every refused
// block leaves the Seg as it was, and the same member's right block then
// completes it exactly.
void mismatch_suite(Client &c, const std::vector<size_t> &eps, uint32_t jid, uint32_t w)
{
    const std::vector<uint32_t> all = {0, 1, 2, 3};
    uint64_t mid = 0;
    {   // ALLREDUCE int32 sum, one block of kCount.
        const uint64_t total = kCount;
        send_block(c, eps[0], jid, 0, mid, 0, w, total);
        expect_grants(c, jid, mid, all); // ranks 1..3 have sent nothing yet
        auto v = block_data(1, 0);
        ina_proto_hdr_t h = allreduce_hdr(jid, 1, mid, 0, w, INA_OP_SUM, INA_DT_INT32, kCount, total);
        ina_proto_hdr_t bad = h;
        bad.coll = INA_COLL_REDUCE;
        expect_mismatch(c, eps[1], bad, v.data(), "coll differs from the Seg's");
        bad = h;
        bad.dtype = INA_DT_UINT32;
        expect_mismatch(c, eps[1], bad, v.data(), "dtype differs from the Seg's");
        bad = h;
        bad.op = INA_OP_MAX;
        expect_mismatch(c, eps[1], bad, v.data(), "op differs from the Seg's");
        bad = h;
        bad.count = bad.block_elems = kCount / 2;
        bad.arg = total;
        expect_mismatch(c, eps[1], bad, v.data(), "block_elems differs from the Seg's");
        bad = h;
        bad.arg = total * 2;
        expect_mismatch(c, eps[1], bad, v.data(), "call size differs between members");
        {   // BARRIER claimed for a MID the others run as ALLREDUCE.
            ina_proto_hdr_t b = block_hdr(jid, 2, mid, 0, w, INA_COLL_BARRIER, INA_OP_REPLACE,
                                          INA_DT_UINT8, 0, 0, 0, 0, true);
            expect_mismatch(c, eps[2], b, nullptr, "BARRIER against an ALLREDUCE");
        }
        for (uint32_t r = 1; r < 4; ++r) {
            send_block(c, eps[r], jid, r, mid, 0, w, total);
        }
        auto ref = reference(4, 0);
        std::vector<uint8_t> refb(kCount * 4);
        std::memcpy(refb.data(), ref.data(), refb.size());
        expect_block(c, jid, mid, 0, 4, all, refb);
        std::printf("checked: ALLREDUCE exact on all ranks after 6 mismatched blocks\n");
        ++mid;
    }
    const uint32_t sc = 96; // bytes of the one block of the placing calls below
    std::vector<std::vector<uint8_t>> bytes(4, std::vector<uint8_t>(sc));
    for (uint32_t r = 0; r < 4; ++r) {
        for (uint32_t i = 0; i < sc; ++i) {
            bytes[r][i] = static_cast<uint8_t>(r * 59 + i * 13 + 1);
        }
    }
    auto bc = [&](uint32_t r, uint64_t m, uint32_t off, uint32_t cnt, bool want) {
        return block_hdr(jid, r, m, 0, w, INA_COLL_BCAST, INA_OP_REPLACE, INA_DT_UINT8, off, cnt,
                         sc, sc, want);
    };
    {   // BCAST from root 2: a second root and a partial root are refused.
        c.send(eps[2], bc(2, mid, 0, sc, false), bytes[2].data(), sc);
        expect_grants(c, jid, mid, all);
        expect_mismatch(c, eps[1], bc(1, mid, 0, sc, true), bytes[1].data(),
                        "second BCAST root");
        expect_mismatch(c, eps[1], bc(1, mid, 0, sc / 2, true), bytes[1].data(),
                        "BCAST data over half the block");
        for (uint32_t r : {0u, 1u, 3u}) {
            c.send(eps[r], bc(r, mid, 0, 0, true));
        }
        expect_block(c, jid, mid, 0, 4, {0, 1, 3}, bytes[2]);
        std::printf("checked: BCAST root 2 -> its bytes on 0,1,3, ACK only to the root, after a "
                    "second root and a partial root were refused\n");
        ++mid;
    }
    {   // BCAST where the root's data has not come when the last CREDIT does.
        for (uint32_t r : {0u, 1u, 2u}) {
            c.send(eps[r], bc(r, mid, 0, 0, true));
            if (r == 0) {
                expect_grants(c, jid, mid, all);
            }
        }
        expect_mismatch(c, eps[3], bc(3, mid, 0, 0, true), nullptr,
                        "BCAST with no root: last CREDIT");
        c.send(eps[3], bc(3, mid, 0, sc, true), bytes[3].data(), sc);
        expect_block(c, jid, mid, 0, 4, all, bytes[3]);
        std::printf("checked: BCAST whose last CREDIT would leave it empty refused; the root "
                    "sending then completes it\n");
        ++mid;
    }
    {   // ALLGATHER of 24 bytes per rank: one 96-byte block, four pieces.
        const uint32_t chunk = sc / 4;
        std::vector<uint8_t> ref(sc);
        for (uint32_t r = 0; r < 4; ++r) {
            std::memcpy(ref.data() + r * chunk, bytes[r].data() + r * chunk, chunk);
        }
        auto ag = [&](uint32_t r, uint32_t off, uint32_t cnt) {
            return block_hdr(jid, r, mid, 0, w, INA_COLL_ALLGATHER, INA_OP_REPLACE, INA_DT_UINT8,
                             off, cnt, sc, sc, true);
        };
        c.send(eps[2], ag(2, 2 * chunk, chunk), bytes[2].data() + 2 * chunk, chunk);
        expect_grants(c, jid, mid, all);
        expect_mismatch(c, eps[1], ag(1, chunk, chunk + 1), bytes[1].data() + chunk,
                        "ALLGATHER piece overlapping rank 2's");
        expect_mismatch(c, eps[3], ag(3, 2 * chunk - 1, 2), bytes[3].data() + 2 * chunk - 1,
                        "ALLGATHER piece inside rank 2's");
        c.send(eps[1], ag(1, chunk, chunk), bytes[1].data() + chunk, chunk);
        c.send(eps[0], ag(0, 0, chunk), bytes[0].data(), chunk);
        expect_mismatch(c, eps[3], ag(3, 3 * chunk, chunk - 1), bytes[3].data() + 3 * chunk,
                        "ALLGATHER last piece leaving a gap");
        c.send(eps[3], ag(3, 3 * chunk, chunk), bytes[3].data() + 3 * chunk, chunk);
        expect_block(c, jid, mid, 0, 4, all, ref);
        std::printf("checked: ALLGATHER exact on all ranks after overlapping and short pieces "
                    "were refused\n");
        ++mid;
    }
}

} // namespace

int main()
{
    arm_watchdog(120);
    {
        Daemon d;
        Client c;
        // Job A: ranks 0..2 on eps 0..2; ep 3 is an attacker with its own job B.
        std::vector<size_t> a;
        for (int i = 0; i < 3; ++i) {
            a.push_back(c.connect(d.address()));
        }
        size_t evil = c.connect(d.address());
        uint32_t w = 0, wb = 0;
        uint32_t jid = 0;
        for (uint32_t r = 0; r < 3; ++r) {
            Msg m = c.open_job(a[r], "victim", {5, 5, 6}, 4, r);
            CHECK_OR_FAIL(m.hdr.status == INA_PROTO_OK, "open %u", r);
            jid = m.hdr.jid;
            w = m.hdr.window;
        }
        CHECK_OR_FAIL(w == 4, "window %u", w);
        uint32_t jid_b = c.open_all({evil}, {9}, 4, &wb);
        // The attacker knows A's key: a rank that is taken stays its owner's.
        Msg taken = c.open_job(evil, "victim", {5, 5, 6}, 4, 1);
        CHECK_OR_FAIL(taken.hdr.status == INA_PROTO_ERR_NOT_MEMBER && taken.hdr.jid == 0,
                      "rank 1 opened twice: %s", ina_proto_status_name(taken.hdr.status));
        std::printf("checked: JOB_OPEN of a taken rank -> not-member\n");

        malformed_suite(c, evil, jid_b, 0); // from a stranger's endpoint
        malformed_suite(c, a[1], jid, 1);   // and from a member of the victim job

        // Call 0 of job A, 2 blocks (total 32 elements). In the middle of SID 0:
        const uint64_t total = 2 * kCount;
        send_block(c, a[0], jid, 0, 0, 0, w, total);
        expect_grants(c, jid, 0, {0, 1, 2});
        send_block(c, a[0], jid, 0, 0, 0, w, total); // duplicate: dropped
        send_block(c, a[2], jid, 2, 0, 0, w, total);
        {   // forged: the attacker claims rank 1 of job A with its own data
            std::vector<int32_t> junk(kCount, 0x5a5a5a5a);
            ina_proto_hdr_t f = allreduce_hdr(jid, 1, 0, 0, w, INA_OP_SUM, INA_DT_INT32, kCount, total);
            expect_error(c, evil, &f, sizeof(f), junk.data(), junk.size() * 4,
                         INA_PROTO_ERR_NOT_MEMBER, "foreign block (NOT_MEMBER)");
        }
        {   // a member with the wrong window / op
            auto v = block_data(1, 0);
            ina_proto_hdr_t m = allreduce_hdr(jid, 1, 0, 0, w + 1, INA_OP_SUM, INA_DT_INT32, kCount, total);
            expect_error(c, a[1], &m, sizeof(m), v.data(), v.size() * 4, INA_PROTO_ERR_MISMATCH,
                         "window larger than the job's");
            // A shorter window than the GRANT's lease (4) puts SID 2 in Seg 0.
            m = allreduce_hdr(jid, 1, 0, 2, 2, INA_OP_SUM, INA_DT_INT32, kCount, total);
            expect_error(c, a[1], &m, sizeof(m), v.data(), v.size() * 4, INA_PROTO_ERR_MISMATCH,
                         "block outside the call's lease");
            m = allreduce_hdr(jid, 1, 0, 0, w, INA_OP_MAX, INA_DT_INT32, kCount, total);
            expect_error(c, a[1], &m, sizeof(m), v.data(), v.size() * 4, INA_PROTO_ERR_MISMATCH,
                         "op differs from the Seg's");
            // SID 4 maps to the Seg still holding SID 0.
            m = allreduce_hdr(jid, 0, 0, 4, w, INA_OP_SUM, INA_DT_INT32, kCount, total);
            expect_error(c, a[0], &m, sizeof(m), v.data(), v.size() * 4, INA_PROTO_ERR_SEG_BUSY,
                         "Seg busy with another SID");
        }
        send_block(c, a[1], jid, 1, 0, 0, w, total);
        expect_results(c, jid, 0, 0, 3, {0, 1, 2});
        for (uint32_t r = 0; r < 3; ++r) {
            send_block(c, a[r], jid, r, 0, 1, w, total);
        }
        expect_results(c, jid, 0, 1, 3, {0, 1, 2});
        std::printf("checked: victim job's call exact on all ranks after forged, duplicate, "
                    "mismatched and busy blocks\n");
        // The attacker's own job still works too.
        send_block(c, evil, jid_b, 0, 0, 0, wb, kCount);
        expect_grants(c, jid_b, 0, {0});
        expect_results(c, jid_b, 0, 0, 1, {0});
        CHECK_OR_FAIL(c.inbox().empty(), "%zu unexpected messages left", c.inbox().size());

        // v2 consistency rules on a fresh 4-rank job.
        std::vector<size_t> q;
        for (int i = 0; i < 4; ++i) {
            q.push_back(c.connect(d.address()));
        }
        uint32_t wq = 0;
        uint32_t jq = c.open_all(q, {1, 1, 2, 2}, 2, &wq);
        mismatch_suite(c, q, jq, wq);
        CHECK_OR_FAIL(c.inbox().empty(), "%zu unexpected messages left", c.inbox().size());

        int rc = d.terminate();
        CHECK_OR_FAIL(rc == 0, "exit status %d", rc);
        CHECK_OR_FAIL(d.counter("foreign") == 1, "foreign=%ld", d.counter("foreign"));
        CHECK_OR_FAIL(d.counter("duplicate") == 1, "duplicate=%ld", d.counter("duplicate"));
        CHECK_OR_FAIL(d.counter("malformed") == g_expected[INA_PROTO_ERR_MALFORMED] &&
                          d.counter("mismatch") == g_expected[INA_PROTO_ERR_MISMATCH],
                      "agent counted malformed=%ld mismatch=%ld, the test provoked %ld and %ld",
                      d.counter("malformed"), d.counter("mismatch"),
                      g_expected[INA_PROTO_ERR_MALFORMED], g_expected[INA_PROTO_ERR_MISMATCH]);
        CHECK_OR_FAIL(d.log().find("segs_free=1024/1024") != std::string::npos,
                      "pool not whole at exit");
        std::printf("checked: agent counters foreign=1 duplicate=1 malformed=%ld mismatch=%ld, "
                    "pool whole at exit\n", g_expected[INA_PROTO_ERR_MALFORMED],
                    g_expected[INA_PROTO_ERR_MISMATCH]);
    }
    {
        // Pool exhaustion: 4 Segs, two jobs of window 4.
        Daemon d({"--segs", "4", "--policy", "fcfs"}); // the pool's denial, not tdm's
        Client c;
        std::vector<size_t> a = {c.connect(d.address()), c.connect(d.address())};
        std::vector<size_t> b = {c.connect(d.address()), c.connect(d.address())};
        uint32_t wa = 0, wb = 0;
        uint32_t ja = c.open_all(a, {1, 2}, 4, &wa);
        uint32_t jb = c.open_all(b, {1, 2}, 8, &wb);
        CHECK_OR_FAIL(wa == 4 && wb == 4, "windows %u %u (pool of 4)", wa, wb);
        const uint64_t total = 6 * kCount; // 6 blocks through a window of 4
        send_block(c, a[0], ja, 0, 0, 0, wa, total); // A's call takes all 4 Segs
        expect_grants(c, ja, 0, {0, 1});
        send_block(c, b[1], jb, 1, 0, 0, wb, total); // B's call: nothing left
        for (uint32_t r = 0; r < 2; ++r) {
            Msg m = c.wait_for(
                [&](const Msg &m) { return m.hdr.jid == jb && m.hdr.rank == r; }, 10000, "DENY");
            CHECK_OR_FAIL(m.hdr.type == INA_PROTO_DENY && m.hdr.mid == 0 &&
                              m.hdr.status == INA_PROTO_ERR_NO_RESOURCES,
                          "B rank %u got %s/%s", r, ina_proto_type_name(m.hdr.type),
                          ina_proto_status_name(m.hdr.status));
        }
        // A late block of the denied call is dropped without a reply: the HELLO_ACK
        // sent after it on the same endpoint arrives with nothing before it.
        send_block(c, b[0], jb, 0, 0, 0, wb, total);
        uint32_t mw;
        uint64_t sb;
        c.hello(b[0], &mw, &sb);
        for (const Msg &m : c.inbox()) {
            CHECK_OR_FAIL(m.hdr.jid != jb, "denied call produced %s", ina_proto_type_name(m.hdr.type));
        }
        std::printf("checked: pool exhausted -> DENY(no-resources) to both members of the "
                    "denied call, its later blocks dropped silently\n");
        // A's call completes: 6 blocks, one SID at a time (well inside the window).
        send_block(c, a[1], ja, 1, 0, 0, wa, total);
        expect_results(c, ja, 0, 0, 2, {0, 1});
        for (uint32_t sid = 1; sid < 6; ++sid) {
            for (uint32_t r = 0; r < 2; ++r) {
                send_block(c, a[r], ja, r, 0, sid, wa, total);
            }
            expect_results(c, ja, 0, sid, 2, {0, 1});
        }
        // With A's lease back, B's next call is granted and exact.
        for (uint32_t sid = 0; sid < 6; ++sid) {
            for (uint32_t r = 0; r < 2; ++r) {
                send_block(c, b[r], jb, r, 1, sid, wb, total);
            }
            if (sid == 0) {
                expect_grants(c, jb, 1, {0, 1});
            }
            expect_results(c, jb, 1, sid, 2, {0, 1});
        }
        std::printf("checked: the granted call completed exactly; after it the denied job's "
                    "next call was granted and exact\n");
        int rc = d.terminate();
        CHECK_OR_FAIL(rc == 0, "exit status %d", rc);
        CHECK_OR_FAIL(d.counter("calls_denied") == 1 && d.counter("calls_granted") == 2,
                      "denied=%ld granted=%ld", d.counter("calls_denied"), d.counter("calls_granted"));
        CHECK_OR_FAIL(d.log().find("segs_free=4/4") != std::string::npos, "pool not whole at exit");
        std::printf("checked: agent counters calls_denied=1 calls_granted=2, segs_free=4/4 at exit\n");
    }
    std::printf("PASS agent_errors\n");
    return 0;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The input of fuzz_serve, in one place: fuzz_serve.cpp reads it,
// fuzz_corpus.cpp writes recorded agent traffic in it. Any byte string is an
// input: fields are reduced into their range, a record cut short ends it.
//
//   config   kConfigBytes: the aggregator the traffic goes to (ServeConfig)
//   records  until the input ends, each starting with one op byte:
//            endpoint = op % kEndpoints, kind = op / kEndpoints:
//     message  (kind < kRndvKinds) 64 header bytes, u32 payload length (cut
//              to what is left), the payload: as the agent receives it from
//              that endpoint over UCX (ina_proto_check, then agg::serve);
//              kinds kFailKinds..kEagerKinds-1 have one more byte n before
//              the header: the n-th allocation while the message is handled
//              throws std::bad_alloc (the agent catches it and goes on);
//              kinds kEagerKinds.. get the payload in a buffer of the pool,
//              as a rendezvous BLOCK lands (Agent::receive_rndv);
//     tick     the clock moves on by kTickMs[kind - kRndvKinds] and the
//              aggregator ticks if it wants to (Agent::tick); of endpoint
//              kParent, a slow parent's answers come down (below);
//     lost     (kind >= kLostKind) the endpoint's connection is lost
//              (Aggregator::member_lost), a new one takes its place.
// A leaf (ServeConfig::parent, ina-switchd --parent): endpoint kParent is the
// link to the parent agent instead of a member: its messages go to the
// leaf's agg::ParentJobs as ParentLink hands them on (which turns them into
// the core's uplink_*), its loss is ParentJobs::lost(); with
// parent_answers, the parent also answers every JOB_OPEN, CALL_READY and
// block of the leaf by itself, as if the other leaves agreed at once. How
// it answers is the input's too: parent_slow holds its answers until a tick
// record of endpoint kParent (a parent that answers late: after the job
// left, the call ended, ...); parent_refuses has it refuse what is odd: the
// JOB_OPEN of an odd leaf JID (JOB_OPENED NO_RESOURCES), the CALL_READY of
// an odd MID (DENY), and a block of an odd SID of an even MID (ERROR
// NOT_MEMBER in flight: a sibling leaf lost).
// Multi-byte fields are little endian.
#ifndef INA_FUZZ_SERVE_INPUT_H
#define INA_FUZZ_SERVE_INPUT_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ina_proto.h"

namespace ina_fuzz {

constexpr unsigned kEndpoints = 8;
constexpr unsigned kParent = kEndpoints - 1;
constexpr unsigned kFailKinds = 16;  // kinds 0..15: eager message, 16..19 with a failure
constexpr unsigned kEagerKinds = 20;
constexpr unsigned kRndvKinds = 24;  // kinds 20..23: rendezvous message
constexpr unsigned kLostKind = 28;   // kinds 24..27 tick, 28..31 lost
constexpr unsigned kTickMs[] = {1, 10, 100, 1000};
static_assert(kRndvKinds + sizeof(kTickMs) / sizeof(kTickMs[0]) == kLostKind, "op kinds");
static_assert(256 / kEndpoints == 32, "op byte: endpoint and kind");

// The scheduling policies of ina-switchd --policy.
enum class Policy : uint8_t { kTdm = 0, kFcfs, kExclusive, kPartition };
constexpr unsigned kPolicies = 4;

struct ServeConfig {
    Policy policy = Policy::kTdm;
    // AggregatorConfig::open_wait: 0 or an hour. Both are deterministic (the
    // core reads the real clock for it, the fuzzer's clock is its own).
    bool open_wait_forever = false;
    bool parent = false;         // a leaf of a tree: endpoint kParent is the parent
    bool parent_answers = false; // ... which answers by itself too
    bool parent_slow = false;    // ... when a tick of endpoint kParent says
    bool parent_refuses = false; // ... refusing some of what it is asked
    uint32_t segs = 64;          // 1..kMaxSegs
    uint32_t max_window = 64;    // 1..INA_PROTO_MAX_WINDOW
    uint32_t seg_bytes = 65536;  // 16..65536, a multiple of 16
};
constexpr size_t kConfigBytes = 8;
// Fewer than ina-switchd's default 1024: a pool is made for every input, and
// 256 Segs are still four leases of the largest window the tests ask for.
constexpr uint32_t kMaxSegs = 256;

inline uint32_t get_le(const uint8_t *p, size_t n)
{
    uint32_t v = 0;
    for (size_t i = 0; i < n; ++i) {
        v |= uint32_t{p[i]} << (8 * i);
    }
    return v;
}

inline void put_le(std::vector<uint8_t> &out, uint32_t v, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        out.push_back(static_cast<uint8_t>(v >> (8 * i)));
    }
}

inline ServeConfig decode_config(const uint8_t *p)
{
    ServeConfig c;
    c.policy = static_cast<Policy>(p[0] % kPolicies);
    c.open_wait_forever = (p[1] & 1) != 0;
    c.parent = (p[1] & 2) != 0;
    c.parent_answers = (p[1] & 4) != 0;
    c.parent_slow = (p[1] & 8) != 0;
    c.parent_refuses = (p[1] & 16) != 0;
    c.segs = 1 + get_le(p + 2, 2) % kMaxSegs;
    c.max_window = 1 + get_le(p + 4, 2) % INA_PROTO_MAX_WINDOW;
    c.seg_bytes = 16 * (1 + get_le(p + 6, 2) % 4096);
    return c;
}

// The bytes decode_config reads back as `c` (values out of range clamped).
inline void encode_config(const ServeConfig &c, std::vector<uint8_t> &out)
{
    auto clamp = [](uint32_t v, uint32_t lo, uint32_t hi) { return v < lo ? lo : v > hi ? hi : v; };
    out.push_back(static_cast<uint8_t>(c.policy));
    out.push_back(static_cast<uint8_t>((c.open_wait_forever ? 1 : 0) | (c.parent ? 2 : 0) |
                                       (c.parent_answers ? 4 : 0) | (c.parent_slow ? 8 : 0) |
                                       (c.parent_refuses ? 16 : 0)));
    put_le(out, clamp(c.segs, 1, kMaxSegs) - 1, 2);
    put_le(out, clamp(c.max_window, 1, INA_PROTO_MAX_WINDOW) - 1, 2);
    put_le(out, clamp(c.seg_bytes, 16, 65536) / 16 - 1, 2);
}

// One message record (rndv: its payload lands in a pool buffer).
inline void encode_message(unsigned endpoint, bool rndv, const ina_proto_hdr_t &h,
                           const void *payload, uint32_t len, std::vector<uint8_t> &out)
{
    out.push_back(static_cast<uint8_t>((rndv ? kEagerKinds : 0) * kEndpoints +
                                       endpoint % kEndpoints));
    const auto *hb = reinterpret_cast<const uint8_t *>(&h);
    out.insert(out.end(), hb, hb + sizeof(h));
    put_le(out, len, 4);
    const auto *pb = static_cast<const uint8_t *>(payload);
    out.insert(out.end(), pb, pb + len);
}

// A tick record of kTickMs[which].
inline void encode_tick(unsigned endpoint, unsigned which, std::vector<uint8_t> &out)
{
    out.push_back(static_cast<uint8_t>((kRndvKinds + which) * kEndpoints + endpoint % kEndpoints));
}

} // namespace ina_fuzz

#endif

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A call's recovery with the other members of its job, at the member whose
// call it is (docs/ARCHITECTURE.md, "Recovery from a lost agent"): its word
// on the call (STATE), the blocks it gives the others (FETCH, DATA), and
// the blocks it gets from them or rebuilds, until every member decided
// alike how the call ends. The job routes the messages (ina_recover.cpp);
// the rescue reads the call through a few of its methods (geometry, what
// arrived, whether it was struck in flight) and its data (call_data.h),
// and settles it with Call::recovered.
#ifndef INA_CALL_RESCUE_H
#define INA_CALL_RESCUE_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "ina_client.h"
#include "ina_geometry.h"
#include "ina_peer_proto.h"

namespace ina::client {

class Call;
class CallData;
class Job;

// Recovery messages (common/ina_peer_proto.h), for a call's rescue and
// for its job's answers on behalf of calls no longer running.
namespace peer {

inline size_t bitmap_bytes(uint64_t n)
{
    return static_cast<size_t>((n + 7) / 8);
}
inline bool bit(const uint8_t *m, uint64_t i)
{
    return (m[i / 8] >> (i % 8)) & 1u;
}
inline void set_bit(uint8_t *m, uint64_t i)
{
    m[i / 8] = static_cast<uint8_t>(m[i / 8] | (1u << (i % 8)));
}
// A message: the header, then `len` bytes of payload.
std::vector<uint8_t> message(const ina_peer_hdr_t &h, const void *payload, size_t len);
inline ina_peer_hdr_t header(ina_peer_type_t type, uint64_t mid)
{
    ina_peer_hdr_t h;
    ina_peer_init(&h, type, mid);
    return h;
}

} // namespace peer

class CallRescue {
public:
    // The recovery of `call`, which retired lost; `host_ok`: its caller
    // can run the host algorithm instead.
    CallRescue(Call &call, bool host_ok);
    CallRescue(const CallRescue &) = delete;
    CallRescue &operator=(const CallRescue &) = delete;

    // This member's word to itself, and an ASK to every other member.
    void start();
    // Whether the recovery is over (a staged call's first takes the blocks
    // its caller has ready): the call's CQE, final, in *cqe.
    bool test(ina_cqe_t *cqe);
    // Once every member's word is in: how the recovery will end (a staged
    // call then goes on producing blocks and taking results until it does).
    bool decision(ina_cqe_t *cqe) const;
    // The caller gives the call up: it ends failed, and what it offered
    // the others is refused from now on.
    void abandon();

    // This member's word on the call for the others (STATE).
    void describe(std::vector<uint8_t> &msg) const;
    // A FETCH this member cannot answer yet but will in this recovery: the
    // input of a staged block it has not produced yet, or a RESULT it is
    // still rebuilding or fetching itself. Answered once it can
    // (defer_fetch); any other FETCH at once (give_block).
    bool fetch_later(uint64_t sid, bool result) const;
    void defer_fetch(uint32_t from, uint64_t sid, bool result);
    void give_block(uint32_t to, uint64_t sid, bool result) const;
    // A STATE or DATA for this recovery.
    void on_peer(uint32_t from, const void *msg, size_t len);

    // A member's BLOCK of a block rebuilt here.
    struct Piece {
        bool in = false;
        uint32_t offset = 0, count = 0;
        std::vector<uint8_t> bytes;
    };

private:
    struct Deferred {
        uint32_t from;
        uint64_t sid;
        bool result;
    };

    const CallGeometry &geom() const;
    size_t esz() const;
    // One of this member's blocks for another member (FETCH): what it
    // sent, or the RESULT it holds whole.
    bool block_for_peer(uint64_t sid, bool result, std::vector<uint8_t> &bytes, uint32_t *offset,
                        uint32_t *count) const;
    // Every member's word is in: what this member fetches, from whom, and
    // which blocks it rebuilds.
    void plan();
    // Take the blocks the caller has ready (a staged call); a rebuilt
    // block whose every member's BLOCK is here, reduced and put in place
    // or handed over.
    void produce();
    void rebuild(uint64_t sid);
    // A block's RESULT is here in the recovery: kept for the members that
    // will fetch it from this one, and given to those already waiting.
    void hold(uint64_t sid, const uint8_t *data);
    // Answer the deferred FETCHes of block `sid` (`result`: of its RESULT),
    // or every one left (`all`), with what this member can give now.
    void answer_deferred(uint64_t sid, bool result, bool all = false);
    // The call's end: what the job keeps of it, or its final word.
    void finish();
    void log(const char *fmt, ...) const __attribute__((format(printf, 2, 3)));

    Call &call_;
    Job &job_;
    CallData &data_;
    const bool host_ok_;
    const uint32_t n_, me_; // members, and this one
    uint32_t states_in_ = 0;
    std::vector<uint8_t> state_;                  // per member: PeerState (0: not heard)
    std::vector<uint8_t> host_;                   // per member: its host_ok
    bool struck_ = false;                         // some member had sent BLOCKs
    std::vector<std::vector<uint8_t>> r_, i_, l_; // per member: the bitmaps
    bool planned_ = false;
    uint32_t pending_ = 0; // DATAs awaited
    // Blocks reduced here: sid -> per member its BLOCK.
    std::map<uint64_t, std::vector<Piece>> rebuild_;
    // RESULTs got in the recovery that other members will fetch from here,
    // where the caller's buffer does not have them whole (hold).
    std::map<uint64_t, std::vector<uint8_t>> held_;
    std::vector<Deferred> deferred_; // FETCHes to answer later (fetch_later)
    bool done_ = false;
    ina_cqe_t decision_{}; // how the recovery ends, once planned
};

} // namespace ina::client

#endif // INA_CALL_RESCUE_H

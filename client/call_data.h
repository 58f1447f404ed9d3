// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Where a call's blocks come from and where its RESULTs go (the Call asks,
// ina_engine.h): the caller's send and receive buffers (UserBuffers,
// user_buffers.h), or a staged call's callbacks, ina_stage_ops_t
// (StagedBlocks, staged_blocks.h). The window, the verdict and the CQE are
// the Call's, the same code for both: it asks its data once per block,
// never per element.
#ifndef INA_CALL_DATA_H
#define INA_CALL_DATA_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ina_proto.h"

namespace ina::client {

class InputKeeper;
struct KeptCall;

class CallData {
public:
    virtual ~CallData() = default;

    // This member's BLOCK of one SID, as it goes on the wire.
    struct Block {
        uint32_t offset = 0;           // element offset of the payload inside the block
        uint32_t count = 0;            // payload elements; 0: a CREDIT
        bool want = false;             // INA_PROTO_F_WANT_RESULT
        const void *payload = nullptr; // read until the send completes
    };
    // What became of a block asked for.
    enum class Next {
        ready,     // there it is
        not_ready, // the caller has not produced it yet: ask again later
        refused,   // one the wire cannot carry (the caller's mistake): the call fails
    };
    // Block `sid`, the next one the window lets go.
    virtual Next next_block(uint64_t sid, Block &b) = 0;

    // A fresh RESULT of block `sid` (it matches the call): its payload put
    // in place or handed over. False: it lacks the payload this member
    // asked for, and nothing was placed (the call cannot complete).
    virtual bool take_result(const ina_proto_hdr_t &h, const void *data, size_t length) = 0;
    // A rendezvous RESULT, fresh, of this call, with its whole payload:
    // where in the caller's memory the payload lands when it is this
    // member's block in one piece (else null: it comes through take_result
    // from the channel's buffer). A non-null answer is followed by exactly
    // one landed(), and the call does not finish before (writing()).
    virtual void *landing(const ina_proto_hdr_t &h) = 0;
    virtual void landed() = 0;
    virtual bool writing() const = 0;
    // The blocks come from the caller as it produces them (a staged call):
    // with nothing in flight the call waits on its caller, not on the
    // agent, and a recovery goes on taking blocks and handing results over
    // until every block is delivered.
    virtual bool caller_produces() const = 0;
    // In place, results already overwrote the caller's input: the caller
    // can no longer fall back to a host algorithm.
    virtual bool input_gone() const = 0;
    // The call completed: what the job keeps of it goes to `keeper`, where
    // it did not go from the start.
    virtual void keep_completed(InputKeeper &keeper) = 0;

    // Recovery with the other members (call_rescue.h).
    // Whether this member kept what a recovery needs of it.
    virtual bool recoverable() const = 0;
    // How many blocks this member produced so far, in SID order (the
    // caller's buffers hold every one from the start).
    virtual uint64_t produced() const = 0;
    // Block `sid`'s result is something this member needs: a payload to
    // place, or a staged RESULT to hand over.
    virtual bool wants_result(uint64_t sid) const = 0;
    // Block `sid` has nothing to place or hand over (a BARRIER's empty
    // block in the caller's buffers): a recovery owes this member nothing.
    virtual bool nothing_to_deliver(uint64_t sid) const = 0;
    // This member holds the RESULT of block `sid` whole, to give to others.
    virtual bool holds_result(uint64_t sid) const = 0;
    // This member can still give its input of block `sid`.
    virtual bool has_input(uint64_t sid) const = 0;
    // Block `sid`'s whole result where the caller's buffer holds it (null:
    // it does not, or not in one piece).
    virtual const uint8_t *result_in_place(uint64_t sid) const = 0;
    // Block `sid` for another member: its RESULT (`result`), or this
    // member's BLOCK (where it sits in the block, and its payload). False:
    // this member cannot give it (now).
    virtual bool block_for_peer(uint64_t sid, bool result, std::vector<uint8_t> &bytes,
                                uint32_t *offset, uint32_t *count) const = 0;
    // In a recovery: take block `sid`, the next one, from the caller.
    virtual Next produce(uint64_t sid) = 0;
    // A result got in a recovery (rebuilt here or fetched), put in place
    // or handed over as a RESULT would be. False: not taken (a staged
    // block that is not produced yet, or was handed over already).
    virtual bool place_result(uint64_t sid, const uint8_t *data) = 0;
    // After a recovery, what the job keeps of block `sid` (appended to k);
    // `held`: its result as got in the recovery, if any (may be moved from).
    virtual void keep_recovered(uint64_t sid, std::vector<uint8_t> *held, KeptCall &k) = 0;
};

} // namespace ina::client

#endif // INA_CALL_DATA_H

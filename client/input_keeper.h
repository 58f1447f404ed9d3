// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// What a member keeps of a call for the other members (docs/ARCHITECTURE.md,
// "Recovery from a lost agent"): what it sent of the call's last window of
// blocks, the only ones another member can still lack once this one
// completed the call. Copied from the caller's buffers while the RESULTs are
// on their way, or taken over from the copies a staged call made as it went;
// handed to the job when the call completes (Job::keep), which keeps them
// until the job's certified mark passes the call.
#ifndef INA_INPUT_KEEPER_H
#define INA_INPUT_KEEPER_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ina_geometry.h"

namespace ina::client {

class Call;
class Job;

// What a member keeps of a completed call until the job's certified mark
// passes it (docs/ARCHITECTURE.md, "Recovery from a lost agent"): for the
// call's last `window` blocks, the only ones another member can still lack,
// what this member sent (its input), from which the others can rebuild any
// of them; after a recovery also the RESULTs it holds then.
struct KeptCall {
    uint64_t mid = 0;
    unsigned coll = 0, op = 0, dtype = 0;
    uint64_t nblocks = 0;
    uint64_t first = 0;                       // the first kept SID
    std::vector<BlockSend> sent;              // per kept SID: this member's BLOCK
    std::vector<std::vector<uint8_t>> input;  // ... and its payload
    std::vector<std::vector<uint8_t>> result; // the RESULT's payload (empty: none came)
    size_t bytes() const;
    // Whether kept SID first + j still has this member's input (a CREDIT has
    // none to have; a recovered call may have lost one to its own result).
    bool has_input(size_t j) const { return !input[j].empty() || sent[j].count == 0; }
};

// One call's kept blocks, from its start (or its completion, for a staged
// call) until it hands them to its job. Owned by the Call and reused by its
// next ones: the record's buffers come back from the job (Job::keep swaps
// them), so keeping allocates nothing once a job has warmed up.
class InputKeeper {
public:
    // Keep `call`'s input of its last window, read from `src` (this
    // member's blocks where CallGeometry::send places them). Copied by
    // copy(), not before the call's first block goes out.
    void keep_inputs(const Call &call, const uint8_t *src);
    // Copy up to `most` more of the inputs keep_inputs promised: all of them
    // before a RESULT may overwrite one in place, and at the latest when the
    // call retires (the caller's input is its own again after that).
    void copy(size_t most);
    // The record of `call`'s last window, for blocks its data copied itself
    // (a staged call's copies, once it completed): the caller fills every
    // entry; nothing is left to copy.
    KeptCall &keep_copied(const Call &call);
    // Block `sid`'s kept input (null: it is not kept). Whole once copy()
    // ran to the end, as it does at the latest when the call retires.
    const std::vector<uint8_t> *input(uint64_t sid) const
    {
        if (!keeping_ || sid < kept_.first || sid - kept_.first >= kept_.input.size()) {
            return nullptr;
        }
        return &kept_.input[static_cast<size_t>(sid - kept_.first)];
    }
    bool keeping() const { return keeping_; }
    // The call completed: its job keeps the blocks until they are certified.
    void hand_over(Job &job);
    // A new call: nothing kept yet.
    void reset() { keeping_ = false; }

private:
    // kept_ described for `call`'s last window (its size returned).
    size_t window(const Call &call);

    KeptCall kept_;
    const uint8_t *src_ = nullptr; // where keep_inputs reads the inputs
    size_t esz_ = 1;
    size_t next_ = 0; // kept inputs copied so far
    bool keeping_ = false;
};

} // namespace ina::client

#endif // INA_INPUT_KEEPER_H

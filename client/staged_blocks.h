// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A staged call's data (call_data.h, ina_job_post_staged): each block comes
// from the caller's ops.block when it is ready (the pump stops at the first
// one that is not), each RESULT goes to its ops.result. Where the job keeps
// blocks, it also copies what another member may still need of a block
// once the caller may overwrite it (docs/ARCHITECTURE.md, "Recovery from a
// lost agent", staged calls).
#ifndef INA_STAGED_BLOCKS_H
#define INA_STAGED_BLOCKS_H

#include <cstdint>
#include <vector>

#include "call_data.h"
#include "ina_client.h"

namespace ina::client {

class Call;

class StagedBlocks final : public CallData {
public:
    explicit StagedBlocks(const Call &call) : call_(call) {}

    // The call (armed: geometry planned) takes its blocks from `ops`.
    void start(const ina_stage_ops_t &ops);

    Next next_block(uint64_t sid, Block &b) override;
    bool take_result(const ina_proto_hdr_t &h, const void *data, size_t length) override;
    // A staged RESULT is handed over from the channel's buffer.
    void *landing(const ina_proto_hdr_t &) override { return nullptr; }
    void landed() override {}
    bool writing() const override { return false; }
    bool caller_produces() const override { return true; }
    // The caller's memory, not the engine's: what a failure leaves there is
    // the caller's to judge (the CQE says whether it may fall back).
    bool input_gone() const override { return false; }
    void keep_completed(InputKeeper &keeper) override;

    bool recoverable() const override { return keeps_; }
    uint64_t produced() const override { return produced_; }
    bool wants_result(uint64_t) const override { return true; } // handed over, payload or not
    bool nothing_to_deliver(uint64_t) const override { return false; }
    bool holds_result(uint64_t sid) const override;
    bool has_input(uint64_t sid) const override;
    const uint8_t *result_in_place(uint64_t) const override { return nullptr; }
    bool block_for_peer(uint64_t sid, bool result, std::vector<uint8_t> &bytes, uint32_t *offset,
                        uint32_t *count) const override;
    Next produce(uint64_t sid) override;
    bool place_result(uint64_t sid, const uint8_t *data) override;
    void keep_recovered(uint64_t sid, std::vector<uint8_t> *held, KeptCall &k) override;

private:
    // A block as ops.block returned it is one the wire allows.
    bool block_ok(uint64_t sid, const ina_stage_block_t &b) const;
    void sent(uint64_t sid, const ina_stage_block_t &b, bool want);
    void copy_input(uint64_t sid);
    void trim();

    const Call &call_;
    ina_stage_ops_t ops_{};
    // The job keeps blocks: per SID, where this member's BLOCK is in the
    // caller's memory (valid until its RESULT is handed over) and a copy of
    // what another member may still need once it is not: the RESULT's
    // payload, or (ACK only, or a block rebuilt in a recovery) the BLOCK.
    // Copies of SIDs the window proves every member has are given back as
    // RESULTs come (trim).
    bool keeps_ = false;
    struct Staged {
        const uint8_t *data = nullptr;
        uint32_t offset = 0, count = 0;
        bool want = false;
        bool result = false; // copy is the RESULT (else the BLOCK)
        std::vector<uint8_t> copy;
    };
    std::vector<Staged> sb_;
    uint64_t produced_ = 0; // SIDs ops_.block gave (in order)
    uint64_t max_got_ = 0;  // 1 + the highest SID whose RESULT or ACK came
    uint64_t trimmed_ = 0;  // copies below this SID are given back
};

} // namespace ina::client

#endif // INA_STAGED_BLOCKS_H

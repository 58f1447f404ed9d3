// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A call's data in the caller's buffers (call_data.h): its blocks are read
// straight from sbuf (no copy), its RESULTs written into rbuf where
// CallGeometry places them, or landed there by rendezvous. In place (sbuf ==
// rbuf), the inputs a recovery may still need are saved before a RESULT
// overwrites them.
#ifndef INA_USER_BUFFERS_H
#define INA_USER_BUFFERS_H

#include <cstdint>
#include <map>
#include <vector>

#include "call_data.h"
#include "ina_client.h"

namespace ina::client {

class Call;

class UserBuffers final : public CallData {
public:
    // The data of `call`, whose input `keeper` keeps for the job.
    UserBuffers(const Call &call, InputKeeper &keeper) : call_(call), keeper_(keeper) {}

    // The call (armed: geometry planned, buffers checked) runs on `d`'s
    // buffers.
    void start(const ina_coll_desc_t &d);

    Next next_block(uint64_t sid, Block &b) override;
    bool take_result(const ina_proto_hdr_t &h, const void *data, size_t length) override;
    void *landing(const ina_proto_hdr_t &h) override;
    void landed() override { --landing_; }
    bool writing() const override { return landing_ > 0; }
    bool caller_produces() const override { return false; }
    bool input_gone() const override { return writes_input_ && (applied_ > 0 || landed_any_); }
    void keep_completed(InputKeeper &) override {} // kept from the start

    bool recoverable() const override { return true; }
    uint64_t produced() const override;
    bool wants_result(uint64_t sid) const override;
    bool nothing_to_deliver(uint64_t sid) const override;
    bool holds_result(uint64_t sid) const override { return result_in_place(sid) != nullptr; }
    bool has_input(uint64_t sid) const override;
    const uint8_t *result_in_place(uint64_t sid) const override;
    bool block_for_peer(uint64_t sid, bool result, std::vector<uint8_t> &bytes, uint32_t *offset,
                        uint32_t *count) const override;
    Next produce(uint64_t) override { return Next::not_ready; } // produced() says all are
    bool place_result(uint64_t sid, const uint8_t *data) override;
    void keep_recovered(uint64_t sid, std::vector<uint8_t> *held, KeptCall &k) override;

private:
    // In-place REDUCE_SCATTER (and a rendezvous RESULT landing over its own
    // input): with peers, save the inputs a RESULT of `sid` written at
    // byte `dst` of rbuf is about to overwrite.
    void save_overwritten(uint64_t sid, uint64_t dst, size_t len, bool landing);
    void save_inputs_under(uint64_t dst, size_t len, uint64_t oldest);

    const Call &call_;
    InputKeeper &keeper_;
    const uint8_t *src_ = nullptr; // where this rank's blocks are read from
    uint8_t *rbuf_ = nullptr;      // where RESULTs are written
    bool writes_input_ = false;    // RESULTs overwrite the input (in place)
    uint64_t applied_ = 0;         // RESULTs written into rbuf
    uint32_t landing_ = 0;         // rendezvous RESULTs landing in rbuf right now
    bool landed_any_ = false;      // a rendezvous RESULT was aimed at rbuf
    // In-place REDUCE_SCATTER: inputs saved before a RESULT overwrote them.
    std::map<uint64_t, std::vector<uint8_t>> saved_;
};

} // namespace ina::client

#endif // INA_USER_BUFFERS_H

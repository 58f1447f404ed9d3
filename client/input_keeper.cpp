// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Keeping a call's last window of blocks for the other members
// (input_keeper.h).
#include "input_keeper.h"

#include <utility>

#include "ina_engine.h"

namespace ina::client {

size_t KeptCall::bytes() const
{
    size_t n = 0;
    for (const auto &v : input) {
        n += v.size();
    }
    for (const auto &v : result) {
        n += v.size();
    }
    return n;
}

// The input of the last `window` blocks (a window's worth, not the whole
// buffer), copied while the rank waits for RESULTs (copy, from Call::pump),
// not before its first block goes out: all of it before a RESULT may
// overwrite an input in place, and at the latest when the call retires (a
// caller's input stays put until then).
void InputKeeper::keep_inputs(const Call &call, const uint8_t *src)
{
    const size_t k = window(call);
    for (size_t i = 0; i < k; ++i) {
        const BlockSend b = call.geometry().send(kept_.first + i);
        kept_.sent[i] = b;
        // A buffer a certified call gave back: no allocation, no page
        // faults on the way of every call (bench/recover_cost.sh).
        kept_.input[i] = call.job()->spare_buffer();
        kept_.result[i].clear();
    }
    src_ = src;
    esz_ = call.elem_size();
    next_ = 0;
    keeping_ = true;
}

size_t InputKeeper::window(const Call &call)
{
    // The call's last `window` blocks: the only ones another member can
    // still lack once this one completed the call.
    const uint64_t n = call.geometry().nblocks(), w = call.job()->window();
    kept_.mid = call.mid();
    kept_.coll = call.coll();
    kept_.op = call.op();
    kept_.dtype = call.dtype();
    kept_.nblocks = n;
    kept_.first = n > w ? n - w : 0;
    const size_t k = static_cast<size_t>(n - kept_.first);
    kept_.sent.resize(k);
    kept_.input.resize(k);
    kept_.result.resize(k);
    return k;
}

void InputKeeper::copy(size_t most)
{
    if (!keeping_) {
        return;
    }
    for (const size_t k = kept_.sent.size(); next_ < k && most > 0; --most, ++next_) {
        const BlockSend &b = kept_.sent[next_];
        if (b.count > 0) {
            const uint8_t *from = src_ + b.src;
            kept_.input[next_].assign(from, from + static_cast<size_t>(b.count) * esz_);
        }
    }
}

KeptCall &InputKeeper::keep_copied(const Call &call)
{
    next_ = window(call); // copies already
    keeping_ = true;
    return kept_;
}

void InputKeeper::hand_over(Job &job)
{
    if (keeping_) {
        job.keep(std::move(kept_));
        keeping_ = false;
    }
}

} // namespace ina::client

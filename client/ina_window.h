// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Sliding send window of one offloaded call (the RESULT of a block is its
// ACK), without any transport:
// which block (SID) may go out next and which received RESULTs are fresh,
// duplicate or never sent. Where a block lies in the buffers is
// CallGeometry's business (ina_geometry.h).
//
// Rule: block sid may be sent once the RESULT of block sid - window has
// arrived (the result is the ACK) and the send of that block has completed
// locally (its header/slot may then be reused); slot = sid % window. Blocks go
// out in SID order, so at most `window` blocks are ever in flight.
//
// Leases (ina_proto.h): the window is the call's lease, which its verdict
// tells. Until then only the first `ahead` blocks may go (their slot is their
// SID in any lease of at least `ahead`); set_lease() then fixes the window.
#ifndef INA_WINDOW_H
#define INA_WINDOW_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ina {

class SendWindow {
public:
    // What a received RESULT means for the window.
    enum class Ack { fresh, duplicate, not_sent };

    // Slot storage is sized once (window <= INA_PROTO_MAX_WINDOW) and reused
    // by every call that recycles this window: no allocation per block.
    explicit SendWindow(uint32_t window) : slots_(window == 0 ? 1 : window), lease_(capacity()) {}

    // Start a call of `nblocks` blocks (their geometry is CallGeometry's), of
    // which the first `ahead` (at least 1) may go before the lease is known.
    void start(uint64_t nblocks, uint32_t ahead)
    {
        nblocks_ = nblocks;
        next_ = 0;
        acked_ = 0;
        sends_pending_ = 0;
        lease_ = capacity();
        ahead_ = ahead == 0 ? 1 : ahead > capacity() ? capacity() : ahead;
        leased_ = false;
        for (Slot &s : slots_) {
            s = Slot{};
        }
    }
    // Start a call whose lease is already known (or that needs none).
    void start(uint64_t nblocks)
    {
        start(nblocks, capacity());
        leased_ = true;
    }

    // The call's verdict tells its lease. False (nothing changed) if it is
    // none this window can take: empty, longer than the job's window, or
    // shorter than the blocks already sent.
    bool set_lease(uint32_t lease)
    {
        if (leased_) {
            return lease == lease_;
        }
        if (lease == 0 || lease > capacity() || next_ > lease) {
            return false;
        }
        lease_ = lease;
        leased_ = true;
        return true;
    }
    bool leased() const { return leased_; }

    // The job's window: the longest lease.
    uint32_t capacity() const { return static_cast<uint32_t>(slots_.size()); }
    // The window blocks are sent in now: the lease, or the job's before it.
    uint32_t window() const { return lease_; }
    uint64_t nblocks() const { return nblocks_; }
    uint64_t next_sid() const { return next_; }
    uint64_t acked() const { return acked_; }
    uint32_t slot_of(uint64_t sid) const { return static_cast<uint32_t>(sid % lease_); }

    // Blocks sent whose RESULT has not arrived yet.
    uint64_t in_flight() const { return next_ - acked_; }
    // Local send requests not completed yet (the user's buffer is still in use).
    uint32_t sends_pending() const { return sends_pending_; }

    // Whether block next_sid() may go out now.
    bool can_send() const
    {
        if (next_ >= nblocks_ || (!leased_ && next_ >= ahead_)) {
            return false;
        }
        const Slot &s = slots_[slot_of(next_)];
        return !s.used || (s.acked && s.send_done);
    }

    // Record that block next_sid() was posted; returns its SID.
    uint64_t on_sent()
    {
        uint64_t sid = next_++;
        Slot &s = slots_[slot_of(sid)];
        s.sid = sid;
        s.used = true;
        s.acked = false;
        s.send_done = false;
        ++sends_pending_;
        return sid;
    }

    // The local send of the block occupying `slot` completed.
    void on_send_done(uint32_t slot)
    {
        Slot &s = slots_[slot];
        if (s.used && !s.send_done) {
            s.send_done = true;
            --sends_pending_;
        }
    }

    // Classify the RESULT of `sid` without changing anything.
    Ack classify(uint64_t sid) const
    {
        if (sid >= next_) {
            return Ack::not_sent;
        }
        const Slot &s = slots_[slot_of(sid)];
        // The slot moved on to a later SID only after this one was acked.
        return (s.sid == sid && !s.acked) ? Ack::fresh : Ack::duplicate;
    }

    // Account the RESULT of `sid`; only a fresh one changes state.
    Ack on_ack(uint64_t sid)
    {
        Ack a = classify(sid);
        if (a == Ack::fresh) {
            slots_[slot_of(sid)].acked = true;
            ++acked_;
        }
        return a;
    }

    // Every block's RESULT has arrived.
    bool complete() const { return acked_ == nblocks_; }

private:
    struct Slot {
        uint64_t sid = 0;
        bool used = false;      // holds a block of this call
        bool acked = false;     // its RESULT arrived
        bool send_done = false; // its local send completed
    };

    std::vector<Slot> slots_; // capacity(): the job's window
    uint32_t lease_;          // slots in use: slot = sid % lease_
    uint32_t ahead_ = 1;      // blocks that may go before the lease is known
    bool leased_ = true;
    uint64_t nblocks_ = 0;
    uint64_t next_ = 0;
    uint64_t acked_ = 0;
    uint32_t sends_pending_ = 0;
};

} // namespace ina

#endif // INA_WINDOW_H

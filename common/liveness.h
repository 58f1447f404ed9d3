// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Telling a peer that stopped (a frozen process, a link that drops every
// packet: nothing closes) from one that is only slow or quiet, for every
// link whose far end answers a PING from its loop at once: a rank's link to
// its agent (Client::check_liveness), a leaf's link to its parent
// (ParentLink::check_liveness) and an agent's links to its child agents
// (Agent::check_children). Any message from the peer is an answer, so a
// busy link never needs probes. Once it was silent for a third of the
// limit, the peer is probed (PING), again every third; once silent for the
// whole limit with a probe unanswered for a third, it is lost.
//
// Pure, as SpinPolicy: the caller reads the clock, counts the messages it
// received from the peer (heard, compared from check to check: no clock
// read per message) and sends the PING.
#ifndef INA_LIVENESS_H
#define INA_LIVENESS_H

#include <chrono>
#include <cstdint>

namespace ina {

class Liveness {
public:
    using Clock = std::chrono::steady_clock;
    enum class Verdict { kFine, kProbe, kLost };

    Liveness() = default;
    explicit Liveness(std::chrono::milliseconds limit) : limit_(limit) {}

    void set_limit(std::chrono::milliseconds limit) { limit_ = limit; }
    std::chrono::milliseconds limit() const { return limit_; }
    bool enabled() const { return limit_.count() > 0; }

    // The silence counts from `now` again: the peer was heard, nobody
    // listened for a while (a PONG may sit unread), or nothing is asked of
    // it now.
    void restart(Clock::time_point now)
    {
        silent_since_ = now;
        probed_ = Clock::time_point{};
    }

    // `heard`: messages received from the peer so far. kProbe: send a PING
    // now; kLost: give the peer up.
    Verdict check(Clock::time_point now, uint64_t heard)
    {
        if (!enabled()) {
            return Verdict::kFine;
        }
        if (heard != seen_) {
            seen_ = heard;
            restart(now);
            return Verdict::kFine;
        }
        const auto every = limit_ / 3;
        const bool probed = probed_ != Clock::time_point{};
        if (now - silent_since_ >= limit_ && probed && now - probed_ >= every) {
            return Verdict::kLost;
        }
        if (now - silent_since_ >= every && (!probed || now - probed_ >= every)) {
            probed_ = now;
            return Verdict::kProbe;
        }
        return Verdict::kFine;
    }

    // When check() has something to do next, a probe or a verdict (only
    // meaningful while enabled).
    Clock::time_point due() const
    {
        return (probed_ == Clock::time_point{} ? silent_since_ : probed_) + limit_ / 3;
    }
    Clock::duration silent(Clock::time_point now) const { return now - silent_since_; }

private:
    std::chrono::milliseconds limit_{0};
    Clock::time_point silent_since_{};
    Clock::time_point probed_{}; // the latest PING since the silence began ({}: none)
    uint64_t seen_ = 0;          // `heard` at the last check
};

} // namespace ina

#endif

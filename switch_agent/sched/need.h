// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// How many Segs each job needs for its calls to stream at the line rate (its
// bandwidth-delay product in Segs), learned from its granted calls: what the
// auto policy (tdm.h, TdmConfig::by_need) weighs against the pool.
//
// A call with a lease of L Segs has at most L blocks in flight, so it moves
// at min(line rate, L Segs per round trip). The agent sees neither term
// alone: members send as far ahead as their lease lets them, so a block that
// returns late may have waited in its member's queue (the lease was more
// than enough) or on the wire (the lease was too short). What it does see is
// each call's rate: bytes over the time from its grant to its last result.
//   - before it is judged, a job counts as needing what its calls could use:
//     as many Segs as its largest call so far has blocks, at most its window
//     (nothing before its first call). Assuming less would divide the pool
//     among jobs that each need all of it; a job of small calls still counts
//     for little;
//   - line: the best rate of any large call. Only calls with their job's
//     whole window pull it down (by kLineDecay of the gap each): no lease
//     could have made those faster, so they say what the line gives now;
//     a call on a shorter lease may be slow for want of Segs, so none sets
//     the line before a whole window has;
//   - a large call that reached kEnough of the line on L Segs: the job needs
//     at most L (its need becomes L if it was more);
//   - one that did not: it needs about L * line / rate (a third of the line
//     on L Segs: 3L), more than L and at most its window. A lone slow call
//     (a member late to the call) changes nothing; the second in a row sets
//     the need to the smaller of the two.
// "Large": at least kLargeLeases leases' worth of bytes, so that the call's
// first round trip and its members' skew do not dominate its rate.
// O(log jobs) per call.
#ifndef INA_SCHED_NEED_H
#define INA_SCHED_NEED_H

#include <cstddef>
#include <cstdint>
#include <map>

namespace ina::sched {

class NeedEstimate {
public:
    static constexpr double kEnough = 0.75;   // of the line: the lease was enough
    static constexpr double kLargeLeases = 4; // a call this many leases long teaches
    static constexpr double kLineDecay = 1.0 / 64;

    explicit NeedEstimate(size_t seg_bytes) : seg_bytes_(static_cast<double>(seg_bytes)) {}

    // A call of `jid` (window `window`) of `bytes` asks the agent: while the
    // job is not judged yet, it needs what that call could use. Strong
    // guarantee on std::bad_alloc.
    void asked(uint32_t jid, uint32_t window, double bytes);
    // A granted call of `jid` (window `window`) held a lease of `lease` Segs
    // for `secs` and moved `bytes`. Strong guarantee on std::bad_alloc.
    void observe(uint32_t jid, uint32_t window, uint32_t lease, double bytes, double secs);
    // The job's need in Segs (0: it has not called yet).
    uint32_t need(uint32_t jid) const;
    // Whether a large call of the job was judged (need() is learned, not
    // what its calls could use).
    bool judged(uint32_t jid) const;
    // The longest lease on which a call of `bytes` is large (teaches).
    uint32_t teaching_lease(double bytes) const;
    // The longest lease a large call of the job had (0: none).
    uint32_t longest(uint32_t jid) const;
    // The sum of every job's need.
    uint64_t total() const { return total_; }
    // How long a large call of `bytes` holds a lease of `lease` Segs: at
    // the line rate, or lease/need of it where the job needs more; -1 for a
    // call too small to say, or before any large call.
    double hold(uint32_t jid, uint32_t lease, double bytes) const;
    // The job is gone.
    void forget(uint32_t jid);
    // The line rate in bytes per second (0: no large call yet).
    double line() const { return line_; }

private:
    struct Job {
        uint32_t need = 0;
        bool judged = false;
        uint32_t slow = 0;    // the need the last call said, if it was slow (else 0)
        uint32_t longest = 0; // the longest lease of a large call
    };
    void set_need(Job &j, uint32_t need);

    double seg_bytes_;
    double line_ = 0;
    std::map<uint32_t, Job> jobs_;
    uint64_t total_ = 0;
};

} // namespace ina::sched

#endif

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Calls that wait for the pool (Verdict::defer), first come first served:
// the line in arrival order, an index by (JID, MID), and the sum of their
// predicted holds, which a new call weighs against the hosts before it
// joins. tdm's waits (tdm.h) and the harm guard's (guard.h) are such lines.
#ifndef INA_SCHED_WAIT_LINE_H
#define INA_SCHED_WAIT_LINE_H

#include <cstdint>
#include <list>
#include <map>
#include <utility>

namespace ina::sched {

// T has jid, mid and hold (its predicted hold of the pool, seconds).
template <typename T>
class WaitLine {
public:
    using iterator = typename std::list<T>::iterator;

    bool empty() const { return line_.empty(); }
    const T &front() const { return line_.front(); }
    // The sum of the waiting calls' predicted holds.
    double hold() const { return hold_; }
    // The call's place in the line, or end() if it does not wait.
    iterator find(uint32_t jid, uint64_t mid)
    {
        auto at = at_.find({jid, mid});
        return at == at_.end() ? line_.end() : at->second;
    }
    iterator end() { return line_.end(); }
    bool first(iterator w) const { return w == line_.begin(); }
    bool waits(uint32_t jid, uint64_t mid) const { return at_.count({jid, mid}) != 0; }
    // Joins the end of the line; on an exception the line is as it was.
    void push(T w)
    {
        line_.push_back(std::move(w));
        const T &in = line_.back();
        try {
            at_.emplace(std::make_pair(in.jid, in.mid), std::prev(line_.end()));
        } catch (...) {
            line_.pop_back();
            throw;
        }
        hold_ += in.hold;
    }
    // Leaves the line, wherever it is (nothing if it does not wait).
    void erase(uint32_t jid, uint64_t mid) noexcept
    {
        auto at = at_.find({jid, mid});
        if (at == at_.end()) {
            return;
        }
        hold_ -= at->second->hold;
        line_.erase(at->second);
        at_.erase(at);
        if (line_.empty()) {
            hold_ = 0; // no rounding left over
        }
    }

private:
    std::list<T> line_;
    std::map<std::pair<uint32_t, uint64_t>, iterator> at_;
    double hold_ = 0;
};

} // namespace ina::sched

#endif

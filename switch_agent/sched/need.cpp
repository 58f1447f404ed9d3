// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// What each job needs of the pool (see need.h).
#include "sched/need.h"

#include <algorithm>
#include <cmath>

namespace ina::sched {

void NeedEstimate::set_need(Job &j, uint32_t need)
{
    total_ = total_ - j.need + need;
    j.need = need;
}

void NeedEstimate::asked(uint32_t jid, uint32_t window, double bytes)
{
    auto it = jobs_.find(jid);
    if (it != jobs_.end() && it->second.judged) {
        return;
    }
    const double blocks = std::max(1.0, std::ceil(bytes / seg_bytes_));
    const auto could = static_cast<uint32_t>(std::min<double>(blocks, std::max(window, 1u)));
    if (it == jobs_.end()) {
        it = jobs_.emplace(jid, Job{}).first; // may throw: nothing changed yet
    }
    set_need(it->second, std::max(it->second.need, could));
}

void NeedEstimate::observe(uint32_t jid, uint32_t window, uint32_t lease, double bytes, double secs)
{
    if (lease == 0 || secs <= 0 || bytes < kLargeLeases * lease * seg_bytes_) {
        return;
    }
    window = std::max(window, lease);
    const double rate = bytes / secs;
    if (line_ <= 0 && lease < window) {
        return; // a short lease says nothing before a whole window set the line
    }
    Job &j = jobs_[jid]; // may throw: nothing changed yet
    j.longest = std::max(j.longest, lease);
    j.judged = true;
    if (rate >= line_) {
        line_ = rate;
    } else if (lease >= window) {
        line_ -= (line_ - rate) * kLineDecay;
    }
    if (rate >= kEnough * line_) {
        j.slow = 0;
        set_need(j, j.need > 0 ? std::min(j.need, lease) : lease);
        return;
    }
    const double scaled = std::ceil(lease * line_ / rate);
    const auto said =
        static_cast<uint32_t>(std::clamp<double>(scaled, std::min(lease + 1, window), window));
    if (j.slow == 0) {
        j.slow = said; // wait for a second one
        return;
    }
    set_need(j, std::min(j.slow, said));
    j.slow = 0;
}

uint32_t NeedEstimate::need(uint32_t jid) const
{
    auto it = jobs_.find(jid);
    return it != jobs_.end() ? it->second.need : 0;
}

bool NeedEstimate::judged(uint32_t jid) const
{
    auto it = jobs_.find(jid);
    return it != jobs_.end() && it->second.judged;
}

uint32_t NeedEstimate::teaching_lease(double bytes) const
{
    return static_cast<uint32_t>(std::min<double>(bytes / (kLargeLeases * seg_bytes_), UINT32_MAX));
}

uint32_t NeedEstimate::longest(uint32_t jid) const
{
    auto it = jobs_.find(jid);
    return it != jobs_.end() ? it->second.longest : 0;
}

double NeedEstimate::hold(uint32_t jid, uint32_t lease, double bytes) const
{
    if (line_ <= 0 || lease == 0 || bytes < kLargeLeases * lease * seg_bytes_) {
        return -1;
    }
    const uint32_t n = need(jid);
    const double share = n > lease ? static_cast<double>(lease) / n : 1.0;
    return bytes / (line_ * share);
}

void NeedEstimate::forget(uint32_t jid)
{
    auto it = jobs_.find(jid);
    if (it != jobs_.end()) {
        total_ -= it->second.need;
        jobs_.erase(it);
    }
}

} // namespace ina::sched

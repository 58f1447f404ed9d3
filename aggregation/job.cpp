// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Job membership, call records and their forgetting (see job.h).
#include "job.h"

#include <algorithm>
#include <iterator>

namespace ina::agg {

Job::Job(uint32_t jid, uint32_t window, const JobKey &key, std::vector<uint32_t> node_ids,
         uint32_t asked_window, const TreeDesc &tree, const Member *creator)
    : jid_(jid), window_(window), key_(key), node_ids_(std::move(node_ids)),
      asked_window_(asked_window), tree_(tree),
      topo_(node_ids_.data(), static_cast<uint32_t>(node_ids_.size())), creator_(creator),
      members_(node_ids_.size(), nullptr), next_mid_(node_ids_.size(), 0),
      done_(node_ids_.size(), 0), at_certified_(static_cast<uint32_t>(node_ids_.size())),
      seen_(node_ids_.size(), false)
{
}

void Job::note_done(uint32_t rank, uint64_t mid, uint32_t done)
{
    const uint64_t mark = ina_proto_mark(mid, done);
    if (mark <= done_[rank]) {
        return;
    }
    const bool was_least = done_[rank] == certified_;
    done_[rank] = mark;
    if (was_least && --at_certified_ == 0) {
        // The last member at the old mark moved: once per mark, not per block.
        certified_ = *std::min_element(done_.begin(), done_.end());
        at_certified_ = static_cast<uint32_t>(std::count(done_.begin(), done_.end(), certified_));
    }
}

ina_proto_status_t Job::join(uint32_t rank, Member *m)
{
    if (rank >= members_.size()) {
        return INA_PROTO_ERR_MALFORMED;
    }
    if (members_[rank] == m) {
        return INA_PROTO_OK; // idempotent re-join
    }
    if (members_[rank] != nullptr) {
        return INA_PROTO_ERR_NOT_MEMBER; // somebody else holds this rank
    }
    members_[rank] = m;
    ++joined_;
    ever_joined_ = true;
    if (!seen_[rank]) {
        seen_[rank] = true;
        ++seen_count_;
    }
    return INA_PROTO_OK;
}

bool Job::leave(uint32_t rank, const Member *m)
{
    if (!is_member(rank, m)) {
        return false;
    }
    members_[rank] = nullptr;
    --joined_;
    return true;
}

void Job::note_mid(uint32_t rank, uint64_t mid)
{
    next_mid_[rank] = std::max(next_mid_[rank], mid + 1);
}

Call *Job::find_call(uint64_t mid)
{
    auto it = calls_.find(mid);
    return it == calls_.end() ? nullptr : &it->second;
}

void Job::retire()
{
    // floor = oldest MID some member may still send blocks of. One that has
    // not joined yet starts at MID 0 when it does (and must then learn the
    // verdicts of the calls it missed): it holds the floor at 0.
    uint64_t floor = UINT64_MAX;
    for (size_t r = 0; r < members_.size(); ++r) {
        if (!seen_[r]) {
            floor = 0;
        } else if (members_[r] != nullptr) {
            floor = std::min(floor, next_mid_[r] == 0 ? 0 : next_mid_[r] - 1);
        }
    }
    if (floor == UINT64_MAX) {
        return;
    }
    retired_below_ = std::max(retired_below_, floor);
    auto end = calls_.lower_bound(retired_below_);
    for (auto it = calls_.begin(); it != end;) {
        it = it->second.finished ? calls_.erase(it) : std::next(it);
    }
}

std::vector<uint64_t> Job::abort_open_calls()
{
    std::vector<uint64_t> mids;
    for (auto &kv : calls_) {
        if ((kv.second.granted || kv.second.deferred) && !kv.second.finished) {
            kv.second.finished = true;
            mids.push_back(kv.first);
        }
    }
    return mids;
}

std::vector<uint64_t> Job::open_calls() const
{
    std::vector<uint64_t> mids;
    for (const auto &kv : calls_) {
        if ((kv.second.granted || kv.second.deferred) && !kv.second.finished) {
            mids.push_back(kv.first);
        }
    }
    return mids;
}

} // namespace ina::agg

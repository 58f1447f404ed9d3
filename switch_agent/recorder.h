// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A record of what ina-switchd receives, for testing only: with
// INA_SWITCHD_RECORD=DIR in its environment, the agent appends every message
// it receives from a member to DIR/agent-<pid>.rec, so that the fuzzers'
// seed corpus is real traffic (tests/fuzz/make-corpus.sh runs agent tests
// with it) and stays valid when the protocol changes. Without the variable
// it costs a branch per message.
//
// The file (host byte order), read by tests/fuzz/fuzz_corpus.cpp:
//   "INAREC1\n", u32 n, n bytes: the agent's command line as in
//   /proc/self/cmdline (its pool and policy: what the fuzzer's core needs to
//   take the traffic as the agent did);
//   then one record per message: RecordHead, the header bytes as received
//   (hdr_len may be wrong: the agent validates after recording), the payload.
// A rendezvous BLOCK is recorded once its payload has landed (kRecordRndv);
// one refused before it landed is not recorded.
#ifndef INA_SWITCH_AGENT_RECORDER_H
#define INA_SWITCH_AGENT_RECORDER_H

#include <cstddef>
#include <cstdint>

namespace ina {

constexpr char kRecordMagic[8] = {'I', 'N', 'A', 'R', 'E', 'C', '1', '\n'};
constexpr uint32_t kRecordRndv = 1; // RecordHead::flags: the payload came by rendezvous

struct RecordHead {
    uint64_t peer;        // the sender (Member::id; 0: no reply endpoint)
    uint32_t hdr_len;
    uint32_t payload_len;
    uint32_t flags;       // kRecord*
    uint32_t reserved;    // 0
};
static_assert(sizeof(RecordHead) == 24, "RecordHead is 24 bytes on the wire of the file");

// Append one received message (no-op unless INA_SWITCHD_RECORD is set; a
// failed write turns recording off with one warning).
void record_received(uint64_t peer, const void *hdr, size_t hdr_len, const void *payload,
                     size_t payload_len, uint32_t flags);

} // namespace ina

#endif

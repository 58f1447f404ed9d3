// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The ranks' recovery protocol (ina_peer_proto.h): building and checking a
// message's header.
#include "ina_peer_proto.h"

#include <cstddef>
#include <cstring>

extern "C" {

void ina_peer_init(ina_peer_hdr_t *h, ina_peer_type_t type, uint64_t mid)
{
    std::memset(h, 0, sizeof(*h));
    h->magic = INA_PEER_MAGIC;
    h->version = INA_PEER_VERSION;
    h->type = static_cast<uint8_t>(type);
    h->mid = mid;
}

ina_peer_check_t ina_peer_check(const void *msg, size_t len, ina_peer_hdr_t *out)
{
    uint32_t magic = 0;
    if (msg == nullptr || len < sizeof(magic)) {
        return INA_PEER_CHECK_FOREIGN;
    }
    std::memcpy(&magic, msg, sizeof(magic));
    if (magic != INA_PEER_MAGIC) {
        return INA_PEER_CHECK_FOREIGN;
    }
    if (len <= offsetof(ina_peer_hdr_t, version)) {
        return INA_PEER_CHECK_MALFORMED;
    }
    if (static_cast<const uint8_t *>(msg)[offsetof(ina_peer_hdr_t, version)] != INA_PEER_VERSION) {
        return INA_PEER_CHECK_VERSION; // its layout may differ: read no further
    }
    ina_peer_hdr_t h;
    if (len < sizeof(h)) {
        return INA_PEER_CHECK_MALFORMED;
    }
    std::memcpy(&h, msg, sizeof(h));
    const size_t payload = len - sizeof(h);
    const bool cannot = h.type == INA_PEER_DATA && h.len == INA_PEER_NONE && payload == 0;
    if (h.type < INA_PEER_ASK || h.type > INA_PEER_TYPE_MAX || (!cannot && h.len != payload)) {
        return INA_PEER_CHECK_MALFORMED;
    }
    *out = h;
    return INA_PEER_CHECK_OK;
}

} // extern "C"

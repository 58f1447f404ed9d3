// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Opening a job (ina_job_open): JOB_OPEN by the job's key, the agent's
// JOB_OPENED, and the member's job descriptor.
#include <algorithm>
#include <vector>

#include "ina_capi.h"

namespace {

using namespace ina::client::capi;
using ina::client::Client;


// The window and block a job asks for, clamped to what the agent offers
// (every member computes the same from the same request). False if the
// block leaves nothing.
bool job_shape(const ina_agent_info_t &info, uint32_t requested_window,
               uint32_t requested_block_bytes, uint32_t *window, uint32_t *block)
{
    *window = requested_window == 0 ? info.max_window : std::min(requested_window, info.max_window);
    *block = requested_block_bytes == 0 ? info.seg_bytes
                                        : std::min(requested_block_bytes, info.seg_bytes);
    *block &= ~15u; // every dtype (<= 16 bytes) divides it
    return *block != 0;
}

// The member's descriptor of a job it opened (JOB_OPENED).
int attach_job(Client &c, const ina_job_params_t &params, uint32_t rank, ina_job_t **out)
{
    auto j = std::make_unique<ina_job_t>(&c, params, rank);
    if (!c.attach(&j->impl)) {
        c.log(1, "job %u already joined by this client", params.jid);
        return INA_ERR_INVALID;
    }
    *out = j.release();
    return INA_OK;
}

// JOB_OPEN (`h`, payload) and its reply: the job's parameters in `params`
// when the agent named a job with a usable window.
int job_request(Client &c, ina_proto_hdr_t h, const void *payload, size_t len, uint32_t block,
                ina_job_params_t *params)
{
    ina_proto_hdr_t reply{};
    int rc = c.request(h, payload, len, INA_PROTO_JOB_OPENED, c.progress_timeout_ms(), &reply);
    if (rc != INA_OK) {
        c.log(1, "JOB_OPEN as rank %u failed: %s", h.rank,
              reply.type != 0 ? ina_proto_status_name(reply.status) : "no answer");
        return rc;
    }
    if (reply.jid == 0 || reply.window == 0 || reply.window > h.window) {
        c.log(1, "JOB_OPENED names job %u with an unusable window %u (asked %u)", reply.jid,
              reply.window, h.window);
        return INA_ERR_PROTO;
    }
    params->jid = reply.jid;
    params->window = reply.window;
    params->ahead = std::min<uint32_t>(reply.ahead, reply.window);
    params->block_bytes = block;
    params->nmembers = h.count;
    c.log(10, "job %u (JOB_OPENED): %u members, window %u, block %u bytes", reply.jid, h.count,
          reply.window, block);
    return INA_OK;
}

} // namespace

extern "C" {

ina_status_t ina_job_open(ina_client_t *client, const ina_job_open_params_t *p,
                          ina_job_params_t *params, ina_job_t **out)
{
    if (out != nullptr) {
        *out = nullptr;
    }
    if (client == nullptr || p == nullptr || p->key == nullptr || params == nullptr ||
        out == nullptr || p->node_of_member == nullptr || p->nmembers == 0 ||
        p->nmembers > INA_PROTO_MAX_MEMBERS || p->rank >= p->nmembers ||
        (p->mask & ~uint64_t{INA_JOB_OPEN_SHAPE | INA_JOB_OPEN_TREE | INA_JOB_OPEN_STRIPE}) != 0) {
        return INA_ERR_INVALID;
    }
    const bool tree = (p->mask & INA_JOB_OPEN_TREE) != 0;
    const uint32_t nleaves = tree ? p->nleaves : 0, leaf = tree ? p->leaf : 0;
    const uint32_t nabove = tree ? p->nabove : 0;
    const uint32_t comm_rank = tree ? p->comm_rank : p->rank;
    const uint32_t comm_size = tree ? p->comm_size : p->nmembers;
    const bool goes_up = nleaves > 1 || nabove > 0;
    if ((nleaves == 0 ? leaf != 0 || nabove != 0 : leaf >= nleaves) ||
        nleaves > INA_PROTO_MAX_MEMBERS || nabove > INA_PROTO_MAX_TREE_UP ||
        (nabove > 0 && p->above == nullptr) || comm_size < p->nmembers ||
        comm_rank >= comm_size ||
        (!goes_up && (comm_size != p->nmembers || comm_rank != p->rank))) {
        return INA_ERR_INVALID;
    }
    for (uint32_t i = 0; i < nabove; ++i) {
        if (p->above[i].groups == 0 || p->above[i].groups > INA_PROTO_MAX_MEMBERS ||
            p->above[i].group >= p->above[i].groups) {
            return INA_ERR_INVALID;
        }
    }
    const bool striped = (p->mask & INA_JOB_OPEN_STRIPE) != 0 && p->stripe_width > 1;
    if ((p->mask & INA_JOB_OPEN_STRIPE) != 0 &&
        (p->stripe_width > 0xffffu || (striped && p->stripe_index >= p->stripe_width))) {
        return INA_ERR_INVALID;
    }
    const bool shaped = (p->mask & INA_JOB_OPEN_SHAPE) != 0;
    return static_cast<ina_status_t>(guard(__func__, [&]() -> int {
        Client &c = client->impl;
        EntryLock lock(&c);
        uint32_t window = 0, block = 0;
        if (!job_shape(c.info(), shaped ? p->window : 0, shaped ? p->block_bytes : 0, &window,
                       &block)) {
            return INA_ERR_INVALID;
        }
        const ina_job_key_t &key = *p->key;
        std::vector<uint8_t> payload(key.bytes, key.bytes + INA_PROTO_JOB_KEY_BYTES);
        payload.insert(payload.end(), key.cap, key.cap + INA_PROTO_JOB_CAP_BYTES);
        const auto *ids = reinterpret_cast<const uint8_t *>(p->node_of_member);
        payload.insert(payload.end(), ids, ids + sizeof(uint32_t) * p->nmembers);
        if (nabove > 0) {
            // (an agent of protocol 14 refuses it as MALFORMED: deeper trees
            // need every agent of the tree at 15)
            const auto *up = reinterpret_cast<const uint8_t *>(p->above);
            payload.insert(payload.end(), up, up + sizeof(ina_proto_tree_level_t) * nabove);
        }
        ina_proto_hdr_t h;
        ina_proto_init(&h, INA_PROTO_JOB_OPEN);
        h.rank = p->rank;
        h.count = p->nmembers;
        h.window = static_cast<uint16_t>(window);
        h.arg = c.next_cookie();
        ina_proto_job_open_set_tenant(&h, c.tenant());
        ina_proto_job_open_set_tree(&h, nleaves, leaf);
        ina_proto_job_open_set_stripe(&h, striped ? p->stripe_index : 0,
                                      striped ? p->stripe_width : 0);
        int rc = job_request(c, h, payload.data(), payload.size(), block, params);
        if (rc != INA_OK) {
            return rc;
        }
        params->nmembers = comm_size; // a call's geometry is the communicator's
        rc = attach_job(c, *params, p->rank, out);
        if (rc == INA_OK) {
            (*out)->impl.set_comm_rank(comm_rank);
            (*out)->impl.set_tree(goes_up);
            (*out)->impl.set_peer_tag(ina::client::peer_tag_of(key));
        }
        return rc;
    }));
}

} // extern "C"

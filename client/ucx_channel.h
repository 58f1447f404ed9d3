// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The client engine's channel to an ina-switchd over UCX: its own UCP context
// and worker (separate from MPI's), one endpoint in error mode PEER (a dead
// agent is reported, never waited for), active messages sent eagerly.
#ifndef INA_CLIENT_UCX_CHANNEL_H
#define INA_CLIENT_UCX_CHANNEL_H

#include <memory>
#include <string>

#include "channel.h"
#include "ina_ucx.h"

namespace ina::client {

class UcxChannel final : public Channel {
public:
    // Connect to "host:port". serialized: several threads use the channel,
    // one at a time. Returns INA_OK, or INA_ERR_INVALID (not host:port) /
    // INA_ERR_UNREACHABLE with a one-line reason in err.
    static int open(const std::string &addr, bool serialized, ChannelEvents &events,
                    std::unique_ptr<Channel> &out, std::string &err);
    ~UcxChannel() override;

    bool progress() override;
    Posted post(const ina_proto_hdr_t &hdr, const void *payload, size_t len,
                SendOp *op) override;
    bool arm() override;
    int wake_fd() const override { return efd_; }
    void signal() override;
    bool alive() const override { return ep_ != nullptr && !lost_; }
    void close(bool force) override;
    bool closed() const override;

private:
    explicit UcxChannel(ChannelEvents &events) : events_(events) {}
    UcxChannel(const UcxChannel &) = delete;
    UcxChannel &operator=(const UcxChannel &) = delete;

    static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status);
    static void on_send_done(void *request, ucs_status_t status, void *user_data);
    static ucs_status_t on_am(void *arg, const void *header, size_t header_length, void *data,
                              size_t length, const ucp_am_recv_param_t *param);
    void lose(const std::string &why);

    ChannelEvents &events_;
    // Declared first: destroyed last (the worker needs the context).
    ucx::Context context_;
    ucx::Worker worker_;
    ucp_ep_h ep_ = nullptr;            // closed explicitly (close() or the destructor)
    mutable void *close_req_ = nullptr; // an endpoint close in progress
    int efd_ = -1;                     // owned by the worker
    bool lost_ = false;
};

} // namespace ina::client

#endif

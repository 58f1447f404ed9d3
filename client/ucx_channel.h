// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The client engine's channel to an ina-switchd over UCX: its own UCP context
// and worker (separate from MPI's), one endpoint in error mode PEER (a dead
// agent is reported, never waited for), active messages sent eagerly, or by
// rendezvous above the size the agent asked for in HELLO_ACK; rendezvous
// messages from the agent land where the owner says (on_rndv) or in a
// buffer of the channel's.
#ifndef INA_CLIENT_UCX_CHANNEL_H
#define INA_CLIENT_UCX_CHANNEL_H

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

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
    void set_rndv_bytes(size_t bytes) override { rndv_bytes_ = bytes; }
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

    // One rendezvous receive: into `dst` (the owner's) or into `scratch`.
    struct Landing {
        UcxChannel *ch = nullptr;
        ina_proto_hdr_t hdr{};
        void *dst = nullptr; // null: scratch
        size_t len = 0;
        std::vector<std::byte> scratch;
    };
    void land(const ina_proto_hdr_t &h, void *desc, size_t len);
    void landed(Landing *l, bool ok);
    static void on_recv_done(void *request, ucs_status_t status, size_t length,
                             void *user_data);

    ChannelEvents &events_;
    // Declared first: destroyed last (the worker needs the context).
    ucx::Context context_;
    ucx::Worker worker_;
    ucp_ep_h ep_ = nullptr;            // closed explicitly (close() or the destructor)
    mutable void *close_req_ = nullptr; // an endpoint close in progress
    int efd_ = -1;                     // owned by the worker
    bool lost_ = false;
    size_t rndv_bytes_ = 0; // send by rendezvous from this size on (0: never)
    std::vector<std::unique_ptr<Landing>> landings_; // owns every Landing
    std::vector<Landing *> landing_free_;
    size_t landing_ = 0; // receives in flight
};

} // namespace ina::client

#endif

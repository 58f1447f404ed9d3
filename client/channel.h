// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The client engine's link to one aggregation level: post a message, progress,
// sleep on a wake-up fd. The engine (Client, Job, Call) knows only this
// interface; UcxChannel (ucx_channel.cpp) is the link to an ina-switchd. A
// shared-memory link inside a node, or an agent's uplink to its parent, is
// another implementation of the same three verbs.
//
// Every callback (ChannelEvents, SendOp::done) runs inside progress() or
// close(), on the thread that called it, never concurrently with another.
#ifndef INA_CLIENT_CHANNEL_H
#define INA_CLIENT_CHANNEL_H

#include <cstddef>

#include "ina_proto.h"

namespace ina::client {

// What a channel reports to its owner.
class ChannelEvents {
public:
    virtual ~ChannelEvents() = default;
    // A message passed ina_proto_check; data is valid during the call only.
    virtual void on_message(const ina_proto_hdr_t &h, const void *data, size_t len) = 0;
    // The link failed (peer died, connection reset): nothing more arrives,
    // and pending sends complete with ok == false.
    virtual void on_lost(const char *why) = 0;
    // A message was dropped (malformed, or not for a client): why, for the log.
    virtual void on_dropped(const char *why) = 0;

    // Rendezvous: a message whose header passed ina_proto_check and whose
    // `len` payload bytes are still at the sender. Return where they should
    // land when the owner has their final place (a RESULT straight into the
    // user's buffer; on_landed follows, exactly once), or null: the channel
    // lands them in a buffer of its own and then calls on_message.
    virtual void *on_rndv(const ina_proto_hdr_t &h, size_t len)
    {
        (void) h;
        (void) len;
        return nullptr;
    }
    // What on_rndv placed at `dst` has landed (ok), or never will (!ok).
    virtual void on_landed(const ina_proto_hdr_t &h, void *dst, size_t len, bool ok)
    {
        (void) h;
        (void) dst;
        (void) len;
        (void) ok;
    }
};

// One send in flight: the header and payload must stay valid until done()
// is called (the link may read them until then).
class SendOp {
public:
    virtual void done(bool ok) = 0;

protected:
    ~SendOp() = default;
};

class Channel {
public:
    enum class Posted {
        done,    // sent (buffers are free again); done() will not be called
        pending, // op->done(ok) is called later, from progress() or close()
        failed   // not sent; done() will not be called
    };

    virtual ~Channel() = default;

    // Deliver what is pending (messages, send completions, loss) without
    // blocking. Returns whether anything happened.
    virtual bool progress() = 0;
    virtual Posted post(const ina_proto_hdr_t &hdr, const void *payload, size_t len,
                        SendOp *op) = 0;
    // From the handshake on: payloads of at least `bytes` go by rendezvous,
    // the peer fetching them where they belong (0: everything eager). A link
    // without rendezvous ignores it.
    virtual void set_rndv_bytes(size_t bytes) { (void) bytes; }

    // Sleeping: arm() returns false when events are already pending (progress
    // again); true when a poll() on wake_fd() will wake at the next one.
    virtual bool arm() = 0;
    virtual int wake_fd() const = 0;
    // Wake a thread asleep on wake_fd(); the only thread-safe verb.
    virtual void signal() = 0;

    virtual bool alive() const = 0;
    // Start closing (force: drop what is queued; every pending send then
    // completes with ok == false). closed() tells when the link is gone.
    virtual void close(bool force) = 0;
    virtual bool closed() const = 0;
};

} // namespace ina::client

#endif

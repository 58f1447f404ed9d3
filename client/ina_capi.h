// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The C API's handles and what every entry point shares (inside client/
// only): the C structs that hold the engine's objects, guard() (no C++
// exception crosses the C API) and EntryLock (the client's mutex for the
// length of an entry). ina_capi.cpp, ina_job_open.cpp use it.
#ifndef INA_CLIENT_CAPI_H
#define INA_CLIENT_CAPI_H

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <new>

#include "ina_engine.h"

struct ina_client {
    explicit ina_client(const ina_client_config_t &cfg) : impl(cfg) {}
    ina::client::Client impl;
};

struct ina_job {
    ina_job(ina::client::Client *c, const ina_job_params_t &p, uint32_t rank) : impl(c, p, rank)
    {
    }
    ina::client::Job impl;
    uint8_t deny_status = 0; // ina_job_deny_status
};

namespace ina::client::capi {

template <typename F> int guard(const char *where, F &&body) noexcept
{
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return INA_ERR_NOMEM;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "ina-client[%d]: %s: unexpected exception: %s\n",
                     static_cast<int>(getpid()), where, e.what());
        return INA_ERR_INVALID;
    }
}

// Every entry point holds the client's mutex while it uses the engine: the
// progress thread may run beside the caller (once per entry, never per block).
// A job whose client went away has no thread left: nothing to lock.
class EntryLock {
public:
    explicit EntryLock(Client *c) : client_(c)
    {
        if (c != nullptr) {
            lock_ = std::unique_lock<std::mutex>(c->mutex());
        }
    }
    // On the way out of the caller's entry, the recovery messages the
    // progress thread composed go out (Client::on_progress_thread).
    ~EntryLock()
    {
        if (client_ != nullptr && client_->peers_waiting()) {
            client_->flush_peers();
        }
    }
    EntryLock(const EntryLock &) = delete;
    EntryLock &operator=(const EntryLock &) = delete;

private:
    Client *client_;
    std::unique_lock<std::mutex> lock_;
};

} // namespace ina::client::capi

#endif

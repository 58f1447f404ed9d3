// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The client engine's C API (ina_client.h): connecting, the calls of a
// job, recovery entry points. Every body runs in guard(), under the
// client's EntryLock. Opening a job is in ina_job_open.cpp, the job key in
// ina_job_key.cpp.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "ina_capi.h"

// No C++ exception crosses these functions: each body runs in guard(),
// which turns std::bad_alloc into INA_ERR_NOMEM and anything else into
// INA_ERR_INVALID (logged: it is a bug).

namespace {

using namespace ina::client::capi;
using ina::client::Call;
using ina::client::Client;

// ina_call_wait with the lock held.
int wait_locked(ina_call_t *call, ina_cqe_t *cqe)
{
    Client *c = call->job()->client();
    if (c != nullptr) {
        c->wait([call] { return call->state() == Call::State::retired; });
    }
    // An orphaned job retires its calls when its client goes away.
    *cqe = call->cqe();
    return cqe->rc;
}

ina_cqe_t invalid_cqe()
{
    ina_cqe_t cqe{};
    cqe.rc = INA_ERR_INVALID;
    return cqe;
}

// ina_call_test and ina_call_decision: progress the client once if the call
// is outstanding, then report(call, cqe) says whether what was asked is
// known (1, cqe filled) or not (0). A freed call and an engine failure are
// reported as known, with the error.
template <typename Report>
int poll_call(const char *where, ina_call_t *call, ina_cqe_t *cqe, Report report)
{
    if (call == nullptr || call->state() == Call::State::free) {
        if (cqe != nullptr) { // programming error: report it rather than spin
            *cqe = invalid_cqe();
        }
        return 1;
    }
    int rc = guard(where, [&] {
        EntryLock lock(call->job()->client());
        if (call->state() == Call::State::active) {
            if (Client *c = call->job()->client()) {
                c->progress();
            }
        }
        return report(static_cast<Call &>(*call), cqe);
    });
    if (rc < 0) { // the engine failed: the call ends with that error
        if (cqe != nullptr) {
            *cqe = call->cqe();
            cqe->rc = static_cast<ina_status_t>(rc);
        }
        return 1;
    }
    return rc;
}

// The body every post entry shares (ina_job_post, ina_job_post_plan,
// ina_job_post_staged): check the handles, run `post(cqe)` under the
// client's lock, and report its outcome and any DENY status.
template <typename Post>
ina_status_t post_entry(const char *fn, ina_job_t *job, bool what_ok, ina_call_t **call,
                        ina_outcome_t *outcome, Post post)
{
    if (call != nullptr) {
        *call = nullptr;
    }
    if (outcome != nullptr) {
        *outcome = INA_OFFLOADED;
    }
    if (job == nullptr || !what_ok || call == nullptr || outcome == nullptr) {
        return INA_ERR_INVALID;
    }
    return static_cast<ina_status_t>(guard(fn, [&] {
        EntryLock lock(job->impl.client());
        ina_cqe_t cqe;
        int rc = post(&cqe);
        *outcome = cqe.outcome;
        job->deny_status = cqe.outcome == INA_FALLBACK_DENIED ? cqe.status : 0;
        return rc;
    }));
}

} // namespace

int ina::client::connect_over(const ina_client_config_t &cfg, const Client::ChannelFactory &open,
                              const std::string &peer, ina_client_t **out, std::string &err)
{
    *out = nullptr;
    return guard(__func__, [&] {
        auto c = std::make_unique<ina_client_t>(cfg);
        int r = c->impl.start(open, peer, err);
        if (r == INA_OK) {
            *out = c.release();
        }
        return r;
    });
}

extern "C" {

ina_status_t ina_client_connect(const ina_client_config_t *cfg, ina_client_t **out, char *err,
                                size_t errlen)
{
    if (out != nullptr) {
        *out = nullptr;
    }
    std::string why;
    const int rc = guard(__func__, [&] {
        if (cfg == nullptr || out == nullptr || cfg->agent_addr == nullptr) {
            why = "ina_client_connect: missing argument";
            return static_cast<int>(INA_ERR_INVALID);
        }
        auto c = std::make_unique<ina_client_t>(*cfg);
        int r = c->impl.connect(cfg->agent_addr, why);
        if (r == INA_OK) {
            *out = c.release();
        }
        return r;
    });
    if (rc == INA_ERR_NOMEM && why.empty()) {
        why = "out of memory";
    }
    if (rc != INA_OK && err != nullptr && errlen > 0) {
        std::snprintf(err, errlen, "%s", why.c_str());
    }
    return static_cast<ina_status_t>(rc);
}

void ina_client_disconnect(ina_client_t *client)
{
    // Orphans jobs still joined, closes the channel; the destructor does not throw.
    delete client;
}

void ina_client_agent_info(const ina_client_t *client, ina_agent_info_t *info)
{
    *info = client->impl.info();
}

int ina_client_alive(const ina_client_t *client)
{
    if (client == nullptr) {
        return 0;
    }
    Client &c = const_cast<ina_client_t *>(client)->impl;
    EntryLock lock(&c);
    return c.alive();
}

int ina_client_progress(ina_client_t *client)
{
    if (client == nullptr) {
        return 0;
    }
    guard(__func__, [&] {
        EntryLock lock(&client->impl);
        client->impl.progress();
        return 0;
    });
    return ina_client_alive(client);
}

void ina_job_set_groups(ina_job_t *job, const uint32_t *group_of_member, uint32_t n,
                        uint32_t levels)
{
    if (job == nullptr || group_of_member == nullptr) {
        return;
    }
    guard(__func__, [&] {
        EntryLock lock(job->impl.client());
        job->impl.set_groups(group_of_member, n, levels);
        return 0;
    });
}

uint64_t ina_job_certified(const ina_job_t *job)
{
    if (job == nullptr) {
        return 0;
    }
    EntryLock lock(job->impl.client());
    return job->impl.certified();
}

int ina_job_has_peers(const ina_job_t *job)
{
    return job != nullptr && job->impl.has_peers() ? 1 : 0;
}

int ina_job_reachable(ina_job_t *job)
{
    Client *client = job != nullptr ? job->impl.client() : nullptr;
    if (client == nullptr) {
        return 0;
    }
    return guard(__func__, [&] {
               EntryLock lock(client);
               client->progress();
               return client->alive() ? 1 : 0;
           }) == 1
               ? 1
               : 0;
}

void ina_job_keep_blocks(ina_job_t *job, int on)
{
    if (job != nullptr) {
        EntryLock lock(job->impl.client());
        job->impl.set_keeps(on != 0);
    }
}

size_t ina_job_kept_calls(const ina_job_t *job, size_t *bytes)
{
    if (job == nullptr) {
        return 0;
    }
    EntryLock lock(job->impl.client());
    if (bytes != nullptr) {
        *bytes = job->impl.kept_bytes();
    }
    return job->impl.kept_calls();
}

void ina_job_peer_flush(ina_job_t *job)
{
    Client *c = job != nullptr ? job->impl.client() : nullptr;
    if (c != nullptr && c->peers_waiting()) {
        guard(__func__, [&] {
            EntryLock lock(c); // its end sends them
            return 0;
        });
    }
}

void ina_job_set_peers(ina_job_t *job, const ina_peer_ops_t *ops)
{
    if (job != nullptr && ops != nullptr && ops->send != nullptr) {
        EntryLock lock(job->impl.client());
        job->impl.set_peers(*ops);
    }
}

int ina_job_peer_message(ina_job_t *job, uint32_t from, const void *msg, size_t len)
{
    if (job == nullptr || msg == nullptr) {
        return 0;
    }
    return guard(__func__, [&] {
               EntryLock lock(job->impl.client());
               return job->impl.peer_message(from, msg, len) ? 1 : 0;
           }) == 1
               ? 1
               : 0;
}

int ina_peer_answer_absent(const ina_job_key_t *key, const ina_peer_ops_t *ops, uint32_t from,
                           const void *msg, size_t len)
{
    if (key == nullptr || ops == nullptr || ops->send == nullptr || msg == nullptr) {
        return 0;
    }
    return guard(__func__, [&] {
               return ina::client::answer_absent(ina::client::peer_tag_of(*key), *ops, from, msg,
                                                 len)
                          ? 1
                          : 0;
           }) == 1
               ? 1
               : 0;
}

ina_status_t ina_call_recover_start(ina_call_t *call, int host_ok)
{
    if (call == nullptr) {
        return INA_ERR_INVALID;
    }
    return static_cast<ina_status_t>(guard(__func__, [&] {
        EntryLock lock(call->job()->client());
        return call->recover_start(host_ok != 0);
    }));
}

int ina_call_recover_test(ina_call_t *call, ina_cqe_t *cqe)
{
    if (call == nullptr || cqe == nullptr) {
        return 0;
    }
    const int rc = guard(__func__, [&] {
        EntryLock lock(call->job()->client());
        return call->recover_test(cqe) ? 1 : 0;
    });
    if (rc < 0) { // out of memory in a staged call's recovery: it fails
        *cqe = call->cqe();
        cqe->rc = static_cast<ina_status_t>(rc);
        return 1;
    }
    return rc;
}

int ina_call_recover_decision(ina_call_t *call, ina_cqe_t *cqe)
{
    if (call == nullptr || cqe == nullptr) {
        return 0;
    }
    const int rc = guard(__func__, [&] {
        EntryLock lock(call->job()->client());
        ina_cqe_t done;
        (void) call->recover_test(&done); // progresses a staged call's recovery
        return call->recover_decision(cqe) ? 1 : 0;
    });
    if (rc < 0) {
        *cqe = call->cqe();
        cqe->rc = static_cast<ina_status_t>(rc);
        return 1;
    }
    return rc;
}

void ina_job_leave(ina_job_t *job)
{
    if (job == nullptr) {
        return;
    }
    guard(__func__, [&] {
        EntryLock lock(job->impl.client());
        job->impl.leave();
        return 0;
    });
    EntryLock lock(job->impl.client());
    delete job; // detaches from the client: still under the lock
}

ina_status_t ina_job_post(ina_job_t *job, const ina_coll_desc_t *desc, ina_call_t **call,
                          ina_outcome_t *outcome)
{
    return post_entry(__func__, job, desc != nullptr, call, outcome,
                      [&](ina_cqe_t *cqe) { return job->impl.post(*desc, true, call, cqe); });
}

ina_status_t ina_job_plan(ina_job_t *job, const ina_coll_desc_t *desc, ina_call_plan_t **plan)
{
    if (plan != nullptr) {
        *plan = nullptr;
    }
    if (job == nullptr || desc == nullptr || plan == nullptr) {
        return INA_ERR_INVALID;
    }
    return static_cast<ina_status_t>(guard(__func__, [&] {
        auto p = std::make_unique<ina_call_plan>();
        EntryLock lock(job->impl.client());
        const int rc = job->impl.plan(*desc, *p);
        if (rc == INA_OK) {
            *plan = p.release();
        }
        return rc;
    }));
}

ina_status_t ina_job_post_plan(ina_job_t *job, ina_call_plan_t *plan, ina_call_t **call,
                               ina_outcome_t *outcome)
{
    return post_entry(__func__, job, plan != nullptr, call, outcome,
                      [&](ina_cqe_t *cqe) { return job->impl.post(*plan, true, call, cqe); });
}

void ina_call_plan_free(ina_call_plan_t *plan)
{
    delete plan;
}

uint8_t ina_job_deny_status(const ina_job_t *job)
{
    return job != nullptr ? job->deny_status : 0;
}

int ina_job_host_cost(ina_job_t *job, uint64_t ns)
{
    if (job == nullptr) {
        return INA_ERR_INVALID;
    }
    return guard(__func__, [&] {
        EntryLock lock(job->impl.client());
        return job->impl.host_cost(ns);
    });
}

int ina_job_call_time(ina_job_t *job, uint64_t ns)
{
    if (job == nullptr) {
        return INA_ERR_INVALID;
    }
    return guard(__func__, [&] {
        EntryLock lock(job->impl.client());
        return job->impl.call_time(ns);
    });
}

ina_status_t ina_job_post_staged(ina_job_t *job, const ina_staged_desc_t *desc,
                                 ina_call_t **call, ina_outcome_t *outcome)
{
    return post_entry(__func__, job, desc != nullptr, call, outcome,
                      [&](ina_cqe_t *cqe) { return job->impl.post_staged(*desc, call, cqe); });
}

int ina_call_decision(ina_call_t *call, ina_cqe_t *cqe)
{
    return poll_call(__func__, call, cqe, [](Call &c, ina_cqe_t *out) {
        if (c.state() == Call::State::retired) {
            if (out != nullptr) {
                *out = c.cqe();
            }
            return 1;
        }
        if (!c.decided()) {
            return 0;
        }
        if (out != nullptr) {
            *out = c.decision_cqe();
        }
        return 1;
    });
}

void ina_call_background(ina_call_t *call)
{
    if (call == nullptr) {
        return;
    }
    Client *c = call->job()->client();
    if (c == nullptr || !c->has_thread()) {
        return; // nobody to hand it to: it moves when the caller polls
    }
    EntryLock lock(c);
    if (call->state() == Call::State::active) {
        call->set_background();
        c->wake_thread();
    }
}

void ina_call_abort(ina_call_t *call)
{
    if (call == nullptr || call->state() == Call::State::free) {
        return;
    }
    ina::client::Job *job = call->job();
    guard(__func__, [&] {
        EntryLock lock(job->client());
        job->abort(call);
        return 0;
    });
}

int ina_call_test(ina_call_t *call, ina_cqe_t *cqe)
{
    return poll_call(__func__, call, cqe, [](Call &c, ina_cqe_t *out) {
        if (c.state() != Call::State::retired) {
            return 0;
        }
        if (out != nullptr) {
            *out = c.cqe();
        }
        return 1;
    });
}

ina_status_t ina_call_wait(ina_call_t *call, ina_cqe_t *cqe)
{
    ina_cqe_t local;
    if (cqe == nullptr) {
        cqe = &local;
    }
    if (call == nullptr || call->state() == Call::State::free) {
        *cqe = invalid_cqe();
        return cqe->rc;
    }
    int rc = guard(__func__, [&] {
        EntryLock lock(call->job()->client());
        return wait_locked(call, cqe);
    });
    return cqe->rc = static_cast<ina_status_t>(rc);
}

void ina_call_free(ina_call_t *call)
{
    if (call == nullptr) {
        return;
    }
    ina::client::Job *job = call->job();
    guard(__func__, [&] {
        EntryLock lock(job->client());
        if (call->state() == Call::State::active && job->client() != nullptr) {
            // A programming error: the buffers are still the engine's. Finish
            // the call first so that nothing writes into them after this returns.
            job->client()->log(0, "job %u: call of mid %llu freed before completion "
                                  "(a bug in the caller); completing it first",
                               job->jid(), static_cast<unsigned long long>(call->mid()));
            ina_cqe_t cqe;
            wait_locked(call, &cqe);
        }
        job->release(call);
        return 0;
    });
}

ina_status_t ina_job_run(ina_job_t *job, const ina_coll_desc_t *desc, ina_cqe_t *cqe)
{
    ina_cqe_t local;
    if (cqe == nullptr) {
        cqe = &local;
    }
    *cqe = ina_cqe_t{};
    if (job == nullptr || desc == nullptr) {
        *cqe = invalid_cqe();
        return cqe->rc;
    }
    int rc = guard(__func__, [&] {
        // One lock for the whole call: the progress thread stays out of the
        // blocking path (this call progresses every other call meanwhile).
        EntryLock lock(job->impl.client());
        ina_call_t *call = nullptr;
        int r = job->impl.post(*desc, false, &call, cqe);
        if (r != INA_OK || call == nullptr) {
            return r;
        }
        wait_locked(call, cqe);
        job->impl.release(call);
        return static_cast<int>(cqe->rc);
    });
    return cqe->rc = static_cast<ina_status_t>(rc);
}

ina_status_t ina_job_allreduce(ina_job_t *job, const void *sbuf, void *rbuf, uint64_t count,
                               unsigned dtype, unsigned op, ina_cqe_t *cqe)
{
    ina_coll_desc_t d{};
    d.coll = INA_COLL_ALLREDUCE;
    d.op = op;
    d.dtype = dtype;
    d.sbuf = sbuf;
    d.rbuf = rbuf;
    d.count = count;
    return ina_job_run(job, &d, cqe);
}

} // extern "C"

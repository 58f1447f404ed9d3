/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * Recovering calls lost with their agent (docs/ARCHITECTURE.md, "Recovery
 * from a lost agent"): the link the engine's exchange runs over (the
 * team's peers, team/ina_team.h), on Open MPI's point-to-point layer. Each flat communicator's members talk on one
 * tag of ina's own; messages are received with improbe/imrecv from a
 * progress callback, so a member that already finished the call (or is in
 * a later one, or in a host collective, or in a point-to-point wait) still
 * answers the others whenever it is in the MPI library.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/message/message.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"

#include "coll_ina.h"

/* The tag of the ranks' recovery messages, on the communicator itself.
 * Negative, so no receive of the application matches it (MPI_ANY_TAG
 * included), and outside every range Open MPI's coll_tags.h reserves (4.1
 * from -10, 5.0 from -7, down to -INT_MAX, the last part hcoll's; MPI_ANY_TAG
 * is -1).
 * Small, because a PML may keep only the low bits of a tag: pml/ucx keeps
 * 24, where -3 is still -3, but -INT_MAX (the value used before) reads as
 * tag 1, so the application's messages of tag 1 met the recovery's
 * receives and the other way round. */
#define INA_TAG_RECOVERY (-3)
_Static_assert(INA_TAG_RECOVERY < MPI_ANY_TAG && INA_TAG_RECOVERY > MCA_COLL_BASE_TAG_ALLGATHER,
               "the recovery tag must stay outside the collective tags");

/* One message this process sent or is receiving. */
typedef struct ina_peer_io {
    ompi_request_t *req;
    void *buf;
    size_t len;
    int from;
    struct ina_peer_io *next;
} ina_peer_io_t;

static mca_coll_ina_module_t **ina_peer_modules;
static int ina_npeer_modules, ina_peer_cap;
static bool ina_peer_registered;
/* Messages come only once the agent is lost: until this process knows it
 * is (or sends a recovery message itself), the progress callback only asks
 * the agent's connection now and then (a probe per communicator on every
 * opal_progress would cost every MPI call of the job). */
static bool ina_agent_lost;
#define INA_LOSS_CHECK_EVERY 256

static int ina_peer_send_rank(mca_coll_ina_module_t *m, int to, const void *msg, size_t len);

/* Member `to` of the job: rank `to`, or with the node uplink the leader of
 * this rank's stream on node `to` (every rank of that node until known). */
static int ina_peer_send(void *arg, uint32_t to, const void *msg, size_t len)
{
    mca_coll_ina_module_t *m = arg;
    int r, rc = -1;

    if (!m->node_uplink) {
        return ina_peer_send_rank(m, (int) to, msg, len);
    }
    if (to < (uint32_t) m->nnodes && m->peer_leader[to] >= 0) {
        return ina_peer_send_rank(m, m->peer_leader[to], msg, len);
    }
    for (r = 0; r < m->size; ++r) {
        if (m->node_of[r] == to && r != m->rank) {
            rc = ina_peer_send_rank(m, r, msg, len) == 0 ? 0 : -1;
            if (0 != rc) {
                return rc;
            }
        }
    }
    return rc;
}

static int ina_peer_send_rank(mca_coll_ina_module_t *m, int to, const void *msg, size_t len)
{
    ina_peer_io_t *io = calloc(1, sizeof(*io));
    int rc;

    if (NULL == io || NULL == (io->buf = malloc(len > 0 ? len : 1))) {
        free(io);
        return -1;
    }
    memcpy(io->buf, msg, len);
    io->len = len;
    /* A recovery is under way: answer the others at every progress now. */
    ina_agent_lost = true;
    rc = MCA_PML_CALL(isend(io->buf, len, MPI_BYTE, to, INA_TAG_RECOVERY,
                            MCA_PML_BASE_SEND_STANDARD, m->comm, &io->req));
    if (OMPI_SUCCESS != rc) {
        free(io->buf);
        free(io);
        return -1;
    }
    io->next = m->peer_sends;
    m->peer_sends = io;
    return 0;
}

/* Free completed sends; deliver completed receives; match new ones. */
static int ina_peer_poll(mca_coll_ina_module_t *m)
{
    ina_peer_io_t **p = &m->peer_sends, *io;
    int flag = 0, events = 0;

    /* What the engine's progress thread composed goes out from here. */
    ina_team_peer_flush(m->team);

    while (NULL != (io = *p)) {
        if (REQUEST_COMPLETE(io->req)) {
            *p = io->next;
            ompi_request_free(&io->req);
            free(io->buf);
            free(io);
        } else {
            p = &io->next;
        }
    }
    for (;;) {
        ompi_message_t *msg = NULL;
        ompi_status_public_t st;
        size_t bytes = 0;

        flag = 0;
        if (OMPI_SUCCESS != MCA_PML_CALL(improbe(MPI_ANY_SOURCE, INA_TAG_RECOVERY, m->comm,
                                                 &flag, &msg, &st)) ||
            !flag) {
            break;
        }
        io = calloc(1, sizeof(*io));
        bytes = st._ucount;
        if (NULL == io || NULL == (io->buf = malloc(bytes > 0 ? bytes : 1))) {
            /* Cannot take it now: it stays matched to nobody; the sender's
             * recovery times out on its own progress (an MPI error). */
            free(io);
            break;
        }
        io->len = bytes;
        io->from = st.MPI_SOURCE;
        if (OMPI_SUCCESS != MCA_PML_CALL(imrecv(io->buf, bytes, MPI_BYTE, &msg, &io->req))) {
            free(io->buf);
            free(io);
            break;
        }
        io->next = m->peer_recvs;
        m->peer_recvs = io;
    }
    p = &m->peer_recvs;
    while (NULL != (io = *p)) {
        if (REQUEST_COMPLETE(io->req)) {
            uint32_t from = (uint32_t) io->from;
            *p = io->next;
            ompi_request_free(&io->req);
            if (m->node_uplink) {
                from = m->node_of[io->from]; /* only leaders send */
            }
            if (ina_team_peer_message(m->team, from, io->buf, io->len) && m->node_uplink) {
                /* A message of our stream's job: its sender leads it there. */
                m->peer_leader[from] = io->from;
            }
            free(io->buf);
            free(io);
            ++events;
        } else {
            p = &io->next;
        }
    }
    return events;
}

/* Whether the agent of every communicator with recovery is still there
 * (progresses each connection once: a loss the engine's thread has not
 * seen yet shows). A communicator that resumed on a new connection counts
 * as alive; one still on a lost connection does not. */
static bool ina_agents_alive(void)
{
    int i;

    for (i = 0; i < ina_npeer_modules; ++i) {
        mca_coll_ina_module_t *m = ina_peer_modules[i];
        if (!ina_team_reachable(m->team)) {
            return false;
        }
    }
    return true;
}

static int ina_peers_progress(void)
{
    static bool busy = false;
    static unsigned ticks = 0;
    int i, events = 0;

    if (busy) {
        return 0; /* a probe or a delivery's sends progress the PML again */
    }
    if (!ina_agent_lost) {
        if (0 != ++ticks % INA_LOSS_CHECK_EVERY) {
            return 0;
        }
        busy = true;
        ina_agent_lost = !ina_agents_alive();
        if (!ina_agent_lost) {
            /* Our agents are all there, but another member's may not be (a
             * tree's other leaf), and ranks that lead no stream still take
             * (and drop) what leaders of other nodes send them: a look now
             * and then; once something came, one at every progress. */
            for (i = 0; i < ina_npeer_modules; ++i) {
                events += ina_peer_poll(ina_peer_modules[i]);
            }
            busy = false;
            if (events > 0) {
                ina_agent_lost = true;
                INA_VERBOSE(5, "another rank is recovering a call: answering it from now on");
            }
            return events;
        }
        busy = false;
        INA_VERBOSE(5, "the agent is lost: answering the other ranks' recoveries from now on");
    }
    busy = true;
    for (i = 0; i < ina_npeer_modules; ++i) {
        events += ina_peer_poll(ina_peer_modules[i]);
    }
    busy = false;
    return events;
}

/* A striped post waiting for a lost part's recovery: the PML (and this
 * file's progress callback with it) must move. */
static void ina_stripe_progress(void *arg)
{
    (void) arg;
    ina_agent_lost = true;
    opal_progress();
}

void mca_coll_ina_peers_join(mca_coll_ina_module_t *m, ina_team_join_t *join)
{
    if (!mca_coll_ina_component.recover || mca_coll_ina_component.required ||
        (0 == (join->mask & (INA_TEAM_JOB | INA_TEAM_STRIPE | INA_TEAM_OPEN | INA_TEAM_ABSENT)) &&
         !m->node_uplink)) {
        return; /* coll_ina_required: a lost agent is an error, as it says */
    }
    if (m->node_uplink) {
        int j;
        m->peer_leader = malloc(sizeof(*m->peer_leader) * (size_t) m->nnodes);
        if (NULL == m->peer_leader) {
            return; /* no recovery for this communicator */
        }
        for (j = 0; j < m->nnodes; ++j) {
            m->peer_leader[j] = -1;
        }
    }
    if (ina_npeer_modules == ina_peer_cap) {
        int cap = 0 == ina_peer_cap ? 16 : 2 * ina_peer_cap;
        mca_coll_ina_module_t **grown = realloc(ina_peer_modules, sizeof(*grown) * (size_t) cap);
        if (NULL == grown) {
            free(m->peer_leader); /* no recovery for this communicator: an error */
            m->peer_leader = NULL;
            return;
        }
        ina_peer_modules = grown;
        ina_peer_cap = cap;
    }
    if (!ina_peer_registered) {
        if (OPAL_SUCCESS != opal_progress_register(ina_peers_progress)) {
            free(m->peer_leader);
            m->peer_leader = NULL;
            return;
        }
        ina_peer_registered = true;
    }
    ina_peer_modules[ina_npeer_modules++] = m;
    join->mask |= INA_TEAM_PEERS;
    join->peers.arg = m;
    join->peers.send = ina_peer_send;
    /* A node's streams share the tag: the stream tells them apart. */
    join->peers.channel = m->node_uplink && m->stream >= 0 ? (uint32_t) m->stream : 0;
    join->progress = ina_stripe_progress;
    join->progress_arg = NULL;
    m->peers = true;
}

void mca_coll_ina_peers_fini(mca_coll_ina_module_t *m)
{
    ina_peer_io_t *io;
    int i;

    if (!m->peers) {
        return;
    }
    /* Out of the progress callback's list first: the communicator is on its
     * way out, nothing may probe it any more. */
    for (i = 0; i < ina_npeer_modules; ++i) {
        if (ina_peer_modules[i] == m) {
            ina_peer_modules[i] = ina_peer_modules[--ina_npeer_modules];
            break;
        }
    }
    while (NULL != (io = m->peer_recvs)) {
        /* Matched already: wait for its bytes (they are on their way). */
        m->peer_recvs = io->next;
        ompi_request_wait(&io->req, MPI_STATUS_IGNORE);
        free(io->buf);
        free(io);
    }
    while (NULL != (io = m->peer_sends)) {
        m->peer_sends = io->next;
        if (REQUEST_COMPLETE(io->req)) {
            ompi_request_free(&io->req);
            free(io->buf);
        } else {
            /* MPI lets a send request go before it completes; its buffer
             * must outlive it (a few bytes, once per lost agent). */
            ompi_request_free(&io->req);
        }
        free(io);
    }
    free(m->peer_leader);
    m->peer_leader = NULL;
    if (0 == ina_npeer_modules && ina_peer_registered) {
        opal_progress_unregister(ina_peers_progress);
        ina_peer_registered = false;
        free(ina_peer_modules);
        ina_peer_modules = NULL;
        ina_peer_cap = 0;
    }
    m->peers = false;
}

void mca_coll_ina_agent_lost(mca_coll_ina_module_t *m)
{
    if (m->agent_lost) {
        return;
    }
    m->agent_lost = true;
    m->resume_every = (uint32_t) mca_coll_ina_component.resume_interval;
    m->resume_in = m->resume_every;
    INA_VERBOSE(5, "cid %d: the agent is lost: host algorithms from now on%s", m->cid,
                m->resume_every > 0 ? "; will check for it again" : "");
}

/* Whether a non-blocking call of this communicator is still in flight. */
static bool ina_calls_in_flight(mca_coll_ina_module_t *m)
{
    mca_coll_ina_req_t *req;

    OPAL_LIST_FOREACH(req, &mca_coll_ina_component.outstanding, mca_coll_ina_req_t) {
        if (req->module == m) {
            return true;
        }
    }
    return false;
}

bool mca_coll_ina_resume(mca_coll_ina_module_t *m, bool blocking)
{
    const uint32_t cap = 32u * (uint32_t) mca_coll_ina_component.resume_interval;
    int word[2], mine, rc, alt;

    if (0 == m->resume_every) {
        return false; /* coll_ina_resume_interval 0 */
    }
    if (m->resume_in > 0) {
        --m->resume_in;
    }
    if (m->resume_in > 0 || !blocking) {
        return false; /* a non-blocking call may not wait for the others */
    }
    /* Each member's word: the alternative of the agent it reaches, if it
     * has no call of the lost job in flight (whose recovery still needs
     * it); the same on every member, or no resume. */
    if (m->node_uplink && m->stream < 0) {
        /* Leads no stream: says nothing about the agents (never talks to
         * them), only whether a call is still in flight. */
        mine = ina_calls_in_flight(m) ? -1 : INT_MIN;
    } else if (ina_calls_in_flight(m)) {
        mine = -1;
    } else if (m->nagents > 1 && !m->node_uplink) {
        /* Striped: every agent, all at the same alternative of their
         * entries (the agents, or all their standbys). */
        uint32_t k;
        mine = mca_coll_ina_agent_reach(0);
        for (k = 1; k < m->nagents && mine >= 0; ++k) {
            mine = mca_coll_ina_agent_reach(k) == mine ? mine : -1;
        }
    } else {
        const uint32_t slot = m->node_uplink && mca_coll_ina_component.nagents > 0
                                  ? (uint32_t) m->stream % mca_coll_ina_component.nagents
                                  : 0;
        mine = mca_coll_ina_agent_reach(slot);
    }
    word[0] = INT_MIN == mine ? INT_MIN : mine < 0 ? INT_MAX : mine;
    word[1] = INT_MIN == mine ? INT_MIN : -word[0];
    ++m->in_fallback;
    rc = m->previous_allreduce(MPI_IN_PLACE, word, 2, MPI_INT, MPI_MAX, m->comm,
                               m->previous_allreduce_module);
    --m->in_fallback;
    if (OMPI_SUCCESS != rc) {
        m->resume_every = 0; /* the host's own allreduce failed: ask no more */
        return false;
    }
    if (word[0] != -word[1] || INT_MAX == word[0] || INT_MIN == word[0]) {
        if (mine >= 0 && INT_MIN != mine && mine > -word[1]) {
            /* The others reach an earlier alternative (the agent back,
             * say): try from the first again next time. */
            mca_coll_ina_agent_drop(m->node_uplink && mca_coll_ina_component.nagents > 0
                                        ? (uint32_t) m->stream % mca_coll_ina_component.nagents
                                        : 0);
        }
        m->resume_every = m->resume_every < cap / 2 ? 2 * m->resume_every : cap;
        m->resume_in = m->resume_every;
        INA_VERBOSE(10, "cid %d: not every member reaches the same agent yet; next check in "
                        "%u calls", m->cid, m->resume_every);
        return false;
    }
    alt = word[0];
    rc = mca_coll_ina_job_reopen(m);
    /* Offload resumes only if every member opened its job: an agent may
     * refuse one (a leaf whose parent is still lost, a full agent), and
     * the others' calls would then each be denied. One more host
     * allreduce, at a resume only. */
    word[0] = OMPI_SUCCESS == rc && (ina_team_joined(m->team) ||
                                     (m->node_uplink && m->stream < 0))
                  ? 1
                  : 0;
    ++m->in_fallback;
    rc = m->previous_allreduce(MPI_IN_PLACE, word, 1, MPI_INT, MPI_MIN, m->comm,
                               m->previous_allreduce_module);
    --m->in_fallback;
    if (OMPI_SUCCESS != rc || 1 != word[0]) {
        mca_coll_ina_job_withdraw(m); /* the same on every member */
        m->resume_every = OMPI_SUCCESS != rc ? 0
                          : m->resume_every < cap / 2 ? 2 * m->resume_every
                                                      : cap;
        m->resume_in = m->resume_every;
        INA_VERBOSE(10, "cid %d: an agent refused a member's job; next check in %u calls",
                    m->cid, m->resume_every);
        return false;
    }
    m->agent_lost = false;
    ++m->resumed;
    INA_VERBOSE(5, "cid %d: every member reaches agent alternative %d and opened its job: "
                   "offload resumes",
                m->cid, alt);
    if (ina_agents_alive()) {
        ina_agent_lost = false; /* back to checking now and then */
    }
    return MCA_COLL_INA_JOB_READY == m->job_state;
}

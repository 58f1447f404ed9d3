// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// A communicator's team (ina_team.h): what it talks to, and the strategy
// that carries its calls, one of
//   NodePath    the node stage (node/): one node's call in shared memory, or
//               with several nodes the node's part on to the agent in the
//               stream this rank leads;
//   AgentPath   the job at one agent (a flat job, or a leaf of a tree of
//               agents), a call lost with it recovered with the members;
//   StripePath  the job striped over several agents.
// chosen from what the team was made with and joined; every call is a Task.
#include "ina_team.h"

#include <cstdarg>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "team.h"

namespace ina::team {

namespace {

// Why a call falls back from the team's side.
constexpr const char *kNoSegment = "no shared-memory segment for the node stage";

// The strategies: no state of their own, constant-initialised.
const NodePath kNodePath;
const AgentPath kAgentPath;
const StripePath kStripePath;

} // namespace

Team::Team(const ina_team_params_t &p)
{
    if ((p.mask & INA_TEAM_LOG) != 0) {
        log_fn_ = p.log_fn;
        log_arg_ = p.log_arg;
        verbose_ = p.verbose;
        label_ = p.label != nullptr ? p.label : "";
    }
    if ((p.mask & INA_TEAM_NODE) != 0) {
        node_ = std::make_unique<Node>();
        Node &n = *node_;
        n.p = p.node;
        n.name = p.node.config.name != nullptr ? p.node.config.name : "";
        if (p.node.config.node_of != nullptr) {
            n.node_of.assign(p.node.config.node_of, p.node.config.node_of + p.node.config.size);
        }
        if (p.node.config.leaders != nullptr) {
            n.leaders.assign(p.node.config.leaders, p.node.config.leaders + p.node.config.nstreams);
        }
        if (p.node.config.numa != nullptr) {
            n.numa.assign(p.node.config.numa, p.node.config.numa + p.node.config.nlocal);
        }
    }
}

Team::~Team()
{
    leave();
    if (node_ != nullptr) {
        for (Tier &t : node_->tiers) {
            if (t.group != nullptr) {
                ina_node_group_close(t.group);
            }
        }
    }
}

void Team::log(int level, const char *fmt, ...) const
{
    if (log_fn_ == nullptr || level > verbose_) {
        return;
    }
    char msg[448];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char line[512];
    std::snprintf(line, sizeof(line), "%s: %s", label_.c_str(), msg);
    log_fn_(log_arg_, level, line);
}

ina_status_t Team::join(const ina_team_join_t &j)
{
    const uint64_t what = j.mask & (INA_TEAM_JOB | INA_TEAM_STRIPE | INA_TEAM_OPEN);
    if ((what & (what - 1)) != 0) {
        return INA_ERR_INVALID; // more than one
    }
    leave();
    block_bytes_ = j.block_bytes;
    job_ = (j.mask & INA_TEAM_JOB) != 0 ? j.job : nullptr;
    stripe_ = (j.mask & INA_TEAM_STRIPE) != 0 ? j.stripe : nullptr;
    if ((j.mask & INA_TEAM_OPEN) != 0) {
        const ina_status_t rc = open(j);
        if (rc != INA_OK) {
            // Joined to nothing: the node stage still cuts calls by block_bytes.
            job_ = nullptr;
            stripe_ = nullptr;
            return rc;
        }
        if (j.granted != nullptr && j.granted->block_bytes != 0) {
            block_bytes_ = j.granted->block_bytes; // what the agent granted
        }
    }
    peers_ = (j.mask & INA_TEAM_PEERS) != 0 && j.peers.send != nullptr;
    if (peers_) {
        ops_ = j.peers;
    }
    absent_ = (j.mask & INA_TEAM_ABSENT) != 0;
    if (absent_) {
        absent_key_ = j.absent_key;
    }
    if (job_ != nullptr && (j.mask & INA_TEAM_GROUPS) != 0 && j.group_of_member != nullptr) {
        // A tree recovers as a whole, in the agents' order of reduction.
        ina_job_set_groups(job_, j.group_of_member, j.ngroups,
                           j.group_levels != 0 ? j.group_levels : 1);
    }
    if (peers_ && job_ != nullptr) {
        ina_job_set_peers(job_, &ops_);
    } else if (peers_ && stripe_ != nullptr) {
        ina_stripe_set_peers(stripe_, &ops_, j.progress, j.progress_arg);
    }
    if (node_ != nullptr) {
        for (Tier &t : node_->tiers) {
            ina_node_group_set_job(t.group, job_);
        }
    }
    return INA_OK;
}

ina_status_t Team::open(const ina_team_join_t &j)
{
    if (j.clients == nullptr || j.nclients == 0 || j.open == nullptr || j.open->key == nullptr) {
        return INA_ERR_INVALID;
    }
    if (j.nclients == 1) {
        if (node_ != nullptr && node_->p.config.nstreams > 0) {
            // The node stage's blocks must each fit one of the agent's Segs.
            ina_agent_info_t info{};
            ina_client_agent_info(j.clients[0], &info);
            if (j.block_bytes > info.seg_bytes) {
                log(1,
                    "the agent's Segs hold %u bytes, less than the node stage's %u-byte "
                    "blocks: set coll_ina_block_size to at most %u; host algorithms for this "
                    "communicator",
                    info.seg_bytes, j.block_bytes, info.seg_bytes);
                return INA_ERR_INVALID;
            }
        }
        return ina_job_open(j.clients[0], j.open, j.granted, &job_);
    }
    const ina_job_open_params_t &o = *j.open;
    return ina_stripe_open(j.clients, j.nclients, o.key, o.nmembers, o.node_of_member, o.rank,
                           o.window, o.block_bytes, j.granted, &stripe_);
}

void Team::leave()
{
    if (node_ != nullptr) {
        for (Tier &t : node_->tiers) {
            ina_node_group_set_job(t.group, nullptr);
        }
    }
    if (job_ != nullptr) {
        ina_job_leave(job_);
        job_ = nullptr;
    }
    if (stripe_ != nullptr) {
        ina_stripe_leave(stripe_);
        stripe_ = nullptr;
    }
    peers_ = false;
    absent_ = false;
}

bool Team::reachable()
{
    return (job_ == nullptr || ina_job_reachable(job_) != 0) &&
           (stripe_ == nullptr || ina_stripe_reachable(stripe_) != 0);
}

int Team::peer_message(uint32_t from, const void *msg, size_t len)
{
    if (absent_) {
        return peers_ ? ina_peer_answer_absent(&absent_key_, &ops_, from, msg, len) : 0;
    }
    if (stripe_ != nullptr) {
        return ina_stripe_peer_message(stripe_, from, msg, len);
    }
    return job_ != nullptr ? ina_job_peer_message(job_, from, msg, len) : 0;
}

void Team::peer_flush()
{
    if (stripe_ != nullptr) {
        ina_stripe_peer_flush(stripe_);
    } else if (job_ != nullptr) {
        ina_job_peer_flush(job_);
    }
}

uint32_t Team::tell(int (*job_tell)(ina_job_t *, uint64_t),
                    uint32_t (*stripe_tell)(ina_stripe_t *, uint64_t, uint32_t *), uint64_t ns,
                    uint32_t *dropped)
{
    *dropped = 0;
    if (stripe_ != nullptr) {
        return stripe_tell(stripe_, ns, dropped);
    }
    // A flat job, a tree's leaf, or the node stage's stream this rank leads.
    const int rc = job_ != nullptr ? job_tell(job_, ns) : 0;
    *dropped = rc < 0 ? 1 : 0;
    return rc > 0 ? 1 : 0;
}

uint32_t Team::host_cost(uint64_t ns, uint32_t *dropped)
{
    return tell(ina_job_host_cost, ina_stripe_host_cost, ns, dropped);
}

uint32_t Team::call_time(uint64_t ns, uint32_t *dropped)
{
    return tell(ina_job_call_time, ina_stripe_call_time, ns, dropped);
}

const Path &Team::path() const
{
    if (node_ != nullptr) {
        return kNodePath;
    }
    return stripe_ != nullptr ? static_cast<const Path &>(kStripePath) : kAgentPath;
}

ina_node_group_t *Team::node_group(size_t bytes, const char **why)
{
    Node &n = *node_;
    const bool uplink = n.p.config.nstreams > 0;
    // Over several nodes a small call is also one agent block.
    const int tier = bytes <= n.p.small_chunk_bytes && (!uplink || bytes <= block_bytes_) ? 0 : 1;
    Tier &t = n.tiers[tier];
    if (t.state == Tier::State::none) {
        std::string err = open_tier(tier);
        if (!err.empty()) {
            // Every local rank sees the same outcome (shm_segment.h).
            log(1, "no %s node segment, host algorithms for such calls: %s",
                tier == 0 ? "small" : "large", err.c_str());
            t.state = Tier::State::unavailable;
        } else {
            t.state = Tier::State::ready;
        }
    }
    if (t.state != Tier::State::ready) {
        *why = kNoSegment;
        return nullptr;
    }
    return t.group;
}

std::string Team::open_tier(int tier)
{
    Node &n = *node_;
    const bool uplink = n.p.config.nstreams > 0;
    char why[256];
    size_t chunk = n.p.small_chunk_bytes;
    if (tier == 1) {
        // Sized for the most populated node, so that every node cuts a call
        // into the same steps (the agent's streams must match).
        chunk = ina_node_chunk_bytes(n.p.nlocal_max, n.p.segment_bytes, n.p.chunk_bytes);
        if (chunk == 0) {
            std::snprintf(why, sizeof(why),
                          "coll_ina_node_segment_bytes %zu is too small for %u ranks",
                          n.p.segment_bytes, n.p.nlocal_max);
            return why;
        }
        if (uplink && chunk < static_cast<size_t>(n.p.config.nstreams) * block_bytes_) {
            std::snprintf(why, sizeof(why),
                          "steps of %zu bytes (coll_ina_node_segment_bytes %zu, %u ranks) hold "
                          "less than a %u-byte block for each of %u streams",
                          chunk, n.p.segment_bytes, n.p.nlocal_max, block_bytes_,
                          n.p.config.nstreams);
            return why;
        }
    }
    const std::string name = n.name + (tier == 0 ? 's' : 'l');
    char path[256];
    if (n.p.created != nullptr && ina_node_shm_path(name.c_str(), path, sizeof(path)) == 0) {
        n.p.created(n.p.created_arg, path);
    }
    ina_node_config_t cfg = n.p.config;
    cfg.name = name.c_str();
    cfg.node_of = n.node_of.empty() ? nullptr : n.node_of.data();
    cfg.leaders = n.leaders.empty() ? nullptr : n.leaders.data();
    cfg.numa = n.numa.empty() ? nullptr : n.numa.data();
    cfg.job = uplink ? job_ : nullptr; // a leader's stream job, if it has one
    cfg.block_bytes = uplink ? block_bytes_ : 0;
    cfg.chunk_bytes = chunk;
    Tier &t = n.tiers[tier];
    if (ina_node_group_open(&cfg, &t.group, why, sizeof(why)) != INA_OK) {
        t.group = nullptr;
        return why;
    }
    log(10, "node stage in %s (%u ranks, steps of %zu bytes, %zu bytes; %s)", name.c_str(),
        cfg.nlocal, chunk, ina_node_segment_bytes(cfg.nlocal, chunk),
        ina_node_group_placement(t.group));
    return {};
}

ina_task *Team::take_task()
{
    if (!free_tasks_.empty()) {
        ina_task *t = free_tasks_.back().release();
        free_tasks_.pop_back();
        return t;
    }
    return new ina_task(this);
}

void Team::give_task(ina_task *t)
{
    free_tasks_.emplace_back(t);
}

} // namespace ina::team

extern "C" {

ina_status_t ina_team_create(const ina_team_params_t *params, ina_team_t **out)
{
    if (params == nullptr || out == nullptr) {
        return INA_ERR_INVALID;
    }
    try {
        *out = new ina_team(*params);
    } catch (const std::bad_alloc &) {
        *out = nullptr;
        return INA_ERR_NOMEM;
    }
    return INA_OK;
}

void ina_team_destroy(ina_team_t *team)
{
    delete team;
}

ina_status_t ina_team_join(ina_team_t *team, const ina_team_join_t *join)
{
    if (team == nullptr || join == nullptr) {
        return INA_ERR_INVALID;
    }
    return team->join(*join);
}

void ina_team_leave(ina_team_t *team)
{
    if (team != nullptr) {
        team->leave();
    }
}

int ina_team_joined(const ina_team_t *team)
{
    return team != nullptr && team->joined() ? 1 : 0;
}

int ina_team_reachable(ina_team_t *team)
{
    return team == nullptr || team->reachable() ? 1 : 0;
}

uint32_t ina_team_host_cost(ina_team_t *team, uint64_t ns, uint32_t *dropped)
{
    uint32_t none = 0;
    dropped = dropped != nullptr ? dropped : &none;
    *dropped = 0;
    return team != nullptr ? team->host_cost(ns, dropped) : 0;
}

uint32_t ina_team_call_time(ina_team_t *team, uint64_t ns, uint32_t *dropped)
{
    uint32_t none = 0;
    dropped = dropped != nullptr ? dropped : &none;
    *dropped = 0;
    return team != nullptr ? team->call_time(ns, dropped) : 0;
}

void ina_team_peer_flush(ina_team_t *team)
{
    if (team != nullptr) {
        team->peer_flush();
    }
}

int ina_team_peer_message(ina_team_t *team, uint32_t from, const void *msg, size_t len)
{
    return team != nullptr ? team->peer_message(from, msg, len) : 0;
}

} // extern "C"

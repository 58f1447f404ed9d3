// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Inside ina_team.h: the Team, the strategies (Path) that carry its calls,
// and the Task of one call.
#ifndef INA_TEAM_TEAM_H
#define INA_TEAM_TEAM_H

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "ina_team.h"

namespace ina::team {

class Path;

class Team {
public:
    explicit Team(const ina_team_params_t &p);
    ~Team();
    Team(const Team &) = delete;
    Team &operator=(const Team &) = delete;

    ina_status_t join(const ina_team_join_t &j);
    void leave();
    bool joined() const { return job_ != nullptr || stripe_ != nullptr; }
    bool reachable();
    int peer_message(uint32_t from, const void *msg, size_t len);
    void peer_flush();
    uint32_t host_cost(uint64_t ns, uint32_t *dropped);
    uint32_t call_time(uint64_t ns, uint32_t *dropped);

    // The strategy for a call posted now.
    const Path &path() const;

    ina_job_t *job() const { return job_; }
    ina_stripe_t *stripe() const { return stripe_; }
    bool peers() const { return peers_; }
    // The node stage: one node's call only (no agent behind it).
    bool node_only() const { return node_ != nullptr && node_->p.config.nstreams == 0; }
    // The node stage's group for a call of `bytes`, opened at its first
    // call; null (why says) where it could not be.
    ina_node_group_t *node_group(size_t bytes, const char **why);

    // Tasks come back to the team and are handed out again: a call
    // allocates nothing once the team has run as many at a time before.
    ina_task *take_task();
    void give_task(ina_task *t);

    void log(int level, const char *fmt, ...) const __attribute__((format(printf, 3, 4)));

private:
    // HOST_COST or CALL_TIME (host_cost, call_time): through the stripe's
    // parts, or this rank's job.
    uint32_t tell(int (*job_tell)(ina_job_t *, uint64_t),
                  uint32_t (*stripe_tell)(ina_stripe_t *, uint64_t, uint32_t *), uint64_t ns,
                  uint32_t *dropped);

    struct Tier {
        enum class State {
            none,
            ready,
            unavailable
        };
        State state = State::none;
        ina_node_group_t *group = nullptr;
    };
    struct Node {
        ina_team_node_params_t p{};
        std::string name;
        std::vector<uint32_t> node_of, leaders;
        std::vector<int32_t> numa;
        std::array<Tier, 2> tiers; // small steps, large steps
    };
    // INA_TEAM_OPEN: the job or stripe opened here.
    ina_status_t open(const ina_team_join_t &j);
    // Opens the node stage's group of `tier`; the reason it could not, or "".
    std::string open_tier(int tier);

    ina_log_fn_t log_fn_ = nullptr;
    void *log_arg_ = nullptr;
    int verbose_ = 0;
    std::string label_;
    std::unique_ptr<Node> node_;
    ina_job_t *job_ = nullptr;
    ina_stripe_t *stripe_ = nullptr;
    uint32_t block_bytes_ = 0;
    bool peers_ = false;
    ina_peer_ops_t ops_{};
    bool absent_ = false;
    ina_job_key_t absent_key_{};
    std::vector<std::unique_ptr<ina_task>> free_tasks_;
};

// How one call is carried (task.cpp). Stateless: a task's state is its own.
// The three are constants (team.cpp), never deleted through a Path.
class Path {
public:
    // Start the call; an error moved nothing.
    virtual ina_status_t post(ina_task &t) const = 0;
    // Until true: t.result holds the verdict.
    virtual bool verdict(ina_task &t) const = 0;
    // Until true: t.result holds how the offloaded call ended.
    virtual bool test(ina_task &t) const = 0;
    // Let go of the call's engine objects (complete, or never posted).
    virtual void release(ina_task &t) const = 0;

protected:
    ~Path() = default;
};

class NodePath final : public Path {
public:
    ina_status_t post(ina_task &t) const override;
    bool verdict(ina_task &t) const override;
    bool test(ina_task &t) const override;
    void release(ina_task &t) const override;
};

class AgentPath final : public Path {
public:
    ina_status_t post(ina_task &t) const override;
    bool verdict(ina_task &t) const override;
    bool test(ina_task &t) const override;
    void release(ina_task &t) const override;
};

class StripePath final : public Path {
public:
    ina_status_t post(ina_task &t) const override;
    bool verdict(ina_task &t) const override;
    bool test(ina_task &t) const override;
    void release(ina_task &t) const override;
};

} // namespace ina::team

struct ina_team final : ina::team::Team {
    using Team::Team;
};

// One call of a team.
struct ina_task final {
    enum class Phase {
        idle,       // not posted, or complete
        deciding,   // posted: the verdict is not known yet
        recovering, // lost with the agent before the verdict: the members settle it
        running,    // offloaded: test it
        lost,       // lost while running: finished with the members
        decided     // the verdict ended the call (result): nothing to test
    };

    explicit ina_task(ina::team::Team *t) : team(t) {}
    ~ina_task() { drop(); }
    ina_task(const ina_task &) = delete;
    ina_task &operator=(const ina_task &) = delete;

    // Let go of every engine object it holds, kept ones included.
    void drop();
    bool persistent() const { return (params.flags & INA_TASK_PERSISTENT) != 0; }
    bool blocking() const { return (params.flags & INA_TASK_NONBLOCKING) == 0; }

    ina::team::Team *const team;
    ina_task_params_t params{};
    const ina::team::Path *path = nullptr; // the one it was last posted on
    Phase phase = Phase::idle;
    ina_task_result_t result{}; // the verdict, then how it ended
    // Whichever path holds the call:
    ina_node_op_t *op = nullptr;        // the node stage's (a persistent one-node
                                        // call keeps it to post again)
    ina_call_t *call = nullptr;         // the agent's
    ina_call_plan_t *plan = nullptr;    // a persistent call's blocks, cut once
    ina_stripe_call_t *scall = nullptr; // the stripe's
};

#endif // INA_TEAM_TEAM_H

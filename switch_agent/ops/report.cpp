// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// The operator's views of a running agent (see report.h).
#include "report.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <sstream>
#include <vector>

#include "agent.h"
#include "ina_config.h"
#include "ina_proto.h"
#include "log.h"
#include "sched/guard.h"

namespace ina::ops {

using nlohmann::json;

namespace {

double seconds_since(agg::Clock::time_point t)
{
    return std::chrono::duration<double>(agg::Clock::now() - t).count();
}

const char *up_state_name(agg::Job::UpState s)
{
    switch (s) {
    case agg::Job::UpState::kNone:
        return "none";
    case agg::Job::UpState::kOpening:
        return "opening";
    case agg::Job::UpState::kOpen:
        return "open";
    case agg::Job::UpState::kFailed:
        return "failed";
    }
    return "?";
}

// Denials by reason, the reasons named as the wire names them.
json by_status(const uint64_t (&counts)[INA_PROTO_STATUS_MAX + 1])
{
    json j = json::object();
    for (unsigned s = 1; s <= INA_PROTO_STATUS_MAX; ++s) {
        if (counts[s] != 0) {
            j[ina_proto_status_name(s)] = counts[s];
        }
    }
    return j;
}

uint64_t sum(const uint64_t (&counts)[INA_PROTO_STATUS_MAX + 1])
{
    uint64_t n = 0;
    for (uint64_t c : counts) {
        n += c;
    }
    return n;
}

std::string hex(const uint8_t *p, size_t n)
{
    std::string s;
    char b[3];
    for (size_t i = 0; i < n; ++i) {
        std::snprintf(b, sizeof(b), "%02x", p[i]);
        s += b;
    }
    return s;
}

// Jobs by JID (the core keeps them unordered).
std::vector<const agg::Job *> sorted_jobs(const agg::Aggregator &core)
{
    std::vector<const agg::Job *> v;
    core.for_each_job([&v](const agg::Job &j) { v.push_back(&j); });
    std::sort(v.begin(), v.end(),
              [](const agg::Job *a, const agg::Job *b) { return a->jid() < b->jid(); });
    return v;
}

// The harm guard around the policy, or null with --harm-guard false.
const sched::HarmGuard *harm_guard(const agg::Aggregator &core)
{
    return dynamic_cast<const sched::HarmGuard *>(&core.scheduler());
}

// Jobs that are this agent's part of a stripe (JOB_OPEN's stripe).
size_t striped_jobs(const agg::Aggregator &core)
{
    size_t n = 0;
    core.for_each_job([&n](const agg::Job &j) { n += j.stripe_width() > 1 ? 1 : 0; });
    return n;
}

// Jobs whose members are child agents: this agent is a spine for them.
size_t child_jobs(const agg::Aggregator &core)
{
    size_t n = 0;
    core.for_each_job([&n](const agg::Job &j) { n += j.children() ? 1 : 0; });
    return n;
}

} // namespace

json status(const Agent &agent, const Info &info)
{
    const agg::Aggregator &core = agent.core();
    const agg::Counters &c = core.counters();
    const TransportCounters &t = agent.transport_counters();
    const AgentConfig &cfg = agent.config();
    const agg::SegPool &pool = core.pool();

    json a;
    a["version"] = PACKAGE_VERSION;
    a["protocol"] = INA_PROTO_VERSION;
    a["protocol_lowest"] = INA_PROTO_VERSION_MIN; // the oldest its clients may speak
    a["pid"] = static_cast<int>(getpid());
    a["uptime_s"] = seconds_since(agent.started());
    a["listen"] = agent.bound_address();
    a["control"] = info.control;
    a["metrics"] = info.metrics;
    a["bind"] = info.bind;
    a["config"] = info.config;
    a["draining"] = core.draining();

    json tree;
    tree["role"] = agent.parent() != nullptr ? "leaf" : "root";
    tree["child_jobs"] = child_jobs(core);
    tree["ready_in"] = c.ready_in;
    tree["abort_in"] = c.abort_in;
    if (const ParentLink *p = agent.parent()) {
        const ParentLink::Counters &pc = p->counters();
        tree["parent"] = p->address();
        tree["parent_up"] = core.uplink_up();
        tree["reconnects"] = pc.reconnects;
        tree["partials_up"] = c.partials_up;
        tree["parent_results"] = c.parent_results;
        tree["partials_waited"] = c.partials_waited;
        tree["partial_wait_s"] = static_cast<double>(c.partial_wait_ns) / 1e9;
        tree["block_bytes_up"] = pc.block_bytes_up;
        tree["result_bytes_down"] = pc.result_bytes_down;
    } else {
        tree["parent"] = nullptr;
    }

    json policy;
    policy["name"] = core.scheduler().name();
    policy["granted"] = c.calls_granted;
    policy["denied"] = by_status(c.denied_by);
    policy["deferred"] = c.calls_deferred;
    policy["deferred_now"] = core.deferred_calls();
    policy["kept_blocks"] = c.kept_blocks;
    policy["mean_lease_segs"] =
        c.calls_granted != 0 ? static_cast<double>(c.leased_segs) / c.calls_granted : 0.0;
    if (const sched::HarmGuard *g = harm_guard(core)) {
        json hg;
        hg["served"] = g->served();
        hg["sent_to_hosts"] = g->sent_to_hosts();
        hg["probes"] = g->probes();
        hg["harmed_jobs"] = g->harmed_jobs();
        policy["harm_guard"] = hg;
    } else {
        policy["harm_guard"] = nullptr;
    }

    json p;
    p["segs"] = pool.size();
    p["seg_bytes"] = pool.seg_bytes();
    p["segs_in_use"] = pool.size() - pool.free_segs();
    p["occupancy"] = pool.size() != 0
                         ? static_cast<double>(pool.size() - pool.free_segs()) / pool.size()
                         : 0.0;
    p["max_window"] = core.max_window();
    p["buffers_allocated"] = pool.buffers().allocated();
    p["kept_bytes"] = core.kept_bytes();

    json conns;
    conns["live"] = agent.connections();
    conns["admitted"] = agent.admitted();
    conns["max"] = cfg.max_conns;
    conns["accepted"] = t.peers_accepted;
    conns["lost"] = t.peers_lost;
    conns["refused"] = t.peers_refused;
    conns["child_probes"] = t.child_probes;
    conns["children_silent"] = t.children_silent;
    conns["by_host"] = agent.peers_by_host();

    json calls;
    calls["in_flight"] = core.granted_calls();
    calls["granted"] = c.calls_granted;
    calls["denied"] = c.calls_denied;
    calls["aborted"] = c.calls_aborted;
    calls["stripe_aborts"] = c.stripe_aborts;
    calls["host_costs"] = c.host_costs;
    calls["call_times"] = c.call_times;

    json traffic;
    traffic["msgs_in"] = t.msgs_in;
    traffic["blocks_in"] = c.blocks_in;
    traffic["block_bytes_in"] = t.block_bytes_in;
    traffic["results_out"] = t.results_out;
    traffic["acks_out"] = t.acks_out;
    traffic["result_bytes_out"] = t.result_bytes_out;
    traffic["grants_out"] = t.grants_out;
    traffic["blocks_rndv"] = t.blocks_rndv;
    traffic["results_rndv"] = t.results_rndv;
    traffic["bytes_in_by_host"] = agent.bytes_in_by_host();

    json errors;
    errors["rejected"] = by_status(c.rejected);
    errors["duplicate"] = c.duplicate;
    errors["foreign"] = c.foreign;
    errors["forbidden_opens"] = c.forbidden_opens;
    errors["limit_refusals"] = c.limit_refusals;
    errors["send_errors"] = t.send_errors;
    errors["rndv_rejected"] = t.rndv_rejected;

    json jobs;
    jobs["live"] = core.live_jobs();
    jobs["striped"] = striped_jobs(core);
    jobs["created"] = c.jobs_created;
    jobs["freed"] = c.jobs_freed;

    json out;
    out["agent"] = a;
    out["tree"] = tree;
    out["policy"] = policy;
    out["pool"] = p;
    out["connections"] = conns;
    out["jobs"] = jobs;
    out["calls"] = calls;
    out["traffic"] = traffic;
    out["errors"] = errors;
    if (cfg.core.time_blocks) {
        const agg::LatencyHistogram &h = core.block_times();
        json bt;
        bt["count"] = h.count();
        bt["sum_s"] = h.sum();
        bt["mean_s"] = h.count() != 0 ? h.sum() / static_cast<double>(h.count()) : 0.0;
        out["block_times"] = bt;
    }
    return out;
}

json jobs(const Agent &agent)
{
    json list = json::array();
    const sched::HarmGuard *guard = harm_guard(agent.core());
    for (const agg::Job *jp : sorted_jobs(agent.core())) {
        const agg::Job &j = *jp;
        const agg::Job::Stats &st = j.stats();
        json e;
        e["jid"] = j.jid();
        e["key"] = hex(j.key().data(), 8);
        e["tenant"] = j.tenant();
        e["members"] = j.nmembers();
        e["joined"] = j.joined();
        e["nodes"] = j.topology().nnodes();
        e["window"] = j.window();
        e["asked_window"] = j.asked_window();
        e["held_segs"] = j.held_segs();
        json tree;
        tree["groups"] = j.tree().groups;
        tree["group"] = j.tree().group;
        tree["children"] = j.children();
        tree["uplink"] = j.uplinked() ? up_state_name(j.up_state()) : "none";
        // A deeper tree: the parent's place at its own parent, and so on up.
        json above = json::array();
        for (const ina_proto_tree_level_t &l : j.tree().above) {
            above.push_back(json{{"groups", l.groups}, {"group", l.group}});
        }
        tree["above"] = above;
        e["tree"] = tree;
        json stripe;
        stripe["index"] = j.stripe_index();
        stripe["width"] = j.stripe_width(); // 0: not striped
        e["stripe"] = stripe;
        json calls;
        calls["granted"] = j.decisions().granted;
        calls["deferred"] = j.decisions().deferred;
        calls["denied"] = sum(j.decisions().denied);
        calls["denied_by"] = by_status(j.decisions().denied);
        calls["aborted"] = st.calls_aborted;
        calls["stripe_aborts"] = st.stripe_aborts;
        calls["host_costs"] = st.host_costs;
        calls["call_times"] = st.call_times;
        calls["live"] = j.live_calls();
        e["calls"] = calls;
        // The harm guard's ledger of the job (null: no guard, or no call judged).
        e["harm"] = nullptr;
        if (guard != nullptr) {
            if (const auto v = guard->view(j.jid()); v && v->calls > 0) {
                e["harm"] = json{{"judged_calls", v->calls},
                                 {"took_s", v->took},
                                 {"hosts_s", v->host},
                                 {"harmed", v->harmed}};
            }
        }
        e["blocks_in"] = st.blocks_in;
        e["bytes_in"] = st.bytes_in;
        e["blocks_done"] = st.blocks_done;
        e["results_out"] = st.results_out;
        e["acks_out"] = st.acks_out;
        e["bytes_out"] = st.bytes_out;
        e["errors"] = st.errors;
        e["age_s"] = seconds_since(st.created);
        list.push_back(std::move(e));
    }
    json out;
    out["jobs"] = std::move(list);
    return out;
}

// ---------------------------------------------------------------- Prometheus

namespace {

// The text exposition format (version 0.0.4): a HELP and a TYPE line per
// metric family, then its samples.
class Exposition {
public:
    void family(const char *name, const char *type, const char *help)
    {
        out_ << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
    }
    template <typename V> void sample(const std::string &name, V value, const std::string &labels = "")
    {
        out_ << name;
        if (!labels.empty()) {
            out_ << '{' << labels << '}';
        }
        out_ << ' ' << value << '\n';
    }
    template <typename V> void one(const char *name, const char *type, const char *help, V value)
    {
        family(name, type, help);
        sample(name, value);
    }
    // A counter family with one sample per wire status that happened.
    void by_reason(const char *name, const char *help,
                   const uint64_t (&counts)[INA_PROTO_STATUS_MAX + 1]);
    std::string str() const { return out_.str(); }
    std::ostringstream &raw() { return out_; }

private:
    std::ostringstream out_;
};

std::string label(const char *k, const std::string &v)
{
    std::string s = std::string(k) + "=\"";
    for (char ch : v) {
        if (ch == '\\' || ch == '"') {
            s += '\\';
            s += ch;
        } else if (ch == '\n') {
            s += "\\n";
        } else {
            s += ch;
        }
    }
    return s + '"';
}

void Exposition::by_reason(const char *name, const char *help,
                           const uint64_t (&counts)[INA_PROTO_STATUS_MAX + 1])
{
    family(name, "counter", help);
    for (unsigned s = 1; s <= INA_PROTO_STATUS_MAX; ++s) {
        if (counts[s] != 0) {
            sample(name, counts[s], label("reason", ina_proto_status_name(s)));
        }
    }
}

} // namespace

std::string metrics(const Agent &agent)
{
    const agg::Aggregator &core = agent.core();
    const agg::Counters &c = core.counters();
    const TransportCounters &t = agent.transport_counters();
    const agg::SegPool &pool = core.pool();
    Exposition x;
    x.raw().precision(17);

    x.family("ina_agent_info", "gauge", "The agent: version, scheduling policy, place in a tree.");
    x.sample("ina_agent_info", 1,
             label("version", PACKAGE_VERSION) + "," + label("policy", core.scheduler().name()) +
                 "," + label("role", agent.parent() != nullptr ? "leaf" : "root") + "," +
                 label("listen", agent.bound_address()));
    x.one("ina_agent_uptime_seconds", "gauge", "Seconds since the agent started.",
          seconds_since(agent.started()));
    x.one("ina_agent_draining", "gauge", "1 while the operator drains the agent (new calls denied).",
          core.draining() ? 1 : 0);

    x.one("ina_seg_pool_segs", "gauge", "Seg units in the pool.", pool.size());
    x.one("ina_seg_pool_seg_bytes", "gauge", "Bytes per Seg.", pool.seg_bytes());
    x.one("ina_seg_pool_segs_in_use", "gauge", "Segs leased to calls now.",
          pool.size() - pool.free_segs());
    x.one("ina_seg_pool_buffers_allocated", "gauge",
          "Seg-sized buffers allocated (Segs, results in flight).", pool.buffers().allocated());
    x.one("ina_kept_bytes", "gauge", "Bytes of blocks kept for calls the scheduler deferred.",
          core.kept_bytes());

    x.one("ina_connections", "gauge", "Client connections now.", agent.connections());
    x.one("ina_connections_accepted_total", "counter", "Client connections accepted.",
          t.peers_accepted);
    x.one("ina_connections_lost_total", "counter", "Client connections lost or closed.",
          t.peers_lost);
    x.one("ina_connections_refused_total", "counter", "Client connections refused (--max-conns).",
          t.peers_refused);
    x.one("ina_child_probes_total", "counter", "PINGs sent to child agents gone silent.",
          t.child_probes);
    x.one("ina_children_silent_total", "counter",
          "Child agents given up: silent for --child-liveness-ms, probes included.",
          t.children_silent);

    x.one("ina_jobs", "gauge", "Jobs (communicators) live now.", core.live_jobs());
    x.one("ina_jobs_striped", "gauge", "Live jobs that are this agent's part of a stripe.",
          striped_jobs(core));
    x.one("ina_jobs_created_total", "counter", "Jobs created.", c.jobs_created);
    x.one("ina_jobs_freed_total", "counter", "Jobs freed.", c.jobs_freed);

    x.one("ina_calls_in_flight", "gauge", "Granted calls not over yet.", core.granted_calls());
    x.one("ina_calls_granted_total", "counter", "Calls the scheduler granted.", c.calls_granted);
    x.by_reason("ina_calls_denied_total", "Calls denied, by reason.", c.denied_by);
    x.one("ina_calls_deferred_total", "counter", "Calls the scheduler put off at least once.",
          c.calls_deferred);
    x.one("ina_calls_deferred", "gauge", "Calls waiting for the scheduler now.",
          core.deferred_calls());
    x.one("ina_calls_aborted_total", "counter",
          "Calls ended by an ERROR after their GRANT (a member or the parent lost).",
          c.calls_aborted);
    x.one("ina_calls_stripe_aborts_total", "counter",
          "Striped calls given back because another agent of the stripe denied them.",
          c.stripe_aborts);
    x.one("ina_host_costs_total", "counter",
          "Members' measures of what denied calls cost them on the hosts (HOST_COST).",
          c.host_costs);
    x.one("ina_call_times_total", "counter",
          "Members' measures of what whole calls took them (CALL_TIME).", c.call_times);
    x.one("ina_leased_segs_total", "counter", "Segs of all granted leases.", c.leased_segs);
    if (const sched::HarmGuard *g = harm_guard(core)) {
        x.one("ina_harm_guard_served_total", "counter",
              "Calls of harmed jobs the harm guard granted itself.", g->served());
        x.one("ina_harm_guard_sent_to_hosts_total", "counter",
              "Calls of harmed jobs the harm guard sent to the hosts, as cheaper there.",
              g->sent_to_hosts());
        x.one("ina_harm_guard_probes_total", "counter",
              "Calls sent to the hosts once so that their members measure the hosts' cost.",
              g->probes());
        x.one("ina_harm_guard_harmed_jobs", "gauge",
              "Jobs whose calls took more than on the hosts while they shared the agent.",
              g->harmed_jobs());
    }

    x.one("ina_messages_received_total", "counter", "Messages received from clients.", t.msgs_in);
    x.one("ina_blocks_received_total", "counter", "BLOCKs received.", c.blocks_in);
    x.one("ina_block_bytes_received_total", "counter", "Payload bytes of the BLOCKs received.",
          t.block_bytes_in);
    x.one("ina_results_sent_total", "counter", "RESULTs sent with a payload.", t.results_out);
    x.one("ina_acks_sent_total", "counter", "RESULTs sent without a payload (ACK only).",
          t.acks_out);
    x.one("ina_result_bytes_sent_total", "counter", "Payload bytes of the RESULTs sent.",
          t.result_bytes_out);
    x.by_reason("ina_messages_rejected_total", "Messages refused, by reason.", c.rejected);
    x.one("ina_duplicate_blocks_total", "counter", "Second contributions of a rank to a block.",
          c.duplicate);
    x.one("ina_send_errors_total", "counter", "Sends to clients that failed.", t.send_errors);

    x.one("ina_tree_child_jobs", "gauge", "Jobs whose members are child agents (this agent a spine).",
          child_jobs(core));
    if (const ParentLink *p = agent.parent()) {
        x.one("ina_parent_up", "gauge", "1 while the link to the parent agent is up.",
              core.uplink_up() ? 1 : 0);
        x.one("ina_parent_reconnects_total", "counter", "Times the lost parent was reached again.",
              p->counters().reconnects);
        x.one("ina_parent_block_bytes_sent_total", "counter",
              "Payload bytes of the partial blocks sent up.", p->counters().block_bytes_up);
        x.one("ina_parent_partials_sent_total", "counter", "Completed blocks sent up.",
              c.partials_up);
        x.one("ina_parent_results_total", "counter", "RESULTs from the parent sent on.",
              c.parent_results);
        x.one("ina_parent_partials_waited_total", "counter",
              "Completed blocks that waited for their slot at the parent.", c.partials_waited);
        x.one("ina_parent_partial_wait_seconds_total", "counter",
              "Time those blocks waited for their slot at the parent.",
              static_cast<double>(c.partial_wait_ns) / 1e9);
    }

    const std::vector<const agg::Job *> js = sorted_jobs(core);
    auto per_job = [&](const char *name, const char *type, const char *help, auto value) {
        x.family(name, type, help);
        for (const agg::Job *j : js) {
            x.sample(name, value(*j),
                     label("jid", std::to_string(j->jid())) + "," +
                         label("tenant", std::to_string(j->tenant())));
        }
    };
    per_job("ina_job_members", "gauge", "Members of the job.",
            [](const agg::Job &j) { return j.nmembers(); });
    per_job("ina_job_stripe_width", "gauge",
            "Agents the job's communicator stripes its calls over (0: not striped).",
            [](const agg::Job &j) { return j.stripe_width(); });
    per_job("ina_job_bytes_received_total", "counter", "Payload bytes of the job's BLOCKs.",
            [](const agg::Job &j) { return j.stats().bytes_in; });
    per_job("ina_job_bytes_sent_total", "counter", "Payload bytes of the job's RESULTs.",
            [](const agg::Job &j) { return j.stats().bytes_out; });
    per_job("ina_job_blocks_total", "counter", "Blocks of the job completed here.",
            [](const agg::Job &j) { return j.stats().blocks_done; });
    per_job("ina_job_calls_granted_total", "counter", "Calls of the job granted.",
            [](const agg::Job &j) { return j.decisions().granted; });
    per_job("ina_job_calls_denied_total", "counter", "Calls of the job denied (any reason).",
            [](const agg::Job &j) { return sum(j.decisions().denied); });
    per_job("ina_job_errors_total", "counter", "Messages of the job's members refused.",
            [](const agg::Job &j) { return j.stats().errors; });

    if (agent.config().core.time_blocks) {
        const agg::LatencyHistogram &h = core.block_times();
        const char *name = "ina_block_duration_seconds";
        x.family(name, "histogram",
                 "Time of a block in the agent, from its first contribution to its result.");
        for (size_t i = 0; i < agg::LatencyHistogram::kBounds.size(); ++i) {
            char le[32];
            std::snprintf(le, sizeof(le), "%g", agg::LatencyHistogram::kBounds[i]);
            x.sample(std::string(name) + "_bucket", h.cumulative(i), label("le", le));
        }
        x.sample(std::string(name) + "_bucket", h.count(), label("le", "+Inf"));
        x.sample(std::string(name) + "_sum", h.sum());
        x.sample(std::string(name) + "_count", h.count());
    }
    return x.str();
}

json request(Agent &agent, const Info &info, const std::string &line)
{
    json out;
    if (line == "status") {
        out = status(agent, info);
    } else if (line == "jobs") {
        out = jobs(agent);
    } else if (line == "drain" || line == "resume") {
        const bool on = line == "drain";
        if (agent.core().draining() != on) {
            agent.core().set_draining(on);
            INA_WARN("%s by the operator (ina-switchctl): %s", on ? "draining" : "drain ended",
                     on ? "new calls are denied, granted ones go on" : "calls are granted again");
        }
        out["draining"] = on;
        out["calls_in_flight"] = agent.core().granted_calls();
    } else {
        out["ok"] = false;
        out["error"] = "unknown request '" + line + "' (status, jobs, drain, resume)";
        return out;
    }
    out["ok"] = true;
    return out;
}

} // namespace ina::ops

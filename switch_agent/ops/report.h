// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// What the operator sees of a running agent, built from its live state on
// the loop's thread: `status` and `jobs` as JSON documents (the control
// socket's replies, which ina-switchctl prints), the same figures in the
// Prometheus text format (the metrics endpoint), and the control requests
// (drain, resume). Nothing here changes the agent unless a request asks.
#ifndef INA_OPS_REPORT_H
#define INA_OPS_REPORT_H

#include <string>

#include <nlohmann/json.hpp>

namespace ina {

class Agent;

namespace ops {

// What the agent was started with that the agent itself does not keep.
struct Info {
    std::string control; // the control socket's path (empty: none)
    std::string metrics; // the metrics endpoint's HOST:PORT (empty: none)
    std::string bind;    // where --bind put it ("none")
    std::string config;  // the configuration file read (empty: none)
};

nlohmann::json status(const Agent &agent, const Info &info);
nlohmann::json jobs(const Agent &agent);
std::string metrics(const Agent &agent);

// One control request ("status", "jobs", "drain", "resume"): its reply,
// {"ok": true, ...} or {"ok": false, "error": "..."}.
nlohmann::json request(Agent &agent, const Info &info, const std::string &line);

} // namespace ops
} // namespace ina

#endif

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Agent test: one daemon serves components of every protocol version it
// speaks (common/ina_proto.h, "Versions"), and refuses the others with the
// ranges named.
// - Clients of the previous version (INA_PROTO_VERSION - 1: a HELLO of that
//   version alone, no range, as that build sent it; every message stamped
//   with it) get a HELLO_ACK of that version, run exact calls, and receive
//   nothing of another version.
// - On such a connection, a message of the current version is refused
//   (ERROR VERSION): a connection speaks the one version chosen at HELLO.
// - A client of this version on the same daemon is served at this version,
//   beside them.
// - A HELLO offering only newer versions, and one of an older version than
//   the daemon speaks, are refused with ERROR(VERSION) naming the daemon's
//   range (INA_PROTO_VERSION_MIN..INA_PROTO_VERSION); the daemon's log
//   names both ranges. A HELLO offering a range that reaches into ours
//   from above is served at our highest.
#include <cinttypes>
#include <cstring>
#include <random>
#include <vector>

#include "agent_calls.h"
#include "agent_harness.h"

using namespace ina_test;

namespace {

const unsigned kPrevious = INA_PROTO_VERSION - 1;
static_assert(INA_PROTO_VERSION - 1 >= INA_PROTO_VERSION_MIN,
              "an agent speaks at least the previous version beside its own");

CallPlan sum_plan(uint32_t n, uint64_t count, unsigned seed)
{
    std::mt19937_64 rng(seed);
    CallPlan p = plan_allreduce(INA_OP_SUM, INA_DT_INT64, n, count, 512, rng);
    reduce_reference(p, [](uint8_t *acc, const uint8_t *in, uint64_t cnt) {
        auto *a = reinterpret_cast<int64_t *>(acc);
        const auto *b = reinterpret_cast<const int64_t *>(in);
        for (uint64_t i = 0; i < cnt; ++i) {
            a[i] = static_cast<int64_t>(static_cast<uint64_t>(a[i]) + static_cast<uint64_t>(b[i]));
        }
    });
    return p;
}

// A HELLO on a fresh endpoint of c offering lowest..highest; its answer.
Msg hello_offering(Client &c, const std::string &addr, unsigned lowest, unsigned highest)
{
    const size_t ep = c.connect(addr);
    ina_proto_hdr_t h;
    ina_proto_init(&h, INA_PROTO_HELLO);
    ina_proto_hello_offer(&h, lowest, highest, 0);
    h.count = ina::ucx::kStreamSegBytes;
    c.send(ep, h);
    return c.wait_for(
        [](const Msg &m) {
            return m.hdr.type == INA_PROTO_HELLO_ACK ||
                   (m.hdr.type == INA_PROTO_ERROR && m.hdr.op == INA_PROTO_HELLO);
        },
        10000, "the answer to HELLO");
}

void expect_refused(Client &c, const std::string &addr, unsigned lowest, unsigned highest)
{
    Msg m = hello_offering(c, addr, lowest, highest);
    CHECK_OR_FAIL(m.hdr.type == INA_PROTO_ERROR && m.hdr.status == INA_PROTO_ERR_VERSION,
                  "a HELLO offering %u..%u got %s (%s)", lowest, highest,
                  ina_proto_type_name(m.hdr.type), ina_proto_status_name(m.hdr.status));
    CHECK_OR_FAIL(ina_proto_refusal_lowest(&m.hdr) == INA_PROTO_VERSION_MIN &&
                      ina_proto_refusal_highest(&m.hdr) == INA_PROTO_VERSION,
                  "the refusal names versions %u..%u, not the agent's %u..%u",
                  ina_proto_refusal_lowest(&m.hdr), ina_proto_refusal_highest(&m.hdr),
                  INA_PROTO_VERSION_MIN, INA_PROTO_VERSION);
    std::printf("checked: a HELLO offering %u..%u refused, the agent's %u..%u named\n", lowest,
                highest, INA_PROTO_VERSION_MIN, INA_PROTO_VERSION);
}

} // namespace

int main()
{
    arm_watchdog(180);
    Daemon d;

    // Three members of the previous version, one job, calls exact.
    Client old;
    old.speak(static_cast<uint8_t>(kPrevious));
    std::vector<size_t> eps;
    for (int r = 0; r < 3; ++r) {
        eps.push_back(old.connect(d.address()));
        uint32_t maxw = 0;
        uint64_t segb = 0;
        old.hello(eps.back(), &maxw, &segb); // its HELLO_ACK checked for the version too
        CHECK_OR_FAIL(maxw > 0 && segb > 0, "HELLO_ACK: max window %u seg bytes %" PRIu64, maxw,
                      segb);
    }
    uint32_t window = 0;
    const uint32_t jid = old.open_all(eps, {0, 1, 2}, 4, &window);
    std::vector<CallPlan> calls;
    for (unsigned i = 0; i < 8; ++i) {
        calls.push_back(sum_plan(3, 1 + 700 * i, 100 + i));
    }
    RunStats st = run_calls(old, eps, jid, window, 0, calls, 7);
    CHECK_OR_FAIL(st.results > 0, "no RESULT checked");
    std::printf("checked: 3 clients of protocol %u: HELLO_ACK, JOB_OPENED, %zu allreduces exact "
                "(%" PRIu64 " RESULTs), every message of version %u\n",
                kPrevious, calls.size(), st.results, kPrevious);

    // A message of another version than the connection's is refused.
    {
        ina_proto_hdr_t leave;
        ina_proto_init(&leave, INA_PROTO_JOB_LEAVE);
        leave.jid = jid;
        leave.rank = 0;
        Client raw; // this build's version, on an endpoint that chose the previous
        const size_t ep = raw.connect(d.address());
        ina_proto_hdr_t h;
        ina_proto_init(&h, INA_PROTO_HELLO); // a HELLO of the previous build
        h.version = static_cast<uint8_t>(kPrevious);
        h.count = ina::ucx::kStreamSegBytes;
        raw.send(ep, h);
        Msg ack = raw.wait_for([](const Msg &m) { return m.hdr.type == INA_PROTO_HELLO_ACK; },
                               10000, "HELLO_ACK");
        CHECK_OR_FAIL(ack.hdr.version == kPrevious, "HELLO_ACK of version %u to a HELLO of %u",
                      ack.hdr.version, kPrevious);
        raw.send(ep, leave); // stamped INA_PROTO_VERSION
        Msg e = raw.wait_for([](const Msg &m) { return m.hdr.type == INA_PROTO_ERROR; }, 10000,
                             "ERROR");
        CHECK_OR_FAIL(e.hdr.status == INA_PROTO_ERR_VERSION && e.hdr.op == INA_PROTO_JOB_LEAVE &&
                          e.hdr.version == kPrevious,
                      "a message of version %u on a connection of %u: %s (%s, version %u)",
                      INA_PROTO_VERSION, kPrevious, ina_proto_type_name(e.hdr.type),
                      ina_proto_status_name(e.hdr.status), e.hdr.version);
        std::printf("checked: a message of version %u on a connection of %u refused (VERSION)\n",
                    INA_PROTO_VERSION, kPrevious);
    }

    // This build's clients beside them, at this version.
    {
        Client now;
        std::vector<size_t> e2;
        for (int r = 0; r < 2; ++r) {
            e2.push_back(now.connect(d.address()));
            Msg m = [&] {
                ina_proto_hdr_t h;
                ina_proto_init(&h, INA_PROTO_HELLO);
                ina_proto_hello_offer(&h, INA_PROTO_VERSION_MIN, INA_PROTO_VERSION, 0);
                h.count = ina::ucx::kStreamSegBytes;
                now.send(e2.back(), h);
                return now.wait_for(
                    [](const Msg &x) { return x.hdr.type == INA_PROTO_HELLO_ACK; }, 10000,
                    "HELLO_ACK");
            }();
            CHECK_OR_FAIL(m.hdr.version == INA_PROTO_VERSION,
                          "a HELLO offering %u..%u answered with version %u",
                          INA_PROTO_VERSION_MIN, INA_PROTO_VERSION, m.hdr.version);
        }
        uint32_t w2 = 0;
        const uint32_t j2 = now.open_all(e2, {0, 1}, 4, &w2);
        std::vector<CallPlan> c2 = {sum_plan(2, 5000, 3), sum_plan(2, 9, 4)};
        run_calls(now, e2, j2, w2, 0, c2, 9);
        std::printf("checked: clients of %u..%u served at %u beside them, calls exact\n",
                    INA_PROTO_VERSION_MIN, INA_PROTO_VERSION, INA_PROTO_VERSION);

        // HOST_COST (protocol 16) and CALL_TIME (17): a member's is taken
        // (no answer); one claiming another member's rank and one for an
        // unknown job are refused, and a CALL_TIME on the previous
        // version's connection.
        auto word = [](ina_proto_type_t type, uint32_t jid, uint32_t rank) {
            ina_proto_hdr_t h;
            ina_proto_init(&h, type);
            h.jid = jid;
            h.rank = rank;
            h.coll = INA_COLL_ALLREDUCE;
            ina_proto_timing_set(&h, 40000, 2500000);
            return h;
        };
        auto refused = [](Client &c, ina_proto_type_t type, ina_proto_status_t want,
                          const char *what) {
            Msg e = c.wait_for([](const Msg &x) { return x.hdr.type == INA_PROTO_ERROR; }, 10000,
                               "ERROR");
            CHECK_OR_FAIL(e.hdr.status == want && e.hdr.op == type, "%s: ERROR %s of a %s", what,
                          ina_proto_status_name(e.hdr.status), ina_proto_type_name(e.hdr.op));
            return 0;
        };
        for (ina_proto_type_t type : {INA_PROTO_HOST_COST, INA_PROTO_CALL_TIME}) {
            now.send(e2[0], word(type, j2, 0));
            now.send(e2[0], word(type, j2, 1)); // rank 1 is the other endpoint
            refused(now, type, INA_PROTO_ERR_NOT_MEMBER, "another member's rank");
            now.send(e2[0], word(type, j2 + 1000, 0));
            refused(now, type, INA_PROTO_ERR_NO_JOB, "an unknown job");
        }
        ina_proto_hdr_t old_time = word(INA_PROTO_CALL_TIME, jid, 0);
        old_time.version = static_cast<uint8_t>(kPrevious);
        old.send(eps[0], old_time);
        refused(old, INA_PROTO_CALL_TIME, INA_PROTO_ERR_MALFORMED,
                "a type the connection's version lacks");
        std::printf("checked: HOST_COSTs and CALL_TIMEs of another member's rank and of an "
                    "unknown job refused, and a CALL_TIME on a connection of protocol %u\n",
                    kPrevious);
    }

    // Ranges that do not meet ours, and one that reaches into it.
    Client probe;
    expect_refused(probe, d.address(), INA_PROTO_VERSION + 1, INA_PROTO_VERSION + 5);
    expect_refused(probe, d.address(), INA_PROTO_VERSION_MIN - 1, INA_PROTO_VERSION_MIN - 1);
    Msg m = hello_offering(probe, d.address(), INA_PROTO_VERSION_MIN, INA_PROTO_VERSION + 3);
    CHECK_OR_FAIL(m.hdr.type == INA_PROTO_HELLO_ACK && m.hdr.version == INA_PROTO_VERSION,
                  "a HELLO offering %u..%u: %s of version %u", INA_PROTO_VERSION_MIN,
                  INA_PROTO_VERSION + 3, ina_proto_type_name(m.hdr.type), m.hdr.version);
    std::printf("checked: a HELLO offering %u..%u served at %u\n", INA_PROTO_VERSION_MIN,
                INA_PROTO_VERSION + 3, INA_PROTO_VERSION);

    // The daemon's log names both ranges.
    char want[128];
    std::snprintf(want, sizeof(want), "speaks ina protocol versions %u to %u, this agent %u to %u",
                  INA_PROTO_VERSION + 1, INA_PROTO_VERSION + 5, INA_PROTO_VERSION_MIN,
                  INA_PROTO_VERSION);
    const std::string log = d.log();
    CHECK_OR_FAIL(log.find(want) != std::string::npos, "the agent's log lacks '%s':\n%s", want,
                  log.c_str());
    std::printf("checked: the agent's log names both ranges\n");

    old.leave(eps[0], jid, 0);
    old.fence(eps[0]);
    const int rc = d.terminate();
    CHECK_OR_FAIL(rc == 0 && d.counter("host_costs") == 1 && d.counter("call_times") == 1,
                  "exit status %d, host_costs=%ld call_times=%ld (the member's: 1 each)", rc,
                  d.counter("host_costs"), d.counter("call_times"));
    std::printf("checked: the member's HOST_COST and CALL_TIME taken (1 each)\n");
    std::printf("agent_versions: PASS\n");
    return 0;
}

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Agent test: daemon lifecycle and job bookkeeping.
// - command line: --help exits 0, bad arguments exit 2 with a message;
// - 1000 jobs created, used (one exact 2-block call each) and left in turn:
//   JIDs monotonic, a further job still works, and at exit the agent reports
//   every job freed, the whole pool free and a bounded number of buffers;
// - a client that dies drops its memberships (its rank can be joined again),
//   the call it left unfinished ends on the survivor with an ERROR, and a job
//   whose creator dies before anybody joined is freed;
// - SIGTERM and SIGINT both end the daemon with exit status 0.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "agent_harness.h"

using namespace ina_test;

namespace {

int run_cli(const std::vector<std::string> &args, std::string *err_out)
{
    char tmpl[] = "/tmp/ina-agent-cli-XXXXXX";
    int fd = mkstemp(tmpl);
    CHECK_OR_FAIL(fd >= 0, "mkstemp");
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(fd, 2);
        std::vector<char *> argv;
        const char *path = std::getenv("INA_SWITCHD");
        argv.push_back(const_cast<char *>(path));
        for (auto &a : args) {
            argv.push_back(const_cast<char *>(a.c_str()));
        }
        argv.push_back(nullptr);
        execv(path, argv.data());
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    char buf[512] = {};
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    *err_out = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    close(fd);
    unlink(tmpl);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// One call of 2 int64 blocks on every rank of (jid); checks both RESULTs everywhere.
void use_job(Client &c, const std::vector<size_t> &eps, uint32_t jid, uint32_t window,
             uint64_t salt, uint64_t mid = 0)
{
    const uint32_t n = static_cast<uint32_t>(eps.size());
    const uint32_t cnt = 8;
    for (uint32_t sid = 0; sid < 2; ++sid) {
        std::vector<int64_t> ref(cnt, 0);
        for (uint32_t r = 0; r < n; ++r) {
            std::vector<int64_t> v(cnt);
            for (uint32_t i = 0; i < cnt; ++i) {
                v[i] = static_cast<int64_t>(salt * 131 + r * 17 + sid * 5 + i);
                ref[i] += v[i];
            }
            c.send(eps[r], allreduce_hdr(jid, r, mid, sid, window, INA_OP_SUM, INA_DT_INT64, cnt, 2 * cnt),
                   v.data(), cnt * sizeof(int64_t));
        }
        if (sid == 0) {
            std::vector<uint32_t> ranks(n);
            for (uint32_t r = 0; r < n; ++r) {
                ranks[r] = r;
            }
            expect_grants(c, jid, mid, ranks);
        }
        for (uint32_t r = 0; r < n; ++r) {
            Msg m = c.wait_for([&](const Msg &m) { return m.hdr.jid == jid && m.hdr.rank == r; },
                               10000, "RESULT");
            CHECK_OR_FAIL(m.hdr.type == INA_PROTO_RESULT && m.hdr.sid == sid &&
                              m.payload.size() == cnt * sizeof(int64_t) &&
                              std::memcmp(m.payload.data(), ref.data(), m.payload.size()) == 0,
                          "job %u sid %u rank %u: wrong RESULT (%s %s)", jid, sid, r,
                          ina_proto_type_name(m.hdr.type), ina_proto_status_name(m.hdr.status));
        }
    }
}

} // namespace

int main()
{
    arm_watchdog(180);
    std::string err;
    CHECK_OR_FAIL(run_cli({"--help"}, &err) == 0, "--help did not exit 0");
    const std::vector<std::vector<std::string>> bad = {
        {"--segs", "0"},          {"--segs", "12x"},     {"--seg-size", "2000000"},
        {"--max-window", "5000"}, {"--log-level", "loud"}, {"--listen", "nonsense"},
        {"--listen", "h:70000"},  {"--bogus"},           {"extra"},
        {"--segs"}};
    for (const auto &args : bad) {
        int rc = run_cli(args, &err);
        CHECK_OR_FAIL(rc == 2 && err.find("ina-switchd:") != std::string::npos,
                      "'%s' gave exit %d, stderr '%s'", args[0].c_str(), rc, err.c_str());
    }
    std::printf("checked: --help exits 0; %zu kinds of bad arguments exit 2 with a message\n",
                bad.size());

    Daemon d;
    Client c;
    std::vector<size_t> eps;
    for (int r = 0; r < 4; ++r) {
        eps.push_back(c.connect(d.address()));
    }
    const std::vector<uint32_t> nodes = {0, 0, 1, 1};
    uint32_t last_jid = 0;
    const int kJobs = 1000;
    for (int j = 0; j < kJobs; ++j) {
        // The first to open (who creates the job) goes round the ranks.
        uint32_t w = 0, jid = 0;
        for (uint32_t i = 0; i < 4; ++i) {
            const uint32_t r = (static_cast<uint32_t>(j) + i) % 4;
            Msg m = c.open_job(eps[r], "loop-" + std::to_string(j), nodes, 2, r);
            CHECK_OR_FAIL(m.hdr.status == INA_PROTO_OK && (i == 0 || m.hdr.jid == jid),
                          "open of job %d as rank %u: %s", j, r,
                          ina_proto_status_name(m.hdr.status));
            jid = m.hdr.jid;
            w = m.hdr.window;
        }
        CHECK_OR_FAIL(jid > last_jid, "JID %u after %u: not monotonic", jid, last_jid);
        last_jid = jid;
        use_job(c, eps, jid, w, static_cast<uint64_t>(j));
        for (uint32_t r = 0; r < 4; ++r) {
            c.leave(eps[r], jid, r);
            c.fence(eps[r]);
        }
    }
    // A left job is gone: opening its key again makes a new job.
    {
        uint32_t w = 0, jid = 0;
        for (uint32_t r = 0; r < 4; ++r) {
            Msg m = c.open_job(eps[r], "loop-" + std::to_string(kJobs - 1), nodes, 2, r);
            CHECK_OR_FAIL(m.hdr.status == INA_PROTO_OK, "reopen as rank %u", r);
            jid = m.hdr.jid;
            w = m.hdr.window;
        }
        CHECK_OR_FAIL(jid > last_jid, "job %u still exists (reopened as %u)", last_jid, jid);
        use_job(c, eps, jid, w, 99999);
        for (uint32_t r = 0; r < 4; ++r) {
            c.leave(eps[r], jid, r);
            c.fence(eps[r]);
        }
    }
    std::printf("checked: %d jobs created, used (exact results) and left in turn, JIDs monotonic, "
                "a left job is gone, a further job works\n", kJobs);

    // A dying client: rank 1 of a live job is on another UCX context.
    uint32_t w = 0;
    Msg opened = c.open_job(eps[0], "dying", {0, 1}, 2, 0);
    CHECK_OR_FAIL(opened.hdr.status == INA_PROTO_OK, "open as rank 0");
    const uint32_t jid = opened.hdr.jid;
    w = opened.hdr.window;
    {
        Client other;
        size_t oe = other.connect(d.address());
        CHECK_OR_FAIL(other.open_job(oe, "dying", {0, 1}, 2, 1).hdr.status == INA_PROTO_OK,
                      "open as rank 1 from the other client");
        // And it opens a job that nobody else ever opens.
        CHECK_OR_FAIL(other.open_job(oe, "orphan", {0, 1, 2}, 2, 0).hdr.status == INA_PROTO_OK,
                      "open of the orphan");
        // Rank 0 starts a 2-block call the other rank will never finish.
        std::vector<int64_t> v(8, 1);
        c.send(eps[0], allreduce_hdr(jid, 0, 0, 0, w, INA_OP_SUM, INA_DT_INT64, 8, 16), v.data(), 64);
        c.fence(eps[0]);
        expect_grants(c, jid, 0, {0});
        expect_grants(other, jid, 0, {1}); // the member that has not sent anything yet
    } // its endpoint closes here
    Msg abort_msg = c.wait_for([&](const Msg &m) { return m.hdr.jid == jid; }, 10000,
                               "ERROR for the call the dead rank left unfinished");
    CHECK_OR_FAIL(abort_msg.hdr.type == INA_PROTO_ERROR && abort_msg.hdr.op == INA_PROTO_BLOCK &&
                      abort_msg.hdr.mid == 0 && abort_msg.hdr.rank == 0 &&
                      abort_msg.hdr.status == INA_PROTO_ERR_NOT_MEMBER,
                  "survivor got %s/%s for the broken call", ina_proto_type_name(abort_msg.hdr.type),
                  ina_proto_status_name(abort_msg.hdr.status));
    std::printf("checked: a member dying in the middle of a call -> ERROR(BLOCK, not-member) for "
                "that MID to the survivor, no hang\n");
    ina_proto_status_t st = INA_PROTO_ERR_NOT_MEMBER;
    for (int tries = 0; tries < 2000 && st != INA_PROTO_OK; ++tries) {
        // Refused (the rank is taken) until the agent noticed the loss.
        st = static_cast<ina_proto_status_t>(c.open_job(eps[1], "dying", {0, 1}, 2, 1).hdr.status);
    }
    CHECK_OR_FAIL(st == INA_PROTO_OK, "rank 1 of a dead client was never released");
    use_job(c, {eps[0], eps[1]}, jid, w, 7, 1);
    c.leave(eps[0], jid, 0);
    c.leave(eps[1], jid, 1);
    c.fence(eps[0]);
    c.fence(eps[1]);
    std::printf("checked: a dead client's rank is released and can be opened again; the job "
                "works\n");

    int rc = d.terminate();
    CHECK_OR_FAIL(rc == 0, "exit status %d after SIGTERM", rc);
    long created = d.counter("jobs_created"), freed = d.counter("jobs_freed");
    CHECK_OR_FAIL(created == kJobs + 3 && freed == created && d.counter("jobs_live") == 0,
                  "jobs_created=%ld jobs_freed=%ld jobs_live=%ld", created, freed,
                  d.counter("jobs_live"));
    CHECK_OR_FAIL(d.log().find("segs_free=1024/1024") != std::string::npos, "pool not whole at exit");
    long buffers = d.counter("buffers");
    CHECK_OR_FAIL(buffers >= 1 && buffers <= 16, "buffers=%ld: payload buffers are not reused",
                  buffers);
    CHECK_OR_FAIL(d.counter("peers_lost") >= 1, "the dead client was not noticed");
    CHECK_OR_FAIL(d.counter("calls_aborted") == 1, "calls_aborted=%ld", d.counter("calls_aborted"));
    std::printf("checked: SIGTERM -> exit 0; jobs_created=%ld jobs_freed=%ld jobs_live=0 (the "
                "orphaned job included), pool whole, %ld payload buffers reused for %d calls\n",
                created, freed, buffers, kJobs + 2);

    {
        // Shut down while busy: connected peers, a job, a half-aggregated Seg.
        Daemon d2;
        Client c2;
        size_t e0 = c2.connect(d2.address()), e1 = c2.connect(d2.address());
        uint32_t w2 = 0;
        uint32_t j2 = c2.open_all({e0, e1}, {0, 1}, 2, &w2);
        std::vector<int64_t> v(8, 3);
        c2.send(e0, allreduce_hdr(j2, 0, 0, 0, w2, INA_OP_SUM, INA_DT_INT64, 8, 8), v.data(), 64);
        c2.fence(e0);
        rc = d2.terminate(SIGINT);
        CHECK_OR_FAIL(rc == 0, "exit status %d after SIGINT", rc);
        CHECK_OR_FAIL(d2.counter("blocks_in") == 1, "blocks_in=%ld", d2.counter("blocks_in"));
    }
    std::printf("checked: SIGINT with live peers and a half-aggregated Seg -> exit 0\n");

    {
        // Jobs opened by key (JOB_OPEN): members open in any order without
        // waiting for each other; a call that starts before the last one
        // opened waits for it (up to --open-wait-ms), then is denied on every
        // member, the late one included.
        Daemon d3({"--open-wait-ms", "2000"});
        Client c3;
        std::vector<size_t> e;
        for (int i = 0; i < 3; ++i) {
            e.push_back(c3.connect(d3.address()));
        }
        const std::vector<uint32_t> nodes = {5, 5, 6};
        Msg o1 = c3.open_job(e[1], "job-key-one", nodes, 4, 1);
        Msg o0 = c3.open_job(e[0], "job-key-one", nodes, 4, 0);
        CHECK_OR_FAIL(o1.hdr.status == INA_PROTO_OK && o0.hdr.status == INA_PROTO_OK &&
                          o1.hdr.jid != 0 && o0.hdr.jid == o1.hdr.jid && o0.hdr.window == 4,
                      "JOB_OPEN: %s/%s jids %u/%u window %u", ina_proto_status_name(o1.hdr.status),
                      ina_proto_status_name(o0.hdr.status), o1.hdr.jid, o0.hdr.jid, o0.hdr.window);
        const uint32_t jid = o0.hdr.jid, w = o0.hdr.window;
        // MID 0 starts while rank 2 has not opened the job: it waits.
        const uint32_t cnt = 8;
        std::vector<int64_t> v(cnt, 1);
        auto block = [&](uint32_t r, uint64_t mid) {
            c3.send(e[r], allreduce_hdr(jid, r, mid, 0, w, INA_OP_SUM, INA_DT_INT64, cnt, cnt),
                    v.data(), cnt * sizeof(int64_t));
        };
        block(0, 0);
        block(1, 0);
        c3.fence(e[0]);
        c3.fence(e[1]);
        CHECK_OR_FAIL(c3.inbox().empty(), "a verdict before the job was complete: %s",
                      ina_proto_type_name(c3.inbox().front().hdr.type));
        // Rank 2 describes the job differently: refused, and only it.
        Msg bad = c3.open_job(e[2], "job-key-one", {5, 6, 6}, 4, 2);
        CHECK_OR_FAIL(bad.hdr.status == INA_PROTO_ERR_MISMATCH && bad.hdr.jid == 0,
                      "a different description: %s jid %u", ina_proto_status_name(bad.hdr.status),
                      bad.hdr.jid);
        Msg o2 = c3.open_job(e[2], "job-key-one", nodes, 4, 2);
        CHECK_OR_FAIL(o2.hdr.status == INA_PROTO_OK && o2.hdr.jid == jid, "rank 2: %s jid %u",
                      ina_proto_status_name(o2.hdr.status), o2.hdr.jid);
        // Complete now: the waiting call is granted to all three, and
        // completes with rank 2's block, exact everywhere.
        expect_grants(c3, jid, 0, {0, 1, 2});
        block(2, 0);
        for (uint32_t r = 0; r < 3; ++r) {
            Msg m = c3.wait_for([&](const Msg &m) { return m.hdr.jid == jid && m.hdr.rank == r; },
                                10000, "RESULT");
            CHECK_OR_FAIL(m.hdr.type == INA_PROTO_RESULT && m.hdr.mid == 0 &&
                              m.payload.size() == cnt * sizeof(int64_t) &&
                              reinterpret_cast<const int64_t *>(m.payload.data())[0] == 3,
                          "rank %u: %s instead of the RESULT of the waiting call", r,
                          ina_proto_type_name(m.hdr.type));
        }
        use_job(c3, e, jid, w, 11, 1);

        // A job one member never opens in time: after --open-wait-ms its call
        // is denied on the members there, and on the late one at its block.
        Msg p0 = c3.open_job(e[0], "job-key-two", {1, 2}, 2, 0);
        CHECK_OR_FAIL(p0.hdr.status == INA_PROTO_OK && p0.hdr.jid != jid, "second key: %s jid %u",
                      ina_proto_status_name(p0.hdr.status), p0.hdr.jid);
        const uint32_t jid2 = p0.hdr.jid, w2 = p0.hdr.window;
        // Rank r sends its block of MID `mid` of the second job; `denied`:
        // the agent answers DENY(incomplete) for that MID.
        auto block2 = [&](uint32_t r, uint64_t mid) {
            c3.send(e[r], allreduce_hdr(jid2, r, mid, 0, w2, INA_OP_SUM, INA_DT_INT64, cnt, cnt),
                    v.data(), cnt * sizeof(int64_t));
        };
        auto denied = [&](uint32_t r, uint64_t mid) {
            Msg d = c3.wait_for([&](const Msg &m) { return m.hdr.jid == jid2 && m.hdr.rank == r; },
                                10000, "DENY(incomplete)");
            CHECK_OR_FAIL(d.hdr.type == INA_PROTO_DENY && d.hdr.mid == mid &&
                              d.hdr.status == INA_PROTO_ERR_INCOMPLETE,
                          "rank %u, MID %lu: %s (%s) instead of DENY(incomplete)", r,
                          (unsigned long)mid, ina_proto_type_name(d.hdr.type),
                          ina_proto_status_name(d.hdr.status));
        };
        block2(0, 0);
        denied(0, 0); // after the wait
        // The job's next call does not wait again: denied at once (it is
        // never deferred, so the agent deferred one call of this job only).
        block2(0, 1);
        denied(0, 1);
        Msg p1 = c3.open_job(e[1], "job-key-two", {1, 2}, 2, 1);
        CHECK_OR_FAIL(p1.hdr.status == INA_PROTO_OK && p1.hdr.jid == jid2, "late open: %s",
                      ina_proto_status_name(p1.hdr.status));
        // The late member learns both verdicts at its blocks.
        block2(1, 0);
        block2(1, 1);
        denied(1, 0);
        denied(1, 1);
        use_job(c3, {e[0], e[1]}, jid2, w2, 12, 2);

        c3.leave(e[0], jid2, 0);
        c3.leave(e[1], jid2, 1);
        for (uint32_t r = 0; r < 3; ++r) {
            c3.leave(e[r], jid, r);
            c3.fence(e[r]);
        }
        // Every member left: the job and its key are gone; the key opens a new job.
        Msg again = c3.open_job(e[0], "job-key-one", {7}, 1, 0);
        CHECK_OR_FAIL(again.hdr.status == INA_PROTO_OK && again.hdr.jid != jid,
                      "reopened key: %s jid %u (old %u)", ina_proto_status_name(again.hdr.status),
                      again.hdr.jid, jid);
        c3.leave(e[0], again.hdr.jid, 0);
        c3.fence(e[0]);
        CHECK_OR_FAIL(c3.inbox().empty(), "%zu unexpected messages left", c3.inbox().size());
        rc = d3.terminate();
        CHECK_OR_FAIL(rc == 0, "exit status %d after SIGTERM", rc);
        CHECK_OR_FAIL(d3.counter("jobs_created") == 3 && d3.counter("jobs_freed") == 3,
                      "jobs_created=%ld jobs_freed=%ld", d3.counter("jobs_created"),
                      d3.counter("jobs_freed"));
        // Deferred: MID 0 of the first job (until rank 2 opened) and MID 0 of
        // the second (the wait in vain); not the second job's MID 1.
        CHECK_OR_FAIL(d3.counter("calls_deferred") == 2, "calls_deferred=%ld",
                      d3.counter("calls_deferred"));
    }
    std::printf("checked: JOB_OPEN by key in any order; a call before the last member opened "
                "waits and is granted once it did, or after --open-wait-ms is denied "
                "(incomplete) on every member, the late one at its first block; MISMATCH for "
                "another description; exact results; keys freed with their jobs\n");
    std::printf("PASS agent_jobs\n");
    return 0;
}

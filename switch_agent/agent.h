// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// ina-switchd's transport: the UCX listener and endpoints, the event loop,
// the send queue, and the dispatch of received messages (parsed and validated
// here) into the aggregation core (agg::Aggregator), whose Sink it is: what
// the core says becomes a queued UCX active message. Single-threaded: every
// UCX callback runs inside ucp_worker_progress() on the loop's thread.
#ifndef INA_AGENT_AGENT_H
#define INA_AGENT_AGENT_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <ucp/api/ucp.h>

#include "aggregator.h"
#include "ina_proto.h"
#include "ina_ucx.h"
#include "liveness.h"
#include "parent_link.h"
#include "spin_policy.h"
#include "wire.h"

namespace ina {

struct AgentConfig {
    // Off by default: on TCP (UCX 1.13) rendezvous has no zero-copy lane
    // and costs 40% of the blocks/s (docs/perf-history/agent-data-path.md); on InfiniBand or
    // RoCE it lands blocks by RDMA (docs/RDMA.md).
    static constexpr uint64_t kDefaultRndvBytes = 0;

    std::string host = "0.0.0.0";
    uint16_t port = 17300;
    agg::AggregatorConfig core; // pool size, Seg size, largest window
    SpinConfig spin;            // polling before sleeping (--spin-us, --spin-yield)
    // BLOCK payloads of at least this many bytes come by rendezvous, straight
    // into a Seg buffer (--rndv-bytes; told to clients in HELLO_ACK); 0: all
    // eager.
    uint64_t rndv_bytes = kDefaultRndvBytes;
    // HOST:PORT of this agent's parent in a tree of agents (--parent; empty:
    // none, this agent is a root and refuses jobs over several leaves).
    std::string parent;
    int parent_timeout_ms = 10000; // to connect to it at start
    // --parent-liveness-ms: a parent silent this long, probes unanswered, is
    // lost (ParentLink::set_liveness); 0: no probes.
    int parent_liveness_ms = 1000;
    // --child-liveness-ms: a child agent silent this long, probes
    // unanswered, is lost as if its connection had closed (check_children);
    // 0: no probes. Ranks are never probed: MPI lets a rank compute between
    // a call's post and its wait without a word to anyone.
    int child_liveness_ms = 1000;
    // Clients served at once (--max-conns): a HELLO beyond is refused
    // (LIMIT) and the connection closed; connections that never say HELLO
    // are refused by the listener beyond twice as many.
    uint32_t max_conns = 4096;
    // Tests only (--test-die-after-results N): SIGKILL itself instead of
    // queueing a RESULT beyond the N-th, as a crash in the middle of a call
    // (one of whose RESULTs went out already).
    uint64_t test_die_after_results = 0;
    // Tests only (--test-freeze-after-results N): SIGSTOP itself instead of
    // queueing a RESULT beyond the N-th (as above), as a hung agent whose
    // connections stay open; it goes on where it stopped once continued
    // (SIGCONT).
    uint64_t test_freeze_after_results = 0;
    // Benchmarks only (--bench-delay-us N): every message to a client
    // leaves N us after the agent made it, in order, as if the link to the
    // clients were that much longer (an emulated propagation delay, which
    // the kernel here cannot add: no netem). It lengthens the round trip a
    // window of Segs must cover, so a job needs more Segs to reach line rate
    // (bench/tenancy, the scarce-buffer regime). Host algorithms do not see
    // it. 0: none.
    std::chrono::microseconds bench_delay{0};
};

// What the transport counts (the core counts the rest: agg::Counters).
struct TransportCounters {
    uint64_t msgs_in = 0;
    uint64_t block_bytes_in = 0;   // payload bytes of the BLOCKs received
    uint64_t results_out = 0;      // RESULTs carrying the block (WANT_RESULT members)
    uint64_t acks_out = 0;         // ACK_ONLY RESULTs (no payload)
    uint64_t result_bytes_out = 0; // payload bytes of the RESULTs sent
    uint64_t grants_out = 0;       // GRANT messages (one per joined member per call, but:)
    uint64_t grants_implied = 0;   // GRANTs not sent: a RESULT of the call went out with them
    uint64_t blocks_rndv = 0;      // BLOCKs received by rendezvous into a pool buffer
    uint64_t results_rndv = 0;     // RESULTs sent by rendezvous
    uint64_t rndv_rejected = 0;    // rendezvous messages refused (not a valid BLOCK)
    uint64_t peers_accepted = 0;
    uint64_t peers_lost = 0;
    uint64_t child_probes = 0;     // PINGs sent to silent child agents
    uint64_t children_silent = 0;  // child agents given up: silent, probes included
    uint64_t peers_refused = 0;    // over --max-conns (at HELLO, or by the listener)
    uint64_t send_errors = 0;
};

// A connected client endpoint; the core knows it as a Member.
struct Peer : agg::Member {
    ucp_ep_h ep = nullptr;
    bool dead = false;
    std::string host;            // the client's IP address ("?" if unknown)
    uint64_t block_bytes_in = 0; // payload bytes of its BLOCKs
    uint64_t rndv_results = 0;   // its HELLO's threshold: RESULTs this big go by rendezvous
    bool admitted = false;       // its HELLO was accepted (counts against --max-conns)
    bool refused = false;        // its HELLO was refused: closed once the ERROR is out
    // The protocol version the connection speaks, chosen at its HELLO
    // (common/ina_proto.h, "Versions"); ours until then.
    uint8_t version = INA_PROTO_VERSION;
    // Where in the outbox a GRANT to it waits to be sent (none: SIZE_MAX):
    // a RESULT of the same call queued behind it makes it redundant.
    size_t grant_at = SIZE_MAX;
    uint64_t msgs_in = 0; // every message received from it
    Liveness live;        // a child agent's silence (Agent::check_children)
};

// Something else the agent's loop serves between messages (the control
// socket, the metrics endpoint; switch_agent/ops/): a descriptor that becomes
// readable when it has work, and serve(), which does that work without
// blocking. Served when its descriptor wakes the loop, and every few
// milliseconds while the loop never sleeps (clients calling back to back).
class Sidecar {
public:
    virtual ~Sidecar() = default;
    virtual int fd() const = 0;
    virtual void serve() = 0;
    // Milliseconds until serve() must run even without an event (-1: never).
    virtual int next_wake_ms() const { return -1; }
};

class Agent final : private agg::WireSink {
public:
    Agent(const AgentConfig &cfg, const agg::Aggregator::SchedulerFactory &make_scheduler);
    ~Agent() override;
    Agent(const Agent &) = delete;
    Agent &operator=(const Agent &) = delete;

    // Create the UCX context, worker and listener. Throws std::runtime_error.
    void start();
    // "host:port" actually bound (port resolved when 0 was asked).
    std::string bound_address() const;
    // Serve until signal_fd (a signalfd) becomes readable. Returns the signal.
    int run(int signal_fd);

    const agg::Counters &counters() const { return agg_.counters(); }
    const TransportCounters &transport_counters() const { return counters_; }
    size_t live_jobs() const { return agg_.live_jobs(); }
    void log_counters() const;

    // For the operator's views (switch_agent/ops/): read-only, on the
    // loop's thread, between messages.
    const AgentConfig &config() const { return cfg_; }
    const agg::Aggregator &core() const { return agg_; }
    agg::Aggregator &core() { return agg_; }
    const ParentLink *parent() const { return parent_.get(); }
    agg::Clock::time_point started() const { return started_; }
    uint32_t admitted() const { return admitted_; }
    size_t connections() const { return peers_.size(); }
    // BLOCK payload bytes per client host, of every peer so far.
    std::map<std::string, uint64_t> bytes_in_by_host() const;
    // Clients connected per host, now.
    std::map<std::string, uint32_t> peers_by_host() const;
    // Serve `s` from run()'s loop (not owned; it must outlive run()).
    void add_sidecar(Sidecar *s) { sidecars_.push_back(s); }

private:
    // One queued or in-flight message to a client. The header lives here until
    // UCX completes the send (1.13 has no COPY_HEADER flag).
    struct SendCtx {
        Agent *agent = nullptr;
        Peer *peer = nullptr;
        ina_proto_hdr_t hdr;
        agg::BufRef payload; // a reference on a result buffer, or none
        size_t len = 0;
        bool implied = false; // a GRANT that a RESULT behind it in the outbox implies
        agg::Clock::time_point due{}; // --bench-delay-us: not sent before then
        // --bench-delay-us: the payload, copied, so that a held RESULT does
        // not keep its Seg's buffer (a switch's result leaves its buffer
        // when it is sent; only the wire delays it).
        std::vector<std::byte> held;
    };

    static void on_conn_request(ucp_conn_request_h req, void *arg);
    static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status);
    static ucs_status_t on_am(void *arg, const void *header, size_t header_length, void *data,
                              size_t length, const ucp_am_recv_param_t *param);
    static void on_send_done(void *request, ucs_status_t status, void *user_data);
    static void on_recv_done(void *request, ucs_status_t status, size_t length,
                             void *user_data);

    // A BLOCK on its way by rendezvous: landing in `buf` (a pool buffer)
    // until UCX completes the receive; then it is served like an eager one.
    // Its peer may be gone by then (known by id, never by pointer).
    struct RecvCtx {
        Agent *agent = nullptr;
        uint64_t peer_id = 0;
        ucp_ep_h ep = nullptr;
        ina_proto_hdr_t hdr;
        agg::BufRef buf;
        size_t len = 0;
        void *req = nullptr; // UCX's request while in flight
    };
    void receive_rndv(Peer *peer, const ina_proto_hdr_t &h, void *desc, size_t length);
    void finish_recv(RecvCtx *ctx, ucs_status_t status);

    // Work deferred out of UCX callbacks: sends, accepts, closes. Returns
    // whether it did anything (then progress must run again).
    bool service();
    void accept(ucp_conn_request_h req);
    // False when it could not leave its jobs (out of memory): try again later.
    bool drop_peer(Peer &peer);
    // The scheduler's clock, while the core has deferred calls.
    void tick();
    // Probe child agents gone silent, give up those silent for
    // --child-liveness-ms, probes included (every sixth of it).
    void check_children(agg::Clock::time_point now);
    bool watch_children() const { return cfg_.child_liveness_ms > 0 && agg_.child_jobs() > 0; }
    agg::Clock::time_point next_children_{};
    // Whether a wait now is for something due soon: a granted call holds
    // Segs (its other members' blocks come within a round trip), or sends
    // are completing.
    bool work_outstanding() const;
    // Poll the worker for up to the policy's budget; whether anything came.
    bool spin(const SpinPolicy &policy);

    // First look at every message: transport checks, ina_proto_check, then dispatch.
    void receive(Peer *peer, const ina_proto_hdr_t &h, const void *header, size_t header_length,
                 const void *data, size_t length, uint64_t recv_attr);

    // agg::WireSink: every message the core says, queued for service().
    void send(agg::Member &to, const ina_proto_hdr_t &h, agg::BufRef payload,
              size_t len) override;
    ina_proto_status_t hello(agg::Member &from, const ina_proto_hdr_t &h,
                             uint64_t *rndv_blocks) override;
    void finish_send(SendCtx *ctx, ucs_status_t status);
    void recycle(SendCtx *ctx); // back to the free list (never allocates)

    AgentConfig cfg_;
    TransportCounters counters_;
    agg::Clock::time_point started_ = agg::Clock::now();
    std::vector<Sidecar *> sidecars_;
    agg::Clock::time_point next_sidecars_{}; // while busy: serve them then
    // Serve every sidecar (when woken by one, or after a while busy).
    void serve_sidecars();

    ucx::Context context_;
    ucx::Worker worker_;
    ucx::Listener listener_;

    std::unordered_map<ucp_ep_h, std::unique_ptr<Peer>> peers_;
    // BLOCK payload bytes per client host, of the peers gone so far (the
    // live ones are added when the counters are logged): what each host's
    // link carried up, e.g. S per call per host with the node stage.
    std::map<std::string, uint64_t> host_bytes_in_;
    std::vector<Peer *> dying_;                  // error seen, close after the next flush
    std::vector<ucp_conn_request_h> conn_reqs_;  // accept outside the callback
    uint64_t next_peer_id_ = 1;
    uint32_t admitted_ = 0; // peers whose HELLO was accepted (AgentConfig::max_conns)
    // The test faults (--test-die-after-results, --test-freeze-after-results):
    // RESULTs queued so far, and whether it froze once already.
    bool test_faults() const
    {
        return cfg_.test_die_after_results != 0 || cfg_.test_freeze_after_results != 0;
    }
    void test_fault(const ina_proto_hdr_t &result);
    uint64_t results_queued_ = 0;
    bool frozen_ = false;
    // The call of the latest RESULT with payload sent (test faults only).
    uint32_t sent_result_jid_ = 0;
    uint64_t sent_result_mid_ = UINT64_MAX;
    std::vector<Peer *> closing_; // refused at HELLO: closed after the outbox's flush
    agg::Clock::time_point next_tick_{};
    SpinPolicy waiting_; // learns the waits that began with work outstanding
    // Learns the waits that began with none: the gap between one call's end
    // and the next message. Short while clients call back to back (a latency
    // bound loop), so the agent polls through it; long when they compute or
    // are gone, and then the agent sleeps at once (idle: no CPU).
    SpinPolicy between_;

    // Declared before the sends, whose payload references point into its
    // pool: destroyed after them.
    agg::Aggregator agg_;

    std::vector<std::unique_ptr<SendCtx>> send_store_; // owns every SendCtx
    std::vector<SendCtx *> send_free_;
    std::vector<SendCtx *> outbox_;
    size_t sends_in_flight_ = 0;

    std::vector<std::unique_ptr<RecvCtx>> recv_store_; // owns every RecvCtx
    std::vector<RecvCtx *> recv_free_;
    std::vector<RecvCtx *> recvs_;                       // in flight

    // The link up (--parent). Declared last: gone before the core and the
    // pool its sends reference.
    std::unique_ptr<ParentLink> parent_;
};

} // namespace ina

#endif

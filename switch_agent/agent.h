// ina-switchd's core: UCX listener and endpoints, message dispatch, jobs, and
// the block path (Seg aggregation, RESULT fan-out). Single-threaded: every
// UCX callback runs inside ucp_worker_progress() on the loop's thread.
#ifndef INA_AGENT_AGENT_H
#define INA_AGENT_AGENT_H

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <ucp/api/ucp.h>

#include "ina_proto.h"
#include "job.h"
#include "scheduler.h"
#include "seg_pool.h"

namespace ina {

struct AgentConfig {
    std::string host = "0.0.0.0";
    uint16_t port = 17300;
    uint32_t segs = 1024;
    uint32_t seg_bytes = 65536;
    uint32_t max_window = 64;
};

struct Counters {
    uint64_t msgs_in = 0;
    uint64_t blocks_in = 0;
    uint64_t results_out = 0;      // RESULTs carrying the block (WANT_RESULT members)
    uint64_t acks_out = 0;         // ACK_ONLY RESULTs (no payload)
    uint64_t result_bytes_out = 0; // payload bytes of the RESULTs sent
    uint64_t grants_out = 0;       // GRANT messages (one per joined member per call)
    uint64_t rejected[INA_PROTO_STATUS_MAX + 1] = {}; // ERROR replies by status
    uint64_t rndv_rejected = 0;
    uint64_t foreign = 0;         // blocks from an ep not bound to (jid, rank)
    uint64_t calls_granted = 0;
    uint64_t calls_denied = 0;
    uint64_t calls_aborted = 0;   // a member left/died in the middle of the call
    uint64_t denied_blocks = 0;   // blocks of denied / forgotten calls, dropped
    uint64_t duplicate = 0;       // second contribution of a rank to one block
    uint64_t jobs_created = 0;
    uint64_t jobs_freed = 0;
    uint64_t peers_accepted = 0;
    uint64_t peers_lost = 0;
    uint64_t send_errors = 0;
};

// A connected client endpoint.
struct Peer {
    ucp_ep_h ep = nullptr;
    uint64_t id = 0;
    bool dead = false;
    std::vector<std::pair<uint32_t, uint32_t>> memberships; // (jid, rank)
};

class Agent {
public:
    Agent(const AgentConfig &cfg, std::unique_ptr<Scheduler> scheduler);
    ~Agent();
    Agent(const Agent &) = delete;
    Agent &operator=(const Agent &) = delete;

    // Create the UCX context, worker and listener. Throws std::runtime_error.
    void start();
    // "host:port" actually bound (port resolved when 0 was asked).
    std::string bound_address() const;
    // Serve until signal_fd (a signalfd) becomes readable. Returns the signal.
    int run(int signal_fd);

    const Counters &counters() const { return counters_; }
    size_t live_jobs() const { return jobs_.size(); }
    void log_counters() const;

private:
    struct UcpContextDeleter {
        void operator()(ucp_context_h c) const { ucp_cleanup(c); }
    };
    struct UcpWorkerDeleter {
        void operator()(ucp_worker_h w) const { ucp_worker_destroy(w); }
    };
    struct UcpListenerDeleter {
        void operator()(ucp_listener_h l) const { ucp_listener_destroy(l); }
    };
    // One queued or in-flight message to a client. The header lives here until
    // UCX completes the send (1.13 has no COPY_HEADER flag).
    struct SendCtx {
        Agent *agent = nullptr;
        Peer *peer = nullptr;
        ina_proto_hdr_t hdr;
        uint32_t buf = kNoIndex; // payload buffer (refcounted) or none
        size_t len = 0;
    };

    static void on_conn_request(ucp_conn_request_h req, void *arg);
    static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status);
    static ucs_status_t on_am(void *arg, const void *header, size_t header_length, void *data,
                              size_t length, const ucp_am_recv_param_t *param);
    static void on_send_done(void *request, ucs_status_t status, void *user_data);

    // Work deferred out of UCX callbacks: sends, accepts, closes. Returns
    // whether it did anything (then progress must run again).
    bool service();
    void accept(ucp_conn_request_h req);
    void drop_peer(Peer &peer);
    void close_ep(ucp_ep_h ep);

    // First look at every message: transport checks, ina_proto_check, then dispatch.
    void receive(Peer *peer, const ina_proto_hdr_t &h, const void *header, size_t header_length,
                 const void *data, size_t length, uint64_t recv_attr);
    void dispatch(Peer &peer, const ina_proto_hdr_t &h, const void *data, size_t len);
    void on_hello(Peer &peer, const ina_proto_hdr_t &h);
    void on_job_create(Peer &peer, const ina_proto_hdr_t &h, const void *data);
    void on_job_join(Peer &peer, const ina_proto_hdr_t &h);
    void on_job_leave(Peer &peer, const ina_proto_hdr_t &h);
    void on_block(Peer &peer, const ina_proto_hdr_t &h, const void *data);
    // Tell every joined member the decision for (jid, mid): GRANT or DENY.
    void announce(Job &job, uint64_t mid, ina_proto_type_t type, ina_proto_status_t status);
    // Seg `seg` completed block h.sid: RESULT with the payload to the members
    // that want it, ACK_ONLY RESULT to the others; the Seg is emptied.
    void send_result(Job &job, const ina_proto_hdr_t &h, uint32_t seg);
    void leave_job(uint32_t jid, uint32_t rank, Peer &peer);
    void free_job(uint32_t jid);

    // Queue a message; payload buffer `buf` (kNoIndex: none) must hold a reference.
    void queue(Peer &peer, const ina_proto_hdr_t &h, uint32_t buf, size_t len);
    void reply(Peer &peer, ina_proto_type_t type, const ina_proto_hdr_t &req,
               ina_proto_status_t status);
    void reject(Peer *peer, const ina_proto_hdr_t &h, ina_proto_status_t status,
                const char *why);
    void finish_send(SendCtx *ctx, ucs_status_t status);

    AgentConfig cfg_;
    std::unique_ptr<Scheduler> scheduler_;
    SegPool pool_;
    Counters counters_;

    std::unique_ptr<ucp_context, UcpContextDeleter> context_;
    std::unique_ptr<ucp_worker, UcpWorkerDeleter> worker_;
    std::unique_ptr<ucp_listener, UcpListenerDeleter> listener_;

    std::unordered_map<ucp_ep_h, std::unique_ptr<Peer>> peers_;
    std::vector<Peer *> dying_;                  // error seen, close after the next flush
    std::vector<ucp_conn_request_h> conn_reqs_;  // accept outside the callback
    std::unordered_map<uint32_t, std::unique_ptr<Job>> jobs_;
    uint32_t next_jid_ = 1;
    uint64_t next_peer_id_ = 1;

    std::vector<std::unique_ptr<SendCtx>> send_store_; // owns every SendCtx
    std::vector<SendCtx *> send_free_;
    std::vector<SendCtx *> outbox_;
    size_t sends_in_flight_ = 0;
    std::vector<void *> close_reqs_;
    bool seen_reject_[INA_PROTO_STATUS_MAX + 1] = {}; // first of each reason logs at warn
};

} // namespace ina

#endif

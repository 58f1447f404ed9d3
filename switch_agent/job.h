// Job descriptor at the agent: one per communicator (JID), its members and
// their endpoints, and the state of its offloaded calls (one per MID).
#ifndef INA_AGENT_JOB_H
#define INA_AGENT_JOB_H

#include <cstdint>
#include <map>
#include <vector>

#include "ina_proto.h"
#include "seg_pool.h"

namespace ina {

struct Peer; // a client endpoint (agent.h); jobs hold non-owning pointers

// One offloaded call (JID, MID), decided once at its first block. Several
// calls of one job may be in flight at once (non-blocking collectives), each
// on its own lease.
struct Call {
    uint8_t coll = 0;               // ina_proto_coll_t of the first block (logs)
    bool granted = false;
    ina_proto_status_t deny_status = INA_PROTO_OK;
    std::vector<uint32_t> lease;    // Seg of each slot: lease[sid % window]
    std::vector<uint32_t> next_sid; // per slot: next SID it may serve (older = duplicate)
    uint64_t total = 0;             // elements of the call
    uint64_t done = 0;              // elements whose RESULT went out
    bool finished = false;          // lease returned (granted) or denied
};

class Job {
public:
    Job(uint32_t jid, uint32_t window, const uint32_t *node_ids, uint32_t nmembers,
        const Peer *creator);

    uint32_t jid() const { return jid_; }
    uint32_t window() const { return window_; }
    uint32_t nmembers() const { return topo_.nranks(); }
    const Topology &topology() const { return topo_; }

    // Membership. join() returns OK, or the status explaining the refusal.
    ina_proto_status_t join(uint32_t rank, Peer *peer);
    bool leave(uint32_t rank, const Peer *peer); // false if peer is not that rank
    bool is_member(uint32_t rank, const Peer *peer) const
    {
        return rank < members_.size() && peer != nullptr && members_[rank] == peer;
    }
    Peer *member(uint32_t rank) const { return members_[rank]; }
    uint32_t joined() const { return joined_; }
    // The creator died before anybody joined: nobody will ever use the job.
    bool orphaned_by(const Peer *peer) const
    {
        return joined_ == 0 && !ever_joined_ && creator_ == peer;
    }
    // Dead when everybody who joined has left.
    bool dead() const { return ever_joined_ && joined_ == 0; }

    // A member sent a block of `mid`: it has moved past every older MID.
    void note_mid(uint32_t rank, uint64_t mid);
    Call *find_call(uint64_t mid);
    // True if `mid` is older than every joined member's latest MID and has no
    // record any more: a late block of a forgotten (denied) call.
    bool is_retired(uint64_t mid) const { return mid < retired_below_; }
    Call &add_call(uint64_t mid) { return calls_[mid]; }
    // Forget finished (completed or denied) calls every joined member has
    // moved past, so memory stays bounded. A granted call still in flight is
    // kept even then: with non-blocking collectives every member may post
    // later MIDs before this one completes. Its lease returns when it
    // completes, or when a member leaves or dies (abort_open_calls); a client
    // that gives up on a call closes its endpoint, so nothing waits forever.
    void retire();
    // A member is gone in the middle of granted calls: they can never
    // complete. Returns their leases and the MIDs, marked finished.
    std::vector<uint64_t> abort_open_calls(SegPool &pool);
    // Give back everything the job holds (job freed).
    void release_all(SegPool &pool);
    size_t live_calls() const { return calls_.size(); }

private:
    uint32_t jid_;
    uint32_t window_;
    Topology topo_;
    const Peer *creator_;
    std::vector<Peer *> members_;
    std::vector<uint64_t> next_mid_; // per rank: latest MID seen + 1 (0 = none)
    uint32_t joined_ = 0;
    bool ever_joined_ = false;
    uint64_t retired_below_ = 0;
    std::map<uint64_t, Call> calls_;
};

} // namespace ina

#endif

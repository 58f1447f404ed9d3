// Grant/deny policy for offloaded calls (SEEDS S4): the agent asks once per
// (JID, MID), at the first block of the call, and gives every member the answer.
#ifndef INA_AGENT_SCHEDULER_H
#define INA_AGENT_SCHEDULER_H

#include <cstdint>

#include "ina_proto.h"
#include "seg_pool.h"

namespace ina {

struct CallRequest {
    uint32_t jid;
    uint64_t mid;
    uint32_t window; // Segs the call needs (its lease)
    uint64_t total;  // elements of the call's result vector
    uint8_t coll;    // ina_proto_coll_t
    uint8_t op;
    uint8_t dtype;
};

struct Decision {
    bool grant;
    ina_proto_status_t status; // deny reason when !grant
};

class Scheduler {
public:
    virtual ~Scheduler() = default;
    virtual Decision decide(const CallRequest &req, const SegPool &pool) = 0;
};

// Default policy: grant while the pool has a whole lease free, else deny
// (the denied call runs the host algorithm at once instead of waiting).
class FreeSegScheduler final : public Scheduler {
public:
    Decision decide(const CallRequest &req, const SegPool &pool) override;
};

} // namespace ina

#endif

#include "scheduler.h"

namespace ina {

Decision FreeSegScheduler::decide(const CallRequest &req, const SegPool &pool)
{
    if (pool.free_segs() >= req.window) {
        return {true, INA_PROTO_OK};
    }
    return {false, INA_PROTO_ERR_NO_RESOURCES};
}

} // namespace ina

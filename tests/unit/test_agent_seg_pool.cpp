// Unit tests of the agent's core without UCX traffic: Seg pool leases, Rank/Node
// bitmaps, rank-ordered float reduction, scheduler and per-MID call bookkeeping.
#include <check.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "agent.h"
#include "ina_reduce.h"
#include "job.h"
#include "scheduler.h"
#include "seg_pool.h"

using namespace ina;

START_TEST(test_lease_release_exhaustion)
{
    SegPool pool(8, 256);
    ck_assert_uint_eq(pool.size(), 8);
    std::vector<uint32_t> a, b, c;
    ck_assert(pool.acquire(4, a));
    ck_assert(pool.acquire(4, b));
    ck_assert_uint_eq(pool.free_segs(), 0);
    ck_assert(!pool.acquire(1, c)); // exhausted
    std::vector<uint32_t> all(a);
    all.insert(all.end(), b.begin(), b.end());
    std::sort(all.begin(), all.end());
    for (uint32_t i = 0; i < 8; ++i) {
        ck_assert_uint_eq(all[i], i); // every Seg leased exactly once
    }
    pool.release(a);
    ck_assert_uint_eq(pool.free_segs(), 4);
    ck_assert(!pool.acquire(5, c)); // all or nothing
    ck_assert_uint_eq(pool.free_segs(), 4);
    ck_assert(pool.acquire(4, c));
    std::sort(c.begin(), c.end());
    std::sort(a.begin(), a.end());
    ck_assert(c == a); // the released Segs came back
    ck_assert(!pool.acquire(0, c));
}
END_TEST

START_TEST(test_bitmaps_several_ranks_per_node)
{
    // 6 ranks on 3 nodes: node 7 holds ranks 0,1,2; node 3 ranks 3,4; node 9 rank 5.
    const uint32_t node_ids[6] = {7, 7, 7, 3, 3, 9};
    Topology topo(node_ids, 6);
    ck_assert_uint_eq(topo.nnodes(), 3);
    SegPool pool(2, 64 * sizeof(int32_t));
    std::vector<uint32_t> lease;
    ck_assert(pool.acquire(2, lease));
    const uint32_t seg = lease[1];

    std::vector<std::vector<int32_t>> data(6, std::vector<int32_t>(64));
    std::vector<int32_t> ref(64, 0);
    for (int r = 0; r < 6; ++r) {
        for (int i = 0; i < 64; ++i) {
            data[r][i] = (r + 1) * 1000 + i * (r % 2 ? -3 : 5);
            ref[i] += data[r][i];
        }
    }
    auto block = [&](uint32_t r) {
        return Block{r, 5, INA_OP_SUM, INA_DT_INT32, 64, 128, data[r].data()};
    };
    // order: 0, 3, 5 (node 9 done), 1, 4 (node 3 done), 2 (node 7 done = complete)
    ck_assert(pool.contribute(seg, topo, block(0)) == SegOutcome::kStored);
    ck_assert_uint_eq(pool.ranks_pending(seg), 5);
    ck_assert(!pool.rank_pending(seg, 0));
    ck_assert(pool.rank_pending(seg, 1));
    ck_assert_uint_eq(pool.nodes_pending(seg), 3);
    ck_assert(pool.contribute(seg, topo, block(0)) == SegOutcome::kDuplicate);
    ck_assert(pool.contribute(seg, topo, block(3)) == SegOutcome::kStored);
    ck_assert(pool.contribute(seg, topo, block(5)) == SegOutcome::kStored);
    ck_assert_uint_eq(pool.nodes_pending(seg), 2);
    ck_assert(!pool.node_pending(seg, topo.node_of(5)));
    ck_assert(pool.node_pending(seg, topo.node_of(3)));
    // Another SID on a busy Seg, or a different shape, is refused untouched.
    Block other = block(1);
    other.sid = 7;
    ck_assert(pool.contribute(seg, topo, other) == SegOutcome::kBusy);
    other = block(1);
    other.count = 32;
    ck_assert(pool.contribute(seg, topo, other) == SegOutcome::kMismatch);
    ck_assert(pool.rank_pending(seg, 1));
    ck_assert(pool.contribute(seg, topo, block(1)) == SegOutcome::kStored);
    ck_assert(pool.contribute(seg, topo, block(4)) == SegOutcome::kStored);
    ck_assert_uint_eq(pool.nodes_pending(seg), 1);
    ck_assert(pool.node_pending(seg, topo.node_of(2)));
    ck_assert_uint_eq(pool.ranks_pending(seg), 1);
    ck_assert(pool.contribute(seg, topo, block(2)) == SegOutcome::kComplete);
    ck_assert_uint_eq(pool.nodes_pending(seg), 0);

    uint32_t buf = pool.take_result(seg);
    ck_assert(!pool.busy(seg)); // released at once
    ck_assert_int_eq(std::memcmp(pool.buffers().data(buf), ref.data(), 64 * sizeof(int32_t)), 0);
    // The Seg serves the next SID while the result is still referenced.
    ck_assert(pool.contribute(seg, topo, block(0)) == SegOutcome::kStored);
    pool.buffers().unref(buf);
    pool.release(lease); // drops the half-filled Seg too
    ck_assert_uint_eq(pool.buffers().free_count(), pool.buffers().allocated());

    Block big = block(0);
    big.count = 65;
    ck_assert(pool.acquire(1, lease));
    ck_assert(pool.contribute(lease[0], topo, big) == SegOutcome::kTooBig);
}
END_TEST

// Every arrival order of 4 ranks (2 per node) must give the bits of
// ((r0 op r1) op r2) op r3 computed with ina_reduce.
template <typename T>
static void check_permutations(unsigned op, unsigned dtype, const std::vector<std::vector<T>> &in)
{
    const uint32_t n = 4;
    const uint32_t count = static_cast<uint32_t>(in[0].size());
    const uint32_t node_ids[n] = {0, 0, 1, 1};
    Topology topo(node_ids, n);
    std::vector<T> ref(in[0]);
    for (uint32_t r = 1; r < n; ++r) {
        ina_reduce(op, dtype, ref.data(), in[r].data(), count);
    }
    SegPool pool(1, count * sizeof(T));
    std::vector<uint32_t> lease;
    ck_assert(pool.acquire(1, lease));
    std::vector<uint32_t> order = {0, 1, 2, 3};
    int perms = 0;
    bool order_matters = false;
    do {
        for (uint32_t i = 0; i < n; ++i) {
            uint32_t r = order[i];
            Block b{r, 0, static_cast<uint8_t>(op), static_cast<uint8_t>(dtype), count, count,
                    in[r].data()};
            SegOutcome o = pool.contribute(lease[0], topo, b);
            ck_assert(o == (i + 1 == n ? SegOutcome::kComplete : SegOutcome::kStored));
        }
        uint32_t buf = pool.take_result(lease[0]);
        ck_assert_msg(std::memcmp(pool.buffers().data(buf), ref.data(), count * sizeof(T)) == 0,
                      "permutation %u%u%u%u differs from the rank-order reference", order[0],
                      order[1], order[2], order[3]);
        pool.buffers().unref(buf);
        // What arrival-order reduction would have given: proves the data is order sensitive.
        std::vector<T> naive(in[order[0]]);
        for (uint32_t i = 1; i < n; ++i) {
            ina_reduce(op, dtype, naive.data(), in[order[i]].data(), count);
        }
        order_matters |= std::memcmp(naive.data(), ref.data(), count * sizeof(T)) != 0;
        ++perms;
    } while (std::next_permutation(order.begin(), order.end()));
    ck_assert_int_eq(perms, 24);
    ck_assert_msg(order_matters, "test data does not depend on the order");
    // Staging buffers were all returned and are reused, not reallocated per block.
    ck_assert_uint_eq(pool.buffers().free_count(), pool.buffers().allocated());
    ck_assert_uint_le(pool.buffers().allocated(), n);
}

START_TEST(test_ordered_float_sum_all_permutations)
{
    std::vector<std::vector<float>> in(4, std::vector<float>(33));
    for (int i = 0; i < 33; ++i) {
        in[0][i] = 1.0e8f + static_cast<float>(i);
        in[1][i] = 3.3f * static_cast<float>(i + 1);
        in[2][i] = -1.0e8f;
        in[3][i] = 0.1f + 1.7f * static_cast<float>(i);
    }
    check_permutations<float>(INA_OP_SUM, INA_DT_FLOAT, in);
}
END_TEST

START_TEST(test_ordered_double_sum_all_permutations)
{
    std::vector<std::vector<double>> in(4, std::vector<double>(17));
    for (int i = 0; i < 17; ++i) {
        in[0][i] = 1.0e17 + i;
        in[1][i] = 0.3 * (i + 1);
        in[2][i] = -1.0e17;
        in[3][i] = 1.0 / (i + 3);
    }
    check_permutations<double>(INA_OP_SUM, INA_DT_DOUBLE, in);
}
END_TEST

START_TEST(test_scheduler_grant_deny)
{
    SegPool pool(8, 64);
    FreeSegScheduler sched;
    CallRequest req{1, 0, 4, 100, INA_OP_SUM, INA_DT_INT32};
    ck_assert(sched.decide(req, pool).grant);
    std::vector<uint32_t> a, b;
    ck_assert(pool.acquire(4, a));
    ck_assert(sched.decide(req, pool).grant); // 4 still free
    ck_assert(pool.acquire(4, b));
    Decision d = sched.decide(req, pool);
    ck_assert(!d.grant);
    ck_assert_int_eq(d.status, INA_PROTO_ERR_NO_RESOURCES);
    req.window = 2;
    pool.release(a);
    ck_assert(sched.decide(req, pool).grant);
    req.window = 5;
    ck_assert(!sched.decide(req, pool).grant);
}
END_TEST

START_TEST(test_job_membership_and_retire)
{
    SegPool pool(8, 64);
    const uint32_t nodes[3] = {1, 2, 3};
    Peer p0, p1, p2, stranger;
    Job job(42, 4, nodes, 3, &p0);
    ck_assert(!job.dead());
    ck_assert(job.orphaned_by(&p0));
    ck_assert_int_eq(job.join(0, &p0), INA_PROTO_OK);
    ck_assert(!job.orphaned_by(&p0));
    ck_assert_int_eq(job.join(1, &p1), INA_PROTO_OK);
    ck_assert_int_eq(job.join(1, &stranger), INA_PROTO_ERR_NOT_MEMBER);
    ck_assert_int_eq(job.join(3, &stranger), INA_PROTO_ERR_MALFORMED);
    ck_assert_int_eq(job.join(2, &p2), INA_PROTO_OK);
    ck_assert(job.is_member(1, &p1));
    ck_assert(!job.is_member(1, &p0));
    ck_assert_uint_eq(job.joined(), 3);

    // MID 0 granted but abandoned, MID 1 denied.
    Call &c0 = job.add_call(0);
    c0.granted = true;
    ck_assert(pool.acquire(4, c0.lease));
    Call &c1 = job.add_call(1);
    c1.finished = true;
    for (uint32_t r = 0; r < 3; ++r) {
        job.note_mid(r, 1);
    }
    ck_assert_uint_eq(job.retire(pool), 1); // MID 0 forgotten, its lease reclaimed
    ck_assert_uint_eq(pool.free_segs(), 8);
    ck_assert(job.find_call(0) == nullptr);
    ck_assert(job.find_call(1) != nullptr);
    ck_assert(job.is_retired(0));
    ck_assert(!job.is_retired(1));
    job.note_mid(0, 2);
    job.note_mid(1, 2);
    job.retire(pool);
    ck_assert(job.find_call(1) != nullptr); // rank 2 has not moved past MID 1
    ck_assert(job.leave(2, &p2));
    job.retire(pool);
    ck_assert(job.find_call(1) == nullptr); // the leaver no longer holds it back
    ck_assert_uint_eq(job.live_calls(), 0);
    ck_assert(!job.leave(2, &p2));
    ck_assert(job.leave(0, &p0));
    ck_assert(job.leave(1, &p1));
    ck_assert(job.dead());
}
END_TEST

int main()
{
    Suite *s = suite_create("agent_core");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_lease_release_exhaustion);
    tcase_add_test(tc, test_bitmaps_several_ranks_per_node);
    tcase_add_test(tc, test_ordered_float_sum_all_permutations);
    tcase_add_test(tc, test_ordered_double_sum_all_permutations);
    tcase_add_test(tc, test_scheduler_grant_deny);
    tcase_add_test(tc, test_job_membership_and_retire);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

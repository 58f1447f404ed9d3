// Unit tests of the client's sliding send window (ina::SendWindow, SEEDS S0):
// a simple model of an agent acknowledges blocks in various orders and the
// tests check, against values computed independently here, that no more than
// `window` blocks are ever in flight, slots are reused only after their
// previous block's RESULT and send completion, blocks tile the buffer exactly,
// and sizes beyond 4 GiB do not overflow.
#include <check.h>

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <random>
#include <set>
#include <vector>

#include "ina_window.h"

using ina::SendWindow;

// Send everything allowed now; returns the SIDs posted (sends complete at once
// unless defer_send_done).
static std::vector<uint64_t> pump(SendWindow &w, bool defer_send_done = false)
{
    std::vector<uint64_t> sent;
    while (w.can_send()) {
        uint64_t sid = w.on_sent();
        if (!defer_send_done) {
            w.on_send_done(w.slot_of(sid));
        }
        sent.push_back(sid);
    }
    return sent;
}

START_TEST(test_geometry)
{
    SendWindow w(4);
    // 1000 floats in 256-byte blocks: 64 per block, 16 blocks, last has 40.
    ck_assert(w.start(1000, 4, 256));
    ck_assert_uint_eq(w.elems_per_block(), 64);
    ck_assert_uint_eq(w.nblocks(), 16);
    ck_assert_uint_eq(w.block_count(0), 64);
    ck_assert_uint_eq(w.block_count(15), 1000 - 15 * 64);
    ck_assert_uint_eq(w.block_bytes(15), (1000 - 15 * 64) * 4);
    ck_assert_uint_eq(w.block_offset(15), 15 * 256);
    // Blocks tile [0, count) exactly.
    uint64_t total = 0;
    for (uint64_t s = 0; s < w.nblocks(); ++s) {
        ck_assert_uint_eq(w.block_offset(s), total * 4);
        total += w.block_count(s);
    }
    ck_assert_uint_eq(total, 1000);

    // Exact multiple: no partial block.
    ck_assert(w.start(128, 4, 256));
    ck_assert_uint_eq(w.nblocks(), 2);
    ck_assert_uint_eq(w.block_count(1), 64);
    // One element.
    ck_assert(w.start(1, 16, 256));
    ck_assert_uint_eq(w.nblocks(), 1);
    ck_assert_uint_eq(w.block_bytes(0), 16);
    // Zero elements: nothing to send, already complete.
    ck_assert(w.start(0, 8, 256));
    ck_assert_uint_eq(w.nblocks(), 0);
    ck_assert(!w.can_send());
    ck_assert(w.complete());
    // Nonsense geometry is refused.
    ck_assert(!w.start(10, 0, 256));
    ck_assert(!w.start(10, 16, 8));
}
END_TEST

START_TEST(test_in_order_window_bound)
{
    const uint32_t W = 3;
    SendWindow w(W);
    ck_assert(w.start(10 * 16, 1, 16)); // 10 blocks
    std::vector<uint64_t> sent = pump(w);
    ck_assert_uint_eq(sent.size(), W); // 0, 1, 2
    ck_assert_uint_eq(w.in_flight(), W);
    uint64_t next_expected = W;
    for (uint64_t sid = 0; sid < 10; ++sid) {
        ck_assert_int_eq(static_cast<int>(w.on_ack(sid)), static_cast<int>(SendWindow::Ack::fresh));
        std::vector<uint64_t> more = pump(w);
        // The RESULT of sid lets exactly sid + W go out (S0), reusing sid's slot.
        if (sid + W < 10) {
            ck_assert_uint_eq(more.size(), 1);
            ck_assert_uint_eq(more[0], next_expected);
            ck_assert_uint_eq(w.slot_of(more[0]), w.slot_of(sid));
            ++next_expected;
        } else {
            ck_assert_uint_eq(more.size(), 0);
        }
        ck_assert_uint_le(w.in_flight(), W);
    }
    ck_assert(w.complete());
    ck_assert_uint_eq(w.acked(), 10);
}
END_TEST

START_TEST(test_out_of_order_acks)
{
    const uint32_t W = 4;
    SendWindow w(W);
    ck_assert(w.start(12, 8, 8)); // 12 blocks of one element
    ck_assert_uint_eq(pump(w).size(), 4); // 0..3
    // ACKs of 3, 2, 1 free slots 3, 2, 1, but SID 4 needs slot 0 (SID 0):
    // nothing may go out (blocks leave in SID order).
    ck_assert(w.on_ack(3) == SendWindow::Ack::fresh);
    ck_assert(w.on_ack(2) == SendWindow::Ack::fresh);
    ck_assert(w.on_ack(1) == SendWindow::Ack::fresh);
    ck_assert_uint_eq(pump(w).size(), 0);
    ck_assert_uint_eq(w.in_flight(), 1);
    // ACK 0: 4, 5, 6, 7 can all go.
    ck_assert(w.on_ack(0) == SendWindow::Ack::fresh);
    std::vector<uint64_t> sent = pump(w);
    ck_assert_uint_eq(sent.size(), 4);
    ck_assert_uint_eq(sent.front(), 4);
    ck_assert_uint_eq(sent.back(), 7);
    ck_assert_uint_eq(w.in_flight(), 4);
    // Duplicates (old SIDs whose slot moved on, or re-acks) change nothing.
    ck_assert(w.on_ack(0) == SendWindow::Ack::duplicate);
    ck_assert(w.on_ack(3) == SendWindow::Ack::duplicate);
    ck_assert(w.on_ack(5) == SendWindow::Ack::fresh);
    ck_assert(w.on_ack(5) == SendWindow::Ack::duplicate);
    // A SID never sent.
    ck_assert(w.on_ack(9) == SendWindow::Ack::not_sent);
    ck_assert(w.on_ack(1000) == SendWindow::Ack::not_sent);
    ck_assert_uint_eq(w.acked(), 5);
    ck_assert_uint_eq(w.in_flight(), 3);
}
END_TEST

START_TEST(test_slot_needs_send_completion)
{
    SendWindow w(2);
    ck_assert(w.start(4, 4, 4)); // 4 blocks of one element
    std::vector<uint64_t> sent = pump(w, true);
    ck_assert_uint_eq(sent.size(), 2);
    ck_assert_uint_eq(w.sends_pending(), 2);
    // RESULT of 0 before its local send completed: its header may still be in
    // use by the transport, so slot 0 is not free yet.
    ck_assert(w.on_ack(0) == SendWindow::Ack::fresh);
    ck_assert(!w.can_send());
    w.on_send_done(0);
    ck_assert_uint_eq(w.sends_pending(), 1);
    ck_assert(w.can_send());
    ck_assert_uint_eq(w.on_sent(), 2);
    // A second completion for the same slot is ignored.
    w.on_send_done(1);
    w.on_send_done(1);
    ck_assert_uint_eq(w.sends_pending(), 1);
}
END_TEST

// Random completion/ack order against a model that remembers every SID.
START_TEST(test_random_orders)
{
    std::mt19937_64 rng(12345);
    for (int round = 0; round < 200; ++round) {
        const uint32_t W = 1 + static_cast<uint32_t>(rng() % 9);
        const uint64_t nblocks = rng() % 60;
        const uint64_t per = 1 + rng() % 5;
        const uint64_t count = nblocks == 0 ? 0 : (nblocks - 1) * per + 1 + rng() % per;
        SendWindow w(W);
        ck_assert(w.start(count, 2, per * 2));
        ck_assert_uint_eq(w.nblocks(), nblocks);
        std::vector<uint64_t> unacked;   // sent, RESULT pending
        std::vector<uint64_t> unsent_done; // send completion pending
        std::set<uint64_t> acked;
        uint64_t next = 0;
        while (!w.complete() || w.sends_pending() != 0) {
            while (w.can_send()) {
                uint64_t sid = w.on_sent();
                ck_assert_uint_eq(sid, next++);
                // S0: sid may only go out once sid - W was acked.
                if (sid >= W) {
                    ck_assert(acked.count(sid - W) == 1);
                }
                unacked.push_back(sid);
                unsent_done.push_back(sid);
            }
            ck_assert_uint_le(w.in_flight(), W);
            ck_assert_uint_eq(w.in_flight(), unacked.size());
            // Either complete a send or deliver a RESULT, in random order.
            bool do_ack = !unacked.empty() && (unsent_done.empty() || rng() % 2 == 0);
            if (do_ack) {
                size_t i = rng() % unacked.size();
                uint64_t sid = unacked[i];
                unacked.erase(unacked.begin() + static_cast<long>(i));
                ck_assert(w.on_ack(sid) == SendWindow::Ack::fresh);
                ck_assert(w.on_ack(sid) == SendWindow::Ack::duplicate);
                acked.insert(sid);
            } else {
                ck_assert(!unsent_done.empty());
                size_t i = rng() % unsent_done.size();
                w.on_send_done(w.slot_of(unsent_done[i]));
                unsent_done.erase(unsent_done.begin() + static_cast<long>(i));
            }
        }
        ck_assert_uint_eq(acked.size(), nblocks);
        ck_assert_uint_eq(next, nblocks);
    }
}
END_TEST

START_TEST(test_huge_counts)
{
    SendWindow w(64);
    // 3 * 2^31 doubles = 48 GiB, 64 KiB blocks: 786432 blocks; offsets > 4 GiB.
    const uint64_t count = 3ull << 31;
    ck_assert(w.start(count, 8, 65536));
    ck_assert_uint_eq(w.elems_per_block(), 8192);
    ck_assert_uint_eq(w.nblocks(), count / 8192);
    const uint64_t last = w.nblocks() - 1;
    ck_assert_uint_eq(w.block_offset(last), (count - 8192) * 8);
    ck_assert_uint_eq(w.block_offset(last) + w.block_bytes(last), count * 8);
    ck_assert_uint_gt(w.block_offset(last), UINT64_C(1) << 32);

    // > 2^31 elements with a partial last block: 2^31 + 5 int8 in 16-byte blocks.
    const uint64_t c2 = (1ull << 31) + 5;
    ck_assert(w.start(c2, 1, 16));
    ck_assert_uint_eq(w.nblocks(), (1ull << 27) + 1);
    ck_assert_uint_eq(w.block_count(w.nblocks() - 1), 5);
    ck_assert_uint_eq(w.block_offset(w.nblocks() - 1), 1ull << 31);

    // 2^32 + 1 blocks would overflow the wire's 32-bit SID: refused.
    ck_assert(!w.start((1ull << 32) * 16 + 16, 1, 16));
    // Exactly 2^32 - 1 blocks is still fine.
    ck_assert(w.start((UINT64_C(1) << 32) - 1, 1, 1));
    ck_assert_uint_eq(w.nblocks(), UINT32_MAX);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_window");
    TCase *tc = tcase_create("window");
    tcase_add_test(tc, test_geometry);
    tcase_add_test(tc, test_in_order_window_bound);
    tcase_add_test(tc, test_out_of_order_acks);
    tcase_add_test(tc, test_slot_needs_send_completion);
    tcase_add_test(tc, test_random_orders);
    tcase_add_test(tc, test_huge_counts);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

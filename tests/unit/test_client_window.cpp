// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Unit tests of the client's sliding send window (ina::SendWindow: a block's RESULT is its ACK):
// a simple model of an agent acknowledges blocks in various orders and the
// tests check, against values computed independently here, that no more than
// `window` blocks are ever in flight, slots are reused only after their
// previous block's RESULT and send completion, and a recycled window starts
// clean. Block geometry is tested in test_client_geom.cpp.
#include <check.h>
#include "check_main.h"

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

START_TEST(test_empty_and_single)
{
    SendWindow w(4);
    // Zero blocks: nothing to send, already complete.
    w.start(0);
    ck_assert(!w.can_send());
    ck_assert(w.complete());
    // One block (a BARRIER): one send, complete after its RESULT.
    w.start(1);
    ck_assert_uint_eq(pump(w).size(), 1);
    ck_assert(!w.complete());
    ck_assert(w.on_ack(0) == SendWindow::Ack::fresh);
    ck_assert(w.complete());
    // A window of 0 is treated as 1 (never a division by zero).
    SendWindow one(0);
    ck_assert_uint_eq(one.window(), 1);
    one.start(3);
    ck_assert_uint_eq(pump(one).size(), 1);
}
END_TEST

START_TEST(test_in_order_window_bound)
{
    const uint32_t W = 3;
    SendWindow w(W);
    w.start(10);
    std::vector<uint64_t> sent = pump(w);
    ck_assert_uint_eq(sent.size(), W); // 0, 1, 2
    ck_assert_uint_eq(w.in_flight(), W);
    uint64_t next_expected = W;
    for (uint64_t sid = 0; sid < 10; ++sid) {
        ck_assert_int_eq(static_cast<int>(w.on_ack(sid)), static_cast<int>(SendWindow::Ack::fresh));
        std::vector<uint64_t> more = pump(w);
        // The RESULT of sid is its ACK: it lets exactly sid + W go out, reusing
        // sid's slot.
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
    w.start(12);
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
    w.start(4);
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
        SendWindow w(W);
        w.start(nblocks);
        ck_assert_uint_eq(w.nblocks(), nblocks);
        std::vector<uint64_t> unacked;   // sent, RESULT pending
        std::vector<uint64_t> unsent_done; // send completion pending
        std::set<uint64_t> acked;
        uint64_t next = 0;
        while (!w.complete() || w.sends_pending() != 0) {
            while (w.can_send()) {
                uint64_t sid = w.on_sent();
                ck_assert_uint_eq(sid, next++);
                // The window: sid may only go out once sid - W was acked.
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

START_TEST(test_reuse_and_large_sids)
{
    SendWindow w(64);
    // A call left half done (e.g. failed) does not leak into the next start().
    w.start(100);
    pump(w, true);
    ck_assert_uint_eq(w.sends_pending(), 64);
    w.start(5);
    ck_assert_uint_eq(w.sends_pending(), 0);
    ck_assert_uint_eq(w.acked(), 0);
    ck_assert_uint_eq(pump(w).size(), 5);
    // SIDs up to 2^32 - 1 (the wire's limit) map onto slots without overflow.
    w.start(UINT32_MAX);
    ck_assert_uint_eq(w.slot_of(UINT32_MAX - 1), (UINT32_MAX - 1) % 64);
    ck_assert(w.classify(UINT32_MAX - 1) == SendWindow::Ack::not_sent);
}
END_TEST

// Leases (ina_proto.h): before the verdict only `ahead` blocks go, in
// slots equal to their SIDs; the verdict's lease then fixes the window (at
// most the job's, at least the blocks already sent) and the slots wrap at it.
START_TEST(test_lease_after_ahead)
{
    SendWindow w(8);
    w.start(10, 2);
    ck_assert(!w.leased());
    ck_assert_uint_eq(w.window(), 8);
    ck_assert(pump(w) == (std::vector<uint64_t>{0, 1}));
    ck_assert(!w.set_lease(1)); // two blocks are out already
    ck_assert(!w.set_lease(9)); // longer than the job's window
    ck_assert(!w.set_lease(0));
    ck_assert(w.set_lease(3));
    ck_assert(w.leased());
    ck_assert_uint_eq(w.window(), 3);
    ck_assert(w.set_lease(3));  // told again: the same lease
    ck_assert(!w.set_lease(4)); // another one is not
    ck_assert(pump(w) == (std::vector<uint64_t>{2}));
    ck_assert_uint_eq(w.slot_of(3), 0);
    ck_assert(w.on_ack(1) == SendWindow::Ack::fresh); // slot 1 waits for sid 0's slot
    ck_assert(pump(w).empty());
    ck_assert(w.on_ack(0) == SendWindow::Ack::fresh);
    ck_assert(pump(w) == (std::vector<uint64_t>{3, 4}));
    // ahead beyond the window reads the window; 0 reads 1; a plain start()
    // is leased at once (the job's window).
    w.start(10, 99);
    ck_assert_uint_eq(pump(w).size(), 8);
    w.start(10, 0);
    ck_assert_uint_eq(pump(w).size(), 1);
    w.start(10);
    ck_assert(w.leased());
    ck_assert_uint_eq(pump(w).size(), 8);
}
END_TEST

int main()
{
    return ina_test::run_suite("client_window", "window",
                               {test_empty_and_single,
                                test_in_order_window_bound,
                                test_out_of_order_acks,
                                test_slot_needs_send_completion,
                                test_random_orders,
                                test_reuse_and_large_sids,
                                test_lease_after_ahead});
}

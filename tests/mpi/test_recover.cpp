// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Recovery from a lost agent. The agent dies (SIGKILL) in the middle of a
// run: every call still completes with MPI_SUCCESS and the exact result on
// every rank. The ranks finish the calls the agent left among themselves
// (coll_ina_recover), and run the host algorithm for the calls after.
//
// Each round runs, on MPI_COMM_WORLD: MPI_Allreduce (int64 SUM, several
// blocks; and double SUM in place, values whose sums are exact in any
// order), MPI_Reduce (int32 MAX, the root moving), MPI_Bcast (bytes, the
// root moving), MPI_Allgather (int32), MPI_Reduce_scatter_block (int32 SUM,
// in place every other round), MPI_Iallreduce (int64 SUM) with an MPI_Wait,
// and MPI_Barrier. Every result is checked against a reference
// computed here from the inputs every rank can regenerate.
//
// usage: test_recover [-r ROUNDS] [-k PID -t MS [-f FAULT] | -a FILE] [-e] [-m] [-R] [-c KIND]
//   -c KIND: instead of the rounds above, one call of KIND (allreduce,
//   iallreduce, reduce, bcast, allgather, reduce_scatter) per round, of 8 B,
//   1000 B, 64 KiB + 8, 1 MiB, 8 MiB and 64 MiB in turn, in place on odd
//   rounds (bench/recover/trials.sh).
//   -k PID -t MS: rank 0 kills process PID (the agent) MS ms after the
//   first round starts (a random moment of the run); without it the agent
//   is expected to die by itself (ina-switchd --test-die-after-results).
//   -f FAULT: what rank 0 does to PID: kill (SIGKILL, the default), stop
//   (SIGSTOP, left stopped: a hung agent whose connections stay open) or
//   stopcont (SIGSTOP, SIGCONT 5 s later). With -c, rank 0 then prints how
//   long after the fault the call it struck ended, and how long the same
//   call took one cycle of sizes earlier (`fault: ... ms`).
//   -a FILE: the fault comes from outside (bench/recover/deadlink.sh sets
//   the agent's link down) and FILE holds its time once it came
//   (CLOCK_REALTIME, ns since the epoch): with -c, rank 0 prints the same
//   `fault: ... ms` line for it.
//   -e: some call must have been recovered (the agent died mid-run).
//   -m: some call must have been finished from what the ranks held (the
//   agent died in the middle of a call, not between calls).
//   -R: offload must resume (a standby in coll_ina_agent, or the agent
//   back): after the rounds, more rounds until it has (at most about 20 s),
//   then one more round must be offloaded again.
//   -u: the application's own messages on MPI_COMM_WORLD cross the
//   recovery: before the rounds each even rank sends rank + 1 a message of
//   tag 1 that is received only after them, and posts a receive of any
//   source and any tag that the odd rank's message of tag 1 meets after
//   them. The ranks' recovery messages travel on the same communicator:
//   they must neither take the first message nor land in the second
//   receive (with Open MPI's pml/ucx, whose tags are 24 bits wide, a
//   recovery tag of -INT_MAX reads as tag 1).
#include "ina_mpi_test.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

using namespace inatest;

namespace {

long checks = 0;

int64_t i64(int rank, int round, size_t i) { return (int64_t) (rank + 1) * 1000003 + round * 7 + (int64_t) i; }
double dbl(int rank, int round, size_t i) { return (double) ((rank * 31 + round * 17 + (int) i) % 1024); }

void round_of_calls(int round, int rank, int size)
{
    // Allreduce, int64 SUM, 5 blocks of 64 KiB and a bit.
    const size_t n1 = 41000;
    std::vector<int64_t> a(n1), b(n1);
    for (size_t i = 0; i < n1; ++i) a[i] = i64(rank, round, i);
    MPI_Allreduce(a.data(), b.data(), (int) n1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < n1; ++i) {
        int64_t want = 0;
        for (int r = 0; r < size; ++r) want += i64(r, round, i);
        if (b[i] != want) {
            INA_CHECK(b[i] == want, "round %d allreduce [%zu]: %" PRId64 ", want %" PRId64, round, i, b[i], want);
            break;
        }
    }
    ++checks;
    // Allreduce in place, double SUM of small integers: exact in any order.
    const size_t n2 = 30000;
    std::vector<double> d(n2);
    for (size_t i = 0; i < n2; ++i) d[i] = dbl(rank, round, i);
    MPI_Allreduce(MPI_IN_PLACE, d.data(), (int) n2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < n2; ++i) {
        double want = 0;
        for (int r = 0; r < size; ++r) want += dbl(r, round, i);
        if (d[i] != want) {
            INA_CHECK(d[i] == want, "round %d in-place allreduce [%zu]: %g, want %g", round, i, d[i], want);
            break;
        }
    }
    ++checks;
    // Reduce, int32 MAX, the root moving.
    const int root = round % size;
    const size_t n3 = 50000;
    std::vector<int32_t> c(n3), out(n3, -1);
    for (size_t i = 0; i < n3; ++i) c[i] = (int32_t) ((rank * 7919 + i * 13 + round) % 100003);
    MPI_Reduce(c.data(), out.data(), (int) n3, MPI_INT32_T, MPI_MAX, root, MPI_COMM_WORLD);
    if (rank == root) {
        for (size_t i = 0; i < n3; ++i) {
            int32_t want = INT32_MIN;
            for (int r = 0; r < size; ++r) want = std::max(want, (int32_t) ((r * 7919 + i * 13 + round) % 100003));
            if (out[i] != want) {
                INA_CHECK(out[i] == want, "round %d reduce [%zu]: %d, want %d", round, i, out[i], want);
                break;
            }
        }
        ++checks;
    }
    // Bcast of bytes from another root.
    const int broot = (round + 1) % size;
    std::vector<unsigned char> bytes(200000);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = rank == broot ? (unsigned char) (i * 31 + round) : 0;
    MPI_Bcast(bytes.data(), (int) bytes.size(), MPI_BYTE, broot, MPI_COMM_WORLD);
    for (size_t i = 0; i < bytes.size(); ++i) {
        if (bytes[i] != (unsigned char) (i * 31 + round)) {
            INA_CHECK(false, "round %d bcast [%zu]: %u", round, i, bytes[i]);
            break;
        }
    }
    ++checks;
    // Allgather of int32.
    const size_t n4 = 20000;
    std::vector<int32_t> mine(n4), all(n4 * size, -1);
    for (size_t i = 0; i < n4; ++i) mine[i] = (int32_t) (rank * 1000000 + round * 1000 + i);
    MPI_Allgather(mine.data(), (int) n4, MPI_INT32_T, all.data(), (int) n4, MPI_INT32_T, MPI_COMM_WORLD);
    for (int r = 0; r < size; ++r) {
        for (size_t i = 0; i < n4; ++i) {
            if (all[r * n4 + i] != (int32_t) (r * 1000000 + round * 1000 + i)) {
                INA_CHECK(false, "round %d allgather rank %d [%zu]: %d", round, r, i, all[r * n4 + i]);
                r = size;
                break;
            }
        }
    }
    ++checks;
    // Reduce_scatter_block, int32 SUM, in place every other round.
    const size_t n5 = 9000;
    std::vector<int32_t> rs(n5 * size), part(n5, -1);
    for (size_t i = 0; i < rs.size(); ++i) rs[i] = (int32_t) (rank * 100 + round * 3 + (int) (i % 977));
    if (round % 2 == 0) {
        MPI_Reduce_scatter_block(rs.data(), part.data(), (int) n5, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
    } else {
        MPI_Reduce_scatter_block(MPI_IN_PLACE, rs.data(), (int) n5, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
        std::copy(rs.begin(), rs.begin() + (long) n5, part.begin());
    }
    for (size_t i = 0; i < n5; ++i) {
        const size_t g = rank * n5 + i;
        int32_t want = 0;
        for (int r = 0; r < size; ++r) want += (int32_t) (r * 100 + round * 3 + (int) (g % 977));
        if (part[i] != want) {
            INA_CHECK(part[i] == want, "round %d reduce_scatter_block [%zu]: %d, want %d", round, i, part[i], want);
            break;
        }
    }
    ++checks;
    // Iallreduce, int64 SUM, then wait.
    std::vector<int64_t> e(n1), f(n1);
    for (size_t i = 0; i < n1; ++i) e[i] = i64(rank, round + 1000, i);
    MPI_Request req;
    MPI_Iallreduce(e.data(), f.data(), (int) n1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (size_t i = 0; i < n1; ++i) {
        int64_t want = 0;
        for (int r = 0; r < size; ++r) want += i64(r, round + 1000, i);
        if (f[i] != want) {
            INA_CHECK(f[i] == want, "round %d iallreduce [%zu]", round, i);
            break;
        }
    }
    ++checks;
    MPI_Barrier(MPI_COMM_WORLD);
}

// One call of `kind` of `bytes` (8 B - 64 MiB), in place on odd rounds
// where the collective has that form, checked (bench/recover/trials.sh).
void mixed_call(const std::string &kind, size_t bytes, int round, int rank, int size)
{
    const bool in_place = round % 2 == 1;
    const size_t n = std::max<size_t>(1, bytes / 8);
    auto val = [round](int r, size_t i) { return (int64_t) r * 7777 + round * 31 + (int64_t) (i % 100003); };
    auto sum = [&](size_t i) {
        int64_t w = 0;
        for (int r = 0; r < size; ++r) w += val(r, i);
        return w;
    };
    if (kind == "allreduce" || kind == "iallreduce" || kind == "reduce") {
        const int root = round % size;
        std::vector<int64_t> a(n), b(n, -1);
        for (size_t i = 0; i < n; ++i) a[i] = val(rank, i);
        void *sb = in_place && (kind != "reduce" || rank == root) ? MPI_IN_PLACE : a.data();
        int64_t *rb = sb == MPI_IN_PLACE ? a.data() : b.data();
        if (kind == "allreduce") {
            MPI_Allreduce(sb, rb, (int) n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        } else if (kind == "iallreduce") {
            MPI_Request req;
            MPI_Iallreduce(sb, rb, (int) n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Reduce(sb, rb, (int) n, MPI_INT64_T, MPI_SUM, root, MPI_COMM_WORLD);
        }
        if (kind != "reduce" || rank == root) {
            for (size_t i = 0; i < n; ++i) {
                if (rb[i] != sum(i)) {
                    INA_CHECK(false, "%s %zu bytes round %d [%zu]", kind.c_str(), bytes, round, i);
                    break;
                }
            }
            ++checks;
        }
    } else if (kind == "bcast") {
        const int root = round % size;
        std::vector<unsigned char> v(bytes);
        for (size_t i = 0; i < bytes; ++i) v[i] = rank == root ? (unsigned char) (i * 7 + round) : 0;
        MPI_Bcast(v.data(), (int) bytes, MPI_BYTE, root, MPI_COMM_WORLD);
        for (size_t i = 0; i < bytes; ++i) {
            if (v[i] != (unsigned char) (i * 7 + round)) {
                INA_CHECK(false, "bcast %zu bytes round %d [%zu]", bytes, round, i);
                break;
            }
        }
        ++checks;
    } else if (kind == "allgather") {
        const size_t per = std::max<size_t>(1, bytes / 4 / size);
        std::vector<int32_t> mine(per), all(per * size, -1);
        for (size_t i = 0; i < per; ++i) mine[i] = (int32_t) val(rank, i);
        if (in_place) {
            std::copy(mine.begin(), mine.end(), all.begin() + (long) (rank * per));
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all.data(), (int) per, MPI_INT32_T, MPI_COMM_WORLD);
        } else {
            MPI_Allgather(mine.data(), (int) per, MPI_INT32_T, all.data(), (int) per, MPI_INT32_T, MPI_COMM_WORLD);
        }
        for (int r = 0; r < size; ++r) {
            for (size_t i = 0; i < per; ++i) {
                if (all[r * per + i] != (int32_t) val(r, i)) {
                    INA_CHECK(false, "allgather %zu bytes round %d rank %d [%zu]", bytes, round, r, i);
                    r = size;
                    break;
                }
            }
        }
        ++checks;
    } else if (kind == "reduce_scatter") {
        const size_t per = std::max<size_t>(1, bytes / 8 / size);
        std::vector<int64_t> in(per * size), part(per, -1);
        for (size_t i = 0; i < in.size(); ++i) in[i] = val(rank, i);
        if (in_place) {
            MPI_Reduce_scatter_block(MPI_IN_PLACE, in.data(), (int) per, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
            std::copy(in.begin(), in.begin() + (long) per, part.begin());
        } else {
            MPI_Reduce_scatter_block(in.data(), part.data(), (int) per, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        }
        for (size_t i = 0; i < per; ++i) {
            if (part[i] != sum(rank * per + i)) {
                INA_CHECK(false, "reduce_scatter %zu bytes round %d [%zu]", bytes, round, i);
                break;
            }
        }
        ++checks;
    }
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rounds = 12, c, ms = -1;
    long pid = 0;
    bool expect = false, mid_call = false, resume = false, user = false;
    std::string kind;
    std::string fault = "kill";
    std::string fault_file;
    while ((c = getopt(argc, argv, "r:k:t:f:emRc:a:u")) != -1) {
        if (c == 'a') fault_file = optarg;
        if (c == 'f') fault = optarg;
        if (c == 'r') rounds = std::atoi(optarg);
        if (c == 'e') expect = true;
        if (c == 'm') mid_call = true;
        if (c == 'R') resume = true;
        if (c == 'u') user = true;
        if (c == 'c') kind = optarg;
        if (c == 'k') pid = std::atol(optarg);
        if (c == 't') ms = std::atoi(optarg);
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Counters counters;
    using Clock = std::chrono::steady_clock;
    std::thread killer;
    std::atomic<Clock::rep> fault_at{0}; // since the epoch of Clock; 0: not yet
    if (rank == 0 && pid > 0 && ms >= 0) {
        if (fault != "kill" && fault != "stop" && fault != "stopcont") {
            std::fprintf(stderr, "test_recover: -f %s: kill, stop or stopcont\n", fault.c_str());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        killer = std::thread([pid, ms, fault, &fault_at] {
            std::this_thread::sleep_for(std::chrono::milliseconds(ms));
            kill((pid_t) pid, fault == "kill" ? SIGKILL : SIGSTOP);
            fault_at = Clock::now().time_since_epoch().count();
            if (fault == "stopcont") {
                std::this_thread::sleep_for(std::chrono::seconds(5));
                kill((pid_t) pid, SIGCONT);
            }
        });
    }
    // -u: the application's messages around the rounds (an even rank and
    // the odd one above it; a last even rank without a partner sits out).
    const bool paired = user && (rank % 2 == 1 || rank + 1 < size);
    const int partner = rank % 2 == 0 ? rank + 1 : rank - 1;
    std::vector<int> user_out(16), user_in(64, -1);
    MPI_Request user_req = MPI_REQUEST_NULL;
    if (paired) {
        for (int i = 0; i < 16; ++i) user_out[i] = rank * 1000 + i;
        if (rank % 2 == 0) {
            MPI_Isend(user_out.data(), 16, MPI_INT, partner, 1, MPI_COMM_WORLD, &user_req);
            MPI_Request any;
            MPI_Irecv(user_in.data(), 64, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &any);
            std::swap(any, user_req); // the send is waited for below, with the receive
            MPI_Request_free(&any); // (a standard send of 64 B completes on its own)
        }
    }
    static const size_t sizes[] = {8, 1000, 65544, 1 << 20, 8 << 20, 64 << 20};
    std::vector<Clock::time_point> began(rounds), ended(rounds);
    for (int round = 0; round < rounds; ++round) {
        began[round] = Clock::now();
        if (kind.empty()) {
            round_of_calls(round, rank, size);
        } else {
            mixed_call(kind, sizes[round % 6], round, rank, size);
        }
        ended[round] = Clock::now();
    }
    if (killer.joinable()) killer.join();
    if (rank == 0 && !fault_file.empty()) {
        // The outside fault's wall-clock time, on this run's steady clock.
        long long ns = 0;
        if (FILE *f = std::fopen(fault_file.c_str(), "r")) {
            if (std::fscanf(f, "%lld", &ns) != 1) ns = 0;
            std::fclose(f);
        }
        if (ns > 0) {
            const auto wall = std::chrono::system_clock::time_point(
                std::chrono::duration_cast<std::chrono::system_clock::duration>(
                    std::chrono::nanoseconds(ns)));
            fault_at = (Clock::now() - (std::chrono::system_clock::now() - wall)).time_since_epoch().count();
        }
    }
    if (rank == 0 && !kind.empty() && fault_at != 0) {
        // The call the fault struck: from the fault to its end, against the
        // same call a cycle of sizes earlier (its own time, no fault).
        const Clock::time_point at{Clock::duration(fault_at.load())};
        const auto msec = [](Clock::duration d) {
            return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
        };
        for (int round = 0; round < rounds; ++round) {
            if (began[round] <= at && at < ended[round]) {
                std::printf("fault: %s of %zu B struck, ended %lld ms after the fault; the same "
                            "call %s ms before\n",
                            kind.c_str(), sizes[round % 6], (long long) msec(ended[round] - at),
                            round >= 6 ? std::to_string(msec(ended[round - 6] - began[round - 6])).c_str()
                                       : "-");
            }
        }
    }
    if (paired) {
        // The even rank's receive must still be open, and the odd rank's
        // message of tag 1 must still be there to receive. Then (tag 2: go
        // on) the odd rank sends the message that receive is for.
        MPI_Status st;
        int flag = 0, go = 0;
        if (rank % 2 == 0) {
            MPI_Test(&user_req, &flag, &st);
            INA_CHECK(!flag, "the receive of any tag was met during the rounds (source %d, tag %d)",
                      st.MPI_SOURCE, st.MPI_TAG);
            MPI_Send(&go, 1, MPI_INT, partner, 2, MPI_COMM_WORLD);
            if (!flag) MPI_Wait(&user_req, &st);
        } else {
            MPI_Recv(user_in.data(), 64, MPI_INT, partner, 1, MPI_COMM_WORLD, &st);
            MPI_Recv(&go, 1, MPI_INT, partner, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(user_out.data(), 16, MPI_INT, partner, 1, MPI_COMM_WORLD);
        }
        int n = 0;
        MPI_Get_count(&st, MPI_INT, &n);
        bool same = n == 16 && st.MPI_SOURCE == partner && st.MPI_TAG == 1;
        for (int i = 0; same && i < 16; ++i) same = user_in[i] == partner * 1000 + i;
        INA_CHECK(same, "the application's message from rank %d: %d ints from %d, tag %d, [0] = %d",
                  partner, n, st.MPI_SOURCE, st.MPI_TAG, user_in[0]);
        ++checks;
    }
    long long offloaded = counters.offloaded(MPI_COMM_WORLD);
    long long last_round = 0;
    if (resume) {
        // Rounds on the host until offload resumes (the agent back, or the
        // standby); the same on every rank: the ranks decide to resume
        // together, in a blocking call. At most about 20 s.
        for (int extra = 0; extra < 1000 && counters.resumed(MPI_COMM_WORLD) <= 0; ++extra) {
            round_of_calls(rounds + 1 + extra, rank, size);
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        // Then a round with offload, checked as the others.
        const long long before = offloaded = counters.offloaded(MPI_COMM_WORLD);
        round_of_calls(rounds, rank, size);
        offloaded = counters.offloaded(MPI_COMM_WORLD);
        last_round = offloaded - before;
    }
    long long mine[3] = {counters.recovered(MPI_COMM_WORLD),
                         counters.recovered_offloaded(MPI_COMM_WORLD),
                         counters.resumed(MPI_COMM_WORLD)};
    long long all[3] = {0, 0, 0};
    MPI_Allreduce(mine, all, 3, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        std::printf("test_recover: %lld calls recovered over all ranks (%lld from what the ranks "
                    "held), offload resumed %lld times over all ranks, %lld offloaded on rank 0 "
                    "(%lld in the last round)\n",
                    all[0], all[1], all[2], offloaded, last_round);
    }
    checks += 3;
    INA_CHECK(!expect || all[0] > 0, "the agent was lost, but no call was recovered");
    INA_CHECK(!mid_call || all[1] > 0, "no call was finished from what the ranks held");
    INA_CHECK(!resume || (mine[2] >= 1 && last_round > 0),
              "offload did not resume on this rank (resumed %lld, offloaded in the last round "
              "%lld)", mine[2], last_round);
    counters.close();
    int code = finish("test_recover", checks);
    MPI_Finalize();
    return code;
}

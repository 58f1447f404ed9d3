// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Shared helpers of the MPI integration tests: the predefined types and ops
// under test, deterministic inputs every rank can regenerate for every other
// rank, an independent reference reduction (scalar, rank order, written here
// and not taken from the product), and the component's MPI_T counters.
#ifndef INA_MPI_TEST_H
#define INA_MPI_TEST_H

#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace inatest {

// ------------------------------------------------------------------ failure
inline int &failures()
{
    static int n = 0;
    return n;
}

// The rank a failed check names: MPI_COMM_WORLD's, unless a test without
// it (MPI Sessions) sets its own.
inline int &check_rank()
{
    static int r = -1;
    return r;
}

#define INA_CHECK(cond, ...)                                                                   \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            int r_ = inatest::check_rank();                                                    \
            if (r_ < 0) {                                                                      \
                MPI_Comm_rank(MPI_COMM_WORLD, &r_);                                            \
            }                                                                                  \
            std::fprintf(stderr, "[rank %d] %s:%d: check failed: %s: ", r_, __FILE__,          \
                         __LINE__, #cond);                                                     \
            std::fprintf(stderr, __VA_ARGS__);                                                 \
            std::fprintf(stderr, "\n");                                                        \
            ++inatest::failures();                                                             \
        }                                                                                      \
    } while (0)

// Agree on the outcome and print one summary line on rank 0; returns the exit code.
inline int finish(const char *name, long checks)
{
    int local = failures(), total = 0;
    long all_checks = 0;
    MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&checks, &all_checks, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        std::printf("%s: %ld checks, %d failures: %s\n", name, all_checks, total,
                    total == 0 ? "PASS" : "FAIL");
    }
    return total == 0 ? 0 : 1;
}

// Point-to-point only (a collective would be a job of its own at the
// agent): every rank of world ranks [from, from + nfrom) tells every rank
// of [to, to + nto), and those wait for all of them.
inline void signal_ranks(int rank, int from, int nfrom, int to, int nto, int tag)
{
    int token = 1;
    if (rank >= from && rank < from + nfrom) {
        for (int r = to; r < to + nto; ++r) {
            MPI_Send(&token, 1, MPI_INT, r, tag, MPI_COMM_WORLD);
        }
    }
    if (rank >= to && rank < to + nto) {
        for (int r = from; r < from + nfrom; ++r) {
            MPI_Recv(&token, 1, MPI_INT, r, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
}

// ------------------------------------------------------------------ MPI_T counters
// The component's per-communicator performance variables.
class Counters {
  public:
    Counters()
    {
        int provided;
        MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
        MPI_T_pvar_session_create(&session_);
    }
    ~Counters() { close(); }
    // MPI_T must be finalized before MPI_Finalize tears the component down.
    void close()
    {
        if (open_) {
            MPI_T_pvar_session_free(&session_);
            MPI_T_finalize();
            open_ = false;
        }
    }
    Counters(const Counters &) = delete;
    Counters &operator=(const Counters &) = delete;

    // Value of pvar `name` (of class `cls`) bound to `comm`; -1 if the
    // component did not register it.
    long long read(const char *name, MPI_Comm comm, int cls = MPI_T_PVAR_CLASS_COUNTER)
    {
        int index;
        if (MPI_T_pvar_get_index(name, cls, &index) != MPI_SUCCESS) {
            return -1;
        }
        MPI_T_pvar_handle handle;
        int count = 0;
        if (MPI_T_pvar_handle_alloc(session_, index, &comm, &handle, &count) != MPI_SUCCESS) {
            return -1;
        }
        unsigned long long value = 0;
        int rc = MPI_T_pvar_read(session_, handle, &value);
        MPI_T_pvar_handle_free(session_, &handle);
        return rc == MPI_SUCCESS ? static_cast<long long>(value) : -1;
    }
    long long offloaded(MPI_Comm comm) { return read("coll_ina_offloaded_calls", comm); }
    long long fallbacks(MPI_Comm comm) { return read("coll_ina_fallback_calls", comm); }
    long long recovered(MPI_Comm comm) { return read("coll_ina_recovered_calls", comm); }
    // Of those: finished from what the ranks held (not on the host).
    long long recovered_offloaded(MPI_Comm comm)
    {
        return read("coll_ina_recovered_offloaded", comm);
    }
    // Times offload resumed on `comm` after its agent was lost.
    long long resumed(MPI_Comm comm) { return read("coll_ina_resumed", comm); }
    // Calls of `comm` completed by the node stage alone (shared memory among
    // the ranks of one node, no agent); each also counts in offloaded().
    long long node_only(MPI_Comm comm) { return read("coll_ina_node_only_calls", comm); }
    // The node layout ina computed for `comm`: its nodes, and its members on
    // this rank's node.
    long long nodes(MPI_Comm comm) { return read("coll_ina_job_nodes", comm, MPI_T_PVAR_CLASS_SIZE); }
    long long local_ranks(MPI_Comm comm)
    {
        return read("coll_ina_local_ranks", comm, MPI_T_PVAR_CLASS_SIZE);
    }
    // What the agent sees of `comm`: the members of its job(s), and the
    // streams each node sends (node stage over several nodes).
    long long job_members(MPI_Comm comm)
    {
        return read("coll_ina_job_members", comm, MPI_T_PVAR_CLASS_SIZE);
    }
    long long node_streams(MPI_Comm comm)
    {
        return read("coll_ina_node_streams", comm, MPI_T_PVAR_CLASS_SIZE);
    }

    // Index and datatype of the control variable (MCA parameter) `name`;
    // false if it does not exist.
    static bool cvar_info(const char *name, int &index, MPI_Datatype &dt)
    {
        if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS) {
            return false;
        }
        char vname[256], desc[1024];
        int vlen = sizeof(vname), dlen = sizeof(desc), verbosity, bind, scope;
        MPI_T_enum et;
        return MPI_T_cvar_get_info(index, vname, &vlen, &verbosity, &dt, &et, desc, &dlen, &bind,
                                   &scope) == MPI_SUCCESS;
    }

    // Value of the integer or boolean control variable `name`; -1 if it does
    // not exist or is of another type.
    static long long cvar(const char *name)
    {
        int index;
        MPI_Datatype dt;
        // Open MPI gives a bool parameter as MPI_C_BOOL (one C bool).
        if (!cvar_info(name, index, dt) ||
            (dt != MPI_C_BOOL && dt != MPI_INT && dt != MPI_UNSIGNED)) {
            return -1;
        }
        MPI_T_cvar_handle handle;
        int count = 0;
        if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS || count != 1) {
            return -1;
        }
        union {
            unsigned char bytes[16]; // first: {} zeroes all of it
            int i;
            unsigned u;
        } value{};
        int rc = MPI_T_cvar_read(handle, &value);
        MPI_T_cvar_handle_free(&handle);
        if (rc != MPI_SUCCESS) {
            return -1;
        }
        if (dt == MPI_C_BOOL) {
            return value.bytes[0] != 0;
        }
        return dt == MPI_INT ? static_cast<long long>(value.i) : static_cast<long long>(value.u);
    }

    // Value of the string control variable `name`; "" if it does not exist,
    // is empty or is of another type.
    static std::string cvar_string(const char *name)
    {
        int index;
        MPI_Datatype dt;
        if (!cvar_info(name, index, dt) || dt != MPI_CHAR) {
            return "";
        }
        MPI_T_cvar_handle handle;
        int count = 0;
        if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS) {
            return "";
        }
        std::vector<char> value(static_cast<size_t>(count > 4096 ? count : 4096) + 1, '\0');
        int rc = MPI_T_cvar_read(handle, value.data());
        MPI_T_cvar_handle_free(&handle);
        return rc == MPI_SUCCESS ? std::string(value.data()) : std::string();
    }
    // The leaf agents serving `comm`'s job: 1 for one agent, more for a
    // tree of agents (coll_ina_topology), 0 without a job.
    long long job_leaves(MPI_Comm comm)
    {
        return read("coll_ina_job_leaves", comm, MPI_T_PVAR_CLASS_SIZE);
    }
    long long job_agents(MPI_Comm comm)
    {
        return read("coll_ina_job_agents", comm, MPI_T_PVAR_CLASS_SIZE);
    }

  private:
    MPI_T_pvar_session session_;
    bool open_ = true;
};

// Which level of ina did the work of a communicator. Every offloaded call
// counts in coll_ina_offloaded_calls; a communicator whose members ina puts
// on one node (coll_ina_job_nodes == 1) is served by the node stage alone
// (shared memory, no agent), so its calls count in coll_ina_node_only_calls
// too, unless coll_ina_node_stage is 0; a communicator over several nodes
// goes to the agent and never counts there: with the node stage, the agent
// sees one member per node (coll_ina_job_members == coll_ina_job_nodes, in
// coll_ina_node_streams streams), else one per rank. A job striped over
// several agents (coll_ina_job_agents > 1) with one rank on every node has
// no node stage: its members are the ranks.
//
//   WorkLevel level(counters, comm);       // baseline: the counters now
//   MPI_Allreduce(..., comm); MPI_Bcast(..., comm);
//   checks += level.expect(2, "Allreduce+Bcast");
//
// A build without the node_only pvar (before the node stage) gets the
// offloaded part checked and a printed note that the level was not.
class WorkLevel {
  public:
    WorkLevel(Counters &c, MPI_Comm comm) : c_(c), comm_(comm)
    {
        nodes_ = c_.nodes(comm_);
        stage_ = Counters::cvar("coll_ina_node_stage");
        rebase();
        INA_CHECK(node_only_ >= 0, "no pvar coll_ina_node_only_calls");
        INA_CHECK(stage_ >= 0, "no readable MCA parameter coll_ina_node_stage");
    }

    // Take the counters as they are now as the baseline, e.g. after calls
    // that are not under test (the collectives inside MPI_Win_allocate_shared).
    void rebase()
    {
        offloaded_ = c_.offloaded(comm_);
        node_only_ = c_.node_only(comm_);
    }

    // Whether this communicator's calls are for the node stage alone.
    bool node_only_expected() const { return stage_ != 0 && nodes_ == 1; }

    // The calls since the baseline were exactly n offloaded ones, at the
    // level this communicator calls for: node_only rose by n on one node
    // (node stage on) and by 0 otherwise. Moves the baseline to now.
    // Returns the number of checks made, for the test's count.
    int expect(long long n, const char *what)
    {
        long long off = c_.offloaded(comm_), node = c_.node_only(comm_);
        long long want = node_only_expected() ? n : 0;
        INA_CHECK(off == offloaded_ + n, "%s: coll_ina_offloaded_calls %lld -> %lld, want +%lld",
                  what, offloaded_, off, n);
        INA_CHECK(nodes_ >= 1, "%s: coll_ina_job_nodes %lld", what, nodes_);
        if (nodes_ > 1 && n > 0) {
            // Offloaded on several nodes: a job at the agent, and its members
            // are the nodes (node stage) or the ranks.
            int size = 0;
            MPI_Comm_size(comm_, &size);
            long long members = c_.job_members(comm_), streams = c_.node_streams(comm_);
            const bool uplink = stage_ != 0 && !(c_.job_agents(comm_) > 1 && nodes_ == size);
            long long want_members = uplink ? nodes_ : size;
            INA_CHECK(members == want_members,
                      "%s: coll_ina_job_members %lld, want %lld (%lld nodes, %d ranks, node "
                      "stage %s)", what, members, want_members, nodes_, size,
                      uplink ? "uplink" : "off");
            INA_CHECK(uplink == (streams >= 1 && streams <= c_.local_ranks(comm_)),
                      "%s: coll_ina_node_streams %lld (%lld local ranks, node stage %s)", what,
                      streams, c_.local_ranks(comm_), uplink ? "uplink" : "off");
        }
        INA_CHECK(node == node_only_ + want,
                  "%s: coll_ina_node_only_calls %lld -> %lld, want +%lld (%lld node(s), "
                  "node stage %s)",
                  what, node_only_, node, want, nodes_, stage_ != 0 ? "on" : "off");
        offloaded_ = off;
        node_only_ = node;
        return nodes_ > 1 && n > 0 ? 5 : 3;
    }

  private:
    Counters &c_;
    MPI_Comm comm_;
    long long nodes_;
    long long stage_; // coll_ina_node_stage: 1, 0, or -1 (no such parameter)
    long long offloaded_ = 0, node_only_ = 0;
};

// ------------------------------------------------------------------ ops
enum class Op { Sum, Prod, Min, Max, Land, Lor, Lxor, Band, Bor, Bxor };

struct OpInfo {
    Op op;
    MPI_Op mpi;
    const char *name;
};

inline std::vector<OpInfo> all_ops()
{
    return {{Op::Sum, MPI_SUM, "SUM"},    {Op::Prod, MPI_PROD, "PROD"}, {Op::Min, MPI_MIN, "MIN"},
            {Op::Max, MPI_MAX, "MAX"},    {Op::Land, MPI_LAND, "LAND"}, {Op::Lor, MPI_LOR, "LOR"},
            {Op::Lxor, MPI_LXOR, "LXOR"}, {Op::Band, MPI_BAND, "BAND"}, {Op::Bor, MPI_BOR, "BOR"},
            {Op::Bxor, MPI_BXOR, "BXOR"}};
}

// MPI defines arithmetic ops and MIN/MAX on C integer and floating types,
// logical ops on C integer types, bitwise ops on C integer types.
template <typename T> bool op_defined(Op op)
{
    if (std::is_floating_point_v<T>) {
        return op == Op::Sum || op == Op::Prod || op == Op::Min || op == Op::Max;
    }
    return true;
}

// Reference: fold acc = acc OP v in rank order, computed in the widest exact
// arithmetic for integers (unsigned wrap-around) and the type's own for floats.
template <typename T> T apply(Op op, T acc, T v)
{
    if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
        switch (op) {
        case Op::Sum: return static_cast<T>(static_cast<U>(static_cast<W>(acc) + static_cast<W>(v)));
        case Op::Prod: return static_cast<T>(static_cast<U>(static_cast<W>(static_cast<U>(acc)) * static_cast<W>(static_cast<U>(v))));
        case Op::Min: return v < acc ? v : acc;
        case Op::Max: return v > acc ? v : acc;
        case Op::Land: return static_cast<T>(acc != 0 && v != 0);
        case Op::Lor: return static_cast<T>(acc != 0 || v != 0);
        case Op::Lxor: return static_cast<T>((acc != 0) != (v != 0));
        case Op::Band: return static_cast<T>(acc & v);
        case Op::Bor: return static_cast<T>(acc | v);
        case Op::Bxor: return static_cast<T>(acc ^ v);
        }
    } else {
        switch (op) {
        case Op::Sum: return acc + v;
        case Op::Prod: return acc * v;
        case Op::Min: return v < acc ? v : acc;
        case Op::Max: return v > acc ? v : acc;
        default: break;
        }
    }
    std::abort();
}

// ------------------------------------------------------------------ inputs
inline uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Element i of rank r's input for (op, seed): chosen so that every op is
// exercised for real (wrap-around for integer SUM/PROD, rounding for float
// SUM, many zeros for logical ops) without overflowing float PROD.
template <typename T> T input(Op op, int rank, size_t i, uint64_t seed)
{
    uint64_t h = mix(seed * 1000003u + static_cast<uint64_t>(rank) * 7919u + i);
    if constexpr (std::is_integral_v<T>) {
        if (op == Op::Land || op == Op::Lor || op == Op::Lxor) {
            return static_cast<T>(h % 3 == 0 ? 0 : (h >> 8) % 5);
        }
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(h >> 7));
    } else {
        double u = static_cast<double>(h >> 11) / 9007199254740992.0; // [0, 1)
        if (op == Op::Prod) {
            return static_cast<T>(0.75 + 0.5 * u);
        }
        return static_cast<T>((u - 0.5) * 2000.0 + 1.0 / 3.0);
    }
}

template <typename T>
void fill_input(std::vector<T> &buf, Op op, int rank, uint64_t seed)
{
    for (size_t i = 0; i < buf.size(); ++i) {
        buf[i] = input<T>(op, rank, i, seed);
    }
}

template <typename T>
void reference(std::vector<T> &ref, Op op, int nranks, uint64_t seed)
{
    for (size_t i = 0; i < ref.size(); ++i) {
        T acc = input<T>(op, 0, i, seed);
        for (int r = 1; r < nranks; ++r) {
            acc = apply<T>(op, acc, input<T>(op, r, i, seed));
        }
        ref[i] = acc;
    }
}

// The order ina folds the contributions of `comm`'s ranks in (docs/
// ARCHITECTURE.md, "Reduction order"; docs/HIERARCHY.md): from the top of
// the tree of agents down. Each group's ranks fold left to right in rank
// order, a leaf agent folds its groups' partials left to right, an agent
// above folds its children's partials left to right, each level numbered by
// first rank. A group is a node's ranks with the node stage on several
// nodes, else one rank. A leaf is the ranks of one leaf agent of a tree
// (coll_ina_topology, the communicator over several of them), else every
// rank; the agents above it are its parents in the topology file up to the
// lowest one above every leaf of the communicator. How these tests lay
// them out without communication: coll_ina_test_node_size K > 0 puts world
// ranks [0, K) on node 0, [K, 2K) on node 1, ... (without it the tests run
// on one machine, one node); coll_ina_test_hosts names each world rank's
// host, and the scenarios' topology files give each host its own leaf agent
// (plain host names, no ranges).
struct FoldTree {
    // Per rank, outermost first: the agents above its leaf (below the
    // top), its leaf, its group.
    std::vector<std::vector<std::string>> path;
};

// The topology file's leaf agent of each host and parent of each agent.
inline void read_topology(const std::string &file, std::vector<std::pair<std::string, std::string>> &host_agent,
                          std::vector<std::pair<std::string, std::string>> &parent_of)
{
    FILE *f = std::fopen(file.c_str(), "r");
    if (f == nullptr) {
        return;
    }
    char line[1024];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
        std::vector<std::string> w;
        for (char *t = std::strtok(line, " \t\r\n"); t != nullptr && t[0] != '#';
             t = std::strtok(nullptr, " \t\r\n")) {
            w.emplace_back(t);
        }
        if (w.size() == 5 && w[0] == "agent" && w[3] == "parent") {
            parent_of.emplace_back(w[1], w[4]);
        } else if (w.size() == 3 && w[0] == "hosts") {
            std::string list = w[2] + ",";
            for (size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos;
                 at = comma + 1) {
                host_agent.emplace_back(list.substr(at, comma - at), w[1]);
            }
        }
    }
    std::fclose(f);
}

inline FoldTree fold_tree(MPI_Comm comm)
{
    int size = 0;
    MPI_Comm_size(comm, &size);
    std::vector<int> ranks(size), world(size);
    for (int r = 0; r < size; ++r) {
        ranks[r] = r;
    }
    MPI_Group g, wg;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_translate_ranks(g, size, ranks.data(), wg, world.data());
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    const long long k = Counters::cvar("coll_ina_test_node_size");
    const bool staged = Counters::cvar("coll_ina_node_stage") != 0;
    const std::string topology = Counters::cvar_string("coll_ina_topology");
    std::vector<std::string> hosts;
    std::vector<std::pair<std::string, std::string>> host_agent, parent_of;
    if (!topology.empty()) {
        std::string list = Counters::cvar_string("coll_ina_test_hosts") + ",";
        for (size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos; at = comma + 1) {
            hosts.push_back(list.substr(at, comma - at));
        }
        read_topology(topology, host_agent, parent_of);
    }
    auto lookup = [](const std::vector<std::pair<std::string, std::string>> &m,
                     const std::string &key) {
        for (const auto &kv : m) {
            if (kv.first == key) {
                return kv.second;
            }
        }
        return std::string();
    };
    // Each rank's agents from its leaf up to the root.
    std::vector<std::vector<std::string>> chain(size);
    for (int r = 0; r < size; ++r) {
        const size_t w = static_cast<size_t>(world[r]);
        std::string a = w < hosts.size() ? lookup(host_agent, hosts[w]) : std::string();
        a = a.empty() && w < hosts.size() ? hosts[w] : a; // no file: the host stands for its leaf
        for (size_t steps = 0; !a.empty() && steps < 64; ++steps) {
            chain[r].push_back(a);
            a = lookup(parent_of, a);
        }
    }
    // The top: what every chain ends with (the communicator's agents above
    // all of its leaves); below it, the levels the agents fold.
    size_t common = chain.empty() ? 0 : chain[0].size();
    for (int r = 1; r < size; ++r) {
        size_t c = 0;
        while (c < common && c < chain[r].size() &&
               chain[r][chain[r].size() - 1 - c] == chain[0][chain[0].size() - 1 - c]) {
            ++c;
        }
        common = c;
    }
    FoldTree tree;
    tree.path.resize(size);
    for (int r = 0; r < size; ++r) {
        const size_t below = chain[r].size() - std::min(common, chain[r].size());
        for (size_t i = below; i > 0; --i) {
            tree.path[r].push_back(chain[r][i - 1]); // outermost first, the leaf last
        }
        tree.path[r].push_back(staged && k > 0 ? "node " + std::to_string(world[r] / k)
                                               : "rank " + std::to_string(r));
    }
    return tree;
}

// Fold value(rank) over the ranks `who` (ascending) of `tree`, from `level`
// of their paths down, with `combine`, in ina's order.
template <typename T, typename Value, typename Combine>
T fold_level(const FoldTree &tree, const std::vector<int> &who, size_t level, Value value,
             Combine combine)
{
    if (level == tree.path[who[0]].size()) { // one group: its ranks in order
        T acc = value(who[0]);
        for (size_t q = 1; q < who.size(); ++q) {
            acc = combine(acc, value(who[q]));
        }
        return acc;
    }
    std::vector<std::string> keys; // this level's agents (or groups), by first rank
    std::vector<std::vector<int>> under;
    for (int r : who) {
        const std::string &key = tree.path[r][level];
        size_t n = 0;
        while (n < keys.size() && keys[n] != key) {
            ++n;
        }
        if (n == keys.size()) {
            keys.push_back(key);
            under.emplace_back();
        }
        under[n].push_back(r);
    }
    T total = fold_level<T>(tree, under[0], level + 1, value, combine);
    for (size_t n = 1; n < under.size(); ++n) {
        total = combine(total, fold_level<T>(tree, under[n], level + 1, value, combine));
    }
    return total;
}

// Fold value(rank) over `tree` with `combine`, in ina's order.
template <typename T, typename Value, typename Combine>
T fold(const FoldTree &tree, Value value, Combine combine)
{
    std::vector<int> all(tree.path.size());
    for (size_t r = 0; r < all.size(); ++r) {
        all[r] = static_cast<int>(r);
    }
    return fold_level<T>(tree, all, 0, value, combine);
}

template <typename T>
void reference(std::vector<T> &ref, Op op, MPI_Comm comm, uint64_t seed)
{
    const FoldTree tree = fold_tree(comm);
    for (size_t i = 0; i < ref.size(); ++i) {
        ref[i] = fold<T>(
            tree, [&](int r) { return input<T>(op, r, i, seed); },
            [&](T a, T b) { return apply<T>(op, a, b); });
    }
}

// Bitwise comparison that ignores the padding bytes of x87 long double.
template <typename T> bool same_bits(const T &a, const T &b)
{
    if constexpr (std::is_same_v<T, long double>) {
        return std::memcmp(&a, &b, 10) == 0;
    } else {
        return std::memcmp(&a, &b, sizeof(T)) == 0;
    }
}

template <typename T> std::string show(T v)
{
    char s[64];
    if constexpr (std::is_floating_point_v<T>) {
        std::snprintf(s, sizeof(s), "%.21Lg", static_cast<long double>(v));
    } else if constexpr (std::is_signed_v<T>) {
        std::snprintf(s, sizeof(s), "%lld", static_cast<long long>(v));
    } else {
        std::snprintf(s, sizeof(s), "%llu", static_cast<unsigned long long>(v));
    }
    return s;
}

// ------------------------------------------------------------------ element kinds
// The elements of the predefined types that are not one C scalar, laid out
// as MPI lays them out, with the reference's operations.

// MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX.
template <typename R> struct Cx {
    R re, im;
};
template <typename R> Cx<R> cx_sum(Cx<R> a, Cx<R> b) { return {a.re + b.re, a.im + b.im}; }
template <typename R> Cx<R> cx_prod(Cx<R> a, Cx<R> b)
{
    // Written as separate statements so no fused multiply-add can form.
    volatile R ac = a.re * b.re, bd = a.im * b.im, ad = a.re * b.im, bc = a.im * b.re;
    return {ac - bd, ad + bc};
}
template <typename R> bool cx_same(const Cx<R> &a, const Cx<R> &b)
{
    return same_bits(a.re, b.re) && same_bits(a.im, b.im);
}

// The MINLOC/MAXLOC pairs (MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT,
// MPI_2INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT): a value and an index; of
// equal values the lower index wins.
template <typename V> struct Pair {
    V v;
    int i;
};
template <typename V> Pair<V> minloc(Pair<V> a, Pair<V> b)
{
    if (b.v < a.v || (b.v == a.v && b.i < a.i)) return b;
    return a;
}
template <typename V> Pair<V> maxloc(Pair<V> a, Pair<V> b)
{
    if (b.v > a.v || (b.v == a.v && b.i < a.i)) return b;
    return a;
}
template <typename V> bool pair_same(const Pair<V> &a, const Pair<V> &b)
{
    return same_bits(a.v, b.v) && a.i == b.i;
}

// MPI_C_BOOL: std::vector<bool> packs bits, so C _Bool elements travel in a
// one-byte struct.
struct CBool {
    bool v;
};
static_assert(sizeof(CBool) == 1, "MPI_C_BOOL is one byte");
inline bool cbool_same(const CBool &a, const CBool &b) { return a.v == b.v; }

// A cheap order-dependent digest of a buffer's bytes, to compare ranks.
inline uint64_t digest(const void *p, size_t n)
{
    const unsigned char *b = static_cast<const unsigned char *>(p);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) {
        h = (h ^ b[i]) * 1099511628211ull;
    }
    return h;
}

} // namespace inatest

#endif

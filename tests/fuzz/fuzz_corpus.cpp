// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Seeds for the fuzzers from what real agents received
// (INA_SWITCHD_RECORD, switch_agent/recorder.h), so that the corpus follows
// the protocol of the build instead of hand-made bytes:
//   fuzz_corpus OUTDIR FILE.rec...
// writes OUTDIR/proto/ (one message per file: its header bytes as received,
// then its payload; a few of each kind of message) and OUTDIR/serve/ (pieces
// of each agent's traffic in serve_input.h's format, under that agent's own
// pool and policy, read from its command line: one piece from the start,
// one from each burst of JOB_OPENs on, as long as it stays small; a leaf's
// pieces also with a parent that answers late and one that refuses).
// make-corpus.sh then keeps what adds coverage.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "aggregator.h"
#include "ina_proto.h"
#include "recorder.h"
#include "serve_input.h"

namespace {

constexpr size_t kMaxServeSeed = 64 * 1024; // bytes: each run of it stays quick
constexpr size_t kMaxServeMessages = 512;
constexpr int kSeedsPerKind = 2;             // proto: messages alike but for ids
constexpr size_t kSlowParentEvery = 4;       // messages between a slow parent's answers

struct Message {
    uint64_t peer;
    uint32_t flags;
    std::vector<uint8_t> hdr;
    std::vector<uint8_t> payload;
};

struct Recording {
    std::vector<std::string> argv;
    std::vector<Message> msgs;
};

bool read_recording(const char *path, Recording &rec)
{
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t at = sizeof(ina::kRecordMagic);
    uint32_t n = 0;
    if (b.size() < at + sizeof(n) || std::memcmp(b.data(), ina::kRecordMagic, at) != 0) {
        return false;
    }
    std::memcpy(&n, b.data() + at, sizeof(n));
    at += sizeof(n);
    if (b.size() - at < n) {
        return false;
    }
    for (size_t i = at; i < at + n;) {
        size_t len = strnlen(reinterpret_cast<const char *>(b.data()) + i, at + n - i);
        rec.argv.emplace_back(reinterpret_cast<const char *>(b.data()) + i, len);
        i += len + 1;
    }
    at += n;
    // Records until the end; a last one cut short (the agent was killed) is left out.
    ina::RecordHead head;
    while (b.size() - at >= sizeof(head)) {
        std::memcpy(&head, b.data() + at, sizeof(head));
        at += sizeof(head);
        if (b.size() - at < uint64_t{head.hdr_len} + head.payload_len) {
            break;
        }
        Message m{head.peer, head.flags, {}, {}};
        m.hdr.assign(b.data() + at, b.data() + at + head.hdr_len);
        at += head.hdr_len;
        m.payload.assign(b.data() + at, b.data() + at + head.payload_len);
        at += head.payload_len;
        rec.msgs.push_back(std::move(m));
    }
    return true;
}

// The agent's core as its command line made it (ina-switchd's options,
// "--opt value" or "--opt=value"; its defaults otherwise).
ina_fuzz::ServeConfig agent_config(const std::vector<std::string> &argv)
{
    const ina::agg::AggregatorConfig defaults;
    ina_fuzz::ServeConfig c;
    c.segs = defaults.segs;
    c.seg_bytes = defaults.seg_bytes;
    c.max_window = defaults.max_window;
    c.open_wait_forever = defaults.open_wait.count() > 0;
    c.policy = ina_fuzz::Policy::kTdm;
    for (size_t i = 1; i < argv.size(); ++i) {
        std::string opt = argv[i], val;
        if (size_t eq = opt.find('='); eq != std::string::npos) {
            val = opt.substr(eq + 1);
            opt.resize(eq);
        } else if (i + 1 < argv.size()) {
            val = argv[i + 1];
        }
        const unsigned long v = std::strtoul(val.c_str(), nullptr, 10);
        if (opt == "--segs") {
            c.segs = static_cast<uint32_t>(v);
        } else if (opt == "--seg-size") {
            c.seg_bytes = static_cast<uint32_t>(v);
        } else if (opt == "--max-window") {
            c.max_window = static_cast<uint32_t>(v);
        } else if (opt == "--open-wait-ms") {
            c.open_wait_forever = v > 0;
        } else if (opt == "--parent") {
            // A leaf: its parent's answers were not recorded, the fuzzer's
            // parent gives them.
            c.parent = c.parent_answers = true;
        } else if (opt == "--policy") {
            c.policy = val == "fcfs"        ? ina_fuzz::Policy::kFcfs
                       : val == "exclusive" ? ina_fuzz::Policy::kExclusive
                       : val == "partition" ? ina_fuzz::Policy::kPartition
                                            : ina_fuzz::Policy::kTdm;
        }
    }
    return c;
}

std::string hex_name(const std::vector<uint8_t> &bytes)
{
    uint64_t h = 1469598103934665603ull; // FNV-1a
    for (uint8_t b : bytes) {
        h = (h ^ b) * 1099511628211ull;
    }
    char name[17];
    std::snprintf(name, sizeof(name), "%016llx", static_cast<unsigned long long>(h));
    return name;
}

bool write_seed(const std::string &dir, const std::vector<uint8_t> &bytes)
{
    const std::string path = dir + "/" + hex_name(bytes);
    std::FILE *f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) {
        std::perror(path.c_str());
        return false;
    }
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    return std::fclose(f) == 0 && ok;
}

ina_proto_hdr_t header_of(const Message &m)
{
    ina_proto_hdr_t h{};
    std::memcpy(&h, m.hdr.data(), std::min(m.hdr.size(), sizeof(h)));
    return h;
}

// fuzz_proto: the message as UCX handed it over. A header shorter than the
// protocol's goes alone (the target reads min(64, n) bytes as the header).
size_t proto_seeds(const Recording &rec, const std::string &dir,
                   std::map<std::tuple<int, int, int, int, int, size_t, size_t>, int> &seen)
{
    size_t n = 0;
    for (const Message &m : rec.msgs) {
        const ina_proto_hdr_t h = header_of(m);
        auto kind = std::make_tuple(h.type, h.coll, h.op, h.dtype, h.flags, m.hdr.size(),
                                    m.payload.size());
        if (seen[kind]++ >= kSeedsPerKind) {
            continue;
        }
        std::vector<uint8_t> seed(m.hdr);
        if (m.hdr.size() >= sizeof(ina_proto_hdr_t)) {
            seed.insert(seed.end(), m.payload.begin(), m.payload.end());
        }
        n += write_seed(dir, seed) ? 1 : 0;
    }
    return n;
}

// fuzz_serve: from message `first` on, as many as fit (with a byte to
// spare for a tick). A slow parent answers after every kSlowParentEvery
// messages.
std::vector<uint8_t> serve_piece(const Recording &rec, const ina_fuzz::ServeConfig &cfg,
                                 size_t first)
{
    std::vector<uint8_t> seed;
    ina_fuzz::encode_config(cfg, seed);
    std::unordered_map<uint64_t, unsigned> endpoint; // peers in order of appearance
    size_t count = 0;
    for (size_t i = first; i < rec.msgs.size() && count < kMaxServeMessages; ++i) {
        const Message &m = rec.msgs[i];
        if (m.hdr.size() != sizeof(ina_proto_hdr_t)) {
            continue; // the agent refuses it before anything else: fuzz_proto's
        }
        if (seed.size() + 1 + m.hdr.size() + 4 + m.payload.size() + 1 > kMaxServeSeed) {
            break;
        }
        // A leaf's parent has an endpoint of its own: members share the others.
        const unsigned members = cfg.parent ? ina_fuzz::kParent : ina_fuzz::kEndpoints;
        auto ep =
            endpoint.emplace(m.peer, static_cast<unsigned>(endpoint.size()) % members).first->second;
        ina_fuzz::encode_message(ep, (m.flags & ina::kRecordRndv) != 0, header_of(m),
                                 m.payload.data(), static_cast<uint32_t>(m.payload.size()),
                                 seed);
        ++count;
        if (cfg.parent_slow && count % kSlowParentEvery == 0) {
            ina_fuzz::encode_tick(ina_fuzz::kParent, 0, seed);
        }
    }
    return count > 0 ? seed : std::vector<uint8_t>();
}

size_t serve_seeds(const Recording &rec, const std::string &dir)
{
    const ina_fuzz::ServeConfig cfg = agent_config(rec.argv);
    // A leaf's parent as recorded answered at once and agreed; the fuzzer's
    // can also answer late or refuse (serve_input.h).
    std::vector<ina_fuzz::ServeConfig> cfgs{cfg};
    if (cfg.parent) {
        cfgs.push_back(cfg);
        cfgs.back().parent_slow = true;
        cfgs.push_back(cfg);
        cfgs.back().parent_refuses = true;
    }
    size_t n = 0;
    bool in_burst = false;
    for (size_t i = 0; i < rec.msgs.size(); ++i) {
        const bool open = header_of(rec.msgs[i]).type == INA_PROTO_JOB_OPEN;
        if (i == 0 || (open && !in_burst)) {
            for (const ina_fuzz::ServeConfig &c : cfgs) {
                std::vector<uint8_t> seed = serve_piece(rec, c, i);
                n += !seed.empty() && write_seed(dir, seed) ? 1 : 0;
            }
        }
        in_burst = open;
    }
    return n;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: fuzz_corpus OUTDIR FILE.rec...\n");
        return 2;
    }
    const std::string out = argv[1];
    std::map<std::tuple<int, int, int, int, int, size_t, size_t>, int> seen;
    size_t nproto = 0, nserve = 0, nmsgs = 0;
    for (int i = 2; i < argc; ++i) {
        Recording rec;
        if (!read_recording(argv[i], rec)) {
            std::fprintf(stderr, "fuzz_corpus: %s is not a recording\n", argv[i]);
            return 1;
        }
        nmsgs += rec.msgs.size();
        nproto += proto_seeds(rec, out + "/proto", seen);
        nserve += serve_seeds(rec, out + "/serve");
    }
    std::printf("fuzz_corpus: %zu messages from %d agents: %zu proto seeds, %zu serve seeds\n",
                nmsgs, argc - 2, nproto, nserve);
    return nproto > 0 && nserve > 0 ? 0 : 1;
}

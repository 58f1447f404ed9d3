// Unit tests of the wire protocol (common/ina_proto.h): header layout, init,
// the validator's acceptance and every rejection it promises, a fuzz loop,
// and the name helpers.
#include "ina_proto.h"

#include <check.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

// Independent restatement of which (op, dtype) pairs MPI defines: every op on
// integers, only the arithmetic and ordering ops on floating types.
bool ref_pair_valid(unsigned op, unsigned dtype)
{
    if (op >= INA_OP_COUNT || dtype >= INA_DT_COUNT) {
        return false;
    }
    const bool floating =
        dtype == INA_DT_FLOAT || dtype == INA_DT_DOUBLE || dtype == INA_DT_LONG_DOUBLE;
    return !floating || op == INA_OP_SUM || op == INA_OP_PROD || op == INA_OP_MIN ||
           op == INA_OP_MAX;
}

size_t ref_dtype_size(unsigned dtype)
{
    static const size_t sizes[INA_DT_COUNT] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8, sizeof(long double)};
    return dtype < INA_DT_COUNT ? sizes[dtype] : 0;
}

// A message that the validator must accept, and its payload length.
struct Msg {
    ina_proto_hdr_t hdr;
    size_t payload_len;
};

Msg valid_msg(ina_proto_type_t type)
{
    Msg m{};
    ina_proto_init(&m.hdr, type);
    m.payload_len = 0;
    switch (type) {
    case INA_PROTO_HELLO_ACK:
        m.hdr.count = 64;
        m.hdr.arg = 65536;
        break;
    case INA_PROTO_JOB_CREATE:
        m.hdr.count = 4;
        m.hdr.window = 16;
        m.hdr.arg = 0xc00c1e;
        m.payload_len = 4 * sizeof(uint32_t);
        break;
    case INA_PROTO_JOB_CREATED:
        m.hdr.jid = 7;
        m.hdr.window = 16;
        m.hdr.arg = 0xc00c1e;
        break;
    case INA_PROTO_JOB_JOIN:
    case INA_PROTO_JOB_JOINED:
    case INA_PROTO_JOB_LEAVE:
        m.hdr.jid = 7;
        m.hdr.rank = 3;
        break;
    case INA_PROTO_BLOCK:
        m.hdr.jid = 7;
        m.hdr.rank = 3;
        m.hdr.mid = 12;
        m.hdr.window = 16;
        m.hdr.sid = 37;
        m.hdr.seg = 37 % 16;
        m.hdr.op = INA_OP_SUM;
        m.hdr.dtype = INA_DT_FLOAT;
        m.hdr.count = 1024;
        m.hdr.arg = 100000;
        m.payload_len = 1024 * 4;
        break;
    case INA_PROTO_RESULT:
        m.hdr.jid = 7;
        m.hdr.mid = 12;
        m.hdr.sid = 37;
        m.hdr.seg = 5;
        m.hdr.op = INA_OP_MAX;
        m.hdr.dtype = INA_DT_INT64;
        m.hdr.count = 100;
        m.payload_len = 800;
        break;
    case INA_PROTO_DENY:
        m.hdr.jid = 7;
        m.hdr.mid = 12;
        m.hdr.status = INA_PROTO_ERR_NO_RESOURCES;
        break;
    case INA_PROTO_ERROR:
        m.hdr.status = INA_PROTO_ERR_SEG_BUSY;
        m.hdr.op = INA_PROTO_BLOCK;
        m.hdr.jid = 7;
        m.hdr.sid = 3;
        break;
    default:
        break;
    }
    return m;
}

ina_proto_status_t check_msg(const Msg &m)
{
    return ina_proto_check(&m.hdr, sizeof(m.hdr), m.payload_len);
}

const ina_proto_type_t kAllTypes[] = {
    INA_PROTO_HELLO,     INA_PROTO_HELLO_ACK, INA_PROTO_JOB_CREATE, INA_PROTO_JOB_CREATED,
    INA_PROTO_JOB_JOIN,  INA_PROTO_JOB_JOINED, INA_PROTO_JOB_LEAVE, INA_PROTO_BLOCK,
    INA_PROTO_RESULT,    INA_PROTO_DENY,      INA_PROTO_ERROR};

} // namespace

START_TEST(test_layout)
{
    ck_assert_uint_eq(sizeof(ina_proto_hdr_t), 48);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, magic), 0);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, version), 4);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, type), 5);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, status), 6);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, op), 7);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, dtype), 8);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, reserved), 9);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, window), 10);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, jid), 12);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, rank), 16);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, sid), 20);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, mid), 24);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, seg), 32);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, count), 36);
    ck_assert_uint_eq(offsetof(ina_proto_hdr_t, arg), 40);
    // Enum values are wire values: pin them.
    ck_assert_uint_eq(INA_PROTO_HELLO, 1);
    ck_assert_uint_eq(INA_PROTO_ERROR, 11);
    ck_assert_uint_eq(INA_PROTO_TYPE_MAX, 11);
    ck_assert_uint_eq(INA_PROTO_STATUS_MAX, 8);
    ck_assert_uint_eq(INA_DT_LONG_DOUBLE, 10);
    ck_assert_uint_eq(INA_OP_BXOR, 9);
}
END_TEST

START_TEST(test_init)
{
    ina_proto_hdr_t h;
    std::memset(&h, 0xa5, sizeof(h));
    ina_proto_init(&h, INA_PROTO_BLOCK);
    const auto *bytes = reinterpret_cast<const unsigned char *>(&h);
    // "INA1" in memory on little endian, as the header promises.
    const uint32_t one = 1;
    if (*reinterpret_cast<const unsigned char *>(&one) == 1) {
        ck_assert_int_eq(std::memcmp(bytes, "INA1", 4), 0);
    }
    ck_assert_uint_eq(h.magic, INA_PROTO_MAGIC);
    ck_assert_uint_eq(bytes[4], INA_PROTO_VERSION);
    ck_assert_uint_eq(bytes[5], INA_PROTO_BLOCK);
    for (size_t i = 6; i < sizeof(h); ++i) {
        ck_assert_msg(bytes[i] == 0, "byte %zu not zeroed by init", i);
    }
}
END_TEST

START_TEST(test_dtype_size_and_pairs)
{
    for (unsigned dt = 0; dt < 300; ++dt) {
        ck_assert_uint_eq(ina_proto_dtype_size(dt), ref_dtype_size(dt));
    }
    ck_assert_uint_eq(ina_proto_dtype_size(UINT_MAX), 0);
    for (unsigned op = 0; op < 20; ++op) {
        for (unsigned dt = 0; dt < 20; ++dt) {
            ck_assert_msg(!!ina_proto_op_valid(op, dt) == ref_pair_valid(op, dt),
                          "op_valid(%u, %u)", op, dt);
        }
    }
    ck_assert_int_eq(ina_proto_op_valid(UINT_MAX, 0), 0);
    ck_assert_int_eq(ina_proto_op_valid(0, UINT_MAX), 0);
}
END_TEST

START_TEST(test_accepts_every_type)
{
    for (ina_proto_type_t t : kAllTypes) {
        Msg m = valid_msg(t);
        ck_assert_msg(check_msg(m) == INA_PROTO_OK, "valid %s rejected: %s",
                      ina_proto_type_name(t), ina_proto_status_name(check_msg(m)));
    }
}
END_TEST

START_TEST(test_accepts_unaligned_header)
{
    // AM headers can sit at any offset in a receive buffer.
    Msg m = valid_msg(INA_PROTO_BLOCK);
    std::vector<unsigned char> buf(sizeof(m.hdr) + 8);
    for (size_t off = 0; off < 8; ++off) {
        std::memcpy(buf.data() + off, &m.hdr, sizeof(m.hdr));
        ck_assert_int_eq(ina_proto_check(buf.data() + off, sizeof(m.hdr), m.payload_len),
                         INA_PROTO_OK);
    }
}
END_TEST

START_TEST(test_rejects_common_fields)
{
    ck_assert_int_eq(ina_proto_check(nullptr, sizeof(ina_proto_hdr_t), 0), INA_PROTO_ERR_MALFORMED);
    for (ina_proto_type_t t : kAllTypes) {
        const Msg good = valid_msg(t);
        // Header length: anything but exactly 48 bytes.
        unsigned char big[2 * sizeof(ina_proto_hdr_t)] = {};
        std::memcpy(big, &good.hdr, sizeof(good.hdr));
        for (size_t len : {size_t{0}, size_t{1}, size_t{47}, size_t{49}, sizeof(big)}) {
            ck_assert_int_eq(ina_proto_check(big, len, good.payload_len), INA_PROTO_ERR_MALFORMED);
        }
        // Magic: every single-byte corruption.
        for (int byte = 0; byte < 4; ++byte) {
            Msg m = good;
            reinterpret_cast<unsigned char *>(&m.hdr.magic)[byte] ^= 0x20;
            ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        }
        for (unsigned v : {0u, 2u, 255u}) {
            Msg m = good;
            m.hdr.version = static_cast<uint8_t>(v);
            ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_VERSION);
        }
        for (unsigned r : {1u, 0x80u, 0xffu}) {
            Msg m = good;
            m.hdr.reserved = static_cast<uint8_t>(r);
            ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        }
        for (unsigned s : {INA_PROTO_STATUS_MAX + 1u, 100u, 255u}) {
            Msg m = good;
            m.hdr.status = static_cast<uint8_t>(s);
            ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        }
        for (unsigned s = 0; s <= INA_PROTO_STATUS_MAX; ++s) {
            Msg m = good;
            m.hdr.status = static_cast<uint8_t>(s);
            ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
        }
        Msg m = good;
        m.hdr.window = INA_PROTO_MAX_WINDOW + 1;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    }
    for (unsigned t : {0u, INA_PROTO_TYPE_MAX + 1u, 100u, 255u}) {
        Msg m = valid_msg(INA_PROTO_HELLO);
        m.hdr.type = static_cast<uint8_t>(t);
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    }
}
END_TEST

START_TEST(test_control_payload)
{
    for (ina_proto_type_t t : kAllTypes) {
        if (t == INA_PROTO_BLOCK || t == INA_PROTO_RESULT || t == INA_PROTO_JOB_CREATE) {
            continue;
        }
        Msg m = valid_msg(t);
        for (size_t len : {size_t{1}, size_t{4}, size_t{48}, size_t{1} << 20}) {
            m.payload_len = len;
            ck_assert_msg(check_msg(m) == INA_PROTO_ERR_MALFORMED, "%s with %zu payload bytes",
                          ina_proto_type_name(t), len);
        }
    }
}
END_TEST

START_TEST(test_job_create)
{
    const Msg good = valid_msg(INA_PROTO_JOB_CREATE);
    Msg m = good;
    m.hdr.count = 0;
    m.payload_len = 0;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);

    m.hdr.count = INA_PROTO_MAX_MEMBERS;
    m.payload_len = size_t{INA_PROTO_MAX_MEMBERS} * 4;
    ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
    m.hdr.count = INA_PROTO_MAX_MEMBERS + 1;
    m.payload_len = size_t{INA_PROTO_MAX_MEMBERS + 1} * 4;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.count = UINT32_MAX;
    m.payload_len = size_t{UINT32_MAX} * 4;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);

    for (size_t len : {size_t{0}, size_t{4}, size_t{15}, size_t{17}, size_t{32}}) {
        m = good;
        m.payload_len = len;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    }
    m = good;
    m.hdr.window = 0;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.window = INA_PROTO_MAX_WINDOW;
    ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
}
END_TEST

START_TEST(test_block_window_seg)
{
    const Msg good = valid_msg(INA_PROTO_BLOCK);
    Msg m = good;
    m.hdr.window = 0;
    m.hdr.seg = 0;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.window = INA_PROTO_MAX_WINDOW + 1;
    m.hdr.seg = m.hdr.sid % m.hdr.window;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.window = UINT16_MAX;
    m.hdr.seg = m.hdr.sid % m.hdr.window;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);

    const uint32_t sids[] = {0, 1, 15, 16, 17, 1023, 1024, 1025, 99999, UINT32_MAX};
    for (unsigned w = 1; w <= INA_PROTO_MAX_WINDOW; w += (w < 20 ? 1 : 97)) {
        for (uint32_t sid : sids) {
            m = good;
            m.hdr.window = static_cast<uint16_t>(w);
            m.hdr.sid = sid;
            m.hdr.seg = sid % w;
            ck_assert_msg(check_msg(m) == INA_PROTO_OK, "w=%u sid=%u", w, sid);
            m.hdr.seg = (sid % w + 1) % w; // another slot of the lease
            if (w > 1) {
                ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
            }
            m.hdr.seg = w; // outside the lease
            ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        }
    }
    m = good;
    m.hdr.rank = INA_PROTO_MAX_MEMBERS;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.rank = INA_PROTO_MAX_MEMBERS - 1;
    ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
}
END_TEST

START_TEST(test_job_member_rank)
{
    for (ina_proto_type_t t : {INA_PROTO_JOB_JOIN, INA_PROTO_JOB_JOINED, INA_PROTO_JOB_LEAVE}) {
        Msg m = valid_msg(t);
        m.hdr.rank = INA_PROTO_MAX_MEMBERS - 1;
        ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
        m.hdr.rank = INA_PROTO_MAX_MEMBERS;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        m.hdr.rank = UINT32_MAX;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    }
}
END_TEST

// Every op x dtype (and out-of-range values) on BLOCK and RESULT.
START_TEST(test_data_op_dtype)
{
    for (ina_proto_type_t t : {INA_PROTO_BLOCK, INA_PROTO_RESULT}) {
        for (unsigned op = 0; op <= INA_OP_COUNT + 1; ++op) {
            for (unsigned dt = 0; dt <= INA_DT_COUNT + 1; ++dt) {
                Msg m = valid_msg(t);
                m.hdr.op = static_cast<uint8_t>(op);
                m.hdr.dtype = static_cast<uint8_t>(dt);
                m.hdr.count = 10;
                m.payload_len = 10 * ref_dtype_size(dt);
                ina_proto_status_t want = INA_PROTO_OK;
                if (op >= INA_OP_COUNT || dt >= INA_DT_COUNT) {
                    want = INA_PROTO_ERR_MALFORMED;
                    m.payload_len = 10;
                } else if (!ref_pair_valid(op, dt)) {
                    want = INA_PROTO_ERR_UNSUPPORTED;
                }
                ck_assert_msg(check_msg(m) == want, "%s op %u dtype %u: got %s",
                              ina_proto_type_name(t), op, dt,
                              ina_proto_status_name(check_msg(m)));
            }
        }
        Msg m = valid_msg(t);
        m.hdr.op = 255;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        m = valid_msg(t);
        m.hdr.dtype = 255;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
        // The example of the brief: a bitwise op on float.
        m = valid_msg(t);
        m.hdr.op = INA_OP_BAND;
        m.hdr.dtype = INA_DT_FLOAT;
        ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_UNSUPPORTED);
    }
}
END_TEST

START_TEST(test_data_count_payload)
{
    for (ina_proto_type_t t : {INA_PROTO_BLOCK, INA_PROTO_RESULT}) {
        for (unsigned dt = 0; dt < INA_DT_COUNT; ++dt) {
            const size_t esz = ref_dtype_size(dt);
            const uint32_t limit = static_cast<uint32_t>(INA_PROTO_MAX_SEG_BYTES / esz);
            Msg m = valid_msg(t);
            m.hdr.op = INA_OP_SUM;
            m.hdr.dtype = static_cast<uint8_t>(dt);
            m.hdr.arg = UINT64_MAX;

            m.hdr.count = 0;
            m.payload_len = 0;
            ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);

            m.hdr.count = limit; // exactly one full Seg
            m.payload_len = size_t{limit} * esz;
            ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
            m.hdr.count = limit + 1;
            m.payload_len = size_t{limit + 1} * esz;
            ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
            m.hdr.count = UINT32_MAX;
            m.payload_len = size_t{UINT32_MAX} * esz;
            ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);

            m.hdr.count = 33;
            for (size_t len : {size_t{0}, 33 * esz - 1, 33 * esz + 1, 32 * esz, 34 * esz, size_t{33}}) {
                if (len == 33 * esz) {
                    continue;
                }
                m.payload_len = len;
                ck_assert_msg(check_msg(m) == INA_PROTO_ERR_MALFORMED, "dtype %u len %zu", dt, len);
            }
            m.payload_len = 33 * esz;
            ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
        }
    }
    // BLOCK: arg is the whole call's element count, never below this block's.
    Msg m = valid_msg(INA_PROTO_BLOCK);
    m.hdr.arg = m.hdr.count;
    ck_assert_int_eq(check_msg(m), INA_PROTO_OK);
    m.hdr.arg = m.hdr.count - 1;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
    m.hdr.arg = 0;
    ck_assert_int_eq(check_msg(m), INA_PROTO_ERR_MALFORMED);
}
END_TEST

// Random bytes must never crash the validator nor pass a bad magic; random
// mutations of valid messages must only be accepted when they keep the
// invariants the receivers rely on.
START_TEST(test_fuzz)
{
    std::mt19937_64 rng(0x1a2b3c4d5e6fULL);
    const int iterations = 200000;
    unsigned accepted_mutants = 0;
    for (int it = 0; it < iterations; ++it) {
        // Heap buffer of exactly hdr_len bytes: a read past it is a bug that
        // valgrind/ASan would see.
        const size_t hdr_len = (rng() % 4 == 0) ? rng() % 97 : sizeof(ina_proto_hdr_t);
        std::vector<unsigned char> buf(hdr_len);
        const bool mutant = (it % 2 == 1) && hdr_len == sizeof(ina_proto_hdr_t);
        size_t payload_len = rng() % 5000;
        if (mutant) {
            Msg m = valid_msg(kAllTypes[rng() % std::size(kAllTypes)]);
            payload_len = (rng() % 4 == 0) ? payload_len : m.payload_len;
            std::memcpy(buf.data(), &m.hdr, sizeof(m.hdr));
            const int flips = 1 + static_cast<int>(rng() % 3);
            for (int f = 0; f < flips; ++f) {
                buf[rng() % buf.size()] ^= static_cast<unsigned char>(1u << (rng() % 8));
            }
        } else {
            for (auto &b : buf) {
                b = static_cast<unsigned char>(rng());
            }
            if (hdr_len >= 4 && rng() % 2 == 0) {
                const uint32_t magic = INA_PROTO_MAGIC;
                std::memcpy(buf.data(), &magic, 4); // get past the first gate sometimes
            }
        }
        const ina_proto_status_t st = ina_proto_check(buf.data(), hdr_len, payload_len);
        ck_assert_int_le(st, INA_PROTO_STATUS_MAX);
        if (st != INA_PROTO_OK) {
            continue;
        }
        ina_proto_hdr_t h;
        ck_assert_uint_eq(hdr_len, sizeof(h));
        std::memcpy(&h, buf.data(), sizeof(h));
        ck_assert_uint_eq(h.magic, INA_PROTO_MAGIC);
        ck_assert_uint_eq(h.version, INA_PROTO_VERSION);
        ck_assert(h.type >= INA_PROTO_HELLO && h.type <= INA_PROTO_TYPE_MAX);
        ck_assert_uint_eq(h.reserved, 0);
        ck_assert_uint_le(h.status, INA_PROTO_STATUS_MAX);
        ck_assert_uint_le(h.window, INA_PROTO_MAX_WINDOW);
        if (h.type == INA_PROTO_BLOCK || h.type == INA_PROTO_RESULT) {
            ck_assert(ref_pair_valid(h.op, h.dtype));
            ck_assert_uint_ge(h.count, 1);
            ck_assert_uint_eq(payload_len, size_t{h.count} * ref_dtype_size(h.dtype));
            ck_assert_uint_le(payload_len, INA_PROTO_MAX_SEG_BYTES);
            if (h.type == INA_PROTO_BLOCK) {
                ck_assert_uint_ge(h.window, 1);
                ck_assert_uint_eq(h.seg, h.sid % h.window);
                ck_assert_uint_ge(h.arg, h.count);
            }
        } else if (h.type == INA_PROTO_JOB_CREATE) {
            ck_assert(h.count >= 1 && h.count <= INA_PROTO_MAX_MEMBERS && h.window >= 1);
            ck_assert_uint_eq(payload_len, size_t{h.count} * 4);
        } else {
            ck_assert_uint_eq(payload_len, 0);
        }
        accepted_mutants += mutant;
    }
    // The mutation half must reach the accepting paths, or it tests little.
    ck_assert_uint_gt(accepted_mutants, 1000);
}
END_TEST

START_TEST(test_names)
{
    std::set<std::string> seen;
    for (unsigned v = 0; v < 300; ++v) {
        for (const char *name : {ina_proto_type_name(v), ina_proto_status_name(v),
                                 ina_proto_op_name(v), ina_proto_dtype_name(v)}) {
            ck_assert_ptr_nonnull(name);
            ck_assert_uint_gt(std::strlen(name), 0);
        }
    }
    for (unsigned v : {UINT_MAX, UINT_MAX - 1}) {
        ck_assert_ptr_nonnull(ina_proto_type_name(v));
        ck_assert_ptr_nonnull(ina_proto_status_name(v));
        ck_assert_ptr_nonnull(ina_proto_op_name(v));
        ck_assert_ptr_nonnull(ina_proto_dtype_name(v));
    }
    ck_assert_str_eq(ina_proto_type_name(INA_PROTO_BLOCK), "BLOCK");
    ck_assert_str_eq(ina_proto_type_name(INA_PROTO_ERROR), "ERROR");
    ck_assert_str_eq(ina_proto_status_name(INA_PROTO_OK), "ok");
    ck_assert_str_eq(ina_proto_status_name(INA_PROTO_ERR_SEG_BUSY), "seg-busy");
    ck_assert_str_eq(ina_proto_op_name(INA_OP_BXOR), "bxor");
    ck_assert_str_eq(ina_proto_dtype_name(INA_DT_LONG_DOUBLE), "long double");
    // Valid values have distinct names (a log must tell them apart).
    for (unsigned t = INA_PROTO_HELLO; t <= INA_PROTO_TYPE_MAX; ++t) {
        ck_assert(seen.insert(std::string("t:") + ina_proto_type_name(t)).second);
    }
    for (unsigned s = 0; s <= INA_PROTO_STATUS_MAX; ++s) {
        ck_assert(seen.insert(std::string("s:") + ina_proto_status_name(s)).second);
    }
    for (unsigned o = 0; o < INA_OP_COUNT; ++o) {
        ck_assert(seen.insert(std::string("o:") + ina_proto_op_name(o)).second);
    }
    for (unsigned d = 0; d < INA_DT_COUNT; ++d) {
        ck_assert(seen.insert(std::string("d:") + ina_proto_dtype_name(d)).second);
    }
}
END_TEST

int main()
{
    Suite *s = suite_create("ina_proto");
    TCase *tc = tcase_create("proto");
    tcase_add_test(tc, test_layout);
    tcase_add_test(tc, test_init);
    tcase_add_test(tc, test_dtype_size_and_pairs);
    tcase_add_test(tc, test_accepts_every_type);
    tcase_add_test(tc, test_accepts_unaligned_header);
    tcase_add_test(tc, test_rejects_common_fields);
    tcase_add_test(tc, test_control_payload);
    tcase_add_test(tc, test_job_create);
    tcase_add_test(tc, test_block_window_seg);
    tcase_add_test(tc, test_job_member_rank);
    tcase_add_test(tc, test_data_op_dtype);
    tcase_add_test(tc, test_data_count_payload);
    tcase_add_test(tc, test_fuzz);
    tcase_add_test(tc, test_names);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

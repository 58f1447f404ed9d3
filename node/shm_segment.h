/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * A POSIX shared-memory segment that several processes open by one name
 * without talking to each other (ina::node::Segment, RAII).
 *
 * Create or attach: the first process to open the name creates the file and
 * reserves all of its memory (posix_fallocate, so that a full /dev/shm is an
 * error here and never a SIGBUS later); the others wait until the creator
 * has either reserved it (the header says ready) or given up (the file is
 * just the header, which says so). So every process sees the same outcome.
 * The name is removed as soon as the expected number of processes attached
 * (not before: a process that comes late must find the same segment); the
 * runtime removes the file of a job that died before (the caller registers
 * path() for that).
 *
 * Placement: the creator may set where the pages go (numa_placement.h)
 * before it reserves them: `place` gets the mapping, still without memory,
 * and says whether it bound anything; if the reservation then fails, it is
 * tried once more without the binding (a NUMA node may be full where the
 * machine is not).
 */
#ifndef INA_NODE_SHM_SEGMENT_H
#define INA_NODE_SHM_SEGMENT_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace ina::node {

constexpr uint32_t kReady = 1;   // the memory is reserved
constexpr uint32_t kGivenUp = 2; // it could not be: the file is just this header

// The first cache line of every segment.
struct alignas(64) SegmentHeader {
    std::atomic<uint32_t> ready;    // kReady or kGivenUp once the creator decided
    std::atomic<uint32_t> attached; // processes that attached so far
    uint64_t bytes;                 // the segment's size, as the creator saw it
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "shared atomics must be lock-free");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared atomics must be lock-free");

class Segment {
  public:
    enum class Result { Ok, NoMemory, Error };

    Segment() = default;
    ~Segment() { reset(); }
    Segment(const Segment &) = delete;
    Segment &operator=(const Segment &) = delete;

    // Binds parts of the fresh mapping (base, bytes); true if it bound any.
    using Place = std::function<bool(void *base, size_t bytes)>;

    // Open `name` (as for shm_open) of `bytes` bytes shared by `expected`
    // processes; the creator runs `place` (if any) first. On Error, `err`
    // says why.
    Result open(const std::string &name, size_t bytes, uint32_t expected, int timeout_ms,
                std::string &err, const Place &place = nullptr);
    void reset();

    void *base() const { return base_; }
    size_t size() const { return bytes_; }
    // The creator's placement was undone: reserving the pages where `place`
    // bound them failed (a NUMA node without room), and they were reserved
    // wherever the kernel had room instead.
    bool unplaced() const { return unplaced_; }

  private:
    std::string name_;
    void *base_ = nullptr;
    size_t bytes_ = 0;
    bool unplaced_ = false;
};

} // namespace ina::node

#endif

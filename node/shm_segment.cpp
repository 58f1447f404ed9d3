/*
 * Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
 *
 * Create-or-attach of a named shared-memory segment (shm_segment.h).
 */
#include "shm_segment.h"

#include "numa_placement.h"
#include "unique_fd.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ina::node {

namespace {

std::string errno_text(const char *what, int e)
{
    return std::string(what) + ": " + std::strerror(e);
}

using Clock = std::chrono::steady_clock;

} // namespace

Segment::Result Segment::open(const std::string &name, size_t bytes, uint32_t expected,
                              int timeout_ms, std::string &err, const Place &place)
{
    reset();
    if (bytes < sizeof(SegmentHeader) || expected == 0 || name.size() < 2 || name[0] != '/') {
        err = "invalid segment parameters";
        return Result::Error;
    }
    name_ = name;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);

    UniqueFd f;
    bool creator = false;
    size_t map_bytes = bytes;
    void *p = MAP_FAILED;
    f.reset(::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600));
    bool unlinked = false;
    if (f.get() >= 0 && expected == 1) {
        // Nobody else will attach: the name goes at once, before the
        // reservation (which takes a while): a process killed from now on
        // leaves nothing in /dev/shm, whatever its runtime's cleanup does.
        ::shm_unlink(name.c_str());
        unlinked = true;
    }
    if (f.get() >= 0) {
        creator = true;
        // Placement first, on a mapping of the still empty file: the
        // reservation allocates every page by the policy set here.
        bool placed = false;
        if (place) {
            p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f.get(), 0);
            placed = p != MAP_FAILED && place(p, bytes);
        }
        int rc = ::posix_fallocate(f.get(), 0, static_cast<off_t>(bytes));
        if (rc != 0 && placed) {
            unbind_all(p, bytes);
            unplaced_ = true;
            rc = ::posix_fallocate(f.get(), 0, static_cast<off_t>(bytes));
        }
        if (rc != 0 && p != MAP_FAILED) {
            ::munmap(p, bytes);
            p = MAP_FAILED;
        }
        if (rc != 0) {
            // Give up, and say so to the others: a file of just the header,
            // marked "given up"; they still attach and count, so the last
            // one removes the name.
            err = errno_text("reserving the node segment (posix_fallocate)", rc);
            if (::ftruncate(f.get(), sizeof(SegmentHeader)) != 0) {
                return Result::Error; // the others time out: an error everywhere
            }
            map_bytes = sizeof(SegmentHeader);
        }
    } else if (errno == EEXIST) {
        f.reset(::shm_open(name.c_str(), O_RDWR, 0600));
        if (f.get() < 0) {
            err = errno_text("attaching the node segment", errno);
            return Result::Error;
        }
        // Wait for the creator's verdict: full size, or just the header.
        for (;;) {
            struct stat st;
            if (::fstat(f.get(), &st) != 0) {
                err = errno_text("fstat of the node segment", errno);
                return Result::Error;
            }
            if (static_cast<size_t>(st.st_size) == bytes ||
                static_cast<size_t>(st.st_size) == sizeof(SegmentHeader)) {
                map_bytes = static_cast<size_t>(st.st_size);
                break;
            }
            if (st.st_size != 0) {
                err = "the node segment has " + std::to_string(st.st_size) + " bytes, not " +
                      std::to_string(bytes) + " (ranks disagree on its parameters)";
                return Result::Error;
            }
            if (Clock::now() > deadline) {
                err = "timed out waiting for the rank that creates the node segment";
                return Result::Error;
            }
            ::sched_yield();
        }
    } else {
        err = errno_text("creating the node segment", errno);
        return Result::Error;
    }

    if (p == MAP_FAILED) {
        p = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f.get(), 0);
    }
    if (p == MAP_FAILED) {
        err = errno_text("mmap of the node segment", errno);
        return Result::Error;
    }
    base_ = p;
    bytes_ = map_bytes;
    auto *h = static_cast<SegmentHeader *>(base_);
    if (creator) {
        h->bytes = map_bytes;
        h->ready.store(map_bytes == bytes ? kReady : kGivenUp, std::memory_order_release);
    }
    uint32_t state;
    while ((state = h->ready.load(std::memory_order_acquire)) == 0) {
        if (Clock::now() > deadline) {
            err = "timed out waiting for the node segment to be initialised";
            reset();
            return Result::Error;
        }
        ::sched_yield();
    }
    uint32_t n = h->attached.fetch_add(1, std::memory_order_acq_rel) + 1;
    if (n == expected && !unlinked) {
        // Every process has it mapped (or knows it was given up): the name
        // is no longer needed. Nobody removes it earlier: a process that
        // comes late must find this segment, not create another one.
        ::shm_unlink(name_.c_str());
    }
    if (n > expected) {
        err = "the node segment has more processes attached than the group has ranks "
              "(a stale segment of the same name?)";
        reset();
        return Result::Error;
    }
    if (state != kReady) {
        if (err.empty()) {
            err = "the node segment could not be reserved (by the rank that created it)";
        }
        reset();
        return Result::NoMemory;
    }
    return Result::Ok;
}

void Segment::reset()
{
    if (base_ != nullptr) {
        ::munmap(base_, bytes_);
        base_ = nullptr;
        bytes_ = 0;
    }
    // The name is not removed here: it goes when the last process
    // attached, or with the runtime's cleanup of a job that died first.
    name_.clear();
    unplaced_ = false;
}

} // namespace ina::node

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
#include "recorder.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "log.h"

namespace ina {

namespace {

// Whole writes only: a record cut short would shift every later one.
bool write_all(int fd, iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = writev(fd, iov, n);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        for (; n > 0 && static_cast<size_t>(w) >= iov->iov_len; ++iov, --n) {
            w -= static_cast<ssize_t>(iov->iov_len);
        }
        if (n > 0) {
            iov->iov_base = static_cast<char *>(iov->iov_base) + w;
            iov->iov_len -= static_cast<size_t>(w);
        }
    }
    return true;
}

std::vector<char> read_cmdline()
{
    std::vector<char> out;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return out;
    }
    char buf[4096];
    ssize_t r;
    while ((r = read(fd, buf, sizeof(buf))) > 0) {
        out.insert(out.end(), buf, buf + r);
    }
    close(fd);
    return out;
}

// -1: not asked for or failed; opened at the first message.
int open_record()
{
    const char *dir = std::getenv("INA_SWITCHD_RECORD");
    if (dir == nullptr || *dir == '\0') {
        return -1;
    }
    const std::string path = std::string(dir) + "/agent-" + std::to_string(getpid()) + ".rec";
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        INA_WARN("INA_SWITCHD_RECORD: cannot create %s: %s", path.c_str(), std::strerror(errno));
        return -1;
    }
    std::vector<char> cmd = read_cmdline();
    uint32_t n = static_cast<uint32_t>(cmd.size());
    iovec iov[3] = {{const_cast<char *>(kRecordMagic), sizeof(kRecordMagic)},
                    {&n, sizeof(n)},
                    {cmd.data(), cmd.size()}};
    if (!write_all(fd, iov, 3)) {
        INA_WARN("INA_SWITCHD_RECORD: cannot write %s: %s", path.c_str(), std::strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

} // namespace

void record_received(uint64_t peer, const void *hdr, size_t hdr_len, const void *payload,
                     size_t payload_len, uint32_t flags)
{
    static int fd = open_record();
    if (fd < 0) {
        return;
    }
    // Bytes that are not there are recorded as not there.
    hdr_len = hdr != nullptr ? hdr_len : 0;
    payload_len = payload != nullptr ? payload_len : 0;
    RecordHead head{peer, static_cast<uint32_t>(hdr_len), static_cast<uint32_t>(payload_len),
                    flags, 0};
    iovec iov[3] = {{&head, sizeof(head)},
                    {const_cast<void *>(hdr), hdr_len},
                    {const_cast<void *>(payload), payload_len}};
    if (!write_all(fd, iov, 3)) {
        INA_WARN("INA_SWITCHD_RECORD: recording stopped: %s", std::strerror(errno));
        close(fd);
        fd = -1;
    }
}

} // namespace ina

// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Leveled logging to stderr (see log.h).
#include "log.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace ina::agg {

namespace {
// Single-threaded users: plain globals are enough.
LogLevel g_level = LogLevel::kWarn;
const char *g_tag = "ina";
bool g_journal = false;
// syslog priorities of the levels: LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG.
const int kPriorities[] = {3, 4, 6, 7};
const char *const kTags[] = {"error", "warn", "info", "debug"};
} // namespace

void log_set_level(LogLevel level) { g_level = level; }
void log_set_tag(const char *tag) { g_tag = tag != nullptr ? tag : "ina"; }
void log_set_journal(bool on) { g_journal = on; }
LogLevel log_level() { return g_level; }
bool log_enabled(LogLevel level) { return level <= g_level; }

bool log_parse_level(const char *name, LogLevel *out)
{
    for (int i = 0; i < 4; ++i) {
        if (std::strcmp(name, kTags[i]) == 0) {
            *out = static_cast<LogLevel>(i);
            return true;
        }
    }
    return false;
}

void log_msg(LogLevel level, const char *fmt, ...)
{
    // Format into one buffer so the line reaches stderr in one write.
    char line[1024];
    const int lv = static_cast<int>(level);
    int n = g_journal ? std::snprintf(line, sizeof(line), "<%d>", kPriorities[lv])
                      : std::snprintf(line, sizeof(line), "%s[%s]: ", g_tag, kTags[lv]);
    if (n < 0 || static_cast<size_t>(n) >= sizeof(line) / 2) {
        n = 0; // a tag that long is a bug; keep the message
    }
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(line + n, sizeof(line) - static_cast<size_t>(n) - 1, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "%s\n", line);
}

} // namespace ina::agg

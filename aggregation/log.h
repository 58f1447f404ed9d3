// Copyright (c) 2026 The ina authors. SPDX-License-Identifier: BSD-3-Clause
//
// Leveled logging to stderr for the aggregation core and the programs around
// it: one line per event, "<tag>[<level>]: ...", so that operators can grep
// and tests can parse the exit counters (under systemd: "<priority>...").
// No timestamps: the journal, or whoever collects stderr, adds them.
// Single-threaded users only.
#ifndef INA_AGG_LOG_H
#define INA_AGG_LOG_H

namespace ina::agg {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// Lines above this level are discarded (default: warn).
void log_set_level(LogLevel level);
LogLevel log_level();
// Parses "error|warn|info|debug"; false if the name is unknown.
bool log_parse_level(const char *name, LogLevel *out);
bool log_enabled(LogLevel level);
// The program name each line starts with (default "ina"); not copied.
void log_set_tag(const char *tag);
// Lines go to the journal (stderr is systemd's stream): each starts with
// its syslog priority ("<3>" error ... "<7>" debug, sd-daemon(3)) instead
// of the tag and level, which the journal keeps itself.
void log_set_journal(bool on);

void log_msg(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

} // namespace ina::agg

#define INA_LOG(level, ...)                                                                  \
    do {                                                                                     \
        if (::ina::agg::log_enabled(level)) {                                               \
            ::ina::agg::log_msg(level, __VA_ARGS__);                                        \
        }                                                                                    \
    } while (0)
#define INA_ERROR(...) INA_LOG(::ina::agg::LogLevel::kError, __VA_ARGS__)
#define INA_WARN(...) INA_LOG(::ina::agg::LogLevel::kWarn, __VA_ARGS__)
#define INA_INFO(...) INA_LOG(::ina::agg::LogLevel::kInfo, __VA_ARGS__)
#define INA_DEBUG(...) INA_LOG(::ina::agg::LogLevel::kDebug, __VA_ARGS__)

#endif

#include "log.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace ina {

namespace {
// Single-threaded daemon: a plain global is enough.
LogLevel g_level = LogLevel::kWarn;
const char *const kTags[] = {"error", "warn", "info", "debug"};
} // namespace

void log_set_level(LogLevel level) { g_level = level; }
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
    int n = std::snprintf(line, sizeof(line), "ina-switchd[%s]: ",
                          kTags[static_cast<int>(level)]);
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(line + n, sizeof(line) - static_cast<size_t>(n) - 1, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "%s\n", line);
}

} // namespace ina

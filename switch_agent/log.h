// Leveled logging to stderr for ina-switchd: one line per event, tagged with
// its level, so that operators can grep and tests can parse the exit counters.
#ifndef INA_AGENT_LOG_H
#define INA_AGENT_LOG_H

namespace ina {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// Lines above this level are discarded (default: warn).
void log_set_level(LogLevel level);
LogLevel log_level();
// Parses "error|warn|info|debug"; false if the name is unknown.
bool log_parse_level(const char *name, LogLevel *out);
bool log_enabled(LogLevel level);

void log_msg(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

} // namespace ina

#define INA_LOG(level, ...)                                                                  \
    do {                                                                                     \
        if (::ina::log_enabled(level)) {                                                     \
            ::ina::log_msg(level, __VA_ARGS__);                                              \
        }                                                                                    \
    } while (0)
#define INA_ERROR(...) INA_LOG(::ina::LogLevel::kError, __VA_ARGS__)
#define INA_WARN(...) INA_LOG(::ina::LogLevel::kWarn, __VA_ARGS__)
#define INA_INFO(...) INA_LOG(::ina::LogLevel::kInfo, __VA_ARGS__)
#define INA_DEBUG(...) INA_LOG(::ina::LogLevel::kDebug, __VA_ARGS__)

#endif

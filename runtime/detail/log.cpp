#include "runtime/detail/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

namespace kjit::detail {

LogLevel log_level() noexcept {
    static const LogLevel level = [] {
        const char* v = std::getenv("KJIT_LOG");
        if (v == nullptr) return LogLevel::warn;
        if (std::strcmp(v, "debug") == 0) return LogLevel::debug;
        if (std::strcmp(v, "info") == 0) return LogLevel::info;
        if (std::strcmp(v, "off") == 0 || std::strcmp(v, "none") == 0) return LogLevel::off;
        return LogLevel::warn;
    }();
    return level;
}

void log(LogLevel level, std::string_view message) noexcept {
    if (level < log_level()) return;
    static const char* const kNames[] = {"debug", "info", "warning"};
    // One fprintf per message so that lines from several threads do not interleave.
    std::fprintf(stderr, "kjit: %s: %.*s\n", kNames[static_cast<int>(level)], static_cast<int>(message.size()),
                 message.data());
}

void warn_once(const std::string& key, std::string_view message) noexcept {
    static std::mutex mutex;
    // Never destroyed: an application's thread may still warn while the process exits.
    static std::set<std::string>& seen = *new std::set<std::string>;
    try {
        std::lock_guard lock(mutex);
        if (!seen.insert(key).second) return;
    } catch (...) {
        return;
    }
    log(LogLevel::warn, message);
}

}  // namespace kjit::detail

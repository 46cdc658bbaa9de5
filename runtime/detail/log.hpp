// kjit's diagnostics on stderr, filtered by KJIT_LOG=debug|info|warn (default warn).
#pragma once

#include <string>
#include <string_view>

namespace kjit::detail {

enum class LogLevel { debug = 0, info = 1, warn = 2, off = 3 };

LogLevel log_level() noexcept;
void log(LogLevel level, std::string_view message) noexcept;
// Logs a warning the first time `key` is seen in this process; later calls with it are silent.
void warn_once(const std::string& key, std::string_view message) noexcept;

}  // namespace kjit::detail

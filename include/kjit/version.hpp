// kjit's own version.
#pragma once

#define KJIT_VERSION_MAJOR 0
#define KJIT_VERSION_MINOR 1
#define KJIT_VERSION_PATCH 0

namespace kjit {
inline constexpr const char* version_string = "0.1.0";
}  // namespace kjit

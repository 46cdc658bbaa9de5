// kjit's version: the headers' (KJIT_VERSION, fixed when an application is compiled) and the
// library's (kjit::version(), of the libkjit.so loaded at run time). They agree when the
// application runs with the kjit it was built against; within one major version a newer library
// may be loaded (docs/ABI.md). CMakeLists.txt reads the project's version from this file.
#pragma once

#include "kjit/export.hpp"

#define KJIT_VERSION_MAJOR 0
#define KJIT_VERSION_MINOR 1
#define KJIT_VERSION_PATCH 0
// One number, major * 10000 + minor * 100 + patch (0.1.0 is 100), as fmt's FMT_VERSION.
#define KJIT_VERSION (KJIT_VERSION_MAJOR * 10000 + KJIT_VERSION_MINOR * 100 + KJIT_VERSION_PATCH)
#define KJIT_VERSION_STRING "0.1.0"

namespace kjit {

// The headers' version, as a string ("0.1.0").
inline constexpr const char* version_string = KJIT_VERSION_STRING;

// The loaded library's version: "major.minor.patch", and KJIT_VERSION's number of it.
KJIT_API const char* version() noexcept;
KJIT_API int version_number() noexcept;

}  // namespace kjit

// Generated modules end with their entry points, one `extern "C" __global__` line each. A call
// compiles the module of the entry points it launches only (the rest of the source unchanged):
// NVRTC's time grows with the entry points (docs/PERFORMANCE.md).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kjit::jit::codegen {

// Each entry point's name and its definition (one line, newline included), in the order printed.
using EntryLines = std::vector<std::pair<std::string, std::string>>;

// `source`, which ends with `lines`, with only the entry points named in `keep`. Throws Error when
// the lines are not the end of the source (a generator that changed its layout), never guessing.
std::string keep_entry_points(const std::string& source, const EntryLines& lines, const std::vector<std::string>& keep);

}  // namespace kjit::jit::codegen

// What identifies the loaded NVRTC (for cache keys) and where its toolkit's headers are.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "jit/compile/loaded_library.hpp"
#include "runtime/detail/nvrtc.hpp"

namespace kjit::jit::compile {

// "nvrtc-13.0+bid:<hex>" or "nvrtc-13.0+xxh3:<hex>" for the library `api` was loaded from
// (see kjit::jit::nvrtc_version_key); memoised per library file.
std::string nvrtc_version_key(const kjit::detail::NvrtcApi& api);

// XXH3-64 of a file's bytes (streamed); nullopt when it cannot be read.
std::optional<std::uint64_t> file_xxh3(const std::string& path);

// The CUDA toolkit include folder holding cuda_fp16.h: next to the loaded libnvrtc first
// (<root>/lib64/libnvrtc.so -> <root>/include), then $CUDA_PATH, $CUDA_HOME, the toolkit kjit was
// built with, /usr/local/cuda, /usr/include. Empty when none has it. Memoised.
const std::string& toolkit_include_dir(const kjit::detail::NvrtcApi& api);

}  // namespace kjit::jit::compile

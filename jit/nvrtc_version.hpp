// What identifies the loaded NVRTC (for cache keys) and where its toolkit's headers are.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/detail/nvrtc.hpp"

namespace kjit::jit::detail {

// "nvrtc-13.0+bid:<hex>" or "nvrtc-13.0+xxh3:<hex>" for the library `api` was loaded from
// (see kjit::jit::nvrtc_version_key); memoised per library file.
std::string nvrtc_version_key(const kjit::detail::NvrtcApi& api);

// The GNU build ID (hex) of the loaded shared object holding `address`, read from its mapped
// PT_NOTE segments (no file I/O); empty when it has none.
std::string elf_build_id(const void* address);

// The GNU build ID of the object kjit's code is linked into (libkjit), from its own ELF header,
// without the walk over every loaded object that elf_build_id makes (about 6 us of a fresh
// process's first call, which names its plan note with it); empty when it has none.
std::string own_build_id();

// Reads one byte of every page of the code and read-only data of the object kjit is linked into,
// so that the kernel maps them into the process (a page fault each, or one per fault-around
// window) before a call runs that code; returns the pages read. jit/warm_start.cpp does this on
// a thread of its own while the driver creates a context: a fresh process's first call then
// takes no page faults for libkjit's code.
std::size_t map_in_own_image();

// XXH3-64 of a file's bytes (streamed); nullopt when it cannot be read.
std::optional<std::uint64_t> file_xxh3(const std::string& path);

// The file the shared object holding `address` was loaded from (dladdr), empty if unknown.
std::string loaded_file(const void* address);

// The CUDA toolkit include folder holding cuda_fp16.h: next to the loaded libnvrtc first
// (<root>/lib64/libnvrtc.so -> <root>/include), then $CUDA_PATH, $CUDA_HOME, the toolkit kjit was
// built with, /usr/local/cuda, /usr/include. Empty when none has it. Memoised.
const std::string& toolkit_include_dir(const kjit::detail::NvrtcApi& api);

}  // namespace kjit::jit::detail

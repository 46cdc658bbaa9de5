// Loaded ELF objects, read where the dynamic loader mapped them (no file I/O): a loaded library's
// file and GNU build ID (NVRTC's names its cache keys).
#pragma once

#include <cstddef>
#include <string>

namespace kjit::jit::compile {

// The GNU build ID (hex) of the loaded shared object holding `address`, read from its mapped
// PT_NOTE segments (no file I/O); empty when it has none.
std::string elf_build_id(const void* address);

// The file the shared object holding `address` was loaded from (dladdr), empty if unknown.
std::string loaded_file(const void* address);

}  // namespace kjit::jit::compile

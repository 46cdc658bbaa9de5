// Loaded ELF objects, read where the dynamic loader mapped them (no file I/O): a loaded library's
// file and GNU build ID (NVRTC's names its cache keys), and the pages of the object kjit is linked
// into, read from its own ELF header (which the warm start maps in, jit/warm_start.hpp).
#pragma once

#include <cstddef>
#include <string>

namespace kjit::jit::detail {

// The GNU build ID (hex) of the loaded shared object holding `address`, read from its mapped
// PT_NOTE segments (no file I/O); empty when it has none.
std::string elf_build_id(const void* address);

// Reads one byte of every page of the code and read-only data of the object kjit is linked into,
// so that the kernel maps them into the process (a page fault each, or one per fault-around
// window) before a call runs that code; returns the pages read. jit/warm_start.cpp does this on
// a thread of its own while the driver creates a context: a fresh process's first call then
// takes no page faults for libkjit's code.
std::size_t map_in_own_image();

// The file the shared object holding `address` was loaded from (dladdr), empty if unknown.
std::string loaded_file(const void* address);

}  // namespace kjit::jit::detail

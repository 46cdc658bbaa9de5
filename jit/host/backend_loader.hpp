// Loads the host back end (libkjit_host.so, which links LLVM) the first time it is needed, and
// keeps it for the life of the process. Where it looks, in order: $KJIT_HOST_BACKEND (a path),
// the folder libkjit itself was loaded from, then the loader's search path (LD_LIBRARY_PATH,
// RUNPATH...). A machine without LLVM runs libkjit and every GPU kernel without ever opening it.
#pragma once

#include "jit/host/host_backend.hpp"

namespace kjit::jit::host {

// The back end; throws kjit::Error saying what is missing (the library, or LLVM behind it, or a
// version mismatch) and where it looked. Loaded once; a failure is remembered and rethrown.
HostBackend& host_backend();

// Whether the back end can be loaded here (loads it if it can), without throwing.
bool host_backend_available(std::string* why = nullptr);

}  // namespace kjit::jit::host

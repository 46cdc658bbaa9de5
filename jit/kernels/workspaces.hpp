// Device scratch memory of the calling thread, per device, stream and use, kept between calls and
// grown when a call needs more: the workspaces of reductions (templates/reduction.cuh) and scans
// (templates/scan.cuh). Launches on one stream run in order, so they may share one; another stream
// or thread gets its own. Growing it under stream capture is refused (the graph would keep memory
// the next call frees): the call's message names what needed it.
#pragma once

#include <cstddef>

#include "kjit/stream.hpp"

namespace kjit::jit::kernels {

enum class Scratch {
    reduce_full,   // starts with 16 zero bytes (its counter), which every launch leaves zero again
    reduce_split,
    scan,          // each launch zeroes what it needs first
};

// At least `bytes` bytes, 256-byte aligned; `what` names the call for the capture error.
void* scratch_memory(int device, const Stream& stream, Scratch use, std::size_t bytes, const char* what = "this reduction");

}  // namespace kjit::jit::kernels

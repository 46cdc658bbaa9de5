// The loops around an elementwise kernel's body: one function per (kernel, binding) and layout
// kind, taking a chunk [begin, end) of the iteration space (jit/host/host_backend.hpp, ChunkFn).
// The contiguous function walks every array operand with stride 1 (the loop vectorises); the
// strided one walks rows of the innermost dimension with each operand's strides, finding the
// start of each row from the element index. Part of libkjit_host.
#pragma once

#include <string>

#include <llvm/IR/Module.h>

#include "jit/host/host_backend.hpp"

namespace kjit::jit::host::llvm {

::llvm::Function* lower_elementwise(::llvm::Module& m, const ElementwiseRequest& request, bool contiguous, const std::string& symbol);

}  // namespace kjit::jit::host::llvm

// A reduction's pieces as host functions (jit/host/host_backend.hpp: FoldFn, CombineFn, IdentityFn,
// PostFn): map and reduce inside the fold loop, where they are inlined and vectorise; combine,
// identity and post called a few times per chunk or output by the loops in libkjit
// (jit/host/host_reduction.cpp). Part of libkjit_host.
#pragma once

#include <string>

#include <llvm/IR/Module.h>

#include "jit/host/host_backend.hpp"

namespace kjit::jit::host::llvm {

// Adds `prefix`_fold, _combine, _post and (with an identity) _identity to `m`.
void lower_reduction(::llvm::Module& m, const ReductionRequest& request, const std::string& prefix);

}  // namespace kjit::jit::host::llvm

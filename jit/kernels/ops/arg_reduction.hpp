// argmin and argmax as ReductionKernels whose module kjit writes itself (templates/arg_reduction.cuh):
// their partial results are (value, index) pairs, which the expression language has no type for.
#pragma once

#include "kjit/reduction_kernel.hpp"

namespace kjit::jit::kernels {

// The kernel "T x" -> "int64 y" of argmax (max = true) or argmin, for every real dtype T. Built
// once per process; its manifest entries have "kind": "builtin" and its name ("kjit_argmax").
const ReductionKernel& arg_reduction_kernel(bool max);

// The built-in reduction kernel of that name ("kjit_argmin", "kjit_argmax"), for precompiling
// manifest entries of "kind": "builtin"; throws CacheError for another name.
const ReductionKernel& builtin_kernel_named(const std::string& name);

}  // namespace kjit::jit::kernels

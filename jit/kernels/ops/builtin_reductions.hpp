// The ReductionKernels behind kjit::sum, prod, min, max and mean (jit/kernels/ops/reductions.cpp), for tests
// and for precompiling them: `op` is one of those names.
#pragma once

#include <string_view>

#include "kjit/reduction_kernel.hpp"

namespace kjit::jit::kernels {

// Throws kjit::Error for an unknown op.
const ReductionKernel& builtin_reduction(std::string_view op, DType t);

}  // namespace kjit::jit::kernels

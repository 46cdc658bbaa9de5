// The ReductionKernels behind kjit::sum, prod, min, max and mean (jit/kernels/ops/reductions.cpp), for tests
// and for precompiling them: `op` is one of those names.
#pragma once

#include <string>
#include <string_view>

#include "kjit/reduction_kernel.hpp"

namespace kjit::jit::kernels {

// Throws NumPy's error when a reduction without a value for nothing (min, max, argmin, argmax)
// of an input of `shape` would reduce zero elements into a non-empty output.
void refuse_empty_reduction(const char* what, const Shape& shape, const ReduceOptions& options);

// Throws kjit::Error for an unknown op.
const ReductionKernel& builtin_reduction(std::string_view op, DType t);
// The same reduction over `map`, an expression of dtype `t` over the parameters `in_params`
// (a fused array expression at the root of a reduction, include/kjit/expr.hpp).
ReductionKernel builtin_reduction_of(std::string_view op, DType t, const std::string& in_params, const std::string& map,
                                     const std::string& name);

// The kernel behind kjit::var, std, any, all, count_nonzero, nansum, nanmin, nanmax or nanmean
// (`op`, jit/kernels/ops/numpy_reductions.cpp) for input dtype `t`; var and std for `ddof`.
// Throws kjit::Error for an unknown op.
const ReductionKernel& numpy_reduction(std::string_view op, DType t, double ddof = 0);

}  // namespace kjit::jit::kernels

// argmin and argmax on host arrays. On the GPU they are custom ReductionKernels whose module kjit
// writes (jit/kernels/ops/arg_reduction.cpp, templates/arg_reduction.cuh); on the host their pieces are plain
// C++ here, run by the same loops as every host reduction (jit/host/host_reduction.cpp). No LLVM.
#pragma once

#include "jit/host/host_backend.hpp"

namespace kjit::jit::host {

// The pieces of argmax (`max`) or argmin of T x -> int64 y, whose argument struct is {const T* x;
// long long* y;}. Partial results are (value, index) pairs of 16 bytes: T at byte 0, the index at
// byte 8. NumPy's answer: the first extreme element, or the first NaN when there is one; the pair
// order is total, so the result does not depend on the order of reduction. Throws TypeError for
// complex T (as on the GPU).
ReductionCode arg_reduction_code(bool max, DType t);

inline constexpr std::size_t kArgValueSize = 16;

}  // namespace kjit::jit::host

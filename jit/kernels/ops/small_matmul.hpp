// The small-product kernel (templates/small_matmul.cuh), which kjit::matmul launches for the
// products small_matmul_plan.hpp calls small. Its module is exposed so that tests compile it on any
// machine.
#pragma once

#include "jit/kernels/ops/small_matmul_plan.hpp"
#include "kjit/array.hpp"
#include "kjit/dtype.hpp"
#include "kjit/raw_kernel.hpp"
#include "kjit/stream.hpp"

namespace kjit::jit::kernels::ops {

// The module holding `kjit_small_matmul` for `t` (float16, bfloat16, float32, float64, complex64,
// complex128); TypeError for any other dtype.
RawModule small_matmul_module(DType t);

// Launches the product on `stream`. Returns false, having launched nothing, when the kernel for
// a's dtype cannot be had (not in any kernel cache and no NVRTC): the caller then uses cuBLAS.
bool launch_small_matmul(const Array& a, const Array& b, const Array& c, const SmallMatmul& shape, const Stream& stream);

}  // namespace kjit::jit::kernels::ops

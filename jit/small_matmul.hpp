// The small-product kernel's module for one dtype (templates/small_matmul.cuh; used by kjit::matmul
// through runtime/detail/small_matmul.hpp). Exposed so that tests compile it on any machine.
#pragma once

#include "kjit/dtype.hpp"
#include "kjit/raw_kernel.hpp"

namespace kjit::jit {

// The module holding `kjit_small_matmul` for `t` (float16, bfloat16, float32, float64, complex64,
// complex128); TypeError for any other dtype.
RawModule small_matmul_module(DType t);

}  // namespace kjit::jit

// kjit::bincount's CUDA module (jit/kernels/ops/bincount.cpp): one kernel per integer dtype,
// compiled on its first GPU call; tests compile it without a GPU.
#pragma once

#include "kjit/raw_kernel.hpp"

namespace kjit::jit::kernels {

const RawModule& bincount_module();

}  // namespace kjit::jit::kernels

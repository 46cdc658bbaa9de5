// kjit::argsort's CUDA module (jit/kernels/ops/sort.cpp): a stable least-significant-digit radix
// sort of 64-bit ordered keys carrying their indices; tests compile it without a GPU.
#pragma once

#include "kjit/raw_kernel.hpp"

namespace kjit::jit::kernels {

const RawModule& sort_module();

}  // namespace kjit::jit::kernels

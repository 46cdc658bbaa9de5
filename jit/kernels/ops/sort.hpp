// kjit::argsort's CUDA module (jit/kernels/ops/sort.cpp): a stable least-significant-digit radix
// sort of 64-bit ordered keys carrying their indices; tests compile it without a GPU.
#pragma once

#include "kjit/raw_kernel.hpp"

namespace kjit::jit::kernels {

const RawModule& sort_module();

// CUDA defining u64 and ordered(v) for every key type: the key's bits as an unsigned 64-bit number
// that orders as the keys do (shared with jit/kernels/ops/dense_groups.cpp).
const char* ordered_bits_cuda();

}  // namespace kjit::jit::kernels

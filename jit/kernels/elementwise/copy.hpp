// kjit's copy kernel: C-ordered copies of device arrays of any layout, possibly converted to another
// dtype, made by an elementwise kernel on their device. Array::to() (defined in copy.cpp), matmul,
// and calls whose inputs overlap an output use it.
#pragma once

#include "kjit/array.hpp"
#include "kjit/dtype.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/stream.hpp"

namespace kjit::jit::kernels::elementwise {

// Copies an input that overlaps an output (see the note in kjit/elementwise_kernel.hpp).
const ElementwiseKernel& copy_kernel();

// A C-ordered copy of device array `source`, converted to `dtype`, in stream order.
Array pack(const Array& source, DType dtype, const Stream& stream);

// Writes `source` into `destination` (same shape, any layouts, dtype converted), in stream order.
void copy_into(const Array& source, const Array& destination, const Stream& stream);

}  // namespace kjit::jit::kernels::elementwise

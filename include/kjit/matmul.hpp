// Matrix products through cuBLAS, with NumPy's matmul semantics: 1-D operands promoted and the
// added axis removed, batch dimensions broadcast, mixed dtypes promoted by NumPy's rules.
//
//   kjit::Array c = kjit::matmul(a, b);            // a (..., m, k) @ b (..., k, n)
//
// Transposed and other views with a unit stride along one matrix axis go to cuBLAS as transpose
// flags and leading dimensions, without copies; other layouts (stepped slices, batches no single
// stride walks, operands of another dtype than the result) are copied first by a kernel.
// float32 is computed exactly (no TF32) unless MatmulOptions::allow_tf32 or KJIT_ALLOW_TF32=1;
// float16 and bfloat16 accumulate in float32. One strided batched GEMM per call, on the call's
// stream, with a cuBLAS handle per device and thread.
//
// Small products (m·n·k·batch ≤ 64³ by default, at most one batch dimension) run instead in one
// launch of a kernel of kjit's own, which reads any strides and accumulates in the same types, k
// in increasing order: cuBLAS's host cost alone exceeds the whole product there.
// KJIT_SMALL_MATMUL_MAX=N changes the limit (0: always cuBLAS).
#pragma once

#include "kjit/export.hpp"

#include <optional>

#include "kjit/array.hpp"
#include "kjit/stream.hpp"

namespace kjit {

struct KJIT_API MatmulOptions {
    std::optional<Stream> stream;     // none: the thread's current stream
    std::optional<bool> allow_tf32;   // none: KJIT_ALLOW_TF32=1 allows it, else exact float32
};

// a @ b, written to `out` when given (its shape and dtype must be the result's; any layout). Throws
// ShapeError naming both shapes, TypeError for dtypes cuBLAS does not multiply, kjit::Error for
// host arrays or arrays on different devices, NoDeviceError without cuBLAS.
KJIT_API Array matmul(const Array& a, const Array& b, const Array& out = Array(), const MatmulOptions& options = {});

}  // namespace kjit

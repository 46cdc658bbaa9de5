// How a matrix product with NumPy's matmul semantics becomes one strided batched cuBLAS GEMM
// (column-major): shapes and batch broadcasting, the result dtype, transpose flags and leading
// dimensions read off the operands' strides, and which operands have to be copied first. Pure
// arithmetic on shapes and strides, so that every case is tested without a GPU.
//
// cuBLAS sees column-major matrices. A row-major matrix X (strides (ld, 1)) is, to cuBLAS, the
// transpose of a column-major one with leading dimension ld; a column-major one (strides (1, ld))
// is itself. C = A·B is computed directly when C is column-major, and as Cᵀ = Bᵀ·Aᵀ (the operands
// swapped) when C is row-major, so that no layout of A and B needs a copy as long as each has a
// unit stride along one of its two axes and a leading dimension cuBLAS accepts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kjit/array.hpp"
#include "kjit/dtype.hpp"

namespace kjit::jit::kernels::ops {

// An operand as matmul sees it: dtype, shape and element strides.
struct MatmulOperand {
    DType dtype;
    Shape shape;
    Strides strides;
};

// NumPy's matmul shapes: operands of one dimension are promoted (a: (k) -> (1, k); b: (k) -> (k,
// 1)) and the added axis removed from the result; batch dimensions broadcast. Throws ShapeError
// naming both shapes (scalars, inner dimensions that differ, batches that do not broadcast).
Shape matmul_result_shape(const Shape& a, const Shape& b);

// The dtype of the product: NumPy's result_type of the two, which must be one of float16,
// bfloat16, float32, float64, complex64, complex128 (TypeError otherwise, naming both dtypes).
DType matmul_result_dtype(DType a, DType b);

// One cuBLAS operand: op(S), S column-major with leading dimension `ld`, the i-th of the batch
// at element offset i * batch_stride.
struct GemmOperand {
    bool transpose = false;
    std::int64_t ld = 1;
    std::int64_t batch_stride = 0;
};

struct GemmPlan {
    bool swapped = false;       // computed as Cᵀ = Bᵀ·Aᵀ: `first` is B, `second` is A
    std::int64_t m = 0, n = 0, k = 0, batch = 1;  // cuBLAS's m, n, k (after any swap)
    GemmOperand first, second, c;
};

// The views matmul works on: each operand and the output broadcast to (batch..., rows, cols) with
// 1-D operands promoted. `out_shape` is the result shape with the promoted axes kept.
struct MatmulViews {
    MatmulOperand a, b;
    Shape out_shape;
};
MatmulViews matmul_views(const MatmulOperand& a, const MatmulOperand& b);

// Why an operand cannot be given to cuBLAS as it is, or "" when it can: no unit stride along
// either matrix axis, a leading dimension cuBLAS refuses, or batch dimensions that no single
// batch stride walks.
std::string gemm_layout_problem(const MatmulOperand& v);

// The GEMM for views that gemm_layout_problem() accepts; `c` is the output view (same batch and
// matrix shape as the product). Throws Error if a view is not acceptable.
GemmPlan plan_gemm(const MatmulOperand& a, const MatmulOperand& b, const MatmulOperand& c);

}  // namespace kjit::jit::kernels::ops

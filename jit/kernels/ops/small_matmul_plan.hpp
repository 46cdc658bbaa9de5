// Small matrix products in a kernel of kjit's own (templates/small_matmul.cuh) instead of cuBLAS.
//
// Why: for small products cuBLAS's own host time per call is several kjit launches
// (docs/PERFORMANCE.md). Below a size limit the work is so small that the launch is the product's
// cost, so kjit::matmul sends such products to one launch of its own kernel; above it, to cuBLAS.
//
// This header decides which products are small (matmul.cpp asks it); small_matmul.hpp launches them.
#pragma once

#include <cstdint>

#include "kjit/dtype.hpp"

namespace kjit {
class Array;
class Stream;
}  // namespace kjit

namespace kjit::jit::kernels::ops {

// A product C[z] = A[z]·B[z] for z < batch, each operand given by the address of its element
// (0, 0, 0) (the Arrays' data()) and element strides (batch, row, column); zero strides broadcast.
struct SmallMatmul {
    std::int64_t m = 0, n = 0, k = 0, batch = 1;
    std::int64_t a_strides[3] = {0, 0, 0};
    std::int64_t b_strides[3] = {0, 0, 0};
    std::int64_t c_strides[3] = {0, 0, 0};
};

// c = a @ b with NumPy's matmul semantics as a SmallMatmul, without allocating (the warm path of a
// small product): a and b of one to three dimensions (1-D ones promoted; at most one batch
// dimension, broadcast), c of exactly the result's shape, m, n, k > 0. False for anything else:
// the caller's general path then decides (and reports any error). Dtypes and devices are not
// looked at.
bool describe_small_matmul(const Array& a, const Array& b, const Array& c, SmallMatmul& s) noexcept;

// The largest m·n·k·batch sent to the small kernel: KJIT_SMALL_MATMUL_MAX when set (read once; 0
// turns the small kernel off), else 64·64·64 (the size measured; docs/perf-log.md).
std::int64_t small_matmul_limit() noexcept;
// Replaces the limit (tests run every product through both paths); returns the one before.
std::int64_t set_small_matmul_limit(std::int64_t limit) noexcept;

// Whether a product of this shape goes to the small kernel: m·n·k·batch within the limit, k > 0,
// and a grid the kernel can be launched with (batch and tile counts within CUDA's limits).
bool use_small_matmul(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) noexcept;

// Products cuBLAS is known to crash on, which the small kernel makes whatever their size (when
// its grid can hold them): on the H200 machine (cuBLAS 13.0, 2026-12-01),
// cublasGemmStridedBatchedEx_64 on complex128 with m = 1 (1x2 @ 2x2) or k = 1 (2x1 @ 1x2) ended
// the process with SIGSEGV inside cuBLAS, while n = 1 (2x2 @ 2x1), float64 and complex64 of the
// same shapes did not. n = 1 goes to the kernel too, as a precaution.
bool cublas_crashes_on(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) noexcept;

}  // namespace kjit::jit::kernels::ops

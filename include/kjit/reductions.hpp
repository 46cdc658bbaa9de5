// NumPy's reductions on device arrays, built on ReductionKernel (kjit/reduction_kernel.hpp): one
// kernel per function and dtype, compiled on first use (or found in the kernel cache).
//
//   kjit::Array total = kjit::sum(x);                                     // every axis
//   kjit::Array per_row = kjit::max(x, {.axis = std::vector<int>{1}});
//
// Result dtypes are NumPy's: sum and prod of bool and integers give int64 (uint64 for unsigned
// ones), of floats and complex their own dtype; float16 and bfloat16 accumulate in float32. min
// and max keep the dtype and propagate NaN (any NaN in a reduction gives NaN), compare complex
// numbers by real part then imaginary part, and throw kjit::Error on an empty reduction, as NumPy
// does. mean gives float64 for bool and integers, else the input's dtype (NaN when empty).
// argmin and argmax give int64 indices of the first extreme element (of the first NaN if any),
// along one axis, or into the C-order flattened array when no axis is given (not for complex).
// var and std (ddof as NumPy's: divide by max(n - ddof, 0)) give float64 for bool and integers,
// the real dtype for complex, else the input's; one pass (sums of x - shift and its square in
// float64, shift one of the values, merged as Chan et al. do: no cancellation of sum(x^2); on
// the GPU, float32, float16 and bfloat16 sum each vector of 4 or 8 elements in float32 first).
// any and all give bool, count_nonzero int64 (NaN counts as nonzero). nansum, nanmin, nanmax
// and nanmean skip NaN: nansum and nanmean as sum and mean over the rest, nanmin and nanmax NaN
// only where every value is NaN (and an error when empty); on dtypes without NaN they are sum,
// min, max and mean.
// `out`, when given, must have the result's shape and dtype exactly.
#pragma once

#include "kjit/export.hpp"

#include "kjit/array.hpp"
#include "kjit/reduction_kernel.hpp"

namespace kjit {

KJIT_API Array sum(const Array& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array prod(const Array& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array min(const Array& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array max(const Array& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array mean(const Array& x, const ReduceOptions& options = {}, const Array& out = Array());
// options.axis: none or one axis (ShapeError otherwise).
KJIT_API Array argmin(const Array& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array argmax(const Array& x, const ReduceOptions& options = {}, const Array& out = Array());

KJIT_API Array var(const Array& x, const ReduceOptions& options = {}, double ddof = 0, const Array& out = Array());
KJIT_API Array std(const Array& x, const ReduceOptions& options = {}, double ddof = 0, const Array& out = Array());
KJIT_API Array any(const Array& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array all(const Array& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array count_nonzero(const Array& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array nansum(const Array& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array nanmin(const Array& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array nanmax(const Array& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array nanmean(const Array& x, const ReduceOptions& options = {}, const Array& out = Array());

// The dtype each function gives for input dtype `t` (TypeError where it does not apply).
// Counts of the values 0 .. bins - 1 of an integer or bool array, as int64 of shape (bins,):
// NumPy's bincount with a fixed length. Values outside [0, bins) are not counted, so nothing waits
// for the GPU to learn the largest one. On the GPU each block counts in shared memory (up to 12288
// bins; more count straight into the output) and adds its counts once. `out`, when given, is a
// contiguous int64 array of that shape on x's device.
KJIT_API Array bincount(const Array& x, std::int64_t bins, const CallOptions& options = {}, const Array& out = Array());

KJIT_API DType sum_dtype(DType t);
KJIT_API DType mean_dtype(DType t);
KJIT_API DType var_dtype(DType t);

}  // namespace kjit

// Segmented reductions: a ReductionKernel applied to consecutive pieces of 1-D arrays.
//
//   // offsets: int64 [0, 3, 3, 10]: segments x[0:3], x[3:3] (empty), x[3:10]
//   kjit::Array sums = kjit::segmented_reduce(sum_kernel, {x}, offsets);   // 3 values
//
// Output s reduces elements offsets[s] .. offsets[s + 1] - 1 of every array input (inputs
// broadcast to one 1-D shape; raw inputs and scalars as in any call). In map, `i` is the element's
// index within its segment and `n` the segment's length; in post, `i` is s. Offsets are a 1-D
// device array of any integer dtype (converted to int64 when it is not), non-decreasing, from 0 to
// the inputs' length: kjit clamps each segment to the inputs so that bad offsets never read outside
// them, but does not check the order (that would need a synchronisation). An empty segment gives
// post(identity); the kernel must have an identity. One warp per segment, or one block when the
// segments are long (4096 elements and more on average); the order within a segment is that of a
// row of the same length (templates/reduction.cuh), so results are deterministic.
#pragma once

#include <initializer_list>
#include <optional>
#include <span>

#include "kjit/reduction_kernel.hpp"

namespace kjit {

inline Outputs segmented_reduce(const ReductionKernel& kernel, std::span<const KernelArg> args, const Array& offsets,
                                std::optional<Stream> stream = {}) {
    return kernel.reduce_segments(args, offsets, std::move(stream));
}
inline Outputs segmented_reduce(const ReductionKernel& kernel, std::initializer_list<KernelArg> args, const Array& offsets,
                                std::optional<Stream> stream = {}) {
    return kernel.reduce_segments(std::span<const KernelArg>(args.begin(), args.size()), offsets, std::move(stream));
}

}  // namespace kjit

// The iteration space of a reduction call (templates/reduction.cuh's ReduceLayout): the axes
// normalised as NumPy does, the outputs' shape, the kept dimensions first and the reduced ones
// last (each group in the arrays' own order, extent-1 dimensions dropped, neighbours merged where
// every operand walks them as one), and the strategy that fits. Pure arithmetic on shapes and
// strides, tested without a GPU; the launcher (next) fills ReduceLayout from it.
#pragma once

#include <cstdint>
#include <vector>

#include "kjit/array.hpp"

namespace kjit::detail {

// NumPy's axis argument for an array of `ndim` dimensions: negative axes count from the end;
// empty means every axis. Sorted, without duplicates. Throws ShapeError naming a bad axis.
std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim);

// The outputs' shape: `shape` without the reduced axes, or with them as extent 1 (keepdims).
Shape reduction_output_shape(const Shape& shape, const std::vector<int>& axes, bool keepdims);

// segments_*: only for segmented reductions, which the launcher plans itself (1-D inputs).
enum class ReduceStrategy { full, rows_warp, rows_block, columns, columns_split, segments_warp, segments_block, small };

// At most this many elements, read contiguously by every input, reduced to one value: `small`, one
// block of kSmallReduceThreads threads. Such a call lasts as long as a launch, and its program
// costs NVRTC less than half of `full`'s (no vectors, no workspace, no index arithmetic over
// dimensions): the difference a new reduction's first call on small arrays waits for.
inline constexpr std::int64_t kSmallReduceElements = 4096;
inline constexpr int kSmallReduceThreads = 512;

struct ReducePlan {
    int kept_ndim = 0, reduced_ndim = 0;
    std::int64_t kept_size = 1, reduced_size = 1;
    std::vector<std::int64_t> shape;                     // kept extents, then reduced extents
    std::vector<std::vector<std::int64_t>> in_strides;   // per input, over every dimension
    std::vector<std::vector<std::int64_t>> out_strides;  // per output, over the kept dimensions
    ReduceStrategy strategy = ReduceStrategy::rows_warp;
};

// `shape`: the inputs' broadcast shape; `inputs`: each array input's strides over it (0 along
// broadcast axes); `outputs`: each output's strides over the kept axes, in order (keepdims axes
// left out); `axes` normalised. `sm_count` decides when few outputs split their rows over blocks.
ReducePlan plan_reduction(const Shape& shape, const std::vector<Strides>& inputs, const std::vector<Strides>& outputs,
                          const std::vector<int>& axes, int sm_count);

// The largest offset (in elements, either sign) `strides` reach over `shape` (a prefix of it when
// there are fewer strides): what decides whether a launch may index in 32 bits.
inline std::int64_t element_reach(const Shape& shape, const Strides& strides) {
    std::int64_t pos = 0, neg = 0;
    for (std::size_t d = 0; d < strides.size(); ++d) {
        const std::int64_t span = (shape[d] - 1) * strides[d];
        (span > 0 ? pos : neg) += span;
    }
    return pos > -neg ? pos : -neg;
}

}  // namespace kjit::detail

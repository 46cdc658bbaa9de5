// Groups of integer keys in a small range, found without sorting (kjit::group_keys): each key's
// group is its rank among the distinct keys, read from a table over the range, so that
// reduce_by_key reduces every element into its group in one pass (templates/reduction.cuh's bins)
// instead of gathering the inputs in sorted order.
#pragma once

#include <cstdint>
#include <optional>

#include "kjit/array.hpp"
#include "kjit/raw_kernel.hpp"
#include "kjit/segmented.hpp"

namespace kjit::jit::kernels {

// The most distinct key values a range may span to be grouped this way: the table of counts and
// group numbers (8 bytes a value) stays small, and one block numbers it.
inline constexpr std::int64_t kDenseKeyRange = 1 << 16;

// The groups of `keys` (1-D, on a GPU, bool or an integer dtype) when the keys span at most
// kDenseKeyRange values: keys, offsets and count as group_keys gives them, `group_of` (int32, the
// group of each element), `order` left empty. Nothing when the keys span more (or there are none):
// the caller sorts. Synchronises once to learn the range and, when it is small, once more for the
// number of groups.
std::optional<KeyGroups> dense_key_groups(const Array& keys, const Stream& stream);

// The module's CUDA (tests compile it without a GPU).
const RawModule& dense_groups_module();

}  // namespace kjit::jit::kernels

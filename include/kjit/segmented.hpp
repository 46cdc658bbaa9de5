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

#include "kjit/export.hpp"

#include <initializer_list>
#include <optional>
#include <span>

#include "kjit/reduction_kernel.hpp"

namespace kjit {

inline Outputs segmented_reduce(const ReductionKernel& kernel, std::span<const KernelArg> args, const Array& offsets,
                                const CallOptions& options = {}) {
    return kernel.reduce_segments(args, offsets, options);
}
inline Outputs segmented_reduce(const ReductionKernel& kernel, std::initializer_list<KernelArg> args, const Array& offsets,
                                const CallOptions& options = {}) {
    return kernel.reduce_segments(std::span<const KernelArg>(args.begin(), args.size()), offsets, options);
}

// The groups of a sorted key column: each run of equal neighbouring keys is one group. `offsets`
// (int64, count + 1 elements) is what segmented_reduce takes; `keys` holds each group's key.
// Keys: a 1-D device array of bool, an integer dtype, float32 or float64 (floats compare with ==:
// every NaN is a group of its own). Synchronises once, to learn the number of groups (the form
// below does not).
struct KJIT_API KeyGroups {
    Array keys;
    Array offsets;
    std::int64_t count = 0;
    // group_keys only: the int64 order that sorts the keys (kjit::argsort), which reduce_by_key
    // applies to the inputs. Invalid for sorted keys, and when group_of is valid.
    Array order;
    // group_keys only, for integer or bool keys spanning at most 65536 values on a GPU: the group
    // of each element (int32, 0 .. count - 1), found without sorting; reduce_by_key then reduces
    // each element straight into its group. kjit::argsort(group_of) gives the order.
    Array group_of;
};
KJIT_API KeyGroups group_sorted_keys(const Array& keys, std::optional<Stream> stream = {});

// The same without waiting for the GPU, so that it can be captured into a Graph: the outputs are
// given at their largest, for n keys: `offsets` int64 with n + 1 elements, `group_keys` of the
// keys' dtype with n, `count` int64 with one element (the number of groups, left on the device),
// all C-contiguous where the keys are. The offsets past the last group are n, so the groups past
// `count` are empty: a segmented reduction over all n + 1 offsets gives the first `count` results
// and its identity after them. group_keys past `count` are left as they were.
KJIT_API void group_sorted_keys(const Array& keys, const Array& offsets, const Array& group_keys, const Array& count,
                                std::optional<Stream> stream = {});

// The groups of a key column in any order: equal keys are one group wherever they stand (NaN
// keys each a group of their own), groups in increasing key order. Integer or bool keys on a GPU
// whose values span at most 65536 numbers (days, categories, bins) are numbered through a table
// over that span, and `group_of` names each element's group. Other keys are sorted stably
// (kjit::argsort, kjit/sort.hpp), and `order` says how. Either way reduce_by_key(kernel, groups,
// ...) reduces each group's elements in their order of index. Synchronises twice (the keys'
// range or argsort's bits, then the number of groups).
KJIT_API KeyGroups group_keys(const Array& keys, std::optional<Stream> stream = {});

// A reduction per group of sorted keys: the table of readings with a date column, reduced per day.
//
//   kjit::ReducedByKey daily = kjit::reduce_by_key(max_kernel, days, {readings});
//   // daily.keys: each day once; daily.values[0]: the maximum reading of each day
//
// The inputs are 1-D, as long as `keys`. To reduce the same groups several times (min, max and
// mean), call group_sorted_keys once and segmented_reduce with its offsets.
struct KJIT_API ReducedByKey {
    Array keys;
    Outputs values;
};
KJIT_API ReducedByKey reduce_by_key(const ReductionKernel& kernel, const Array& keys, std::span<const KernelArg> args,
                                    const CallOptions& options = {});
inline ReducedByKey reduce_by_key(const ReductionKernel& kernel, const Array& keys, std::initializer_list<KernelArg> args,
                                  const CallOptions& options = {}) {
    return reduce_by_key(kernel, keys, std::span<const KernelArg>(args.begin(), args.size()), options);
}

// A reduction per group of groups already found (group_sorted_keys or group_keys): the same groups
// reduced several times (min, max and mean of each day's readings, in any order):
//
//   kjit::KeyGroups days = kjit::group_keys(day_column);
//   kjit::Array lows = kjit::reduce_by_key(min_kernel, days, {readings})[0];   // days.keys: each day
//
// With groups.group_of, one pass over the inputs reduces each element into its group when the
// kernel has an identity, its map reads neither `i` nor `n` and every group's running value fits a
// block's shared memory (48 KB over the groups: 6144 of 8 bytes). Otherwise the inputs that run
// along the keys are gathered in the keys' order (groups.order, or kjit::argsort(group_of)) and
// reduced as segments.
KJIT_API Outputs reduce_by_key(const ReductionKernel& kernel, const KeyGroups& groups, std::span<const KernelArg> args,
                               const CallOptions& options = {});
inline Outputs reduce_by_key(const ReductionKernel& kernel, const KeyGroups& groups, std::initializer_list<KernelArg> args,
                             const CallOptions& options = {}) {
    return reduce_by_key(kernel, groups, std::span<const KernelArg>(args.begin(), args.size()), options);
}

}  // namespace kjit

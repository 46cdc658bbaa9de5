// Reductions on host arrays: the loops around the compiled pieces (jit/host/host_backend.hpp's
// FoldFn, CombineFn, IdentityFn, PostFn), in libkjit (no LLVM here). jit/kernels/reduction/call.cpp does
// binding, axes, output allocation and overlap copies as for the GPU and comes here to run.
//
// The order, fixed so that a call gives the same bits with one thread or many (the pool hands
// out whole chunks, and which thread runs a chunk does not change what it computes):
//   - output o's reduced elements, in C order over the reduced dimensions of the merged layout
//     (runtime/detail/reduce_layout), are cut into chunks of kChunkElements;
//   - within a chunk, each row of the innermost reduced dimension (or the chunk's part of it) is
//     dealt to kReduceLanes lanes round robin from lane 0 (element e of the row to lane e % lanes);
//     each lane starts from identity() (or, with none, its first element) and folds in order:
//     lane = reduce(lane, map(element));
//   - the lanes are combined by a tree (for d = lanes/2 .. 1: lane l = reduce(lane l, lane l + d));
//   - the chunks' results are combined left to right (chunk 0, then 1, ...), then post.
// A segment of a segmented reduction is an output whose reduced elements are its range.
#pragma once

#include <cstdint>

#include "jit/frontend/call_binding.hpp"
#include "jit/host/host_backend.hpp"
#include "kjit/reduction_kernel.hpp"
#include "runtime/detail/reduce_layout.hpp"

namespace kjit::jit::host {

// Compiles `kernel`'s pieces for the bound types through the back end (loading it on first use);
// says whether the kernel has an identity and how wide its reduce type is.
ReductionCode compile_reduction_on_host(const ReductionKernel& kernel, const frontend::BoundCall& bound, const detail::ArgsLayout& args,
                                        bool& has_identity, std::size_t& value_size);

struct HostReduction {
    const ReductionCode* code = nullptr;
    std::size_t value_size = 0;  // the reduce type's itemsize
    const unsigned char* args = nullptr;  // the argument struct (array inputs: their first element)
    const detail::ReducePlan* plan = nullptr;
    // Segmented: kept_size + 1 int64 offsets (output o reduces elements offsets[o] .. offsets[o + 1]
    // - 1, clamped to the inputs as the GPU does); plan has one kept and one reduced dimension.
    const std::int64_t* segment_offsets = nullptr;
};

// Runs the reduction over the pool; returns when every output is written.
void run_reduction_on_host(const HostReduction& r);

}  // namespace kjit::jit::host

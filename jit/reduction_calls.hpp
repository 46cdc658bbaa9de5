// What a ReductionKernel keeps between calls, as ElementwiseCalls does for elementwise kernels:
// its parameter signature (parsed once) and, per device and argument dtypes, the plan of a call
// (the loaded module and its entry points, the bound types, the argument struct's layout).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <cuda.h>

#include "jit/elementwise_calls.hpp"
#include "jit/reduction_codegen.hpp"
#include "kjit/reduction_kernel.hpp"

namespace kjit::jit {

// A reduction's module loaded on one device: its entry points (templates/reduction.cuh) and what
// the launcher needs to know to size workspaces and layouts.
struct ReductionModule {
    std::shared_ptr<void> module;  // keeps the CUmodule loaded
    CUfunction full32 = nullptr, full64 = nullptr, rows_warp32 = nullptr, rows_warp64 = nullptr;
    CUfunction rows_block32 = nullptr, rows_block64 = nullptr, columns32 = nullptr, columns64 = nullptr;
    CUfunction columns_split32 = nullptr, columns_split64 = nullptr, columns_finish32 = nullptr, columns_finish64 = nullptr;
    CUfunction segments_warp32 = nullptr, segments_warp64 = nullptr, segments_block32 = nullptr, segments_block64 = nullptr;
    std::size_t reduce_itemsize = 0;
    bool has_identity = false;
    int array_inputs = 0;  // ReduceLayout's inputs = max(1, array_inputs)
    int outputs = 0;
    int vector_width = 1;
};

// The module of `kernel` for this binding and variant (inputs passed as scalars, array inputs
// stored as another dtype), compiled or found in a cache, loaded on device `ordinal`.
ReductionModule load_reduction(const ReductionKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                               int ordinal);

// The same, compiled for `arch` (or found in a cache) without loading: what a precompile builds.
ReductionBinary compile_reduction(const ReductionKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                  const std::string& arch);

// A reduction whose module kjit writes itself instead of generating it from the strings: the
// partial results are a struct, not a dtype (argmin and argmax carry a value and an index).
struct CustomReduction {
    GeneratedReduction generated;
    std::string reduce_type;        // what ReductionBinary::reduce_type says
    std::size_t reduce_itemsize = 0;
    bool has_identity = false;
    std::string spec_json;          // the manifest entry the cache records ("kind": "builtin")
};
using CustomGenerator = std::function<CustomReduction(const TypeBinding&)>;

struct ReductionKernelAccess {
    // A kernel with these parameter lists whose module `generate` writes for each binding.
    static ReductionKernel custom(std::string in_params, std::string out_params, std::string name, CustomGenerator generate);
    // The kernel's generator; empty for kernels made from strings.
    static const CustomGenerator& generator(const ReductionKernel& kernel);
};

struct ReductionPlan {
    ReductionModule module;
    BoundCall bound;
    detail::ArgsLayout args;
    std::vector<int> operand_param;  // the parameter of each array input, in order
    int sm_count = 0;
};

using ReductionCalls = CallMemo<ReductionPlan>;

// The implementation of ReductionKernel's calls: `outputs` null for launch(); `segment_offsets`
// non-null for a segmented reduction (kjit/segmented.hpp) of 1-D inputs.
void call_reduction(const ReductionKernel& kernel, ReductionCalls& calls, std::span<const KernelArg> args,
                    const ReduceOptions& options, std::vector<Array>* outputs, const Array* segment_offsets = nullptr);

}  // namespace kjit::jit

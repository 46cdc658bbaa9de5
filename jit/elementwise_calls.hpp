// What an ElementwiseKernel keeps between calls: its parameter signature (parsed once) and, per
// device and argument dtypes, the plan of a launch (the loaded module, the bound types, the
// layout of the argument struct). A warm call finds its plan with one hash lookup under a shared
// lock, which it releases before launching.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "jit/call_binding.hpp"
#include "jit/call_memo.hpp"
#include "jit/host/host_backend.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "runtime/detail/call_layout.hpp"
#include "runtime/detail/kernel_args.hpp"

namespace kjit::jit {

// Which module a call needs beyond the type binding: parameters passed as scalars, array inputs
// stored as another dtype.
struct ModuleVariant {
    std::vector<bool> scalar;
    std::vector<std::optional<DType>> storage;
};

// The module of `kernel` for this binding and variant, compiled or found in a cache, loaded on
// device `ordinal`.
KernelModule load_elementwise(const ElementwiseKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                              int ordinal);

// The module of `kernel` for this binding and variant, compiled for `arch` or found in a cache
// (as ElementwiseKernel::compile does for the plain binding).
KernelBinary compile_elementwise(const ElementwiseKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                 const std::string& arch);

struct CallPlan {
    KernelModule module;
    BoundCall bound;
    detail::ArgsLayout args;
    detail::VariantNeeds needs;
    std::vector<int> operand_param;   // parameter of each array operand, in parameter order
    int first_output_operand = -1;
    int sm_count = 0;
    host::ElementwiseCode host;       // a plan for host arrays: compiled by the host back end
};

using ElementwiseCalls = CallMemo<CallPlan>;

// The implementation of ElementwiseKernel's calls: `outputs` null for launch().
void call_elementwise(const ElementwiseKernel& kernel, ElementwiseCalls& calls, std::span<const KernelArg> args,
                      const CallOptions& options, std::vector<Array>* outputs);

}  // namespace kjit::jit

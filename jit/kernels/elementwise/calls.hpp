// What an ElementwiseKernel keeps between calls: its parameter signature (parsed once) and, per
// device and argument dtypes, the plan of a launch (the loaded module, the bound types, the
// layout of the argument struct). A warm call finds its plan with one hash lookup under a shared
// lock, which it releases before launching.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "jit/frontend/call_binding.hpp"
#include "jit/kernels/call_memo.hpp"
#include "jit/kernels/lazy_entry_points.hpp"
#include "jit/host/host_backend.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "runtime/detail/call_layout.hpp"
#include "runtime/detail/kernel_args.hpp"

namespace kjit::jit::kernels {

// Which module a call needs beyond the type binding: parameters passed as scalars, array inputs
// stored as another dtype.
struct ModuleVariant {
    std::vector<bool> scalar;
    std::vector<std::optional<DType>> storage;

    // The variant as a plan note's name takes it (jit/kernels/plan_note.hpp): which parameters are
    // scalars ("0110"), and each input's storage dtype ("-,float16,").
    std::string scalar_field() const;
    std::string storage_field() const;
};

// The module of `kernel` for this binding and variant, compiled or found in a cache, loaded on
// device `ordinal`.
Module load_elementwise(const ElementwiseKernel& kernel, const TypeBinding& types, const ModuleVariant& variant, int ordinal);

// The module of `kernel` for this binding and variant, compiled for `arch` or found in a cache
// (as ElementwiseKernel::compile does for the plain binding).
Binary compile_elementwise(const ElementwiseKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                           const std::string& arch);

// The entry points of an elementwise module (jit/codegen/elementwise.hpp), each its own program when calls
// compile them: a call compiles the variant it launches only.
enum class ElementwiseEntry { contiguous32, contiguous64, strided32, strided64, rows32, tiled32, small32 };
inline constexpr int kElementwiseEntries = 7;

// A kernel's variants for one binding on one device, each compiled (or found in a cache) and
// loaded the first time a call launches it; and what the launcher needs to know of them.
struct ElementwiseVariants {
    std::shared_ptr<LazyEntryPoints> loader;  // one group per ElementwiseEntry
    int vector_width = 1;
    int tile = 32;
    bool has_rows = false;
    bool has_tiled = false;
    bool uses_index = false;  // the body reads `i`
    CUfunction function(ElementwiseEntry e) const { return loader->group(static_cast<std::size_t>(e))[0]; }
};

// The variants of `kernel` for this binding and module variant on device `ordinal` (generates
// the source; compiles nothing until a function is asked for).
ElementwiseVariants elementwise_variants(const ElementwiseKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                         int ordinal);

// One variant's program compiled for `arch` or found in a cache, as calls load it (precompile
// makes each its own job). A variant the kernel does not have (rows32, tiled32 of some kernels):
// nothing compiled, empty arch.
CompiledModules compile_elementwise_entry(const ElementwiseKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                          const std::string& arch, ElementwiseEntry entry);

// Writes the plan note (jit/kernels/plan_note.hpp) of this binding and module variant compiled for `arch`
// ("sm_90"), whose variants' programs have the entry keys `keys` and alias keys `aliases`
// (indexed by ElementwiseEntry, as compile_elementwise_entry gives them): what `kjit precompile`
// notes. False when nothing was written (see write_plan_note, or a variant the kernel has that
// has no key).
bool note_elementwise_programs(const ElementwiseKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                               const std::string& arch, const std::vector<std::string>& keys,
                               const std::vector<std::string>& aliases);

// The variants the kernel has for this binding (checks the kernel: throws its errors).
std::vector<ElementwiseEntry> elementwise_entries(const ElementwiseKernel& kernel, const TypeBinding& types,
                                                  const ModuleVariant& variant);
// "contiguous32", "tiled32"...: an entry's label in messages.
const char* elementwise_entry_label(ElementwiseEntry entry);

struct CallPlan {
    ElementwiseVariants module;
    frontend::BoundCall bound;
    detail::ArgsLayout args;
    detail::VariantNeeds needs;
    std::vector<int> operand_param;   // parameter of each array operand, in parameter order
    int first_output_operand = -1;
    int sm_count = 0;
    bool uses_index = false;          // the body reads `i`: elements are visited in C order
    host::ElementwiseCode host;       // a plan for host arrays: compiled by the host back end
};

using ElementwiseCalls = CallMemo<CallPlan>;

// ElementwiseKernel::prepare: the plan of a call with `args`, and every variant's module loaded.
void prepare_elementwise(const ElementwiseKernel& kernel, ElementwiseCalls& calls, std::span<const KernelArg> args,
                         const CallOptions& options);

// The implementation of ElementwiseKernel's calls: `outputs` null for launch().
void call_elementwise(const ElementwiseKernel& kernel, ElementwiseCalls& calls, std::span<const KernelArg> args,
                      const CallOptions& options, std::vector<Array>* outputs);

}  // namespace kjit::jit::kernels

// Named by kjit/elementwise_kernel.hpp (a friend of ElementwiseKernel), so in kjit::jit.
namespace kjit::jit {
struct ElementwiseKernelAccess {
    // The kernel's strings and options without its table of calls: what a plan in that table may
    // keep (to generate a variant later) without keeping the table, and so itself, alive forever.
    // Never called.
    static ElementwiseKernel definition(const ElementwiseKernel& kernel);
    // How many owners the kernel's strings and table have (tests: copies of the kernel, and
    // nothing the table holds).
    static long owners(const ElementwiseKernel& kernel);
};
}  // namespace kjit::jit

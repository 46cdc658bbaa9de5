// What a ReductionKernel keeps between calls, as ElementwiseCalls does for elementwise kernels:
// its parameter signature (parsed once) and, per device and argument dtypes, the plan of a call
// (the loaded module and its entry points, the bound types, the argument struct's layout).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <cuda.h>

#include "jit/kernels/elementwise/calls.hpp"
#include "jit/host/host_backend.hpp"
#include "jit/kernels/lazy_entry_points.hpp"
#include "jit/compile/program_store.hpp"
#include "jit/codegen/reduction.hpp"
#include "kjit/reduction_kernel.hpp"

namespace kjit::jit::kernels {

// The strategies of templates/reduction.cuh as modules are compiled: each alone (with its
// finishing kernel for columns_split), in a 32-bit or a 64-bit index variant.
enum class ReductionEntryGroup { full, rows_warp, rows_block, columns, columns_split, segments_warp, segments_block, small, bins };
inline constexpr int kReductionEntryGroups = 9;
// Whether a reduction has that group in that index width: small has no 64-bit one (it reduces a
// few thousand elements), bins no 32-bit one (its time is memory's).
constexpr bool reduction_group_exists(ReductionEntryGroup group, bool index64) {
    return group == ReductionEntryGroup::small ? !index64 : group == ReductionEntryGroup::bins ? index64 : true;
}
// Whether the group's second entry point finishes what its first began (columns_split, bins).
constexpr bool reduction_group_has_finish(ReductionEntryGroup group) {
    return group == ReductionEntryGroup::columns_split || group == ReductionEntryGroup::bins;
}
// The programs of one binding: every group that exists, in each index width.
inline constexpr int kReductionPrograms = kReductionEntryGroups * 2 - 2;

// The kernels of one group loaded on a device: `main`, and `finish` for columns_split and bins.
struct ReductionEntries {
    CUfunction main = nullptr;
    CUfunction finish = nullptr;
};


// A reduction's kernels on one device, each strategy's module compiled (or found in a cache) and
// loaded the first time a call needs it: a call compiles one strategy, not sixteen entry points
// (65-150 ms of NVRTC instead of 1.3 s). Also what the launcher needs to size workspaces and layouts.
struct ReductionModule {
    std::shared_ptr<LazyEntryPoints> loader;  // a group per strategy and index width
    std::size_t reduce_itemsize = 0;
    bool has_identity = false;
    int array_inputs = 0;  // ReduceLayout's inputs = max(1, array_inputs)
    int outputs = 0;
    int vector_width = 1;
    // The group's kernels, loaded on first use (thread-safe; later calls: one atomic load).
    ReductionEntries entries(ReductionEntryGroup group, bool index64) const;
};

// Bytes of the workspaces templates/reduction.cuh describes: a `full` launch of `blocks` blocks
// (a 16-byte counter, then each block's partial result and, without an identity, its "has a value"
// byte; zeroed once, each launch leaves the counter zero again), and columns_split /
// columns_finish over `chunks` chunks of `outputs` outputs.
inline std::size_t full_workspace_bytes(std::size_t reduce_itemsize, bool has_identity, std::size_t blocks) {
    return 16 + blocks * (reduce_itemsize + (has_identity ? 0 : 1));
}
// bins over `blocks` blocks into `groups` groups: each block's value of each group.
inline std::size_t bins_workspace_bytes(std::size_t reduce_itemsize, std::size_t blocks, std::size_t groups) {
    return blocks * groups * reduce_itemsize;
}
// bins keeps a value of every group per warp in shared memory: at most this many bytes a block
// (what every GPU gives a block without asking for more), so 1 to 8 warps a block.
inline constexpr std::size_t kBinsSharedBytes = 48 * 1024;
inline int bins_warps(std::size_t reduce_itemsize, std::int64_t groups) {
    const std::size_t per_warp = reduce_itemsize * static_cast<std::size_t>(groups < 1 ? 1 : groups);
    const std::size_t warps = kBinsSharedBytes / per_warp;
    return static_cast<int>(warps > 8 ? 8 : warps);
}
inline std::size_t columns_split_workspace_bytes(std::size_t reduce_itemsize, bool has_identity, std::size_t chunks,
                                                 std::size_t outputs) {
    return chunks * outputs * (reduce_itemsize + (has_identity ? 0 : 1));
}

// The entry point names of a group ("NAME_columns_split32", "NAME_columns_finish32"...).
std::vector<std::string> reduction_group_entries(const codegen::GeneratedReduction& g, ReductionEntryGroup group, bool index64);

// The program of one group: `whole` (every entry point) with only the group's entry points.
compile::CachedProgram reduction_group_program(const compile::CachedProgram& whole, const codegen::GeneratedReduction& g, ReductionEntryGroup group,
                                      bool index64);

// The entry point names of every group, one per strategy and index width (group * 2 + index64).
std::vector<std::vector<std::string>> reduction_groups(const codegen::GeneratedReduction& g);

// A loader of the groups of `whole` on device `ordinal` (jit/kernels/reduction/groups.cpp), which notes
// what it loads in `note` when given one.
std::shared_ptr<LazyEntryPoints> make_reduction_group_loader(compile::CachedProgram whole, codegen::GeneratedReduction g, int ordinal,
                                                             std::shared_ptr<PlanNote> note = nullptr);

// The module of `kernel` for this binding and variant (inputs passed as scalars, array inputs
// stored as another dtype), compiled or found in a cache, loaded on device `ordinal`.
ReductionModule load_reduction(const ReductionKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                               int ordinal);

// What ReductionKernel::compile gives (`binary`), with the facts a launch of its entry points rests
// on (templates/reduction.cuh): `kjit compile` prints them, tests launch the entry points.
struct ReductionBinary {
    Binary binary;
    std::string reduce_type;          // the bound reduce type ("float32")
    std::size_t reduce_itemsize = 0;  // bytes of one partial result
    bool has_identity = false;
    int array_inputs = 0;             // inputs passed as arrays (the layout's input operands)
    int outputs = 0;                  // outputs (the layout's output operands)
    int vector_width = 1;             // elements per vector load where inputs are contiguous and aligned
};

// The same, compiled for `arch` (or found in a cache) without loading: the module of every entry
// point, as ReductionKernel::compile() gives it.
ReductionBinary compile_reduction(const ReductionKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                  const std::string& arch);

using CompiledGroups = CompiledModules;
// What a precompile builds: the module of each group calls load (ReductionModule::entries), for
// `arch`, compiled or found in a cache.
CompiledGroups compile_reduction_groups(const ReductionKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                        const std::string& arch);
// One of them (precompile makes each its own job, so that they compile in parallel).
CompiledGroups compile_reduction_group(const ReductionKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                       const std::string& arch, ReductionEntryGroup group, bool index64);
// Writes the plan note (jit/kernels/plan_note.hpp) of this binding and module variant compiled for
// `arch`, whose groups' programs have the keys `keys` and alias keys `aliases` (indexed by group * 2
// + index64, as compile_reduction_group gives them): what `kjit precompile` notes. False when
// nothing was written (see write_plan_note; a reduction with a generator of its own; a group
// without keys).
bool note_reduction_programs(const ReductionKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                             const std::string& arch, const std::vector<std::string>& keys, const std::vector<std::string>& aliases);
// "full32", "columns_split64"...: a group's label in messages.
std::string reduction_group_label(ReductionEntryGroup group, bool index64);

// A reduction whose module kjit writes itself instead of generating it from the strings: the
// partial results are a struct, not a dtype (argmin and argmax carry a value and an index).
struct CustomReduction {
    codegen::GeneratedReduction generated;
    std::string reduce_type;        // what jit::ReductionBinary::reduce_type says
    std::size_t reduce_itemsize = 0;
    bool has_identity = false;
    std::string spec_json;          // the manifest entry the cache records ("kind": "builtin")
};
using CustomGenerator = std::function<CustomReduction(const TypeBinding&)>;

}  // namespace kjit::jit::kernels

// Named by kjit/reduction_kernel.hpp (a friend of ReductionKernel), so in kjit::jit.
namespace kjit::jit {
struct ReductionKernelAccess {
    // A kernel with these parameter lists whose module `generate` writes for each binding.
    static ReductionKernel custom(std::string in_params, std::string out_params, std::string name,
                                  kernels::CustomGenerator generate);
    // The kernel's generator; empty for kernels made from strings.
    static const kernels::CustomGenerator& generator(const ReductionKernel& kernel);
    // A copy of a kernel made from strings whose module's NAME_ops::fold_vector has `fold_vector`
    // as its body (codegen::ReductionModuleSpec::fold_vector), and whose manifest entry is
    // `builtin_entry` ("kind": "builtin"). Host arrays run the strings alone. Not noted.
    static ReductionKernel with_fold_vector(const ReductionKernel& kernel, std::string fold_vector, std::string builtin_entry);
    static const std::string& fold_vector(const ReductionKernel& kernel);
    static const std::string& builtin_entry(const ReductionKernel& kernel);
    // The kernel's strings, options and generator without its table of calls: what a plan in that
    // table may keep (to generate a group later) without keeping the table, and so itself, alive
    // forever. Never called.
    static ReductionKernel definition(const ReductionKernel& kernel);
    // How many owners the kernel's strings and table have (tests: copies of the kernel, and
    // nothing the table holds).
    static long owners(const ReductionKernel& kernel);
    // The reduction of 1-D inputs into groups by index (call_reduction's `group_of`).
    static Outputs reduce_groups(const ReductionKernel& kernel, std::span<const KernelArg> args, const Array& group_of,
                                 const Array& offsets, const CallOptions& options);
    // reduction_value_bytes of the kernel's table.
    static std::size_t value_bytes(const ReductionKernel& kernel, std::span<const KernelArg> args, const CallOptions& options);
};
}  // namespace kjit::jit

namespace kjit::jit::kernels {

// A scan's module (jit/kernels/scan/): `kernel`, a reduction whose map reads the scan's input and
// whose post writes its output, generated with templates/scan.cuh's entry points instead of the
// reduction strategies. `spec_json` gives the manifest entry the cache records (the scan's own).
struct ScanProgram {
    codegen::GeneratedReduction generated;
    compile::CachedProgram program;
    std::string value_type;        // the bound scan type ("float32")
    std::size_t value_itemsize = 0;
    int items = 0;                 // per thread (generated.scan_items)
};
ScanProgram scan_program(const ReductionKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                         std::function<std::string()> spec_json);

// The kernel's pieces checked for a complete binding (what code generation starts from); the host
// back end lowers them (jit/host/host_reduction.cpp).
codegen::CheckedReduction check_reduction(const ReductionKernel& kernel, const TypeBinding& types);

struct ReductionPlan {
    ReductionModule module;         // on the host: only the facts (itemsize, identity, counts), no loader
    host::ReductionCode host;       // a plan for host arrays: compiled by the host back end
    frontend::BoundCall bound;
    detail::ArgsLayout args;
    std::vector<int> operand_param;  // the parameter of each array input, in order
    int sm_count = 0;
};

using ReductionCalls = CallMemo<ReductionPlan>;

// ReductionKernel::prepare: the plan of a call with `args`, and every strategy's module loaded.
void prepare_reduction(const ReductionKernel& kernel, ReductionCalls& calls, std::span<const KernelArg> args,
                       const ReduceOptions& options);

// The bytes of the running value of a call with `args` (its plan, made now when new).
std::size_t reduction_value_bytes(const ReductionKernel& kernel, ReductionCalls& calls, std::span<const KernelArg> args,
                                  const ReduceOptions& options);

// The implementation of ReductionKernel's calls: `outputs` null for launch(); `segment_offsets`
// non-null for a segmented reduction (kjit/segmented.hpp) of 1-D inputs. With `group_of` too
// (int32, C-contiguous, one per element on the inputs' device), a reduction of 1-D inputs into
// groups by index (templates/reduction.cuh's bins): element j into group group_of[j], the
// `segment_offsets` then giving only the groups' sizes (post's n). GPU only; the kernel needs an
// identity and its map must not read `i` or `n`.
void call_reduction(const ReductionKernel& kernel, ReductionCalls& calls, std::span<const KernelArg> args,
                    const ReduceOptions& options, std::vector<Array>* outputs, const Array* segment_offsets = nullptr,
                    const Array* group_of = nullptr);

}  // namespace kjit::jit::kernels

// One call of an elementwise kernel through the shared stages (jit/kernels/call.hpp): its shape
// rule (every operand broadcast, outputs included), in-place updates allowed, and the variant
// chosen for the simplified layout.
#include <array>
#include <bitset>
#include <climits>
#include <cstring>

#include "jit/kernels/call.hpp"
#include "jit/kernels/elementwise/calls.hpp"
#include "jit/kernels/elementwise/copy.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit::jit::kernels {

using namespace frontend;

namespace {

// Threads per block unless a call asks for others (CallOptions::block_size), and the most a call
// may ask for: the generated kernels' __launch_bounds__(256) (jit/codegen/elementwise.cpp). The bounds stay:
// they let the compiler give each thread up to 255 registers, where bounds of 1024 would cap it
// at 64 and spill heavy bodies (the tiled variant once took 191); no measurement has asked for
// blocks above 256.
constexpr unsigned kThreads = 256;

std::unique_ptr<CallPlan> make_plan(const ElementwiseKernel& kernel, const CallSite& site, std::span<const KernelArg> args,
                                    const Target& target) {
    const std::vector<ArgumentKind> kinds = argument_kinds(args);
    auto plan = std::make_unique<CallPlan>();
    plan->bound = bind_call(site.sig, kernel.name(), kinds.data(), kinds.size());
    const std::vector<detail::ArgField> fields = arg_fields(site.sig, plan->bound);
    for (std::size_t k = 0; k < site.sig.params.size(); ++k) {
        if (fields[k] != detail::ArgField::pointer) continue;
        const int slot = static_cast<int>(plan->operand_param.size());
        if (slot >= detail::kMaxCallOperands)
            throw TypeError(site.prefix() + "more than " + std::to_string(detail::kMaxCallOperands) + " array operands");
        plan->operand_param.push_back(static_cast<int>(k));
        if (site.sig.params[k].is_output) {
            plan->needs.output_mask |= std::uint64_t{1} << slot;
            if (plan->first_output_operand < 0) plan->first_output_operand = slot;
        }
    }
    plan->args = args_layout_for(site, fields, plan->bound.param_types);
    // The code: compiled for the CPU by the host back end, or the GPU variants (each compiled or
    // loaded when first launched).
    if (target.host) {
        plan->host = host::compile_elementwise_on_host(kernel, plan->bound, plan->args);
        plan->uses_index = plan->host.uses_index;
        return plan;
    }
    plan->module = elementwise_variants(kernel, plan->bound.types, ModuleVariant{plan->bound.scalar, plan->bound.storage}, target.ordinal);
    plan->needs.vector_width = plan->module.vector_width;
    plan->needs.has_rows = plan->module.has_rows;
    plan->needs.has_tiled = plan->module.has_tiled;
    plan->uses_index = plan->module.uses_index;
    plan->sm_count = kjit::detail::device_attributes(target.ordinal).sm_count;
    return plan;
}

std::string layout_shape(const detail::CallLayout& l) {
    return shape_to_string(Shape(l.shape, l.shape + l.ndim));
}

// NumPy's rule for two shapes, right-aligned: each pair of extents equal or one of them 1.
bool broadcasts_with(const Array& a, const detail::CallLayout& l) {
    const int common = std::min(a.ndim(), l.ndim);
    for (int d = 1; d <= common; ++d) {
        const std::int64_t e = a.shape()[static_cast<std::size_t>(a.ndim() - d)], f = l.shape[l.ndim - d];
        if (e != f && e != 1 && f != 1) return false;
    }
    return true;
}

bool same_shape(const Array& a, const detail::CallLayout& l) {
    if (a.ndim() != l.ndim) return false;
    for (int d = 0; d < l.ndim; ++d)
        if (a.shape()[static_cast<std::size_t>(d)] != l.shape[d]) return false;
    return true;
}

// The grid: one block per `threads` work items (every thread does its share once), which measured
// faster than a few blocks per SM looping over the data. The tiled variant loops over tiles with
// at most 64 blocks per SM (best measured; docs/PERFORMANCE.md).

unsigned grid_for(std::int64_t items, unsigned threads, int sm_count, bool tiled) {
    const std::int64_t cap = tiled ? std::int64_t{64} * std::max(sm_count, 1) : INT_MAX;
    const std::int64_t blocks = (items + threads - 1) / threads;
    return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(blocks, cap)));
}

// CallOptions::block_size below 0: refused before anything is compiled, on every back end.
void check_block_size_sign(const CallSite& site, int block_size) {
    if (block_size < 0)
        throw Error(site.prefix() + "block_size " + std::to_string(block_size) +
                    " is not a number of threads: give 0 for kjit's choice, or 1 up to the kernel's limit (at most " +
                    std::to_string(kThreads) + ", its launch bounds)");
}

// The threads per block of a launch of `f`: kjit's choice, or the call's block_size when `f`
// and the device take that many. The function's limit comes from its launch bounds and its
// registers; it is asked of the driver only when a call gives a block size.
unsigned block_threads(const CallSite& site, int block_size, CUfunction f, int ordinal) {
    if (block_size == 0) return kThreads;
    int function_limit = 0;
    KJIT_CU_CHECK(detail::driver_on(ordinal).cuFuncGetAttribute(&function_limit, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
    const int device_limit = kjit::detail::device_attributes(ordinal).max_threads_per_block;
    const int limit = device_limit > 0 ? std::min(function_limit, device_limit) : function_limit;
    if (block_size > limit)
        throw Error(site.prefix() + "block_size " + std::to_string(block_size) + " is above the limit of " + std::to_string(limit) +
                    " threads per block (the kernel takes " + std::to_string(function_limit) + ", the device " +
                    std::to_string(device_limit) + ")");
    return static_cast<unsigned>(block_size);
}

// Broadcasts the array operands (inputs only, or every one) into `layout`; returns how many took
// part. When they do not broadcast, the error names the output that does not take the inputs'
// shape, else every operand's shape.
int lay_out(const CallSite& site, const CallPlan& plan, const Operands& operands, bool all, detail::CallLayout& layout) {
    const std::size_t nin = static_cast<std::size_t>(site.sig.inputs);
    std::array<detail::OperandView, detail::kMaxCallOperands> views;
    const auto broadcast = [&](bool every, int& present) {
        present = 0;
        for (const int p : plan.operand_param) {
            const std::size_t k = static_cast<std::size_t>(p);
            if (!every && k >= nin) continue;
            views[static_cast<std::size_t>(present++)] = operand_view(*operands.array(k));
        }
        return present == 0 || detail::broadcast_operands(views.data(), present, layout);
    };
    int present = 0;
    if (broadcast(all, present)) return present;
    int inputs = 0;
    if (all && broadcast(false, inputs) && inputs > 0) {
        for (const int p : plan.operand_param) {
            const std::size_t k = static_cast<std::size_t>(p);
            if (k >= nin && !broadcasts_with(*operands.array(k), layout))
                throw ShapeError(site.where(k) + " has shape " + shape_to_string(operands.array(k)->shape()) +
                                 ", which does not broadcast with the inputs' shape " + layout_shape(layout));
        }
    }
    std::string shapes;
    for (int s = 0; s < present; ++s) {
        const std::size_t k = static_cast<std::size_t>(plan.operand_param[static_cast<std::size_t>(s)]);
        shapes += (shapes.empty() ? "" : ", ") + site.sig.params[k].name + " " + shape_to_string(operands.array(k)->shape());
    }
    throw ShapeError(site.prefix() + "the shapes do not broadcast together: " + shapes);
}

// The call's shape: the broadcast shape of every non-raw array given, outputs included (as NumPy's
// ufuncs and CuPy's ElementwiseKernel: an input of (3, 1) fills an output of (3, 4)); without
// any, the size given. Every output given must have exactly that shape; those not given are
// allocated with it. Leaves every operand laid out over it.
void call_shape(const CallSite& site, const CallPlan& plan, const Target& target, std::span<const KernelArg> args,
                Operands& operands, const CallOptions& options, detail::CallLayout& layout) {
    const std::size_t np = site.sig.params.size(), nin = static_cast<std::size_t>(site.sig.inputs), count = args.size();
    const bool outputs_given = count == np;
    const int arrays_present = lay_out(site, plan, operands, outputs_given, layout);
    if (arrays_present == 0) {
        if (options.size < 0)
            throw ShapeError(site.prefix() + "no argument is a non-raw array, so the call needs a size (CallOptions::size)");
        layout.ndim = 1;
        layout.shape[0] = options.size;
        layout.size = options.size;
        layout.operands = 0;
    }
    if (arrays_present != 0 && options.size >= 0 && options.size != layout.size)
        throw ShapeError(site.prefix() + "size " + std::to_string(options.size) + " was given but the arrays have " +
                         std::to_string(layout.size) + " elements (" + layout_shape(layout) + ")");
    for (std::size_t k = nin; k < count; ++k) {
        if (site.sig.params[k].raw) continue;
        if (!same_shape(args[k].array(), layout))
            throw ShapeError(site.where(k) + " has shape " + shape_to_string(args[k].array().shape()) +
                             " but the call's shape (the arrays' broadcast shape) is " + layout_shape(layout) +
                             ": an output is not broadcast");
    }
    if (outputs_given) return;
    const Shape shape(layout.shape, layout.shape + layout.ndim);
    for (std::size_t k = count; k < np; ++k)
        operands.set(k, Array::empty(shape, plan.bound.param_types[k], target.device, target.stream));
    if (!plan.operand_param.empty()) lay_out(site, plan, operands, true, layout);
}

// The GPU launch of a laid-out call of n > 0 elements whose argument struct is packed: the variant
// for the layout, its layout struct, its grid.
void launch_on_gpu(const CallSite& site, const CallPlan& plan, const Target& target, const CallOptions& options,
                   const detail::CallLayout& layout, LaunchBuffers& buffers) {
    const std::int64_t n = layout.size;
    // The tiled variant is written for blocks of kThreads: with another block size, its layouts
    // take the rows or strided variant.
    const bool default_block = options.block_size == 0 || options.block_size == static_cast<int>(kThreads);
    detail::VariantNeeds needs = plan.needs;
    needs.has_tiled = needs.has_tiled && default_block;
    const detail::VariantChoice choice = plan.operand_param.empty() ? detail::VariantChoice{detail::Variant::strided, n > INT_MAX}
                                                                    : detail::choose_variant(layout, needs);
    if (choice.variant == detail::Variant::strided && layout.ndim > kjit::max_dims)
        throw ShapeError(site.prefix() + "the arrays need " + std::to_string(layout.ndim) +
                         " dimensions even after merging; kjit's strided kernels take at most " + std::to_string(kjit::max_dims));

    CUfunction f = nullptr;
    std::int64_t items = n;
    const ElementwiseVariants& m = plan.module;
    switch (choice.variant) {
        case detail::Variant::contiguous:
            f = m.function(choice.index64 ? ElementwiseEntry::contiguous64 : ElementwiseEntry::contiguous32);
            items = (n + m.vector_width - 1) / m.vector_width;
            break;
        case detail::Variant::small:
            f = m.function(ElementwiseEntry::small32);
            break;
        case detail::Variant::rows:
            f = m.function(ElementwiseEntry::rows32);
            items = n / m.vector_width;
            break;
        case detail::Variant::tiled:
            f = m.function(ElementwiseEntry::tiled32);
            items = ((layout.shape[0] + m.tile - 1) / m.tile) * ((layout.shape[1] + m.tile - 1) / m.tile) * kThreads;
            break;
        case detail::Variant::strided:
            f = m.function(choice.index64 ? ElementwiseEntry::strided64 : ElementwiseEntry::strided32);
            break;
    }
    kjit::Layout<detail::kMaxCallOperands>& l = buffers.layout.elementwise;
    if (choice.variant != detail::Variant::contiguous && choice.variant != detail::Variant::small) {
        const std::size_t dims = static_cast<std::size_t>(layout.ndim);
        l.ndim = layout.ndim;
        std::memcpy(l.shape, layout.shape, sizeof(std::int64_t) * dims);
        for (int s = 0; s < layout.operands; ++s) std::memcpy(l.strides[s], layout.strides[s], sizeof(std::int64_t) * dims);
    }
    void* params[] = {buffers.args, &l};
    const unsigned threads = block_threads(site, options.block_size, f, target.ordinal);
    // The small variant has no loop: one thread per element, whatever caps the others' grids.
    const unsigned grid = choice.variant == detail::Variant::small ? static_cast<unsigned>((n + threads - 1) / threads)
                                                                   : grid_for(items, threads, plan.sm_count, choice.variant == detail::Variant::tiled);
    launch(target, f, grid, 1, threads, params);
}

}  // namespace

void prepare_elementwise(const ElementwiseKernel& kernel, ElementwiseCalls& calls, std::span<const KernelArg> args,
                         const CallOptions& options) {
    const CallSignature& sig = calls.signature([&] { return call_signature(kernel.in_params(), kernel.out_params()); });
    const CallSite site{"kernel", kernel.name(), sig};
    validate_arity(site, args.size(), true);
    const Target target = locate(site, args, options.stream);
    const CallPlan& plan = plan_for(calls, target, args, sig.params.size(), [&] { return make_plan(kernel, site, args, target); });
    if (!target.host) plan.module.loader->load_all();
}

void call_elementwise(const ElementwiseKernel& kernel, ElementwiseCalls& calls, std::span<const KernelArg> args,
                      const CallOptions& options, std::vector<Array>* outputs) {
    const CallSignature& sig = calls.signature([&] { return call_signature(kernel.in_params(), kernel.out_params()); });
    const CallSite site{"kernel", kernel.name(), sig};
    const std::size_t np = sig.params.size(), nin = static_cast<std::size_t>(sig.inputs);
    validate_arity(site, args.size(), outputs != nullptr);
    check_block_size_sign(site, options.block_size);
    const Target target = locate(site, args, options.stream);
    const CallPlan& plan = plan_for(calls, target, args, np, [&] { return make_plan(kernel, site, args, target); });

    Operands operands(args);
    LaunchBuffers& buffers = launch_buffers();
    detail::CallLayout& layout = buffers.call;
    call_shape(site, plan, target, args, operands, options, layout);
    const std::bitset<kMaxCallParams> copies =
        inputs_to_copy(site, operands, plan.operand_param, nin, [&](std::size_t i, std::size_t o) {
            return detail::same_elements(layout, static_cast<int>(i), static_cast<int>(o));
        });
    if (copies.any()) {
        // The copies are kernel calls themselves (they reuse this thread's buffers).
        for (std::size_t k = 0; k < nin; ++k)
            if (copies[k]) operands.set(k, kernels::elementwise::copy_kernel()({args[k].array()}, CallOptions{target.stream, -1})[0]);
        lay_out(site, plan, operands, true, layout);
    }

    if (const std::int64_t n = layout.size; n > 0) {
        detail::simplify(layout, !plan.uses_index && !sig.has_raw, plan.first_output_operand);
        std::size_t slot = 0;
        pack_args(site, buffers.args, plan.args, plan.bound, args, operands, [&](std::size_t) { return layout.data[slot++]; });
        const long long n_value = n;  // the struct's last field
        std::memcpy(buffers.args + plan.args.n_offset, &n_value, sizeof n_value);
        if (target.host)
            host::run_elementwise_on_host(plan.host, buffers.args, layout, n);
        else
            launch_on_gpu(site, plan, target, options, layout, buffers);
    }
    operands.finish(target, nin, np, outputs);
}

}  // namespace kjit::jit::kernels

// One call of an elementwise kernel: find (or make) the plan for these argument dtypes, lay the
// arrays out over their broadcast shape, pick the variant, pack the arguments, launch.
#include <array>
#include <climits>
#include <cstdlib>

#include "jit/kernels/elementwise/calls.hpp"
#include "jit/kernels/elementwise/copy.hpp"
#include "jit/host/host_call.hpp"
#include "jit/kernels/made_arrays.hpp"
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

// The argument struct and strided layout being prepared on this thread: cuLaunchKernel copies
// them, so one buffer per thread serves every launch. Allocated on a thread's first call (17 KB
// would otherwise be part of every thread's static TLS block, libraries' threads included), and
// not zeroed: each launch writes what it passes, and zeroing 17 KB was 8% of the instructions
// of a fresh process's first call (and pages touched).
struct LaunchBuffers {
    alignas(16) unsigned char args[kMaxArgumentBytes];
    alignas(16) unsigned char layout[detail::layout_struct_size(detail::kMaxCallOperands)];
    detail::CallLayout call;
};
LaunchBuffers& launch_buffers() {
    thread_local std::unique_ptr<LaunchBuffers> buffers;
    if (!buffers) buffers = std::make_unique_for_overwrite<LaunchBuffers>();
    return *buffers;
}

std::string kernel_prefix(const ElementwiseKernel& k) { return "kernel '" + k.name() + "': "; }

std::string param_label(const CallSignature& sig, std::size_t k) {
    const Param& p = sig.params[k];
    return std::string(p.is_output ? "output" : "input") + " '" + p.name + "'";
}

std::unique_ptr<CallPlan> make_plan(const ElementwiseKernel& kernel, const CallSignature& sig, std::span<const KernelArg> args,
                                    int ordinal) {
    const std::vector<ArgumentKind> kinds = argument_kinds(args);
    auto plan = std::make_unique<CallPlan>();
    plan->bound = bind_call(sig, kernel.name(), kinds.data(), kinds.size());
    const bool on_host = ordinal == host::kHostOrdinal;
    if (!on_host)
        plan->module = elementwise_variants(kernel, plan->bound.types, ModuleVariant{plan->bound.scalar, plan->bound.storage}, ordinal);
    const std::vector<detail::ArgField> fields = arg_fields(sig, plan->bound);
    for (std::size_t k = 0; k < sig.params.size(); ++k) {
        if (fields[k] != detail::ArgField::pointer) continue;
        const int slot = static_cast<int>(plan->operand_param.size());
        if (slot >= detail::kMaxCallOperands)
            throw TypeError(kernel_prefix(kernel) + "more than " + std::to_string(detail::kMaxCallOperands) + " array operands");
        plan->operand_param.push_back(static_cast<int>(k));
        if (sig.params[k].is_output) {
            plan->needs.output_mask |= std::uint64_t{1} << slot;
            if (plan->first_output_operand < 0) plan->first_output_operand = slot;
        }
    }
    plan->args = detail::args_layout(fields, plan->bound.param_types);
    if (plan->args.size > sizeof(LaunchBuffers::args))
        throw TypeError(kernel_prefix(kernel) + "its arguments take " + std::to_string(plan->args.size) +
                        " bytes, more than kjit passes to a kernel (" + std::to_string(sizeof(LaunchBuffers::args)) + ")");
    if (on_host) {
        plan->host = host::compile_elementwise_on_host(kernel, plan->bound, plan->args);
        plan->uses_index = plan->host.uses_index;
        return plan;
    }
    plan->needs.vector_width = plan->module.vector_width;
    plan->needs.has_rows = plan->module.has_rows;
    plan->needs.has_tiled = plan->module.has_tiled;
    plan->uses_index = plan->module.uses_index;
    plan->sm_count = kjit::detail::device_attributes(ordinal).sm_count;
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
// 1-4% faster on the H200 than a few blocks per SM looping over the data. The tiled variant
// loops over tiles with at most 64 blocks per SM (best measured). KJIT_TUNE_BLOCKS_PER_SM caps
// every variant, for measurements (docs/perf-log.md); read once.
std::int64_t tuned_blocks_per_sm() {
    static const std::int64_t value = [] {
        const char* e = std::getenv("KJIT_TUNE_BLOCKS_PER_SM");
        const long long v = e != nullptr ? std::atoll(e) : 0;
        return v > 0 ? static_cast<std::int64_t>(v) : std::int64_t{0};
    }();
    return value;
}

unsigned grid_for(std::int64_t items, unsigned threads, int sm_count, bool tiled) {
    const std::int64_t per_sm = tuned_blocks_per_sm() > 0 ? tuned_blocks_per_sm() : (tiled ? 64 : std::int64_t{1} << 40);
    const std::int64_t cap = std::min<std::int64_t>(static_cast<std::int64_t>(std::max(sm_count, 1)) * std::min<std::int64_t>(per_sm, INT_MAX), INT_MAX);
    const std::int64_t blocks = (items + threads - 1) / threads;
    return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(blocks, cap)));
}

// CallOptions::block_size below 0: refused before anything is compiled, on every back end.
void check_block_size_sign(const ElementwiseKernel& kernel, int block_size) {
    if (block_size < 0)
        throw Error(kernel_prefix(kernel) + "block_size " + std::to_string(block_size) +
                    " is not a number of threads: give 0 for kjit's choice, or 1 up to the kernel's limit (at most " +
                    std::to_string(kThreads) + ", its launch bounds)");
}

// The threads per block of a launch of `f`: kjit's choice, or the call's block_size when `f`
// and the device take that many. The function's limit comes from its launch bounds and its
// registers; it is asked of the driver only when a call gives a block size.
unsigned block_threads(const ElementwiseKernel& kernel, int block_size, CUfunction f, int ordinal) {
    if (block_size == 0) return kThreads;
    int function_limit = 0;
    KJIT_CU_CHECK(detail::driver_on(ordinal).cuFuncGetAttribute(&function_limit, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
    const int device_limit = kjit::detail::device_attributes(ordinal).max_threads_per_block;
    const int limit = device_limit > 0 ? std::min(function_limit, device_limit) : function_limit;
    if (block_size > limit)
        throw Error(kernel_prefix(kernel) + "block_size " + std::to_string(block_size) + " is above the limit of " +
                    std::to_string(limit) + " threads per block (the kernel takes " + std::to_string(function_limit) +
                    ", the device " + std::to_string(device_limit) + ")");
    return static_cast<unsigned>(block_size);
}

}  // namespace

void call_elementwise(const ElementwiseKernel& kernel, ElementwiseCalls& calls, std::span<const KernelArg> args,
                      const CallOptions& options, std::vector<Array>* outputs) {
    const CallSignature& sig = calls.signature([&] { return call_signature(kernel.in_params(), kernel.out_params()); });
    const std::size_t np = sig.params.size(), count = args.size();
    const std::size_t nin = static_cast<std::size_t>(sig.inputs);
    if (np > static_cast<std::size_t>(kMaxCallParams))
        throw TypeError(kernel_prefix(kernel) + "kjit launches kernels of at most " + std::to_string(kMaxCallParams) + " parameters");
    if (count != nin && count != np)
        throw TypeError(kernel_prefix(kernel) + "takes " + std::to_string(nin) + " inputs" +
                        (sig.outputs ? " (then optionally its " + std::to_string(sig.outputs) + " outputs)" : std::string()) +
                        ", got " + std::to_string(count) + " arguments");
    if (outputs == nullptr && count != np)
        throw TypeError(kernel_prefix(kernel) + "launch() needs every output; call the kernel to have them allocated");
    check_block_size_sign(kernel, options.block_size);
    // Host arrays run on the CPU (jit/host/): same binding, layout and checks, other code.
    const bool on_host = host::is_host_call(args, [&](std::size_t k) { return param_label(sig, k); });
    const int ordinal = on_host ? host::kHostOrdinal
                                : call_device(args, options.stream, [&](std::size_t k) { return kernel_prefix(kernel) + param_label(sig, k); });
    const CallKey key = call_key(args, np, ordinal);
    const CallPlan* plan = calls.find(key);
    if (plan == nullptr && on_host) {
        std::lock_guard lock(host::compile_mutex());
        plan = calls.find(key);
        if (plan == nullptr) plan = calls.insert(key, make_plan(kernel, sig, args, ordinal));
    }
    if (plan == nullptr) plan = calls.insert(key, make_plan(kernel, sig, args, ordinal));
    const Stream stream = on_host ? Stream::current()
                                  : (options.stream ? *options.stream : Stream::current()).for_device(Device::cuda(ordinal));

    // Arrays kjit makes for this call: outputs not given, and copies of inputs that overlap an output.
    MadeArrays made;
    auto array_of = [&](std::size_t k) -> const Array* {
        if (const Array* a = made.find(k)) return a;
        return k < count ? &args[k].array() : nullptr;
    };
    const int operands = static_cast<int>(plan->operand_param.size());
    LaunchBuffers& buffers = launch_buffers();
    detail::CallLayout& layout = buffers.call;
    std::array<detail::OperandView, detail::kMaxCallOperands> views;
    // Broadcasts the array operands: inputs only, or every one.
    auto broadcast = [&](bool all, int& present) {
        present = 0;
        for (int s = 0; s < operands; ++s) {
            const std::size_t k = static_cast<std::size_t>(plan->operand_param[static_cast<std::size_t>(s)]);
            if (!all && k >= nin) continue;
            views[static_cast<std::size_t>(present++)] = operand_view(*array_of(k));
        }
        return present == 0 || detail::broadcast_operands(views.data(), present, layout);
    };
    auto lay_out = [&](bool all) {
        int present = 0;
        if (broadcast(all, present)) return present;
        // When the inputs broadcast and an output does not take their shape, that output is named.
        int inputs = 0;
        if (all && broadcast(false, inputs) && inputs > 0) {
            for (std::size_t k = nin; k < count; ++k)
                if (!sig.params[k].raw && !broadcasts_with(args[k].array(), layout))
                    throw ShapeError(kernel_prefix(kernel) + param_label(sig, k) + " has shape " +
                                     shape_to_string(args[k].array().shape()) + ", which does not broadcast with the inputs' shape " +
                                     layout_shape(layout));
        }
        std::string shapes;
        for (int s = 0; s < present; ++s) {
            const std::size_t k = static_cast<std::size_t>(plan->operand_param[static_cast<std::size_t>(s)]);
            shapes += (shapes.empty() ? "" : ", ") + sig.params[k].name + " " + shape_to_string(array_of(k)->shape());
        }
        throw ShapeError(kernel_prefix(kernel) + "the shapes do not broadcast together: " + shapes);
    };

    // The call's shape: the broadcast shape of every non-raw array given, outputs included (as
    // NumPy's ufuncs and CuPy's ElementwiseKernel: an input of (3, 1) fills an output of (3, 4));
    // without any, the size given. Every output must then have exactly that shape. With every
    // output given, this is already the layout the launch uses.
    const bool outputs_given = count == np;
    const int arrays_present = lay_out(outputs_given);
    if (arrays_present == 0) {
        if (options.size < 0)
            throw ShapeError(kernel_prefix(kernel) + "no argument is a non-raw array, so the call needs a size (CallOptions::size)");
        layout.ndim = 1;
        layout.shape[0] = options.size;
        layout.size = options.size;
        layout.operands = 0;
    }
    if (arrays_present != 0 && options.size >= 0 && options.size != layout.size)
        throw ShapeError(kernel_prefix(kernel) + "size " + std::to_string(options.size) + " was given but the arrays have " +
                         std::to_string(layout.size) + " elements (" + layout_shape(layout) + ")");
    for (std::size_t k = nin; k < count; ++k) {
        if (sig.params[k].raw) continue;
        if (!same_shape(args[k].array(), layout))
            throw ShapeError(kernel_prefix(kernel) + param_label(sig, k) + " has shape " + shape_to_string(args[k].array().shape()) +
                             " but the call's shape (the arrays' broadcast shape) is " + layout_shape(layout) +
                             ": an output is not broadcast");
    }
    if (count < np) {
        const Shape shape(layout.shape, layout.shape + layout.ndim);
        for (std::size_t k = count; k < np; ++k)
            made.set(k, Array::empty(shape, plan->bound.param_types[k], on_host ? Device::cpu() : Device::cuda(ordinal), stream));
    }
    if (operands > 0 && !outputs_given) lay_out(true);

    // Overlaps between outputs and other operands.
    std::array<bool, kMaxCallParams> must_copy{};
    bool copies = false;
    for (int o = 0; o < operands; ++o) {
        if (!((plan->needs.output_mask >> o) & 1u)) continue;
        const std::size_t ko = static_cast<std::size_t>(plan->operand_param[static_cast<std::size_t>(o)]);
        if (detail::has_repeated_elements(layout, o))
            throw ShapeError(kernel_prefix(kernel) + param_label(sig, ko) +
                             " is a broadcast view (some of its elements stand for several): it cannot be written");
        char *olo, *ohi;
        detail::byte_range(views[static_cast<std::size_t>(o)], olo, ohi);
        for (int p = 0; p < operands; ++p) {
            if (p == o) continue;
            char *plo, *phi;
            detail::byte_range(views[static_cast<std::size_t>(p)], plo, phi);
            if (!(plo < ohi && olo < phi)) continue;
            const std::size_t kp = static_cast<std::size_t>(plan->operand_param[static_cast<std::size_t>(p)]);
            if ((plan->needs.output_mask >> p) & 1u)
                throw ShapeError(kernel_prefix(kernel) + param_label(sig, std::min(ko, kp)) + " and " +
                                 param_label(sig, std::max(ko, kp)) + " overlap in memory");
            // The same elements in the same order: each is read before it is written. Any other
            // view of the output's memory (shifted, reversed...) is read from a copy.
            if (!detail::same_elements(layout, o, p)) must_copy[kp] = copies = true;
        }
    }
    if (copies) {
        // The copies are kernel calls themselves (they reuse this thread's layout buffer).
        for (std::size_t k = 0; k < nin; ++k)
            if (must_copy[k]) made.set(k, kernels::elementwise::copy_kernel()({args[k].array()}, CallOptions{stream, -1})[0]);
        lay_out(true);
    }

    const std::int64_t n = layout.size;
    if (n > 0) {
        detail::simplify(layout, !plan->uses_index && !sig.has_raw, plan->first_output_operand);
    }
    if (n > 0 && on_host) {
        std::size_t slot = 0;
        write_args(buffers.args, plan->args, plan->bound, args, np, [&](std::size_t) { return layout.data[slot++]; },
                   [&](std::size_t k) { return array_of(k); }, [&](std::size_t k) { return kernel_prefix(kernel) + param_label(sig, k); });
        const long long n_value = n;
        std::memcpy(buffers.args + plan->args.n_offset, &n_value, sizeof n_value);
        host::run_elementwise_on_host(plan->host, buffers.args, layout, n);
    } else if (n > 0) {
        // The tiled variant is written for blocks of kThreads: with another block size, its layouts
        // take the rows or strided variant.
        const bool default_block = options.block_size == 0 || options.block_size == static_cast<int>(kThreads);
        detail::VariantNeeds needs = plan->needs;
        needs.has_tiled = needs.has_tiled && default_block;
        const detail::VariantChoice choice = operands == 0 ? detail::VariantChoice{detail::Variant::strided, n > INT_MAX}
                                                           : detail::choose_variant(layout, needs);
        if (choice.variant == detail::Variant::strided && layout.ndim > detail::kMaxKernelDims)
            throw ShapeError(kernel_prefix(kernel) + "the arrays need " + std::to_string(layout.ndim) +
                             " dimensions even after merging; kjit's strided kernels take at most " +
                             std::to_string(detail::kMaxKernelDims));

        // The argument struct.
        unsigned char* a = buffers.args;
        std::size_t slot = 0;
        write_args(a, plan->args, plan->bound, args, np, [&](std::size_t) { return layout.data[slot++]; },
                   [&](std::size_t k) { return array_of(k); }, [&](std::size_t k) { return kernel_prefix(kernel) + param_label(sig, k); });
        const long long n_value = n;
        std::memcpy(a + plan->args.n_offset, &n_value, sizeof n_value);

        CUfunction f = nullptr;
        std::int64_t items = n;
        const ElementwiseVariants& m = plan->module;
        switch (choice.variant) {
            case detail::Variant::contiguous:
                f = m.function(choice.index64 ? ElementwiseEntry::contiguous64 : ElementwiseEntry::contiguous32);
                items = ((n + m.vector_width - 1) / m.vector_width + m.unroll - 1) / m.unroll;
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
        if (choice.variant != detail::Variant::contiguous && choice.variant != detail::Variant::small) {
            // kjit::Layout<A>: int ndim; long long shape[16]; long long strides[A][16].
            unsigned char* l = buffers.layout;
            const int ndim = layout.ndim;
            std::memcpy(l, &ndim, sizeof ndim);
            std::memcpy(l + 8, layout.shape, sizeof(std::int64_t) * static_cast<std::size_t>(ndim));
            for (int s = 0; s < layout.operands; ++s)
                std::memcpy(l + 8 + 16 * 8 + static_cast<std::size_t>(s) * 16 * 8, layout.strides[s],
                            sizeof(std::int64_t) * static_cast<std::size_t>(ndim));
        }
        void* params[] = {buffers.args, buffers.layout};
        detail::Driver& d = detail::driver_on(ordinal);
        const unsigned threads = block_threads(kernel, options.block_size, f, ordinal);
        // The small variant has no loop: one thread per element, whatever caps the others' grids.
        const unsigned grid = choice.variant == detail::Variant::small
                                  ? static_cast<unsigned>((n + threads - 1) / threads)
                                  : grid_for(items, threads, plan->sm_count, choice.variant == detail::Variant::tiled);
        KJIT_CU_CHECK(d.cuLaunchKernel(f, grid, 1, 1, threads, 1, 1, 0, stream.handle(), params,
                                       nullptr));
    }

    // Device memory used here is freed in order on this stream.
    for (std::size_t k = 0; k < np; ++k) {
        const Array* arr = k < count && !args[k].is_array() ? nullptr : array_of(k);
        if (arr != nullptr && arr->buffer()->kind() == Buffer::Kind::device_pool) arr->buffer()->record_stream(stream);
    }
    if (outputs != nullptr) {
        outputs->clear();
        for (std::size_t k = nin; k < np; ++k) outputs->push_back(*array_of(k));
    }
}

}  // namespace kjit::jit::kernels

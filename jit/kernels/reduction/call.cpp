// One call of a reduction kernel through the shared stages (jit/kernels/call.hpp): its shape rule
// (the inputs broadcast, reduced over axes or segments), every overlapping input copied, and the
// strategy of runtime/detail/reduce_layout launched as templates/reduction.cuh describes.
#include <algorithm>
#include <array>
#include <bitset>
#include <climits>
#include <cstddef>
#include <cstring>
#include <map>

#include "jit/frontend/params.hpp"
#include "jit/host/host_call.hpp"
#include "jit/host/host_reduction.hpp"
#include "jit/kernels/elementwise/copy.hpp"
#include "jit/kernels/call.hpp"
#include "jit/kernels/reduction/calls.hpp"
#include "jit/kernels/workspaces.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/capture.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/reduce_layout.hpp"

namespace kjit::jit::kernels {

using namespace frontend;

namespace {

constexpr unsigned kThreads = 256;       // every strategy but rows_block
constexpr unsigned kBlockThreads = 512;  // rows_block: one block per output
constexpr int kMaxInputs = detail::kMaxCallOperands;
constexpr int kMaxOutputs = detail::kMaxCallOperands;
// Resident blocks of kThreads per SM on the GPUs kjit targets (2048 threads per SM).
constexpr std::int64_t kBlocksPerSm = 8;

std::unique_ptr<ReductionPlan> make_plan(const ReductionKernel& kernel, const CallSite& site, std::span<const KernelArg> args,
                                         const Target& target) {
    const std::vector<ArgumentKind> kinds = argument_kinds(args);
    auto plan = std::make_unique<ReductionPlan>();
    plan->bound = bind_call(site.sig, kernel.name(), kinds.data(), kinds.size());
    for (std::size_t k = static_cast<std::size_t>(site.sig.inputs); k < site.sig.params.size(); ++k)
        if (k < args.size() && !args[k].is_array()) throw TypeError(site.where(k) + " must be an array, not a scalar");
    const std::vector<detail::ArgField> fields = arg_fields(site.sig, plan->bound);
    for (std::size_t k = 0; k < site.sig.params.size(); ++k)
        if (fields[k] == detail::ArgField::pointer && !site.sig.params[k].is_output) plan->operand_param.push_back(static_cast<int>(k));
    if (static_cast<int>(plan->operand_param.size()) > kMaxInputs || site.sig.outputs > kMaxOutputs)
        throw TypeError(site.prefix() + "kjit reduces at most " + std::to_string(kMaxInputs) + " array inputs into at most " +
                        std::to_string(kMaxOutputs) + " outputs");
    plan->args = args_layout_for(site, fields, plan->bound.param_types);
    // The code: compiled for the CPU by the host back end (which also gives the module's facts),
    // or the GPU module (each strategy's group loaded when first launched).
    if (target.host) {
        plan->host = host::compile_reduction_on_host(kernel, plan->bound, plan->args, plan->module.has_identity, plan->module.reduce_itemsize);
        return plan;
    }
    plan->module = load_reduction(kernel, plan->bound.types, ModuleVariant{plan->bound.scalar, plan->bound.storage}, target.ordinal);
    plan->sm_count = kjit::detail::device_attributes(target.ordinal).sm_count;
    return plan;
}

std::string axes_text(const std::vector<int>& axes) {
    std::string s = "(";
    for (std::size_t k = 0; k < axes.size(); ++k) s += (k ? ", " : "") + std::to_string(axes[k]);
    return s + (axes.size() == 1 ? ",)" : ")");
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The array inputs broadcast together into `in`: the shape being reduced.
void broadcast_inputs(const CallSite& site, const ReductionPlan& plan, const Operands& operands, detail::CallLayout& in) {
    const int ni = static_cast<int>(plan.operand_param.size());
    std::array<detail::OperandView, kMaxInputs> views;
    for (int s = 0; s < ni; ++s)
        views[static_cast<std::size_t>(s)] = operand_view(*operands.array(static_cast<std::size_t>(plan.operand_param[static_cast<std::size_t>(s)])));
    if (detail::broadcast_operands(views.data(), ni, in)) return;
    std::string shapes;
    for (const int p : plan.operand_param) {
        const std::size_t k = static_cast<std::size_t>(p);
        shapes += (shapes.empty() ? "" : ", ") + site.sig.params[k].name + " " + shape_to_string(operands.array(k)->shape());
    }
    throw ShapeError(site.prefix() + "the inputs' shapes do not broadcast together: " + shapes);
}

// What a call reduces: the axes (sorted) and the outputs' shape; for a segmented reduction, the
// offsets as contiguous int64 on the call's device.
struct ReduceShape {
    std::vector<int> axes;
    Shape out_shape;
    Array offsets;
    bool offsets_made = false;
};

ReduceShape reduce_shape(const CallSite& site, const ReductionModule& m, const Target& target, const ReduceOptions& options,
                         const detail::CallLayout& in, const Array* segment_offsets) {
    ReduceShape r;
    const Shape shape(in.shape, in.shape + in.ndim);
    if (segment_offsets == nullptr) {
        try {
            r.axes = detail::normalize_axes(options.axis ? *options.axis : std::vector<int>{}, in.ndim);
            if (options.axis && options.axis->empty()) r.axes.clear();
        } catch (const ShapeError& e) {
            throw ShapeError(site.prefix() + e.what() + " (the inputs' shape is " + shape_to_string(shape) + ")");
        }
        r.out_shape = detail::reduction_output_shape(shape, r.axes, options.keepdims);
        return r;
    }
    // A segmented reduction: output s reduces elements offsets[s] .. offsets[s + 1] - 1.
    if (options.axis || options.keepdims)
        throw ShapeError(site.prefix() + "a segmented reduction takes no axis or keepdims: the offsets say what each output reduces");
    if (in.ndim != 1)
        throw ShapeError(site.prefix() + "a segmented reduction takes 1-D inputs, not the shape " + shape_to_string(shape));
    if (!m.has_identity)
        throw Error(site.prefix() + "a segmented reduction needs an identity (a segment may be empty), and this one has none");
    const Array& o = *segment_offsets;
    if (!o.valid() || !(o.device() == target.device))
        throw Error(site.prefix() + "the inputs are on " + target.device.to_string() + ", so the offsets must be too" +
                    (o.valid() ? " (they are on " + o.device().to_string() + ")" : std::string()));
    if (o.ndim() != 1 || o.size() < 1 || !o.dtype().is_integer())
        throw ShapeError(site.prefix() + "the offsets must be a 1-D integer array of (segments + 1) elements, not " +
                         std::string(o.dtype().name()) + " " + shape_to_string(o.shape()));
    r.offsets = o;
    if (!(o.dtype() == DType::int64) || !o.is_c_contiguous()) {
        r.offsets = kernels::elementwise::pack(o, DType::int64, target.stream);
        r.offsets_made = true;
    }
    r.axes = {0};
    r.out_shape = {o.size() - 1};
    return r;
}

// The iteration: kept dimensions (one output each) first, reduced ones last.
detail::ReducePlan iteration(const CallSite& site, const ReductionPlan& plan, const Operands& operands, const detail::CallLayout& in,
                             const ReduceShape& r, bool keepdims, bool segmented) {
    const std::size_t np = site.sig.params.size(), nin = static_cast<std::size_t>(site.sig.inputs);
    const int ni = static_cast<int>(plan.operand_param.size());
    std::vector<Strides> in_strides(static_cast<std::size_t>(ni)), out_strides;
    for (int s = 0; s < ni; ++s) in_strides[static_cast<std::size_t>(s)].assign(in.strides[s], in.strides[s] + in.ndim);
    for (std::size_t k = nin; k < np; ++k) {
        const Array& o = *operands.array(k);
        Strides st;
        for (int d = 0, od = 0; d < in.ndim; ++d) {
            const bool reduced = std::binary_search(r.axes.begin(), r.axes.end(), d);
            if (!reduced) st.push_back(o.strides()[static_cast<std::size_t>(od)]);
            if (!reduced || keepdims) ++od;
        }
        out_strides.push_back(std::move(st));
    }
    if (!segmented) return detail::plan_reduction(Shape(in.shape, in.shape + in.ndim), in_strides, out_strides, r.axes, plan.sm_count);
    // One kept dimension (the segments, each finding its start in the offsets) and one reduced
    // dimension (the inputs' elements).
    detail::ReducePlan rp;
    rp.kept_ndim = rp.reduced_ndim = 1;
    rp.kept_size = r.out_shape[0];
    rp.reduced_size = in.shape[0];
    rp.shape = {rp.kept_size, rp.reduced_size};
    for (const Strides& st : in_strides) rp.in_strides.push_back({0, st[0]});
    for (std::size_t k = nin; k < np; ++k) rp.out_strides.push_back({operands.array(k)->strides()[0]});
    // Long segments on average: a block each; else a warp each.
    rp.strategy = rp.reduced_size / std::max<std::int64_t>(1, rp.kept_size) >= 4096 ? detail::ReduceStrategy::segments_block
                                                                                   : detail::ReduceStrategy::segments_warp;
    return rp;
}

// The bins strategy (templates/reduction.cuh): the elements into the groups group_of names, a block
// per part of the elements, then a thread per group over the blocks' values. call_reduction has
// checked that the groups' values fit (bins_warps >= 1).
void launch_bins(const ReductionModule& m, const Target& target, std::int64_t sm_count, const detail::ReducePlan& rp, void* args_struct,
                 void* layout, const Array& offsets, const Array& group_of) {
    const std::int64_t groups = rp.kept_size, n = rp.reduced_size;
    const int warps = bins_warps(m.reduce_itemsize, groups);
    const unsigned threads = 32u * static_cast<unsigned>(warps);
    const std::size_t shared = static_cast<std::size_t>(warps) * static_cast<std::size_t>(groups) * m.reduce_itemsize;
    // As many blocks as stay resident (shared memory and threads allow; Hopper and Ampere give an
    // SM at least 160 KB), each with at least 4 rounds of 32 elements per warp.
    const std::int64_t resident = std::clamp<std::int64_t>(static_cast<std::int64_t>(160 * 1024 / shared), 1, 2048 / threads);
    const unsigned blocks = static_cast<unsigned>(std::clamp<std::int64_t>(ceil_div(n, threads * 4), 1, std::max<std::int64_t>(1, sm_count) * resident));
    void* ws = scratch_memory(target.ordinal, target.stream, Scratch::reduce_split,
                              bins_workspace_bytes(m.reduce_itemsize, blocks, static_cast<std::size_t>(groups)));
    const ReductionEntries e = m.entries(ReductionEntryGroup::bins, true);
    void* group_data = group_of.data();
    void* offsets_data = offsets.data();
    void* bins[] = {args_struct, layout, &group_data, &offsets_data, &ws};
    launch(target, e.main, blocks, 1, threads, bins, static_cast<unsigned>(shared));
    int block_count = static_cast<int>(blocks);
    void* finish[] = {args_struct, layout, &group_data, &offsets_data, &ws, &block_count};
    launch(target, e.finish, static_cast<unsigned>(std::max<std::int64_t>(1, ceil_div(groups, kThreads))), 1, kThreads, finish);
}

// The GPU launches of a planned reduction whose argument struct is packed: kjit::ReduceLayout, the
// strategy's grid and workspace, its entry points.
void launch_on_gpu(const ReductionPlan& plan, const Target& target, const detail::ReducePlan& rp, LaunchBuffers& buffers,
                   const Array& offsets, const Array* group_of) {
    const ReductionModule& m = plan.module;
    const int in_slots = std::max(1, m.array_inputs);
    // The kernel's ReduceLayout<in_slots, outputs> is a prefix of the buffer's (launch_layout.cuh);
    // strides beyond each row's dimensions, and the input row of a kernel without array inputs, are 0.
    auto& l = buffers.layout.reduction;
    const std::size_t rows = static_cast<std::size_t>(in_slots) + rp.out_strides.size();
    using Head = kjit::ReduceLayout<1, 1>;  // every ReduceLayout has its strides at the same offset
    std::memset(&l, 0, offsetof(Head, strides) + rows * sizeof(l.strides[0]));
    l.kept_ndim = rp.kept_ndim;
    l.reduced_ndim = rp.reduced_ndim;
    l.kept_size = rp.kept_size;
    l.reduced_size = rp.reduced_size;
    std::copy(rp.shape.begin(), rp.shape.end(), l.shape);
    for (std::size_t s = 0; s < rp.in_strides.size(); ++s) std::copy(rp.in_strides[s].begin(), rp.in_strides[s].end(), l.strides[s]);
    for (std::size_t o = 0; o < rp.out_strides.size(); ++o)
        std::copy(rp.out_strides[o].begin(), rp.out_strides[o].end(), l.strides[static_cast<std::size_t>(in_slots) + o]);
    if (group_of != nullptr) return launch_bins(m, target, plan.sm_count, rp, buffers.args, &l, offsets, *group_of);

    // The grid. Sizes depend only on the shapes and the GPU, so the order of the reduction (and
    // so its bits) is the same on every run.
    const std::int64_t sms = std::max(1, plan.sm_count), kept_size = rp.kept_size, reduced_size = rp.reduced_size;
    unsigned blocks = 1, threads = kThreads, chunks = 1;
    switch (rp.strategy) {
        case detail::ReduceStrategy::small: threads = static_cast<unsigned>(detail::kSmallReduceThreads); break;
        case detail::ReduceStrategy::full:
            blocks = static_cast<unsigned>(std::clamp<std::int64_t>(ceil_div(ceil_div(reduced_size, m.vector_width), kThreads), 1, sms * kBlocksPerSm));
            break;
        case detail::ReduceStrategy::segments_warp:
        case detail::ReduceStrategy::rows_warp:
            // A warp per row up to four times the resident warps: measured faster on the H200 than
            // resident warps looping over rows (sum axis=1 of 16384², docs/perf-log.md).
            blocks = static_cast<unsigned>(std::clamp<std::int64_t>(ceil_div(kept_size, kThreads / 32), 1, 4 * sms * kBlocksPerSm));
            break;
        case detail::ReduceStrategy::segments_block:
        case detail::ReduceStrategy::rows_block:
            threads = kBlockThreads;
            blocks = static_cast<unsigned>(std::clamp<std::int64_t>(kept_size, 1, std::max<std::int64_t>(1, sms * kBlocksPerSm / 2)));
            break;
        case detail::ReduceStrategy::columns:
            blocks = static_cast<unsigned>(std::clamp<std::int64_t>(ceil_div(kept_size, kThreads), 1, sms * kBlocksPerSm));
            break;
        case detail::ReduceStrategy::columns_split: {
            blocks = static_cast<unsigned>(ceil_div(kept_size, kThreads));
            // Enough chunks to fill the GPU twice over, each of at least 32 reduced elements.
            const std::int64_t want = ceil_div(2 * sms * kBlocksPerSm, blocks);
            chunks = static_cast<unsigned>(std::clamp<std::int64_t>(want, 1, std::min<std::int64_t>(65535, ceil_div(reduced_size, 32))));
            break;
        }
    }
    const std::int64_t grid_threads = static_cast<std::int64_t>(blocks) * threads * chunks;

    // 32-bit index arithmetic when every offset and count allows it.
    bool fits32 = kept_size + grid_threads < INT_MAX && reduced_size + grid_threads < INT_MAX &&
                  static_cast<std::int64_t>(chunks) * kept_size < INT_MAX;
    const std::vector<std::int64_t> kept_shape(rp.shape.begin(), rp.shape.begin() + rp.kept_ndim);
    for (const auto& st : rp.in_strides) fits32 = fits32 && detail::element_reach(rp.shape, st) < INT_MAX;
    for (const auto& st : rp.out_strides) fits32 = fits32 && detail::element_reach(kept_shape, st) < INT_MAX;

    switch (rp.strategy) {
        case detail::ReduceStrategy::full: {
            void* ws = scratch_memory(target.ordinal, target.stream, Scratch::reduce_full,
                                        full_workspace_bytes(m.reduce_itemsize, m.has_identity, static_cast<std::size_t>(blocks)));
            void* params[] = {buffers.args, &l, &ws};
            return launch(target, m.entries(ReductionEntryGroup::full, !fits32).main, blocks, 1, threads, params);
        }
        case detail::ReduceStrategy::small: {
            void* params[] = {buffers.args, &l};
            return launch(target, m.entries(ReductionEntryGroup::small, false).main, 1, 1, threads, params);
        }
        case detail::ReduceStrategy::rows_warp:
        case detail::ReduceStrategy::rows_block:
        case detail::ReduceStrategy::columns: {
            const ReductionEntryGroup g = rp.strategy == detail::ReduceStrategy::rows_warp    ? ReductionEntryGroup::rows_warp
                                          : rp.strategy == detail::ReduceStrategy::rows_block ? ReductionEntryGroup::rows_block
                                                                                              : ReductionEntryGroup::columns;
            void* params[] = {buffers.args, &l};
            return launch(target, m.entries(g, !fits32).main, blocks, 1, threads, params);
        }
        case detail::ReduceStrategy::segments_warp:
        case detail::ReduceStrategy::segments_block: {
            const ReductionEntryGroup g = rp.strategy == detail::ReduceStrategy::segments_warp ? ReductionEntryGroup::segments_warp
                                                                                                : ReductionEntryGroup::segments_block;
            void* offsets_data = offsets.data();
            void* params[] = {buffers.args, &l, &offsets_data};
            return launch(target, m.entries(g, !fits32).main, blocks, 1, threads, params);
        }
        case detail::ReduceStrategy::columns_split: {
            void* ws = scratch_memory(target.ordinal, target.stream, Scratch::reduce_split,
                                        columns_split_workspace_bytes(m.reduce_itemsize, m.has_identity, static_cast<std::size_t>(chunks),
                                                                      static_cast<std::size_t>(kept_size)));
            const ReductionEntries split_entries = m.entries(ReductionEntryGroup::columns_split, !fits32);
            void* split[] = {buffers.args, &l, &ws};
            launch(target, split_entries.main, blocks, chunks, threads, split);
            int chunk_count = static_cast<int>(chunks);
            void* finish_params[] = {buffers.args, &l, &ws, &chunk_count};
            return launch(target, split_entries.finish, blocks, 1, threads, finish_params);
        }
    }
}

}  // namespace

namespace {
// The plan of a call with `args` (outputs optional), made now when new, and whether it runs on the
// host.
std::pair<const ReductionPlan*, bool> plan_of(const ReductionKernel& kernel, ReductionCalls& calls, std::span<const KernelArg> args,
                                              const ReduceOptions& options) {
    const CallSignature& sig = calls.signature([&] { return call_signature(kernel.in_params(), kernel.out_params()); });
    const CallSite site{"reduction", kernel.name(), sig};
    validate_arity(site, args.size(), true);
    const Target target = locate(site, args, options.stream);
    return {&plan_for(calls, target, args, sig.params.size(), [&] { return make_plan(kernel, site, args, target); }), target.host};
}
}  // namespace

void prepare_reduction(const ReductionKernel& kernel, ReductionCalls& calls, std::span<const KernelArg> args,
                       const ReduceOptions& options) {
    const auto [plan, host] = plan_of(kernel, calls, args, options);
    if (!host) plan->module.loader->load_all();
}

std::size_t reduction_value_bytes(const ReductionKernel& kernel, ReductionCalls& calls, std::span<const KernelArg> args,
                                  const ReduceOptions& options) {
    return plan_of(kernel, calls, args, options).first->module.reduce_itemsize;
}

void call_reduction(const ReductionKernel& kernel, ReductionCalls& calls, std::span<const KernelArg> args,
                    const ReduceOptions& options, std::vector<Array>* outputs, const Array* segment_offsets, const Array* group_of) {
    const CallSignature& sig = calls.signature([&] { return call_signature(kernel.in_params(), kernel.out_params()); });
    const CallSite site{"reduction", kernel.name(), sig};
    const std::size_t np = sig.params.size(), nin = static_cast<std::size_t>(sig.inputs), count = args.size();
    validate_arity(site, count, outputs != nullptr);
    if (options.size != -1 || options.block_size != 0)
        throw Error(site.prefix() + "a reduction takes its sizes from its arrays and chooses its own blocks: CallOptions::" +
                    (options.size != -1 ? "size" : "block_size") + " must be left unset (it is " +
                    std::to_string(options.size != -1 ? options.size : options.block_size) + ")");
    const Target target = locate(site, args, options.stream);
    const ReductionPlan& plan = plan_for(calls, target, args, np, [&] { return make_plan(kernel, site, args, target); });
    if (plan.operand_param.empty())
        throw ShapeError(site.prefix() + "needs an input passed as an array (not raw, not a scalar): it gives the shape reduced");

    Operands operands(args);
    LaunchBuffers& buffers = launch_buffers();
    detail::CallLayout& in = buffers.inputs;
    broadcast_inputs(site, plan, operands, in);
    const ReduceShape r = reduce_shape(site, plan.module, target, options, in, segment_offsets);
    if (group_of != nullptr) {
        if (target.host) throw Error(site.prefix() + "grouping by index runs on GPUs only");
        const Array& g = *group_of;
        if (!g.valid() || !(g.device() == target.device) || g.dtype() != DType::int32 || g.shape() != Shape{in.shape[0]} ||
            !g.is_c_contiguous())
            throw ShapeError(site.prefix() + "the group of each element must be a C-contiguous int32 array of shape (" +
                             std::to_string(in.shape[0]) + ",) on " + target.device.to_string());
        if (bins_warps(plan.module.reduce_itemsize, r.out_shape[0]) < 1)
            throw Error(site.prefix() + std::to_string(r.out_shape[0]) + " groups of " + std::to_string(plan.module.reduce_itemsize) +
                        "-byte values do not fit a block's shared memory");
    }

    // The outputs: given (exactly the reduced shape) or allocated.
    for (std::size_t k = nin; k < np; ++k) {
        if (k >= count) {
            operands.set(k, Array::empty(r.out_shape, plan.bound.param_types[k], target.device, target.stream));
        } else if (const Array& o = args[k].array(); o.shape() != r.out_shape) {
            throw ShapeError(site.where(k) + " has shape " + shape_to_string(o.shape()) + " but reducing " +
                             shape_to_string(Shape(in.shape, in.shape + in.ndim)) + " over axes " + axes_text(r.axes) +
                             (options.keepdims ? " with keepdims" : "") + " gives " + shape_to_string(r.out_shape));
        }
    }

    // Every input sharing memory with an output is read from a copy: a reduction reads its inputs
    // while other blocks already write outputs. Raw inputs are not copied: the kernel indexes them
    // as it likes, and a user who passes an output's memory as a raw input asks for exactly that.
    std::array<int, 2 * kMaxCallParams> arrays;
    std::size_t n_arrays = 0;
    for (const int p : plan.operand_param) arrays[n_arrays++] = p;
    for (std::size_t k = nin; k < np; ++k) arrays[n_arrays++] = static_cast<int>(k);
    const std::bitset<kMaxCallParams> copies =
        inputs_to_copy(site, operands, std::span<const int>(arrays.data(), n_arrays), nin, [](std::size_t, std::size_t) { return false; });
    if (copies.any()) {
        for (std::size_t k = 0; k < nin; ++k)
            if (copies[k]) operands.set(k, kernels::elementwise::pack(args[k].array(), args[k].array().dtype(), target.stream));
        broadcast_inputs(site, plan, operands, in);
    }

    const detail::ReducePlan rp = iteration(site, plan, operands, in, r, options.keepdims, segment_offsets != nullptr);
    if (rp.kept_size > 0) {
        if (rp.reduced_size == 0 && !plan.module.has_identity)
            throw Error(site.prefix() + "reducing no elements (shape " + shape_to_string(Shape(in.shape, in.shape + in.ndim)) +
                        " over axes " + axes_text(r.axes) + ") needs an identity, and this reduction has none");
        std::size_t slot = 0;
        pack_args(site, buffers.args, plan.args, plan.bound, args, operands,
                  [&](std::size_t k) -> const void* { return k < nin ? in.data[slot++] : operands.array(k)->data(); });
        if (target.host)
            host::run_reduction_on_host({&plan.host, plan.module.reduce_itemsize, buffers.args, &rp,
                                         segment_offsets != nullptr ? static_cast<const std::int64_t*>(r.offsets.data()) : nullptr});
        else
            launch_on_gpu(plan, target, rp, buffers, r.offsets, group_of);
    }
    if (r.offsets_made) r.offsets.record_stream(target.stream);
    operands.finish(target, nin, np, outputs);
}

}  // namespace kjit::jit::kernels

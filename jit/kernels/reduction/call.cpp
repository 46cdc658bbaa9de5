// One call of a reduction kernel: find (or make) the plan for these argument dtypes, broadcast the
// inputs, plan the iteration (runtime/detail/reduce_layout), fill the argument struct and
// kjit::ReduceLayout, launch the strategy's entry point (templates/reduction.cuh).
#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>

#include "jit/frontend/params.hpp"
#include "jit/host/host_call.hpp"
#include "jit/host/host_reduction.hpp"
#include "jit/kernels/elementwise/copy.hpp"
#include "jit/kernels/made_arrays.hpp"
#include "jit/kernels/reduction/calls.hpp"
#include "kjit/error.hpp"
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
// Resident blocks of kThreads per SM on the GPUs kjit targets (2048 threads per SM);
// KJIT_TUNE_RED_BLOCKS_PER_SM overrides it, for measurements (read once).
std::int64_t blocks_per_sm() {
    static const std::int64_t value = [] {
        const char* e = std::getenv("KJIT_TUNE_RED_BLOCKS_PER_SM");
        const long long v = e != nullptr ? std::atoll(e) : 0;
        return v > 0 ? static_cast<std::int64_t>(v) : std::int64_t{8};
    }();
    return value;
}

// kjit::ReduceLayout<I, O>: int kept_ndim, reduced_ndim; long long kept_size, reduced_size,
// shape[16], in_strides[I][16], out_strides[O][16].
constexpr std::size_t kLayoutShape = 24;
constexpr std::size_t kLayoutInStrides = kLayoutShape + 16 * 8;
constexpr std::size_t layout_bytes(int inputs, int outputs) {
    return kLayoutInStrides + static_cast<std::size_t>(inputs + outputs) * 16 * 8;
}

struct LaunchBuffers {
    alignas(16) unsigned char args[kMaxArgumentBytes];
    alignas(16) unsigned char layout[layout_bytes(kMaxInputs, kMaxOutputs)];
    detail::CallLayout inputs;
};
LaunchBuffers& launch_buffers() {
    thread_local std::unique_ptr<LaunchBuffers> buffers;
    if (!buffers) buffers = std::make_unique_for_overwrite<LaunchBuffers>();  // each call writes what it passes
    return *buffers;
}

// Device scratch memory of this thread, per device, stream and use, kept between calls and grown
// when a call needs more. Launches on one stream run in order, so they may share it; another
// stream or thread gets its own. The `full` workspace starts zeroed: every launch leaves its
// counter zero again.
class Workspaces {
public:
    enum Use { full = 0, split = 1 };
    void* get(int device, const Stream& stream, Use use, std::size_t bytes) {
        Slot& s = slots_[{device, stream.handle(), use}];
        if (!s.buffer || s.bytes < bytes) {
            const std::size_t size = std::max<std::size_t>(bytes, s.bytes * 2);
            s.buffer = Buffer::allocate_device(size, stream);
            s.bytes = size;
            if (use == full)
                KJIT_CU_CHECK(detail::driver_on(device).cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(s.buffer->data()), 0, 16,
                                                                        stream.handle()));
        }
        s.buffer->record_stream(stream);
        return s.buffer->data();
    }

private:
    struct Slot {
        std::shared_ptr<Buffer> buffer;
        std::size_t bytes = 0;
    };
    std::map<std::tuple<int, CUstream, int>, Slot> slots_;
};
Workspaces& workspaces() {
    thread_local Workspaces w;
    return w;
}

std::string kernel_prefix(const ReductionKernel& k) { return "reduction '" + k.name() + "': "; }

std::string param_label(const CallSignature& sig, std::size_t k) {
    const Param& p = sig.params[k];
    return std::string(p.is_output ? "output" : "input") + " '" + p.name + "'";
}

std::unique_ptr<ReductionPlan> make_plan(const ReductionKernel& kernel, const CallSignature& sig, std::span<const KernelArg> args,
                                         int ordinal) {
    const std::vector<ArgumentKind> kinds = argument_kinds(args);
    auto plan = std::make_unique<ReductionPlan>();
    plan->bound = bind_call(sig, kernel.name(), kinds.data(), kinds.size());
    for (std::size_t k = static_cast<std::size_t>(sig.inputs); k < sig.params.size(); ++k)
        if (k < args.size() && !args[k].is_array())
            throw TypeError(kernel_prefix(kernel) + param_label(sig, k) + " must be an array, not a scalar");
    const bool on_host = ordinal == host::kHostOrdinal;
    if (!on_host) plan->module = load_reduction(kernel, plan->bound.types, ModuleVariant{plan->bound.scalar, plan->bound.storage}, ordinal);
    const std::vector<detail::ArgField> fields = arg_fields(sig, plan->bound);
    for (std::size_t k = 0; k < sig.params.size(); ++k)
        if (fields[k] == detail::ArgField::pointer && !sig.params[k].is_output) plan->operand_param.push_back(static_cast<int>(k));
    if (static_cast<int>(plan->operand_param.size()) > kMaxInputs || sig.outputs > kMaxOutputs)
        throw TypeError(kernel_prefix(kernel) + "kjit reduces at most " + std::to_string(kMaxInputs) + " array inputs into at most " +
                        std::to_string(kMaxOutputs) + " outputs");
    plan->args = detail::args_layout(fields, plan->bound.param_types);
    if (plan->args.size > sizeof(LaunchBuffers::args))
        throw TypeError(kernel_prefix(kernel) + "its arguments take " + std::to_string(plan->args.size) +
                        " bytes, more than kjit passes to a kernel (" + std::to_string(sizeof(LaunchBuffers::args)) + ")");
    if (on_host) {
        plan->host = host::compile_reduction_on_host(kernel, plan->bound, plan->args, plan->module.has_identity, plan->module.reduce_itemsize);
        return plan;
    }
    plan->sm_count = kjit::detail::device_attributes(ordinal).sm_count;
    return plan;
}

std::string axes_text(const std::vector<int>& axes) {
    std::string s = "(";
    for (std::size_t k = 0; k < axes.size(); ++k) s += (k ? ", " : "") + std::to_string(axes[k]);
    return s + (axes.size() == 1 ? ",)" : ")");
}

// The largest offset (in elements, either sign) a stride vector reaches over `shape`.
std::int64_t reach(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& strides) {
    std::int64_t pos = 0, neg = 0;
    for (std::size_t d = 0; d < strides.size(); ++d) {
        const std::int64_t span = (shape[d] - 1) * strides[d];
        (span > 0 ? pos : neg) += span;
    }
    return std::max(pos, -neg);
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

void call_reduction(const ReductionKernel& kernel, ReductionCalls& calls, std::span<const KernelArg> args,
                    const ReduceOptions& options, std::vector<Array>* outputs, const Array* segment_offsets) {
    const CallSignature& sig = calls.signature([&] { return call_signature(kernel.in_params(), kernel.out_params()); });
    const std::size_t np = sig.params.size(), count = args.size();
    const std::size_t nin = static_cast<std::size_t>(sig.inputs);
    if (np > static_cast<std::size_t>(kMaxCallParams))
        throw TypeError(kernel_prefix(kernel) + "kjit calls kernels of at most " + std::to_string(kMaxCallParams) + " parameters");
    if (count != nin && count != np)
        throw TypeError(kernel_prefix(kernel) + "takes " + std::to_string(nin) + " inputs (then optionally its " +
                        std::to_string(sig.outputs) + " outputs), got " + std::to_string(count) + " arguments");
    if (outputs == nullptr && count != np)
        throw TypeError(kernel_prefix(kernel) + "launch() needs every output; call the kernel to have them allocated");
    if (options.size != -1 || options.block_size != 0)
        throw Error(kernel_prefix(kernel) + "a reduction takes its sizes from its arrays and chooses its own blocks: CallOptions::" +
                    (options.size != -1 ? "size" : "block_size") + " must be left unset (it is " +
                    std::to_string(options.size != -1 ? options.size : options.block_size) + ")");
    // Host arrays run on the CPU (jit/host/host_reduction.hpp): same binding, axes and checks, other code.
    const bool on_host = host::is_host_call(args, [&](std::size_t k) { return param_label(sig, k); });
    const int ordinal = on_host ? host::kHostOrdinal
                                : call_device(args, options.stream, [&](std::size_t k) { return kernel_prefix(kernel) + param_label(sig, k); });
    const CallKey key = call_key(args, np, ordinal);
    const ReductionPlan* plan = calls.find(key);
    if (plan == nullptr && on_host) {
        std::lock_guard lock(host::compile_mutex());
        plan = calls.find(key);
        if (plan == nullptr) plan = calls.insert(key, make_plan(kernel, sig, args, ordinal));
    }
    if (plan == nullptr) plan = calls.insert(key, make_plan(kernel, sig, args, ordinal));
    const ReductionModule& m = plan->module;
    const Device device = on_host ? Device::cpu() : Device::cuda(ordinal);
    const Stream stream = on_host ? Stream::current() : (options.stream ? *options.stream : Stream::current()).for_device(device);

    // The array inputs, broadcast together: the shape being reduced.
    MadeArrays made;  // copies of inputs, outputs allocated here
    auto array_of = [&](std::size_t k) -> const Array& {
        const Array* a = made.find(k);
        return a != nullptr ? *a : args[k].array();
    };
    const int ni = static_cast<int>(plan->operand_param.size());
    if (ni == 0) throw ShapeError(kernel_prefix(kernel) + "needs an input passed as an array (not raw, not a scalar): it gives the shape reduced");
    LaunchBuffers& buffers = launch_buffers();
    detail::CallLayout& in = buffers.inputs;
    auto broadcast_inputs = [&] {
        std::array<detail::OperandView, kMaxInputs> views;
        for (int s = 0; s < ni; ++s) views[static_cast<std::size_t>(s)] = operand_view(array_of(static_cast<std::size_t>(plan->operand_param[static_cast<std::size_t>(s)])));
        if (!detail::broadcast_operands(views.data(), ni, in)) {
            std::string shapes;
            for (int s = 0; s < ni; ++s) {
                const std::size_t k = static_cast<std::size_t>(plan->operand_param[static_cast<std::size_t>(s)]);
                shapes += (shapes.empty() ? "" : ", ") + sig.params[k].name + " " + shape_to_string(array_of(k).shape());
            }
            throw ShapeError(kernel_prefix(kernel) + "the inputs' shapes do not broadcast together: " + shapes);
        }
    };
    broadcast_inputs();
    const Shape shape(in.shape, in.shape + in.ndim);
    std::vector<int> axes;
    Shape out_shape;
    // A segmented reduction: output s reduces elements offsets[s] .. offsets[s + 1] - 1.
    Array offsets;
    bool offsets_made = false;
    if (segment_offsets != nullptr) {
        if (options.axis || options.keepdims)
            throw ShapeError(kernel_prefix(kernel) + "a segmented reduction takes no axis or keepdims: the offsets say what each output reduces");
        if (in.ndim != 1)
            throw ShapeError(kernel_prefix(kernel) + "a segmented reduction takes 1-D inputs, not the shape " + shape_to_string(shape));
        if (!m.has_identity)
            throw Error(kernel_prefix(kernel) + "a segmented reduction needs an identity (a segment may be empty), and this one has none");
        const Array& o = *segment_offsets;
        if (on_host && (!o.valid() || !o.is_host()))
            throw Error(kernel_prefix(kernel) + "the inputs are in host memory, so the offsets must be too" +
                        (o.valid() ? " (they are on " + o.device().to_string() + ")" : std::string()));
        if (!on_host && (!o.valid() || o.is_host() || o.device().ordinal() != ordinal))
            throw Error(kernel_prefix(kernel) + "the offsets must be a device array on cuda:" + std::to_string(ordinal));
        if (o.ndim() != 1 || o.size() < 1 || !o.dtype().is_integer())
            throw ShapeError(kernel_prefix(kernel) + "the offsets must be a 1-D integer array of (segments + 1) elements, not " +
                             std::string(o.dtype().name()) + " " + shape_to_string(o.shape()));
        offsets = o;
        if (!(o.dtype() == DType::int64) || !o.is_c_contiguous()) {
            offsets = kernels::elementwise::pack(o, DType::int64, stream);
            offsets_made = true;
        }
        axes = {0};
        out_shape = {o.size() - 1};
    } else {
        try {
            axes = detail::normalize_axes(options.axis ? *options.axis : std::vector<int>{}, in.ndim);
            if (options.axis && options.axis->empty()) axes.clear();
        } catch (const ShapeError& e) {
            throw ShapeError(kernel_prefix(kernel) + e.what() + " (the inputs' shape is " + shape_to_string(shape) + ")");
        }
        out_shape = detail::reduction_output_shape(shape, axes, options.keepdims);
    }

    // The outputs: given (exactly the reduced shape) or allocated.
    for (std::size_t k = nin; k < np; ++k) {
        if (k < count) {
            const Array& o = args[k].array();
            if (o.shape() != out_shape)
                throw ShapeError(kernel_prefix(kernel) + param_label(sig, k) + " has shape " + shape_to_string(o.shape()) +
                                 " but reducing " + shape_to_string(shape) + " over axes " + axes_text(axes) +
                                 (options.keepdims ? " with keepdims" : "") + " gives " + shape_to_string(out_shape));
        } else {
            made.set(k, Array::empty(out_shape, plan->bound.param_types[k], device, stream));
        }
    }

    // Outputs are written while inputs are still read: an input sharing memory with an output is
    // read from a copy; outputs must be distinct and must not repeat elements.
    auto range_of = [](const Array& a, char*& lo, char*& hi) { detail::byte_range(operand_view(a), lo, hi); };
    bool copied = false;
    for (std::size_t o = nin; o < np; ++o) {
        const Array& out = array_of(o);
        if (out.size() == 0) continue;
        for (int d = 0; d < out.ndim(); ++d)
            if (out.strides()[static_cast<std::size_t>(d)] == 0 && out.shape()[static_cast<std::size_t>(d)] > 1)
                throw ShapeError(kernel_prefix(kernel) + param_label(sig, o) +
                                 " is a broadcast view (some of its elements stand for several): it cannot be written");
        char *olo, *ohi;
        range_of(out, olo, ohi);
        for (std::size_t p = 0; p < np; ++p) {
            if (p == o || sig.params[p].raw || (p < nin && plan->bound.scalar[p])) continue;
            const Array& other = array_of(p);
            if (other.size() == 0) continue;
            char *plo, *phi;
            range_of(other, plo, phi);
            if (!(plo < ohi && olo < phi)) continue;
            if (p >= nin) {
                if (p > o)
                    throw ShapeError(kernel_prefix(kernel) + param_label(sig, o) + " and " + param_label(sig, p) + " overlap in memory");
                continue;
            }
            made.set(p, kernels::elementwise::pack(args[p].array(), args[p].array().dtype(), stream));
            copied = true;
        }
    }
    // Raw inputs overlapping an output are not copied: the kernel indexes them as it likes, and a
    // user who passes an output's memory as a raw input asks for exactly that.
    if (copied) broadcast_inputs();

    // The iteration: kept dimensions (one output each) first, reduced ones last.
    std::vector<Strides> in_strides(static_cast<std::size_t>(ni)), out_strides;
    for (int s = 0; s < ni; ++s) in_strides[static_cast<std::size_t>(s)].assign(in.strides[s], in.strides[s] + in.ndim);
    for (std::size_t k = nin; k < np; ++k) {
        const Array& o = array_of(k);
        Strides st;
        for (int d = 0, od = 0; d < in.ndim; ++d) {
            const bool reduced = std::binary_search(axes.begin(), axes.end(), d);
            if (!reduced) st.push_back(o.strides()[static_cast<std::size_t>(od)]);
            if (!reduced || options.keepdims) ++od;
        }
        out_strides.push_back(std::move(st));
    }
    detail::ReducePlan rp;
    if (segment_offsets != nullptr) {
        // One kept dimension (the segments, each finding its start in the offsets) and one
        // reduced dimension (the inputs' elements).
        rp.kept_ndim = rp.reduced_ndim = 1;
        rp.kept_size = out_shape[0];
        rp.reduced_size = shape[0];
        rp.shape = {rp.kept_size, rp.reduced_size};
        for (const Strides& st : in_strides) rp.in_strides.push_back({0, st[0]});
        for (std::size_t k = nin; k < np; ++k) rp.out_strides.push_back({array_of(k).strides()[0]});
        // Long segments on average: a block each; else a warp each.
        rp.strategy = rp.reduced_size / std::max<std::int64_t>(1, rp.kept_size) >= 4096 ? detail::ReduceStrategy::segments_block
                                                                                       : detail::ReduceStrategy::segments_warp;
    } else {
        rp = detail::plan_reduction(shape, in_strides, out_strides, axes, plan->sm_count);
    }

    const auto finish = [&] {
        for (std::size_t k = 0; k < np; ++k) {
            if (k < count && !args[k].is_array()) continue;
            if (k >= count || made.find(k) != nullptr) array_of(k).record_stream(stream);
            else if (args[k].array().buffer()->kind() == Buffer::Kind::device_pool) args[k].array().buffer()->record_stream(stream);
        }
        if (offsets_made) offsets.record_stream(stream);
        if (outputs != nullptr) {
            outputs->clear();
            for (std::size_t k = nin; k < np; ++k) outputs->push_back(array_of(k));
        }
    };
    if (rp.kept_size == 0) return finish();
    if (rp.reduced_size == 0 && !m.has_identity)
        throw Error(kernel_prefix(kernel) + "reducing no elements (shape " + shape_to_string(shape) + " over axes " + axes_text(axes) +
                    ") needs an identity, and this reduction has none");

    // The argument struct.
    std::size_t slot = 0;
    write_args(buffers.args, plan->args, plan->bound, args, np,
               [&](std::size_t k) -> const void* { return k < nin ? in.data[slot++] : array_of(k).data(); },
               [&](std::size_t k) { return &args[k].array(); }, [&](std::size_t k) { return kernel_prefix(kernel) + param_label(sig, k); });

    if (on_host) {
        const host::HostReduction run{&plan->host, m.reduce_itemsize, buffers.args, &rp,
                                      segment_offsets != nullptr ? static_cast<const std::int64_t*>(offsets.data()) : nullptr};
        host::run_reduction_on_host(run);
        return finish();
    }

    // kjit::ReduceLayout.
    const int in_slots = std::max(1, m.array_inputs);
    const int no = static_cast<int>(np - nin);
    unsigned char* l = buffers.layout;
    std::memset(l, 0, layout_bytes(in_slots, no));
    const int kept_ndim = rp.kept_ndim, reduced_ndim = rp.reduced_ndim;
    const long long kept_size = rp.kept_size, reduced_size = rp.reduced_size;
    std::memcpy(l, &kept_ndim, 4);
    std::memcpy(l + 4, &reduced_ndim, 4);
    std::memcpy(l + 8, &kept_size, 8);
    std::memcpy(l + 16, &reduced_size, 8);
    std::memcpy(l + kLayoutShape, rp.shape.data(), rp.shape.size() * 8);
    for (int s = 0; s < ni; ++s)
        std::memcpy(l + kLayoutInStrides + static_cast<std::size_t>(s) * 128, rp.in_strides[static_cast<std::size_t>(s)].data(),
                    rp.in_strides[static_cast<std::size_t>(s)].size() * 8);
    for (int o = 0; o < no; ++o)
        std::memcpy(l + kLayoutInStrides + static_cast<std::size_t>(in_slots + o) * 128,
                    rp.out_strides[static_cast<std::size_t>(o)].data(), rp.out_strides[static_cast<std::size_t>(o)].size() * 8);

    // The grid. Sizes depend only on the shapes and the GPU, so the order of the reduction (and
    // so its bits) is the same on every run.
    const std::int64_t sms = std::max(1, plan->sm_count);
    unsigned blocks = 1, threads = kThreads, chunks = 1;
    switch (rp.strategy) {
        case detail::ReduceStrategy::full:
            blocks = static_cast<unsigned>(std::clamp<std::int64_t>(ceil_div(ceil_div(reduced_size, m.vector_width), kThreads), 1, sms * blocks_per_sm()));
            break;
        case detail::ReduceStrategy::segments_warp:
        case detail::ReduceStrategy::rows_warp:
            // A warp per row up to four times the resident warps: measured faster on the H200 than
            // resident warps looping over rows (sum axis=1 of 16384², docs/perf-log.md).
            blocks = static_cast<unsigned>(std::clamp<std::int64_t>(ceil_div(kept_size, kThreads / 32), 1, 4 * sms * blocks_per_sm()));
            break;
        case detail::ReduceStrategy::segments_block:
        case detail::ReduceStrategy::rows_block:
            threads = kBlockThreads;
            blocks = static_cast<unsigned>(std::clamp<std::int64_t>(kept_size, 1, std::max<std::int64_t>(1, sms * blocks_per_sm() / 2)));
            break;
        case detail::ReduceStrategy::columns:
            blocks = static_cast<unsigned>(std::clamp<std::int64_t>(ceil_div(kept_size, kThreads), 1, sms * blocks_per_sm()));
            break;
        case detail::ReduceStrategy::columns_split: {
            blocks = static_cast<unsigned>(ceil_div(kept_size, kThreads));
            // Enough chunks to fill the GPU twice over, each of at least 32 reduced elements.
            const std::int64_t want = ceil_div(2 * sms * blocks_per_sm(), blocks);
            chunks = static_cast<unsigned>(std::clamp<std::int64_t>(want, 1, std::min<std::int64_t>(65535, ceil_div(reduced_size, 32))));
            break;
        }
    }
    const std::int64_t grid_threads = static_cast<std::int64_t>(blocks) * threads * chunks;

    // 32-bit index arithmetic when every offset and count allows it.
    bool fits32 = kept_size + grid_threads < INT_MAX && reduced_size + grid_threads < INT_MAX &&
                  static_cast<std::int64_t>(chunks) * kept_size < INT_MAX;
    const std::vector<std::int64_t> kept_shape(rp.shape.begin(), rp.shape.begin() + kept_ndim);
    for (const auto& st : rp.in_strides) fits32 = fits32 && reach(rp.shape, st) < INT_MAX;
    for (const auto& st : rp.out_strides) fits32 = fits32 && reach(kept_shape, st) < INT_MAX;

    detail::Driver& d = detail::driver_on(ordinal);
    const CUstream cs = stream.handle();
    switch (rp.strategy) {
        case detail::ReduceStrategy::full: {
            void* ws = workspaces().get(ordinal, stream, Workspaces::full,
                                        full_workspace_bytes(m.reduce_itemsize, m.has_identity, static_cast<std::size_t>(blocks)));
            void* params[] = {buffers.args, l, &ws};
            KJIT_CU_CHECK(d.cuLaunchKernel(m.entries(ReductionEntryGroup::full, !fits32).main, blocks, 1, 1, threads, 1, 1, 0, cs,
                                           params, nullptr));
            break;
        }
        case detail::ReduceStrategy::rows_warp:
        case detail::ReduceStrategy::rows_block:
        case detail::ReduceStrategy::columns: {
            const ReductionEntryGroup g = rp.strategy == detail::ReduceStrategy::rows_warp    ? ReductionEntryGroup::rows_warp
                                          : rp.strategy == detail::ReduceStrategy::rows_block ? ReductionEntryGroup::rows_block
                                                                                              : ReductionEntryGroup::columns;
            const CUfunction f = m.entries(g, !fits32).main;
            void* params[] = {buffers.args, l};
            KJIT_CU_CHECK(d.cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, cs, params, nullptr));
            break;
        }
        case detail::ReduceStrategy::segments_warp:
        case detail::ReduceStrategy::segments_block: {
            const CUfunction f = m.entries(rp.strategy == detail::ReduceStrategy::segments_warp ? ReductionEntryGroup::segments_warp
                                                                                                : ReductionEntryGroup::segments_block,
                                           !fits32).main;
            void* offsets_data = offsets.data();
            void* params[] = {buffers.args, l, &offsets_data};
            KJIT_CU_CHECK(d.cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, cs, params, nullptr));
            break;
        }
        case detail::ReduceStrategy::columns_split: {
            void* ws = workspaces().get(ordinal, stream, Workspaces::split,
                                        columns_split_workspace_bytes(m.reduce_itemsize, m.has_identity, static_cast<std::size_t>(chunks),
                                                                      static_cast<std::size_t>(kept_size)));
            const ReductionEntries split_entries = m.entries(ReductionEntryGroup::columns_split, !fits32);
            void* split[] = {buffers.args, l, &ws};
            KJIT_CU_CHECK(d.cuLaunchKernel(split_entries.main, blocks, chunks, 1, threads, 1, 1, 0, cs, split, nullptr));
            int chunk_count = static_cast<int>(chunks);
            void* finish_params[] = {buffers.args, l, &ws, &chunk_count};
            KJIT_CU_CHECK(d.cuLaunchKernel(split_entries.finish, blocks, 1, 1, threads, 1, 1, 0, cs, finish_params, nullptr));
            break;
        }
    }
    finish();
}

}  // namespace kjit::jit::kernels

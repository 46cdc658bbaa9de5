// One call of a scan kernel through the shared stages (jit/kernels/call.hpp): its shape rule (one
// axis, or the input flattened; segments of a 1-D input), an input overlapping the output read
// from a copy unless it is the output itself, then templates/scan.cuh's one pass on the GPU or
// jit/host/host_scan.hpp's loop on the CPU.
#include <algorithm>
#include <climits>
#include <cstring>

#include "jit/frontend/call_binding.hpp"
#include "jit/host/host_reduction.hpp"
#include "jit/host/host_scan.hpp"
#include "jit/kernels/call.hpp"
#include "jit/kernels/elementwise/copy.hpp"
#include "jit/kernels/scan/scans.hpp"
#include "jit/kernels/workspaces.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/reduce_layout.hpp"

namespace kjit::jit::kernels {

using namespace frontend;

namespace {

// templates/scan.cuh's scan_threads, scan_flags_bytes, scan_workspace_bytes and scan_zeroed_bytes.
constexpr std::int64_t kScanThreads = 256;
std::int64_t scan_flags_bytes(std::int64_t tiles) { return (16 + 4 * tiles + 15) / 16 * 16; }
std::int64_t scan_slot_bytes(std::int64_t value_size) { return (value_size + 1 + 15) / 16 * 16; }
std::int64_t scan_workspace_bytes(std::int64_t tiles, std::int64_t value_size) {
    return scan_flags_bytes(tiles) + 2 * scan_slot_bytes(value_size) * tiles;
}
std::int64_t scan_zeroed_bytes(std::int64_t tiles, std::int64_t value_size) {
    return scan_flags_bytes(tiles) + (value_size <= 14 ? scan_slot_bytes(value_size) * tiles : 0);
}

std::unique_ptr<ScanPlan> make_plan(const ScanKernel& kernel, const CallSite& site, std::span<const KernelArg> args,
                                    const Target& target) {
    const ReductionKernel as_reduction = scan_as_reduction(kernel);  // the scan's own rules first
    const std::vector<ArgumentKind> kinds = argument_kinds(args);
    auto plan = std::make_unique<ScanPlan>();
    plan->bound = bind_call(site.sig, kernel.name(), kinds.data(), kinds.size());
    const std::vector<detail::ArgField> fields = arg_fields(site.sig, plan->bound);
    plan->args = args_layout_for(site, fields, plan->bound.param_types);
    if (target.host) {
        bool has_identity = false;
        plan->host = host::compile_reduction_on_host(as_reduction, plan->bound, plan->args, has_identity, plan->value_itemsize);
        return plan;
    }
    ScanModuleSource m = scan_module_source(kernel, plan->bound.types, ModuleVariant{plan->bound.scalar, plan->bound.storage});
    plan->value_itemsize = m.program.value_itemsize;
    plan->items = m.program.items;
    plan->loader = std::make_shared<LazyEntryPoints>(std::move(m.program.program), std::move(m.program.generated.entry_lines),
                                                     std::move(m.groups), target.ordinal);
    return plan;
}

host::ScanRows iteration(const Array& in, const Array& out, int axis) {
    host::ScanRows s;
    if (axis < 0) {  // flattened: both 1-D by now
        s.length = in.size();
        s.in_step = in.ndim() == 0 ? 0 : in.strides()[0];
        s.out_step = out.strides()[0];
        return s;
    }
    for (int d = 0; d < in.ndim(); ++d) {
        const auto k = static_cast<std::size_t>(d);
        if (d == axis) continue;
        s.kept_shape.push_back(in.shape()[k]);
        s.in_kept.push_back(in.strides()[k]);
        s.out_kept.push_back(out.strides()[k]);
    }
    const auto a = static_cast<std::size_t>(axis);
    s.length = in.shape()[a];
    s.in_step = in.strides()[a];
    s.out_step = out.strides()[a];
    return s;
}

void launch_on_gpu(const ScanPlan& plan, const Target& target, const host::ScanRows& s, LaunchBuffers& buffers, bool exclusive,
                   const Array* offsets) {
    const std::int64_t rows = s.rows(), tile = kScanThreads * plan.items;
    const std::int64_t tiles = rows * ((s.length + tile - 1) / tile);
    if (tiles > INT_MAX)
        throw Error("scan: " + std::to_string(tiles) + " tiles of " + std::to_string(tile) + " elements are more than one launch takes");
    auto& l = buffers.layout.reduction;  // its ReduceLayout<1, 1> prefix: row 0 the input, row 1 the output
    using Head = kjit::ReduceLayout<1, 1>;
    std::memset(&l, 0, offsetof(Head, strides) + 2 * sizeof(l.strides[0]));
    const int kept = static_cast<int>(s.kept_shape.size());
    l.kept_ndim = kept;
    l.reduced_ndim = 1;
    l.kept_size = rows;
    l.reduced_size = s.length;
    for (int d = 0; d < kept; ++d) {
        const auto k = static_cast<std::size_t>(d);
        l.shape[d] = s.kept_shape[k];
        l.strides[0][d] = s.in_kept[k];
        l.strides[1][d] = s.out_kept[k];
    }
    l.shape[kept] = s.length;
    l.strides[0][kept] = s.in_step;
    l.strides[1][kept] = s.out_step;

    Shape all = s.kept_shape;
    all.push_back(s.length);
    Strides in_all = s.in_kept, out_all = s.out_kept;
    in_all.push_back(s.in_step);
    out_all.push_back(s.out_step);
    const bool fits32 = s.length + tile < INT_MAX && rows < INT_MAX && detail::element_reach(all, in_all) < INT_MAX && detail::element_reach(all, out_all) < INT_MAX;

    const auto ws_bytes = static_cast<std::size_t>(scan_workspace_bytes(tiles, static_cast<std::int64_t>(plan.value_itemsize)));
    void* ws = scratch_memory(target.ordinal, target.stream, Scratch::scan, ws_bytes,
                              "this scan");
    KJIT_CU_CHECK(detail::driver_on(target.ordinal).cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(ws), 0,
                                                                    static_cast<std::size_t>(scan_zeroed_bytes(tiles, static_cast<std::int64_t>(plan.value_itemsize))),
                                                                    target.stream.handle()));
    const long long* heads = offsets != nullptr ? static_cast<const long long*>(offsets->data()) : nullptr;
    long long head_count = offsets != nullptr ? offsets->size() : 0;
    int exclusive_flag = exclusive ? 1 : 0;
    void* params[] = {buffers.args, &l, &ws, &heads, &head_count, &exclusive_flag};
    const CUfunction f = plan.loader->group(scan_group(offsets != nullptr, !fits32))[0];
    launch(target, f, static_cast<unsigned>(tiles), 1, static_cast<unsigned>(kScanThreads), params);
}

}  // namespace

void prepare_scan(const ScanKernel& kernel, ScanCalls& calls, std::span<const KernelArg> args, const ScanOptions& options) {
    const CallSignature& sig = calls.signature([&] { return call_signature(kernel.in_params(), kernel.out_params()); });
    const CallSite site{"scan", kernel.name(), sig};
    if (sig.params.size() != 2 || sig.inputs != 1) (void)scan_as_reduction(kernel);
    validate_arity(site, args.size(), true);
    const Target target = locate(site, args, options.stream);
    const ScanPlan& plan = plan_for(calls, target, args, 2, [&] { return make_plan(kernel, site, args, target); });
    if (!target.host) plan.loader->load_all();
}

void call_scan(const ScanKernel& kernel, ScanCalls& calls, std::span<const KernelArg> args, const ScanOptions& options,
               std::vector<Array>* outputs, const Array* offsets) {
    const CallSignature& sig = calls.signature([&] { return call_signature(kernel.in_params(), kernel.out_params()); });
    const CallSite site{"scan", kernel.name(), sig};
    if (sig.params.size() != 2 || sig.inputs != 1) (void)scan_as_reduction(kernel);  // says what is wrong
    validate_arity(site, args.size(), outputs != nullptr);
    if (options.size != -1 || options.block_size != 0)
        throw Error(site.prefix() + "a scan takes its sizes from its arrays and chooses its own blocks: CallOptions::" +
                    (options.size != -1 ? "size" : "block_size") + " must be left unset");
    for (std::size_t k = 0; k < args.size(); ++k)
        if (!args[k].is_array()) throw TypeError(site.where(k) + " must be an array, not a scalar");
    const Target target = locate(site, args, options.stream);
    const ScanPlan& plan = plan_for(calls, target, args, 2, [&] { return make_plan(kernel, site, args, target); });

    Operands operands(args);
    Array in = args[0].array();
    // The axis, or -1 for the input flattened (C order): then both sides are 1-D.
    int axis = -1;
    if (offsets != nullptr) {
        if (options.axis) throw ShapeError(site.prefix() + "a segmented scan takes no axis: it scans its 1-D input");
        if (in.ndim() != 1)
            throw ShapeError(site.prefix() + "a segmented scan takes a 1-D input, not the shape " + shape_to_string(in.shape()));
    } else if (options.axis) {
        const int a = *options.axis;
        if (a < -in.ndim() || a >= in.ndim())
            throw ShapeError(site.prefix() + "axis " + std::to_string(a) + " is out of range for the input's shape " +
                             shape_to_string(in.shape()));
        axis = a < 0 ? a + in.ndim() : a;
    }
    if (axis < 0 && in.ndim() != 1) {
        if (in.is_c_contiguous()) in = in.reshape({in.size()});
        else in = elementwise::pack(in, in.dtype(), target.stream).reshape({in.size()});
    }
    const Shape out_shape = in.shape();

    if (args.size() < 2) {
        operands.set(1, Array::empty(out_shape, plan.bound.param_types[1], target.device, target.stream));
    } else if (const Array& o = args[1].array(); o.shape() != out_shape) {
        throw ShapeError(site.where(1) + " has shape " + shape_to_string(o.shape()) + " but scanning " +
                         shape_to_string(args[0].array().shape()) +
                         (axis < 0 ? std::string(" flattened") : " along axis " + std::to_string(axis)) + " gives " +
                         shape_to_string(out_shape));
    }
    Array out = *operands.array(1);
    if (out.size() > 0) {
        check_writable(site, 1, out);
        // Each tile reads all of its elements before it writes any, and writes only its own: an
        // output that is the input itself (same elements, same order) is scanned in place; any
        // other overlap reads the input from a copy.
        char *ilo, *ihi, *olo, *ohi;
        detail::byte_range(operand_view(in), ilo, ihi);
        detail::byte_range(operand_view(out), olo, ohi);
        const bool same = in.data() == out.data() && in.itemsize() == out.itemsize() && in.strides() == out.strides();
        if (ilo < ohi && olo < ihi && !same) in = elementwise::pack(in, in.dtype(), target.stream);
    }
    operands.set(0, in);
    const host::ScanRows s = iteration(in, out, axis);

    Array heads;
    if (offsets != nullptr) {
        const Array& o = *offsets;
        if (!o.valid() || !(o.device() == target.device))
            throw Error(site.prefix() + "the input is on " + target.device.to_string() + ", so the offsets must be too" +
                        (o.valid() ? " (they are on " + o.device().to_string() + ")" : std::string()));
        if (o.ndim() != 1 || !o.dtype().is_integer())
            throw ShapeError(site.prefix() + "the offsets must be a 1-D integer array, not " + std::string(o.dtype().name()) + " " +
                             shape_to_string(o.shape()));
        heads = o.dtype() == DType::int64 && o.is_c_contiguous() ? o : elementwise::pack(o, DType::int64, target.stream);
    }

    if (s.rows() > 0 && s.length > 0) {
        LaunchBuffers& buffers = launch_buffers();
        pack_args(site, buffers.args, plan.args, plan.bound, args, operands,
                  [&](std::size_t k) -> const void* { return operands.array(k)->data(); });
        if (target.host) {
            host::HostScan h;
            h.code = &plan.host;
            h.value_size = plan.value_itemsize;
            h.args = buffers.args;
            h.rows = &s;
            h.exclusive = options.exclusive;
            if (offsets != nullptr) {
                h.heads = static_cast<const std::int64_t*>(heads.data());
                h.head_count = heads.size();
            }
            host::run_scan_on_host(h);
        } else {
            launch_on_gpu(plan, target, s, buffers, options.exclusive, offsets != nullptr ? &heads : nullptr);
        }
    }
    if (heads.valid()) heads.record_stream(target.stream);
    operands.finish(target, 1, 2, outputs);
}

}  // namespace kjit::jit::kernels

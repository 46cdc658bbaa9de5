#include "jit/kernels/call.hpp"

#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit::jit::kernels {

std::string CallSite::prefix() const { return std::string(what) + " '" + name + "': "; }

std::string CallSite::label(std::size_t k) const {
    const frontend::Param& p = sig.params[k];
    return std::string(p.is_output ? "output" : "input") + " '" + p.name + "'";
}

void validate_arity(const CallSite& site, std::size_t count, bool outputs_wanted) {
    const std::size_t params = site.sig.params.size(), inputs = static_cast<std::size_t>(site.sig.inputs);
    if (params > static_cast<std::size_t>(kMaxCallParams))
        throw TypeError(site.prefix() + "kjit calls kernels of at most " + std::to_string(kMaxCallParams) + " parameters");
    if (count != inputs && count != params)
        throw TypeError(site.prefix() + "takes " + std::to_string(inputs) + " inputs" +
                        (site.sig.outputs ? " (then optionally its " + std::to_string(site.sig.outputs) + " outputs)" : std::string()) +
                        ", got " + std::to_string(count) + " arguments");
    if (!outputs_wanted && count != params)
        throw TypeError(site.prefix() + "launch() needs every output; call the kernel to have them allocated");
}

Target locate(const CallSite& site, std::span<const KernelArg> args, const std::optional<Stream>& stream) {
    Target t;
    t.host = host::is_host_call(args, [&](std::size_t k) { return site.label(k); });
    if (t.host) {
        t.ordinal = host::kHostOrdinal;
        t.stream = Stream::current();
        return t;
    }
    t.ordinal = call_device(args, stream, [&](std::size_t k) { return site.where(k); });
    t.device = Device::cuda(t.ordinal);
    t.stream = (stream ? *stream : Stream::current()).for_device(t.device);
    return t;
}

void Operands::finish(const Target& target, std::size_t first_output, std::size_t params, std::vector<Array>* outputs) const {
    for (std::size_t k = 0; k < params; ++k) {
        const Array* a = array(k);
        if (a != nullptr && a->buffer()->kind() == Buffer::Kind::device_pool) a->buffer()->record_stream(target.stream);
    }
    if (outputs == nullptr) return;
    outputs->clear();
    for (std::size_t k = first_output; k < params; ++k) outputs->push_back(*array(k));
}

void check_writable(const CallSite& site, std::size_t k, const Array& output) {
    for (int d = 0; d < output.ndim(); ++d)
        if (output.strides()[static_cast<std::size_t>(d)] == 0 && output.shape()[static_cast<std::size_t>(d)] > 1)
            throw ShapeError(site.where(k) + " is a broadcast view (some of its elements stand for several): it cannot be written");
}

void throw_outputs_overlap(const CallSite& site, std::size_t a, std::size_t b) {
    throw ShapeError(site.prefix() + site.label(std::min(a, b)) + " and " + site.label(std::max(a, b)) + " overlap in memory");
}

LaunchBuffers& launch_buffers() {
    thread_local std::unique_ptr<LaunchBuffers> buffers;
    if (!buffers) buffers = std::make_unique_for_overwrite<LaunchBuffers>();
    return *buffers;
}

detail::ArgsLayout args_layout_for(const CallSite& site, const std::vector<detail::ArgField>& fields, const std::vector<DType>& types) {
    detail::ArgsLayout layout = detail::args_layout(fields, types);
    if (layout.size > sizeof(LaunchBuffers::args))
        throw TypeError(site.prefix() + "its arguments take " + std::to_string(layout.size) +
                        " bytes, more than kjit passes to a kernel (" + std::to_string(sizeof(LaunchBuffers::args)) + ")");
    return layout;
}

void launch(const Target& target, CUfunction f, unsigned grid_x, unsigned grid_y, unsigned block, void** params,
            unsigned shared_bytes) {
    KJIT_CU_CHECK(detail::driver_on(target.ordinal).cuLaunchKernel(f, grid_x, grid_y, 1, block, 1, 1, shared_bytes, target.stream.handle(),
                                                                   params, nullptr));
    detail::note_kernel_launch(f);
}

void note_call_for_capture(const CallSite& site, const detail::ArgsLayout& layout, const frontend::BoundCall& bound,
                           const unsigned char* args) {
    std::vector<detail::CapturedScalar> scalars;
    for (std::size_t k = 0; k < layout.slots.size() && k < site.sig.params.size(); ++k)
        if (layout.slots[k].field == detail::ArgField::value)
            scalars.push_back({site.sig.params[k].name, bound.param_types[k], layout.slots[k].offset});
    detail::note_captured_call(site.name, std::move(scalars), args, layout.size);
}

}  // namespace kjit::jit::kernels

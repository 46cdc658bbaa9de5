#include "jit/host/host_call.hpp"

#include "jit/host/backend_loader.hpp"
#include "jit/host/host_pool.hpp"
#include "jit/frontend/params.hpp"
#include "jit/frontend/parser.hpp"
#include "jit/frontend/preamble.hpp"
#include "jit/frontend/type_checker.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::host {

using namespace frontend;

bool is_host_call(std::span<const KernelArg> args, const std::function<std::string(std::size_t)>& name) {
    bool host = false, device = false;
    for (const KernelArg& a : args) {
        if (!a.is_array() || !a.array().valid()) continue;
        (a.array().is_host() ? host : device) = true;
    }
    if (host && device) {
        std::string where;
        for (std::size_t k = 0; k < args.size(); ++k) {
            if (!args[k].is_array() || !args[k].array().valid()) continue;
            where += (where.empty() ? "" : ", ") + name(k) + " is on " + args[k].array().device().to_string();
        }
        throw Error("a call runs either on the host or on one GPU, and its arrays are on both: " + where +
                    " (copy them to one place: array.to(kjit::Device::cpu()) or array.to(kjit::Device::cuda(0)))");
    }
    return host;
}

std::mutex& compile_mutex() {
    static std::mutex m;
    return m;
}

ElementwiseCode compile_elementwise_on_host(const ElementwiseKernel& kernel, const BoundCall& bound, const detail::ArgsLayout& args) {
    if (!kernel.options().preamble.empty())
        throw Error("kernel '" + kernel.name() + "' cannot run on host arrays: its preamble is raw CUDA, which only the GPU compiles");
    HostBackend& backend = host_backend();
    // The typed tree for this binding: parsed and checked as for code generation.
    KernelSources sources;
    sources.in.text = kernel.in_params();
    sources.out.text = kernel.out_params();
    sources.body.text = kernel.operation();
    std::vector<Param> params = parse_param_lists(sources.in, sources.out);
    check_binding(params, sources, bound.types);
    Body body = parse_body(sources.body);
    sources.loop_prep.text = kernel.options().loop_prep;
    sources.after_loop.text = kernel.options().after_loop;
    LoopHooks hooks{parse_body(sources.loop_prep), parse_body(sources.after_loop)};
    const CheckedKernel checked =
        check_kernel(std::move(params), body, sources, bound.types, outside_names({}, kernel.options().nvrtc_options), &hooks);
    ElementwiseRequest request;
    request.name = kernel.name();
    request.kernel = &checked;
    request.body = &body;
    request.hooks = &hooks;
    request.scalar = bound.scalar;
    request.storage = bound.storage;
    request.args = args;
    ElementwiseCode code = backend.compile_elementwise(request);
    code.uses_index = checked.uses_i;
    return code;
}

void run_elementwise_on_host(const ElementwiseCode& code, const unsigned char* args, const detail::CallLayout& layout, std::int64_t n) {
    bool contiguous = layout.ndim <= 1;
    for (int s = 0; s < layout.operands && contiguous; ++s)
        if (layout.ndim == 1 && layout.strides[s][0] != 1) contiguous = false;
    const ChunkFn fn = contiguous ? code.contiguous : code.strided;
    const std::int64_t chunks = (n + kChunkElements - 1) / kChunkElements;
    parallel_chunks(chunks, [&](std::int64_t c) {
        const std::int64_t begin = c * kChunkElements;
        fn(args, &layout, begin, std::min(n, begin + kChunkElements));
    });
}

}  // namespace kjit::jit::host

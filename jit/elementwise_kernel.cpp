#include "kjit/elementwise_kernel.hpp"

#include <cctype>
#include <set>

#include "jit/arch.hpp"
#include "jit/codegen.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "jit/params.hpp"
#include "jit/parser.hpp"
#include "jit/preamble.hpp"
#include "jit/type_checker.hpp"
#include "kjit/device.hpp"
#include "kjit/error.hpp"

namespace kjit {

struct ElementwiseKernel::Spec {
    std::string in, out, op, name;
    KernelOptions options;
};

namespace {

// A kernel's name prefixes the symbols of its module: a C identifier kjit does not reserve.
void check_kernel_name(const std::string& name) {
    const jit::SourceText src{"name", name};
    if (name.empty()) jit::fail_parse(src, {}, "a kernel needs a name");
    for (std::size_t k = 0; k < name.size(); ++k) {
        const unsigned char c = static_cast<unsigned char>(name[k]);
        if (!(std::isalnum(c) || c == '_') || (k == 0 && std::isdigit(c)))
            jit::fail_parse(src, {1, static_cast<int>(k) + 1, static_cast<std::uint32_t>(k)},
                            "a kernel name must be a C identifier (letters, digits and '_', not starting with a digit)");
    }
    if (name[0] == '_') jit::fail_parse(src, {}, "kernel names starting with '_' are reserved for kjit");
}

// The parsed and checked kernel for one binding (the tree carries the types).
struct Checked {
    jit::Body body;
    jit::CheckedKernel kernel;
};

Checked parse_and_check(const std::string& in, const std::string& out, const std::string& op, const std::string& name,
                        const KernelOptions& options, const TypeBinding& types, bool need_complete) {
    check_kernel_name(name);
    jit::KernelSources sources;
    sources.in.text = in;
    sources.out.text = out;
    sources.body.text = op;
    std::vector<jit::Param> params = jit::parse_param_lists(sources.in, sources.out);
    if (need_complete || !types.empty()) jit::check_binding(params, sources, types);
    Checked c;
    c.body = jit::parse_body(sources.body);
    c.kernel = jit::check_kernel(std::move(params), c.body, sources, types, jit::scan_preamble(options.preamble));
    return c;
}

}  // namespace

TypeBinding parse_type_binding(const std::string& text) {
    TypeBinding b;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(',', start);
        if (end == std::string::npos) end = text.size();
        std::string item = text.substr(start, end - start);
        start = end + 1;
        auto trim = [](std::string s) {
            while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
            while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
            return s;
        };
        item = trim(item);
        if (item.empty()) {
            if (end == text.size()) break;
            throw TypeError("type binding '" + text + "': empty item");
        }
        const std::size_t eq = item.find('=');
        if (eq == std::string::npos)
            throw TypeError("type binding item '" + item + "' must look like T=float32");
        const std::string ph = trim(item.substr(0, eq));
        if (!jit::is_placeholder_name(ph))
            throw TypeError("type binding item '" + item + "': '" + ph + "' is not a placeholder (one upper-case letter)");
        if (b.count(ph)) throw TypeError("type binding '" + text + "' gives '" + ph + "' twice");
        b[ph] = DType::parse(trim(item.substr(eq + 1)));
        if (end == text.size()) break;
    }
    return b;
}

ElementwiseKernel::ElementwiseKernel(std::string in_params, std::string out_params, std::string operation,
                                     std::string name, KernelOptions options)
    : spec_(std::make_shared<const Spec>(
          Spec{std::move(in_params), std::move(out_params), std::move(operation), std::move(name), std::move(options)})) {}

const std::string& ElementwiseKernel::name() const noexcept { return spec_->name; }
const std::string& ElementwiseKernel::in_params() const noexcept { return spec_->in; }
const std::string& ElementwiseKernel::out_params() const noexcept { return spec_->out; }
const std::string& ElementwiseKernel::operation() const noexcept { return spec_->op; }
const KernelOptions& ElementwiseKernel::options() const noexcept { return spec_->options; }

void ElementwiseKernel::check(const TypeBinding& types) const {
    parse_and_check(spec_->in, spec_->out, spec_->op, spec_->name, spec_->options, types, false);
}

std::vector<std::string> ElementwiseKernel::placeholders() const {
    const std::vector<jit::Param> params =
        jit::parse_param_lists(jit::SourceText{"in", spec_->in}, jit::SourceText{"out", spec_->out});
    std::set<std::string> names;
    for (const jit::Param& p : params)
        if (p.is_placeholder) names.insert(p.type.spelling);
    return {names.begin(), names.end()};
}

std::string ElementwiseKernel::source(const TypeBinding& types) const {
    const Checked c = parse_and_check(spec_->in, spec_->out, spec_->op, spec_->name, spec_->options, types, true);
    jit::ElementwiseModuleSpec m{spec_->name, spec_->in, spec_->out, spec_->options.preamble, {}};
    return jit::generate_elementwise(m, c.kernel, c.body, types).source;
}

KernelBinary ElementwiseKernel::compile(const TypeBinding& types, const std::string& arch) const {
    const Checked c = parse_and_check(spec_->in, spec_->out, spec_->op, spec_->name, spec_->options, types, true);
    jit::ElementwiseModuleSpec m{spec_->name, spec_->in, spec_->out, spec_->options.preamble, {}};
    const jit::GeneratedModule g = jit::generate_elementwise(m, c.kernel, c.body, types);

    jit::CompileRequest request;
    request.source = g.source;
    request.program_name = spec_->name + ".cu";
    if (!arch.empty()) {
        const std::vector<int> supported = jit::nvrtc_supported_archs();
        request.target = jit::clamp_arch(jit::parse_arch(arch, "arch"), supported, "argument");
    } else if (Device::count() > 0) {
        request.target = jit::select_arch(Device::current().properties());
    } else {
        request.target = jit::select_arch();
    }
    // Generated code uses no texture or device-runtime API: -minimal saves a third of the compile
    // time on the GPU host (docs/PERFORMANCE.md). A preamble is the user's CUDA, so it may.
    if (spec_->options.preamble.empty()) request.options.push_back("-minimal");
    for (const std::string& o : spec_->options.nvrtc_options) request.options.push_back(o);
    const jit::CompileResult r = jit::compile_cuda(request);

    KernelBinary b;
    b.arch = r.target.name();
    b.cubin = r.cubin;
    b.ptx = r.ptx;
    b.log = r.log;
    b.source = g.source;
    b.compile_ms = r.compile_ms;
    b.contiguous32 = g.contiguous32;
    b.contiguous64 = g.contiguous64;
    b.strided32 = g.strided32;
    b.strided64 = g.strided64;
    return b;
}

}  // namespace kjit

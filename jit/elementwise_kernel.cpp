#include "kjit/elementwise_kernel.hpp"

#include <cctype>
#include <set>

#include <ctime>

#include <nlohmann/json.hpp>

#include "cache/cache_key.hpp"
#include "cache/kernel_cache.hpp"
#include "jit/arch.hpp"
#include "jit/codegen.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "jit/params.hpp"
#include "jit/parser.hpp"
#include "jit/preamble.hpp"
#include "jit/type_checker.hpp"
#include "kjit/device.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/nvrtc.hpp"

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

namespace {

// The manifest entry for this kernel and one binding: what KJIT_CACHE_RECORD writes and
// `kjit precompile` reads back.
std::string spec_json(const ElementwiseKernel& k, const TypeBinding& types) {
    nlohmann::json e;
    e["kind"] = "elementwise";
    e["name"] = k.name();
    e["in"] = k.in_params();
    e["out"] = k.out_params();
    e["op"] = k.operation();
    if (!k.options().preamble.empty()) e["preamble"] = k.options().preamble;
    if (!k.options().nvrtc_options.empty()) e["options"] = k.options().nvrtc_options;
    nlohmann::json binding = nlohmann::json::object();
    for (const auto& [ph, t] : types) binding[ph] = std::string(t.name());
    e["types"] = nlohmann::json::array({binding});
    return e.dump();
}

std::string describe(const TypeBinding& types) {
    std::string s;
    for (const auto& [ph, t] : types) s += (s.empty() ? "" : ",") + ph + "=" + std::string(t.name());
    return s;
}

// The target: `arch` if given, else KJIT_ARCH, else the current GPU, else the default; fitted to
// what NVRTC supports when there is one (without NVRTC, as asked: only a cache can serve it).
jit::ArchTarget choose_target(const std::string& arch, bool have_nvrtc) {
    std::optional<int> device_cc;
    if (arch.empty() && Device::count() > 0) {
        const DeviceProperties p = Device::current().properties();
        device_cc = p.cc_major * 10 + p.cc_minor;
    }
    if (have_nvrtc) {
        const std::vector<int> supported = jit::nvrtc_supported_archs();
        if (!arch.empty()) return jit::clamp_arch(jit::parse_arch(arch, "arch"), supported, "argument");
        return jit::choose_arch(std::getenv("KJIT_ARCH"), device_cc, supported);
    }
    const char* env = std::getenv("KJIT_ARCH");
    jit::ArchSpec spec{device_cc.value_or(jit::default_compute_capability), false};
    std::string origin = device_cc ? "device" : "default";
    if (!arch.empty()) {
        spec = jit::parse_arch(arch, "arch");
        origin = "argument";
    } else if (env != nullptr && *env != '\0') {
        spec = jit::parse_arch(env, "KJIT_ARCH");
        origin = "KJIT_ARCH";
    }
    jit::ArchTarget t;
    t.requested = t.compiled = spec.compute_capability;
    t.ptx_only = spec.ptx_only;
    t.origin = origin;
    return t;
}

}  // namespace

KernelBinary ElementwiseKernel::compile(const TypeBinding& types, const std::string& arch) const {
    const Checked c = parse_and_check(spec_->in, spec_->out, spec_->op, spec_->name, spec_->options, types, true);
    jit::ElementwiseModuleSpec m{spec_->name, spec_->in, spec_->out, spec_->options.preamble, {}};
    const jit::GeneratedModule g = jit::generate_elementwise(m, c.kernel, c.body, types);

    std::string no_nvrtc;
    const bool have_nvrtc = detail::try_nvrtc(&no_nvrtc) != nullptr;
    jit::CompileRequest request;
    request.source = g.source;
    request.program_name = spec_->name + ".cu";
    request.target = choose_target(arch, have_nvrtc);
    // Generated code uses no texture or device-runtime API: -minimal saves a third of the compile
    // time on the GPU host (docs/PERFORMANCE.md). A preamble is the user's CUDA, so it may.
    if (spec_->options.preamble.empty()) request.options.push_back("-minimal");
    for (const std::string& o : spec_->options.nvrtc_options) request.options.push_back(o);

    const std::vector<std::string> options = jit::compile_options(request);
    const std::string target = request.target.name();
    const std::string spec = spec_json(*this, types);
    const std::string alias = cache::make_alias_key(g.source, options, target);
    const std::shared_ptr<cache::KernelCache> kernel_cache = cache::process_cache();
    std::shared_ptr<const cache::Entry> entry;
    double compile_ms = 0;
    std::string log;
    if (have_nvrtc) {
        cache::Request r;
        r.key = cache::make_key(g.source, options, target, jit::nvrtc_version_key());
        r.alias = alias;
        r.arch = target;
        r.spec_json = spec;
        r.compile = [&] {
            const jit::CompileResult result = jit::compile_cuda(request);
            compile_ms = result.compile_ms;
            log = result.log;
            cache::Entry e;
            e.key = r.key;
            e.meta.kernel_name = spec_->name;
            e.meta.types = describe(types);
            e.meta.arch = target;
            e.meta.nvrtc_version = jit::nvrtc_version_key();
            e.meta.created_unix = static_cast<std::int64_t>(std::time(nullptr));
            e.meta.lowered_names = result.lowered_names;
            e.meta.spec_json = spec;
            e.cubin = result.cubin;
            e.ptx = result.ptx;
            return e;
        };
        entry = kernel_cache->get(r);
    } else {
        entry = kernel_cache->find_alias(alias, spec, target);
        if (!entry)
            throw NoDeviceError("kernel '" + spec_->name + "' (" + describe(types) + ") for " + target +
                                " is in no kernel cache folder and it cannot be compiled: " + no_nvrtc);
    }

    KernelBinary b;
    b.arch = entry->meta.arch;
    b.cubin = entry->cubin;
    b.ptx = entry->ptx;
    b.source = g.source;
    b.compile_ms = compile_ms;
    b.log = log;
    b.contiguous32 = g.contiguous32;
    b.contiguous64 = g.contiguous64;
    b.strided32 = g.strided32;
    b.strided64 = g.strided64;
    return b;
}

}  // namespace kjit

#include "tools/cli/kernel_flags.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "jit/kernels/elementwise/manifest.hpp"
#include "jit/kernels/reduction/manifest.hpp"
#include "kjit/error.hpp"

namespace kjit::cli {
namespace {

// "@file" reads the text from a file; anything else is the text itself.
std::string text_or_file(const std::string& value, const char* flag) {
    if (value.empty() || value[0] != '@') return value;
    std::ifstream in(value.substr(1));
    if (!in) throw IoError(std::string(flag) + ": cannot read '" + value.substr(1) + "'");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

KernelRequest load_spec(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw IoError("cannot read spec '" + path + "'");
    nlohmann::json entry;
    try {
        entry = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw IoError("spec '" + path + "' is not valid JSON: " + e.what());
    }
    try {
        if (jit::kernels::is_reduction_manifest_entry(entry)) {
            jit::kernels::ManifestReduction m = jit::kernels::reduction_from_manifest_entry(entry);
            return KernelRequest{std::move(m.kernel), std::move(m.bindings)};
        }
        jit::kernels::ManifestKernel m = jit::kernels::kernel_from_manifest_entry(entry);
        return KernelRequest{std::move(m.kernel), std::move(m.bindings)};
    } catch (const CacheError& e) {
        throw Error("spec '" + path + "': " + e.what());
    }
}

// The kernel flags given besides --spec, as "--in/--map", for the error saying not both.
std::string kernel_flags_given(const KernelFlags& f) {
    const std::pair<const char*, const std::string*> all[] = {
        {"--in", &f.in},
        {"--out", &f.out},
        {"--op", &f.op},
        {"--map", &f.map},
        {"--reduce", &f.reduce},
        {"--post", &f.post},
        {"--identity", &f.identity},
        {"--reduce-type", &f.reduce_type},
        {"--preamble", &f.preamble},
        {"--loop-prep", &f.loop_prep},
        {"--after-loop", &f.after_loop}};
    std::string given;
    for (const auto& [flag, value] : all)
        if (!value->empty()) given += (given.empty() ? "" : "/") + std::string(flag);
    if (!f.nvrtc_options.empty()) given += (given.empty() ? "" : "/") + std::string("--nvrtc-option");
    return given;
}

ReductionKernel reduction_from_flags(const KernelFlags& f) {
    if (!f.op.empty())
        throw Error("--op is for elementwise kernels: a reduction (--map, --reduce, --post) has no --op");
    const std::pair<const char*, const std::string*> required[] = {
        {"--map (the value of one element, e.g. \"x * x\")", &f.map},
        {"--reduce (how two partial results a and b combine, e.g. \"a + b\")", &f.reduce},
        {"--post (statements assigning the outputs from a, e.g. \"y = a\")", &f.post}};
    for (const auto& [flag, value] : required)
        if (value->empty()) throw Error(fmt::format("a reduction needs --map, --reduce and --post: missing {}", flag));
    if (!f.loop_prep.empty() || !f.after_loop.empty())
        throw Error("--loop-prep and --after-loop are for elementwise kernels (CuPy's ElementwiseKernel options)");
    KernelOptions options;
    options.preamble = text_or_file(f.preamble, "--preamble");
    options.nvrtc_options = f.nvrtc_options;
    options.reduce_type = f.reduce_type;
    return ReductionKernel(f.in, f.out, text_or_file(f.map, "--map"), text_or_file(f.reduce, "--reduce"),
                           text_or_file(f.post, "--post"), f.identity, f.name, options);
}

ElementwiseKernel elementwise_from_flags(const KernelFlags& f) {
    if (!f.identity.empty()) throw Error("--identity is for reductions: give --map, --reduce and --post too");
    if (!f.reduce_type.empty()) throw Error("--reduce-type is for reductions: give --map, --reduce and --post too");
    if (f.op.empty())
        throw Error("missing --op (the operation), or --map/--reduce/--post for a reduction, or --spec FILE.json");
    KernelOptions options;
    options.preamble = text_or_file(f.preamble, "--preamble");
    options.nvrtc_options = f.nvrtc_options;
    options.loop_prep = text_or_file(f.loop_prep, "--loop-prep");
    options.after_loop = text_or_file(f.after_loop, "--after-loop");
    return ElementwiseKernel(f.in, f.out, text_or_file(f.op, "--op"), f.name, options);
}

}  // namespace

void add_kernel_flags(CLI::App& cmd, KernelFlags& f) {
    cmd.add_option("--in", f.in, "Input parameters, e.g. \"T x, T a, T b\"");
    cmd.add_option("--out", f.out, "Output parameters, e.g. \"T y\"");
    cmd.add_option("--op", f.op, "The operation, e.g. \"y = a * x + b\" (@FILE reads it from a file)");
    cmd.add_option("--map", f.map, "Reduction: the value of one element, e.g. \"x * x\" (@FILE reads a file)");
    cmd.add_option("--reduce", f.reduce, "Reduction: how partial results a and b combine, e.g. \"a + b\" (@FILE)");
    cmd.add_option("--post", f.post, "Reduction: the outputs from the reduced value a, e.g. \"y = sqrt(a)\" (@FILE)");
    cmd.add_option("--identity", f.identity, "Reduction: the value reducing nothing gives, e.g. \"0\" (empty: none)");
    cmd.add_option("--reduce-type", f.reduce_type, "Reduction: the type of a and b, e.g. float64 or T (default: the first output's type, as in CuPy)");
    cmd.add_option("--name", f.name, "Kernel name (a C identifier)")->capture_default_str();
    cmd.add_option("--preamble", f.preamble, "Raw CUDA helpers placed before the kernel (@FILE reads a file)");
    cmd.add_option("--nvrtc-option", f.nvrtc_options, "An NVRTC option, e.g. -DFACTOR=3 (repeat the flag for several)");
    cmd.add_option("--loop-prep", f.loop_prep, "Statements each thread runs before its elements (CuPy's loop_prep; @FILE)");
    cmd.add_option("--after-loop", f.after_loop, "Statements each thread runs after its elements (CuPy's after_loop; @FILE)");
    cmd.add_option("--types", f.types, "Placeholder types, e.g. T=float32,U=int64");
    cmd.add_option("--spec", f.spec_file, "A JSON file holding one manifest entry instead of the flags");
}

KernelRequest load_kernel(const KernelFlags& f) {
    KernelRequest r = [&] {
        if (!f.spec_file.empty()) {
            if (const std::string given = kernel_flags_given(f); !given.empty())
                throw Error("give either --spec or " + given + ", not both");
            return load_spec(f.spec_file);
        }
        // Any of the reduction's own expressions makes it a reduction; the rest must then match.
        if (!f.map.empty() || !f.reduce.empty() || !f.post.empty())
            return KernelRequest{reduction_from_flags(f), {}};
        return KernelRequest{elementwise_from_flags(f), {}};
    }();
    if (!f.types.empty()) r.bindings = {parse_type_binding(f.types)};
    return r;
}

const std::string& KernelRequest::name() const {
    return std::visit([](const auto& k) -> const std::string& { return k.name(); }, kernel);
}
const std::string& KernelRequest::in_params() const {
    return std::visit([](const auto& k) -> const std::string& { return k.in_params(); }, kernel);
}
const std::string& KernelRequest::out_params() const {
    return std::visit([](const auto& k) -> const std::string& { return k.out_params(); }, kernel);
}
std::vector<std::string> KernelRequest::placeholders() const {
    return std::visit([](const auto& k) { return k.placeholders(); }, kernel);
}
void KernelRequest::check(const TypeBinding& types) const {
    std::visit([&](const auto& k) { k.check(types); }, kernel);
}
std::string KernelRequest::source(const TypeBinding& types) const {
    return std::visit([&](const auto& k) { return k.source(types); }, kernel);
}

}  // namespace kjit::cli

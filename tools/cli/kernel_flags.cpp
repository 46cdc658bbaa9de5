#include "tools/cli/kernel_flags.hpp"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "jit/manifest_kernel.hpp"
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
        jit::ManifestKernel m = jit::kernel_from_manifest_entry(entry);
        return KernelRequest{std::move(m.kernel), std::move(m.bindings)};
    } catch (const CacheError& e) {
        throw Error("spec '" + path + "': " + e.what());
    }
}

}  // namespace

void add_kernel_flags(CLI::App& cmd, KernelFlags& f) {
    cmd.add_option("--in", f.in, "Input parameters, e.g. \"T x, T a, T b\"");
    cmd.add_option("--out", f.out, "Output parameters, e.g. \"T y\"");
    cmd.add_option("--op", f.op, "The operation, e.g. \"y = a * x + b\" (@FILE reads it from a file)");
    cmd.add_option("--name", f.name, "Kernel name (a C identifier)")->capture_default_str();
    cmd.add_option("--preamble", f.preamble, "Raw CUDA helpers placed before the kernel (@FILE reads a file)");
    cmd.add_option("--types", f.types, "Placeholder types, e.g. T=float32,U=int64");
    cmd.add_option("--spec", f.spec_file, "A JSON file holding one manifest entry instead of the flags");
}

KernelRequest load_kernel(const KernelFlags& f) {
    KernelRequest r = [&] {
        if (!f.spec_file.empty()) {
            if (!f.in.empty() || !f.out.empty() || !f.op.empty())
                throw Error("give either --spec or --in/--out/--op, not both");
            return load_spec(f.spec_file);
        }
        if (f.op.empty()) throw Error("missing --op (the operation), or --spec FILE.json");
        KernelOptions options;
        options.preamble = text_or_file(f.preamble, "--preamble");
        return KernelRequest{ElementwiseKernel(f.in, f.out, text_or_file(f.op, "--op"), f.name, options), {}};
    }();
    if (!f.types.empty()) r.bindings = {parse_type_binding(f.types)};
    return r;
}

}  // namespace kjit::cli

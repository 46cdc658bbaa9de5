// ScanKernel's definition: its strings, the reduction they become, its module and cache entries.
#include "kjit/scan_kernel.hpp"

#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "jit/frontend/params.hpp"
#include "jit/frontend/source.hpp"
#include "jit/frontend/struct_decl.hpp"
#include "jit/kernels/manifest_fields.hpp"
#include "jit/kernels/scan/scans.hpp"
#include "kjit/error.hpp"

namespace kjit {

struct ScanKernel::Spec {
    std::string in, out, scan, identity, name;
    KernelOptions options;
    std::string map, post;  // empty: the input, "OUT = a"
    std::shared_ptr<jit::kernels::ScanCalls> calls = std::make_shared<jit::kernels::ScanCalls>();
};

namespace {

bool blank(const std::string& s) {
    for (const char c : s)
        if (!std::isspace(static_cast<unsigned char>(c))) return false;
    return true;
}

}  // namespace

ScanKernel::ScanKernel(std::string in_params, std::string out_params, std::string scan_expr, std::string identity, std::string name,
                       KernelOptions options)
    : spec_(std::make_shared<const Spec>(Spec{std::move(in_params), std::move(out_params), std::move(scan_expr), std::move(identity),
                                              std::move(name), std::move(options)})) {}

ScanKernel ScanKernel::mapped(std::string in_params, std::string out_params, std::string map_expr, std::string scan_expr,
                              std::string post_expr, std::string identity, std::string name, KernelOptions options) {
    ScanKernel k(std::move(in_params), std::move(out_params), std::move(scan_expr), std::move(identity), std::move(name), std::move(options));
    auto spec = std::make_shared<Spec>(*k.spec_);
    spec->map = std::move(map_expr);
    spec->post = std::move(post_expr);
    spec->calls = std::make_shared<jit::kernels::ScanCalls>();
    k.spec_ = std::move(spec);
    return k;
}

const std::string& ScanKernel::name() const noexcept { return spec_->name; }
const std::string& ScanKernel::in_params() const noexcept { return spec_->in; }
const std::string& ScanKernel::out_params() const noexcept { return spec_->out; }
const std::string& ScanKernel::scan_expr() const noexcept { return spec_->scan; }
const std::string& ScanKernel::identity() const noexcept { return spec_->identity; }
const KernelOptions& ScanKernel::options() const noexcept { return spec_->options; }
const std::string& ScanKernel::map_expr() const noexcept { return spec_->map; }
const std::string& ScanKernel::post_expr() const noexcept { return spec_->post; }

void ScanKernel::check(const TypeBinding& types) const { jit::kernels::scan_as_reduction(*this).check(types); }

std::vector<std::string> ScanKernel::placeholders() const { return jit::kernels::scan_as_reduction(*this).placeholders(); }

std::string ScanKernel::source(const TypeBinding& types) const {
    return jit::kernels::scan_module_source(*this, types, {}).program.generated.source;
}

Binary ScanKernel::compile(const TypeBinding& types, const std::string& arch) const {
    jit::kernels::ScanModuleSource m = jit::kernels::scan_module_source(*this, types, {});
    const jit::compile::FoundProgram found = jit::compile::find_or_compile_program(m.program.program, arch);
    Binary b;
    b.arch = found.entry->meta.arch;
    b.cubin = found.entry->cubin;
    b.ptx = found.entry->ptx;
    b.log = found.log;
    b.source = m.program.generated.source;
    b.compile_ms = found.compile_ms;
    for (std::size_t g = 0; g < m.groups.size(); ++g) b.entry_points.emplace(jit::kernels::scan_group_label(g), m.groups[g][0]);
    return b;
}

Outputs ScanKernel::operator()(std::span<const KernelArg> args, const ScanOptions& options) const {
    std::vector<Array> outputs;
    jit::kernels::call_scan(*this, *spec_->calls, args, options, &outputs);
    return Outputs(std::move(outputs));
}

void ScanKernel::launch(std::span<const KernelArg> args, const ScanOptions& options) const {
    jit::kernels::call_scan(*this, *spec_->calls, args, options, nullptr);
}

void ScanKernel::prepare(std::span<const KernelArg> args, const ScanOptions& options) const {
    jit::kernels::prepare_scan(*this, *spec_->calls, args, options);
}

Outputs ScanKernel::scan_segments(std::span<const KernelArg> args, const Array& offsets, const ScanOptions& options) const {
    std::vector<Array> outputs;
    jit::kernels::call_scan(*this, *spec_->calls, args, options, &outputs, &offsets);
    return Outputs(std::move(outputs));
}

namespace jit::kernels {

ReductionKernel scan_as_reduction(const ScanKernel& k) {
    frontend::check_kernel_name(k.name());
    const frontend::SourceText in{"in", k.in_params()}, out{"out", k.out_params()};
    const std::vector<frontend::Param> params = frontend::parse_param_lists(in, out);
    const frontend::Param *input = nullptr, *output = nullptr;
    for (const frontend::Param& p : params) {
        const frontend::Param*& slot = p.is_output ? output : input;
        if (slot != nullptr)
            frontend::fail_parse(p.is_output ? out : in, p.pos, "a scan has one " + std::string(p.is_output ? "output" : "input"),
                                 "scan one array into one output; combine several inputs with an elementwise kernel first");
        slot = &p;
        if (p.raw)
            frontend::fail_type(p.is_output ? out : in, p.pos, "a scan's " + std::string(p.is_output ? "output" : "input") + " cannot be raw",
                                "the scan reads and writes one element at a time");
    }
    if (input == nullptr) frontend::fail_parse(in, {}, "a scan needs one input");
    if (output == nullptr) frontend::fail_parse(out, {}, "a scan needs one output");
    if (blank(k.identity()))
        frontend::fail_parse(frontend::SourceText{"identity", k.identity()}, {}, "a scan needs an identity",
                             "the value the scan expression leaves unchanged: '0' for a sum, '1' for a product");
    if (frontend::is_struct_decl(k.options().reduce_type) && (blank(k.map_expr()) || blank(k.post_expr())))
        frontend::fail_type(frontend::SourceText{"reduce_type", k.options().reduce_type}, {}, "a struct scan value needs a map and a post",
                            "make it with ScanKernel::mapped(in, out, map, scan, post, identity): map builds the struct from the "
                            "input, post writes the output from its fields");
    return ReductionKernel(k.in_params(), k.out_params(), blank(k.map_expr()) ? input->name : k.map_expr(), k.scan_expr(),
                           blank(k.post_expr()) ? output->name + " = a" : k.post_expr(), k.identity(), k.name(), k.options());
}

std::string scan_group_label(std::size_t group) {
    return std::string(group / 2 == 0 ? "scan" : "scan_segments") + (group % 2 == 0 ? "32" : "64");
}

std::string scan_spec_json(const ScanKernel& k, const TypeBinding& types, const ModuleVariant& variant) {
    nlohmann::json e = write_manifest_entry("scan", k.name(), k.in_params(), k.out_params(), k.options().preamble,
                                            k.options().nvrtc_options, types, variant);
    e["scan"] = k.scan_expr();
    e["identity"] = k.identity();
    if (!k.map_expr().empty()) e["map"] = k.map_expr();
    if (!k.post_expr().empty()) e["post"] = k.post_expr();
    if (!k.options().reduce_type.empty()) e["reduce_type"] = k.options().reduce_type;
    return e.dump();
}

ScanModuleSource scan_module_source(const ScanKernel& kernel, const TypeBinding& types, const ModuleVariant& variant) {
    ScanModuleSource m;
    // The program may live in the kernel's table of calls: it keeps a copy of the strings only
    // (a kernel of its own, with an empty table), or the table would keep itself alive.
    const ScanKernel definition = ScanKernel::mapped(kernel.in_params(), kernel.out_params(), kernel.map_expr(), kernel.scan_expr(),
                                                     kernel.post_expr(), kernel.identity(), kernel.name(), kernel.options());
    m.program = scan_program(scan_as_reduction(kernel), types, variant,
                             [definition, types, variant] { return scan_spec_json(definition, types, variant); });
    const codegen::GeneratedReduction& g = m.program.generated;
    m.groups = {{g.scan32}, {g.scan64}, {g.scan_segments32}, {g.scan_segments64}};
    return m;
}

CompiledModules compile_scan_group(const ScanKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                   const std::string& arch, std::size_t group) {
    const ScanModuleSource m = scan_module_source(kernel, types, variant);
    compile::CachedProgram program = program_with_entries(m.program.program, m.program.generated.entry_lines, m.groups.at(group));
    const compile::FoundProgram found = compile::find_or_compile_program(program, arch);
    return {found.entry->meta.arch, found.compile_ms, found.entry->key, compile::alias_key(program)};
}

bool is_scan_manifest_entry(const nlohmann::json& e) { return e.is_object() && e.contains("kind") && e["kind"] == "scan"; }

ManifestScan scan_from_manifest_entry(const nlohmann::json& e) {
    if (!is_scan_manifest_entry(e)) throw CacheError("not a scan entry: \"kind\" must be \"scan\"");
    KernelOptions options;
    options.preamble = manifest_text(e, "preamble", false);
    options.nvrtc_options = manifest_text_list(e, "options");
    options.reduce_type = manifest_text(e, "reduce_type", false);
    const std::string name = e.contains("name") ? manifest_text(e, "name", true) : "scan";
    std::string in = manifest_text(e, "in", false), out = manifest_text(e, "out", false);
    std::string scan = manifest_text(e, "scan", true), identity = manifest_text(e, "identity", true);
    std::string map = manifest_text(e, "map", false), post = manifest_text(e, "post", false);
    ManifestScan m{ScanKernel::mapped(std::move(in), std::move(out), std::move(map), std::move(scan), std::move(post), std::move(identity),
                                      name, std::move(options)),
                   {}, {}, {}};
    m.bindings = manifest_bindings(e);
    m.scalars = manifest_text_list(e, "scalars");
    m.storage = manifest_storage(e);
    return m;
}

}  // namespace jit::kernels

}  // namespace kjit

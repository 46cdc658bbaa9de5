// RawModule: the user's CUDA source as a cacheable program, loaded once per device.
#include "jit/kernels/raw/module.hpp"
#include "jit/compile/arch.hpp"
#include "jit/compile/included_files.hpp"
#include "jit/frontend/source.hpp"
#include "jit/kernels/raw/link_inputs.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kjit/error.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit {
namespace {

constexpr const char* kDefaultLabel = "raw_module";

bool is_c_identifier(std::string_view s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    for (const char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
}

// The label as a file name for NVRTC's messages: "scale<float, 4>" -> "scale_float__4_.cu".
std::string program_name(const std::string& label) {
    std::string name = label;
    for (char& c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
    return name + ".cu";
}

// The manifest entry (DESIGN.md): what KJIT_CACHE_RECORD writes and `kjit precompile` reads back
// (jit/kernels/elementwise/manifest.cpp) into an equal module, hence the same cache keys.
std::string spec_json(const jit::RawModuleState& s) {
    nlohmann::json e;
    e["kind"] = "raw";
    e["name"] = s.label;
    e["source"] = s.source;
    if (!s.options.nvrtc_options.empty()) e["options"] = s.options.nvrtc_options;
    if (!s.options.name_expressions.empty()) e["name_expressions"] = s.options.name_expressions;
    if (s.options.toolkit_headers) e["toolkit_headers"] = true;
    if (!s.options.arch.empty()) e["arch"] = s.options.arch;
    for (const auto& [name, text] : s.options.headers) e["headers"].push_back({{"name", name}, {"text", text}});
    if (!s.options.link.empty()) e["link"] = jit::kernels::link_inputs_json(s.options.link);
    return e.dump();
}

// The source plus what else changes the compiled bytes and is not an NVRTC option: the name
// expressions (each instantiates a template) and the label (the program's name, in debug line
// info, and the entry's metadata). NUL
// separates the parts: it cannot occur in a source NVRTC reads.
std::string key_source(const jit::RawModuleState& s) {
    std::string k = s.source;
    k.append(1, '\0').append("kjit-raw-module").append(1, '\0').append(s.label);
    for (const std::string& e : s.options.name_expressions) k.append(1, '\0').append(e);
    return k;
}

// Moves an architecture among the NVRTC options to options.arch (kjit passes its own
// --gpu-architecture, and NVRTC would see two), then checks it.
void take_arch_option(RawModuleOptions& options) {
    std::vector<std::string>& o = options.nvrtc_options;
    for (std::size_t k = 0; k < o.size();) {
        std::string value;
        std::size_t taken = 1;
        for (const std::string_view flag : {"-arch", "--gpu-architecture"}) {
            if (o[k] == flag && k + 1 < o.size()) {
                value = o[k + 1];
                taken = 2;
            } else if (o[k].starts_with(std::string(flag) + "=")) {
                value = o[k].substr(flag.size() + 1);
            }
        }
        if (value.empty()) {
            ++k;
            continue;
        }
        if (!options.arch.empty() && options.arch != value)
            throw Error("raw module: the NVRTC option " + o[k] + (taken == 2 ? " " + value : "") +
                        " asks for another architecture than RawModuleOptions::arch (" + options.arch + ")");
        options.arch = value;
        o.erase(o.begin() + static_cast<std::ptrdiff_t>(k), o.begin() + static_cast<std::ptrdiff_t>(k + taken));
    }
    if (!options.arch.empty()) (void)jit::compile::parse_arch(options.arch, "RawModuleOptions::arch");
}

// The architecture LTO-IR is linked for by RawModule::compile: `arch`, else KJIT_ARCH, else the
// current device's; an Error when none says.
std::string ltoir_target(const std::string& arch) {
    std::string target = arch;
    if (const char* env = std::getenv("KJIT_ARCH"); target.empty() && env != nullptr) target = env;
    if (target.empty() && Device::count() > 0) target = Device::current().properties().arch();
    if (target.empty())
        throw Error("RawModule::compile of LTO-IR needs an architecture to link for (\"sm_90\"): there is no GPU "
                    "and KJIT_ARCH is not set");
    (void)jit::compile::parse_arch(target, "arch");
    return target;
}

}  // namespace

namespace jit {

std::string quoted_list(const std::vector<std::string>& names) {
    if (names.empty()) return "none";
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "\"" : ", \"") + n + "\"";
    return s;
}

compile::CachedProgram RawModuleState::program() const {
    compile::CachedProgram p;
    p.request.source = source;
    p.request.program_name = program_name(label);
    p.request.options = options.nvrtc_options;
    p.request.name_expressions = options.name_expressions;
    p.request.toolkit_headers = options.toolkit_headers;
    p.request.headers = options.headers;
    p.arch = options.arch;
    // Read now, at each compile or first load: a header edited while the process runs is seen.
    p.key_source = key_source + compile::included_files_key(source, options.headers, options.nvrtc_options);
    // So are the link inputs, whose contents key the entry as the source does.
    if (relocatable) p.link = kernels::link_plan(options.link, p.key_source);
    p.spec_json = [s = spec_json] { return s; };
    p.kernel_name = label;
    p.description = "raw module '" + label + "'";
    return p;
}

const compile::LoadedProgram& RawModuleState::on_device(int ordinal) const {
    if (image)
        return loaded.get(ordinal, [&] {
            auto p = std::make_unique<compile::LoadedProgram>();
            p->module = kernels::load_image(*image, label, ordinal);
            p->arch = image->archs.empty() ? std::string() : image->archs[0];
            if (image->kind == ImageKind::ltoir)
                p->arch = "sm_" + std::to_string(detail::device_attributes(ordinal).compute_capability());
            p->compiled_from_ptx = image->kind == ImageKind::ptx;
            return p;
        });
    return loaded.get(ordinal, [&] {
        compile::CachedProgram p = program();
        return std::make_unique<compile::LoadedProgram>(compile::load_program(p, ordinal));
    });
}

CUfunction RawModuleState::function(const std::string& name, int ordinal) const {
    const compile::LoadedProgram& loaded_here = on_device(ordinal);
    std::string symbol = name;
    if (loaded_here.entry)
        for (const auto& [expression, lowered] : loaded_here.entry->meta.lowered_names)
            if (expression == name) symbol = lowered;
    detail::Driver& d = detail::driver_on(ordinal);
    CUfunction f = nullptr;
    const CUresult st = d.cuModuleGetFunction(&f, loaded_here.module->handle(), symbol.c_str());
    if (st == CUDA_ERROR_NOT_FOUND && image)
        throw Error("raw module '" + label + "' (" + image->origin + ") has no kernel '" + name +
                    "' (a C++ kernel is found by its mangled name, as cuobjdump -symbols lists it)");
    if (st == CUDA_ERROR_NOT_FOUND)
        throw Error("raw module '" + label + "' has no kernel '" + name +
                    "': it is not an extern \"C\" __global__ function of the source (a kernel with C++ linkage has "
                    "a mangled name: declare it extern \"C\", or add \"" + name +
                    "\" to RawModuleOptions::name_expressions); the module's name expressions: " +
                    quoted_list(options.name_expressions));
    if (st != CUDA_SUCCESS)
        throw CudaError(st, "cuModuleGetFunction(\"" + symbol + "\")", __FILE__, __LINE__);
    return f;
}

}  // namespace jit

RawModule::RawModule(std::string source, RawModuleOptions options) {
    jit::frontend::refuse_nul_byte({"raw module source", source});
    for (std::size_t k = 0; k < options.nvrtc_options.size(); ++k)
        jit::frontend::refuse_nul_byte({"raw module NVRTC option " + std::to_string(k + 1), options.nvrtc_options[k]});
    for (const std::string& e : options.name_expressions)
        jit::frontend::refuse_nul_byte({"raw module name expression", e});
    for (const std::string& e : options.name_expressions)
        if (e.empty()) throw Error("raw module: an empty name expression");
    for (const auto& [name, text] : options.headers) {
        if (name.empty()) throw Error("raw module: a header with an empty name");
        jit::frontend::refuse_nul_byte({"raw module header name", name});
        jit::frontend::refuse_nul_byte({"raw module header \"" + name + "\"", text});
    }
    take_arch_option(options);
    jit::kernels::check_link_inputs(options, options.name.empty() ? kDefaultLabel : options.name);
    auto s = std::make_shared<jit::RawModuleState>();
    s->source = std::move(source);
    s->options = std::move(options);
    s->label = s->options.name.empty() ? kDefaultLabel : s->options.name;
    s->relocatable = jit::kernels::is_relocatable(s->options.nvrtc_options);
    s->spec_json = spec_json(*s);
    s->key_source = key_source(*s);
    state_ = std::move(s);
}

const std::string& RawModule::source() const noexcept { return state_->source; }
const RawModuleOptions& RawModule::options() const noexcept { return state_->options; }
const std::string& RawModule::name() const noexcept { return state_->label; }

RawModule RawModule::from_file(const std::string& path, std::string name) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw IoError("cannot open the binary " + path + ": " + std::strerror(errno));
    std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw IoError("cannot read the binary " + path + ": " + std::strerror(errno));
    const std::string origin = "file " + path;
    const ImageKind kind = jit::kernels::detect_image_kind(bytes, origin);
    if (name.empty()) name = std::filesystem::path(path).filename().string();
    return from_binary(jit::kernels::read_image(std::move(bytes), kind, origin), std::move(name));
}

RawModule RawModule::from_image(std::vector<unsigned char> bytes, ImageKind kind, std::string name) {
    return from_binary(jit::kernels::read_image(std::move(bytes), kind, "an image given in memory"), std::move(name));
}

RawModule RawModule::from_binary(jit::kernels::BinaryImage image, std::string name) {
    auto s = std::make_shared<jit::RawModuleState>();
    s->label = name.empty() ? kDefaultLabel : std::move(name);
    s->image = std::make_shared<const jit::kernels::BinaryImage>(std::move(image));
    RawModule m;
    m.state_ = std::move(s);
    return m;
}

std::optional<ImageKind> RawModule::image_kind() const noexcept {
    return state_->image ? std::optional<ImageKind>(state_->image->kind) : std::nullopt;
}

RawKernel RawModule::get_function(const std::string& name) const {
    if (state_->image) {
        if (name.empty() || name.find('\0') != std::string::npos)
            throw Error("raw module '" + state_->label + "': a kernel name must be non-empty and hold no NUL byte");
        return RawKernel(*this, name);
    }
    const std::vector<std::string>& expressions = state_->options.name_expressions;
    const bool is_expression = std::find(expressions.begin(), expressions.end(), name) != expressions.end();
    if (!is_expression && !is_c_identifier(name))
        throw Error("raw module '" + state_->label + "' has no kernel '" + name +
                    "': it is not one of the module's name expressions (" + jit::quoted_list(expressions) +
                    "; NVRTC matches them as written, spaces included) nor an extern \"C\" name; add it to "
                    "RawModuleOptions::name_expressions");
    return RawKernel(*this, name);
}

Binary RawModule::compile(const std::string& arch) const {
    if (const auto& image = state_->image) {
        if (image->kind == ImageKind::ltoir) {
            Binary b;
            b.arch = ltoir_target(arch);
            b.cubin = jit::kernels::link_ltoir(*image, state_->label, b.arch);
            return b;
        }
        if (image->kind != ImageKind::cubin && image->kind != ImageKind::ptx)
            throw Error("raw module '" + state_->label + "' (" + image->origin + ") is a binary built elsewhere, not a program kjit compiles");
        Binary b;
        b.arch = image->archs.empty() ? std::string() : image->archs[0];
        if (image->kind == ImageKind::cubin) b.cubin = image->bytes;
        else b.ptx.assign(image->bytes.begin(), image->bytes.end());
        return b;
    }
    jit::compile::CachedProgram p = state_->program();
    const jit::compile::FoundProgram found = jit::compile::find_or_compile_program(p, arch);
    Binary b;
    b.arch = found.entry->meta.arch;
    b.cubin = found.entry->cubin;
    b.ptx = found.entry->ptx;
    b.log = found.log;
    b.source = state_->source;
    b.compile_ms = found.compile_ms;
    for (const auto& [expression, lowered] : found.entry->meta.lowered_names) b.entry_points.emplace(expression, lowered);
    return b;
}

}  // namespace kjit

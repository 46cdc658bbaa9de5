#include "kjit/elementwise_kernel.hpp"

#include <cctype>
#include <set>

#include <ctime>
#include <map>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "cache/cache_key.hpp"
#include "cache/kernel_cache.hpp"
#include "jit/arch.hpp"
#include "jit/codegen.hpp"
#include "jit/elementwise_calls.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "jit/nvrtc_identity.hpp"
#include "jit/params.hpp"
#include "jit/parser.hpp"
#include "jit/preamble.hpp"
#include "jit/type_checker.hpp"
#include "kjit/device.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/module.hpp"
#include "runtime/detail/nvrtc.hpp"

namespace kjit {

struct ElementwiseKernel::Spec {
    std::string in, out, op, name;
    KernelOptions options;
    // Bindings already launched, built on the first call (jit/elementwise_calls.hpp).
    std::shared_ptr<jit::ElementwiseCalls> calls = std::make_shared<jit::ElementwiseCalls>();
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

std::string format_type_binding(const TypeBinding& types) {
    std::string s;
    for (const auto& [ph, t] : types) s += (s.empty() ? "" : ",") + ph + "=" + std::string(t.name());
    return s;
}

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
    jit::ElementwiseModuleSpec m{spec_->name, spec_->in, spec_->out, spec_->options.preamble, {}, {}};
    return jit::generate_elementwise(m, c.kernel, c.body, types).source;
}

namespace {

// The manifest entry for this kernel and one binding: what KJIT_CACHE_RECORD writes and
// `kjit precompile` reads back.
std::string spec_json(const ElementwiseKernel& k, const TypeBinding& types, const jit::ModuleVariant& variant) {
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
    // How a call passed its arguments, when not all as arrays of the parameters' own types: these
    // make another module, which a precompile must build too.
    const std::vector<jit::Param> params = jit::parse_param_lists(jit::SourceText{"in", k.in_params()},
                                                                  jit::SourceText{"out", k.out_params()});
    nlohmann::json scalars = nlohmann::json::array(), storage = nlohmann::json::object();
    for (std::size_t i = 0; i < params.size(); ++i) {
        if (i < variant.scalar.size() && variant.scalar[i]) scalars.push_back(params[i].name);
        if (i < variant.storage.size() && variant.storage[i]) storage[params[i].name] = std::string(variant.storage[i]->name());
    }
    if (!scalars.empty()) e["scalars"] = scalars;
    if (!storage.empty()) e["storage"] = storage;
    return e.dump();
}


// The target: `arch` if given, else KJIT_ARCH, else the current GPU, else the default; fitted to
// what NVRTC supports when there is one (without NVRTC, as asked: only a cache can serve it).
// `supported`: NVRTC's architectures when known (loaded, or remembered); empty: no NVRTC.
jit::ArchTarget choose_target(const std::string& arch, const std::vector<int>& supported,
                              std::optional<int> device_cc = std::nullopt) {
    if (arch.empty() && !device_cc && Device::count() > 0) {
        const DeviceProperties p = Device::current().properties();
        device_cc = p.cc_major * 10 + p.cc_minor;
    }
    if (!supported.empty()) {
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

// A kernel for one binding, ready to be looked up: its generated module and compile request.
struct Prepared {
    jit::GeneratedModule generated;
    jit::CompileRequest request;
    std::string spec;
    std::string types;
};

Prepared prepare(const ElementwiseKernel& k, const TypeBinding& types, const jit::ModuleVariant& variant = {}) {
    const Checked c = parse_and_check(k.in_params(), k.out_params(), k.operation(), k.name(), k.options(), types, true);
    jit::ElementwiseModuleSpec m{k.name(), k.in_params(), k.out_params(), k.options().preamble, variant.scalar, variant.storage};
    Prepared p{jit::generate_elementwise(m, c.kernel, c.body, types), {}, spec_json(k, types, variant),
               kjit::format_type_binding(types)};
    p.request.source = p.generated.source;
    p.request.program_name = k.name() + ".cu";
    // Generated code uses no texture or device-runtime API: -minimal saves a third of the compile
    // time on the GPU host (docs/PERFORMANCE.md). A preamble is the user's CUDA, so it may.
    if (k.options().preamble.empty()) p.request.options.push_back("-minimal");
    for (const std::string& o : k.options().nvrtc_options) p.request.options.push_back(o);
    return p;
}

// The entry for `p` built for `target`: from the cache, or compiled now (with NVRTC); without
// NVRTC, found by alias or null.
std::shared_ptr<const cache::Entry> find_or_compile(Prepared& p, const jit::ArchTarget& target, bool have_nvrtc,
                                                    double* compile_ms, std::string* log) {
    p.request.target = target;
    const std::vector<std::string> options = jit::compile_options(p.request);
    const std::string name = target.name();
    const std::string alias = cache::make_alias_key(p.request.source, options, name);
    const std::shared_ptr<cache::KernelCache> kernel_cache = cache::process_cache();
    if (!have_nvrtc) return kernel_cache->find_alias(alias, p.spec, name);
    cache::Request r;
    r.key = cache::make_key(p.request.source, options, name, jit::nvrtc_version_key());
    r.alias = alias;
    r.arch = name;
    r.spec_json = p.spec;
    r.compile = [&] {
        const jit::CompileResult result = jit::compile_cuda(p.request);
        if (compile_ms) *compile_ms = result.compile_ms;
        if (log) *log = result.log;
        cache::Entry e;
        e.key = r.key;
        e.meta.kernel_name = p.request.program_name.substr(0, p.request.program_name.size() - 3);
        e.meta.types = p.types;
        e.meta.arch = name;
        e.meta.nvrtc_version = jit::nvrtc_version_key();
        e.meta.created_unix = static_cast<std::int64_t>(std::time(nullptr));
        e.meta.lowered_names = result.lowered_names;
        e.meta.spec_json = p.spec;
        e.cubin = result.cubin;
        e.ptx = result.ptx;
        return e;
    };
    return kernel_cache->get(r);
}

[[noreturn]] void fail_not_cached(const ElementwiseKernel& k, const Prepared& p, const std::string& target,
                                  const std::string& why) {
    throw NoDeviceError("kernel '" + k.name() + "' (" + p.types + ") for " + target +
                        " is in no kernel cache folder and it cannot be compiled: " + why);
}

std::vector<int> supported_archs(bool have_nvrtc) {
    return have_nvrtc ? jit::nvrtc_supported_archs() : std::vector<int>{};
}

// Records which NVRTC this process loaded beside the writable cache folder, once per folder, so
// that later processes can compute keys without loading it (jit/nvrtc_identity.hpp).
void remember_nvrtc_once(const std::string& dir) {
    static std::mutex mutex;
    static std::set<std::string> done;
    if (dir.empty() || !detail::nvrtc_loaded()) return;
    {
        std::lock_guard lock(mutex);
        if (!done.insert(dir).second) return;
    }
    jit::remember_nvrtc(dir);
}

// A cache hit that does not load NVRTC (6-7 ms): when NVRTC is not loaded yet and the writable
// folder remembers which NVRTC this process would load, the key is computed from that record and
// looked up without compiling. Null on a miss (the caller then loads NVRTC as usual).
std::shared_ptr<const cache::Entry> find_without_loading_nvrtc(Prepared& p, const std::string& arch,
                                                               std::optional<int> device_cc = std::nullopt) {
    const std::shared_ptr<cache::KernelCache> kernel_cache = cache::process_cache();
    const std::string dir = kernel_cache->writable_dir();
    if (detail::nvrtc_loaded()) {
        remember_nvrtc_once(dir);
        return nullptr;
    }
    // Read once per folder and process: the record describes files that do not change under a
    // running process.
    static std::mutex mutex;
    static std::map<std::string, std::optional<jit::NvrtcIdentity>> records;
    std::optional<jit::NvrtcIdentity> id;
    {
        std::lock_guard lock(mutex);
        auto it = records.find(dir);
        if (it == records.end()) it = records.emplace(dir, jit::remembered_nvrtc(dir)).first;
        id = it->second;
    }
    if (!id) return nullptr;
    p.request.target = choose_target(arch, id->supported_archs, device_cc);
    const std::vector<std::string> options = jit::compile_options(p.request);
    const std::string name = p.request.target.name();
    return kernel_cache->find_key(cache::make_key(p.request.source, options, name, id->version_key), p.spec, name);
}

// Every architecture a cubin or PTX of which kjit may find in a cache, newest first.
constexpr int kKnownArchs[] = {121, 120, 110, 103, 100, 90, 89, 88, 87, 86, 80, 75};

}  // namespace

KernelBinary ElementwiseKernel::compile(const TypeBinding& types, const std::string& arch) const {
    Prepared p = prepare(*this, types);
    double compile_ms = 0;
    std::string log;
    std::shared_ptr<const cache::Entry> entry = find_without_loading_nvrtc(p, arch);
    if (!entry) {
        std::string no_nvrtc;
        const bool have_nvrtc = detail::try_nvrtc(&no_nvrtc) != nullptr;
        const jit::ArchTarget target = choose_target(arch, supported_archs(have_nvrtc));
        entry = find_or_compile(p, target, have_nvrtc, &compile_ms, &log);
        if (!entry) fail_not_cached(*this, p, target.name(), no_nvrtc);
        remember_nvrtc_once(cache::process_cache()->writable_dir());
    }

    KernelBinary b;
    b.arch = entry->meta.arch;
    b.cubin = entry->cubin;
    b.ptx = entry->ptx;
    b.source = p.generated.source;
    b.compile_ms = compile_ms;
    b.log = log;
    b.contiguous32 = p.generated.contiguous32;
    b.contiguous64 = p.generated.contiguous64;
    b.strided32 = p.generated.strided32;
    b.strided64 = p.generated.strided64;
    b.rows32 = p.generated.rows32;
    b.tiled32 = p.generated.tiled32;
    return b;
}

Outputs::operator Array() const {
    if (arrays_.size() != 1)
        throw Error("the call has " + std::to_string(arrays_.size()) + " outputs: take them by index, not as one Array");
    return arrays_.front();
}

Outputs ElementwiseKernel::operator()(std::span<const KernelArg> args, const CallOptions& options) const {
    std::vector<Array> outputs;
    jit::call_elementwise(*this, *spec_->calls, args, options, &outputs);
    return Outputs(std::move(outputs));
}

void ElementwiseKernel::launch(std::span<const KernelArg> args, const CallOptions& options) const {
    jit::call_elementwise(*this, *spec_->calls, args, options, nullptr);
}

KernelModule ElementwiseKernel::load(const TypeBinding& types, Device device) const {
    if (!device.is_cuda()) throw Error("ElementwiseKernel::load needs a CUDA device, not " + device.to_string());
    return jit::load_elementwise(*this, types, {}, device.ordinal());
}

KernelModule jit::load_elementwise(const ElementwiseKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                   int ordinal) {
    const DeviceProperties props = Device::cuda(ordinal).properties();
    const int cc = props.cc_major * 10 + props.cc_minor;
    Prepared p = prepare(kernel, types, variant);
    jit::ArchTarget native;
    native.requested = native.compiled = cc;
    native.origin = "device";
    // A cubin for this GPU found without loading NVRTC (see find_without_loading_nvrtc).
    std::shared_ptr<const cache::Entry> entry = find_without_loading_nvrtc(p, "", cc);
    if (entry && !detail::cubin_runs_on(entry->meta.arch, cc)) entry = nullptr;
    std::string no_nvrtc;
    const bool have_nvrtc = entry ? false : detail::try_nvrtc(&no_nvrtc) != nullptr;
    // The device's own cubin, when a cache has it (also one the driver made from PTX earlier).
    if (!entry) {
        const jit::ArchTarget target = choose_target("", supported_archs(have_nvrtc), cc);
        if (!have_nvrtc || target.ptx_only || target.compiled != cc)
            entry = find_or_compile(p, native, false, nullptr, nullptr);
        if (!entry && have_nvrtc) entry = find_or_compile(p, target, true, nullptr, nullptr);
        remember_nvrtc_once(cache::process_cache()->writable_dir());
    }
    // Without NVRTC: PTX precompiled for an older architecture, compiled for this GPU by the driver.
    for (const int older : kKnownArchs) {
        if (entry || have_nvrtc || older >= cc) continue;
        jit::ArchTarget t;
        t.requested = t.compiled = older;
        t.origin = "cache";
        entry = find_or_compile(p, t, false, nullptr, nullptr);
        if (entry && entry->ptx.empty()) entry = nullptr;
    }
    if (!entry) fail_not_cached(kernel, p, native.name(), no_nvrtc);

    // Loaded once per entry and device in this process.
    std::vector<unsigned char> jitted;
    const std::shared_ptr<detail::LoadedModule> module = detail::ModuleRegistry::process().get(
        entry->key, ordinal, [&] { return detail::load_module({entry->meta.arch, entry->cubin, entry->ptx}, ordinal, &jitted); });
    KernelModule km;
    km.arch = entry->meta.arch;
    if (!jitted.empty()) {
        // Keep what the driver made under the device's own architecture, so that the next process
        // loads the cubin instead of compiling the PTX again.
        p.request.target = native;
        const std::vector<std::string> options = jit::compile_options(p.request);
        cache::Entry e;
        e.key = cache::make_key(p.request.source, options, native.name(),
                                "driver-jit-" + std::to_string(driver_version()));
        e.meta = entry->meta;
        e.meta.arch = native.name();
        e.meta.nvrtc_version = "driver-jit-" + std::to_string(driver_version()) + " from " + entry->meta.arch;
        e.meta.created_unix = static_cast<std::int64_t>(std::time(nullptr));
        e.cubin = std::move(jitted);
        e.ptx = entry->ptx;
        cache::process_cache()->store(e, cache::make_alias_key(p.request.source, options, native.name()));
        km.arch = native.name();
        km.compiled_from_ptx = true;
    }
    km.module = module;
    km.contiguous32 = module->function(p.generated.contiguous32);
    km.contiguous64 = module->function(p.generated.contiguous64);
    km.strided32 = module->function(p.generated.strided32);
    km.strided64 = module->function(p.generated.strided64);
    if (!p.generated.rows32.empty()) km.rows32 = module->function(p.generated.rows32);
    if (!p.generated.tiled32.empty()) km.tiled32 = module->function(p.generated.tiled32);
    km.vector_width = p.generated.vector_width;
    km.unroll = p.generated.unroll;
    km.tile = p.generated.tile;
    return km;
}

}  // namespace kjit

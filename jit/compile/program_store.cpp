#include "jit/compile/program_store.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sys/stat.h>

#include "cache/cache_key.hpp"
#include "cache/file_io.hpp"
#include "cache/kernel_cache.hpp"
#include "jit/compile/arch.hpp"
#include "jit/compile/device_runtime.hpp"
#include "jit/compile/nvrtc_identity.hpp"
#include "kjit/device.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/log.hpp"
#include "runtime/detail/nvrtc.hpp"

namespace kjit::jit::compile {
namespace {

const std::string& key_source(const CachedProgram& p) {
    return p.key_source.empty() ? p.request.source : p.key_source;
}

std::string spec_of(const CachedProgram& p) { return p.spec_json ? p.spec_json() : std::string(); }

// KJIT_SAVE_SOURCE=1: every program about to be compiled is written to <writable
// folder>/sources/<key>.cu first (so that a failing compile leaves it too), for reading what kjit
// generated. Read at each compile, which costs nothing beside NVRTC.
void save_source_if_asked(const std::string& dir, const std::string& key, const std::string& source) {
    const char* e = std::getenv("KJIT_SAVE_SOURCE");
    if (e == nullptr || std::string(e) != "1") return;
    if (dir.empty()) {
        detail::warn_once("save-source", "KJIT_SAVE_SOURCE=1 but there is no writable cache folder to save sources in");
        return;
    }
    const std::string folder = dir + "/sources";
    const std::string path = folder + "/" + key + ".cu";
    // Made as the cache's shard folders are (0700, or readable as the top folder is); one that is
    // there must be a folder, not a symlink leading elsewhere.
    const mode_t mode = cache::file_mode_in(dir);
    const mode_t readable = mode & 0044;  // searchable by those who may read
    if (::mkdir(folder.c_str(), 0700 | readable | (readable >> 2)) != 0 && errno != EEXIST) {
        detail::warn_once("save-source:" + folder, "KJIT_SAVE_SOURCE: " + cache::os_error("cannot create", folder));
        return;
    }
    struct stat st {};
    if (::lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        detail::warn_once("save-source:" + folder, "KJIT_SAVE_SOURCE: " + folder + " is not a folder; sources not saved");
        return;
    }
    // Replaced, never written through: a symlink planted at the file's name is replaced, not followed.
    const std::string error = cache::replace_file(path, source, mode, cache::ModeIs::exact, /*durable=*/false);
    if (!error.empty()) {
        detail::warn_once("save-source:" + folder, "KJIT_SAVE_SOURCE: cannot write " + path + ": " + error);
        return;
    }
    detail::log(detail::LogLevel::info, "saved the source of " + key + " as " + path);
}

// What the full key of a linked program adds to NVRTC's version: nvJitLink's version and the device
// runtime's hash (" nvjitlink-13.0+bid:...;cudadevrt:xxh3:..."), empty for a program without a
// link. False (and why, in `why`) when nvJitLink or the device runtime is missing.
bool link_version(const CachedProgram& p, std::string* version, std::string* why) {
    version->clear();
    if (!p.link) return true;
    try {
        *version = " " + nvjitlink_version_key();
        if (p.link->device_runtime) *version += ";" + cudadevrt_key();
        return true;
    } catch (const NoDeviceError& e) {
        if (why != nullptr) *why = e.what();
        return false;
    }
}

// NVRTC's relocatable cubin of `p` linked (with its link plan) into the cubin for `arch`.
LinkResult link_compiled(const CachedProgram& p, std::vector<unsigned char> relocatable, const std::string& arch) {
    std::vector<LinkData> inputs;
    inputs.push_back({p.request.program_name, LinkKind::cubin, std::move(relocatable), {}});
    inputs.insert(inputs.end(), p.link->inputs.begin(), p.link->inputs.end());
    if (p.link->device_runtime) inputs.push_back({"libcudadevrt.a", LinkKind::library, {}, cudadevrt_path()});
    return link_cubin(inputs, arch, p.description);
}

// The manifest entry when the cache records one, else nothing (made only then).
std::string spec_to_record(const CachedProgram& p, const cache::KernelCache& c) {
    return c.settings().record.empty() ? std::string() : spec_of(p);
}

// The target: `arch` if given, else KJIT_ARCH, else the current GPU (or `device_cc`), else the
// default; fitted to what NVRTC supports when known (`supported` empty: no NVRTC, so only a cache
// can serve it, for the target as asked).
ArchTarget choose_target(const std::string& arch, const std::vector<int>& supported,
                         std::optional<int> device_cc = std::nullopt) {
    if (arch.empty() && !device_cc && Device::count() > 0) {
        device_cc = kjit::detail::device_attributes(Device::current().ordinal()).compute_capability();
    }
    if (!supported.empty()) {
        if (!arch.empty()) return clamp_arch(parse_arch(arch, "arch"), supported, "argument");
        return choose_arch(std::getenv("KJIT_ARCH"), device_cc, supported);
    }
    const char* env = std::getenv("KJIT_ARCH");
    ArchSpec spec{device_cc.value_or(default_compute_capability), false};
    std::string origin = device_cc ? "device" : "default";
    if (!arch.empty()) {
        spec = parse_arch(arch, "arch");
        origin = "argument";
    } else if (env != nullptr && *env != '\0') {
        spec = parse_arch(env, "KJIT_ARCH");
        origin = "KJIT_ARCH";
    }
    ArchTarget t;
    t.requested = t.compiled = spec.compute_capability;
    t.ptx_only = spec.ptx_only;
    t.suffix = spec.suffix;
    t.origin = origin;
    return t;
}

// The entry for `p` built for `target`: from the cache, or compiled now (with NVRTC); without
// NVRTC, found by alias or null. A linked program (CachedProgram::link) needs nvJitLink and the
// device runtime too: without them it is found by alias or not at all (`why` says what is missing).
std::shared_ptr<const cache::Entry> find_or_compile(CachedProgram& p, const ArchTarget& target, bool have_nvrtc,
                                                    double* compile_ms, std::string* log, std::string* why = nullptr) {
    p.request.target = target;
    const std::vector<std::string> options = compile_options(p.request);
    const std::string name = target.name();
    const std::string alias = cache::make_alias_key(key_source(p), options, name);
    const std::shared_ptr<cache::KernelCache> kernel_cache = cache::process_cache();
    std::string linker;
    if (have_nvrtc && !link_version(p, &linker, why)) have_nvrtc = false;
    if (!have_nvrtc) return kernel_cache->find_alias(alias, spec_to_record(p, *kernel_cache), name, {p.kernel_name, p.types, name});
    cache::Request r;
    r.key = cache::make_key(key_source(p), options, name, nvrtc_version_key() + linker);
    r.alias = alias;
    r.arch = name;
    r.spec_json = spec_to_record(p, *kernel_cache);
    r.compile = [&] {
        if (p.link && target.ptx_only)
            throw Error(p.description + " is relocatable device code, which nvJitLink links for a real architecture, "
                        "not for " + name + " (PTX only): give an sm_XX target that NVRTC supports");
        save_source_if_asked(kernel_cache->writable_dir(), r.key, p.request.source);
        CompileResult result = compile_cuda(p.request);
        if (p.link) {
            LinkResult linked = link_compiled(p, std::move(result.cubin), name);
            result.cubin = std::move(linked.cubin);
            result.ptx.clear();
            result.compile_ms += linked.link_ms;
            if (!linked.log.empty()) result.log += (result.log.empty() ? "" : "\n") + linked.log;
        }
        if (compile_ms) *compile_ms = result.compile_ms;
        if (log) *log = result.log;
        cache::Entry e;
        e.key = r.key;
        e.meta.kernel_name = p.kernel_name;
        e.meta.types = p.types;
        e.meta.arch = name;
        e.meta.nvrtc_version = nvrtc_version_key() + linker;
        e.meta.created_unix = static_cast<std::int64_t>(std::time(nullptr));
        e.meta.lowered_names = result.lowered_names;
        e.meta.spec_json = spec_of(p);
        e.cubin = result.cubin;
        e.ptx = result.ptx;
        return e;
    };
    return kernel_cache->get(r);
}

[[noreturn]] void fail_not_cached(const CachedProgram& p, const std::string& target, const std::string& why) {
    throw NoDeviceError(p.description + " for " + target + " is in no kernel cache folder and it cannot be compiled: " +
                        why);
}

std::vector<int> supported_archs(bool have_nvrtc) { return have_nvrtc ? nvrtc_supported_archs() : std::vector<int>{}; }

// Records which NVRTC this process loaded beside the writable cache folder, once per folder, so
// that later processes can compute keys without loading it (jit/compile/nvrtc_identity.hpp).
void remember_nvrtc_once(const std::string& dir) {
    static std::mutex mutex;
    static std::set<std::string> done;
    if (dir.empty() || !detail::nvrtc_loaded()) return;
    {
        std::lock_guard lock(mutex);
        if (!done.insert(dir).second) return;
    }
    remember_nvrtc(dir);
}

// The NVRTC identity recorded in `dir` (jit/compile/nvrtc_identity.hpp), read once per folder and process:
// the record describes files that do not change under a running process.
std::optional<NvrtcIdentity> remembered_nvrtc_once(const std::string& dir) {
    static std::mutex mutex;
    static std::map<std::string, std::optional<NvrtcIdentity>> records;
    std::lock_guard lock(mutex);
    auto it = records.find(dir);
    if (it == records.end()) it = records.emplace(dir, remembered_nvrtc(dir)).first;
    return it->second;
}

// A cache hit that does not load NVRTC (6-7 ms): when NVRTC is not loaded yet and the writable
// folder remembers which NVRTC this process would load, the key is computed from that record and
// looked up without compiling. Null on a miss (the caller then loads NVRTC as usual).
std::shared_ptr<const cache::Entry> find_without_loading_nvrtc(CachedProgram& p, const std::string& arch,
                                                               std::optional<int> device_cc = std::nullopt) {
    const std::shared_ptr<cache::KernelCache> kernel_cache = cache::process_cache();
    const std::string dir = kernel_cache->writable_dir();
    if (detail::nvrtc_loaded()) {
        remember_nvrtc_once(dir);
        return nullptr;
    }
    const std::optional<NvrtcIdentity> id = remembered_nvrtc_once(dir);
    if (!id) return nullptr;
    std::string linker;  // a linked program's key needs nvJitLink loaded (cheaper than NVRTC)
    if (!link_version(p, &linker, nullptr)) return nullptr;
    p.request.target = choose_target(arch, id->supported_archs, device_cc);
    const std::vector<std::string> options = compile_options(p.request);
    const std::string name = p.request.target.name();
    return kernel_cache->find_key(cache::make_key(key_source(p), options, name, id->version_key + linker),
                                  spec_to_record(p, *kernel_cache), name);
}

// Every architecture a cubin or PTX of which kjit may find in a cache, newest first.
constexpr int kKnownArchs[] = {121, 120, 110, 103, 100, 90, 89, 88, 87, 86, 80, 75};

// A program with a target of its own (sm_90a): built for it, and loaded only where it runs.
LoadedProgram load_own_target(CachedProgram& p, int ordinal, int cc) {
    if (!p.arch.starts_with("compute_") && !kjit::detail::cubin_runs_on(p.arch, cc))
        throw Error(p.description + " targets " + p.arch + ", whose code runs on " + kjit::detail::where_arch_runs(p.arch) +
                    "; cuda:" + std::to_string(ordinal) + " is compute capability " + std::to_string(cc / 10) + "." +
                    std::to_string(cc % 10));
    const FoundProgram found = find_or_compile_program(p, p.arch);
    LoadedProgram loaded;
    loaded.entry = found.entry;
    std::vector<unsigned char> jitted;  // from compute_XXa PTX: not kept, as the PTX is the entry
    loaded.module = kjit::detail::ModuleRegistry::process().get(found.entry->key, ordinal, [&] {
        return kjit::detail::load_module({found.entry->meta.arch, found.entry->cubin, found.entry->ptx}, ordinal, &jitted);
    });
    loaded.arch = found.entry->meta.arch;
    loaded.compiled_from_ptx = !jitted.empty();
    return loaded;
}

// The program's own target when it has one, else `arch`.
const std::string& target_of(const CachedProgram& p, const std::string& arch) {
    if (p.arch.empty()) return arch;
    if (!arch.empty() && arch != p.arch)
        throw Error(p.description + " targets " + p.arch + " (its own architecture option); it cannot be built for " + arch);
    return p.arch;
}

}  // namespace

std::string alias_key(const CachedProgram& p) {
    return cache::make_alias_key(key_source(p), compile_options(p.request), p.request.target.name());
}


FoundProgram find_or_compile_program(CachedProgram& p, const std::string& requested) {
    const std::string& arch = target_of(p, requested);
    FoundProgram found;
    found.entry = find_without_loading_nvrtc(p, arch);
    if (!found.entry) {
        std::string no_nvrtc;
        const bool have_nvrtc = detail::try_nvrtc(&no_nvrtc) != nullptr;
        const ArchTarget target = choose_target(arch, supported_archs(have_nvrtc));
        found.entry = find_or_compile(p, target, have_nvrtc, &found.compile_ms, &found.log, &no_nvrtc);
        if (!found.entry) fail_not_cached(p, target.name(), no_nvrtc);
        remember_nvrtc_once(cache::process_cache()->writable_dir());
    }
    return found;
}

std::optional<ProgramKeying> program_keying(int device_cc, bool with_identity) {
    if (detail::nvrtc_loaded()) {
        ProgramKeying k{choose_target("", nvrtc_supported_archs(), device_cc).name(), nvrtc_version_key(), {}};
        if (with_identity) {
            const std::optional<NvrtcIdentity> id = loaded_nvrtc_identity();
            if (!id) return std::nullopt;
            k.nvrtc_lines = id->lines;
        }
        return k;
    }
    const std::optional<NvrtcIdentity> id = remembered_nvrtc_once(cache::process_cache()->writable_dir());
    if (!id) return std::nullopt;
    return ProgramKeying{choose_target("", id->supported_archs, device_cc).name(), id->version_key,
                         with_identity ? id->lines : std::string()};
}

std::shared_ptr<kjit::detail::LoadedModule> load_cached_program(const std::string& key, int ordinal, int device_cc,
                                                          const std::string& arch,
                                                          const std::function<std::string()>& spec_json) {
    const std::shared_ptr<cache::KernelCache> kernel_cache = cache::process_cache();
    const std::string spec = kernel_cache->settings().record.empty() || !spec_json ? std::string() : spec_json();
    const std::shared_ptr<const cache::Entry> entry = kernel_cache->find_key(key, spec, arch);
    return load_entry_module(entry, ordinal, device_cc);
}

std::shared_ptr<kjit::detail::LoadedModule> load_entry_module(const std::shared_ptr<const cache::Entry>& entry, int ordinal,
                                                        int device_cc) {
    if (!entry || entry->cubin.empty() || !detail::cubin_runs_on(entry->meta.arch, device_cc)) return nullptr;
    auto module = detail::ModuleRegistry::process().get(entry->key, ordinal, [&] {
        auto m = detail::load_module({entry->meta.arch, entry->cubin, entry->ptx}, ordinal, nullptr);
        return m;
    });
    return module;
}

LoadedProgram load_program(CachedProgram& p, int ordinal) {
    const int cc = kjit::detail::device_attributes(ordinal).compute_capability();
    if (!p.arch.empty()) return load_own_target(p, ordinal, cc);
    ArchTarget native;
    native.requested = native.compiled = cc;
    native.origin = "device";
    // A cubin for this GPU found without loading NVRTC (see find_without_loading_nvrtc).
    std::shared_ptr<const cache::Entry> entry = find_without_loading_nvrtc(p, "", cc);
    if (entry && !detail::cubin_runs_on(entry->meta.arch, cc)) entry = nullptr;
    std::string no_nvrtc;
    const bool have_nvrtc = entry ? false : detail::try_nvrtc(&no_nvrtc) != nullptr;
    // The device's own cubin, when a cache has it (also one the driver made from PTX earlier).
    if (!entry) {
        const ArchTarget target = choose_target("", supported_archs(have_nvrtc), cc);
        if (!have_nvrtc || target.ptx_only || target.compiled != cc)
            entry = find_or_compile(p, native, false, nullptr, nullptr);
        if (!entry && have_nvrtc) entry = find_or_compile(p, target, true, nullptr, nullptr, &no_nvrtc);
        remember_nvrtc_once(cache::process_cache()->writable_dir());
    }
    // Without NVRTC: PTX precompiled for an older architecture, compiled for this GPU by the driver.
    // Not for a linked program: its entries hold no PTX (relocatable PTX cannot be loaded alone).
    for (const int older : kKnownArchs) {
        if (entry || have_nvrtc || older >= cc || p.link) continue;
        ArchTarget t;
        t.requested = t.compiled = older;
        t.origin = "cache";
        entry = find_or_compile(p, t, false, nullptr, nullptr);
        if (entry && entry->ptx.empty()) entry = nullptr;
    }
    if (!entry) fail_not_cached(p, native.name(), no_nvrtc);

    std::vector<unsigned char> jitted;
    LoadedProgram loaded;
    loaded.module = detail::ModuleRegistry::process().get(entry->key, ordinal, [&] {
        return detail::load_module({entry->meta.arch, entry->cubin, entry->ptx}, ordinal, &jitted);
    });
    loaded.arch = entry->meta.arch;
    loaded.entry = entry;
    if (!jitted.empty()) {
        // Keep what the driver made under the device's own architecture, so that the next process
        // loads the cubin instead of compiling the PTX again.
        p.request.target = native;
        const std::vector<std::string> options = compile_options(p.request);
        const std::string jit_version = "driver-jit-" + std::to_string(driver_version());
        cache::Entry e;
        e.key = cache::make_key(key_source(p), options, native.name(), jit_version);
        e.meta = entry->meta;
        e.meta.arch = native.name();
        e.meta.nvrtc_version = jit_version + " from " + entry->meta.arch;
        e.meta.created_unix = static_cast<std::int64_t>(std::time(nullptr));
        e.cubin = std::move(jitted);
        e.ptx = entry->ptx;
        cache::process_cache()->store(e, cache::make_alias_key(key_source(p), options, native.name()));
        loaded.arch = native.name();
        loaded.compiled_from_ptx = true;
    }
    return loaded;
}

}  // namespace kjit::jit::compile

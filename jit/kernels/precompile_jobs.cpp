#include "jit/kernels/precompile_jobs.hpp"

#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <mutex>

#include "jit/compile/program_store.hpp"
#include "jit/kernels/ops/arg_reduction.hpp"
#include "jit/kernels/ops/builtin_reductions.hpp"
#include "jit/kernels/manifest_fields.hpp"
#include "jit/kernels/elementwise/manifest.hpp"
#include "jit/kernels/reduction/manifest.hpp"
#include "jit/kernels/reduction/calls.hpp"
#include "jit/kernels/scan/scans.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"
#include "kjit/raw_kernel.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/printable.hpp"

namespace kjit::jit::kernels {
namespace {

// Calls f(group, index64) for every module a reduction's calls may load: one job each.
template <class F>
void for_each_reduction_group(F f) {
    for (int g = 0; g < kReductionEntryGroups; ++g)
        for (const bool wide : {false, true})
            if (reduction_group_exists(static_cast<ReductionEntryGroup>(g), wide)) f(static_cast<ReductionEntryGroup>(g), wide);
}

// What the jobs of one binding of a kernel for one architecture found (each job one program: a
// variant of an elementwise kernel, a strategy's group of a reduction): when the last of them is
// done and none failed, the kernel's plan note for GPUs of that architecture is written
// (jit/kernels/plan_note.hpp), so that a process using the folder as a read-only cache takes its
// first call straight to the programs.
struct NoteOfJobs {
    using Write = std::function<bool(const std::vector<std::string>& keys, const std::vector<std::string>& aliases)>;
    NoteOfJobs(std::size_t jobs, std::size_t programs, Write write)
        : left(jobs), keys(programs), aliases(programs), write(std::move(write)) {}
    std::mutex mutex;
    std::size_t left;
    bool failed = false;
    std::vector<std::string> keys, aliases;  // per program
    Write write;
};

// One job of `note`: compiles program `slot`, then writes the note if it is the last one. A note
// that cannot be written is only a lost shortcut, never the job's failure.
void compile_noted(const std::function<CompiledModules()>& compile, std::size_t slot, NoteOfJobs& note) {
    CompiledModules c;
    try {
        c = compile();
    } catch (...) {
        std::lock_guard lock(note.mutex);
        note.failed = true;
        --note.left;
        throw;
    }
    std::unique_lock lock(note.mutex);
    note.keys[slot] = c.key;
    note.aliases[slot] = c.alias;
    if (--note.left != 0 || note.failed) return;
    lock.unlock();  // the last job: no other touches the note now
    try {
        (void)note.write(note.keys, note.aliases);
    } catch (const std::exception&) {
    }
}

// With `load_on` >= 0 (warm()), the module just compiled or found, loaded on that device as a
// call loads it: by its entry's key, into the process's module registry, where a later call of
// the same kernel finds it without loading anything.
std::atomic<std::uint64_t> g_modules_loaded{0};

CompiledModules load_compiled(CompiledModules c, int load_on) {
    if (load_on < 0 || c.key.empty()) return c;  // empty: a variant the kernel does not have
    const int cc = kjit::detail::device_attributes(load_on).compute_capability();
    if (!compile::load_cached_program(c.key, load_on, cc, c.arch, {}))
        throw Error("built for " + c.arch + ", which does not run on cuda:" + std::to_string(load_on) + " (compute capability " +
                    std::to_string(cc / 10) + "." + std::to_string(cc % 10) + ")");
    ++g_modules_loaded;
    return c;
}

// kjit's own kernel for a "builtin" entry's binding, and the binding it compiles with: argmin and
// argmax take T; var and std (with a fold of their own for float32, float16 and bfloat16) are a
// kernel per dtype T and "ddof", with no placeholder.
std::pair<const ReductionKernel*, TypeBinding> builtin_for(const std::string& name, const nlohmann::json& e, const TypeBinding& b) {
    if (name != "kjit_var" && name != "kjit_std") return {&builtin_kernel_named(name), b};
    const auto t = b.find("T");
    if (t == b.end()) throw CacheError("a \"builtin\" " + name + " entry needs the type T of its data");
    double ddof = 0;
    if (e.contains("ddof")) {
        if (!e["ddof"].is_number() || !std::isfinite(e["ddof"].get<double>()) || e["ddof"].get<double>() < 0)
            throw CacheError("a \"builtin\" " + name + " entry's \"ddof\" must be a finite number >= 0");
        ddof = e["ddof"].get<double>();
    }
    return {&numpy_reduction(name.substr(5), t->second, ddof), {}};
}

// The jobs of one manifest entry; a malformed entry is a failure, not an exception. A job holds
// the entry by shared pointer and its binding by index: copies of the entry's bindings in each of
// its (bindings x variants x archs) jobs took 885 MB for 1,000 bindings.
void add_jobs(const nlohmann::json& e, std::size_t index, const std::vector<std::string>& archs, int load_on,
              std::vector<PrecompileJob>& jobs, std::vector<std::string>& failures) {
    // The name is the manifest's text: printed in messages, so its control bytes are escaped.
    const std::string given = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "kernel";
    const std::string name = detail::printable(given);
    const std::string where = "kernel " + std::to_string(index) + " ('" + name + "')";
    try {
        if (is_raw_manifest_entry(e)) {
            // warm() loads what calls load; a raw module is loaded at its kernels' first use.
            if (load_on >= 0) return;
            // One module per architecture; it has no type bindings. Copies of a RawModule share
            // their state.
            const RawModule module = raw_module_from_manifest_entry(e);
            // A module with a target of its own (sm_90a) is built for that one alone.
            if (!module.options().arch.empty()) {
                const std::string arch = module.options().arch;
                jobs.push_back({name + " (raw) for " + arch, [module, arch] { module.compile(arch); }});
                return;
            }
            for (const std::string& arch : archs)
                jobs.push_back({name + " (raw) for " + arch, [module, arch] { module.compile(arch); }});
            return;
        }
        if (e.is_object() && e.contains("kind") && e["kind"] == "builtin") {
            // kjit's own kernels (argmin, argmax, var, std): found by name, compiled for each binding.
            const std::vector<TypeBinding> given_bindings = manifest_bindings(e);
            if (given_bindings.empty()) throw CacheError("a \"builtin\" entry needs \"types\"");
            for (const TypeBinding& given_binding : given_bindings) {
                const auto [k, binding] = builtin_for(given, e, given_binding);
                const auto shared = std::make_shared<const TypeBinding>(binding);
                for (const std::string& arch : archs)
                    for_each_reduction_group([&](ReductionEntryGroup g, bool wide) {
                        jobs.push_back({name + " (builtin, " + format_type_binding(given_binding) + ", " + reduction_group_label(g, wide) +
                                            ") for " + arch,
                                        [k, shared, arch, g, wide, load_on] {
                                            load_compiled(compile_reduction_group(*k, *shared, {}, arch, g, wide), load_on);
                                        }});
                    });
            }
            return;
        }
        if (is_scan_manifest_entry(e)) {
            ManifestScan read = scan_from_manifest_entry(e);
            if (read.bindings.empty()) read.bindings.emplace_back();
            const auto m = std::make_shared<const ManifestScan>(std::move(read));
            for (std::size_t i = 0; i < m->bindings.size(); ++i) {
                const TypeBinding& b = m->bindings[i];
                try {
                    m->kernel.check(b);
                } catch (const std::exception& ex) {
                    failures.push_back(detail::printable(name + " (scan, " + format_type_binding(b) + "):\n" + ex.what(), true));
                    continue;
                }
                const ModuleVariant variant = m->variant();
                for (const std::string& arch : archs)
                    for (std::size_t g = 0; g < static_cast<std::size_t>(kScanGroups); ++g)
                        jobs.push_back({name + " (scan, " + format_type_binding(b) + ", " + scan_group_label(g) + ") for " + arch,
                                        [m, i, variant, arch, g, load_on] {
                                            load_compiled(compile_scan_group(m->kernel, m->bindings[i], variant, arch, g), load_on);
                                        }});
            }
            return;
        }
        if (is_reduction_manifest_entry(e)) {
            ManifestReduction read = reduction_from_manifest_entry(e);
            if (read.bindings.empty()) read.bindings.emplace_back();
            const auto m = std::make_shared<const ManifestReduction>(std::move(read));
            for (std::size_t i = 0; i < m->bindings.size(); ++i) {
                const TypeBinding& b = m->bindings[i];
                // Checked once here: a mistake is one failure, not one per strategy module.
                try {
                    m->kernel.check(b);
                } catch (const std::exception& ex) {
                    failures.push_back(detail::printable(name + " (reduction, " + format_type_binding(b) + "):\n" + ex.what(), true));
                    continue;
                }
                const ModuleVariant variant = m->variant();
                for (const std::string& arch : archs) {
                    const std::size_t programs = static_cast<std::size_t>(kReductionEntryGroups) * 2;  // slots
                    const auto note = std::make_shared<NoteOfJobs>(static_cast<std::size_t>(kReductionPrograms), programs, [m, i, variant, arch](const auto& keys, const auto& aliases) {
                        return note_reduction_programs(m->kernel, m->bindings[i], variant, arch, keys, aliases);
                    });
                    for_each_reduction_group([&](ReductionEntryGroup g, bool wide) {
                        const std::size_t slot = static_cast<std::size_t>(g) * 2 + (wide ? 1 : 0);
                        jobs.push_back({name + " (reduction, " + format_type_binding(b) + ", " + reduction_group_label(g, wide) +
                                            ") for " + arch,
                                        [m, i, variant, arch, g, wide, slot, note, load_on] {
                                            compile_noted([&] {
                                                return load_compiled(compile_reduction_group(m->kernel, m->bindings[i], variant, arch, g, wide), load_on);
                                            }, slot, *note);
                                        }});
                    });
                }
            }
            return;
        }
        ManifestKernel read = kernel_from_manifest_entry(e);
        if (read.bindings.empty()) read.bindings.emplace_back();
        const auto m = std::make_shared<const ManifestKernel>(std::move(read));
        const ModuleVariant variant = m->variant();
        for (std::size_t i = 0; i < m->bindings.size(); ++i) {
            const TypeBinding& b = m->bindings[i];
            // The variants this binding has (and the kernel checked once: a mistake is one failure).
            std::vector<ElementwiseEntry> entries;
            try {
                entries = elementwise_entries(m->kernel, b, variant);
            } catch (const std::exception& ex) {
                failures.push_back(detail::printable(name + " (" + format_type_binding(b) + "):\n" + ex.what(), true));
                continue;
            }
            for (const std::string& arch : archs) {
                const auto note = std::make_shared<NoteOfJobs>(entries.size(), kElementwiseEntries, [m, i, variant, arch](const auto& keys, const auto& aliases) {
                    return note_elementwise_programs(m->kernel, m->bindings[i], variant, arch, keys, aliases);
                });
                for (const ElementwiseEntry entry : entries)
                    jobs.push_back({name + " (" + format_type_binding(b) + ", " + elementwise_entry_label(entry) + ") for " + arch,
                                    [m, i, variant, arch, entry, note, load_on] {
                                        compile_noted([&] {
                                            return load_compiled(compile_elementwise_entry(m->kernel, m->bindings[i], variant, arch, entry), load_on);
                                        }, static_cast<std::size_t>(entry), *note);
                                    }});
            }
        }
    } catch (const std::exception& ex) {
        failures.push_back(detail::printable(where + ": " + ex.what(), true));
    }
}

}  // namespace

std::uint64_t modules_loaded_by_jobs() noexcept { return g_modules_loaded.load(); }

std::vector<PrecompileJob> precompile_jobs(const nlohmann::json& manifest, const std::vector<std::string>& archs,
                                           std::vector<std::string>& failures, int load_on) {
    std::vector<PrecompileJob> jobs;
    for (std::size_t n = 0; n < manifest["kernels"].size(); ++n) add_jobs(manifest["kernels"][n], n, archs, load_on, jobs, failures);
    return jobs;
}

}  // namespace kjit::jit::kernels

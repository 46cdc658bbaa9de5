#include "jit/precompile.hpp"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "jit/manifest_kernel.hpp"
#include "jit/arg_reduction.hpp"
#include "jit/manifest_fields.hpp"
#include "jit/manifest_reduction.hpp"
#include "jit/reduction_calls.hpp"
#include "kjit/cache.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"
#include "kjit/raw_kernel.hpp"

namespace kjit::jit {
namespace {

struct Job {
    std::string label;  // "axpb (T=float32) for sm_90"
    std::function<void()> compile;
};

// Calls f(group, index64) for every module a reduction's calls may load: one job each.
template <class F>
void for_each_reduction_group(F f) {
    for (int g = 0; g < kReductionEntryGroups; ++g)
        for (const bool wide : {false, true}) f(static_cast<ReductionEntryGroup>(g), wide);
}

// The jobs of one manifest entry; a malformed entry is a failure, not an exception.
void add_jobs(const nlohmann::json& e, std::size_t index, const std::vector<std::string>& archs, std::vector<Job>& jobs,
              std::vector<std::string>& failures) {
    const std::string name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "kernel";
    const std::string where = "kernel " + std::to_string(index) + " ('" + name + "')";
    try {
        if (is_raw_manifest_entry(e)) {
            // One module per architecture; it has no type bindings.
            const RawModule module = raw_module_from_manifest_entry(e);
            for (const std::string& arch : archs)
                jobs.push_back({module.name() + " (raw) for " + arch, [module, arch] { module.compile(arch); }});
            return;
        }
        if (e.is_object() && e.contains("kind") && e["kind"] == "builtin") {
            // kjit's own kernels (argmin, argmax): found by name, compiled for each binding.
            const ReductionKernel& k = builtin_kernel_named(name);
            std::vector<TypeBinding> bindings = manifest_bindings(e);
            if (bindings.empty()) throw CacheError("a \"builtin\" entry needs \"types\"");
            for (const TypeBinding& b : bindings)
                for (const std::string& arch : archs)
                    for_each_reduction_group([&](ReductionEntryGroup g, bool wide) {
                        jobs.push_back({name + " (builtin, " + format_type_binding(b) + ", " + reduction_group_label(g, wide) +
                                            ") for " + arch,
                                        [&k, b, arch, g, wide] { (void)compile_reduction_group(k, b, {}, arch, g, wide); }});
                    });
            return;
        }
        if (is_reduction_manifest_entry(e)) {
            ManifestReduction m = reduction_from_manifest_entry(e);
            if (m.bindings.empty()) m.bindings.emplace_back();
            for (const TypeBinding& b : m.bindings) {
                // Checked once here: a mistake is one failure, not one per strategy module.
                try {
                    m.kernel.check(b);
                } catch (const std::exception& ex) {
                    failures.push_back(name + " (reduction, " + format_type_binding(b) + "):\n" + ex.what());
                    continue;
                }
                for (const std::string& arch : archs)
                    for_each_reduction_group([&](ReductionEntryGroup g, bool wide) {
                        jobs.push_back({name + " (reduction, " + format_type_binding(b) + ", " + reduction_group_label(g, wide) +
                                            ") for " + arch,
                                        [m, b, arch, g, wide] { compile_manifest_reduction(m, b, arch, g, wide); }});
                    });
            }
            return;
        }
        ManifestKernel m = kernel_from_manifest_entry(e);
        if (m.bindings.empty()) m.bindings.emplace_back();
        for (const TypeBinding& b : m.bindings) {
            // The variants this binding has (and the kernel checked once: a mistake is one failure).
            std::vector<ElementwiseEntry> entries;
            try {
                entries = elementwise_entries(m.kernel, b, manifest_kernel_variant(m));
            } catch (const std::exception& ex) {
                failures.push_back(name + " (" + format_type_binding(b) + "):\n" + ex.what());
                continue;
            }
            for (const std::string& arch : archs)
                for (const ElementwiseEntry entry : entries)
                    jobs.push_back({name + " (" + format_type_binding(b) + ", " + elementwise_entry_label(entry) + ") for " + arch,
                                    [m, b, arch, entry] { compile_manifest_kernel(m, b, arch, entry); }});
        }
    } catch (const std::exception& ex) {
        failures.push_back(where + ": " + ex.what());
    }
}

}  // namespace

PrecompileResult precompile(const nlohmann::json& manifest, std::vector<std::string> archs, int threads,
                            const std::function<void(std::size_t, std::size_t)>& on_step) {
    if (archs.empty() && manifest.contains("arch")) archs = manifest["arch"].get<std::vector<std::string>>();
    if (archs.empty()) throw Error("no architecture: give one (e.g. sm_80,sm_90) or an \"arch\" list in the manifest");
    PrecompileResult result;
    std::vector<Job> jobs;
    for (std::size_t n = 0; n < manifest["kernels"].size(); ++n) add_jobs(manifest["kernels"][n], n, archs, jobs, result.failures);
    result.jobs = jobs.size();

    const std::uint64_t compiles_before = cache_stats().compiles;
    const CacheStats stores_before = cache_stats();
    const auto start = std::chrono::steady_clock::now();
    std::mutex failures_mutex;
    std::atomic<std::size_t> next{0}, done{0};
    const int n = threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    std::vector<std::thread> workers;
    for (int w = 0; w < n; ++w) {
        workers.emplace_back([&] {
            for (std::size_t j; (j = next++) < jobs.size();) {
                try {
                    jobs[j].compile();
                } catch (const std::exception& e) {
                    std::lock_guard lock(failures_mutex);
                    result.failures.push_back(jobs[j].label + ":\n" + e.what());
                }
                const std::size_t finished = ++done;
                if (on_step) on_step(finished, jobs.size());
            }
        });
    }
    for (std::thread& t : workers) t.join();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.compiled = static_cast<std::size_t>(cache_stats().compiles - compiles_before);
    // What the writable folder (layer 0, when there is one) kept of what was compiled, and not.
    if (const CacheStats after = cache_stats(); !after.layers.empty() && !stores_before.layers.empty()) {
        result.stored = static_cast<std::size_t>(after.layers[0].stores - stores_before.layers[0].stores);
        result.not_stored = static_cast<std::size_t>(after.layers[0].store_failures - stores_before.layers[0].store_failures);
    }
    return result;
}

}  // namespace kjit::jit

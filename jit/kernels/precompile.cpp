#include "jit/kernels/precompile.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "jit/compile/arch.hpp"
#include "jit/compile/program_store.hpp"
#include "jit/kernels/precompile_jobs.hpp"
#include "jit/kernels/worker_threads.hpp"
#include "kjit/cache.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/log.hpp"
#include "runtime/detail/nvrtc.hpp"
#include "runtime/detail/printable.hpp"

namespace kjit::jit::kernels {
namespace {

// The architectures that can be compiled for; each one that cannot is one failure here, not one
// per job. Only the spelling is checked when there is no NVRTC to say what it targets.
std::vector<std::string> usable_archs(const std::vector<std::string>& archs, std::vector<std::string>& failures) {
    std::vector<int> supported;
    try {
        supported = compile::nvrtc_supported_archs();
    } catch (const Error&) {
        // No NVRTC, or one that cannot say: the jobs can only look for what a cache has, or
        // meet the same fault, and each says so itself.
    }
    std::vector<std::string> usable;
    for (const std::string& arch : archs) {
        try {
            const compile::ArchSpec spec = compile::parse_arch(arch, "arch");
            if (!supported.empty()) (void)compile::clamp_arch(spec, supported, "the arch list");
            usable.push_back(arch);
        } catch (const Error& e) {
            failures.push_back(detail::printable(std::string(e.what()) + "; nothing is compiled for it"));
        }
    }
    return usable;
}

// Runs the jobs on up to `threads` threads (<= 0: one per core), adding each failure to `failures`;
// returns how many threads ran them.
int run_jobs(const std::vector<PrecompileJob>& jobs, int threads, const std::function<void(std::size_t, std::size_t, const std::string&)>& on_step,
              std::vector<std::string>& failures) {
    std::mutex failures_mutex;
    std::atomic<std::size_t> next{0}, done{0};
    int n = threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    n = static_cast<int>(std::clamp<std::size_t>(jobs.size(), 1, static_cast<std::size_t>(n)));  // no idle threads
    std::string why_fewer;
    const int ran = run_on_threads(
        n,
        [&] {
            for (std::size_t j; (j = next++) < jobs.size();) {
                try {
                    jobs[j].compile();
                } catch (const std::exception& e) {
                    std::lock_guard lock(failures_mutex);
                    failures.push_back(detail::printable(jobs[j].label + ":\n" + e.what(), true));
                }
                const std::size_t finished = ++done;
                if (on_step) on_step(finished, jobs.size(), jobs[j].label);
            }
        },
        &why_fewer);
    if (ran < n)
        detail::log(detail::LogLevel::warn, "precompile: the system gave " + std::to_string(ran) + " of the " + std::to_string(n) +
                                                " threads asked for (" + why_fewer + "); the jobs ran on those");
    return ran;
}

}  // namespace

namespace {

// Runs `jobs`, filling in the counts of `result`.
void run_counted(const std::vector<PrecompileJob>& jobs, int threads, const std::function<void(std::size_t, std::size_t, const std::string&)>& on_step,
                 PrecompileResult& result) {
    result.jobs = jobs.size();

    const std::uint64_t compiles_before = cache_stats().compiles;
    const CacheStats stores_before = cache_stats();
    const auto start = std::chrono::steady_clock::now();
    const std::size_t failed_before = result.failures.size();
    result.threads = run_jobs(jobs, threads, on_step, result.failures);
    result.failed_jobs = result.failures.size() - failed_before;
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.compiled = static_cast<std::size_t>(cache_stats().compiles - compiles_before);
    // What the writable folder (layer 0, when there is one) kept of what was compiled, and not.
    if (const CacheStats after = cache_stats(); !after.layers.empty() && !stores_before.layers.empty()) {
        result.stored = static_cast<std::size_t>(after.layers[0].stores - stores_before.layers[0].stores);
        result.not_stored = static_cast<std::size_t>(after.layers[0].store_failures - stores_before.layers[0].store_failures);
    }
}

}  // namespace

PrecompileResult precompile(const nlohmann::json& manifest, std::vector<std::string> archs, int threads,
                            const std::function<void(std::size_t, std::size_t, const std::string&)>& on_step) {
    if (archs.empty() && manifest.contains("arch")) archs = manifest["arch"].get<std::vector<std::string>>();
    if (archs.empty()) throw Error("no architecture: give one (e.g. sm_80,sm_90) or an \"arch\" list in the manifest");
    PrecompileResult result;
    archs = usable_archs(archs, result.failures);
    result.kernels = manifest["kernels"].size();
    result.archs = archs;
    run_counted(precompile_jobs(manifest, archs, result.failures), threads, on_step, result);
    return result;
}

PrecompileResult warm(const nlohmann::json& manifest, int ordinal, int threads) {
    const int cc = kjit::detail::device_attributes(ordinal).compute_capability();
    // The architecture a call on this device builds for (NVRTC's choice, or the one a cache was
    // built with when there is no NVRTC), so that the keys are the ones calls look up.
    std::string no_nvrtc;
    (void)kjit::detail::try_nvrtc(&no_nvrtc);  // loaded when there is one: its targets decide
    const std::optional<compile::ProgramKeying> keying = compile::program_keying(cc);
    if (!keying)
        throw Error("kjit::warm: there is no NVRTC and no kernel cache that says which compiler built it, so kjit cannot tell "
                    "which cache entries calls on cuda:" + std::to_string(ordinal) + " will look for");
    PrecompileResult result;
    const std::uint64_t loaded_before = modules_loaded_by_jobs();
    run_counted(precompile_jobs(manifest, {keying->target}, result.failures, ordinal), threads, {}, result);
    result.loaded = static_cast<std::size_t>(modules_loaded_by_jobs() - loaded_before);
    return result;
}

}  // namespace kjit::jit::kernels

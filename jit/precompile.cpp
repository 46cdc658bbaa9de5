#include "jit/precompile.hpp"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "jit/precompile_jobs.hpp"
#include "kjit/cache.hpp"
#include "kjit/error.hpp"

namespace kjit::jit {

PrecompileResult precompile(const nlohmann::json& manifest, std::vector<std::string> archs, int threads,
                            const std::function<void(std::size_t, std::size_t)>& on_step) {
    if (archs.empty() && manifest.contains("arch")) archs = manifest["arch"].get<std::vector<std::string>>();
    if (archs.empty()) throw Error("no architecture: give one (e.g. sm_80,sm_90) or an \"arch\" list in the manifest");
    PrecompileResult result;
    const std::vector<PrecompileJob> jobs = precompile_jobs(manifest, archs, result.failures);
    result.jobs = jobs.size();

    const std::uint64_t compiles_before = cache_stats().compiles;
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
    return result;
}

}  // namespace kjit::jit

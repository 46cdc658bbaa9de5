// Precompiling a manifest (jit/precompile.hpp) where it strains: an entry of many bindings, a
// system that will not give the threads asked for. No job here reaches NVRTC: without it each job
// fails at once, which is enough to count the jobs that ran.
#include "test_support.hpp"

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "allocation_counter.hpp"
#include "jit/precompile.hpp"
#include "jit/precompile_jobs.hpp"
#include "jit/worker_threads.hpp"
#include "kjit/cache.hpp"
#include "runtime/detail/nvrtc.hpp"

using kjit::test::ProcessCacheGuard;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// An elementwise entry with `bindings` bindings (the same one repeated: precompile does not
// merge them, and each is checked and given its jobs).
json entry_with_bindings(const std::string& name, std::size_t bindings) {
    json e = {{"kind", "elementwise"}, {"name", name}, {"in", "T x"}, {"out", "T y"}, {"op", "y = x * 2"}};
    e["types"] = json::array();
    for (std::size_t i = 0; i < bindings; ++i) e["types"].push_back({{"T", "float32"}});
    return e;
}

// Heap allocations made building the jobs of one entry of `bindings` bindings, per binding.
std::size_t allocations_per_binding(std::size_t bindings) {
    const json manifest = {{"kernels", json::array({entry_with_bindings("many", bindings)})}};
    std::vector<std::string> failures;
    std::size_t jobs = 0, allocations = 0;
    {
        const kjit::test::CountAllocations count;
        jobs = kjit::jit::precompile_jobs(manifest, {"sm_90"}, failures).size();
        allocations = count.count();
    }
    REQUIRE(failures.empty());
    REQUIRE(jobs >= bindings);
    return allocations / bindings;
}

// A process cache in `dir` and no NVRTC, for the scope's lifetime: every job then fails at once.
struct NoNvrtcCache {
    explicit NoNvrtcCache(const kjit::test::TempDir& dir) { kjit::configure_cache(kjit::test::cache_in(dir.path())); }
    ProcessCacheGuard restore;
    kjit::detail::ScopedNvrtcOverride no_nvrtc{nullptr};
};

}  // namespace

TEST_CASE("the jobs of a manifest entry share it: memory linear in its bindings, not quadratic", "[manifest]") {
    // Each job used to hold a copy of the entry with all its bindings: 1,000 bindings took 885 MB.
    const std::size_t small = allocations_per_binding(100);
    if (small == 0) {
        WARN("SKIPPED: heap allocations are not counted in this build (a sanitizer keeps its own operator new)");
        return;
    }
    const std::size_t large = allocations_per_binding(800);
    INFO("allocations per binding: " << small << " for 100 bindings, " << large << " for 800");
    CHECK(large * 2 < small * 3);  // the same per binding, give or take
}

TEST_CASE("precompile with fewer threads than asked runs every job on those it has", "[manifest]") {
    const kjit::test::TempDir dir;
    const NoNvrtcCache cache(dir);
    const json manifest = {{"kernels", json::array({entry_with_bindings("threads", 6)})}};
    for (const int allowed : {0, 1, 3}) {
        INFO(allowed << " threads besides the calling one");
        const kjit::jit::ScopedThreadStartLimit limit(allowed);
        std::mutex mutex;
        std::set<std::thread::id> workers;
        std::size_t steps = 0, last = 0;
        const kjit::jit::PrecompileResult r = kjit::jit::precompile(manifest, {"sm_90"}, 16, [&](std::size_t done, std::size_t) {
            const std::lock_guard lock(mutex);
            workers.insert(std::this_thread::get_id());
            ++steps;
            last = std::max(last, done);
        });
        REQUIRE(r.jobs >= 6);
        CHECK(r.failures.size() == r.jobs);  // each job ran once, and failed for want of NVRTC
        CHECK(steps == r.jobs);
        CHECK(last == r.jobs);
        CHECK(workers.size() <= static_cast<std::size_t>(allowed) + 1);
        if (allowed == 0) CHECK(workers == std::set<std::thread::id>{std::this_thread::get_id()});
    }
}

TEST_CASE("run_on_threads joins every thread it started and rethrows what the work threw", "[manifest]") {
    std::string why;
    {
        const kjit::jit::ScopedThreadStartLimit limit(2);
        std::atomic<int> calls{0};
        CHECK(kjit::jit::run_on_threads(8, [&] { ++calls; }, &why) == 3);
        CHECK(calls == 3);
        CHECK_FALSE(why.empty());
    }
    why.clear();
    std::atomic<int> calls{0};
    CHECK(kjit::jit::run_on_threads(4, [&] { ++calls; }, &why) == 4);
    CHECK(calls == 4);
    CHECK(why.empty());
    // The work throwing on the calling thread and on the others: the threads are joined (a
    // joinable std::thread destroyed would terminate the process) and one exception comes back.
    std::atomic<int> finished{0};
    CHECK_THROWS_WITH(kjit::jit::run_on_threads(4,
                                                [&] {
                                                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                                    ++finished;
                                                    throw std::runtime_error("work failed");
                                                }),
                      "work failed");
    CHECK(finished == 4);
}

// Precompiling a manifest (jit/kernels/precompile.hpp) where it strains: an entry of many bindings, a
// system that will not give the threads asked for, an architecture that cannot be compiled for,
// and names whose bytes would drive a terminal. No job here reaches NVRTC: without it each job
// fails at once, which is enough to count the jobs that ran.
#include "test_support.hpp"

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "allocation_counter.hpp"
#include "jit/kernels/precompile.hpp"
#include "jit/kernels/precompile_jobs.hpp"
#include "jit/kernels/worker_threads.hpp"
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
        jobs = kjit::jit::kernels::precompile_jobs(manifest, {"sm_90"}, failures).size();
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
        const kjit::jit::kernels::ScopedThreadStartLimit limit(allowed);
        std::mutex mutex;
        std::set<std::thread::id> workers;
        std::size_t steps = 0, last = 0;
        std::set<std::string> labels;
        const kjit::jit::kernels::PrecompileResult r =
            kjit::jit::kernels::precompile(manifest, {"sm_90"}, 16, [&](std::size_t done, std::size_t, const std::string& finished) {
                const std::lock_guard lock(mutex);
                workers.insert(std::this_thread::get_id());
                ++steps;
                last = std::max(last, done);
                labels.insert(finished);
            });
        REQUIRE(r.jobs >= 6);
        CHECK(r.failures.size() == r.jobs);  // each job ran once, and failed for want of NVRTC
        CHECK(steps == r.jobs);
        CHECK(last == r.jobs);
        CHECK(workers.size() <= static_cast<std::size_t>(allowed) + 1);
        CHECK(r.threads >= static_cast<int>(workers.size()));  // a thread may find every job taken
        CHECK(r.threads <= allowed + 1);
        CHECK_FALSE(labels.count(""));  // each step names the job it finished
        CHECK(r.kernels == 1);
        CHECK(r.archs == std::vector<std::string>{"sm_90"});
        if (allowed == 0) CHECK(workers == std::set<std::thread::id>{std::this_thread::get_id()});
    }
}

TEST_CASE("run_on_threads joins every thread it started and rethrows what the work threw", "[manifest]") {
    std::string why;
    {
        const kjit::jit::kernels::ScopedThreadStartLimit limit(2);
        std::atomic<int> calls{0};
        CHECK(kjit::jit::kernels::run_on_threads(8, [&] { ++calls; }, &why) == 3);
        CHECK(calls == 3);
        CHECK_FALSE(why.empty());
    }
    why.clear();
    std::atomic<int> calls{0};
    CHECK(kjit::jit::kernels::run_on_threads(4, [&] { ++calls; }, &why) == 4);
    CHECK(calls == 4);
    CHECK(why.empty());
    // The work throwing on the calling thread and on the others: the threads are joined (a
    // joinable std::thread destroyed would terminate the process) and one exception comes back.
    std::atomic<int> finished{0};
    CHECK_THROWS_WITH(kjit::jit::kernels::run_on_threads(4,
                                                [&] {
                                                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                                    ++finished;
                                                    throw std::runtime_error("work failed");
                                                }),
                      "work failed");
    CHECK(finished == 4);
}

TEST_CASE("an architecture that cannot be compiled for is one failure, not one per job", "[manifest]") {
    const kjit::test::TempDir dir;
    const NoNvrtcCache cache(dir);
    const json manifest = {{"kernels", json::array({entry_with_bindings("a", 3), entry_with_bindings("b", 2)})}};
    const kjit::jit::kernels::PrecompileResult bad = kjit::jit::kernels::precompile(manifest, {"sm_9x", "compute_90q"}, 2);
    CHECK(bad.jobs == 0);
    REQUIRE(bad.failures.size() == 2);
    CHECK_THAT(bad.failures[0], Contains("'sm_9x'") && Contains("nothing is compiled for it"));
    CHECK_THAT(bad.failures[1], Contains("'compute_90q'") && Contains("'a' or 'f' suffix"));

    // Beside a good one: its jobs run, and the bad one is still reported once.
    json with_arch = manifest;
    with_arch["arch"] = {"sm_90", "sm_9x"};
    const kjit::jit::kernels::PrecompileResult mixed = kjit::jit::kernels::precompile(with_arch, {}, 2);
    CHECK(mixed.jobs > 0);
    std::size_t naming_it = 0;
    for (const std::string& f : mixed.failures) naming_it += f.find("sm_9x") != std::string::npos;
    CHECK(naming_it == 1);
    CHECK(mixed.failures.size() == mixed.jobs + 1);
}

TEST_CASE("an architecture older than NVRTC supports is one failure", "[manifest][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(kjit::test::cache_in(dir.path()));
    const json manifest = {{"kernels", json::array({entry_with_bindings("old", 3)})}};
    const kjit::jit::kernels::PrecompileResult r = kjit::jit::kernels::precompile(manifest, {"sm_20"}, 2);
    CHECK(r.jobs == 0);
    REQUIRE(r.failures.size() == 1);
    CHECK_THAT(r.failures[0], Contains("sm_20"));
}

TEST_CASE("precompile's failures show a manifest's control bytes escaped", "[manifest]") {
    const kjit::test::TempDir dir;
    const NoNvrtcCache cache(dir);
    json wrong = entry_with_bindings("evil\x1b]0;owned\x07", 1);
    wrong["op"] = "y = sqr(x) \x1b[2J";
    json malformed = entry_with_bindings("bad\x1b[31m", 1);
    malformed.erase("op");
    const json manifest = {{"kernels", json::array({wrong, malformed})}};
    const kjit::jit::kernels::PrecompileResult r = kjit::jit::kernels::precompile(manifest, {"sm_90\x1b[2J"}, 1);
    const kjit::jit::kernels::PrecompileResult named = kjit::jit::kernels::precompile(manifest, {"sm_90"}, 1);
    std::vector<std::string> all = r.failures;
    all.insert(all.end(), named.failures.begin(), named.failures.end());
    REQUIRE(all.size() >= 3);
    bool saw_name = false, saw_arch = false;
    for (const std::string& f : all) {
        INFO(f);
        CHECK(f.find('\x1b') == std::string::npos);
        CHECK(f.find('\x07') == std::string::npos);
        saw_name = saw_name || f.find("evil\\x1b]0;owned\\x07") != std::string::npos ||
                   f.find("bad\\x1b[31m") != std::string::npos;
        saw_arch = saw_arch || f.find("sm_90\\x1b[2J") != std::string::npos;
    }
    CHECK(saw_name);
    CHECK(saw_arch);
}

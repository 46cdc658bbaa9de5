// Precompiling a manifest (jit/precompile.hpp) where it strains: an entry of many bindings.
#include "test_support.hpp"

#include "allocation_counter.hpp"
#include "jit/precompile_jobs.hpp"

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

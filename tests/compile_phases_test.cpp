// Where NVRTC's time goes, per program a call compiles (issue 35): NVRTC's own `-time` report
// (front end, NVVM optimizer, PTX translation) of each elementwise variant and each reduction
// strategy group of a new kernel, beside the program's source size. Not run by default:
//   kjit_tests "[compile_phases]"            (KJIT_ARCH picks the target; default sm_90)
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "jit/kernels/elementwise/calls.hpp"
#include "jit/kernels/reduction/calls.hpp"
#include "kjit/cache.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/reduction_kernel.hpp"
#include "test_support.hpp"

namespace {

// NVRTC's -time file: "name, phase, ms, unit" lines after a header; the phases of the last
// program compiled (each run appends its lines).
std::map<std::string, double> last_phases(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::vector<std::pair<std::string, double>> rows;
    while (std::getline(in, line)) {
        std::stringstream s(line);
        std::string name, phase, metric;
        if (!std::getline(s, name, ',') || !std::getline(s, phase, ',') || !std::getline(s, metric, ',')) continue;
        try {
            rows.emplace_back(phase.substr(phase.find_first_not_of(' ')), std::stod(metric));
        } catch (const std::exception&) {  // the header
        }
    }
    std::map<std::string, double> last;
    for (auto it = rows.rbegin(); it != rows.rend() && !last.count(it->first); ++it) last[it->first] = it->second;
    return last;
}

void print_row(const std::string& program, double wall_ms, const std::map<std::string, double>& phases) {
    const auto get = [&](const char* k) { const auto it = phases.find(k); return it == phases.end() ? 0.0 : it->second; };
    std::printf("%-28s %8.1f %10.0f %10.0f %10.0f\n", program.c_str(), wall_ms, get("CUDA C++ Frontend"), get("NVVM Optimizer"),
                get("PTX Translation"));
}

}  // namespace

TEST_CASE("NVRTC's phases for each program a call compiles (benchmark)", "[.][compile_phases]") {
    const kjit::test::ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    kjit::configure_cache(kjit::test::cache_in(work.path() / "cache"));
    const std::string arch = std::getenv("KJIT_ARCH") ? std::getenv("KJIT_ARCH") : "sm_90";
    const std::string time_file = (work.path() / "nvrtc-time.csv").string();
    kjit::KernelOptions options;
    options.nvrtc_options = {"-time=" + time_file};
    const kjit::TypeBinding f32{{"T", kjit::DType::float32}};
    std::printf("arch %s; ms per program: wall (kjit's whole compile), then NVRTC's phases\n", arch.c_str());
    std::printf("%-28s %8s %10s %10s %10s\n", "program", "wall", "front end", "optimizer", "PTX->SASS");
    const kjit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "phases_axpb", options);
    for (const kjit::jit::kernels::ElementwiseEntry e : kjit::jit::kernels::elementwise_entries(axpb, f32, {})) {
        const kjit::jit::kernels::CompiledModules c = kjit::jit::kernels::compile_elementwise_entry(axpb, f32, {}, arch, e);
        print_row(std::string("axpb ") + kjit::jit::kernels::elementwise_entry_label(e), c.compile_ms, last_phases(time_file));
    }
    const kjit::ReductionKernel sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", "phases_sumsq", options);
    for (int g = 0; g < kjit::jit::kernels::kReductionEntryGroups; ++g)
        for (const bool wide : {false, true}) {
            const auto group = static_cast<kjit::jit::kernels::ReductionEntryGroup>(g);
            if (!kjit::jit::kernels::reduction_group_exists(group, wide)) continue;
            const kjit::jit::kernels::CompiledGroups c = kjit::jit::kernels::compile_reduction_group(sumsq, f32, {}, arch, group, wide);
            print_row("sumsq " + kjit::jit::kernels::reduction_group_label(group, wide), c.compile_ms, last_phases(time_file));
        }
    CHECK(kjit::cache_stats().compiles > 0);
}

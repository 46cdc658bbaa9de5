// `kjit demo`: five scenarios that show where a GPU pays and where it does not, each checked
// against a plain C++ computation on the CPU, with the CPU's, the GPU kernels' and the copies'
// times side by side (tools/cli/demo.hpp). Without a GPU it compiles the kernels the scenarios
// would launch (into the kernel cache), says how long that took, and exits 0.
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "jit/expr/expr_kernels.hpp"
#include "jit/kernels/reduction/calls.hpp"
#include "jit/kernels/ops/segments.hpp"
#include "kjit/info.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/demo.hpp"

namespace kjit::cli {
namespace demo {
namespace {

// Compiles one kernel (or finds it in the cache), prints a line about it; false on a compile error.
bool compile_one(int scenario, const std::string& what, const std::function<std::pair<std::string, double>()>& compile,
                 int& from_nvrtc, int& from_cache) {
    const Clock::time_point t0 = Clock::now();
    try {
        const auto [arch, compile_ms] = compile();
        const double wall = ms_since(t0);
        (compile_ms == 0 ? from_cache : from_nvrtc) += 1;
        fmt::print("  scenario {}  {:<44} {:<6} {} ({} in all)\n", scenario, what, arch, compile_origin(compile_ms),
                   duration(wall));
        return true;
    } catch (const NoDeviceError& e) {
        fmt::print("  scenario {}  {:<44} not compiled: {}\n", scenario, what, e.what());
        return true;  // no NVRTC here either: nothing the demo did wrong
    } catch (const Error& e) {
        fmt::print("  scenario {}  {:<44} FAILED to compile:\n{}\n", scenario, what, e.what());
        return false;
    }
}

}  // namespace

bool compile_only(const std::vector<int>& scenarios) {
    const Kernels& k = kernels();
    const TypeBinding f64{{"T", DType::float64}};
    bool ok = true;
    int from_nvrtc = 0, from_cache = 0;
    const Clock::time_point t0 = Clock::now();
    auto ew = [&](const ElementwiseKernel& kernel) {
        return [&kernel, &f64] {
            // The programs calls load: one per variant (a call compiles only the one it launches).
            jit::kernels::CompiledModules all;
            for (const jit::kernels::ElementwiseEntry e : jit::kernels::elementwise_entries(kernel, f64, {})) {
                const jit::kernels::CompiledModules c = jit::kernels::compile_elementwise_entry(kernel, f64, {}, "", e);
                all.arch = c.arch;
                all.compile_ms += c.compile_ms;
            }
            return std::pair{all.arch, all.compile_ms};
        };
    };
    auto ew_concrete = [&](const ElementwiseKernel& kernel) {  // no placeholders (an expression's kernel)
        return [&kernel] {
            jit::kernels::CompiledModules all;
            for (const jit::kernels::ElementwiseEntry e : jit::kernels::elementwise_entries(kernel, {}, {})) {
                const jit::kernels::CompiledModules c = jit::kernels::compile_elementwise_entry(kernel, {}, {}, "", e);
                all.arch = c.arch;
                all.compile_ms += c.compile_ms;
            }
            return std::pair{all.arch, all.compile_ms};
        };
    };
    auto red = [&](const ReductionKernel& kernel) {
        return [&kernel, &f64] {
            // The modules calls load: one per strategy (a call compiles only the one it launches).
            const jit::kernels::CompiledGroups c = jit::kernels::compile_reduction_groups(kernel, f64, {}, "");
            return std::pair{c.arch, c.compile_ms};
        };
    };
    fmt::print("Compiling the kernels the demo would launch (nothing runs without a GPU):\n");
    for (int s : scenarios) {
        if (s == 1) ok &= compile_one(1, "elementwise demo_add_scalar (T=float64)", ew(k.add_scalar), from_nvrtc, from_cache);
        if (s == 2) fmt::print("  scenario 2  matmul: cuBLAS's GEMM, nothing to compile\n");
        if (s == 3) {
            ok &= compile_one(3, "kjit_segments (group_sorted_keys)", [] {
                const Binary b = detail::segments_module().compile();
                return std::pair{b.arch, b.compile_ms};
            }, from_nvrtc, from_cache);
            ok &= compile_one(3, "reduction demo_day_min (T=float64)", red(k.day_min), from_nvrtc, from_cache);
            ok &= compile_one(3, "reduction demo_day_max (T=float64)", red(k.day_max), from_nvrtc, from_cache);
            ok &= compile_one(3, "reduction demo_day_mean (T=float64)", red(k.day_mean), from_nvrtc, from_cache);
        }
        if (s == 4) {
            ok &= compile_one(4, "elementwise demo_step_v (T=float64)", ew(k.step_v), from_nvrtc, from_cache);
            ok &= compile_one(4, "elementwise demo_step_x (T=float64)", ew(k.step_x), from_nvrtc, from_cache);
            ok &= compile_one(4, "reduction demo_energy (T=float64)", red(k.energy), from_nvrtc, from_cache);
        }
        if (s == 5) {
            // The expressions' kernels depend on their structure and dtypes alone: host arrays
            // name the same kernels the GPU arrays will.
            const Array x = Array::empty({1}, DType::float32, Device::cpu()), c = Array::empty({1}, DType::float32, Device::cpu());
            const std::pair<const char*, Expr> exprs[] = {{"expression sqrt(a*x + b) * c (float32)", fused_expression(x, c, 1.5f, 2.0f)},
                                                         {"expression a * x (the unfused steps)", 1.5f * x},
                                                         {"expression x + b", x + 2.0f},
                                                         {"expression sqrt(x)", sqrt(x)},
                                                         {"expression x * c", x * c}};
            for (const auto& [what, e] : exprs)
                ok &= compile_one(5, what, ew_concrete(detail::expr_elementwise_kernel(e)), from_nvrtc, from_cache);
        }
    }
    fmt::print("{} compiled by NVRTC, {} found in the kernel cache, {} in all.\n", from_nvrtc, from_cache,
               duration(ms_since(t0)));
    if (from_nvrtc + from_cache > 0 && !system_info().cache_disabled)
        fmt::print("They are in the kernel cache now, ready for a GPU of that architecture (KJIT_ARCH=sm_90 picks another).\n");
    return ok;
}

}  // namespace demo

void add_demo_command(CLI::App& app, int& exit_status) {
    CLI::App* cmd = app.add_subcommand(
        "demo", "Five problems on the CPU and on the GPU, checked and timed side by side (with no GPU: compile the kernels)");
    auto scale = std::make_shared<double>(1.0);
    auto scenario = std::make_shared<std::string>("all");
    cmd->add_option("--size-scale", *scale,
                    "Multiply every scenario's element count by F (0 < F <= 1; the matrix side by sqrt(F))")
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
                double v = 0;
                std::size_t used = 0;
                try {
                    v = std::stod(text, &used);
                } catch (const std::exception&) {
                    used = 0;
                }
                if (used != text.size() || !(v > 0 && v <= 1)) return "must be a number in (0, 1], not '" + text + "'";
                return {};
            },
            "F in (0, 1]"));
    cmd->add_option("--scenario", *scenario,
                    "1: add a scalar to 300M float64; 2: 10000x10000 matmul; 3: daily min/max/mean of 12M readings; "
                    "4: 1000 small steps, call by call and as a graph; 5: an array expression, unfused and fused; all")
        ->check(CLI::IsMember({"1", "2", "3", "4", "5", "all"}));
    cmd->callback([scale, scenario, &exit_status] {
        std::vector<int> chosen;
        if (*scenario == "all")
            chosen = {1, 2, 3, 4, 5};
        else
            chosen = {std::stoi(*scenario)};
        print_system_info();
        fmt::print("\n");
        if (Device::count() == 0) {
            const bool ok = demo::compile_only(chosen);
            fmt::print("\nNo GPU was found (see 'no GPU' above), so no scenario ran: they need an NVIDIA GPU.\n");
            exit_status = ok ? 0 : 1;
            return;
        }
        const Stream stream = Stream::create(Device::cuda(0));
        bool ok = true;
        for (int s : chosen) {
            if (s == 1) ok &= demo::run_add_scalar(*scale, stream);
            if (s == 2) ok &= demo::run_matmul(*scale, stream);
            if (s == 3) ok &= demo::run_daily(*scale, stream);
            if (s == 4) ok &= demo::run_small_steps(*scale, stream);
            if (s == 5) ok &= demo::run_fused(*scale, stream);
            fmt::print("\n");
        }
        fmt::print("{}\n", ok ? "Every result matched the CPU's." : "SOME RESULTS DIFFERED from the CPU's (see above).");
        exit_status = ok ? 0 : 1;
    });
}

}  // namespace kjit::cli

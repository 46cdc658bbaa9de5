// `kjit demo`, scenario 5: z = sqrt(a * x + b) * c on 100 million float32 values, written as an
// array expression (kjit/expr.hpp). Evaluated one operator at a time, as NumPy does on the CPU and
// eager CuPy or PyTorch do on the GPU, every operator reads and writes a whole temporary; fused,
// the expression is one pass that reads x and c and writes z. The scenario times both ways on
// both sides and checks the GPU's z against a double-precision computation.
#include <cmath>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "kjit/cache.hpp"
#include "tools/cli/demo.hpp"

namespace kjit::cli::demo {

Expr fused_expression(const Array& x, const Array& c, float a, float b) { return sqrt(a * x + b) * c; }

bool run_fused(double scale, const Stream& stream) {
    const std::int64_t n = fused_size(scale);
    const std::size_t un = static_cast<std::size_t>(n);
    const float a = 1.5f, b = 2.0f;
    fmt::print("Scenario 5: z = sqrt(a*x + b) * c on {} float32 values, an array expression: a kernel per operator, or one fused\n",
               grouped(n));
    const Progress progress;

    progress.show(fmt::format("generating {} values", grouped(n)));
    std::vector<float> x(un), c(un);
    for (std::size_t i = 0; i < un; ++i) {
        x[i] = static_cast<float>(uniform(5, i) * 2 - 1);  // a*x + b stays in [0.5, 3.5]
        c[i] = static_cast<float>(uniform(6, i) * 4 - 2);
    }

    // The CPU, as NumPy evaluates it: one loop per operator, each into a float32 temporary.
    progress.show("the CPU, one loop per operator");
    Clock::time_point t0 = Clock::now();
    std::vector<float> t1(un), z_numpy(un);
    for (std::size_t i = 0; i < un; ++i) t1[i] = a * x[i];
    for (std::size_t i = 0; i < un; ++i) t1[i] = t1[i] + b;
    for (std::size_t i = 0; i < un; ++i) t1[i] = std::sqrt(t1[i]);
    for (std::size_t i = 0; i < un; ++i) z_numpy[i] = t1[i] * c[i];
    const double cpu_steps_ms = ms_since(t0);
    volatile float keep = z_numpy[un / 2];  // the loops' result is used: the compiler keeps them
    (void)keep;
    progress.show("the CPU, one fused loop");
    t0 = Clock::now();
    std::vector<float> z_cpu(un);
    for (std::size_t i = 0; i < un; ++i) z_cpu[i] = std::sqrt(a * x[i] + b) * c[i];
    const double cpu_fused_ms = ms_since(t0);
    t1 = {};

    progress.show("copying to the GPU");
    const Array xd = Array::from_host(x.data(), DType::float32, {n}, Device(), stream);
    const Array cd = Array::from_host(c.data(), DType::float32, {n}, Device(), stream);
    const Array zd = Array::empty({n}, DType::float32, Device(), stream);
    const Array td = Array::empty({n}, DType::float32, Device(), stream);
    stream.synchronize();

    // First evaluations compile (or find in the cache) and load each kernel: done here, so that the
    // times below are the kernels' alone.
    progress.show("compiling and loading the kernels");
    const CallOptions on{stream};
    const auto steps = [&] {  // four kernels, each writing a whole array
        eval(td, a * xd, on);
        eval(td, td + b, on);
        eval(td, sqrt(td), on);
        eval(zd, td * cd, on);
    };
    const double nvrtc_before = cache_stats().compile_ms;
    t0 = Clock::now();
    eval(zd, fused_expression(xd, cd, a, b), on);
    stream.synchronize();
    const double first_ms = ms_since(t0);
    const double nvrtc_ms = cache_stats().compile_ms - nvrtc_before;
    steps();
    stream.synchronize();

    progress.show("the GPU");
    const double gpu_steps = gpu_ms(stream, steps);
    const double gpu_fused = gpu_ms(stream, [&] { eval(zd, fused_expression(xd, cd, a, b), on); });
    std::vector<float> got(un);
    zd.copy_to_host(got.data(), stream);
    progress.clear();

    // Against double precision: float32's rounding of three operations and a sqrt.
    std::int64_t bad = 0, first = -1;
    double worst = 0;
    for (std::size_t i = 0; i < un; ++i) {
        const double want = std::sqrt(double(a) * x[i] + b) * c[i];
        const double err = std::abs(got[i] - want);
        worst = std::max(worst, err / std::max(std::abs(want), 1e-30));
        if (err > 6e-7 * std::abs(want) + 1e-30 && bad++ == 0) first = static_cast<std::int64_t>(i);
    }
    const double useful = 12.0 * static_cast<double>(n);  // x and c read, z written
    auto rate = [&](double ms) { return fmt::format("{:.1f} GB/s of x, c and z", useful / (ms * 1e-3) / 1e9); };
    print_table({
        {"CPU: a loop per operator (as NumPy evaluates it)", cpu_steps_ms, rate(cpu_steps_ms) + "; 4 passes, a temporary"},
        {"CPU: one fused loop", cpu_fused_ms, rate(cpu_fused_ms)},
        {"GPU: a kernel per operator (as eager CuPy/PyTorch)", gpu_steps, rate(gpu_steps) + "; 4 launches, 7 arrays' traffic"},
        {"GPU: one fused kjit kernel", gpu_fused, rate(gpu_fused) + "; 1 launch (CUDA events)"},
    });
    fmt::print("  (not in the times: copies to the GPU; the fused kernel {}, its first evaluation {})\n", compile_origin(nvrtc_ms),
               duration(first_ms));
    fmt::print("  fusing: {:.1f}x faster on the GPU, {:.1f}x on the CPU; the fused GPU kernel is {:.0f}x the fused CPU loop\n",
               gpu_steps / gpu_fused, cpu_steps_ms / cpu_fused_ms, cpu_fused_ms / gpu_fused);
    if (bad == 0) {
        fmt::print("  check: all {} values within 6e-7 of double precision (worst {:.2g} relative)\n", grouped(n), worst);
        return true;
    }
    fmt::print("  CHECK FAILED: {} of {} values differ from double precision by more than 6e-7; the first, z[{}]: GPU {:.9g}, CPU {:.9g}\n",
               grouped(bad), grouped(n), first, got[static_cast<std::size_t>(first)], z_cpu[static_cast<std::size_t>(first)]);
    return false;
}

}  // namespace kjit::cli::demo

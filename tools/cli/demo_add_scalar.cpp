// `kjit demo`, scenario 1: add a scalar to 300 million float64 values in place. The kernel is
// bound by memory bandwidth on both sides, so the GPU's kernel wins by its bandwidth, and the
// copies over PCIe cost far more than the kernel: the case where moving data to the GPU for one
// cheap operation does not pay.
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "kjit/cache.hpp"
#include "tools/cli/demo.hpp"

namespace kjit::cli::demo {

bool run_add_scalar(double scale, const Stream& stream) {
    const std::int64_t n = add_scalar_size(scale);
    const double a = 0.375;
    const double gib = static_cast<double>(n) * 8 / (1 << 30);
    fmt::print("Scenario 1: x = x + a on {} float64 values in place ({:.2f} GiB), elementwise kernel\n", grouped(n), gib);
    const Progress progress;
    const Kernels& k = kernels();

    progress.show(fmt::format("generating {} values", grouped(n)));
    Clock::time_point t0 = Clock::now();
    std::unique_ptr<double[]> x(new double[static_cast<std::size_t>(n)]);  // not zeroed: written next
    for (std::int64_t i = 0; i < n; ++i) x[i] = uniform(1, static_cast<std::uint64_t>(i)) * 2000 - 1000;
    const double gen_ms = ms_since(t0);

    // The first call of a kernel compiles it (or finds it in the kernel cache) and loads it: done
    // here on a few elements, so that the GPU time below is the kernel's alone.
    progress.show("compiling and loading the kernel");
    t0 = Clock::now();
    const double nvrtc_before = cache_stats().compile_ms;
    {
        Array warm = Array::from_host(x.get(), DType::float64, {std::min<std::int64_t>(n, 1024)}, Device(), stream);
        k.add_scalar.launch({a, warm}, {stream, -1});
        stream.synchronize();
    }
    const double first_ms = ms_since(t0);
    const double nvrtc_ms = cache_stats().compile_ms - nvrtc_before;  // the variant this call launches

    progress.show("copying to the GPU");
    stream.synchronize();
    t0 = Clock::now();
    const Array xd = Array::from_host(x.get(), DType::float64, {n}, Device(), stream);
    stream.synchronize();
    const double h2d_ms = ms_since(t0);

    progress.show("adding on the GPU");
    const double gpu = gpu_ms(stream, [&] { k.add_scalar.launch({a, xd}, {stream, -1}); });

    progress.show("adding on the CPU");
    t0 = Clock::now();
    double* const xp = x.get();
    for (std::int64_t i = 0; i < n; ++i) xp[i] = xp[i] + a;
    const double cpu_ms = ms_since(t0);

    progress.show("copying back");
    std::unique_ptr<double[]> got(new double[static_cast<std::size_t>(n)]);
    // Touched before the timer: the first write to fresh pages makes the kernel zero them, which
    // measured as 1.2 GB/s on the H200 host and is the allocator's cost, not the link's.
    std::memset(got.get(), 0, static_cast<std::size_t>(n) * sizeof(double));
    t0 = Clock::now();
    xd.copy_to_host(got.get(), stream);
    const double d2h_ms = ms_since(t0);
    progress.clear();

    // Every element, bit for bit: x + a is one correctly rounded addition on both sides.
    std::int64_t differ = 0, first = -1;
    if (std::memcmp(got.get(), x.get(), static_cast<std::size_t>(n) * sizeof(double)) != 0)
        for (std::int64_t i = 0; i < n; ++i)
            if (std::memcmp(&got[i], &x[i], sizeof(double)) != 0 && differ++ == 0) first = i;

    const double bytes = 16.0 * static_cast<double>(n);  // read and written
    auto rate = [](double b, double ms) { return fmt::format("{:.1f} GB/s", b / (ms * 1e-3) / 1e9); };
    print_table({
        {"CPU: plain loop, one thread", cpu_ms, rate(bytes, cpu_ms) + " (read + written)"},
        {"GPU: kjit kernel", gpu, rate(bytes, gpu) + " (read + written; CUDA events)"},
        {"copy host -> device", h2d_ms, rate(bytes / 2, h2d_ms) + " (pageable memory)"},
        {"copy device -> host", d2h_ms, rate(bytes / 2, d2h_ms) + " (pageable memory)"},
        {"GPU: kernel + both copies", gpu + h2d_ms + d2h_ms, "what moving the data to the GPU for this costs"},
    });
    fmt::print("  (not in the times: generating the data {}; kernel {}, first call {})\n", duration(gen_ms),
               compile_origin(nvrtc_ms), duration(first_ms));
    fmt::print("  speed-up over the CPU loop: {:.0f}x for the kernel alone, {:.2f}x with the copies{}\n", cpu_ms / gpu,
               cpu_ms / (gpu + h2d_ms + d2h_ms), gpu + h2d_ms + d2h_ms > cpu_ms ? " (slower: the copies cost more than the loop)" : "");
    if (differ == 0) {
        fmt::print("  check: all {} values equal the CPU's, bit for bit\n", grouped(n));
        return true;
    }
    fmt::print("  CHECK FAILED: {} of {} values differ from the CPU's; the first, x[{}]: GPU {:.17g}, CPU {:.17g}\n",
               grouped(differ), grouped(n), first, got[first], x[first]);
    return false;
}

}  // namespace kjit::cli::demo

// The host back end against a plain memcpy (issue 9's measure, docs/perf-log.md): a fused
// three-operation kernel y = x * a + z * b over 2^26 float32 on host arrays, timed warm, best of
// several runs; memcpy of the same float count for the bandwidth ceiling. tools/bench/host_numpy.py
// times NumPy on the same expression.
//   kjit_host_bench [log2_n=26] [runs=10]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <kjit/kjit.hpp>

#include "best_seconds.hpp"

int main(int argc, char** argv) {
    const int log2_n = argc > 1 ? std::atoi(argv[1]) : 26;
    const int runs = argc > 2 ? std::atoi(argv[2]) : 10;
    const std::int64_t n = std::int64_t{1} << log2_n;
    const kjit::Device cpu = kjit::Device::cpu();
    kjit::Array x = kjit::Array::empty({n}, kjit::DType::float32, cpu), z = kjit::Array::empty({n}, kjit::DType::float32, cpu);
    kjit::Array y = kjit::Array::empty({n}, kjit::DType::float32, cpu);
    auto* px = static_cast<float*>(x.data());
    auto* pz = static_cast<float*>(z.data());
    for (std::int64_t k = 0; k < n; ++k) {
        px[k] = static_cast<float>(k % 1000) * 0.001f;
        pz[k] = static_cast<float>(k % 777) * 0.002f;
    }
    std::memset(y.data(), 0, static_cast<std::size_t>(n) * 4);  // pages touched before timing

    const kjit::ElementwiseKernel fused("T x, T z, T a, T b", "T y", "y = x * a + z * b", "fused3");
    const auto t_compile0 = std::chrono::steady_clock::now();
    fused.launch({x, z, 2.0f, 3.0f, y});  // compiles (LLVM) and runs once
    const double first = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_compile0).count();
    const double kernel = best_seconds(runs, [&] { fused.launch({x, z, 2.0f, 3.0f, y}); });
    const double copy = best_seconds(runs, [&] { std::memcpy(y.data(), x.data(), static_cast<std::size_t>(n) * 4); });
    const double kernel_bytes = 3.0 * 4.0 * static_cast<double>(n), copy_bytes = 2.0 * 4.0 * static_cast<double>(n);
    std::printf("n=2^%d threads=%s first_call_s=%.3f\n", log2_n, std::getenv("KJIT_HOST_THREADS") ? std::getenv("KJIT_HOST_THREADS") : "all", first);
    std::printf("kjit_fused_ms=%.2f kjit_GBps=%.2f\n", kernel * 1e3, kernel_bytes / kernel / 1e9);
    std::printf("memcpy_ms=%.2f memcpy_GBps=%.2f\n", copy * 1e3, copy_bytes / copy / 1e9);
    std::printf("kjit_bandwidth_vs_memcpy=%.0f%%\n", 100.0 * (kernel_bytes / kernel) / (copy_bytes / copy));
    // A check that it computed the expression.
    const float* py = static_cast<const float*>(y.data());
    std::memcpy(y.data(), y.data(), 0);
    fused.launch({x, z, 2.0f, 3.0f, y});
    for (std::int64_t k : {std::int64_t{0}, n / 3, n - 1})
        if (py[k] != px[k] * 2.0f + pz[k] * 3.0f) {
            std::printf("wrong result at %lld\n", static_cast<long long>(k));
            return 1;
        }
    return 0;
}

// A host back end reduction against memcpy and NumPy (docs/perf-log.md): kjit::sum of 2^26
// float32 host values, warm, best of several runs (KJIT_HOST_THREADS=1 for one thread); memcpy of
// the same bytes for the bandwidth ceiling (it reads and writes them: the sum only reads); then
// the same values as a square matrix summed over rows (axis 1) and over columns (axis 0).
// tools/bench/host_numpy_reduce.py times NumPy's x.sum() on the same values.
//   kjit_host_reduce_bench [log2_n=26] [runs=10]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <kjit/kjit.hpp>

#include "best_seconds.hpp"

int main(int argc, char** argv) {
    const int log2_n = argc > 1 ? std::atoi(argv[1]) : 26;
    const int runs = argc > 2 ? std::atoi(argv[2]) : 10;
    const std::int64_t n = std::int64_t{1} << log2_n;
    const kjit::Array x = kjit::Array::empty({n}, kjit::DType::float32, kjit::Device::cpu());
    auto* px = static_cast<float*>(x.data());
    double exact = 0;
    for (std::int64_t k = 0; k < n; ++k) {
        px[k] = static_cast<float>(static_cast<double>(k % 1000) * 0.001);  // the values of tools/bench/host_numpy_reduce.py
        exact += px[k];
    }
    std::vector<float> copy(static_cast<std::size_t>(n), 0.0f);  // pages touched before timing

    const auto t0 = std::chrono::steady_clock::now();
    kjit::Array s = kjit::sum(x);  // compiles (LLVM) and runs once
    const double first = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double sum = best_seconds(runs, [&] { s = kjit::sum(x); });
    const double memcpy_s = best_seconds(runs, [&] { std::memcpy(copy.data(), px, static_cast<std::size_t>(n) * 4); });
    const double read_bytes = 4.0 * static_cast<double>(n);
    const float got = *static_cast<const float*>(s.data());
    std::printf("n=2^%d threads=%s first_call_s=%.3f sum=%.9g exact=%.9g\n", log2_n,
                std::getenv("KJIT_HOST_THREADS") ? std::getenv("KJIT_HOST_THREADS") : "all", first, got, exact);
    std::printf("kjit_sum_ms=%.2f kjit_read_GBps=%.2f\n", sum * 1e3, read_bytes / sum / 1e9);
    std::printf("memcpy_ms=%.2f memcpy_GBps=%.2f (read + write)\n", memcpy_s * 1e3, 2 * read_bytes / memcpy_s / 1e9);
    const std::int64_t side = std::int64_t{1} << (log2_n / 2);
    const kjit::Array m = x.slice(0, {0, side * side}).reshape({side, side});
    for (const int axis : {1, 0}) {
        const kjit::ReduceOptions options{.axis = std::vector<int>{axis}};
        kjit::Array r = kjit::sum(m, options);
        const double t = best_seconds(runs, [&] { r = kjit::sum(m, options); });
        std::printf("kjit_sum_axis%d_%lldx%lld_ms=%.2f\n", axis, static_cast<long long>(side), static_cast<long long>(side), t * 1e3);
    }
    return std::abs(got - exact) <= 1e-5 * exact ? 0 : 1;
}

// `kjit demo`, scenario 2: a 10000 x 10000 matrix product in float64 and float32 (kjit::matmul,
// cuBLAS). Compute-bound: 2 * 10000^3 operations on 800 MB or less, the case where the GPU pays
// even with the copies. The CPU does not multiply 10000^3 here (hours in a plain loop): it times a
// product of at most 1000^3 and scales it by the operation count, and says so; the GPU's product
// is checked on 64 entries recomputed on the CPU in long double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "tools/cli/demo.hpp"

namespace kjit::cli::demo {
namespace {

template <class T>
std::vector<T> random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
    std::vector<T> m(static_cast<std::size_t>(rows * cols));
    for (std::size_t k = 0; k < m.size(); ++k) m[k] = static_cast<T>(uniform(seed, k) * 2 - 1);
    return m;
}

// c = a @ b, m x m, one thread, i-k-j order (the inner loop runs along rows of b and c).
template <class T>
void cpu_product(const std::vector<T>& a, const std::vector<T>& b, std::vector<T>& c, std::int64_t m) {
    std::fill(c.begin(), c.end(), T(0));
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t k = 0; k < m; ++k) {
            const T aik = a[static_cast<std::size_t>(i * m + k)];
            T* ci = &c[static_cast<std::size_t>(i * m)];
            const T* bk = &b[static_cast<std::size_t>(k * m)];
            for (std::int64_t j = 0; j < m; ++j) ci[j] += aik * bk[j];
        }
}

template <class T>
bool one_dtype(DType t, std::int64_t side, const Stream& stream, const Progress& progress) {
    const std::string name(t.name());
    const double flops = 2.0 * static_cast<double>(side) * static_cast<double>(side) * static_cast<double>(side);
    fmt::print(" {}: ({} x {}) @ ({} x {}), {:.0f} MB per matrix\n", name, side, side, side, side,
               static_cast<double>(side * side) * sizeof(T) / 1e6);
    progress.show("generating the " + name + " matrices");
    const std::vector<T> a = random_matrix<T>(side, side, 21), b = random_matrix<T>(side, side, 22);
    MatmulOptions options;
    options.stream = stream;
    options.allow_tf32 = false;  // exact float32, whatever KJIT_ALLOW_TF32 says

    // The first product loads cuBLAS and makes its handle: done on a small one, not timed below.
    progress.show("first cuBLAS call");
    Clock::time_point t0 = Clock::now();
    {
        const std::int64_t w = std::min<std::int64_t>(side, 64);
        const Array aw = Array::from_host(a.data(), t, {w, w}, Device(), stream);
        (void)matmul(aw, aw, Array(), options);
        stream.synchronize();
    }
    const double first_ms = ms_since(t0);

    progress.show("copying " + name + " matrices to the GPU");
    t0 = Clock::now();
    const Array ad = Array::from_host(a.data(), t, {side, side}, Device(), stream);
    const Array bd = Array::from_host(b.data(), t, {side, side}, Device(), stream);
    stream.synchronize();
    const double h2d_ms = ms_since(t0);

    progress.show("multiplying on the GPU");
    const Array cd = Array::empty({side, side}, t, Device(), stream);
    double gpu = std::numeric_limits<double>::infinity();
    for (int r = 0; r < 3; ++r) gpu = std::min(gpu, gpu_ms(stream, [&] { (void)matmul(ad, bd, cd, options); }));

    progress.show("copying the product back");
    std::vector<T> c(static_cast<std::size_t>(side * side));
    t0 = Clock::now();
    cd.copy_to_host(c.data(), stream);
    const double d2h_ms = ms_since(t0);

    // The CPU: a product of at most 1000^3, scaled by the operation count when the real one is larger.
    const std::int64_t m = std::min<std::int64_t>(side, 1000);
    progress.show(fmt::format("multiplying {}^3 on the CPU", m));
    const std::vector<T> am = random_matrix<T>(m, m, 23), bm = random_matrix<T>(m, m, 24);
    std::vector<T> cm(static_cast<std::size_t>(m * m));
    t0 = Clock::now();
    cpu_product(am, bm, cm, m);
    const double cpu_measured = ms_since(t0);
    const double cpu_ms = cpu_measured * std::pow(static_cast<double>(side) / static_cast<double>(m), 3);
    progress.clear();

    // 64 entries of the product, recomputed in long double; the tolerance is the classic bound of a
    // dot product of length k in precision eps, k * eps * sum |a_ik * b_kj| (a real error is far smaller).
    const double eps = std::numeric_limits<T>::epsilon();
    double worst = 0;
    std::int64_t worst_i = 0, worst_j = 0;
    long double worst_ref = 0;
    for (std::uint64_t s = 0; s < 64; ++s) {
        const std::int64_t i = static_cast<std::int64_t>(mix(2 * s) % static_cast<std::uint64_t>(side));
        const std::int64_t j = static_cast<std::int64_t>(mix(2 * s + 1) % static_cast<std::uint64_t>(side));
        long double ref = 0, mag = 0;
        for (std::int64_t k = 0; k < side; ++k) {
            const long double p = static_cast<long double>(a[static_cast<std::size_t>(i * side + k)]) *
                                  static_cast<long double>(b[static_cast<std::size_t>(k * side + j)]);
            ref += p;
            mag += std::fabs(p);
        }
        const double err = static_cast<double>(std::fabs(static_cast<long double>(c[static_cast<std::size_t>(i * side + j)]) - ref) /
                                               (mag > 0 ? mag : 1));
        if (std::isnan(worst)) continue;  // a NaN stays the worst
        if (std::isnan(err) || err >= worst) worst = err, worst_i = i, worst_j = j, worst_ref = ref;
    }
    const double limit = static_cast<double>(side) * eps;

    auto tflops = [&](double ms) { return flops / (ms * 1e-3) / 1e12; };
    const double bytes_in = 2.0 * static_cast<double>(side * side) * sizeof(T), bytes_out = bytes_in / 2;
    const std::string cpu_label = m == side ? "CPU: plain i-k-j loop, one thread" : "CPU: plain i-k-j loop, one thread (estimated)";
    const std::string cpu_note = m == side ? fmt::format("{:.3f} TFLOP/s", tflops(cpu_ms))
                                           : fmt::format("{:.3f} TFLOP/s; estimated from a {}^3 product ({}) x {:.0f}",
                                                         tflops(cpu_ms), m, duration(cpu_measured),
                                                         std::pow(static_cast<double>(side) / static_cast<double>(m), 3));
    print_table({
        {cpu_label, cpu_ms, cpu_note},
        {"GPU: kjit::matmul (cuBLAS)", gpu, fmt::format("{:.1f} TFLOP/s (best of 3; CUDA events)", tflops(gpu))},
        {"copy host -> device (a, b)", h2d_ms, fmt::format("{:.1f} GB/s (pageable memory)", bytes_in / (h2d_ms * 1e-3) / 1e9)},
        {"copy device -> host (c)", d2h_ms, fmt::format("{:.1f} GB/s (pageable memory)", bytes_out / (d2h_ms * 1e-3) / 1e9)},
        {"GPU: product + both copies", gpu + h2d_ms + d2h_ms,
         fmt::format("{:.0f}x faster than the CPU{}", cpu_ms / (gpu + h2d_ms + d2h_ms), m == side ? "" : " (estimate)")},
    });
    fmt::print("  (not in the times: the first cuBLAS call, {})\n", duration(first_ms));
    if (worst <= limit) {
        fmt::print("  check: 64 sampled entries match a long double dot product (largest error {:.1e} of sum|a*b|, limit {:.1e})\n",
                   worst, limit);
        return true;
    }
    fmt::print("  CHECK FAILED: c[{}, {}] = {:.17g}, the CPU's long double dot product gives {:.17g} (error {:.1e} of sum|a*b|, limit {:.1e})\n",
               worst_i, worst_j, static_cast<double>(c[static_cast<std::size_t>(worst_i * side + worst_j)]),
               static_cast<double>(worst_ref), worst, limit);
    return false;
}

}  // namespace

bool run_matmul(double scale, const Stream& stream) {
    const std::int64_t side = matmul_side(scale);
    fmt::print("Scenario 2: a {} x {} matrix product (kjit::matmul: cuBLAS), float64 and float32 (exact, no TF32)\n", side, side);
    const Progress progress;
    const bool ok64 = one_dtype<double>(DType::float64, side, stream, progress);
    const bool ok32 = one_dtype<float>(DType::float32, side, stream, progress);
    return ok64 && ok32;
}

}  // namespace kjit::cli::demo

#include "tools/cli/bench_crossover.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "kjit/kjit.hpp"

namespace kjit::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Median milliseconds of `repeats` runs of `work` (after one untimed warm-up run).
double median_ms(const std::function<void()>& work, int repeats) {
    work();
    std::vector<double> ms;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = Clock::now();
        work();
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

// y = a * x + b over [begin, end): the CPU reference, plain enough for the compiler to vectorise.
void axpb_range(const float* x, float* y, std::size_t begin, std::size_t end, float a, float b) {
    for (std::size_t k = begin; k < end; ++k) y[k] = a * x[k] + b;
}

void axpb_all_cores(const float* x, float* y, std::size_t n, float a, float b, unsigned threads) {
    std::vector<std::thread> pool;
    const std::size_t chunk = (n + threads - 1) / threads;
    for (unsigned t = 0; t < threads; ++t) {
        const std::size_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
        pool.emplace_back(axpb_range, x, y, begin, end, a, b);
    }
    for (std::thread& t : pool) t.join();
}

std::string cell(const std::optional<double>& v) {
    if (!v) return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", *v);
    return buf;
}

}  // namespace

int run_crossover(const std::string& csv_path, int max_exponent) {
    const bool gpu = Device::count() > 0;
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "crossover_axpb");
    std::optional<Stream> stream;
    if (gpu) {
        Device::set_current(0);
        stream = Stream::create(Device::cuda(0));
    }
    std::ofstream csv;
    if (!csv_path.empty()) {
        csv.open(csv_path);
        if (!csv) throw IoError("cannot write " + csv_path);
    }
    const std::string header = "n,cpu_1_thread_ms,cpu_" + std::to_string(cores) + "_threads_ms,gpu_kernel_ms,gpu_with_copies_ms";
    std::printf("%s\n", header.c_str());
    if (csv) csv << header << "\n";
    if (!gpu) std::fprintf(stderr, "no GPU (%s): the GPU columns stay empty\n", no_device_reason().c_str());
    for (int e = 3; e <= max_exponent; ++e) {
        const std::size_t n = static_cast<std::size_t>(std::llround(std::pow(10.0, e)));
        std::vector<float> x(n), y(n);
        for (std::size_t k = 0; k < n; ++k) x[k] = static_cast<float>(k % 1000) * 0.001f;
        // Fewer repeats for the large sizes: each takes long enough to time alone.
        const int repeats = e <= 6 ? 21 : e <= 8 ? 5 : 3;
        const double one = median_ms([&] { axpb_range(x.data(), y.data(), 0, n, 2.0f, 1.0f); }, repeats);
        const double all = median_ms([&] { axpb_all_cores(x.data(), y.data(), n, 2.0f, 1.0f, cores); }, repeats);
        std::optional<double> kernel, with_copies;
        if (gpu) {
            const Stream& s = *stream;
            const Array dx = Array::from_host(x.data(), DType::float32, {static_cast<std::int64_t>(n)}, Device::cuda(0), s);
            const Array dy = Array::empty({static_cast<std::int64_t>(n)}, DType::float32, Device::cuda(0), s);
            const CallOptions o{s, -1};
            kernel = median_ms([&] {
                axpb.launch({dx, 2.0f, 1.0f, dy}, o);
                s.synchronize();
            }, repeats);
            with_copies = median_ms([&] {
                const Array in = Array::from_host(x.data(), DType::float32, {static_cast<std::int64_t>(n)}, Device::cuda(0), s);
                axpb.launch({in, 2.0f, 1.0f, dy}, o);
                dy.copy_to_host(y.data(), s);
            }, repeats);
            // The GPU's answer, checked at a few places against the formula.
            for (const std::size_t k : {std::size_t{0}, n / 2, n - 1})
                if (std::fabs(y[k] - (2.0f * x[k] + 1.0f)) > 1e-5f) {
                    std::fprintf(stderr, "wrong GPU result at %zu of %zu: %g\n", k, n, static_cast<double>(y[k]));
                    return 1;
                }
        }
        const std::string line = std::to_string(n) + "," + cell(one) + "," + cell(all) + "," + cell(kernel) + "," + cell(with_copies);
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
        if (csv) csv << line << "\n" << std::flush;
    }
    return 0;
}

}  // namespace kjit::cli

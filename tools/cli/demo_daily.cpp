// `kjit demo`, scenario 3: the daily minimum, maximum and mean of ~12 million electricity readings
// with a date column (sorted int64 day numbers, 800 days): a reduce-by-key, done as one
// group_sorted_keys and three segmented reductions with user ReductionKernels. The CPU does it in
// one pass over the sorted table.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include <fmt/format.h>

#include "kjit/cache.hpp"
#include "tools/cli/demo.hpp"

namespace kjit::cli::demo {
namespace {

constexpr std::int64_t kFirstDay = 19723;  // 2024-01-01, in days since 1970-01-01

// "2024-01-01" for a day number (Howard Hinnant's civil_from_days).
std::string date(std::int64_t z) {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const std::int64_t doe = z - era * 146097;
    const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const std::int64_t mp = (5 * doy + 2) / 153;
    const std::int64_t d = doy - (153 * mp + 2) / 5 + 1;
    const std::int64_t m = mp < 10 ? mp + 3 : mp - 9;
    return fmt::format("{:04}-{:02}-{:02}", yoe + era * 400 + (m <= 2), m, d);
}

struct Daily {
    std::vector<std::int64_t> day;
    std::vector<double> min, max, mean;
    std::vector<std::int64_t> count;  // readings of each day (the CPU's)
};

}  // namespace

bool run_daily(double scale, const Stream& stream) {
    const Progress progress;
    const Kernels& k = kernels();
    const std::int64_t base = readings_per_day_base(scale);

    // The table: each day has base .. 2 * base - 1 readings, a daily cycle, a seasonal one and noise.
    progress.show("generating the readings");
    std::vector<std::int64_t> days;
    std::vector<double> watts;
    days.reserve(static_cast<std::size_t>(kDays * base * 2));
    watts.reserve(days.capacity());
    for (std::int64_t d = 0; d < kDays; ++d) {
        const std::int64_t count = base + static_cast<std::int64_t>(mix(1000 + static_cast<std::uint64_t>(d)) % static_cast<std::uint64_t>(base));
        const double season = 120 * std::cos(2 * std::numbers::pi * static_cast<double>(d) / 365.25);
        for (std::int64_t j = 0; j < count; ++j) {
            days.push_back(kFirstDay + d);
            const double hour = static_cast<double>(j) / static_cast<double>(count);
            watts.push_back(450 + season + 250 * std::sin(2 * std::numbers::pi * (hour - 0.25)) +
                            80 * (uniform(3, days.size()) - 0.5));
        }
    }
    const std::int64_t n = static_cast<std::int64_t>(days.size());
    fmt::print("Scenario 3: daily min, max and mean of {} readings over {} days (sorted int64 day column):\n"
               "            kjit::group_sorted_keys, then 3 segmented reductions (user ReductionKernels)\n",
               grouped(n), kDays);

    // First calls compile (or find in the kernel cache) and load the kernels: done on a few readings.
    progress.show("compiling and loading the kernels");
    Clock::time_point t0 = Clock::now();
    std::string origins;
    {
        const std::int64_t w = std::min<std::int64_t>(n, 4096);
        const Array kw = Array::from_host(days.data(), DType::int64, {w}, Device(), stream);
        const Array rw = Array::from_host(watts.data(), DType::float64, {w}, Device(), stream);
        const KeyGroups g = group_sorted_keys(kw, stream);
        // A call compiles the module of the strategy it launches (NVRTC's time from the cache's
        // counters, which count this process's compiles).
        for (const ReductionKernel* r : {&k.day_min, &k.day_max, &k.day_mean}) {
            const double before = cache_stats().compile_ms;
            (void)segmented_reduce(*r, {rw}, g.offsets, {stream});
            origins += fmt::format("{}{} {}", origins.empty() ? "" : "; ", r->name(), compile_origin(cache_stats().compile_ms - before));
        }
        stream.synchronize();
    }
    const double first_ms = ms_since(t0);

    progress.show("copying the table to the GPU");
    t0 = Clock::now();
    const Array keys_d = Array::from_host(days.data(), DType::int64, {n}, Device(), stream);
    const Array watts_d = Array::from_host(watts.data(), DType::float64, {n}, Device(), stream);
    stream.synchronize();
    const double h2d_ms = ms_since(t0);

    progress.show("reducing on the GPU");
    KeyGroups groups;
    Array lo, hi, mean;
    const double group_ms = gpu_ms(stream, [&] { groups = group_sorted_keys(keys_d, stream); });
    const double reduce_ms = gpu_ms(stream, [&] {
        lo = segmented_reduce(k.day_min, {watts_d}, groups.offsets, {stream});
        hi = segmented_reduce(k.day_max, {watts_d}, groups.offsets, {stream});
        mean = segmented_reduce(k.day_mean, {watts_d}, groups.offsets, {stream});
    });

    progress.show("copying the results back");
    Daily gpu;
    const auto m = static_cast<std::size_t>(groups.count);
    gpu.day.resize(m), gpu.min.resize(m), gpu.max.resize(m), gpu.mean.resize(m);
    t0 = Clock::now();
    groups.keys.copy_to_host(gpu.day.data(), stream);
    lo.copy_to_host(gpu.min.data(), stream);
    hi.copy_to_host(gpu.max.data(), stream);
    mean.copy_to_host(gpu.mean.data(), stream);
    const double d2h_ms = ms_since(t0);

    progress.show("reducing on the CPU");
    Daily cpu;
    t0 = Clock::now();
    double sum = 0;
    std::int64_t count = 0;
    for (std::size_t r = 0; r < days.size(); ++r) {
        const double w = watts[r];
        if (r == 0 || days[r] != days[r - 1]) {
            if (count > 0) cpu.mean.push_back(sum / static_cast<double>(count)), cpu.count.push_back(count);
            cpu.day.push_back(days[r]), cpu.min.push_back(w), cpu.max.push_back(w);
            sum = 0, count = 0;
        }
        cpu.min.back() = std::min(cpu.min.back(), w);
        cpu.max.back() = std::max(cpu.max.back(), w);
        sum += w, ++count;
    }
    if (count > 0) cpu.mean.push_back(sum / static_cast<double>(count)), cpu.count.push_back(count);
    const double cpu_ms = ms_since(t0);
    progress.clear();

    const double bytes = 16.0 * static_cast<double>(n);
    print_table({
        {"CPU: one pass over the sorted table", cpu_ms, fmt::format("{:.1f} GB/s of the table", bytes / (cpu_ms * 1e-3) / 1e9)},
        {"GPU: group_sorted_keys", group_ms, "the day boundaries (one synchronisation; CUDA events)"},
        {"GPU: 3 segmented reductions", reduce_ms, "min, max, mean of each day (CUDA events)"},
        {"GPU: both", group_ms + reduce_ms, fmt::format("{:.1f} GB/s of the table", bytes / ((group_ms + reduce_ms) * 1e-3) / 1e9)},
        {"copy host -> device", h2d_ms, fmt::format("{:.1f} GB/s (days and readings, pageable memory)", bytes / (h2d_ms * 1e-3) / 1e9)},
        {"copy device -> host", d2h_ms, fmt::format("{} days x (day, min, max, mean)", m)},
        {"GPU: both + copies", group_ms + reduce_ms + h2d_ms + d2h_ms, ""},
    });
    const double with_copies = group_ms + reduce_ms + h2d_ms + d2h_ms;
    fmt::print("  speed-up over the CPU pass: {:.0f}x on the GPU alone, {:.2f}x with the copies{}\n", cpu_ms / (group_ms + reduce_ms),
               cpu_ms / with_copies, with_copies > cpu_ms ? " (slower: the copies cost more than the pass)" : "");
    fmt::print("  (not in the times: first calls {}: {})\n", duration(first_ms), origins);
    for (std::size_t d = 0; d < std::min<std::size_t>(m, 3); ++d)
        fmt::print("  {}: min {:.1f}  max {:.1f}  mean {:.2f} W\n", date(gpu.day[d]), gpu.min[d], gpu.max[d], gpu.mean[d]);

    // Days and extremes exactly; means to the bound of summing k positive numbers, k * eps of the
    // mean (the GPU adds in another order than the loop; a real difference is far smaller).
    if (gpu.day.size() != cpu.day.size()) {
        fmt::print("  CHECK FAILED: the GPU found {} days, the CPU {}\n", gpu.day.size(), cpu.day.size());
        return false;
    }
    const double eps = std::numeric_limits<double>::epsilon();
    std::size_t bad = 0;
    for (std::size_t d = 0; d < m; ++d) {
        const bool same = gpu.day[d] == cpu.day[d] && gpu.min[d] == cpu.min[d] && gpu.max[d] == cpu.max[d] &&
                          std::fabs(gpu.mean[d] - cpu.mean[d]) <= static_cast<double>(cpu.count[d]) * eps * std::fabs(cpu.mean[d]);
        if (same) continue;
        if (bad++ < 3)
            fmt::print("  CHECK FAILED: day {}: GPU {} min {:.17g} max {:.17g} mean {:.17g}; CPU {} min {:.17g} max {:.17g} mean {:.17g}\n",
                       d, gpu.day[d], gpu.min[d], gpu.max[d], gpu.mean[d], cpu.day[d], cpu.min[d], cpu.max[d], cpu.mean[d]);
    }
    if (bad > 0) {
        fmt::print("  CHECK FAILED: {} of {} days differ from the CPU's\n", bad, m);
        return false;
    }
    fmt::print("  check: all {} days match the CPU's (days, minima and maxima exactly, means to k * eps)\n", m);
    return true;
}

}  // namespace kjit::cli::demo

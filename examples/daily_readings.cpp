// Reductions: a table of electricity readings with a day column, reduced to the minimum, maximum
// and mean of each day (group_sorted_keys + segmented_reduce), then a user ReductionKernel along an
// axis and the built-ins over the whole table; every result checked on the host. Without a GPU it
// compiles the kernels (into the kernel cache) and says so.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <kjit/kjit.hpp>

int main() {
    // Kernels are strings: `a` and `b` combine partial results, `n` is how many were reduced.
    const kjit::ReductionKernel day_min("T x", "T y", "x", "b < a ? b : a", "y = a", "1e300", "day_min");
    const kjit::ReductionKernel day_max("T x", "T y", "x", "b > a ? b : a", "y = a", "-1e300", "day_max");
    const kjit::ReductionKernel day_mean("T x", "T y", "x", "a + b", "y = a / n", "0", "day_mean");
    kjit::KernelOptions in_double;
    in_double.reduce_type = "float64";
    const kjit::ReductionKernel rms("T x", "T y", "(double)x * x", "a + b", "y = sqrt(a / n)", "0", "rms", in_double);
    if (kjit::Device::count() == 0) {
        for (const kjit::ReductionKernel* k : {&day_min, &day_max, &day_mean})
            (void)k->compile({{"T", kjit::DType::float64}});
        const kjit::Binary bin = rms.compile({{"T", kjit::DType::float32}});
        std::printf("no GPU (%s); compiled the reductions for %s instead\n", kjit::no_device_reason().c_str(), bin.arch.c_str());
        return 0;
    }

    // 30 days of readings, between 1000 and 5000 a day, sorted by day.
    std::vector<std::int32_t> day;
    std::vector<double> watts;
    for (int d = 0; d < 30; ++d)
        for (int k = 0; k < 1000 + 137 * d; ++k) {
            day.push_back(20260 + d);
            watts.push_back(500 + 300 * std::sin(0.01 * k + d) + (k % 7));
        }
    const std::int64_t n = static_cast<std::int64_t>(day.size());
    const kjit::Array days = kjit::Array::from_host(day.data(), kjit::DType::int32, {n});
    const kjit::Array readings = kjit::Array::from_host(watts.data(), kjit::DType::float64, {n});

    const kjit::KeyGroups groups = kjit::group_sorted_keys(days);  // one run of equal keys per day
    const kjit::Array lo = kjit::segmented_reduce(day_min, {readings}, groups.offsets);
    const kjit::Array hi = kjit::segmented_reduce(day_max, {readings}, groups.offsets);
    const kjit::Array mean = kjit::segmented_reduce(day_mean, {readings}, groups.offsets);

    std::vector<double> got_lo(30), got_hi(30), got_mean(30);
    lo.copy_to_host(got_lo.data());
    hi.copy_to_host(got_hi.data());
    mean.copy_to_host(got_mean.data());
    bool ok = groups.count == 30;
    for (std::int64_t d = 0, k = 0; d < 30 && ok; ++d) {
        double a = 1e300, b = -1e300, s = 0;
        const std::int64_t begin = k;
        for (; k < n && day[static_cast<std::size_t>(k)] == 20260 + d; ++k) {
            a = std::min(a, watts[static_cast<std::size_t>(k)]);
            b = std::max(b, watts[static_cast<std::size_t>(k)]);
            s += watts[static_cast<std::size_t>(k)];
        }
        const double m = s / static_cast<double>(k - begin);
        ok = got_lo[d] == a && got_hi[d] == b && std::fabs(got_mean[d] - m) <= 1e-9 * std::fabs(m);
        if (d < 3) std::printf("day %d: min %.2f  max %.2f  mean %.2f\n", 20260 + static_cast<int>(d), got_lo[d], got_hi[d], got_mean[d]);
    }

    // A user reduction along an axis, and the built-ins over a whole table.
    std::vector<float> table(64 * 1000);
    for (std::size_t k = 0; k < table.size(); ++k) table[k] = static_cast<float>(k % 1000) * 0.01f;
    const kjit::Array t = kjit::Array::from_host(table.data(), kjit::DType::float32, {64, 1000});
    kjit::ReduceOptions per_row;
    per_row.axis = std::vector<int>{1};
    const kjit::Array row_rms = rms({t}, per_row);               // 64 values
    const kjit::Array total = kjit::sum(t);                      // float32, every axis
    const kjit::Array where = kjit::argmax(t);                   // int64 index into the flattened table
    std::vector<float> got_rms(64);
    row_rms.copy_to_host(got_rms.data());
    float got_total = 0;
    total.copy_to_host(&got_total);
    std::int64_t got_where = -1;
    where.copy_to_host(&got_where);
    double want_rms = 0;
    for (int k = 0; k < 1000; ++k) want_rms += (k * 0.01) * (k * 0.01);
    want_rms = std::sqrt(want_rms / 1000);
    ok = ok && std::fabs(got_rms[5] - want_rms) <= 1e-5 * want_rms && std::fabs(got_total - 64 * 4995.0f) <= 1 && got_where == 999;
    std::printf("rms of row 5: %.4f, sum of the table: %.1f, argmax: %lld\n", got_rms[5], got_total, static_cast<long long>(got_where));
    std::printf(ok ? "correct\n" : "WRONG\n");
    return ok ? 0 : 1;
}

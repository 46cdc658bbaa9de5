#include "runtime/detail/trace_points.hpp"

#include <atomic>
#include <cstring>
#include <x86intrin.h>

namespace kjit::detail {
namespace {

constexpr std::size_t kMaxPoints = 64;
TracePoint g_points[kMaxPoints];
std::atomic<std::size_t> g_count{0};

}  // namespace

std::uint64_t trace_clock() noexcept { return __rdtsc(); }

void trace_point(const char* what) noexcept {
    const std::size_t k = g_count.fetch_add(1, std::memory_order_relaxed);
    if (k < kMaxPoints) g_points[k] = TracePoint{what, __rdtsc()};
}

void reset_trace_points() noexcept {
    std::memset(static_cast<void*>(g_points), 0, sizeof g_points);
    g_count.store(0, std::memory_order_relaxed);
}

std::span<const TracePoint> trace_points() noexcept {
    const std::size_t n = g_count.load(std::memory_order_relaxed);
    return {g_points, n < kMaxPoints ? n : kMaxPoints};
}

}  // namespace kjit::detail

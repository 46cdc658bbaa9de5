#include "runtime/detail/trace_points.hpp"

#include <cstring>

namespace kjit::detail {

TracePoint g_trace_points[kMaxTracePoints];
std::atomic<std::size_t> g_trace_count{0};

std::uint64_t trace_clock() noexcept { return read_cycle_counter(); }

void reset_trace_points() noexcept {
    std::memset(static_cast<void*>(g_trace_points), 0, sizeof g_trace_points);
    g_trace_count.store(0, std::memory_order_relaxed);
}

std::span<const TracePoint> trace_points() noexcept {
    const std::size_t n = g_trace_count.load(std::memory_order_relaxed);
    return {g_trace_points, n < kMaxTracePoints ? n : kMaxTracePoints};
}

}  // namespace kjit::detail

// Time stamps at named points of a call, for finding where a cold first call's time goes on a
// machine whose processor exposes no event counters (the H200 host: docs/PERFORMANCE.md). The
// points are compiled in only with the CMake option KJIT_TRACE_POINTS; otherwise KJIT_TRACE is
// nothing and a call records nothing. A point costs one time-stamp-counter read and two stores
// into a fixed array, so that tracing does not add the page faults and cold code it measures.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#else
#include <chrono>
#endif

namespace kjit::detail {

struct TracePoint {
    const char* what;   // a string literal
    std::uint64_t tsc;  // the cycle counter (read_cycle_counter)
};

// The cheapest clock of the processor: x86's time-stamp counter, the generic timer's virtual
// count on aarch64 (GH200, Grace Blackwell), the steady clock elsewhere. Ticks, not nanoseconds:
// the tool that prints points calibrates them against the steady clock.
[[gnu::always_inline]] inline std::uint64_t read_cycle_counter() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#elif defined(__aarch64__)
    std::uint64_t ticks;
    asm volatile("mrs %0, cntvct_el0" : "=r"(ticks));
    return ticks;
#else
    return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

inline constexpr std::size_t kMaxTracePoints = 64;
extern TracePoint g_trace_points[kMaxTracePoints];
extern std::atomic<std::size_t> g_trace_count;

// Records a point; beyond the array's capacity points are dropped. Inlined where it is used, so
// that tracing runs no function of its own (one placed elsewhere in the library would cost the
// call a page fault and cold code of its own).
[[gnu::always_inline]] inline void trace_point(const char* what) noexcept {
    const std::size_t k = g_trace_count.fetch_add(1, std::memory_order_relaxed);
    if (k < kMaxTracePoints) g_trace_points[k] = TracePoint{what, read_cycle_counter()};
}
// Forgets the points recorded so far (and touches the array, so that the next point does not
// take a page fault).
void reset_trace_points() noexcept;
// The points recorded since the last reset, in order.
std::span<const TracePoint> trace_points() noexcept;
// Reads the time-stamp counter.
std::uint64_t trace_clock() noexcept;

}  // namespace kjit::detail

#if defined(KJIT_TRACE_POINTS)
#define KJIT_TRACE(what) ::kjit::detail::trace_point(what)
#else
#define KJIT_TRACE(what) ((void)0)
#endif

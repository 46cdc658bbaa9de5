// Time stamps at named points of a call, for finding where a cold first call's time goes on a
// machine whose processor exposes no event counters (the H200 host: docs/PERFORMANCE.md). The
// points are compiled in only with the CMake option KJIT_TRACE_POINTS; otherwise KJIT_TRACE is
// nothing and a call records nothing. A point costs one time-stamp-counter read and two stores
// into a fixed array, so that tracing does not add the page faults and cold code it measures.
#pragma once

#include <cstdint>
#include <span>

namespace kjit::detail {

struct TracePoint {
    const char* what;   // a string literal
    std::uint64_t tsc;  // the time-stamp counter
};

// Records a point; beyond the array's capacity points are dropped.
void trace_point(const char* what) noexcept;
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

// `kjit demo`: the pieces its scenarios share (tools/cli/demo_*.cpp). Each scenario generates its
// data on the host, computes the result with a plain C++ loop and with kjit, checks one against
// the other, and prints the times side by side: the CPU's (std::chrono), the GPU kernels' (kjit
// events on the demo's stream) and the host <-> device copies' (std::chrono around the blocking
// copies), each measured on its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "kjit/kjit.hpp"

namespace kjit::cli::demo {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Deterministic data: element k of stream `seed` is a function of (seed, k) only.
inline std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
// In [0, 1), 53 random bits.
inline double uniform(std::uint64_t seed, std::uint64_t k) {
    return static_cast<double>(mix(seed * 0x100000001b3ull ^ mix(k)) >> 11) * 0x1.0p-53;
}

// The kernels the scenarios launch (built once; the no-GPU path compiles the same objects).
struct Kernels {
    // Scenario 1: x = x + a, in place: x is the output, and an output the operation reads is
    // loaded before it is written (kjit/elementwise_kernel.hpp).
    ElementwiseKernel add_scalar{"T a", "T x", "x = x + a", "demo_add_scalar"};
    // Scenario 3: per-day reductions of the readings (every reading lies far inside +-1e300).
    ReductionKernel day_min{"T x", "T y", "x", "b < a ? b : a", "y = a", "1e300", "demo_day_min"};
    ReductionKernel day_max{"T x", "T y", "x", "b > a ? b : a", "y = a", "-1e300", "demo_day_max"};
    ReductionKernel day_mean{"T x", "T y", "x", "a + b", "y = a / n", "0", "demo_day_mean"};
    // Scenario 4: a spring's time step, v then x updated in place, and the energy.
    ElementwiseKernel step_v{"T x, T dt, T k", "T v", "v = v - dt * k * x", "demo_step_v"};
    ElementwiseKernel step_x{"T v, T dt", "T x", "x = x + dt * v", "demo_step_x"};
    ReductionKernel energy{"T x, T v", "T e", "x * x + v * v", "a + b", "e = a", "0", "demo_energy"};
};
const Kernels& kernels();

// One line of a scenario's table: what was timed, its time, and a note (a rate, how measured).
struct Row {
    std::string what;
    double ms = 0;
    std::string note;
};
void print_table(const std::vector<Row>& rows);

// "300,000,000"
std::string grouped(std::int64_t n);
// "12.3 ms", "1.52 s"
std::string duration(double ms);
// "found in the kernel cache" or "compiled by NVRTC in 812 ms", from a binary's compile_ms.
std::string compile_origin(double compile_ms);

// A one-line progress note on stderr while a slow step runs, only when stderr is a terminal
// ('\r' and erase-line); nothing otherwise, so that logs and pipes stay clean.
class Progress {
public:
    Progress();
    void show(const std::string& what) const;
    void clear() const;

private:
    bool tty_ = false;
};

// GPU time of the work `f` queues on `stream`, between two events recorded around it.
template <class F>
double gpu_ms(const Stream& stream, F&& f) {
    Event start, end;
    start.record(stream);
    f();
    end.record(stream);
    end.synchronize();
    return static_cast<double>(Event::elapsed_ms(start, end));
}

// The scenarios; each returns whether its checks passed (and prints what differed when not).
bool run_add_scalar(double scale, const Stream& stream);
bool run_matmul(double scale, const Stream& stream);
bool run_daily(double scale, const Stream& stream);
bool run_small_steps(double scale, const Stream& stream);
bool run_fused(double scale, const Stream& stream);
// Scenario 5's expression, z = sqrt(a * x + b) * c, on arrays of float32 (on any device).
Expr fused_expression(const Array& x, const Array& c, float a, float b);

// Without a GPU: compiles (or finds in the kernel cache) every kernel the chosen scenarios would
// launch and prints what it did. Returns false when a kernel failed to compile.
bool compile_only(const std::vector<int>& scenarios);

// The scenarios' sizes at a --size-scale: element counts scale linearly, the matrix side by the
// square root (so that the matrices' elements scale linearly too).
std::int64_t add_scalar_size(double scale);
std::int64_t matmul_side(double scale);
std::int64_t readings_per_day_base(double scale);  // scaled 10000: each day has base..2*base readings
std::int64_t small_steps_size(double scale);
std::int64_t fused_size(double scale);
constexpr int kDays = 800;

}  // namespace kjit::cli::demo

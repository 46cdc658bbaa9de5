// `kjit demo`, scenario 4: many small steps. A spring simulation on 10,000 float64 particles runs
// 1000 time steps of three calls each (two elementwise updates and a reduction of the energy).
// Each call's GPU work is a few microseconds, so the time of a call is its host cost: the case
// where a GPU loses to a plain CPU loop (or NumPy) call by call. Captured once into a kjit::Graph
// and replayed, the same steps cost a fraction of that.
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "tools/cli/demo.hpp"

namespace kjit::cli::demo {

namespace {

constexpr int kSteps = 1000;
constexpr int kStepsPerGraph = 10;  // captured once, replayed kSteps / kStepsPerGraph times
constexpr double kDt = 0.01, kSpring = 4.0;

struct State {
    Array x, v, energy;  // energy: one value per step of a graph's worth (step % kStepsPerGraph)
};

// The three calls of step `step`.
void step_on_gpu(const State& s, int step, const Stream& stream) {
    const Kernels& k = kernels();
    k.step_v.launch({s.x, kDt, kSpring, s.v}, {stream, -1});
    k.step_x.launch({s.v, kDt, s.x}, {stream, -1});
    k.energy.launch({s.x, s.v, s.energy.index(0, step % kStepsPerGraph)}, ReduceOptions{{stream, -1}});
}

}  // namespace

std::int64_t small_steps_size(double scale) { return std::max<std::int64_t>(1, std::llround(10000 * scale)); }

bool run_small_steps(double scale, const Stream& stream) {
    const std::int64_t n = small_steps_size(scale);
    fmt::print("Scenario 4: {} steps of a spring simulation on {} float64 particles, 3 calls a step "
               "(2 elementwise, 1 reduction)\n", kSteps, grouped(n));
    const Progress progress;
    std::vector<double> x0(static_cast<std::size_t>(n)), v0(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
        x0[static_cast<std::size_t>(i)] = uniform(4, static_cast<std::uint64_t>(i)) * 2 - 1;
        v0[static_cast<std::size_t>(i)] = uniform(5, static_cast<std::uint64_t>(i)) * 2 - 1;
    }

    progress.show("stepping on the CPU");
    std::vector<double> x = x0, v = v0, energy(kStepsPerGraph);
    Clock::time_point t0 = Clock::now();
    for (int step = 0; step < kSteps; ++step) {
        double e = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            v[i] = v[i] - kDt * kSpring * x[i];
        }
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = x[i] + kDt * v[i];
        for (std::size_t i = 0; i < x.size(); ++i) e += x[i] * x[i] + v[i] * v[i];
        energy[static_cast<std::size_t>(step % kStepsPerGraph)] = e;
    }
    const double cpu_ms = ms_since(t0);

    const State s{Array::from_host(x0.data(), DType::float64, {n}, Device(), stream),
                  Array::from_host(v0.data(), DType::float64, {n}, Device(), stream),
                  Array::empty({kStepsPerGraph}, DType::float64, Device(), stream)};
    const auto reset = [&] {
        s.x.copy_from_host(x0.data(), stream);
        s.v.copy_from_host(v0.data(), stream);
        stream.synchronize();
    };
    // First calls: each kernel compiled (or found in the cache) and loaded, the reduction's
    // workspace made; not in the times.
    progress.show("compiling and loading the kernels");
    step_on_gpu(s, 0, stream);
    reset();

    progress.show("stepping on the GPU, call by call");
    t0 = Clock::now();
    for (int step = 0; step < kSteps; ++step) step_on_gpu(s, step, stream);
    stream.synchronize();
    const double eager_ms = ms_since(t0);
    const std::vector<double> eager_x = [&] { std::vector<double> h(x.size()); s.x.copy_to_host(h.data(), stream); return h; }();
    std::vector<double> eager_energy(kStepsPerGraph);
    s.energy.copy_to_host(eager_energy.data(), stream);

    progress.show("capturing a graph");
    reset();
    t0 = Clock::now();
    const Graph g = Graph::capture(stream, [&] {
        for (int step = 0; step < kStepsPerGraph; ++step) step_on_gpu(s, step, stream);
    });
    const double capture_ms = ms_since(t0);
    progress.show("stepping on the GPU by graph replays");
    t0 = Clock::now();
    for (int r = 0; r < kSteps / kStepsPerGraph; ++r) g.launch(stream);
    stream.synchronize();
    const double graph_ms = ms_since(t0);
    std::vector<double> graph_x(x.size()), graph_energy(kStepsPerGraph);
    s.x.copy_to_host(graph_x.data(), stream);
    s.energy.copy_to_host(graph_energy.data(), stream);
    progress.clear();

    const double calls = 3.0 * kSteps;
    auto per_call = [&](double ms) { return fmt::format("{:.2f} us a call", ms * 1000 / calls); };
    print_table({
        {"CPU: plain loops, one thread", cpu_ms, fmt::format("{:.2f} us a step", cpu_ms * 1000 / kSteps)},
        {"GPU: kjit calls one by one", eager_ms, per_call(eager_ms) + " (host time: the launches)"},
        {"GPU: kjit graph replays", graph_ms,
         per_call(graph_ms) + fmt::format(" ({} replays of {} calls; {} nodes, captured in {})", kSteps / kStepsPerGraph,
                                          3 * kStepsPerGraph, g.node_count(), duration(capture_ms))},
    });
    fmt::print("  the graph is {:.1f}x faster than the calls one by one, and {:.1f}x {} than the CPU loop\n",
               eager_ms / graph_ms, graph_ms < cpu_ms ? cpu_ms / graph_ms : graph_ms / cpu_ms,
               graph_ms < cpu_ms ? "faster" : "slower");

    // The graph replays the calls' own kernels: bit for bit what they wrote. The CPU rounds
    // differently (the GPU contracts a * b + c into one fused multiply-add), so it is compared
    // within a relative 1e-9.
    bool ok = true;
    if (std::memcmp(graph_x.data(), eager_x.data(), x.size() * sizeof(double)) != 0 ||
        std::memcmp(graph_energy.data(), eager_energy.data(), energy.size() * sizeof(double)) != 0) {
        fmt::print("  CHECK FAILED: the graph's positions or energies differ from the calls'\n");
        ok = false;
    }
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(eager_x[i] - x[i]) / std::max(1.0, std::abs(x[i])));
    for (std::size_t i = 0; i < energy.size(); ++i)
        worst = std::max(worst, std::abs(eager_energy[i] - energy[i]) / std::max(1.0, std::abs(energy[i])));
    if (worst > 1e-9) {
        fmt::print("  CHECK FAILED: the GPU's positions or energies differ from the CPU's by {:.2g} (relative)\n", worst);
        ok = false;
    }
    if (ok)
        fmt::print("  check: the graph's results equal the calls' bit for bit, and the CPU's within {:.1g} (relative)\n",
                   std::max(worst, 1e-300));
    return ok;
}

}  // namespace kjit::cli::demo

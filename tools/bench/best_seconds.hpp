// The timing the host benchmarks share: the best of `runs` runs of f(), in seconds (the best, not
// the median: on a shared build machine the other runs measure the neighbours).
#pragma once

#include <algorithm>
#include <chrono>

template <class F>
double best_seconds(int runs, F f) {
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

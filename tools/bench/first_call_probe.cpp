// kjit-probe: one fresh process's first call of a kernel, as an application linked to libkjit.so
// makes it (public API only). `kjit bench` runs it for ew_first_disk and ew_first_readonly.
//
// Prints the call's milliseconds and the minor page faults it took (code and memory touched for
// the first time), then the milliseconds that making the context took (the driver's start, not
// counted), then those of the setup between the two (the input array made and copied).
// Measurements, set in the environment:
//   KJIT_PROBE_LEAN_SETUP=1  the input only allocated, so that the call comes right after the context;
//   KJIT_PROBE_SECOND=1      then a second kernel on disk, whose code paths the first has run:
//                            what the first call pays for cold code;
//   KJIT_PROBE_REDUCTION=1   the first call is a user reduction's instead.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sys/resource.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "kjit/kjit.hpp"

namespace {
using Clock = std::chrono::steady_clock;

long minor_page_faults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

bool set(const char* name) {
    const char* e = std::getenv(name);
    return e != nullptr && e[0] == '1';
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

int probe() {
    using namespace kjit;
    const auto t_context = Clock::now();
    Device::set_current(0);
    const auto t_setup = Clock::now();
    const double context_ms = std::chrono::duration<double, std::milli>(t_setup - t_context).count();
    const Stream s = Stream::legacy_default(Device::cuda(0));
    std::vector<float> host(1000, 1.5f);
    const bool lean = set("KJIT_PROBE_LEAN_SETUP");
    const Array x = lean ? Array::empty({1000}, DType::float32, Device::cuda(0), s)
                         : Array::from_host(host.data(), DType::float32, {1000}, Device::cuda(0), s);
    if (!lean) s.synchronize();
    const double setup_ms = ms_since(t_setup);
    if (set("KJIT_PROBE_REDUCTION")) {
        (void)::access("/kjit-probe: the first call starts", F_OK);
        const long faults = minor_page_faults();
        const auto t0 = Clock::now();
        const ReductionKernel sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", "probe_sumsq");
        (void)sumsq({x}, ReduceOptions{{s}});
        s.synchronize();
        std::printf("%.4f %ld %.3f %.4f\n", ms_since(t0), minor_page_faults() - faults, context_ms, setup_ms);
        return 0;
    }
    auto first_call = [&](const char* operation, const char* name) {
        // A failed access() of a name no file has: where the call starts in `strace` output.
        (void)::access("/kjit-probe: the first call starts", F_OK);
        const long faults = minor_page_faults();
        const auto t0 = Clock::now();
        const ElementwiseKernel k("T x, T a, T b", "T y", operation, name);
        (void)k({x, 2.0f, 1.0f}, {s, -1});
        s.synchronize();
        return std::pair{ms_since(t0), minor_page_faults() - faults};
    };
    const auto [ms, faults] = first_call("y = a * x + b", "probe_axpb");
    if (set("KJIT_PROBE_SECOND")) {
        const auto [ms2, faults2] = first_call("y = a * x - b", "probe_axmb");
        std::printf("%.4f %ld %.4f %ld %.3f %.4f\n", ms, faults, ms2, faults2, context_ms, setup_ms);
        return 0;
    }
    std::printf("%.4f %ld %.3f %.4f\n", ms, faults, context_ms, setup_ms);
    return 0;
}
}  // namespace

int main() {
    try {
        return probe();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kjit-probe: %s\n", e.what());
        return 1;
    }
}

// `kjit bench`: the raw kernel cases of issue 32: the host time of a launch with a thread-block
// cluster (cuLaunchKernelEx) against a plain launch (cuLaunchKernel) of the same kernel, and a
// relocatable module's first build (NVRTC + nvJitLink) against its cache hit.
#include <algorithm>
#include <ctime>
#include <sstream>
#include <unistd.h>

#include "tools/cli/bench_support.hpp"

namespace kjit::cli::bench {
namespace {

// 1000 floats set to v, in 4 blocks of 256: a grid of whole clusters of 2.
const char* const kFill1k = R"(
extern "C" __global__ void fill_1k(float* y, float v, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = v;
}
)";

// A parent launching 13 children of 32 threads (dynamic parallelism): child c fills y[32c...] with
// v + c. `tag` makes the source one no cache has seen.
std::string parent_and_children(const std::string& tag) {
    return "// " + tag + R"(
extern "C" __global__ void child(float* y, float v) { y[threadIdx.x] = v; }
extern "C" __global__ void parent(float* y, float v, int children) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (int c = 0; c < children; ++c) child<<<1, 32>>>(y + 32 * c, v + c);
}
)";
}

// Whether every element of y is v (synchronises).
bool all_equal(const Array& y, float v, const Stream& s) {
    std::vector<float> host(static_cast<std::size_t>(y.size()));
    y.copy_to_host(host.data(), s);
    return std::all_of(host.begin(), host.end(), [v](float e) { return e == v; });
}

}  // namespace

void add_raw_cases(Cases& c) {
    // A link's first cost: 5 relocatable modules no cache has seen, each compiled (NVRTC, -rdc=true)
    // and linked with the device runtime (nvJitLink) for this GPU and stored; median. Then its
    // cached cost: a new module object of each source, found in the cache (key: source, options,
    // the device runtime's hash, nvJitLink's version); median. The last is launched and checked.
    c.emplace_back("raw_link_first", [](const Stream& s) {
        const std::string run = std::to_string(getpid()) + "." + std::to_string(std::time(nullptr));
        const RawModuleOptions options{.nvrtc_options = {"-rdc=true"}, .name = "bench_link"};
        const std::string arch = Device::cuda(0).properties().arch();
        std::vector<double> first_ms, cached_ms;
        std::vector<std::string> sources;
        for (int k = 0; k < 5; ++k) sources.push_back(parent_and_children("raw_link_first " + run + " " + std::to_string(k)));
        auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
        for (const std::string& source : sources) {
            const auto t = Clock::now();
            (void)RawModule(source, options).compile(arch);
            first_ms.push_back(ms_since(t));
        }
        for (const std::string& source : sources) {
            const auto t = Clock::now();
            (void)RawModule(source, options).compile(arch);
            cached_ms.push_back(ms_since(t));
        }
        const RawModule last(sources.back(), options);
        const Array y = Array::empty({32 * 13}, DType::float32, Device::cuda(0), s);
        LaunchConfig on_s;
        on_s.stream = s;
        last.get_function("parent")(1, 1, {y, 1.0f, 13}, on_s);
        std::vector<float> host(32 * 13);
        y.copy_to_host(host.data(), s);
        std::string wrong;
        for (std::size_t i = 0; i < host.size() && wrong.empty(); ++i)
            if (host[i] != 1.0f + static_cast<float>(i / 32)) wrong = "y[" + std::to_string(i) + "] is not what its child wrote";

        Record r;
        r.name = "raw_link_first";
        r.ms = median(first_ms);
        r.error = wrong;
        std::ostringstream note;
        note << "RawModule with -rdc=true (a parent launching 13 children) compiled by NVRTC and linked with "
                "libcudadevrt.a by nvJitLink for " << arch << ", new to the cache; median of 5 (min "
             << *std::min_element(first_ms.begin(), first_ms.end()) << ", max "
             << *std::max_element(first_ms.begin(), first_ms.end()) << " ms)";
        r.note = note.str();
        Record h;
        h.name = r.name;
        h.ms = median(cached_ms);
        h.variant = "cache hit of the same modules";
        std::ostringstream hit_note;
        hit_note << h.variant << " (new RawModule objects, same process): median of 5 (min "
                 << *std::min_element(cached_ms.begin(), cached_ms.end()) << ", max "
                 << *std::max_element(cached_ms.begin(), cached_ms.end()) << " ms)";
        h.note = hit_note.str();
        extra_records().push_back(h);
        return r;
    });

    // As ew_host_1k: 1000 warm-up launches, then 10000 launches and one sync, all timed; median of
    // 5. The plain and the cluster launches alternate within each repeat, so that a drift of the
    // host's speed during the run does not fall on one of them.
    c.emplace_back("raw_launch_cluster", [](const Stream& s) {
        const RawKernel k(kFill1k, "fill_1k");
        const Array y = Array::empty({1000}, DType::float32, Device::cuda(0), s);
        LaunchConfig plain;
        plain.stream = s;
        LaunchConfig clustered = plain;
        clustered.cluster = {2, 1, 1};
        const int n = 1000, launches = 10000;
        for (int i = 0; i < 1000; ++i) k(4, 256, {y, 0.5f, n}, plain);
        for (int i = 0; i < 1000; ++i) k(4, 256, {y, 0.5f, n}, clustered);
        s.synchronize();
        // `launches` launches with `config`, then one sync, all timed: microseconds per launch.
        auto timed = [&](const LaunchConfig& config, float v) {
            const auto t0 = Clock::now();
            for (int i = 0; i < launches; ++i) k(4, 256, {y, v, n}, config);
            s.synchronize();
            return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / launches;
        };
        std::vector<double> plain_us, cluster_us;
        for (int r = 0; r < 5; ++r) {
            plain_us.push_back(timed(plain, 1.0f));
            cluster_us.push_back(timed(clustered, 2.0f));
        }
        std::sort(plain_us.begin(), plain_us.end());
        std::sort(cluster_us.begin(), cluster_us.end());
        const double plain_median = plain_us[2], cluster_median = cluster_us[2];

        Record r;
        r.name = "raw_launch_cluster";
        r.dtype = "float32";
        r.n = n;
        r.us_per_call = cluster_median;
        k(4, 256, {y, 3.0f, n}, plain);
        const bool plain_wrote = all_equal(y, 3.0f, s);
        k(4, 256, {y, 4.0f, n}, clustered);
        const bool cluster_wrote = all_equal(y, 4.0f, s);
        if (!plain_wrote || !cluster_wrote)
            r.error = std::string("the ") + (plain_wrote ? "cluster" : "plain") + " launch did not fill y";
        std::ostringstream note;
        note << "RawKernel launch with cluster {2, 1, 1} (cuLaunchKernelEx), 4 blocks of 256; median of 5 x "
             << launches << " launches then one sync (min " << cluster_us.front() << ", max " << cluster_us.back()
             << " us); the same kernel launched plainly (cuLaunchKernel) in the same run: " << plain_median
             << " us; cluster - plain: " << cluster_median - plain_median << " us (goal: at most 0.3)";
        r.note = note.str();

        Record p;
        p.name = r.name;
        p.dtype = r.dtype;
        p.n = n;
        p.us_per_call = plain_median;
        p.variant = "plain launch of the same kernel (cuLaunchKernel), same run";
        std::ostringstream plain_note;
        plain_note << p.variant << "; median of 5 x " << launches << " launches then one sync (min "
                   << plain_us.front() << ", max " << plain_us.back() << " us)";
        p.note = plain_note.str();
        extra_records().push_back(p);
        return r;
    });
}

}  // namespace kjit::cli::bench

// `kjit bench`: the raw kernel case of issue 32, the host time of a launch with a thread-block
// cluster (cuLaunchKernelEx) against a plain launch (cuLaunchKernel) of the same kernel.
#include <algorithm>
#include <sstream>

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

// Whether every element of y is v (synchronises).
bool all_equal(const Array& y, float v, const Stream& s) {
    std::vector<float> host(static_cast<std::size_t>(y.size()));
    y.copy_to_host(host.data(), s);
    return std::all_of(host.begin(), host.end(), [v](float e) { return e == v; });
}

}  // namespace

void add_raw_cases(Cases& c) {
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

// An elementwise kernel from a string, called on GPU arrays: y = a * x + b over a million floats,
// checked on the host. Without a GPU it compiles the kernel (into the kernel cache) and says so.
#include <cmath>
#include <cstdio>
#include <vector>

#include <kjit/kjit.hpp>

int main() {
    const kjit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
    if (kjit::Device::count() == 0) {
        const kjit::Binary bin = axpb.compile({{"T", kjit::DType::float32}});
        std::printf("no GPU (%s); compiled axpb for %s instead\n", kjit::no_device_reason().c_str(), bin.arch.c_str());
        return 0;
    }
    const std::int64_t n = 1 << 20;
    std::vector<float> host(n);
    for (std::int64_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 1000) * 0.001f;
    const kjit::Array x = kjit::Array::from_host(host.data(), kjit::DType::float32, {n});
    const kjit::Array y = axpb({x, 2.0f, 1.0f});  // T = float32 from x; y allocated
    std::vector<float> out(n);
    y.copy_to_host(out.data());
    for (std::int64_t i = 0; i < n; ++i)
        if (std::fabs(out[i] - (2.0f * host[i] + 1.0f)) > 1e-6f) {
            std::printf("wrong at %lld: %g\n", static_cast<long long>(i), out[i]);
            return 1;
        }
    std::printf("y = 2 * x + 1 over %lld floats: correct\n", static_cast<long long>(n));
    return 0;
}

// Array expressions fused into one kernel: a standardised, clipped signal and its variance,
// written as NumPy would write them, each one launch; checked against a plain CPU loop.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <kjit/kjit.hpp>

int main() {
    if (kjit::Device::count() == 0) {
        std::printf("no GPU: %s\n", kjit::no_device_reason().c_str());
        return 0;
    }
    const std::int64_t n = 1 << 20;
    std::vector<float> host(n);
    for (std::int64_t k = 0; k < n; ++k) host[k] = std::sin(0.001f * k) * 3.0f + 0.5f;
    const kjit::Array x = kjit::Array::from_host(host.data(), kjit::DType::float32, {n});

    const float mean = 0.5f, scale = 1.0f / 3.0f;
    // One kernel each: the expression's structure is the kernel; mean and scale are arguments.
    const kjit::Array z = kjit::clip((x - mean) * scale, -0.9f, 0.9f);
    const kjit::Array var = kjit::mean((x - mean) * (x - mean));
    std::printf("kernel of z:\n%s", kjit::clip((x - mean) * scale, -0.9f, 0.9f).source().c_str());

    std::vector<float> got(n);
    z.copy_to_host(got.data());
    float got_var = 0;
    var.copy_to_host(&got_var);
    double want_var = 0;
    std::int64_t wrong = 0;
    for (std::int64_t k = 0; k < n; ++k) {
        const float want = std::min(0.9f, std::max(-0.9f, (host[k] - mean) * scale));
        if (std::abs(got[k] - want) > 1e-6f) ++wrong;
        want_var += double(host[k] - mean) * double(host[k] - mean);
    }
    want_var /= n;
    std::printf("z: %lld of %lld elements differ from the CPU loop; variance %.6f (CPU %.6f)\n", static_cast<long long>(wrong),
                static_cast<long long>(n), got_var, want_var);
    return wrong == 0 && std::abs(got_var - want_var) <= 1e-4 * want_var ? 0 : 1;
}

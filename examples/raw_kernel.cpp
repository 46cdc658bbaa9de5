// Your own CUDA through RawKernel: a saxpy launched with an explicit grid and block on a stream.
#include <cstdio>
#include <vector>

#include <kjit/kjit.hpp>

int main() {
    const kjit::RawKernel saxpy(R"(
        extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
            const int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] = a * x[i] + y[i];
        })",
                                "saxpy");
    if (kjit::Device::count() == 0) {
        std::printf("no GPU: %s\n", kjit::no_device_reason().c_str());
        return 0;
    }
    const int n = 1000;
    std::vector<float> xs(n, 1.0f), ys(n, 2.0f);
    const kjit::Stream stream = kjit::Stream::create();
    const kjit::Array x = kjit::Array::from_host(xs.data(), kjit::DType::float32, {n}, kjit::Device::cuda(0), stream);
    const kjit::Array y = kjit::Array::from_host(ys.data(), kjit::DType::float32, {n}, kjit::Device::cuda(0), stream);
    kjit::LaunchConfig config;
    config.stream = stream;
    saxpy((n + 255) / 256, 256, {3.0f, x, y, n}, config);
    y.copy_to_host(ys.data(), stream);
    std::printf("y[0] = %g (3 * 1 + 2)\n", ys[0]);
    return ys[0] == 5.0f ? 0 : 1;
}

// A stand-alone measure of the driver's host cost per launch for issue 5's `ew_host_1k` (host time
// per call of a 1000-element kernel): the same empty kernel launched 10000 times then one sync,
// varying what a launch carries (no parameter, one 48-byte struct as kjit's small variant takes,
// five scalars, the struct plus a 392-byte layout, the struct through `extra`) and the stream
// (legacy default, per-thread default, created blocking and non-blocking), and a 1000-element
// axpb kernel through cuLaunchKernel as kjit launches it. Built here (nvcc -O3 -arch=sm_90 -lcuda),
// run on the H200:  launch_cost      one line per variant: median µs per launch of 7 rounds
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CU(call)                                                                              \
    do {                                                                                      \
        CUresult r_ = (call);                                                                 \
        if (r_ != CUDA_SUCCESS) {                                                             \
            const char* s_ = nullptr;                                                         \
            cuGetErrorName(r_, &s_);                                                          \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, s_ ? s_ : "?"); \
            std::exit(1);                                                                     \
        }                                                                                     \
    } while (0)

struct Args {  // as kjit's small variant of y = a*x + b takes it: x, a, b, y, n
    const float* x;
    float a, b;
    float* y;
    long long n;
    long long pad;
};
struct Layout2 {
    int ndim;
    long long shape[16];
    long long strides[2][16];
};

extern "C" __global__ void __launch_bounds__(256) empty0() {}
extern "C" __global__ void __launch_bounds__(256) empty_struct(const Args args) {
    if (args.n < 0) *args.y = 0;
}
extern "C" __global__ void __launch_bounds__(256) empty_scalars(const float* x, float a, float b, float* y, long long n) {
    if (n < 0) *y = a + b + *x;
}
extern "C" __global__ void __launch_bounds__(256) empty_struct_layout(const Args args, const Layout2 layout) {
    if (args.n < layout.ndim - 100) *args.y = 0;
}
extern "C" __global__ void __launch_bounds__(256) axpb_small(const Args args) {
    const int e = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (e < static_cast<int>(args.n)) args.y[e] = args.a * args.x[e] + args.b;
}

using Clock = std::chrono::steady_clock;

template <class F>
double us_per_launch(F launch, CUstream s, int calls = 10000, int rounds = 7) {
    for (int k = 0; k < 200; ++k) launch();
    CU(cuStreamSynchronize(s));
    std::vector<double> us;
    for (int r = 0; r < rounds; ++r) {
        const auto t0 = Clock::now();
        for (int k = 0; k < calls; ++k) launch();
        CU(cuStreamSynchronize(s));
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls);
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
}

CUfunction function_of(const void* symbol) {
    cudaFunction_t f = nullptr;
    if (cudaGetFuncBySymbol(&f, symbol) != cudaSuccess) {
        std::fprintf(stderr, "cudaGetFuncBySymbol failed\n");
        std::exit(1);
    }
    return reinterpret_cast<CUfunction>(f);
}

int main() {
    if (cudaFree(nullptr) != cudaSuccess) return 1;  // starts the runtime and the primary context
    const CUfunction f0 = function_of((const void*)empty0), fs = function_of((const void*)empty_struct),
                     f5 = function_of((const void*)empty_scalars), fl = function_of((const void*)empty_struct_layout),
                     fa = function_of((const void*)axpb_small);
    float *x = nullptr, *y = nullptr;
    if (cudaMalloc(&x, 4000) != cudaSuccess || cudaMalloc(&y, 4000) != cudaSuccess) return 1;
    std::vector<float> host(1000);
    for (int k = 0; k < 1000; ++k) host[k] = 0.25f * k;
    cudaMemcpy(x, host.data(), 4000, cudaMemcpyHostToDevice);
    Args args{x, 2.0f, 1.0f, y, 1000, 0};
    Layout2 layout{};
    layout.ndim = 1;
    long long n = 1000;
    float a = 2, b = 1;

    CUstream blocking = nullptr, nonblocking = nullptr;
    CU(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    CU(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
    struct NamedStream { const char* name; CUstream s; };
    const NamedStream streams[] = {{"legacy default", CU_STREAM_LEGACY},
                                   {"per-thread default", CU_STREAM_PER_THREAD},
                                   {"created, blocking", blocking},
                                   {"created, non-blocking", nonblocking}};

    for (const NamedStream& st : streams) {
        CUstream s = st.s;
        auto row = [&](const char* what, double us) { std::printf("%-22s %-44s %6.3f us\n", st.name, what, us); std::fflush(stdout); };
        row("empty, no parameter", us_per_launch([&] { CU(cuLaunchKernel(f0, 1, 1, 1, 256, 1, 1, 0, s, nullptr, nullptr)); }, s));
        void* ps[] = {&args};
        row("empty, one 48-byte struct", us_per_launch([&] { CU(cuLaunchKernel(fs, 4, 1, 1, 256, 1, 1, 0, s, ps, nullptr)); }, s));
        void* p5[] = {&x, &a, &b, &y, &n};
        row("empty, five scalars", us_per_launch([&] { CU(cuLaunchKernel(f5, 4, 1, 1, 256, 1, 1, 0, s, p5, nullptr)); }, s));
        void* pl[] = {&args, &layout};
        row("empty, struct + 392-byte layout", us_per_launch([&] { CU(cuLaunchKernel(fl, 4, 1, 1, 256, 1, 1, 0, s, pl, nullptr)); }, s));
        std::size_t size = sizeof args;
        void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
        row("empty, struct through extra", us_per_launch([&] { CU(cuLaunchKernel(fs, 4, 1, 1, 256, 1, 1, 0, s, nullptr, extra)); }, s));
        row("axpb 1000 floats, struct", us_per_launch([&] { CU(cuLaunchKernel(fa, 4, 1, 1, 256, 1, 1, 0, s, ps, nullptr)); }, s));
        CUlaunchConfig cfg{};
        cfg.gridDimX = 4; cfg.gridDimY = 1; cfg.gridDimZ = 1;
        cfg.blockDimX = 256; cfg.blockDimY = 1; cfg.blockDimZ = 1;
        cfg.hStream = s;
        row("axpb 1000 floats, cuLaunchKernelEx", us_per_launch([&] { CU(cuLaunchKernelEx(&cfg, fa, ps, nullptr)); }, s));
    }
    // The result of the last axpb, checked, so the launches are known to have run.
    std::vector<float> out(1000);
    cudaMemcpy(out.data(), y, 4000, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int k = 0; k < 1000; ++k) bad += out[k] != 2.0f * host[k] + 1.0f;
    std::printf("check: %d of 1000 wrong\n", bad);
    return bad == 0 ? 0 : 1;
}

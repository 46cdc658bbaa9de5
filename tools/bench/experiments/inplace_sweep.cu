// A stand-alone sweep for issue 5's in-place case, `x = x + 5` on 300M float64: kjit's contiguous
// variant's shape (V elements per 16-byte vector, U vectors a grid apart per thread, one block per
// 256 threads' work) against other shapes, cache hints and a device-to-device copy of the same
// bytes measured in the same process. Built here (nvcc -O3 -arch=sm_90), run on the H200:
//   inplace_sweep [elements]         prints one line per variant: median GB/s (read + write) of 15
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                             \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            std::exit(1);                                                                        \
        }                                                                                        \
    } while (0)

struct alignas(16) D2 { double a, b; };

enum Hint { plain, l2_256, l2_128, evict_last_none, nc_load };

template <Hint H>
__device__ __forceinline__ D2 load2(const double* p) {
    D2 r;
    if constexpr (H == l2_256) {
        asm volatile("ld.global.L2::256B.v2.f64 {%0, %1}, [%2];" : "=d"(r.a), "=d"(r.b) : "l"(p));
    } else if constexpr (H == l2_128) {
        asm volatile("ld.global.L2::128B.v2.f64 {%0, %1}, [%2];" : "=d"(r.a), "=d"(r.b) : "l"(p));
    } else if constexpr (H == evict_last_none) {
        asm volatile("ld.global.L1::no_allocate.v2.f64 {%0, %1}, [%2];" : "=d"(r.a), "=d"(r.b) : "l"(p));
    } else if constexpr (H == nc_load) {
        asm volatile("ld.global.nc.v2.f64 {%0, %1}, [%2];" : "=d"(r.a), "=d"(r.b) : "l"(p));
    } else {
        r = *reinterpret_cast<const D2*>(p);
    }
    return r;
}

// kjit's shape: U vectors a grid apart, all loads first, then the stores; then single vectors.
template <int U, Hint H>
__global__ void __launch_bounds__(1024) add_grid_apart(double* x, long long n) {
    const long long vectors = n / 2;
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    for (; v + (U - 1) * stride < vectors; v += U * stride) {
        D2 r[U];
#pragma unroll
        for (int u = 0; u < U; ++u) r[u] = load2<H>(x + (v + u * stride) * 2);
#pragma unroll
        for (int u = 0; u < U; ++u) {
            r[u].a += 5.0;
            r[u].b += 5.0;
            *reinterpret_cast<D2*>(x + (v + u * stride) * 2) = r[u];
        }
    }
    for (; v < vectors; v += stride) {
        D2 r = load2<H>(x + v * 2);
        r.a += 5.0;
        r.b += 5.0;
        *reinterpret_cast<D2*>(x + v * 2) = r;
    }
}

// U vectors a block apart (each block owns U * blockDim consecutive vectors).
template <int U, Hint H>
__global__ void __launch_bounds__(1024) add_block_chunk(double* x, long long n) {
    const long long vectors = n / 2;
    const long long base = blockIdx.x * (long long)blockDim.x * U + threadIdx.x;
    D2 r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const long long v = base + (long long)u * blockDim.x;
        if (v < vectors) r[u] = load2<H>(x + v * 2);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const long long v = base + (long long)u * blockDim.x;
        if (v < vectors) {
            r[u].a += 5.0;
            r[u].b += 5.0;
            *reinterpret_cast<D2*>(x + v * 2) = r[u];
        }
    }
}

struct Timer {
    cudaEvent_t a, b;
    Timer() { CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b)); }
};

template <class F>
double median_gbps(F launch, double bytes, int reps = 15) {
    Timer t;
    launch();
    CHECK(cudaDeviceSynchronize());
    std::vector<double> g;
    for (int k = 0; k < reps; ++k) {
        CHECK(cudaEventRecord(t.a));
        launch();
        CHECK(cudaEventRecord(t.b));
        CHECK(cudaEventSynchronize(t.b));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, t.a, t.b));
        g.push_back(bytes / (ms * 1e-3) / 1e9);
    }
    CHECK(cudaGetLastError());
    std::sort(g.begin(), g.end());
    return g[g.size() / 2];
}

int main(int argc, char** argv) {
    const long long n = argc > 1 ? std::atoll(argv[1]) : 300000000LL;
    const double bytes = 2.0 * 8.0 * (double)n;
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    double *x = nullptr, *y = nullptr;
    CHECK(cudaMalloc(&x, n * 8));
    CHECK(cudaMalloc(&y, n * 8));
    std::vector<double> host(1 << 20);
    for (std::size_t k = 0; k < host.size(); ++k) host[k] = (double)(k % 1000) * 0.001;
    for (long long off = 0; off < n; off += (long long)host.size())
        CHECK(cudaMemcpy(x + off, host.data(), std::min<long long>(host.size(), n - off) * 8, cudaMemcpyHostToDevice));

    auto row = [&](const char* name, double gbps, double copy) {
        std::printf("%-44s %8.1f GB/s  %6.2f%% of copy\n", name, gbps, 100.0 * gbps / copy);
        std::fflush(stdout);
    };
    auto copy = [&] { return median_gbps([&] { CHECK(cudaMemcpyAsync(y, x, n * 8, cudaMemcpyDeviceToDevice)); }, bytes); };
    double ceiling = copy();
    std::printf("%-44s %8.1f GB/s  (n = %lld float64, %d SMs)\n", "copy (cudaMemcpyAsync D2D, same bytes)", ceiling, n, sms);

    auto grid_apart = [&](auto kernel, int U, int threads) {
        const long long vectors = n / 2;
        const long long blocks = std::max(1LL, ((vectors + U - 1) / U + threads - 1) / threads);
        return median_gbps([&] { kernel<<<(unsigned)blocks, threads>>>(x, n); }, bytes);
    };
    auto chunk = [&](auto kernel, int U, int threads) {
        const long long vectors = n / 2;
        const long long blocks = (vectors + (long long)U * threads - 1) / ((long long)U * threads);
        return median_gbps([&] { kernel<<<(unsigned)blocks, threads>>>(x, n); }, bytes);
    };
    auto persistent = [&](auto kernel, int per_sm, int threads) {
        return median_gbps([&] { kernel<<<(unsigned)(sms * per_sm), threads>>>(x, n); }, bytes);
    };

    row("kjit's shape: grid apart U=4, 256 threads", grid_apart(add_grid_apart<4, plain>, 4, 256), ceiling);
    row("grid apart U=1, 256", grid_apart(add_grid_apart<1, plain>, 1, 256), ceiling);
    row("grid apart U=2, 256", grid_apart(add_grid_apart<2, plain>, 2, 256), ceiling);
    row("grid apart U=8, 256", grid_apart(add_grid_apart<8, plain>, 8, 256), ceiling);
    row("grid apart U=4, 128", grid_apart(add_grid_apart<4, plain>, 4, 128), ceiling);
    row("grid apart U=4, 512", grid_apart(add_grid_apart<4, plain>, 4, 512), ceiling);
    row("grid apart U=4, 1024", grid_apart(add_grid_apart<4, plain>, 4, 1024), ceiling);
    row("grid apart U=4, 256, ld L2::256B", grid_apart(add_grid_apart<4, l2_256>, 4, 256), ceiling);
    row("grid apart U=4, 256, ld L2::128B", grid_apart(add_grid_apart<4, l2_128>, 4, 256), ceiling);
    row("grid apart U=4, 256, ld L1::no_allocate", grid_apart(add_grid_apart<4, evict_last_none>, 4, 256), ceiling);
    row("grid apart U=2, 256, ld L2::256B", grid_apart(add_grid_apart<2, l2_256>, 2, 256), ceiling);
    row("grid apart U=8, 256, ld L2::256B", grid_apart(add_grid_apart<8, l2_256>, 8, 256), ceiling);
    row("block chunk U=4, 256", chunk(add_block_chunk<4, plain>, 4, 256), ceiling);
    row("block chunk U=8, 256", chunk(add_block_chunk<8, plain>, 8, 256), ceiling);
    row("block chunk U=4, 256, ld L2::256B", chunk(add_block_chunk<4, l2_256>, 4, 256), ceiling);
    row("block chunk U=2, 512, ld L2::256B", chunk(add_block_chunk<2, l2_256>, 2, 512), ceiling);
    row("persistent 8/SM x 1024, U=4", persistent(add_grid_apart<4, plain>, 2, 1024), ceiling);
    row("persistent 32/SM x 256, U=4, L2::256B", persistent(add_grid_apart<4, l2_256>, 32, 256), ceiling);
    // The same variants once more, so the spread between two timings of one variant shows.
    const double again = copy();
    row("copy again", again, std::max(ceiling, again));
    row("kjit's shape again", grid_apart(add_grid_apart<4, plain>, 4, 256), std::max(ceiling, again));
    row("grid apart U=4, 256, ld L2::256B again", grid_apart(add_grid_apart<4, l2_256>, 4, 256), std::max(ceiling, again));
    row("block chunk U=4, 256 again", chunk(add_block_chunk<4, plain>, 4, 256), std::max(ceiling, again));

    // Correctness: every element was increased by 5 once per launch (the same number of times,
    // up to rounding of the running sums); check the first 2^20.
    std::vector<double> back(host.size());
    CHECK(cudaMemcpy(back.data(), x, back.size() * 8, cudaMemcpyDeviceToHost));
    const double advance = back[1] - host[1];
    long long bad = 0;
    for (std::size_t k = 0; k < back.size(); ++k)
        if (std::abs((back[k] - host[k]) - advance) > 1e-9 * advance) ++bad;
    std::printf("check: every sampled element advanced by %.0f (%lld differ)\n", advance, bad);
    return bad == 0 ? 0 : 1;
}

// kjit: support code for elementwise kernels (embedded in every generated elementwise module).
// Raw<T>, Layout<arrays> and the limits they use, shared with the host code that fills them.
#include "launch_layout.cuh"

namespace kjit {

// The rest serves the variants that walk vectors, layouts or grid-stride loops; a program of the
// small variant alone (one element per thread) leaves it out, which NVRTC notices.
#ifndef KJIT_ELEMENTWISE_SMALL_ONLY

// N consecutive elements moved with the widest loads the alignment allows (16 bytes and more).
template <class T, int N>
struct alignas(sizeof(T) * N >= 16 ? 16 : sizeof(T) * N) Vec {
    T v[N];
};
template <int N, class T>
__device__ __forceinline__ Vec<T, N> load(const T* p) { return *reinterpret_cast<const Vec<T, N>*>(p); }
template <int N, class T>
__device__ __forceinline__ void store(T* p, const Vec<T, N>& x) { *reinterpret_cast<Vec<T, N>*>(p) = x; }
// N copies of one element (an operand broadcast along the vector's dimension).
template <int N, class T>
__device__ __forceinline__ Vec<T, N> splat(const T& x) {
    Vec<T, N> r;
#pragma unroll
    for (int k = 0; k < N; ++k) r.v[k] = x;
    return r;
}

// The offsets in each operand of element `e` of the first `dims` dimensions, counted in C order.
template <class Index, int arrays>
__device__ __forceinline__ void offsets_over(const Layout<arrays>& layout, int dims, Index e, Index (&off)[arrays]) {
#pragma unroll
    for (int a = 0; a < arrays; ++a) off[a] = 0;
    for (int d = dims - 1; d >= 0; --d) {
        const Index extent = static_cast<Index>(layout.shape[d]);
        const Index k = e % extent;
        e /= extent;
#pragma unroll
        for (int a = 0; a < arrays; ++a) off[a] += k * static_cast<Index>(layout.strides[a][d]);
    }
}

// The offsets of element `e` (in C order over the shape) in each operand.
template <class Index, int arrays>
__device__ __forceinline__ void offsets(const Layout<arrays>& layout, Index e, Index (&off)[arrays]) {
    offsets_over(layout, layout.ndim, e, off);
}

// The offsets of row `row` (in C order over every dimension but the last) in each operand.
template <class Index, int arrays>
__device__ __forceinline__ void outer_offsets(const Layout<arrays>& layout, Index row, Index (&off)[arrays]) {
    offsets_over(layout, layout.ndim - 1, row, off);
}

__device__ __forceinline__ long long thread_index() { return blockIdx.x * (long long)blockDim.x + threadIdx.x; }
__device__ __forceinline__ long long thread_count() { return (long long)gridDim.x * blockDim.x; }

#endif  // KJIT_ELEMENTWISE_SMALL_ONLY

}  // namespace kjit

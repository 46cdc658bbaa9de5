// kjit: support code for elementwise kernels (embedded in every generated elementwise module).
namespace kjit {

// Constants of the generated code are enumerators, never variables: NVRTC compiles with
// -default-device, which makes a namespace-scope or static member `constexpr int` a __device__
// variable, and a module with any device variable cost the driver 50-100 us more to load on the
// H200 (a first call in a fresh process waits for that load; docs/perf-log.md).

// The most dimensions a strided launch handles after kjit merges adjacent dimensions.
enum : int { max_dims = 16 };

// The most dimensions a raw parameter's array may have (runtime/detail/kernel_args.hpp: RawField).
enum : int { max_raw_dims = 8 };

// A raw parameter: the whole array, any strides, indexed by the kernel, with CuPy's CArray
// metadata: size(), shape()[d], strides()[d] (in bytes, as CuPy's) and ndim. x[k] is element k in
// C order over the shape, as in CuPy; x[idx] takes one index per dimension from a local array
// (fewer than ndim: the others are 0; more: the extra ones are ignored).
template <class T>
struct Raw {
    T* data;
    long long count;
    int ndim;
    int contiguous;  // C-contiguous: x[k] is data[k]
    long long extents[max_raw_dims];
    long long steps[max_raw_dims];  // in bytes
    __device__ __forceinline__ long long size() const { return count; }
    __device__ __forceinline__ const long long* shape() const { return extents; }
    __device__ __forceinline__ const long long* strides() const { return steps; }
    __device__ __forceinline__ T& at_bytes(long long offset) const {
        return *reinterpret_cast<T*>(reinterpret_cast<unsigned long long>(data) + static_cast<unsigned long long>(offset));
    }
    __device__ __forceinline__ T& operator[](long long k) const {
        if (contiguous) return data[k];
        long long offset = 0;
        for (int d = ndim - 1; d >= 0; --d) {
            offset += (k % extents[d]) * steps[d];
            k /= extents[d];
        }
        return at_bytes(offset);
    }
    template <class I, int N>
    __device__ __forceinline__ T& operator[](const I (&index)[N]) const {
        long long offset = 0;
#pragma unroll
        for (int d = 0; d < N; ++d)
            if (d < ndim) offset += static_cast<long long>(index[d]) * steps[d];
        return at_bytes(offset);
    }
};

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

// Shapes and strides (in elements) of a strided launch: `arrays` operands, dims already merged.
template <int arrays>
struct Layout {
    int ndim;
    long long shape[max_dims];
    long long strides[arrays][max_dims];
};

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

// offsetof for the static_asserts after each generated NAME_args (jit/codegen/args_struct.cpp):
// NVRTC has neither <cstddef> nor __builtin_offsetof; __INTADDR__ is its front end's own form.
#ifdef __CUDACC_RTC__
#define KJIT_OFFSETOF(type, field) __INTADDR__(&(((type*)0)->field))
#else
#define KJIT_OFFSETOF(type, field) __builtin_offsetof(type, field)
#endif

}  // namespace kjit

// kjit: the structs a launch passes beside a kernel's arguments, compiled by both sides: NVRTC
// (elementwise.cuh includes this file; kjit's build pastes it there, cmake/embed_templates.cmake)
// and g++, which fills them (runtime/detail/kernel_args.hpp, jit/kernels/*/call.cpp). The
// static_asserts at the end hold under both compilers, so the two sides cannot drift apart.
#ifndef KJIT_LAUNCH_LAYOUT_CUH
#define KJIT_LAUNCH_LAYOUT_CUH

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define KJIT_LAYOUT_FN __device__ __forceinline__
#define KJIT_LAYOUT_UNROLL _Pragma("unroll")
#else
#define KJIT_LAYOUT_FN inline
#define KJIT_LAYOUT_UNROLL
#endif

// offsetof for static_asserts (here, and after each generated NAME_args: jit/codegen/args_struct.cpp):
// NVRTC has neither <cstddef> nor __builtin_offsetof; __INTADDR__ is its front end's own form.
#ifdef __CUDACC_RTC__
#define KJIT_OFFSETOF(type, field) __INTADDR__(&(((type*)0)->field))
#else
#define KJIT_OFFSETOF(type, field) __builtin_offsetof(type, field)
#endif

namespace kjit {

// Constants are enumerators, never variables: NVRTC compiles with -default-device, which makes a
// namespace-scope `constexpr int` a __device__ variable, and a module with any device variable
// costs the driver 50-100 us more to load (a first call waits for that load).
enum : int {
    max_dims = 16,     // dimensions of a strided launch, after kjit merged adjacent ones
    max_raw_dims = 8,  // dimensions of a raw parameter's array
};

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
    KJIT_LAYOUT_FN long long size() const { return count; }
    KJIT_LAYOUT_FN const long long* shape() const { return extents; }
    KJIT_LAYOUT_FN const long long* strides() const { return steps; }
    KJIT_LAYOUT_FN T& at_bytes(long long offset) const {
        return *reinterpret_cast<T*>(reinterpret_cast<unsigned long long>(data) + static_cast<unsigned long long>(offset));
    }
    KJIT_LAYOUT_FN T& operator[](long long k) const {
        if (contiguous) return data[k];
        long long offset = 0;
        for (int d = ndim - 1; d >= 0; --d) {
            offset += (k % extents[d]) * steps[d];
            k /= extents[d];
        }
        return at_bytes(offset);
    }
    template <class I, int N>
    KJIT_LAYOUT_FN T& operator[](const I (&index)[N]) const {
        long long offset = 0;
        KJIT_LAYOUT_UNROLL
        for (int d = 0; d < N; ++d)
            if (d < ndim) offset += static_cast<long long>(index[d]) * steps[d];
        return at_bytes(offset);
    }
};

// Shapes and strides (in elements) of a strided elementwise launch: `arrays` operands, dims
// already merged. `strides` comes last, so the struct for fewer arrays is a prefix of the one for
// more: the host fills the largest and passes as many bytes as the kernel's struct has.
template <int arrays>
struct Layout {
    int ndim;
    long long shape[max_dims];
    long long strides[arrays][max_dims];
};

// Shapes and strides (in elements) of a reduction: the kept dimensions (one output element each)
// first, then the reduced dimensions, both after the host merged and ordered them. The strides
// are one array, the inputs' rows then the outputs' rows, for the same prefix rule as Layout.
template <int inputs, int outputs>
struct ReduceLayout {
    int kept_ndim;           // leading dimensions of shape: the outputs' shape
    int reduced_ndim;        // trailing dimensions of shape: reduced
    long long kept_size;     // product of the kept extents: the number of outputs (1: full reduction)
    long long reduced_size;  // product of the reduced extents: elements per output (`n`)
    long long shape[max_dims];  // kept extents, then reduced extents
    // Row a < inputs: array input a over every dimension (a row of zeros when the kernel has no
    // array input); row inputs + o: output o over the kept dimensions.
    long long strides[inputs + outputs][max_dims];
};

// The layouts both compilers must agree on (LP64 on x86-64 and aarch64 alike).
static_assert(sizeof(Raw<float>) == 152 && alignof(Raw<float>) == 8, "kjit::Raw");
static_assert(KJIT_OFFSETOF(Layout<1>, shape) == 8 && KJIT_OFFSETOF(Layout<1>, strides) == 8 + 8 * max_dims &&
                  sizeof(Layout<3>) - sizeof(Layout<2>) == 8 * max_dims,
              "kjit::Layout");
typedef ReduceLayout<1, 1> ReduceLayout11;  // a macro argument takes no comma
static_assert(KJIT_OFFSETOF(ReduceLayout11, kept_size) == 8 && KJIT_OFFSETOF(ReduceLayout11, shape) == 24 &&
                  KJIT_OFFSETOF(ReduceLayout11, strides) == 24 + 8 * max_dims && sizeof(ReduceLayout<2, 3>) == 24 + 6 * 8 * max_dims,
              "kjit::ReduceLayout");

}  // namespace kjit

#endif  // KJIT_LAUNCH_LAYOUT_CUH

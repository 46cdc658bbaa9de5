// kjit: the checked atomics of kernel code (jit/frontend/atomic_functions.hpp), included when a
// kernel uses one. Each updates *p atomically and returns the old value, as CUDA's functions do;
// 64-bit signed integers go through CUDA's unsigned long long forms (the same bits: two's
// complement addition, exchange and compare-and-swap do not care about the sign), except min and
// max, which CUDA has for long long itself.
#ifndef KJIT_ATOMICS_CUH
#define KJIT_ATOMICS_CUH

namespace kjit {

typedef unsigned long long kjit_u64;

__device__ __forceinline__ int atomic_add(int* p, int v) { return atomicAdd(p, v); }
__device__ __forceinline__ unsigned atomic_add(unsigned* p, unsigned v) { return atomicAdd(p, v); }
__device__ __forceinline__ long long atomic_add(long long* p, long long v) {
    return static_cast<long long>(atomicAdd(reinterpret_cast<kjit_u64*>(p), static_cast<kjit_u64>(v)));
}
__device__ __forceinline__ kjit_u64 atomic_add(kjit_u64* p, kjit_u64 v) { return atomicAdd(p, v); }
__device__ __forceinline__ float atomic_add(float* p, float v) { return atomicAdd(p, v); }
__device__ __forceinline__ double atomic_add(double* p, double v) { return atomicAdd(p, v); }
#ifdef KJIT_USE_FLOAT16
__device__ __forceinline__ __half atomic_add(__half* p, __half v) { return atomicAdd(p, v); }
#endif
#ifdef KJIT_USE_BFLOAT16
__device__ __forceinline__ __nv_bfloat16 atomic_add(__nv_bfloat16* p, __nv_bfloat16 v) { return atomicAdd(p, v); }
#endif

__device__ __forceinline__ int atomic_min(int* p, int v) { return atomicMin(p, v); }
__device__ __forceinline__ unsigned atomic_min(unsigned* p, unsigned v) { return atomicMin(p, v); }
__device__ __forceinline__ long long atomic_min(long long* p, long long v) { return atomicMin(p, v); }
__device__ __forceinline__ kjit_u64 atomic_min(kjit_u64* p, kjit_u64 v) { return atomicMin(p, v); }
__device__ __forceinline__ int atomic_max(int* p, int v) { return atomicMax(p, v); }
__device__ __forceinline__ unsigned atomic_max(unsigned* p, unsigned v) { return atomicMax(p, v); }
__device__ __forceinline__ long long atomic_max(long long* p, long long v) { return atomicMax(p, v); }
__device__ __forceinline__ kjit_u64 atomic_max(kjit_u64* p, kjit_u64 v) { return atomicMax(p, v); }

// Floats: fmin/fmax through compare-and-swap on the bits (the GPU has no float atomic min); a
// NaN never replaces a number, a number replaces a NaN; returns the old value.
struct FloatBits32 {
    typedef int bits;
    static __device__ __forceinline__ float value(int b) { return __int_as_float(b); }
    static __device__ __forceinline__ int of(float v) { return __float_as_int(v); }
};
struct FloatBits64 {
    typedef kjit_u64 bits;
    static __device__ __forceinline__ double value(kjit_u64 b) { return __longlong_as_double(static_cast<long long>(b)); }
    static __device__ __forceinline__ kjit_u64 of(double v) { return static_cast<kjit_u64>(__double_as_longlong(v)); }
};
template <class B, bool Min, class T>
__device__ __forceinline__ T atomic_float_extreme(T* p, T v) {
    typename B::bits* bits = reinterpret_cast<typename B::bits*>(p);
    typename B::bits old = *bits;
    for (;;) {
        const typename B::bits next = B::of(Min ? fmin(B::value(old), v) : fmax(B::value(old), v));
        if (next == old) return B::value(old);
        const typename B::bits seen = atomicCAS(bits, old, next);
        if (seen == old) return B::value(old);
        old = seen;
    }
}
__device__ __forceinline__ float atomic_min(float* p, float v) { return atomic_float_extreme<FloatBits32, true>(p, v); }
__device__ __forceinline__ float atomic_max(float* p, float v) { return atomic_float_extreme<FloatBits32, false>(p, v); }
__device__ __forceinline__ double atomic_min(double* p, double v) { return atomic_float_extreme<FloatBits64, true>(p, v); }
__device__ __forceinline__ double atomic_max(double* p, double v) { return atomic_float_extreme<FloatBits64, false>(p, v); }

__device__ __forceinline__ int atomic_exch(int* p, int v) { return atomicExch(p, v); }
__device__ __forceinline__ unsigned atomic_exch(unsigned* p, unsigned v) { return atomicExch(p, v); }
__device__ __forceinline__ long long atomic_exch(long long* p, long long v) {
    return static_cast<long long>(atomicExch(reinterpret_cast<kjit_u64*>(p), static_cast<kjit_u64>(v)));
}
__device__ __forceinline__ kjit_u64 atomic_exch(kjit_u64* p, kjit_u64 v) { return atomicExch(p, v); }
__device__ __forceinline__ float atomic_exch(float* p, float v) { return atomicExch(p, v); }
__device__ __forceinline__ double atomic_exch(double* p, double v) {
    return __longlong_as_double(static_cast<long long>(
        atomicExch(reinterpret_cast<kjit_u64*>(p), static_cast<kjit_u64>(__double_as_longlong(v)))));
}

__device__ __forceinline__ int atomic_cas(int* p, int expected, int v) { return atomicCAS(p, expected, v); }
__device__ __forceinline__ unsigned atomic_cas(unsigned* p, unsigned expected, unsigned v) { return atomicCAS(p, expected, v); }
__device__ __forceinline__ long long atomic_cas(long long* p, long long expected, long long v) {
    return static_cast<long long>(
        atomicCAS(reinterpret_cast<kjit_u64*>(p), static_cast<kjit_u64>(expected), static_cast<kjit_u64>(v)));
}
__device__ __forceinline__ kjit_u64 atomic_cas(kjit_u64* p, kjit_u64 expected, kjit_u64 v) { return atomicCAS(p, expected, v); }

}  // namespace kjit

#endif  // KJIT_ATOMICS_CUH

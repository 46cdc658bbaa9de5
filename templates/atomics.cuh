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
__device__ __forceinline__ float atomic_min(float* p, float v) {
    int* bits = reinterpret_cast<int*>(p);
    int old = *bits;
    for (;;) {
        const int next = __float_as_int(fminf(__int_as_float(old), v));
        if (next == old) return __int_as_float(old);
        const int seen = atomicCAS(bits, old, next);
        if (seen == old) return __int_as_float(old);
        old = seen;
    }
}
__device__ __forceinline__ float atomic_max(float* p, float v) {
    int* bits = reinterpret_cast<int*>(p);
    int old = *bits;
    for (;;) {
        const int next = __float_as_int(fmaxf(__int_as_float(old), v));
        if (next == old) return __int_as_float(old);
        const int seen = atomicCAS(bits, old, next);
        if (seen == old) return __int_as_float(old);
        old = seen;
    }
}
__device__ __forceinline__ double atomic_min(double* p, double v) {
    kjit_u64* bits = reinterpret_cast<kjit_u64*>(p);
    kjit_u64 old = *bits;
    for (;;) {
        const kjit_u64 next = static_cast<kjit_u64>(__double_as_longlong(fmin(__longlong_as_double(static_cast<long long>(old)), v)));
        if (next == old) return __longlong_as_double(static_cast<long long>(old));
        const kjit_u64 seen = atomicCAS(bits, old, next);
        if (seen == old) return __longlong_as_double(static_cast<long long>(old));
        old = seen;
    }
}
__device__ __forceinline__ double atomic_max(double* p, double v) {
    kjit_u64* bits = reinterpret_cast<kjit_u64*>(p);
    kjit_u64 old = *bits;
    for (;;) {
        const kjit_u64 next = static_cast<kjit_u64>(__double_as_longlong(fmax(__longlong_as_double(static_cast<long long>(old)), v)));
        if (next == old) return __longlong_as_double(static_cast<long long>(old));
        const kjit_u64 seen = atomicCAS(bits, old, next);
        if (seen == old) return __longlong_as_double(static_cast<long long>(old));
        old = seen;
    }
}

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

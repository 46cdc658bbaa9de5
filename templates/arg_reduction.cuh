// kjit: argmin and argmax (jit/kernels/ops/arg_reduction.cpp writes the module): the partial results are
// (value, index) pairs, reduced with the strategies of reduction.cuh (included before this text).
// NumPy's answer: the index of the first extreme element, or of the first NaN when there is one.
#ifndef KJIT_ARG_REDUCTION_CUH
#define KJIT_ARG_REDUCTION_CUH

namespace kjit {

template <class T>
struct ArgValue {
    T v;
    long long i;
};

// NaN test that is right for every type (integers never; __half's != is an ordered comparison).
template <class T>
__device__ __forceinline__ bool is_nan_value(const T& v) { return v != v; }
__device__ __forceinline__ bool is_nan_value(bool) { return false; }
#ifdef KJIT_USE_FLOAT16
__device__ __forceinline__ bool is_nan_value(const __half& v) { return __hisnan(v); }
#endif
#ifdef KJIT_USE_BFLOAT16
__device__ __forceinline__ bool is_nan_value(const __nv_bfloat16& v) { return __hisnan(v); }
#endif

// The pair that comes first: a NaN before any number, then the larger (Max) or smaller value, then
// the smaller index. A total order, so the result does not depend on how pairs are grouped.
template <bool Max, class T>
__device__ __forceinline__ ArgValue<T> arg_first(const ArgValue<T>& a, const ArgValue<T>& b) {
    const bool a_nan = is_nan_value(a.v), b_nan = is_nan_value(b.v);
    if (a_nan || b_nan) {
        if (a_nan && b_nan) return a.i <= b.i ? a : b;
        return a_nan ? a : b;
    }
    if (Max ? (b.v > a.v) : (b.v < a.v)) return b;
    if (Max ? (a.v > b.v) : (a.v < b.v)) return a;
    return a.i <= b.i ? a : b;
}

// templates/reduction.cuh's K for one input `x` of T and one int64 output `y`; the generated
// struct deriving from it adds identity() (the extreme value of T with the largest index).
template <class T, bool Max, class Args>
struct ArgOps {
    typedef ArgValue<T> value_type;
    // Enumerators, not static members: those would be device variables (elementwise.cuh).
    enum : bool { has_identity = true };
    enum : int { inputs = 1, in_slots = 1, outputs = 1 };
    enum : int { vector = sizeof(T) >= 16 ? 1 : 16 / static_cast<int>(sizeof(T)) };

    static __device__ __forceinline__ value_type reduce(const value_type& a, const value_type& b) { return arg_first<Max>(a, b); }

    template <class Index>
    static __device__ __forceinline__ value_type map(const Args& args, const Index (&off)[1], Index j, Index) {
        return value_type{args.x[off[0]], static_cast<long long>(j)};
    }
    template <class Index>
    static __device__ __forceinline__ bool aligned(const Args& args, const Index (&off)[1]) {
        return is_aligned<vector>(args.x + off[0]);
    }
    template <class Index>
    static __device__ __forceinline__ void fold_vector(value_type& v, bool& ok, const Args& args, const Index (&off)[1], Index j, Index) {
        // The vector's first extreme (or first NaN) by its position alone, then one pair combine:
        // the 64-bit index work once per vector, not per element.
        const Vec<T, vector> x = load<vector>(args.x + off[0]);
        T best = x.v[0];
        int at = 0;
#pragma unroll
        for (int k = 1; k < vector; ++k) {
            const T c = x.v[k];
            const bool take = !is_nan_value(best) && (is_nan_value(c) || (Max ? c > best : c < best));
            best = take ? c : best;
            at = take ? k : at;
        }
        v = arg_first<Max>(v, value_type{best, static_cast<long long>(j) + at});
        ok = true;
    }
    template <class Index>
    static __device__ __forceinline__ void post(const Args& args, const Index (&off)[1], const value_type& v, Index, Index) {
        args.y[off[0]] = v.i;
    }
};

}  // namespace kjit

#endif  // KJIT_ARG_REDUCTION_CUH

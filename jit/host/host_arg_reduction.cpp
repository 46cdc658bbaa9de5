#include "jit/host/host_arg_reduction.hpp"

#include <cstring>
#include <limits>
#include <type_traits>

#include "kjit/error.hpp"
#include "kjit/half.hpp"

namespace kjit::jit::host {
namespace {

// The element as stored (T) and as compared: float16/bfloat16 compare as the floats they hold.
template <class T>
struct Plain {
    using stored = T;
    static T compared(T v) { return v; }
};
struct Half16 {
    using stored = std::uint16_t;
    static float compared(std::uint16_t v) { return half::to_float(v); }
};
struct BFloat16 {
    using stored = std::uint16_t;
    static float compared(std::uint16_t v) { return bfloat16::to_float(v); }
};

template <class E>
struct Pair {
    typename E::stored v;
    long long i;
};

template <class V>
bool is_nan(V v) {
    if constexpr (std::is_floating_point_v<V>) return v != v;
    else return false;
}

// templates/arg_reduction.cuh's arg_first: a NaN first, then the extreme value, then the smaller index.
template <class E, bool Max>
Pair<E> first(const Pair<E>& a, const Pair<E>& b) {
    const auto av = E::compared(a.v), bv = E::compared(b.v);
    const bool a_nan = is_nan(av), b_nan = is_nan(bv);
    if (a_nan || b_nan) {
        if (a_nan && b_nan) return a.i <= b.i ? a : b;
        return a_nan ? a : b;
    }
    if (Max ? (bv > av) : (bv < av)) return b;
    if (Max ? (av > bv) : (av < bv)) return a;
    return a.i <= b.i ? a : b;
}

template <class E>
Pair<E> read(const unsigned char* p) {
    Pair<E> r;
    std::memcpy(&r.v, p, sizeof r.v);
    std::memcpy(&r.i, p + 8, sizeof r.i);
    return r;
}
template <class E>
void write(unsigned char* p, const Pair<E>& r) {
    std::memcpy(p, &r.v, sizeof r.v);
    std::memcpy(p + 8, &r.i, sizeof r.i);
}

template <class E, bool Max>
void fold(const unsigned char* args, const std::int64_t* in_off, const std::int64_t* in_stride, std::int64_t count, std::int64_t j0,
          std::int64_t, unsigned char* acc, unsigned char*) {
    const typename E::stored* x;
    std::memcpy(&x, args, sizeof x);
    x += in_off[0];
    for (std::int64_t e = 0; e < count; ++e) {
        unsigned char* lane = acc + (e % kReduceLanes) * kArgValueSize;
        write<E>(lane, first<E, Max>(read<E>(lane), Pair<E>{x[e * in_stride[0]], j0 + e}));
    }
}

template <class E, bool Max>
void combine(unsigned char* a, unsigned char*, const unsigned char* b, const unsigned char*) {
    write<E>(a, first<E, Max>(read<E>(a), read<E>(b)));
}

// The extreme value that every element beats or ties with a smaller index (a NaN value for the
// floats would win: infinities instead), with the largest index.
template <class E, bool Max>
void identity(unsigned char* out) {
    using S = typename E::stored;
    S v;
    if constexpr (std::is_same_v<E, Half16>) v = Max ? 0xFC00u : 0x7C00u;
    else if constexpr (std::is_same_v<E, BFloat16>) v = Max ? 0xFF80u : 0x7F80u;
    else if constexpr (std::is_floating_point_v<S>) v = Max ? -std::numeric_limits<S>::infinity() : std::numeric_limits<S>::infinity();
    else v = Max ? std::numeric_limits<S>::lowest() : std::numeric_limits<S>::max();
    write<E>(out, Pair<E>{v, std::numeric_limits<long long>::max()});
}

void post(const unsigned char* args, const std::int64_t* out_off, const unsigned char* v, std::int64_t, std::int64_t) {
    long long* y;
    std::memcpy(&y, args + 8, sizeof y);
    std::memcpy(y + out_off[0], v + 8, sizeof(long long));
}

template <class E>
ReductionCode code_for(bool max) {
    ReductionCode c;
    c.fold = max ? &fold<E, true> : &fold<E, false>;
    c.combine = max ? &combine<E, true> : &combine<E, false>;
    c.identity = max ? &identity<E, true> : &identity<E, false>;
    c.post = &post;
    return c;
}

}  // namespace

ReductionCode arg_reduction_code(bool max, DType t) {
    switch (t.id()) {
        case DType::bool_: return code_for<Plain<bool>>(max);
        case DType::int8: return code_for<Plain<std::int8_t>>(max);
        case DType::int16: return code_for<Plain<std::int16_t>>(max);
        case DType::int32: return code_for<Plain<std::int32_t>>(max);
        case DType::int64: return code_for<Plain<std::int64_t>>(max);
        case DType::uint8: return code_for<Plain<std::uint8_t>>(max);
        case DType::uint16: return code_for<Plain<std::uint16_t>>(max);
        case DType::uint32: return code_for<Plain<std::uint32_t>>(max);
        case DType::uint64: return code_for<Plain<std::uint64_t>>(max);
        case DType::float16: return code_for<Half16>(max);
        case DType::bfloat16: return code_for<BFloat16>(max);
        case DType::float32: return code_for<Plain<float>>(max);
        case DType::float64: return code_for<Plain<double>>(max);
        default: break;
    }
    throw TypeError(std::string(max ? "argmax" : "argmin") + " of " + std::string(t.name()) +
                    ": kjit does not order complex numbers here (NumPy compares real parts, then imaginary parts)");
}

}  // namespace kjit::jit::host

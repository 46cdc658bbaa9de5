#include "jit/host/llvm/host_runtime.hpp"

#include <math.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

// The GPU's complex type and functions, compiled for the host: the same formulas, not a copy.
#define KJIT_HD
#include "runtime/detail/kernel_args.hpp"
#include "templates/complex.cuh"

namespace kjit::jit::host::llvm {
namespace {

// --- float16 and bfloat16 ---

// x rounded once to the nearest 16-bit float with `mant` mantissa and `ebits` exponent bits, ties
// to even: what CUDA's __double2half / __double2bfloat16 compute. Scaling by powers of two is
// exact in double, so nearbyint (round to nearest even) is the only rounding.
std::uint16_t round_to_16(double x, int mant, int ebits) {
    const int bias = (1 << (ebits - 1)) - 1;
    const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const std::uint16_t inf = static_cast<std::uint16_t>(((1 << ebits) - 1) << mant);
    if (std::isnan(x)) return static_cast<std::uint16_t>(sign | inf | (1 << (mant - 1)));
    if (std::isinf(x)) return sign | inf;
    const double a = std::fabs(x);
    const int min_exp = 1 - bias;  // the smallest normal is 2^min_exp
    if (a < std::ldexp(1.0, min_exp)) {
        // Subnormal: multiples of 2^(min_exp - mant). 2^mant itself is the smallest normal's bits.
        return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(std::ldexp(a, mant - min_exp))));
    }
    int e2 = 0;
    std::frexp(a, &e2);
    int e = e2 - 1;  // a in [2^e, 2^(e+1))
    double m = std::nearbyint(std::ldexp(a, mant - e));
    if (m == std::ldexp(1.0, mant + 1)) {
        m = std::ldexp(1.0, mant);
        ++e;
    }
    const int biased = e + bias;
    if (biased >= (1 << ebits) - 1) return sign | inf;
    return static_cast<std::uint16_t>(sign | (biased << mant) | (static_cast<int>(m) - (1 << mant)));
}

std::uint16_t f64_to_f16(double x) { return round_to_16(x, 10, 5); }
std::uint16_t f64_to_bf16(double x) { return round_to_16(x, 7, 8); }

float f16_to_f32(std::uint16_t h) {
    const int e = (h >> 10) & 31, m = h & 0x3ff;
    float v;
    if (e == 0) v = std::ldexp(static_cast<float>(m), -24);
    else if (e == 31) v = m != 0 ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    else v = std::ldexp(static_cast<float>(m | 0x400), e - 25);
    return (h & 0x8000) ? -v : v;
}

// --- complex: (ar, ai) op (br, bi) -> out[0], out[1] ---

template <class T, class F>
void complex_call(T ar, T ai, T br, T bi, T* out, F f) {
    const kjit::complex<T> r = f(kjit::complex<T>(ar, ai), kjit::complex<T>(br, bi));
    out[0] = r.re;
    out[1] = r.im;
}

#define KJIT_COMPLEX_HELPER(name, expr)                                                                   \
    void c##name##_f(float ar, float ai, float br, float bi, float* out) {                              \
        complex_call<float>(ar, ai, br, bi, out, [](auto a, auto b) { (void)b; return expr; });          \
    }                                                                                                    \
    void c##name##_d(double ar, double ai, double br, double bi, double* out) {                         \
        complex_call<double>(ar, ai, br, bi, out, [](auto a, auto b) { (void)b; return expr; });         \
    }
KJIT_COMPLEX_HELPER(div, a / b)
KJIT_COMPLEX_HELPER(sqrt, kjit::sqrt(a))
KJIT_COMPLEX_HELPER(exp, kjit::exp(a))
KJIT_COMPLEX_HELPER(log, kjit::log(a))
KJIT_COMPLEX_HELPER(sin, kjit::sin(a))
KJIT_COMPLEX_HELPER(cos, kjit::cos(a))
KJIT_COMPLEX_HELPER(tan, kjit::tan(a))
KJIT_COMPLEX_HELPER(sinh, kjit::sinh(a))
KJIT_COMPLEX_HELPER(cosh, kjit::cosh(a))
KJIT_COMPLEX_HELPER(tanh, kjit::tanh(a))
KJIT_COMPLEX_HELPER(pow, kjit::pow(a, b))
#undef KJIT_COMPLEX_HELPER

// --- CUDA math functions glibc does not have (computed in double; the float versions round once) ---

constexpr double kPi = 3.14159265358979323846;

// sin(pi x) and cos(pi x) exactly at integers and half-integers: x = k/2 + f, |f| <= 1/4.
double sinpi_d(double x) {
    if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
    const double r = std::fmod(x, 2.0);  // exact
    const double k = std::nearbyint(2.0 * r);
    const double f = r - k / 2.0;
    const int q = static_cast<int>(k) & 3;
    double v = q == 0 ? std::sin(kPi * f) : q == 1 ? std::cos(kPi * f) : q == 2 ? -std::sin(kPi * f) : -std::cos(kPi * f);
    if (v == 0.0) v = std::copysign(0.0, x);
    return v;
}
double cospi_d(double x) {
    if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
    const double r = std::fmod(std::fabs(x), 2.0);
    const double k = std::nearbyint(2.0 * r);
    const double f = r - k / 2.0;
    const int q = static_cast<int>(k) & 3;
    const double v = q == 0 ? std::cos(kPi * f) : q == 1 ? -std::sin(kPi * f) : q == 2 ? -std::cos(kPi * f) : std::sin(kPi * f);
    return v == 0.0 ? 0.0 : v;
}

// erfcinv: a first guess from the polynomial approximation in M. Giles, "Approximating the erfinv
// function" (GPU Computing Gems, 2011), in w = -log(c (2 - c)), then Newton steps on erfc.
double erfcinv_d(double c) {
    if (std::isnan(c) || c < 0.0 || c > 2.0) return std::numeric_limits<double>::quiet_NaN();
    if (c == 0.0) return std::numeric_limits<double>::infinity();
    if (c == 2.0) return -std::numeric_limits<double>::infinity();
    const double y = 1.0 - c;
    double w = -std::log(c * (2.0 - c)), p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        for (double k : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
                         0.246640727, 1.50140941})
            p = k + p * w;
    } else {
        w = std::sqrt(w) - 3.0;
        p = -0.000200214257;
        for (double k : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                         1.00167406, 2.83297682})
            p = k + p * w;
    }
    double x = p * y;
    const double d = 2.0 / std::sqrt(kPi);
    for (int it = 0; it < 4; ++it) {
        const double slope = d * std::exp(-x * x);
        if (slope == 0.0) break;
        x += (std::erfc(x) - c) / slope;
    }
    return x;
}
double erfinv_d(double y) {
    if (std::isnan(y) || y < -1.0 || y > 1.0) return std::numeric_limits<double>::quiet_NaN();
    if (std::fabs(y) > 0.5) return std::copysign(erfcinv_d(1.0 - std::fabs(y)), y);
    double x = erfcinv_d(1.0 - y);
    const double d = 2.0 / std::sqrt(kPi);
    for (int it = 0; it < 2; ++it) x -= (std::erf(x) - y) / (d * std::exp(-x * x));
    return x;
}
double normcdf_d(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double normcdfinv_d(double p) { return -std::sqrt(2.0) * erfcinv_d(2.0 * p); }
double rsqrt_d(double x) { return 1.0 / std::sqrt(x); }
double rcbrt_d(double x) { return 1.0 / std::cbrt(x); }

template <double (*F)(double)>
float as_float(float x) { return static_cast<float>(F(x)); }

// The byte offset of element k (C order over the shape) of a raw parameter that is not
// C-contiguous, as kjit::Raw<T>::operator[] computes it on the GPU.
std::int64_t raw_offset(const detail::RawField* raw, std::int64_t k) {
    std::int64_t offset = 0;
    for (int d = raw->ndim - 1; d >= 0; --d) {
        offset += (k % raw->extents[d]) * raw->steps[d];
        k /= raw->extents[d];
    }
    return offset;
}

#define KJIT_SYM(name, fn) RuntimeSymbol{name, reinterpret_cast<void*>(fn)}

}  // namespace

const std::vector<RuntimeSymbol>& runtime_symbols() {
    static const std::vector<RuntimeSymbol> symbols = {
        KJIT_SYM("kjit_f64_to_f16", &f64_to_f16),   KJIT_SYM("kjit_f64_to_bf16", &f64_to_bf16),
        KJIT_SYM("kjit_f16_to_f32", &f16_to_f32),   KJIT_SYM("kjit_raw_offset", &raw_offset),
        KJIT_SYM("kjit_cdiv_f", &cdiv_f),   KJIT_SYM("kjit_cdiv_d", &cdiv_d),
        KJIT_SYM("kjit_csqrt_f", &csqrt_f), KJIT_SYM("kjit_csqrt_d", &csqrt_d),
        KJIT_SYM("kjit_cexp_f", &cexp_f),   KJIT_SYM("kjit_cexp_d", &cexp_d),
        KJIT_SYM("kjit_clog_f", &clog_f),   KJIT_SYM("kjit_clog_d", &clog_d),
        KJIT_SYM("kjit_csin_f", &csin_f),   KJIT_SYM("kjit_csin_d", &csin_d),
        KJIT_SYM("kjit_ccos_f", &ccos_f),   KJIT_SYM("kjit_ccos_d", &ccos_d),
        KJIT_SYM("kjit_ctan_f", &ctan_f),   KJIT_SYM("kjit_ctan_d", &ctan_d),
        KJIT_SYM("kjit_csinh_f", &csinh_f), KJIT_SYM("kjit_csinh_d", &csinh_d),
        KJIT_SYM("kjit_ccosh_f", &ccosh_f), KJIT_SYM("kjit_ccosh_d", &ccosh_d),
        KJIT_SYM("kjit_ctanh_f", &ctanh_f), KJIT_SYM("kjit_ctanh_d", &ctanh_d),
        KJIT_SYM("kjit_cpow_f", &cpow_f),   KJIT_SYM("kjit_cpow_d", &cpow_d),
        KJIT_SYM("kjit_sinpi", &sinpi_d),   KJIT_SYM("kjit_sinpif", &as_float<sinpi_d>),
        KJIT_SYM("kjit_cospi", &cospi_d),   KJIT_SYM("kjit_cospif", &as_float<cospi_d>),
        KJIT_SYM("kjit_erfinv", &erfinv_d), KJIT_SYM("kjit_erfinvf", &as_float<erfinv_d>),
        KJIT_SYM("kjit_erfcinv", &erfcinv_d), KJIT_SYM("kjit_erfcinvf", &as_float<erfcinv_d>),
        KJIT_SYM("kjit_normcdf", &normcdf_d), KJIT_SYM("kjit_normcdff", &as_float<normcdf_d>),
        KJIT_SYM("kjit_normcdfinv", &normcdfinv_d), KJIT_SYM("kjit_normcdfinvf", &as_float<normcdfinv_d>),
        KJIT_SYM("kjit_rsqrt", &rsqrt_d),   KJIT_SYM("kjit_rsqrtf", &as_float<rsqrt_d>),
        KJIT_SYM("kjit_rcbrt", &rcbrt_d),   KJIT_SYM("kjit_rcbrtf", &as_float<rcbrt_d>),
    };
    return symbols;
}

}  // namespace kjit::jit::host::llvm

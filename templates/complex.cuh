// kjit::complex<T> (T = float or double) for generated code: complex64 and complex128.
//
// Our own type rather than <cuda/std/complex>: that header adds about half a second to every
// compile (docs/perf-log.md), this one a fraction of a millisecond. It needs no header at all.
// Layout as std::complex (real, then imaginary), aligned to 2 * sizeof(T) as thrust::complex and
// cuComplex are, so that one 8- or 16-byte access moves a value.
//
// Special values (infinities, NaNs, signed zeros) follow the plain formulas, not every case of
// C99 Annex G; division uses Smith's algorithm so that large and small operands do not overflow.
// KJIT_HD is `__host__ __device__` unless defined before (the host-side tests define it empty).
#ifndef KJIT_COMPLEX_CUH
#define KJIT_COMPLEX_CUH

#ifndef KJIT_HD
#define KJIT_HD __host__ __device__
#endif

namespace kjit {

namespace complex_detail {

// The real-valued functions for float and double by name: calling ::expf / ::exp explicitly keeps
// float math in float, and keeps these calls from resolving to kjit's complex overloads.
KJIT_HD inline float c_sqrt(float x) { return ::sqrtf(x); }
KJIT_HD inline double c_sqrt(double x) { return ::sqrt(x); }
KJIT_HD inline float c_hypot(float x, float y) { return ::hypotf(x, y); }
KJIT_HD inline double c_hypot(double x, double y) { return ::hypot(x, y); }
KJIT_HD inline float c_atan2(float y, float x) { return ::atan2f(y, x); }
KJIT_HD inline double c_atan2(double y, double x) { return ::atan2(y, x); }
KJIT_HD inline float c_exp(float x) { return ::expf(x); }
KJIT_HD inline double c_exp(double x) { return ::exp(x); }
KJIT_HD inline float c_log(float x) { return ::logf(x); }
KJIT_HD inline double c_log(double x) { return ::log(x); }
KJIT_HD inline float c_pow(float x, float y) { return ::powf(x, y); }
KJIT_HD inline double c_pow(double x, double y) { return ::pow(x, y); }
KJIT_HD inline float c_sin(float x) { return ::sinf(x); }
KJIT_HD inline double c_sin(double x) { return ::sin(x); }
KJIT_HD inline float c_cos(float x) { return ::cosf(x); }
KJIT_HD inline double c_cos(double x) { return ::cos(x); }
KJIT_HD inline float c_sinh(float x) { return ::sinhf(x); }
KJIT_HD inline double c_sinh(double x) { return ::sinh(x); }
KJIT_HD inline float c_cosh(float x) { return ::coshf(x); }
KJIT_HD inline double c_cosh(double x) { return ::cosh(x); }
KJIT_HD inline float c_fabs(float x) { return ::fabsf(x); }
KJIT_HD inline double c_fabs(double x) { return ::fabs(x); }
KJIT_HD inline float c_copysign(float x, float y) { return ::copysignf(x, y); }
KJIT_HD inline double c_copysign(double x, double y) { return ::copysign(x, y); }

// A scalar operand's type as a non-deduced context, so that complex<float> * 2.0 or * n (an int)
// converts the scalar to float instead of failing to deduce T from two different types.
template <typename T> struct identity { typedef T type; };

template <bool B, typename R = void> struct enable_if {};
template <typename R> struct enable_if<true, R> { typedef R type; };

}  // namespace complex_detail

template <typename T>
struct alignas(2 * sizeof(T)) complex {
    typedef T value_type;
    T re;
    T im;

    KJIT_HD constexpr complex(T real = T(), T imag = T()) : re(real), im(imag) {}
    // Widening (complex<float> -> complex<double>) is implicit, narrowing explicit, as in std.
    template <typename U, typename complex_detail::enable_if<(sizeof(U) <= sizeof(T)), int>::type = 0>
    KJIT_HD constexpr complex(const complex<U>& z) : re(T(z.re)), im(T(z.im)) {}
    template <typename U, typename complex_detail::enable_if<(sizeof(U) > sizeof(T)), int>::type = 0>
    KJIT_HD explicit constexpr complex(const complex<U>& z) : re(T(z.re)), im(T(z.im)) {}

    KJIT_HD constexpr T real() const { return re; }
    KJIT_HD constexpr T imag() const { return im; }

    KJIT_HD complex& operator=(T x) { re = x; im = T(); return *this; }
    KJIT_HD complex& operator+=(const complex& z) { re += z.re; im += z.im; return *this; }
    KJIT_HD complex& operator-=(const complex& z) { re -= z.re; im -= z.im; return *this; }
    KJIT_HD complex& operator*=(const complex& z) {
        const T r = re * z.re - im * z.im;
        im = re * z.im + im * z.re;
        re = r;
        return *this;
    }
    KJIT_HD complex& operator/=(const complex& z) {
        // Smith's algorithm: divide by the larger of |z.re|, |z.im| first.
        T r, d;
        if (complex_detail::c_fabs(z.re) >= complex_detail::c_fabs(z.im)) {
            r = z.im / z.re;
            d = z.re + z.im * r;
            const T x = (re + im * r) / d;
            im = (im - re * r) / d;
            re = x;
        } else {
            r = z.re / z.im;
            d = z.re * r + z.im;
            const T x = (re * r + im) / d;
            im = (im * r - re) / d;
            re = x;
        }
        return *this;
    }
    KJIT_HD complex& operator+=(T x) { re += x; return *this; }
    KJIT_HD complex& operator-=(T x) { re -= x; return *this; }
    KJIT_HD complex& operator*=(T x) { re *= x; im *= x; return *this; }
    KJIT_HD complex& operator/=(T x) { re /= x; im /= x; return *this; }
};

// ---- arithmetic: complex with complex, and with a real scalar in either order ----
template <typename T> KJIT_HD inline complex<T> operator+(const complex<T>& z) { return z; }
template <typename T> KJIT_HD inline complex<T> operator-(const complex<T>& z) { return complex<T>(-z.re, -z.im); }

#define KJIT_COMPLEX_BINARY(op)                                                                           \
    template <typename T>                                                                                  \
    KJIT_HD inline complex<T> operator op(complex<T> a, const complex<T>& b) { return a op## = b; }        \
    template <typename T>                                                                                  \
    KJIT_HD inline complex<T> operator op(complex<T> a, typename complex_detail::identity<T>::type x) {    \
        return a op## = x;                                                                                 \
    }                                                                                                      \
    template <typename T>                                                                                  \
    KJIT_HD inline complex<T> operator op(typename complex_detail::identity<T>::type x, const complex<T>& b) { \
        return complex<T>(x) op## = b;                                                                     \
    }
KJIT_COMPLEX_BINARY(+)
KJIT_COMPLEX_BINARY(-)
KJIT_COMPLEX_BINARY(*)
KJIT_COMPLEX_BINARY(/)
#undef KJIT_COMPLEX_BINARY

template <typename T> KJIT_HD inline bool operator==(const complex<T>& a, const complex<T>& b) {
    return a.re == b.re && a.im == b.im;
}
template <typename T> KJIT_HD inline bool operator==(const complex<T>& a, typename complex_detail::identity<T>::type x) {
    return a.re == x && a.im == T();
}
template <typename T> KJIT_HD inline bool operator==(typename complex_detail::identity<T>::type x, const complex<T>& b) {
    return b == x;
}
template <typename T> KJIT_HD inline bool operator!=(const complex<T>& a, const complex<T>& b) { return !(a == b); }
template <typename T> KJIT_HD inline bool operator!=(const complex<T>& a, typename complex_detail::identity<T>::type x) {
    return !(a == x);
}
template <typename T> KJIT_HD inline bool operator!=(typename complex_detail::identity<T>::type x, const complex<T>& b) {
    return !(b == x);
}

// ---- functions ----
template <typename T> KJIT_HD inline T real(const complex<T>& z) { return z.re; }
template <typename T> KJIT_HD inline T imag(const complex<T>& z) { return z.im; }
template <typename T> KJIT_HD inline complex<T> conj(const complex<T>& z) { return complex<T>(z.re, -z.im); }
template <typename T> KJIT_HD inline T abs(const complex<T>& z) { return complex_detail::c_hypot(z.re, z.im); }
template <typename T> KJIT_HD inline T arg(const complex<T>& z) { return complex_detail::c_atan2(z.im, z.re); }
template <typename T> KJIT_HD inline T norm(const complex<T>& z) { return z.re * z.re + z.im * z.im; }

template <typename T>
KJIT_HD inline complex<T> polar(T r, typename complex_detail::identity<T>::type theta = T()) {
    return complex<T>(r * complex_detail::c_cos(theta), r * complex_detail::c_sin(theta));
}

template <typename T> KJIT_HD inline complex<T> exp(const complex<T>& z) {
    return polar(complex_detail::c_exp(z.re), z.im);
}

template <typename T> KJIT_HD inline complex<T> log(const complex<T>& z) {
    return complex<T>(complex_detail::c_log(abs(z)), arg(z));
}

template <typename T> KJIT_HD inline complex<T> sqrt(const complex<T>& z) {
    // t = sqrt((|re| + |z|) / 2) is computed without cancellation; the other part is im / 2t.
    if (z.re == T() && z.im == T()) return complex<T>(T(), z.im);
    const T t = complex_detail::c_sqrt((complex_detail::c_fabs(z.re) + abs(z)) / T(2));
    if (z.re >= T()) return complex<T>(t, z.im / (T(2) * t));
    return complex<T>(complex_detail::c_fabs(z.im) / (T(2) * t), complex_detail::c_copysign(t, z.im));
}

template <typename T> KJIT_HD inline complex<T> sin(const complex<T>& z) {
    return complex<T>(complex_detail::c_sin(z.re) * complex_detail::c_cosh(z.im),
                      complex_detail::c_cos(z.re) * complex_detail::c_sinh(z.im));
}

template <typename T> KJIT_HD inline complex<T> cos(const complex<T>& z) {
    return complex<T>(complex_detail::c_cos(z.re) * complex_detail::c_cosh(z.im),
                      -complex_detail::c_sin(z.re) * complex_detail::c_sinh(z.im));
}

template <typename T> KJIT_HD inline complex<T> sinh(const complex<T>& z) {
    return complex<T>(complex_detail::c_sinh(z.re) * complex_detail::c_cos(z.im),
                      complex_detail::c_cosh(z.re) * complex_detail::c_sin(z.im));
}

template <typename T> KJIT_HD inline complex<T> cosh(const complex<T>& z) {
    return complex<T>(complex_detail::c_cosh(z.re) * complex_detail::c_cos(z.im),
                      complex_detail::c_sinh(z.re) * complex_detail::c_sin(z.im));
}

template <typename T> KJIT_HD inline complex<T> tanh(const complex<T>& z) {
    // tanh(x + iy) = (sinh 2x + i sin 2y) / (cosh 2x + cos 2y); for |x| > 22, tanh x is +-1 to
    // double precision and cosh 2x would overflow, so the limit is returned instead.
    if (complex_detail::c_fabs(z.re) > T(22))
        return complex<T>(complex_detail::c_copysign(T(1), z.re), complex_detail::c_copysign(T(), z.im));
    const T d = complex_detail::c_cosh(T(2) * z.re) + complex_detail::c_cos(T(2) * z.im);
    return complex<T>(complex_detail::c_sinh(T(2) * z.re) / d, complex_detail::c_sin(T(2) * z.im) / d);
}

template <typename T> KJIT_HD inline complex<T> tan(const complex<T>& z) {
    // tan z = -i tanh(iz)
    const complex<T> t = tanh(complex<T>(-z.im, z.re));
    return complex<T>(t.im, -t.re);
}

template <typename T> KJIT_HD inline complex<T> pow(const complex<T>& z, const complex<T>& w) {
    // 0^0 = 1 and 0^w = 0 for real w > 0, as NumPy gives; exp(w log 0) would be NaN.
    if (z.re == T() && z.im == T()) {
        if (w.re == T() && w.im == T()) return complex<T>(T(1));
        if (w.im == T() && w.re > T()) return complex<T>();
    }
    return exp(w * log(z));
}

template <typename T>
KJIT_HD inline complex<T> pow(const complex<T>& z, typename complex_detail::identity<T>::type x) {
    // |z|^x at angle x arg z: more accurate than exp(x log z), and 0^x = 0 (x > 0), 0^0 = 1.
    return polar(complex_detail::c_pow(abs(z), x), x * arg(z));
}

template <typename T>
KJIT_HD inline complex<T> pow(typename complex_detail::identity<T>::type x, const complex<T>& w) {
    return pow(complex<T>(x), w);
}

}  // namespace kjit

#endif  // KJIT_COMPLEX_CUH

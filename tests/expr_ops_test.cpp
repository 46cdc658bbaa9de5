// Every operator and function of array expressions (include/kjit/expr.hpp) on every dtype it
// applies to (complex64 and complex128 among them), against references computed here: integers exactly (NumPy's wrapping, and its values
// where C's are undefined), floats in double precision within the result dtype's rounding. The same
// checks run on host arrays (the host back end) and on the GPU.
#include <cmath>
#include <complex>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "backend_cases.hpp"
#include "gpu_data.hpp"
#include "kjit/kjit.hpp"
#include "test_support.hpp"

using namespace kjit;

namespace {

using Int = __int128;

// Element k of dtype t's bytes: integers (and bools) exactly, floats as double.
Int int_at(const std::vector<unsigned char>& b, DType t, std::size_t k) {
    const unsigned char* p = b.data() + k * t.itemsize();
    const auto get = [&](auto v) {
        std::memcpy(&v, p, sizeof v);
        return static_cast<Int>(v);
    };
    switch (t.id()) {
        case DType::bool_: return get(std::uint8_t{});
        case DType::int8: return get(std::int8_t{});
        case DType::int16: return get(std::int16_t{});
        case DType::int32: return get(std::int32_t{});
        case DType::int64: return get(std::int64_t{});
        case DType::uint8: return get(std::uint8_t{});
        case DType::uint16: return get(std::uint16_t{});
        case DType::uint32: return get(std::uint32_t{});
        case DType::uint64: return get(std::uint64_t{});
        default: FAIL("not an integer dtype"); return 0;
    }
}
double float_at(const std::vector<unsigned char>& b, DType t, std::size_t k) {
    if (t.is_integer() || t.is_bool()) return static_cast<double>(int_at(b, t, k));
    return kjit::test::element_value(b, t, k).real();
}

// v wrapped into integer dtype t, as C's conversion to it (and NumPy's arithmetic) wraps.
Int wrap(Int v, DType t) {
    if (t.is_bool()) return v != 0;
    const int bits = static_cast<int>(t.itemsize() * 8);
    const unsigned __int128 mask = bits == 64 ? ~std::uint64_t{0} : ((unsigned __int128)1 << bits) - 1;
    unsigned __int128 u = static_cast<unsigned __int128>(v) & mask;
    if (t.is_signed() && (u >> (bits - 1)) != 0) return static_cast<Int>(u) - ((Int)1 << bits);
    return static_cast<Int>(u);
}

// A host array of n elements of t from gen(k) (a double; integer dtypes take it truncated).
Array make(DType t, std::size_t n, const std::function<double(std::size_t)>& gen) {
    Array a = Array::empty({static_cast<std::int64_t>(n)}, t, Device::cpu());
    auto* p = static_cast<unsigned char*>(a.data());
    for (std::size_t k = 0; k < n; ++k) {
        const double v = gen(k);
        unsigned char* at = p + k * t.itemsize();
        const auto put = [&](auto x) { std::memcpy(at, &x, sizeof x); };
        switch (t.id()) {
            case DType::bool_: put(static_cast<std::uint8_t>(v != 0)); break;
            case DType::int8: put(static_cast<std::int8_t>(wrap(static_cast<Int>(v), t))); break;
            case DType::int16: put(static_cast<std::int16_t>(wrap(static_cast<Int>(v), t))); break;
            case DType::int32: put(static_cast<std::int32_t>(wrap(static_cast<Int>(v), t))); break;
            case DType::int64: put(static_cast<std::int64_t>(v)); break;
            case DType::uint8: put(static_cast<std::uint8_t>(wrap(static_cast<Int>(v), t))); break;
            case DType::uint16: put(static_cast<std::uint16_t>(wrap(static_cast<Int>(v), t))); break;
            case DType::uint32: put(static_cast<std::uint32_t>(wrap(static_cast<Int>(v), t))); break;
            case DType::uint64: put(static_cast<std::uint64_t>(wrap(static_cast<Int>(v), t))); break;
            case DType::float16: put(half(static_cast<float>(v))); break;
            case DType::bfloat16: put(bfloat16(static_cast<float>(v))); break;
            case DType::float32: put(static_cast<float>(v)); break;
            case DType::float64: put(v); break;
            default: FAIL("not a real dtype");
        }
    }
    return a;
}

// Relative tolerance for a float result of dtype t computed by one operation or function.
double rtol_of(DType t) {
    switch (t.id()) {
        case DType::float16: return 2e-3;
        case DType::bfloat16: return 1.6e-2;
        case DType::float32: return 1e-6;
        default: return 1e-13;
    }
}

// `w` as the nearest value of float dtype t (overflow to infinity, subnormal steps), so that a
// reference outside t's range or below its normal numbers compares with what t can hold. (float
// first for the 16-bit types: the double rounding is within the tolerance.)
double rounded_to(double w, DType t) {
    switch (t.id()) {
        case DType::float16: return kjit::half::to_float(kjit::half::from_float(static_cast<float>(w)));
        case DType::bfloat16: return kjit::bfloat16::to_float(kjit::bfloat16::from_float(static_cast<float>(w)));
        case DType::float32: return static_cast<float>(w);
        default: return w;
    }
}

// The spacing of t's subnormal numbers: the absolute error a result near zero may carry.
double subnormal_step(DType t) {
    switch (t.id()) {
        case DType::float16: return std::ldexp(1.0, -24);
        case DType::bfloat16: return std::ldexp(1.0, -133);
        case DType::float32: return std::ldexp(1.0, -149);
        default: return std::ldexp(1.0, -1074);
    }
}

class Checker {
public:
    Checker(Device device, std::size_t n) : device_(device), n_(n) {}

    // The array as the expression takes it: the host array, or a copy on the GPU.
    Array on_device(const Array& host) const {
        if (!device_.is_cuda()) return host;
        return Array::from_host(host.data(), host.dtype(), host.shape(), device_);
    }
    std::vector<unsigned char> bytes(const Array& host) const { return kjit::test::host_bytes_c_order(host); }

    // Integer or bool results, exactly.
    void exact(const std::string& what, const Expr& e, const std::function<Int(std::size_t)>& want) const {
        INFO(what << " -> " << e.dtype().name() << " on " << device_.to_string());
        const Array got = e.eval();
        const std::vector<unsigned char> b = device_.is_cuda() ? kjit::test::to_host(got) : bytes(got);
        std::size_t bad = 0;
        for (std::size_t k = 0; k < n_; ++k) {
            const Int w = wrap(want(k), got.dtype()), g = int_at(b, got.dtype(), k);
            if (g != w && bad++ < 3)
                UNSCOPED_INFO("element " << k << ": got " << static_cast<long long>(g) << ", want " << static_cast<long long>(w));
        }
        CHECK(bad == 0);
    }
    // Float results within the dtype's rounding (rtol_of, times `ulps`) plus `atol`.
    void close(const std::string& what, const Expr& e, const std::function<double(std::size_t)>& want, double ulps = 1,
               double atol = 0) const {
        INFO(what << " -> " << e.dtype().name() << " on " << device_.to_string());
        const Array got = e.eval();
        const std::vector<unsigned char> b = device_.is_cuda() ? kjit::test::to_host(got) : bytes(got);
        const double rtol = rtol_of(got.dtype()) * ulps;
        std::size_t bad = 0;
        for (std::size_t k = 0; k < n_; ++k) {
            const double w = rounded_to(want(k), got.dtype()), g = float_at(b, got.dtype(), k);
            const bool ok = (std::isnan(w) && std::isnan(g)) || g == w ||
                            std::abs(g - w) <= rtol * std::abs(w) + atol + subnormal_step(got.dtype());
            if (!ok && bad++ < 3) UNSCOPED_INFO("element " << k << ": got " << g << ", want " << w);
        }
        CHECK(bad == 0);
    }

    // Complex results within the dtype's rounding (times `ulps`) of |want|, plus `atol`.
    void close_complex(const std::string& what, const Expr& e, const std::function<std::complex<double>(std::size_t)>& want,
                       double ulps = 1, double atol = 0) const {
        INFO(what << " -> " << e.dtype().name() << " on " << device_.to_string());
        const Array got = e.eval();
        REQUIRE(got.dtype().is_complex());
        const std::vector<unsigned char> b = device_.is_cuda() ? kjit::test::to_host(got) : bytes(got);
        const double rtol = (got.dtype() == DType::complex64 ? 1e-6 : 1e-13) * ulps;
        std::size_t bad = 0;
        for (std::size_t k = 0; k < n_; ++k) {
            const std::complex<double> w = want(k), g = kjit::test::element_value(b, got.dtype(), k);
            if (!(std::abs(g - w) <= rtol * std::abs(w) + atol) && bad++ < 3) UNSCOPED_INFO("element " << k << ": got " << g << ", want " << w);
        }
        CHECK(bad == 0);
    }

private:
    Device device_;
    std::size_t n_;
};

// A host array of n complex numbers of dtype t from gen(k).
Array make_complex(DType t, std::size_t n, const std::function<std::complex<double>(std::size_t)>& gen) {
    Array a = Array::empty({static_cast<std::int64_t>(n)}, t, Device::cpu());
    for (std::size_t k = 0; k < n; ++k) {
        const std::complex<double> v = gen(k);
        if (t == DType::complex64) static_cast<std::complex<float>*>(a.data())[k] = std::complex<float>(v);
        else static_cast<std::complex<double>*>(a.data())[k] = v;
    }
    return a;
}

const DType kIntegers[] = {DType::int8, DType::int16, DType::int32, DType::int64,
                           DType::uint8, DType::uint16, DType::uint32, DType::uint64};
const DType kFloats[] = {DType::float16, DType::bfloat16, DType::float32, DType::float64};

void check_every_operator(Device device) {
    const std::size_t n = 301;
    const Checker c(device, n);
    std::mt19937_64 g(kjit::test::seed() ^ 0x5eed);
    std::uniform_real_distribution<double> unit(0, 1);
    const auto real = [&](double lo, double hi) { return [&g, &unit, lo, hi](std::size_t) { return lo + (hi - lo) * unit(g); }; };

    // Integers: wrapping arithmetic, NumPy's remainder and fmod, shifts, bitwise, comparisons.
    for (const DType t : kIntegers) {
        const double lo = t.is_signed() ? -std::ldexp(1.0, static_cast<int>(t.itemsize() * 8) - 1) : 0;
        const double hi = std::ldexp(1.0, static_cast<int>(t.itemsize() * 8) - (t.is_signed() ? 1 : 0)) - 1;
        // Random over the whole range (int64 and uint64 through double: 53 random bits), with
        // zeros and -1 among the divisors.
        const Array ha = make(t, n, real(lo, std::min(hi, 9.0e18)));
        const Array hb = make(t, n, [&](std::size_t k) { return k % 7 == 0 ? 0.0 : k % 11 == 0 && t.is_signed() ? -1.0 : lo + (std::min(hi, 9.0e18) - lo) * unit(g); });
        const Array hs = make(t, n, [&](std::size_t k) { return t.is_signed() && k % 13 == 0 ? -1.0 : double(k % (t.itemsize() * 8 + 3)); });
        const std::vector<unsigned char> ab = c.bytes(ha), bb = c.bytes(hb), sb = c.bytes(hs);
        const Array a = c.on_device(ha), b = c.on_device(hb), s = c.on_device(hs);
        const auto A = [&](std::size_t k) { return int_at(ab, t, k); };
        const auto B = [&](std::size_t k) { return int_at(bb, t, k); };
        const auto S = [&](std::size_t k) { return int_at(sb, t, k); };
        const std::string name(t.name());
        // Products of 64-bit values wrap modulo 2^64: unsigned arithmetic on the low bits.
        const auto mul = [&](Int x, Int y) {
            return static_cast<Int>(static_cast<std::uint64_t>(static_cast<std::uint64_t>(x) * static_cast<std::uint64_t>(y)));
        };
        c.exact(name + " +", a + b, [&](std::size_t k) { return A(k) + B(k); });
        c.exact(name + " -", a - b, [&](std::size_t k) { return A(k) - B(k); });
        c.exact(name + " *", a * b, [&](std::size_t k) { return mul(A(k), B(k)); });
        c.exact(name + " %", a % b, [&](std::size_t k) -> Int {
            if (B(k) == 0) return 0;
            const Int r = A(k) % B(k);
            return r != 0 && ((r < 0) != (B(k) < 0)) ? r + B(k) : r;
        });
        c.exact(name + " fmod", fmod(a, b), [&](std::size_t k) -> Int { return B(k) == 0 ? 0 : A(k) % B(k); });
        c.close(name + " /", a / b, [&](std::size_t k) { return static_cast<double>(A(k)) / static_cast<double>(B(k)); });
        c.exact(name + " minimum", minimum(a, b), [&](std::size_t k) { return std::min(A(k), B(k)); });
        c.exact(name + " maximum", maximum(a, b), [&](std::size_t k) { return std::max(A(k), B(k)); });
        c.exact(name + " &", a & b, [&](std::size_t k) { return A(k) & B(k); });
        c.exact(name + " |", a | b, [&](std::size_t k) { return A(k) | B(k); });
        c.exact(name + " ^", a ^ b, [&](std::size_t k) { return A(k) ^ B(k); });
        c.exact(name + " ~", ~a, [&](std::size_t k) { return ~A(k); });
        const int bits = static_cast<int>(t.itemsize() * 8);
        c.exact(name + " <<", a << s, [&](std::size_t k) -> Int {
            return S(k) < 0 || S(k) >= bits ? 0 : static_cast<Int>(static_cast<unsigned __int128>(A(k)) << static_cast<int>(S(k)));
        });
        c.exact(name + " >>", a >> s, [&](std::size_t k) -> Int {
            if (S(k) < 0 || S(k) >= bits) return A(k) < 0 ? -1 : 0;
            return A(k) >> static_cast<int>(S(k));
        });
        c.exact(name + " <", a < b, [&](std::size_t k) { return Int(A(k) < B(k)); });
        c.exact(name + " <=", a <= b, [&](std::size_t k) { return Int(A(k) <= B(k)); });
        c.exact(name + " >", a > b, [&](std::size_t k) { return Int(A(k) > B(k)); });
        c.exact(name + " >=", a >= b, [&](std::size_t k) { return Int(A(k) >= B(k)); });
        c.exact(name + " ==", a == b, [&](std::size_t k) { return Int(A(k) == B(k)); });
        c.exact(name + " !=", a != b, [&](std::size_t k) { return Int(A(k) != B(k)); });
        c.exact(name + " &&", a && b, [&](std::size_t k) { return Int(A(k) != 0 && B(k) != 0); });
        c.exact(name + " ||", a || b, [&](std::size_t k) { return Int(A(k) != 0 || B(k) != 0); });
        c.exact(name + " !", !a, [&](std::size_t k) { return Int(A(k) == 0); });
        c.exact(name + " negative", -a, [&](std::size_t k) { return -A(k); });
        c.exact(name + " abs", abs(a), [&](std::size_t k) { return A(k) < 0 ? -A(k) : A(k); });
        c.exact(name + " where", where(a > b, a, b), [&](std::size_t k) { return A(k) > B(k) ? A(k) : B(k); });
        c.exact(name + " + 3 (weak)", a + 3, [&](std::size_t k) { return A(k) + 3; });
        c.close(name + " astype float64", Expr(a).astype(DType::float64), [&](std::size_t k) { return static_cast<double>(A(k)); });
        // sqrt of integers computes in the smallest float that holds them (NumPy's).
        c.close(name + " sqrt", sqrt(abs(a)), [&](std::size_t k) {
            const Int v = wrap(A(k) < 0 ? -A(k) : A(k), t);  // |MIN| wraps to MIN, as abs does
            return std::sqrt(static_cast<double>(v));
        }, 2);
    }

    // Bools: + is or, * is and, as NumPy's.
    {
        const Array ha = make(DType::bool_, n, [&](std::size_t) { return unit(g) < 0.5; });
        const Array hb = make(DType::bool_, n, [&](std::size_t) { return unit(g) < 0.5; });
        const std::vector<unsigned char> ab = c.bytes(ha), bb = c.bytes(hb);
        const Array a = c.on_device(ha), b = c.on_device(hb);
        const auto A = [&](std::size_t k) { return int_at(ab, DType::bool_, k); };
        const auto B = [&](std::size_t k) { return int_at(bb, DType::bool_, k); };
        c.exact("bool +", a + b, [&](std::size_t k) { return A(k) | B(k); });
        c.exact("bool *", a * b, [&](std::size_t k) { return A(k) & B(k); });
        c.exact("bool ^", a ^ b, [&](std::size_t k) { return A(k) ^ B(k); });
        c.exact("bool ~", ~a, [&](std::size_t k) { return 1 - A(k); });
        c.exact("bool minimum", minimum(a, b), [&](std::size_t k) { return std::min(A(k), B(k)); });
        c.exact("bool + 1 (weak int)", a + 1, [&](std::size_t k) { return A(k) + 1; });
        c.close("bool /", a / b, [&](std::size_t k) { return static_cast<double>(A(k)) / static_cast<double>(B(k)); });
    }

    // Floats: arithmetic, comparisons and every function, each on inputs of its domain.
    for (const DType t : kFloats) {
        const std::string name(t.name());
        struct Input {
            Array device;
            std::vector<unsigned char> bytes;
        };
        const auto input = [&](double lo, double hi) {
            const Array h = make(t, n, real(lo, hi));
            return Input{c.on_device(h), c.bytes(h)};
        };
        const Input x = input(-3, 3), y = input(-3, 3), pos = input(0.125, 8), unit_in = input(-0.9, 0.9), above1 = input(1.1, 8);
        const auto at = [&](const Input& in) { return [&in, t](std::size_t k) { return float_at(in.bytes, t, k); }; };
        const auto X = at(x), Y = at(y), P = at(pos), U = at(unit_in), G = at(above1);
        const Array& a = x.device;
        const Array& b = y.device;
        c.close(name + " +", a + b, [&](std::size_t k) { return X(k) + Y(k); });
        c.close(name + " -", a - b, [&](std::size_t k) { return X(k) - Y(k); });
        c.close(name + " *", a * b, [&](std::size_t k) { return X(k) * Y(k); });
        c.close(name + " /", a / b, [&](std::size_t k) { return X(k) / Y(k); });
        c.close(name + " %", a % b, [&](std::size_t k) {
            const double r = std::fmod(X(k), Y(k));
            return r != 0 && ((r < 0) != (Y(k) < 0)) ? r + Y(k) : r;
        }, 2, rtol_of(t) * 4);
        c.close(name + " minimum", minimum(a, b), [&](std::size_t k) { return std::min(X(k), Y(k)); });
        c.close(name + " maximum", maximum(a, b), [&](std::size_t k) { return std::max(X(k), Y(k)); });
        c.exact(name + " <", a < b, [&](std::size_t k) { return Int(X(k) < Y(k)); });
        c.exact(name + " <=", a <= b, [&](std::size_t k) { return Int(X(k) <= Y(k)); });
        c.exact(name + " >", a > b, [&](std::size_t k) { return Int(X(k) > Y(k)); });
        c.exact(name + " >=", a >= b, [&](std::size_t k) { return Int(X(k) >= Y(k)); });
        c.exact(name + " ==", a == a, [&](std::size_t) { return Int(1); });
        c.exact(name + " !=", a != b, [&](std::size_t k) { return Int(X(k) != Y(k)); });
        c.close(name + " negative", -a, [&](std::size_t k) { return -X(k); });
        c.close(name + " abs", abs(a), [&](std::size_t k) { return std::abs(X(k)); });
        c.close(name + " where", where(a > 0, a, 0.1 * a), [&](std::size_t k) { return X(k) > 0 ? X(k) : 0.1 * X(k); });
        c.close(name + " clip", clip(a, -1.0, 1.0), [&](std::size_t k) { return std::min(1.0, std::max(-1.0, X(k))); });
        c.close(name + " * 2.5 (weak)", a * 2.5, [&](std::size_t k) { return X(k) * 2.5; });
        c.close(name + " pow", pow(pos.device, b), [&](std::size_t k) { return std::pow(P(k), Y(k)); }, 4);
        c.close(name + " atan2", atan2(a, b), [&](std::size_t k) { return std::atan2(X(k), Y(k)); }, 2);
        c.close(name + " hypot", hypot(a, b), [&](std::size_t k) { return std::hypot(X(k), Y(k)); }, 2);
        c.close(name + " fmod", fmod(a, b), [&](std::size_t k) { return std::fmod(X(k), Y(k)); }, 2, rtol_of(t) * 4);
        c.close(name + " copysign", copysign(a, b), [&](std::size_t k) { return std::copysign(X(k), Y(k)); });
        const double near0 = rtol_of(t);  // functions whose value crosses zero: an absolute slack there
        c.close(name + " sqrt", sqrt(pos.device), [&](std::size_t k) { return std::sqrt(P(k)); }, 2);
        c.close(name + " rsqrt", rsqrt(pos.device), [&](std::size_t k) { return 1 / std::sqrt(P(k)); }, 4);
        c.close(name + " cbrt", cbrt(a), [&](std::size_t k) { return std::cbrt(X(k)); }, 2);
        c.close(name + " exp", exp(a), [&](std::size_t k) { return std::exp(X(k)); }, 2);
        c.close(name + " exp2", exp2(a), [&](std::size_t k) { return std::exp2(X(k)); }, 2);
        c.close(name + " expm1", expm1(a), [&](std::size_t k) { return std::expm1(X(k)); }, 2, near0);
        c.close(name + " log", log(pos.device), [&](std::size_t k) { return std::log(P(k)); }, 2, near0);
        c.close(name + " log2", log2(pos.device), [&](std::size_t k) { return std::log2(P(k)); }, 2, near0);
        c.close(name + " log10", log10(pos.device), [&](std::size_t k) { return std::log10(P(k)); }, 2, near0);
        c.close(name + " log1p", log1p(pos.device), [&](std::size_t k) { return std::log1p(P(k)); }, 2);
        c.close(name + " sin", sin(a), [&](std::size_t k) { return std::sin(X(k)); }, 2, near0);
        c.close(name + " cos", cos(a), [&](std::size_t k) { return std::cos(X(k)); }, 2, near0);
        c.close(name + " tan", tan(unit_in.device), [&](std::size_t k) { return std::tan(U(k)); }, 4, near0);
        c.close(name + " asin", asin(unit_in.device), [&](std::size_t k) { return std::asin(U(k)); }, 2, near0);
        c.close(name + " acos", acos(unit_in.device), [&](std::size_t k) { return std::acos(U(k)); }, 2);
        c.close(name + " atan", atan(a), [&](std::size_t k) { return std::atan(X(k)); }, 2, near0);
        c.close(name + " sinh", sinh(a), [&](std::size_t k) { return std::sinh(X(k)); }, 2, near0);
        c.close(name + " cosh", cosh(a), [&](std::size_t k) { return std::cosh(X(k)); }, 2);
        c.close(name + " tanh", tanh(a), [&](std::size_t k) { return std::tanh(X(k)); }, 2, near0);
        c.close(name + " asinh", asinh(a), [&](std::size_t k) { return std::asinh(X(k)); }, 2, near0);
        c.close(name + " acosh", acosh(above1.device), [&](std::size_t k) { return std::acosh(G(k)); }, 2);
        c.close(name + " atanh", atanh(unit_in.device), [&](std::size_t k) { return std::atanh(U(k)); }, 2, near0);
        c.close(name + " erf", erf(a), [&](std::size_t k) { return std::erf(X(k)); }, 2, near0);
        c.close(name + " erfc", erfc(a), [&](std::size_t k) { return std::erfc(X(k)); }, 4, near0);
        c.close(name + " floor", floor(a), [&](std::size_t k) { return std::floor(X(k)); });
        c.close(name + " ceil", ceil(a), [&](std::size_t k) { return std::ceil(X(k)); });
        c.close(name + " trunc", trunc(a), [&](std::size_t k) { return std::trunc(X(k)); });
        c.close(name + " rint", rint(a), [&](std::size_t k) { return std::nearbyint(X(k)); });
        c.exact(name + " isnan", isnan(sqrt(a)), [&](std::size_t k) { return Int(X(k) < 0); });
        c.exact(name + " isinf", isinf(a / 0.0), [&](std::size_t k) { return Int(X(k) != 0); });
        c.exact(name + " isfinite", isfinite(a), [&](std::size_t) { return Int(1); });
        c.exact(name + " signbit", signbit(a), [&](std::size_t k) { return Int(std::signbit(X(k))); });
        c.close(name + " astype float64", Expr(a).astype(DType::float64), [&](std::size_t k) { return X(k); });
        c.exact(name + " astype int16", Expr(a).astype(DType::int16), [&](std::size_t k) { return static_cast<Int>(std::trunc(X(k))); });
        c.exact(name + " astype uint8", abs(a).astype(DType::uint8), [&](std::size_t k) { return static_cast<Int>(std::trunc(std::abs(X(k)))); });
        c.close(name + " real", kjit::real(a), [&](std::size_t k) { return X(k); });
        c.close(name + " imag", kjit::imag(a), [&](std::size_t) { return 0.0; });
        c.close(name + " conj", kjit::conj(a), [&](std::size_t k) { return X(k); });
    }

    // Complex numbers: arithmetic, equality, the parts, and the functions defined for them.
    for (const DType t : {DType::complex64, DType::complex128}) {
        using C = std::complex<double>;
        const std::string name(t.name());
        const auto draw = [&](double lo, double hi) { return [&g, &unit, lo, hi](std::size_t) { return C(lo + (hi - lo) * unit(g), lo + (hi - lo) * unit(g)); }; };
        const Array ha = make_complex(t, n, draw(-2, 2)), hb = make_complex(t, n, draw(-2, 2));
        const std::vector<unsigned char> ab = c.bytes(ha), bb = c.bytes(hb);
        const Array a = c.on_device(ha), b = c.on_device(hb);
        const auto A = [&](std::size_t k) { return kjit::test::element_value(ab, t, k); };
        const auto B = [&](std::size_t k) { return kjit::test::element_value(bb, t, k); };
        c.close_complex(name + " +", a + b, [&](std::size_t k) { return A(k) + B(k); });
        c.close_complex(name + " -", a - b, [&](std::size_t k) { return A(k) - B(k); });
        c.close_complex(name + " *", a * b, [&](std::size_t k) { return A(k) * B(k); }, 2);
        c.close_complex(name + " /", a / b, [&](std::size_t k) { return A(k) / B(k); }, 4);
        c.close_complex(name + " negative", -a, [&](std::size_t k) { return -A(k); });
        c.close_complex(name + " * 2.5 (weak)", a * 2.5, [&](std::size_t k) { return A(k) * 2.5; });
        c.close_complex(name + " + float32 array", a + Expr(kjit::real(b)).astype(DType::float32), [&](std::size_t k) {
            return A(k) + static_cast<double>(static_cast<float>(B(k).real()));
        });
        c.close_complex(name + " where", where(kjit::real(a) > 0, a, b), [&](std::size_t k) { return A(k).real() > 0 ? A(k) : B(k); });
        c.close_complex(name + " conj", kjit::conj(a), [&](std::size_t k) { return std::conj(A(k)); });
        c.close_complex(name + " astype complex128", Expr(a).astype(DType::complex128), [&](std::size_t k) { return A(k); });
        c.close_complex(name + " sqrt", sqrt(a), [&](std::size_t k) { return std::sqrt(A(k)); }, 4);
        c.close_complex(name + " exp", exp(a), [&](std::size_t k) { return std::exp(A(k)); }, 4);
        c.close_complex(name + " log", log(a), [&](std::size_t k) { return std::log(A(k)); }, 4, 1e-6);
        c.close_complex(name + " sin", sin(a), [&](std::size_t k) { return std::sin(A(k)); }, 4, 1e-6);
        c.close_complex(name + " cos", cos(a), [&](std::size_t k) { return std::cos(A(k)); }, 4, 1e-6);
        // tanh away from its poles (imaginary part ±pi/2): near one, rounding the input to
        // complex64 alone moves the value by far more than its precision (seen: 5e-5 at |z| 49).
        const Array hn = make_complex(t, n, [&](std::size_t) { return C(-2 + 4 * unit(g), -1 + 2 * unit(g)); });
        const std::vector<unsigned char> nb = c.bytes(hn);
        c.close_complex(name + " tanh", tanh(c.on_device(hn)), [&](std::size_t k) { return std::tanh(kjit::test::element_value(nb, t, k)); }, 8,
                        1e-6);
        c.close_complex(name + " pow", pow(a, b), [&](std::size_t k) { return std::pow(A(k), B(k)); }, 16, 1e-6);
        c.close(name + " abs", abs(a), [&](std::size_t k) { return std::abs(A(k)); }, 2);
        c.close(name + " real", kjit::real(a), [&](std::size_t k) { return A(k).real(); });
        c.close(name + " imag", kjit::imag(a), [&](std::size_t k) { return A(k).imag(); });
        c.exact(name + " ==", a == a, [&](std::size_t) { return Int(1); });
        c.exact(name + " !=", a != b, [&](std::size_t k) { return Int(A(k) != B(k)); });
        CHECK_THROWS_WITH(a < b, Catch::Contains("not defined for complex numbers"));
        CHECK_THROWS_WITH(floor(a), Catch::Contains("not defined for complex numbers"));
    }
}

}  // namespace

TEST_CASE("every operator and function on every dtype on host arrays", "[expr][host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    check_every_operator(Device::cpu());
}

TEST_CASE("every operator and function on every dtype on the GPU", "[expr][gpu]") {
    KJIT_REQUIRE_GPU();
    check_every_operator(Device::cuda(0));
}

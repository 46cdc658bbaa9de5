// ElementwiseKernel calls on the GPU: every dtype and layout against a host reference computed
// in double (or exactly, where the result is exact) on fresh random data, outputs poisoned first.
#include "test_support.hpp"
#include "gpu_data.hpp"

#include <atomic>
#include <cmath>
#include <complex>
#include <cstring>
#include <functional>
#include <thread>

#include "kjit/array.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"
#include "kjit/half.hpp"
#include "kjit/stream.hpp"
#include "runtime/detail/call_layout.hpp"

using kjit::Array;
using kjit::DType;
using kjit::ElementwiseKernel;
using kjit::Shape;
using Catch::Matchers::Contains;

using kjit::test::mismatches;
using kjit::test::poisoned;
using kjit::test::random_device;
using kjit::test::to_host;
using Data = kjit::test::DeviceData;

namespace {

const kjit::Device gpu = kjit::Device::cuda(0);

std::complex<double> element(const std::vector<unsigned char>& bytes, DType t, std::size_t k) {
    return kjit::test::element_value(bytes, t, k);
}

// Integer element k, sign- or zero-extended to 64 bits.
std::uint64_t unsigned_at(const std::vector<unsigned char>& bytes, DType t, std::size_t k) {
    std::uint64_t v = 0;
    std::memcpy(&v, bytes.data() + k * t.itemsize(), t.itemsize());
    return v;
}
std::int64_t signed_at(const std::vector<unsigned char>& bytes, DType t, std::size_t k) {
    const int bits = static_cast<int>(8 * t.itemsize());
    const std::uint64_t v = unsigned_at(bytes, t, k);
    return bits == 64 ? static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v << (64 - bits)) >> (64 - bits);
}

// The element at multi-index `idx` of a C-ordered host array of `shape`, broadcast.
std::size_t broadcast_index(const Shape& out, const Shape& in, std::size_t flat) {
    std::size_t index = 0, stride = 1;
    for (int d = static_cast<int>(out.size()) - 1, e = static_cast<int>(in.size()) - 1; d >= 0; --d, --e) {
        const std::size_t k = flat % static_cast<std::size_t>(out[d]);
        flat /= static_cast<std::size_t>(out[d]);
        if (e < 0) continue;
        if (in[e] != 1) index += k * stride;
        stride *= static_cast<std::size_t>(in[e]);
    }
    return index;
}

}  // namespace

TEST_CASE("axpb with scalars runs contiguous, allocated or given output", "[gpu][elementwise]") {
    KJIT_REQUIRE_GPU();
    const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
    for (std::int64_t n : {std::int64_t{1}, std::int64_t{7}, std::int64_t{1000003}}) {
        INFO("n = " << n);
        const Data x = random_device(DType::float32, {n});
        const Array y = axpb({x.device, 2.5, -1.25f});
        CHECK(y.dtype() == DType::float32);
        CHECK(y.shape() == Shape{n});
        const auto ref = [&](std::size_t k) { return 2.5 * element(x.host, DType::float32, k) - 1.25; };
        CHECK(mismatches(y, ref, 1e-6, 1e-6) == 0);
        const Array out = poisoned(DType::float32, {n});
        axpb.launch({x.device, 2.5, -1.25f, out});
        CHECK(mismatches(out, ref, 1e-6, 1e-6) == 0);
    }
}

TEST_CASE("every dtype copies and converts through every layout", "[gpu][elementwise]") {
    KJIT_REQUIRE_GPU();
    const ElementwiseKernel copy("T x", "T y", "y = x", "copy_any");
    const ElementwiseKernel widen("T x", "complex128 y", "y = x", "widen");
    for (DType t : kjit::test::all_dtypes()) {
        INFO(t.name());
        const Shape shape{37, 64};
        const Data x = random_device(t, shape);
        // Contiguous: few elements (the small variant), and more (vector loads, then a tail).
        CHECK(mismatches(copy({x.device}), [&](std::size_t k) { return element(x.host, t, k); }, 0) == 0);
        for (const std::int64_t n : {kjit::detail::kSmallCallElements, kjit::detail::kSmallCallElements + 1027}) {
            const Data big = random_device(t, {n});
            CHECK(mismatches(copy({big.device}), [&](std::size_t k) { return element(big.host, t, k); }, 0) == 0);
        }
        // Transposed (tiled), reversed, sliced and broadcast views.
        const Array xt = x.device.transpose();
        const Array yt = copy({xt});
        CHECK(yt.shape() == Shape{64, 37});
        CHECK(mismatches(yt, [&](std::size_t k) { return element(x.host, t, (k % 37) * 64 + k / 37); }, 0) == 0);
        const Array rev = x.device.slice(1, {std::nullopt, std::nullopt, -1});
        CHECK(mismatches(copy({rev}), [&](std::size_t k) { return element(x.host, t, (k / 64) * 64 + 63 - k % 64); }, 0) == 0);
        const Array stepped = x.device.slice(0, {1, std::nullopt, 3}).slice(1, {2, 60, 2});
        CHECK(mismatches(copy({stepped}),
                         [&](std::size_t k) { return element(x.host, t, (1 + 3 * (k / 29)) * 64 + 2 + 2 * (k % 29)); }, 0) == 0);
        const Array row = x.device.index(0, 5).broadcast_to({9, 64});
        CHECK(mismatches(copy({row}), [&](std::size_t k) { return element(x.host, t, 5 * 64 + k % 64); }, 0) == 0);
        // Converted to complex128 exactly (every dtype's values are exact in double, but 64-bit ints).
        const double rtol = (t.id() == DType::int64 || t.id() == DType::uint64) ? 1e-16 : 0;
        CHECK(mismatches(widen({xt}), [&](std::size_t k) { return element(x.host, t, (k % 37) * 64 + k / 37); }, rtol) == 0);
    }
}

TEST_CASE("arithmetic, comparisons and bit operations for every dtype they apply to", "[gpu][elementwise]") {
    KJIT_REQUIRE_GPU();
    const std::int64_t n = 4099;
    for (DType t : kjit::test::all_dtypes()) {
        INFO(t.name());
        const Data x = random_device(t, {n}), z = random_device(t, {n});
        auto X = [&](std::size_t k) { return element(x.host, t, k); };
        auto Z = [&](std::size_t k) { return element(z.host, t, k); };
        if (!t.is_bool() && !t.is_complex()) {
            const ElementwiseKernel lt("T x, T z", "bool y", "y = x < z", "less");
            CHECK(mismatches(lt({x.device, z.device}), [&](std::size_t k) { return X(k).real() < Z(k).real() ? 1.0 : 0.0; }, 0) == 0);
        }
        if (t.itemsize() == 2 && t.is_floating()) {
            // A product of two 16-bit floats is exact in float: one rounding, half an ulp.
            const ElementwiseKernel f("T x, T z", "T y", "y = x * z", "mul16");
            const double tol = t == DType::float16 ? 4.9e-4 : 3.9e-3;
            CHECK(mismatches(f({x.device, z.device}), [&](std::size_t k) { return X(k) * Z(k); }, tol) == 0);
        } else if (t.is_floating() || t.is_complex()) {
            // Terms up to 64 in magnitude: a few roundings of that size.
            const ElementwiseKernel f("T x, T z", "T y", "y = x * z - x / z", "arith");
            const double tol = t.real_type() == DType::float32 ? 1e-5 : 1e-13;
            CHECK(mismatches(f({x.device, z.device}), [&](std::size_t k) { return X(k) * Z(k) - X(k) / Z(k); }, tol, 64 * tol) == 0);
        }
        if (t.is_integer()) {
            const ElementwiseKernel bits("T x, T z", "T y", "y = (x & z) ^ (x | ~z)", "bits");
            const Array y = bits({x.device, z.device});
            const std::vector<unsigned char> got = to_host(y);
            std::size_t wrong = 0;
            for (std::size_t k = 0; k < static_cast<std::size_t>(n); ++k) {
                std::uint64_t a = 0, b = 0, g = 0;
                std::memcpy(&a, x.host.data() + k * t.itemsize(), t.itemsize());
                std::memcpy(&b, z.host.data() + k * t.itemsize(), t.itemsize());
                std::memcpy(&g, got.data() + k * t.itemsize(), t.itemsize());
                const std::uint64_t mask = t.itemsize() == 8 ? ~0ull : ((1ull << (8 * t.itemsize())) - 1);
                if ((((a & b) ^ (a | ~b)) & mask) != g) ++wrong;
            }
            CHECK(wrong == 0);
            // Division and remainder by a scalar, C's truncation, compared exactly.
            const ElementwiseKernel divmod("T x, T d", "T q, T r", "q = x / d; r = x % d", "divmod");
            const kjit::Outputs qr = divmod({x.device, 7});
            const std::vector<unsigned char> q = to_host(qr[0]), r = to_host(qr[1]);
            std::size_t bad = 0;
            for (std::size_t k = 0; k < static_cast<std::size_t>(n); ++k) {
                if (t.is_signed()) {
                    const std::int64_t a = signed_at(x.host, t, k);
                    bad += signed_at(q, t, k) != a / 7 || signed_at(r, t, k) != a % 7;
                } else {
                    const std::uint64_t a = unsigned_at(x.host, t, k);
                    bad += unsigned_at(q, t, k) != a / 7 || unsigned_at(r, t, k) != a % 7;
                }
            }
            CHECK(bad == 0);
        }
    }
}

TEST_CASE("every math function of the table matches the host in float32 and float64", "[gpu][elementwise]") {
    KJIT_REQUIRE_GPU();
    const double pi = 3.14159265358979323846;
    auto erfinv = [](double y) {  // Newton on erf, from a good start: accurate to a few ulps
        double x = 0;
        for (int k = 0; k < 100; ++k) {
            const double step = (std::erf(x) - y) / (2 / std::sqrt(3.14159265358979323846) * std::exp(-x * x));
            x -= step;
            if (std::fabs(step) < 1e-17 * (1 + std::fabs(x))) break;
        }
        return x;
    };
    struct Case {
        const char* call;
        double lo, hi;  // domain of x (and of z for two-argument functions)
        std::function<double(double, double)> ref;
    };
    const std::vector<Case> cases = {
        {"sqrt(x)", 0.01, 100, [](double x, double) { return std::sqrt(x); }},
        {"rsqrt(x)", 0.01, 100, [](double x, double) { return 1 / std::sqrt(x); }},
        {"cbrt(x)", -50, 50, [](double x, double) { return std::cbrt(x); }},
        {"rcbrt(x)", 0.1, 50, [](double x, double) { return 1 / std::cbrt(x); }},
        {"exp(x)", -20, 20, [](double x, double) { return std::exp(x); }},
        {"exp2(x)", -20, 20, [](double x, double) { return std::exp2(x); }},
        {"exp10(x)", -10, 10, [](double x, double) { return std::pow(10.0, x); }},
        {"expm1(x)", -5, 5, [](double x, double) { return std::expm1(x); }},
        {"log(x)", 0.01, 1000, [](double x, double) { return std::log(x); }},
        {"log2(x)", 0.01, 1000, [](double x, double) { return std::log2(x); }},
        {"log10(x)", 0.01, 1000, [](double x, double) { return std::log10(x); }},
        {"log1p(x)", -0.9, 100, [](double x, double) { return std::log1p(x); }},
        {"sin(x)", -10, 10, [](double x, double) { return std::sin(x); }},
        {"cos(x)", -10, 10, [](double x, double) { return std::cos(x); }},
        {"tan(x)", -1.5, 1.5, [](double x, double) { return std::tan(x); }},
        {"asin(x)", -0.99, 0.99, [](double x, double) { return std::asin(x); }},
        {"acos(x)", -0.99, 0.99, [](double x, double) { return std::acos(x); }},
        {"atan(x)", -10, 10, [](double x, double) { return std::atan(x); }},
        {"sinh(x)", -5, 5, [](double x, double) { return std::sinh(x); }},
        {"cosh(x)", -5, 5, [](double x, double) { return std::cosh(x); }},
        {"tanh(x)", -5, 5, [](double x, double) { return std::tanh(x); }},
        {"asinh(x)", -50, 50, [](double x, double) { return std::asinh(x); }},
        {"acosh(x)", 1.01, 50, [](double x, double) { return std::acosh(x); }},
        {"atanh(x)", -0.99, 0.99, [](double x, double) { return std::atanh(x); }},
        {"sinpi(x)", -3, 3, [pi](double x, double) { return std::sin(pi * x); }},
        {"cospi(x)", -3, 3, [pi](double x, double) { return std::cos(pi * x); }},
        {"erf(x)", -3, 3, [](double x, double) { return std::erf(x); }},
        {"erfc(x)", -3, 3, [](double x, double) { return std::erfc(x); }},
        {"erfinv(x)", -0.99, 0.99, [erfinv](double x, double) { return erfinv(x); }},
        {"erfcinv(x)", 0.01, 1.99, [erfinv](double x, double) { return erfinv(1 - x); }},
        {"normcdf(x)", -5, 5, [](double x, double) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }},
        {"normcdfinv(x)", 0.01, 0.99, [erfinv](double x, double) { return std::sqrt(2.0) * erfinv(2 * x - 1); }},
        {"lgamma(x)", 0.1, 20, [](double x, double) { return std::lgamma(x); }},
        {"tgamma(x)", 0.1, 10, [](double x, double) { return std::tgamma(x); }},
        {"floor(x)", -100, 100, [](double x, double) { return std::floor(x); }},
        {"ceil(x)", -100, 100, [](double x, double) { return std::ceil(x); }},
        {"trunc(x)", -100, 100, [](double x, double) { return std::trunc(x); }},
        {"round(x)", -100, 100, [](double x, double) { return std::round(x); }},
        {"rint(x)", -100, 100, [](double x, double) { return std::rint(x); }},
        {"nearbyint(x)", -100, 100, [](double x, double) { return std::nearbyint(x); }},
        {"fabs(x)", -100, 100, [](double x, double) { return std::fabs(x); }},
        {"abs(x)", -100, 100, [](double x, double) { return std::fabs(x); }},
        {"pow(x, z)", 0.1, 4, [](double x, double z) { return std::pow(x, z); }},
        {"atan2(x, z)", -10, 10, [](double x, double z) { return std::atan2(x, z); }},
        {"fmod(x, z)", -10, 10, [](double x, double z) { return std::fmod(x, z); }},
        {"remainder(x, z)", -10, 10, [](double x, double z) { return std::remainder(x, z); }},
        {"hypot(x, z)", -10, 10, [](double x, double z) { return std::hypot(x, z); }},
        {"fmin(x, z)", -10, 10, [](double x, double z) { return std::fmin(x, z); }},
        {"fmax(x, z)", -10, 10, [](double x, double z) { return std::fmax(x, z); }},
        {"min(x, z)", -10, 10, [](double x, double z) { return std::fmin(x, z); }},
        {"max(x, z)", -10, 10, [](double x, double z) { return std::fmax(x, z); }},
        {"fdim(x, z)", -10, 10, [](double x, double z) { return std::fdim(x, z); }},
        {"copysign(x, z)", -10, 10, [](double x, double z) { return std::copysign(x, z); }},
        {"fma(x, z, x)", -10, 10, [](double x, double z) { return std::fma(x, z, x); }},
        {"ldexp(x, 3)", -10, 10, [](double x, double) { return std::ldexp(x, 3); }},
        {"isnan(x) + 2 * isinf(x) + 4 * isfinite(x) + 8 * signbit(x)", -10, 10,
         [](double x, double) { return 4.0 + (std::signbit(x) ? 8.0 : 0.0); }},
        {"real(x) + imag(x) + norm(x) + arg(x) + real(conj(x))", -10, 10,
         [pi](double x, double) { return x + x * x + (x < 0 ? pi : 0.0) + x; }},
    };
    const std::int64_t n = 2000;
    for (DType t : {DType(DType::float32), DType(DType::float64)}) {
        const bool single = t == DType::float32;
        for (const Case& c : cases) {
            INFO(t.name() << ": y = " << c.call);
            std::vector<double> xs(n), zs(n);
            std::uniform_real_distribution<double> dist(c.lo, c.hi);
            for (std::int64_t k = 0; k < n; ++k) {
                xs[k] = dist(kjit::test::rng());
                zs[k] = dist(kjit::test::rng());
                if (single) {
                    xs[k] = static_cast<float>(xs[k]);
                    zs[k] = static_cast<float>(zs[k]);
                }
            }
            std::vector<float> xf(xs.begin(), xs.end()), zf(zs.begin(), zs.end());
            const Array x = single ? Array::from_host(xf.data(), t, {n}, gpu) : Array::from_host(xs.data(), t, {n}, gpu);
            const Array z = single ? Array::from_host(zf.data(), t, {n}, gpu) : Array::from_host(zs.data(), t, {n}, gpu);
            const ElementwiseKernel k("T x, T z", "T y", std::string("y = ") + c.call, "mathfn");
            const Array y = poisoned(t, {n});
            k.launch({x, z, y});
            // CUDA's documented maximum errors are a few ulps (tgamma, erfcinv, lgamma near its
            // zeros the worst): a relative bound of ~30 ulps plus a small absolute one.
            const double rtol = single ? 4e-6 : 1e-14;
            CHECK(mismatches(y, [&](std::size_t i) { return c.ref(xs[i], zs[i]); }, rtol, rtol) == 0);
        }
    }
}

TEST_CASE("float16, bfloat16 and complex compute as C and CUDA say", "[gpu][elementwise]") {
    KJIT_REQUIRE_GPU();
    const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb16");
    for (DType t : {DType(DType::float16), DType(DType::bfloat16)}) {
        INFO(t.name());
        const std::int64_t n = 100003;
        const Data x = random_device(t, {n});
        const Array y = axpb({x.device, 1.5, 0.25});
        // a and b are exact in both types; one rounding of the float result (two when not fused).
        const double tol = t == DType::float16 ? 2e-3 : 1.6e-2;
        CHECK(mismatches(y, [&](std::size_t k) { return 1.5 * element(x.host, t, k) + 0.25; }, tol, tol) == 0);
    }
    for (DType t : {DType(DType::complex64), DType(DType::complex128)}) {
        INFO(t.name());
        const std::int64_t n = 5001;
        const Data x = random_device(t, {n}), z = random_device(t, {n});
        const ElementwiseKernel k("T x, T z", "T y", "y = x * z + exp(x) / z - sqrt(conj(z))", "cplx");
        const double tol = t == DType::complex64 ? 1e-4 : 1e-12;
        CHECK(mismatches(k({x.device, z.device}),
                         [&](std::size_t i) {
                             const auto X = element(x.host, t, i), Z = element(z.host, t, i);
                             return X * Z + std::exp(X) / Z - std::sqrt(std::conj(Z));
                         },
                         tol, tol) == 0);
    }
}

TEST_CASE("broadcasting: rows, columns, scalars-shaped arrays, size 0", "[gpu][elementwise]") {
    KJIT_REQUIRE_GPU();
    const ElementwiseKernel add("T x, T z", "T y", "y = x + z", "add");
    struct Case {
        Shape x, z, out;
    };
    for (const Case& c : std::vector<Case>{{{300, 256}, {256}, {300, 256}},
                                           {{300, 256}, {300, 1}, {300, 256}},
                                           {{7, 1, 5}, {1, 6, 1}, {7, 6, 5}},
                                           {{1000}, {}, {1000}},
                                           {{}, {}, {}},
                                           {{3, 255}, {255}, {3, 255}},
                                           {{2, 3, 4, 5, 6}, {5, 1}, {2, 3, 4, 5, 6}}}) {
        INFO("x " << kjit::shape_to_string(c.x) << " + z " << kjit::shape_to_string(c.z));
        const Data x = random_device(DType::float64, c.x), z = random_device(DType::float64, c.z);
        const Array y = add({x.device, z.device});
        REQUIRE(y.shape() == c.out);
        CHECK(mismatches(y,
                         [&](std::size_t k) {
                             return element(x.host, DType::float64, broadcast_index(c.out, c.x, k)) +
                                    element(z.host, DType::float64, broadcast_index(c.out, c.z, k));
                         },
                         1e-15) == 0);
    }
    const Array e = add({Array::empty({0, 3}, DType::float32, gpu), Array::empty({3}, DType::float32, gpu)});
    CHECK(e.shape() == Shape{0, 3});
    CHECK_THROWS_WITH(add({Array::empty({4}, DType::float32, gpu), Array::empty({3}, DType::float32, gpu)}),
                      Contains("do not broadcast") && Contains("x (4,)") && Contains("z (3,)"));
}

TEST_CASE("a kernel that reads i visits elements in C order whatever the layout", "[gpu][elementwise]") {
    KJIT_REQUIRE_GPU();
    const ElementwiseKernel k("T x", "float64 y", "y = x + 1000000.0 * i", "with_index");
    const Data x = random_device(DType::float32, {40, 50});
    const Array xt = x.device.transpose();  // (50, 40), F-ordered: i still counts in C order of (50, 40)
    const Array y = k({xt});
    CHECK(mismatches(y, [&](std::size_t i) { return element(x.host, DType::float32, (i % 40) * 50 + i / 40) + 1e6 * double(i); },
                     1e-15) == 0);
}

TEST_CASE("in place, partial overlap, and outputs that cannot be written", "[gpu][elementwise]") {
    KJIT_REQUIRE_GPU();
    const ElementwiseKernel add5("T x", "T y", "y = x + 5", "add5");
    const Data x = random_device(DType::float64, {100003});
    add5.launch({x.device, x.device});
    CHECK(mismatches(x.device, [&](std::size_t k) { return element(x.host, DType::float64, k) + 5.0; }, 1e-15) == 0);

    // y = x[:-1] written into x[1:]: the result is as if x had been copied first (a shift by one).
    const ElementwiseKernel copy("T x", "T y", "y = x", "copy_shift");
    const Data s = random_device(DType::int32, {1000});
    copy.launch({s.device.slice(0, {0, 999}), s.device.slice(0, {1, 1000})});
    CHECK(mismatches(s.device, [&](std::size_t k) { return element(s.host, DType::int32, k == 0 ? 0 : k - 1); }, 0) == 0);
    // Reversed in place: y = x[::-1] into x.
    const Data r = random_device(DType::int32, {1001});
    copy.launch({r.device.slice(0, {std::nullopt, std::nullopt, -1}), r.device});
    CHECK(mismatches(r.device, [&](std::size_t k) { return element(r.host, DType::int32, 1000 - k); }, 0) == 0);

    const ElementwiseKernel two("T x", "T y, T z", "y = x; z = x", "two_out");
    const Array out = Array::empty({10}, DType::float32, gpu);
    const Array in = Array::empty({10}, DType::float32, gpu);
    CHECK_THROWS_WITH(two.launch({in, out, out}), Contains("output 'y' and output 'z' overlap"));
    const Array row = Array::empty({10}, DType::float32, gpu);
    CHECK_THROWS_WITH(copy.launch({Array::empty({4, 10}, DType::float32, gpu), row.broadcast_to({4, 10})}),
                      Contains("broadcast view"));
}

TEST_CASE("inputs of other dtypes convert on load; raw parameters and size", "[gpu][elementwise]") {
    KJIT_REQUIRE_GPU();
    const ElementwiseKernel scale("float64 x, float64 a", "float64 y", "y = a * x", "scale64");
    const Data i16 = random_device(DType::int16, {5000});
    CHECK(mismatches(scale({i16.device, 0.5f}), [&](std::size_t k) { return 0.5 * element(i16.host, DType::int16, k); }, 0) == 0);
    const Data h = random_device(DType::float16, {64, 64});
    CHECK(mismatches(scale({h.device.transpose(), 2}),
                     [&](std::size_t k) { return 2.0 * element(h.host, DType::float16, (k % 64) * 64 + k / 64); }, 0) == 0);
    CHECK_THROWS_AS(scale({Array::empty({3}, DType::complex64, gpu), 1.0}), kjit::TypeError);

    // Gather through a raw table by an index array.
    const ElementwiseKernel gather("raw T table, int32 k", "T y", "y = table[k]", "gather");
    const Data table = random_device(DType::float32, {1000});
    std::vector<std::int32_t> idx(3000);
    for (std::size_t j = 0; j < idx.size(); ++j) idx[j] = static_cast<std::int32_t>(kjit::test::rng()() % 1000);
    const Array k = Array::from_host(idx.data(), DType::int32, {3000}, gpu);
    CHECK(mismatches(gather({table.device, k}), [&](std::size_t j) { return element(table.host, DType::float32, idx[j]); }, 0) == 0);

    // Every parameter raw: the size comes from the call.
    const ElementwiseKernel iota("", "raw int64 y", "y[i] = i * 3", "iota");
    const Array y = Array::empty({100}, DType::int64, gpu);
    iota.launch({y}, {std::nullopt, 100});
    CHECK(mismatches(y, [](std::size_t j) { return 3.0 * static_cast<double>(j); }, 0) == 0);
    CHECK_THROWS_WITH(iota.launch({y}), Contains("needs a size"));
}

TEST_CASE("wrong calls fail with clear errors and leave the kernel usable", "[gpu][elementwise]") {
    KJIT_REQUIRE_GPU();
    const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb_err");
    const Array x = Array::empty({10}, DType::float32, gpu);
    CHECK_THROWS_AS(axpb({x, 1}), kjit::TypeError);
    // The output makes T int32: a float32 x does not convert to it safely.
    CHECK_THROWS_WITH(axpb({x, 1, 2, Array::empty({10}, DType::int32, gpu)}), Contains("input 'x' is int32"));
    CHECK_THROWS_WITH(axpb({x, 1, 2, Array::empty({11}, DType::float32, gpu)}),
                      Contains("output 'y' has shape (11,)") && Contains("(10,)"));
    CHECK_THROWS_AS(axpb.launch({x, 1, 2}), kjit::TypeError);
    // Host and device arrays in one call: an error naming both places.
    const Array host = Array::empty({10}, DType::float32, kjit::Device::cpu());
    CHECK_THROWS_WITH(axpb({host, 1, 2, Array::empty({10}, DType::float32, gpu)}), Contains("on the host or on one GPU"));
    // Host arrays alone run on the host back end when it can be loaded (docs/HOST.md); where it
    // cannot (the GPU test machine has no LLVM), the error says so.
    try {
        const std::vector<float> ones(10, 1.0f);
        const Array h = Array::from_host(ones.data(), DType::float32, {10}, kjit::Device::cpu());
        const Array r = axpb({h, 2, 1});
        CHECK(r.is_host());
        CHECK(r.data_as<float>()[9] == 3.0f);
    } catch (const kjit::Error& e) {
        CHECK_THAT(e.what(), Contains("host back end cannot be loaded"));
    }
    const ElementwiseKernel broken("T x", "T y", "y = x +", "broken");
    CHECK_THROWS_AS(broken({x}), kjit::ParseError);
    CHECK_THROWS_AS(broken({x}), kjit::ParseError);
    // Still fine afterwards.
    const Data d = random_device(DType::float32, {10});
    CHECK(mismatches(axpb({d.device, 2, 1}), [&](std::size_t k) { return 2.0 * element(d.host, DType::float32, k) + 1.0; }, 1e-6) == 0);
}

TEST_CASE("two streams at once and eight threads launching different kernels", "[gpu][elementwise]") {
    KJIT_REQUIRE_GPU();
    const kjit::Stream s1 = kjit::Stream::create(gpu), s2 = kjit::Stream::create(gpu);
    const ElementwiseKernel mul("T x, T a", "T y", "y = x * a", "mul_streams");
    const Data a = random_device(DType::float32, {1 << 22}), b = random_device(DType::float32, {1 << 22});
    s1.synchronize();
    const Array ya = mul({a.device, 3}, {s1}), yb = mul({b.device, -2}, {s2});
    s1.synchronize();
    s2.synchronize();
    CHECK(mismatches(ya, [&](std::size_t k) { return 3.0 * element(a.host, DType::float32, k); }, 1e-7) == 0);
    CHECK(mismatches(yb, [&](std::size_t k) { return -2.0 * element(b.host, DType::float32, k); }, 1e-7) == 0);

    const ElementwiseKernel shared("T x, T c", "T y", "y = x + c", "shared_threads");
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            try {
                const kjit::Stream s = kjit::Stream::create(gpu);
                const ElementwiseKernel own("T x", "T y", "y = x * " + std::to_string(t + 2), "own" + std::to_string(t));
                std::vector<double> host(10000);
                for (std::size_t k = 0; k < host.size(); ++k) host[k] = static_cast<double>(k) + t;
                const Array x = Array::from_host(host.data(), DType::float64, {10000}, gpu, s);
                for (int rep = 0; rep < 20; ++rep) {
                    const Array y = own({x}, {s});
                    const Array z = shared({y, static_cast<double>(t)}, {s});
                    std::vector<double> got(10000);
                    z.copy_to_host(got.data(), s);
                    for (std::size_t k = 0; k < got.size(); ++k)
                        if (got[k] != host[k] * (t + 2) + t) {
                            ++failures;
                            break;
                        }
                }
            } catch (const std::exception& e) {
                ++failures;
            }
        });
    for (std::thread& th : threads) th.join();
    CHECK(failures == 0);
}

TEST_CASE("more than 2^31 elements take the 64-bit index path", "[gpu][elementwise][large]") {
    KJIT_REQUIRE_GPU();
    const std::int64_t n = (std::int64_t{1} << 31) + 4099;
    std::vector<std::uint8_t> host(static_cast<std::size_t>(n));
    for (std::size_t k = 0; k < host.size(); ++k) host[k] = static_cast<std::uint8_t>(k * 2654435761u >> 13);
    const Array x = Array::from_host(host.data(), DType::uint8, {n}, gpu);
    const ElementwiseKernel k("T x", "T y", "y = x ^ (T)(i & 255)", "big_xor");
    const Array y = k({x});
    std::vector<std::uint8_t> got(static_cast<std::size_t>(n));
    y.copy_to_host(got.data());
    std::size_t wrong = 0;
    for (std::size_t j = 0; j < got.size(); ++j)
        if (got[j] != static_cast<std::uint8_t>(host[j] ^ (j & 255))) ++wrong;
    CHECK(wrong == 0);
    // Strided over the same memory: every other element of a 2-D view.
    const Array view = x.reshape({1, n});
    const Array yy = k({view.slice(1, {0, std::nullopt, 2})});
    std::vector<std::uint8_t> g2(static_cast<std::size_t>(yy.size()));
    yy.copy_to_host(g2.data());
    wrong = 0;
    for (std::size_t j = 0; j < g2.size(); ++j)
        if (g2[j] != static_cast<std::uint8_t>(host[2 * j] ^ (j & 255))) ++wrong;
    CHECK(wrong == 0);
}

TEST_CASE("Array::to packs a non-contiguous device array with the copy kernel", "[gpu][elementwise]") {
    KJIT_REQUIRE_GPU();
    const Data x = random_device(DType::complex64, {33, 65});
    const Array view = x.device.transpose().slice(0, {std::nullopt, std::nullopt, -2});  // (33, 33), reversed, stepped
    const Array packed = view.to(gpu);
    REQUIRE(packed.is_c_contiguous());
    REQUIRE(packed.shape() == Shape{33, 33});
    CHECK(mismatches(packed, [&](std::size_t k) { return element(x.host, DType::complex64, (k % 33) * 65 + (64 - 2 * (k / 33))); }, 0) ==
          0);
}

// Array expressions (include/kjit/expr.hpp, issue 34): NumPy's dtypes and broadcasting checked at
// the operator, the fused kernel's source, and evaluation on host arrays (the host back end)
// against references computed here in double precision; on the pretend driver, a loop of changing
// scalars and sizes compiles once.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "backend_cases.hpp"
#include "gpu_data.hpp"
#include "fake_driver.hpp"
#include "kjit/cache.hpp"
#include "jit/expr/expr_node.hpp"
#include "kjit/kjit.hpp"
#include "runtime/detail/driver.hpp"
#include "test_support.hpp"

using namespace kjit;
using kjit::test::host_array;
using kjit::test::values_of;
using Catch::Contains;

namespace {

std::vector<float> random_floats(std::size_t n, float lo, float hi, unsigned seed) {
    std::mt19937 g(seed ^ static_cast<unsigned>(kjit::test::seed()));
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(g);
    return v;
}

Array host_empty(DType t, std::size_t n) { return Array::empty({static_cast<std::int64_t>(n)}, t, Device::cpu()); }

}  // namespace

TEST_CASE("expressions take NumPy's dtypes, with C++ numbers as weak scalars", "[expr]") {
    const Array f16 = host_empty(DType::float16, 4), f32 = host_empty(DType::float32, 4), i8 = host_empty(DType::int8, 4);
    const Array u8 = host_empty(DType::uint8, 4), i32 = host_empty(DType::int32, 4), b = host_empty(DType::bool_, 4);
    CHECK((f16 * 2.0).dtype() == DType::float16);              // NEP 50: the number takes the array's dtype
    CHECK((f16 * Scalar(2.0)).dtype() == DType::float64);      // a kjit::Scalar is strong
    CHECK((i32 * 2.5).dtype() == DType::float64);              // a float number with integers: float64
    CHECK((i8 + 1).dtype() == DType::int8);
    CHECK((i8 + u8).dtype() == DType::int16);
    CHECK((i32 / i32).dtype() == DType::float64);              // true division
    CHECK(sqrt(i8).dtype() == DType::float16);                 // the smallest float that holds int8
    CHECK(sqrt(i32).dtype() == DType::float64);
    CHECK((f32 > 1.5).dtype() == DType::bool_);
    CHECK(where(f32 > 0, f32, 0).dtype() == DType::float32);
    CHECK((b + 1).dtype() == DType::int64);
    CHECK(abs(host_empty(DType::complex64, 4)).dtype() == DType::float32);
    CHECK(Expr(f32).astype(DType::int16).dtype() == DType::int16);
    CHECK(Expr(f32).astype<double>().dtype() == DType::float64);
    CHECK(clip(i8, 0, 10).dtype() == DType::int8);
}

TEST_CASE("an operator whose operands do not fit throws there, naming both", "[expr]") {
    const Array x = host_empty(DType::float32, 3), y = host_empty(DType::float32, 4), b = host_empty(DType::bool_, 3);
    CHECK_THROWS_WITH(x + y, Contains("+") && Contains("float32 array of shape (3,)") && Contains("(4,)") && Contains("do not broadcast"));
    CHECK_THROWS_AS(sqrt(x) * y, ShapeError);
    CHECK_THROWS_WITH(b - b, Contains("subtracting booleans"));
    CHECK_THROWS_WITH(x & x, Contains("needs integer or bool operands"));
    CHECK_THROWS_WITH(x << 1, Contains("needs integer operands"));
    CHECK_THROWS_WITH(host_empty(DType::int8, 3) + 1000, Contains("does not fit int8"));  // NEP 50
    CHECK_THROWS_WITH(host_empty(DType::uint8, 3) * -1, Contains("does not fit uint8"));
    CHECK((host_empty(DType::int8, 3) + 127).dtype() == DType::int8);
    CHECK(where(2, host_empty(DType::int8, 3), 0).dtype() == DType::int8);  // a condition is any nonzero
    const Array c = host_empty(DType::complex64, 3);
    CHECK_THROWS_WITH(c < c, Contains("complex"));
    CHECK_THROWS_WITH(Expr(c).astype(DType::float32), Contains("imaginary part"));
    CHECK_THROWS_WITH(-b, Contains("negating booleans"));
}

TEST_CASE("an expression's kernel reads each array once and names its numbers as parameters", "[expr]") {
    const Array x = host_empty(DType::float32, 8), y = host_empty(DType::float32, 8);
    const Expr shared = x * x;
    const std::string s = (shared + shared * y + 2.0f).source();
    CHECK_THAT(s, Contains("in:  float32 in0, float32 in1, float32 s0"));  // x once, y, the number
    CHECK_THAT(s, Contains("const float32 t0 = (in0 * in0);"));            // the shared subexpression once
    CHECK_THAT(s, Contains("out0 = ((t0 + (t0 * in1)) + s0);"));
    CHECK_THAT((host_empty(DType::int8, 2) + host_empty(DType::int8, 2)).source(), Contains("((int8)((in0 + in1)))"));
}

TEST_CASE("expressions on host arrays match a double-precision reference", "[expr][host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const std::size_t n = 5000;
    const std::vector<float> xv = random_floats(n, -2, 2, 1), cv = random_floats(n, 0.5f, 1.5f, 2);
    const Array x = host_array(xv, DType::float32), c = host_array(cv, DType::float32);
    const float a = 1.75f, b = 4.5f;
    const Array z = sqrt(a * x + b) * c;
    REQUIRE(z.dtype() == DType::float32);
    const std::vector<float> got = values_of<float>(z);
    for (std::size_t k = 0; k < n; ++k) {
        const double want = std::sqrt(double(a) * xv[k] + b) * cv[k];
        REQUIRE(std::abs(got[k] - want) <= 1e-5 * std::abs(want) + 1e-6);
    }

    // In place, through a view: every other element of y, read and written.
    const Array y = host_array(random_floats(2 * n, -1, 1, 3), DType::float32);
    const std::vector<float> before = values_of<float>(y);
    const Array evens = y.slice(0, {0, static_cast<std::int64_t>(2 * n), 2});
    eval(evens, evens * 2.0f + x);
    const std::vector<float> after = values_of<float>(y);
    for (std::size_t k = 0; k < 2 * n; ++k) {
        const float want = k % 2 == 0 ? before[k] * 2.0f + xv[k / 2] : before[k];
        REQUIRE(after[k] == want);
    }

    // Several outputs in one kernel.
    const Array lo = host_empty(DType::float32, n), hi = host_empty(DType::float32, n);
    eval({{lo, minimum(x, c)}, {hi, maximum(x, c)}});
    const std::vector<float> lov = values_of<float>(lo), hiv = values_of<float>(hi);
    for (std::size_t k = 0; k < n; ++k) {
        REQUIRE(lov[k] == std::min(xv[k], cv[k]));
        REQUIRE(hiv[k] == std::max(xv[k], cv[k]));
    }

    // where, a broadcast of (3, 1) against (4,), astype, clip.
    const Array col = host_array<float>({1, -2, 3}, DType::float32, {3, 1});
    const Array row = host_array<float>({0.5f, -1, 2, -4}, DType::float32);
    const Array w = where(col * row > 0, col * row, 0.1 * col * row);
    REQUIRE(w.shape() == Shape{3, 4});
    const std::vector<float> wv = values_of<float>(w);
    const float colv[] = {1, -2, 3}, rowv[] = {0.5f, -1, 2, -4};
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) {
            const float p = colv[i] * rowv[j];
            REQUIRE(wv[static_cast<std::size_t>(i * 4 + j)] == (p > 0 ? p : static_cast<float>(0.1f * colv[i] * rowv[j])));
        }
    const Array clipped = clip(x, -1.0, 1.0).astype(DType::float64);
    REQUIRE(clipped.dtype() == DType::float64);
    const std::vector<double> cl = values_of<double>(clipped);
    for (std::size_t k = 0; k < n; ++k) REQUIRE(cl[k] == std::min(1.0, std::max(-1.0, double(xv[k]))));
}

TEST_CASE("two evaluations whose outputs differ only in order get their own kernels", "[expr][host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const Array x = host_array<float>({1, 2, 3}, DType::float32);
    const Expr t = x * 2.0f;
    const Array y1 = host_empty(DType::float32, 3), y2 = host_empty(DType::float32, 3);
    eval({{y1, t}, {y2, t + 1.0f}});
    CHECK(values_of<float>(y1) == std::vector<float>{2, 4, 6});
    eval({{y1, t + 1.0f}, {y2, t}});
    CHECK(values_of<float>(y1) == std::vector<float>{3, 5, 7});
    CHECK(values_of<float>(y2) == std::vector<float>{2, 4, 6});
}

TEST_CASE("nested minimum, maximum and remainder keep the kernel's text linear", "[expr]") {
    Expr m = host_empty(DType::float32, 4);
    for (int k = 0; k < 40; ++k) m = maximum(m, host_empty(DType::float32, 4)) % 3.0f;
    CHECK(m.source().size() < 40 * 400);
    // A reduction's map is one expression: past the limit it says to evaluate part of it first.
    Expr z = host_empty(DType::float32, 4);
    for (int k = 0; k < 10; ++k) z = minimum(z, z + 1.0f);
    CHECK_THROWS_WITH(sum(z), Contains("too large to be a reduction's map"));
    for (int k = 0; k < 10; ++k) z = minimum(z, z + 1.0f);
    CHECK_THROWS_WITH(sum(z), Contains("nests 40 operators deep") && Contains("at most 24"));
}

TEST_CASE("a deep expression is broken into locals, and one past the limit is refused at its operator", "[expr][host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    // A loop adding one array at a time: 1999 nested additions, far past the parser's nesting
    // limit if written as one expression.
    const Array x = host_array<float>({1, 2, 3}, DType::float32);
    Expr e = x;
    for (int k = 1; k < 2000; ++k) e = e + x;
    CHECK(values_of<float>(e.eval()) == std::vector<float>{2000, 4000, 6000});
    CHECK(sum(x * 2.0f + 1.0f).valid());  // shallow reductions are unaffected
    Expr deep = x;
    for (int k = 0; k < detail::kMaxExprHeight; ++k) deep = deep * 1.0f;
    CHECK_THROWS_WITH(deep + x, Contains("+") && Contains("would nest 2049 operators deep") && Contains("evaluate part of it"));
}

TEST_CASE("integer fmod, remainder and shifts give NumPy's values where C's are undefined", "[expr][host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const std::int32_t lo = std::numeric_limits<std::int32_t>::min();
    const Array a = host_array<std::int32_t>({7, -7, 7, -7, 5, lo, lo}, DType::int32);
    const Array b = host_array<std::int32_t>({3, 3, -3, -3, 0, -1, 0}, DType::int32);
    CHECK(fmod(a, b).dtype() == DType::int32);  // NumPy keeps integers integral
    CHECK(values_of<std::int32_t>(fmod(a, b)) == std::vector<std::int32_t>{1, -1, 1, -1, 0, 0, 0});  // the dividend's sign
    CHECK(values_of<std::int32_t>(a % b) == std::vector<std::int32_t>{1, 2, -2, -1, 0, 0, 0});
    CHECK(fmod(host_empty(DType::int16, 2), 2.5).dtype() == DType::float64);
    CHECK_THROWS_WITH(fmod(host_empty(DType::bool_, 2), true), Contains("fmod of booleans"));
    const Array v = host_array<std::int8_t>({1, -1, 64, -128}, DType::int8);
    const Array s = host_array<std::int8_t>({8, 9, 1, -1}, DType::int8);
    CHECK(values_of<std::int8_t>(v << s) == std::vector<std::int8_t>{0, 0, -128, 0});
    CHECK(values_of<std::int8_t>(v >> s) == std::vector<std::int8_t>{0, -1, 32, -1});
    const Array u = host_array<std::uint32_t>({1, 0x80000000u}, DType::uint32);
    CHECK(values_of<std::uint32_t>(u << 32u) == std::vector<std::uint32_t>{0, 0});
    CHECK(values_of<std::uint32_t>(u >> 31u) == std::vector<std::uint32_t>{0, 1});
}

TEST_CASE("comparing integers with a number outside their dtype answers as NumPy 2 does", "[expr][host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const Array u8 = host_array<std::uint8_t>({0, 7, 255}, DType::uint8);
    const Array i8 = host_array<std::int8_t>({-128, 0, 127}, DType::int8);
    const auto all = [](const Expr& e, unsigned char want) {
        REQUIRE(e.dtype() == DType::bool_);
        return values_of<unsigned char>(e.eval()) == std::vector<unsigned char>(3, want);
    };
    CHECK(all(u8 == -1, 0));
    CHECK(all(u8 != -1, 1));
    CHECK(all(u8 > -1, 1));
    CHECK(all(u8 >= -1, 1));
    CHECK(all(u8 < -1, 0));
    CHECK(all(u8 < 256, 1));
    CHECK(all(u8 <= 256, 1));
    CHECK(all(u8 > 256, 0));
    CHECK(all(-1 < u8, 1));    // the number on the left
    CHECK(all(-1 > u8, 0));
    CHECK(all(300 > u8, 1));
    CHECK(all(300 <= u8, 0));
    CHECK(all(i8 > -129, 1));
    CHECK(all(i8 < 128, 1));
    CHECK(all(i8 == 1000, 0));
    CHECK_THROWS_WITH(u8 + -1, Contains("does not fit uint8"));  // arithmetic still refuses, as NumPy 2
}

TEST_CASE("min and max of an empty expression are refused as NumPy refuses them", "[expr]") {
    const Array x = host_empty(DType::float32, 0);
    CHECK_THROWS_WITH(min(x * 2.0f), Contains("kjit::min") && Contains("zero elements") && Contains("no identity"));
    CHECK_THROWS_WITH(max(x + x), Contains("kjit::max"));
}

TEST_CASE("integer and float remainders take the divisor's sign, small integers wrap, NaN wins minimum", "[expr][host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const Array a = host_array<std::int32_t>({7, -7, 7, -7, 5}, DType::int32), b = host_array<std::int32_t>({3, 3, -3, -3, 0}, DType::int32);
    CHECK(values_of<std::int32_t>(a % b) == std::vector<std::int32_t>{1, 2, -2, -1, 0});  // NumPy's; by zero: 0
    const Array fa = host_array<double>({7.5, -7.5, 7.5}, DType::float64), fb = host_array<double>({2, 2, -2}, DType::float64);
    CHECK(values_of<double>(fa % fb) == std::vector<double>{1.5, 0.5, -0.5});
    const Array i8 = host_array<std::int8_t>({100, -100, 7}, DType::int8);
    CHECK(values_of<std::int8_t>(i8 + i8) == std::vector<std::int8_t>{-56, 56, 14});  // int8 arithmetic wraps, as NumPy's
    const Array nan = host_array<float>({1, NAN, 3}, DType::float32), two = host_array<float>({2, 2, NAN}, DType::float32);
    const std::vector<float> m = values_of<float>(minimum(nan, two));
    CHECK(m[0] == 1);
    CHECK(std::isnan(m[1]));
    CHECK(std::isnan(m[2]));
    CHECK(values_of<unsigned char>(isnan(nan)) == std::vector<unsigned char>{0, 1, 0});
}

TEST_CASE("a reduction of an expression is one kernel with the expression as its map", "[expr][host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const std::size_t n = 10000;
    const std::vector<float> xv = random_floats(n, -3, 3, 4);
    const Array x = host_array(xv, DType::float32);
    const float m = 0.25f;
    double want = 0, want_max = -1e30;
    for (float v : xv) {
        want += double(v - m) * double(v - m);
        want_max = std::max(want_max, double(std::abs(v)));
    }
    const Array s = sum((x - m) * (x - m));
    REQUIRE(s.dtype() == DType::float32);
    CHECK(std::abs(values_of<float>(s)[0] - want) <= 1e-4 * want);
    CHECK(values_of<float>(max(abs(x)))[0] == static_cast<float>(want_max));
    CHECK(std::abs(values_of<float>(mean((x - m) * (x - m)))[0] - want / n) <= 1e-4 * want / n);
    const auto at_max = std::max_element(xv.begin(), xv.end(), [&](float p, float q) { return std::abs(p - m) < std::abs(q - m); });
    CHECK(values_of<std::int64_t>(argmax(abs(x - m)))[0] == at_max - xv.begin());
    CHECK(values_of<std::int64_t>(argmin(x))[0] == std::min_element(xv.begin(), xv.end()) - xv.begin());
    // NumPy's answers: the first of equal extremes, the first NaN; along one axis too.
    const Array ties = host_array<float>({1, 3, 3, 0, 3, 2}, DType::float32);
    CHECK(values_of<std::int64_t>(argmax(ties * 2.0f))[0] == 1);
    CHECK(values_of<std::int64_t>(argmin(ties - 1.0f))[0] == 3);
    const Array with_nan = host_array<float>({1, NAN, 5, NAN}, DType::float32);
    CHECK(values_of<std::int64_t>(argmax(with_nan + 1.0f))[0] == 1);
    CHECK(values_of<std::int64_t>(argmin(with_nan * 1.0f))[0] == 1);
    const Array per_row = argmax(abs(x.reshape({100, 100}) - m), ReduceOptions{{}, std::vector<int>{1}});
    const std::vector<std::int64_t> pr = values_of<std::int64_t>(per_row);
    for (std::size_t i = 0; i < 100; i += 9) {
        const auto row = xv.begin() + static_cast<std::ptrdiff_t>(i * 100);
        const auto best = std::max_element(row, row + 100, [&](float p, float q) { return std::abs(p - m) < std::abs(q - m); });
        CHECK(pr[i] == best - row);
    }
    CHECK_THROWS_WITH(argmax(x.reshape({100, 100}) * 1.0f, ReduceOptions{{}, std::vector<int>{0, 1}}), Contains("one axis or none"));
    // Along an axis, into a given output.
    const Array rows = host_empty(DType::float32, 100);
    sum(x.reshape({100, 100}) * 2.0f, ReduceOptions{{}, std::vector<int>{1}}, rows);
    const std::vector<float> r = values_of<float>(rows);
    for (std::size_t i = 0; i < 100; ++i) {
        double w = 0;
        for (std::size_t j = 0; j < 100; ++j) w += 2.0 * xv[i * 100 + j];
        REQUIRE(std::abs(r[i] - w) <= 1e-4 * (std::abs(w) + 1));
    }
}

TEST_CASE("a ReductionKernel takes expressions as inputs, fused into its map", "[expr][host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const std::size_t n = 4000;
    const std::vector<float> av = random_floats(n, -2, 2, 5), bv = random_floats(n, -2, 2, 6);
    const Array a = host_array(av, DType::float32), b = host_array(bv, DType::float32);
    const ReductionKernel l2("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2");
    double want = 0;
    for (std::size_t k = 0; k < n; ++k) want += (double(av[k]) - bv[k]) * (double(av[k]) - bv[k]);
    const Array d = reduce(l2, {a - b});
    REQUIRE(d.dtype() == DType::float32);  // T bound by the expression's dtype
    CHECK(std::abs(values_of<float>(d)[0] - std::sqrt(want)) <= 1e-5 * std::sqrt(want));
    // A plain array is passed as it is; a scalar parameter takes a number; outputs may be given.
    const ReductionKernel weighted("T x, T w, float32 scale", "float32 y", "x * w * scale", "a + b", "y = a", "0", "weighted");
    const Array out = host_empty(DType::float32, 1);
    reduce(weighted, {abs(a), b, 0.5f, out.reshape({})});
    double want_w = 0;
    for (std::size_t k = 0; k < n; ++k) want_w += std::abs(double(av[k])) * bv[k] * 0.5;
    CHECK(std::abs(values_of<float>(out)[0] - want_w) <= 1e-4 * (std::abs(want_w) + 1));
    // An int8 expression for a float64 parameter is converted as an array would be.
    const ReductionKernel total("float64 x", "float64 y", "x", "a + b", "y = a", "0", "total");
    const Array i8 = host_array<std::int8_t>({100, 100, -7}, DType::int8);
    CHECK(values_of<double>(reduce(total, {i8 + i8}))[0] == -56 - 56 - 14);  // int8 wraps first, as NumPy's
    // Mistakes name the kernel and the argument.
    CHECK_THROWS_WITH(reduce(l2, {a, b, a, b}), Contains("'l2'") && Contains("takes 1 inputs"));
    const ReductionKernel raw_k("raw T t, T x", "T y", "x + t[0]", "a + b", "y = a", "0", "rawk");
    CHECK_THROWS_WITH(reduce(raw_k, {a + b, a}), Contains("raw input 't'") && Contains("not an expression"));
    const ReductionKernel two("T x, T z", "T y", "x * z", "a + b", "y = a", "0", "two");
    CHECK_THROWS_WITH(reduce(two, {a * 2.0f, host_empty(DType::float64, n)}), Contains("input 'z' is float64") && Contains("binds T to float32"));
    CHECK_THROWS_WITH(reduce(two, {a * 2.0f, Expr(host_empty(DType::float64, n)) + 1.0}), Contains("have dtypes float32 and float64"));
}

TEST_CASE("a loop of changing scalars and sizes compiles its expression once", "[expr][nvrtc]") {
    const kjit::test::ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    kjit::configure_cache(kjit::test::cache_in(work.path() / "cache"));
    const kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    const std::uint64_t before = kjit::cache_stats().compiles;
    for (int k = 0; k < 100; ++k) {
        const std::int64_t n = 100000 + 1000 * k;  // sizes that take the same variant
        const Array x = Array::empty({n}, DType::float32, Device::cuda(0));
        const Array y = Array::empty({n}, DType::float32, Device::cuda(0));
        eval(y, sqrt(static_cast<float>(k) * x + 1.0f) * y);
    }
    CHECK(kjit::cache_stats().compiles == before + 1);
}

TEST_CASE("expressions on the GPU: fused elementwise, in place, several outputs, reductions, captured", "[expr][gpu]") {
    KJIT_REQUIRE_GPU();
    const Stream s = Stream::create();
    const std::int64_t n = (1 << 20) + 77;
    const kjit::test::DeviceData x = kjit::test::random_device(DType::float32, {n});
    const kjit::test::DeviceData c = kjit::test::random_device(DType::float32, {n});
    const auto xv = [&](std::size_t k) { return kjit::test::element_value(x.host, DType::float32, k).real(); };
    const auto cv = [&](std::size_t k) { return kjit::test::element_value(c.host, DType::float32, k).real(); };
    const CallOptions on{s};
    // z = sqrt(a*|x| + b) * c: one kernel, checked against double precision.
    const Array z = (sqrt(1.5f * abs(x.device) + 0.25f) * c.device).eval(on);
    CHECK(kjit::test::mismatches(z, [&](std::size_t k) { return std::sqrt(1.5 * std::abs(xv(k)) + 0.25) * cv(k); }, 1e-5, 1e-6) == 0);
    // where on float16, in place into a poisoned output.
    const Array h = Expr(x.device).astype(DType::float16).eval(on);
    const Array hy = kjit::test::poisoned(DType::float16, {n}, s);
    eval(hy, where(h > 0, h, 0.1 * h), on);
    CHECK(hy.dtype() == DType::float16);
    CHECK(kjit::test::mismatches(hy, [&](std::size_t k) {
              const double v = static_cast<double>(static_cast<float>(kjit::half(static_cast<float>(xv(k)))));
              return v > 0 ? v : 0.1 * v;
          }, 2e-3, 1e-4) == 0);
    // Two outputs in one kernel.
    const Array lo = kjit::test::poisoned(DType::float32, {n}, s), hi = kjit::test::poisoned(DType::float32, {n}, s);
    eval({{lo, minimum(x.device, c.device)}, {hi, maximum(x.device, c.device)}}, on);
    CHECK(kjit::test::mismatches(lo, [&](std::size_t k) { return std::min(xv(k), cv(k)); }, 0, 0) == 0);
    CHECK(kjit::test::mismatches(hi, [&](std::size_t k) { return std::max(xv(k), cv(k)); }, 0, 0) == 0);
    // A reduction at the root, against a double sum.
    double want = 0;
    for (std::size_t k = 0; k < static_cast<std::size_t>(n); ++k) want += (xv(k) - 0.5) * (xv(k) - 0.5);
    const Array ss = sum((x.device - 0.5f) * (x.device - 0.5f), ReduceOptions{on});
    CHECK(kjit::test::mismatches(ss, [&](std::size_t) { return want; }, 1e-4, 0) == 0);
    // A user's ReductionKernel over an expression, one kernel.
    const ReductionKernel l2("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2");
    double want_d = 0;
    for (std::size_t k = 0; k < static_cast<std::size_t>(n); ++k) want_d += (xv(k) - cv(k)) * (xv(k) - cv(k));
    const Array dist = reduce(l2, {x.device - c.device}, ReduceOptions{on});
    CHECK(kjit::test::mismatches(dist, [&](std::size_t) { return std::sqrt(want_d); }, 1e-5, 0) == 0);
    // Integer remainder and shifts where C leaves them undefined.
    const auto ints = [](std::vector<std::int32_t> v, Device d) { return Array::from_host(v.data(), DType::int32, {5}, d); };
    const Array ia = ints({7, -7, 7, INT32_MIN, 5}, Device::cuda(0)), ib = ints({-3, 3, 0, -1, 40}, Device::cuda(0));
    CHECK(kjit::test::to_host((ia % ib).eval(on)) == kjit::test::to_host(ints({-2, 2, 0, 0, 5}, Device::cpu())));
    CHECK(kjit::test::to_host((ia << ib).eval(on)) == kjit::test::to_host(ints({0, -56, 7, 0, 0}, Device::cpu())));
    // Captured and replayed: the same bits.
    const Array zz = kjit::test::poisoned(DType::float32, {n}, s);
    const Graph g = Graph::capture(s, [&] { eval(zz, sqrt(1.5f * abs(x.device) + 0.25f) * c.device); });
    g.launch(s);
    s.synchronize();
    CHECK(kjit::test::to_host(zz) == kjit::test::to_host(z));
}

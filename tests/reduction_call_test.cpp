// ReductionKernel calls on the GPU: every dtype, axes and keepdims, every strategy and layout,
// against a host reference (exact modular arithmetic for integers, double for floats) on fresh
// random data with outputs poisoned first; determinism, empty and size-1 axes, errors.
#include "test_support.hpp"
#include "gpu_data.hpp"

#include <cmath>
#include <complex>
#include <cstring>

#include "kjit/array.hpp"
#include "kjit/error.hpp"
#include "kjit/reduction_kernel.hpp"
#include "kjit/stream.hpp"

using kjit::Array;
using kjit::DType;
using kjit::ReduceOptions;
using kjit::ReductionKernel;
using kjit::Shape;
using kjit::test::DeviceData;
using kjit::test::mismatches;
using kjit::test::poisoned;
using kjit::test::random_device;
using kjit::test::to_host;
using Catch::Matchers::Contains;

namespace {

// The output (flat, C order over the kept axes) each element of `shape` (flat, C order) reduces into.
std::vector<std::size_t> output_index(const Shape& shape, const std::vector<int>& axes) {
    const std::int64_t n = kjit::shape_size(shape);
    std::vector<std::size_t> out(static_cast<std::size_t>(n));
    for (std::int64_t flat = 0; flat < n; ++flat) {
        std::int64_t rest = flat, index = 0, stride = 1;
        for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
            const std::int64_t k = rest % shape[static_cast<std::size_t>(d)];
            rest /= shape[static_cast<std::size_t>(d)];
            if (std::find(axes.begin(), axes.end(), d) != axes.end()) continue;
            index += k * stride;
            stride *= shape[static_cast<std::size_t>(d)];
        }
        out[static_cast<std::size_t>(flat)] = static_cast<std::size_t>(index);
    }
    return out;
}

std::vector<int> all_axes(std::size_t ndim) {
    std::vector<int> a;
    for (std::size_t d = 0; d < ndim; ++d) a.push_back(static_cast<int>(d));
    return a;
}

// The logical elements of a view of device data, C order: the same view taken on a host copy.
std::vector<unsigned char> host_view(const DeviceData& d, const std::function<Array(const Array&)>& view) {
    const Array host = Array::from_host(d.host.data(), d.device.dtype(), d.device.shape(), kjit::Device::cpu());
    return kjit::test::host_bytes_c_order(view(host));
}

// A sum kernel for `t`: integers accumulate in 64 bits (wrapping), floats in at least float32.
ReductionKernel sum_kernel(DType t) {
    const std::string r = t.is_complex() ? std::string(t.name())
                          : t == DType::float64 ? "float64"
                          : t.is_floating()     ? "float32"
                          : t == DType::uint64  ? "uint64"
                                                : "int64";
    kjit::KernelOptions o;
    o.reduce_type = r;
    return ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "rsum", o);
}

// The reference sums of `values` (C order over `shape`) over `axes`, as `t`'s result would hold them.
std::vector<std::complex<double>> reference_sums(const std::vector<unsigned char>& values, DType t, const Shape& shape,
                                                 const std::vector<int>& axes, std::size_t outputs) {
    const std::vector<std::size_t> into = output_index(shape, axes);
    std::vector<std::complex<double>> out(outputs);
    if (t.is_floating() || t.is_complex()) {
        for (std::size_t k = 0; k < into.size(); ++k) out[into[k]] += kjit::test::element_value(values, t, k);
        return out;
    }
    // Integers: exact modular sums in 64 bits, then converted to t as C converts.
    std::vector<std::uint64_t> acc(outputs, 0);
    const int bits = static_cast<int>(8 * t.itemsize());
    for (std::size_t k = 0; k < into.size(); ++k) {
        std::uint64_t v = 0;
        std::memcpy(&v, values.data() + k * t.itemsize(), t.itemsize());
        if (t.is_signed() && bits < 64 && ((v >> (bits - 1)) & 1u)) v |= ~std::uint64_t{0} << bits;  // sign-extend
        acc[into[k]] += v;
    }
    for (std::size_t o = 0; o < outputs; ++o) {
        std::uint64_t v = acc[o];
        if (t.is_bool()) {
            out[o] = v != 0 ? 1.0 : 0.0;
            continue;
        }
        if (bits < 64) v &= (std::uint64_t{1} << bits) - 1;
        if (t.is_signed() && bits < 64 && ((v >> (bits - 1)) & 1u)) v |= ~std::uint64_t{0} << bits;
        out[o] = t.is_signed() ? static_cast<double>(static_cast<std::int64_t>(v)) : static_cast<double>(v);
    }
    return out;
}

// Relative tolerance of a sum of n values of `t` accumulated as sum_kernel does, against the sum
// of magnitudes (random data has both signs, so the result may be far smaller than its terms).
double sum_tolerance(DType t, std::int64_t n) {
    const double eps = t == DType::float64 || t == DType::complex128 ? 1.2e-16 : 6e-8;
    const double out_eps = t == DType::float16 ? 1e-3 : t == DType::bfloat16 ? 8e-3 : 0;
    return 4 * eps * std::sqrt(static_cast<double>(std::max<std::int64_t>(n, 1))) * 8 + out_eps;
}

// Checks `got` against reference sums; integers exactly, floats against the magnitudes' sums.
void check_sums(const Array& got, const std::vector<unsigned char>& values, DType t, const Shape& shape,
                const std::vector<int>& axes) {
    const std::vector<std::complex<double>> want = reference_sums(values, t, shape, axes, static_cast<std::size_t>(got.size()));
    if (!t.is_floating() && !t.is_complex()) {
        CHECK(mismatches(got, [&](std::size_t k) { return want[k]; }, 0) == 0);
        return;
    }
    // Magnitudes: the scale an accumulated rounding error is relative to.
    std::vector<double> scale(static_cast<std::size_t>(got.size()), 0);
    const std::vector<std::size_t> into = output_index(shape, axes);
    for (std::size_t k = 0; k < into.size(); ++k) scale[into[k]] += std::abs(kjit::test::element_value(values, t, k));
    std::int64_t n = 1;
    for (int a : axes) n *= shape[static_cast<std::size_t>(a)];
    const double tol = sum_tolerance(t, n);
    const std::vector<unsigned char> bytes = to_host(got);
    std::size_t wrong = 0;
    for (std::size_t k = 0; k < static_cast<std::size_t>(got.size()); ++k) {
        const std::complex<double> g = kjit::test::element_value(bytes, t, k);
        if (!(std::abs(g - want[k]) <= tol * scale[k] + tol * std::abs(want[k])) && ++wrong <= 5)
            UNSCOPED_INFO("output " << k << ": got " << g << ", want " << want[k] << " (scale " << scale[k] << ")");
    }
    CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("a sum reduces every dtype over every combination of axes, with and without keepdims", "[gpu][reduction]") {
    KJIT_REQUIRE_GPU();
    INFO("seed " << kjit::test::seed());
    const Shape shape{5, 37, 129};
    const std::vector<std::vector<int>> axis_sets{{}, {0}, {1}, {2}, {-1}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}};
    for (const DType t : kjit::test::all_dtypes()) {
        const ReductionKernel sum = sum_kernel(t);
        const DeviceData x = random_device(t, shape);
        for (const std::vector<int>& axes : axis_sets) {
            for (const bool keepdims : {false, true}) {
                INFO(t.name() << " axes " << axes.size() << (axes.empty() ? "" : " first " + std::to_string(axes[0]))
                              << " keepdims " << keepdims);
                ReduceOptions o;
                o.keepdims = keepdims;
                if (!axes.empty()) o.axis = axes;
                std::vector<int> norm = axes.empty() ? all_axes(shape.size()) : axes;
                for (int& a : norm)
                    if (a < 0) a += static_cast<int>(shape.size());
                Shape want_shape;
                for (std::size_t d = 0; d < shape.size(); ++d) {
                    const bool reduced = std::find(norm.begin(), norm.end(), static_cast<int>(d)) != norm.end();
                    if (!reduced) want_shape.push_back(shape[d]);
                    else if (keepdims) want_shape.push_back(1);
                }
                const Array y = sum({x.device}, o);
                REQUIRE(y.shape() == want_shape);
                REQUIRE(y.dtype() == t);
                check_sums(y, x.host, t, shape, norm);
                // Into a given, poisoned output.
                const Array out = poisoned(t, want_shape);
                sum.launch({x.device, out}, o);
                check_sums(out, x.host, t, shape, norm);
            }
        }
    }
}

TEST_CASE("each strategy and layout: rows, long rows, columns, split columns, views, broadcasts", "[gpu][reduction]") {
    KJIT_REQUIRE_GPU();
    INFO("seed " << kjit::test::seed());
    const DType t = DType::float64;
    const ReductionKernel sum = sum_kernel(t);
    struct Case {
        const char* what;
        Shape shape;
        std::vector<int> axes;
        std::function<Array(const Array&)> view;  // applied to a (larger) array of `shape`
    };
    const auto same = [](const Array& a) { return a; };
    const std::vector<Case> cases{
        {"full, odd length", {1000003}, {0}, same},
        {"full, misaligned start", {1000003}, {0}, [](const Array& a) { return a.slice(0, {1, {}, 1}); }},
        {"full, reversed", {4099}, {0}, [](const Array& a) { return a.slice(0, {{}, {}, -1}); }},
        {"full over two axes of a transposed view", {300, 301}, {0, 1}, [](const Array& a) { return a.transpose(); }},
        {"rows, one warp each", {3000, 77}, {1}, same},
        {"long rows, one block each", {3, 200001}, {1}, same},
        {"columns, one thread each", {50, 40000}, {0}, same},
        {"split columns", {5000, 300}, {0}, same},
        {"split columns of a column slice", {4000, 300}, {0}, [](const Array& a) { return a.slice(1, {7, 250, 1}); }},
        {"a transposed input reduced along its strided axis", {700, 900}, {1}, [](const Array& a) { return a.transpose(); }},
        {"stepped slices", {64, 90, 33}, {0, 2}, [](const Array& a) { return a.slice(1, {{}, {}, 3}).slice(2, {1, {}, 2}); }},
        {"middle axis of a 4-d array", {6, 50, 7, 11}, {1}, same},
        {"outer and inner axes of a 4-d array", {6, 50, 7, 11}, {0, 3}, same},
        {"size-1 axes", {1, 7, 1, 300}, {0, 2}, same},
        {"a broadcast row", {1, 513}, {0}, [](const Array& a) { return a.broadcast_to({200, 513}); }},
    };
    for (const Case& c : cases) {
        INFO(c.what);
        const DeviceData x = random_device(t, c.shape);
        const Array view = c.view(x.device);
        const std::vector<unsigned char> values = host_view(x, c.view);
        ReduceOptions o;
        o.axis = c.axes;
        const Array y = sum({view}, o);
        check_sums(y, values, t, view.shape(), c.axes);
    }
}

TEST_CASE("two inputs broadcast together, scalars, inputs of other dtypes, several outputs, i and n", "[gpu][reduction]") {
    KJIT_REQUIRE_GPU();
    INFO("seed " << kjit::test::seed());
    // A weighted dot product of each row with a broadcast vector; a scalar scales it.
    const ReductionKernel dot("T x, T w, T s", "T y", "x * w * s", "a + b", "y = a", "0", "wdot");
    const DeviceData x = random_device(DType::float64, {300, 1001});
    const DeviceData w = random_device(DType::float64, {1001});
    ReduceOptions rows;
    rows.axis = std::vector<int>{1};
    const Array y = dot({x.device, w.device, 0.5}, rows);
    REQUIRE(y.shape() == Shape{300});
    CHECK(mismatches(y, [&](std::size_t r) {
              std::complex<double> s = 0;
              for (std::size_t k = 0; k < 1001; ++k)
                  s += kjit::test::element_value(x.host, DType::float64, r * 1001 + k) * kjit::test::element_value(w.host, DType::float64, k);
              return 0.5 * s;
          }, 1e-12, 1e-12) == 0);

    // int32 data into a float64 parameter (converted as loaded); mean and sum as two outputs
    // through post's `n`, and `i` (the output's index) in post.
    const ReductionKernel stats("float64 x", "float64 mean, float64 sum_plus_i", "x", "a + b", "mean = a / n; sum_plus_i = a + i",
                                "0", "stats");
    const DeviceData v = random_device(DType::int32, {40, 333});
    ReduceOptions cols;
    cols.axis = std::vector<int>{0};
    const kjit::Outputs out = stats({v.device}, cols);
    REQUIRE(out.size() == 2);
    std::vector<double> sums(333, 0);
    for (std::size_t k = 0; k < 40 * 333; ++k) sums[k % 333] += kjit::test::element_value(v.host, DType::int32, k).real();
    CHECK(mismatches(out[0], [&](std::size_t c) { return sums[c] / 40; }, 1e-12) == 0);
    CHECK(mismatches(out[1], [&](std::size_t c) { return sums[c] + static_cast<double>(c); }, 1e-12) == 0);

    // map's `i` is the element's index within its reduction: sum of i over each row is n(n-1)/2.
    const ReductionKernel index_sum("T x", "int64 y", "(long long)i + 0 * x", "a + b", "y = a", "0", "isum");
    ReduceOptions last;
    last.axis = std::vector<int>{-1};
    const Array is = index_sum({random_device(DType::float32, {17, 5000}).device}, last);
    CHECK(mismatches(is, [](std::size_t) { return 5000.0 * 4999 / 2; }, 0) == 0);
}

TEST_CASE("the same input gives the same bits on every run, and NaN propagates", "[gpu][reduction]") {
    KJIT_REQUIRE_GPU();
    const ReductionKernel sum = sum_kernel(DType::float32);
    const DeviceData x = random_device(DType::float32, {1 << 24});
    const DeviceData m = random_device(DType::float32, {20000, 100});
    ReduceOptions cols;
    cols.axis = std::vector<int>{0};
    const std::vector<unsigned char> first_full = to_host(sum({x.device}));
    const std::vector<unsigned char> first_cols = to_host(sum({m.device}, cols));
    for (int run = 0; run < 10; ++run) {
        CHECK(to_host(sum({x.device})) == first_full);
        CHECK(to_host(sum({m.device}, cols)) == first_cols);
    }
    // One NaN poisons its own sum only.
    std::vector<unsigned char> with_nan = m.host;
    const float nan = std::nanf("");
    std::memcpy(with_nan.data() + (5 * 100 + 42) * 4, &nan, 4);
    const Array y = sum({Array::from_host(with_nan.data(), DType::float32, {20000, 100}, kjit::Device::cuda(0))}, cols);
    const std::vector<unsigned char> got = to_host(y);
    for (std::size_t c = 0; c < 100; ++c) CHECK(std::isnan(kjit::test::element_value(got, DType::float32, c).real()) == (c == 42));
}

TEST_CASE("empty reductions give the identity, or an error without one; empty outputs launch nothing", "[gpu][reduction]") {
    KJIT_REQUIRE_GPU();
    const ReductionKernel sum = sum_kernel(DType::float32);
    const ReductionKernel plus_one("T x", "T y", "x", "a + b", "y = a + 1", "0", "plus_one");
    const ReductionKernel no_identity("T x", "T y", "x", "max(a, b)", "y = a", "", "maxnoid");
    const Array empty = Array::empty({0}, DType::float32, kjit::Device::cuda(0));
    CHECK(mismatches(plus_one({empty}), [](std::size_t) { return 1.0; }, 0) == 0);
    const Array rows_empty = Array::empty({3, 0}, DType::float32, kjit::Device::cuda(0));
    ReduceOptions last;
    last.axis = std::vector<int>{1};
    const Array per_row = plus_one({rows_empty}, last);
    REQUIRE(per_row.shape() == Shape{3});
    CHECK(mismatches(per_row, [](std::size_t) { return 1.0; }, 0) == 0);
    const Array none = sum({Array::empty({0, 5}, DType::float32, kjit::Device::cuda(0))}, last);
    CHECK(none.shape() == Shape{0});
    CHECK_THROWS_WITH(no_identity({empty}), Contains("reducing no elements") && Contains("needs an identity"));
    // Without an identity the first element starts each reduction.
    const DeviceData x = random_device(DType::float32, {1000, 7});
    const Array mx = no_identity({x.device}, last);
    CHECK(mismatches(mx, [&](std::size_t r) {
              double best = -1e300;
              for (std::size_t k = 0; k < 7; ++k) best = std::max(best, kjit::test::element_value(x.host, DType::float32, r * 7 + k).real());
              return best;
          }, 0) == 0);
    const Array mx_all = no_identity({x.device});
    CHECK(mismatches(mx_all, [&](std::size_t) {
              double best = -1e300;
              for (std::size_t k = 0; k < 7000; ++k) best = std::max(best, kjit::test::element_value(x.host, DType::float32, k).real());
              return best;
          }, 0) == 0);
}

TEST_CASE("wrong reduction calls fail with clear errors and leave the kernel usable", "[gpu][reduction]") {
    KJIT_REQUIRE_GPU();
    const ReductionKernel sum = sum_kernel(DType::float32);
    const DeviceData x = random_device(DType::float32, {4, 5});
    ReduceOptions bad;
    bad.axis = std::vector<int>{2};
    CHECK_THROWS_WITH(sum({x.device}, bad), Contains("rsum") && Contains("axis 2 is out of range") && Contains("(4, 5)"));
    bad.axis = std::vector<int>{0, -2};
    CHECK_THROWS_WITH(sum({x.device}, bad), Contains("given twice"));
    ReduceOptions rows;
    rows.axis = std::vector<int>{1};
    const Array wrong = Array::empty({5}, DType::float32, kjit::Device::cuda(0));
    CHECK_THROWS_WITH(sum.launch({x.device, wrong}, rows), Contains("output 'y' has shape (5,)") && Contains("gives (4,)"));
    CHECK_THROWS_AS(sum({x.device, x.device, x.device}), kjit::TypeError);
    CHECK_THROWS_WITH(sum.launch({x.device}), Contains("launch() needs every output"));
    // Host arrays run on the host back end; mixing them with device arrays is refused.
    const Array host = Array::empty({3}, DType::float32, kjit::Device::cpu());
    CHECK_THROWS_WITH(sum.launch({host, Array::empty({}, DType::float32, kjit::Device::cuda(0))}), Contains("arrays are on both"));
    const ReductionKernel two("T x, T y", "T z", "x * y", "a + b", "z = a", "0", "two");
    CHECK_THROWS_WITH(two({x.device, random_device(DType::float32, {3}).device}), Contains("do not broadcast") && Contains("(4, 5)"));
    // An output that is a view of the input: the input is read from a copy.
    const DeviceData sq = random_device(DType::float32, {64, 64});
    const Array diag_out = sq.device.index(0, 0);  // row 0 of the input, written with column sums
    const std::vector<unsigned char> before = sq.host;
    ReduceOptions cols;
    cols.axis = std::vector<int>{0};
    sum.launch({sq.device, diag_out}, cols);
    std::vector<double> col(64, 0);
    for (std::size_t k = 0; k < 64 * 64; ++k) col[k % 64] += kjit::test::element_value(before, DType::float32, k).real();
    CHECK(mismatches(diag_out, [&](std::size_t c) { return col[c]; }, 0, 64 * 8 * 1e-6) == 0);  // 64 terms of at most 8
    // Still usable.
    const Array ok = sum({x.device}, rows);
    CHECK(ok.shape() == Shape{4});
}

TEST_CASE("a reduction on a stream of its own", "[gpu][reduction]") {
    KJIT_REQUIRE_GPU();
    const kjit::Stream s = kjit::Stream::create();
    const ReductionKernel sum = sum_kernel(DType::float64);
    const DeviceData x = random_device(DType::float64, {256, 4096});
    ReduceOptions o;
    o.axis = std::vector<int>{1};
    o.stream = s;
    const Array y = sum({x.device}, o);
    s.synchronize();
    check_sums(y, x.host, DType::float64, {256, 4096}, {1});
}

TEST_CASE("a reduction of more than 2^31 elements takes the 64-bit index path", "[gpu][reduction][large]") {
    KJIT_REQUIRE_GPU();
    // 2^31 + 3 bytes of i % 251, summed in uint64: checked against the closed form.
    const std::int64_t n = (std::int64_t{1} << 31) + 3;
    const kjit::ElementwiseKernel fill("", "uint8 x", "x = (unsigned char)(i % 251)", "fill_mod");
    const Array x = Array::empty({n}, DType::uint8, kjit::Device::cuda(0));
    fill.launch({x});
    kjit::KernelOptions o;
    o.reduce_type = "uint64";
    const ReductionKernel sum("uint8 x", "uint64 y", "x", "a + b", "y = a", "0", "big_sum", o);
    const std::uint64_t cycles = static_cast<std::uint64_t>(n) / 251, rest = static_cast<std::uint64_t>(n) % 251;
    const double want = static_cast<double>(cycles * (250 * 251 / 2) + rest * (rest - 1) / 2);
    CHECK(mismatches(sum({x}), [&](std::size_t) { return want; }, 0) == 0);
    // The same bytes as 2 rows: one block per long row.
    ReduceOptions rows;
    rows.axis = std::vector<int>{1};
    const Array two_rows = x.slice(0, {0, n - 3, 1}).reshape({2, (n - 3) / 2});
    const Array r = sum({two_rows}, rows);
    const std::vector<unsigned char> got = to_host(r);
    std::uint64_t r0 = 0, r1 = 0;
    std::memcpy(&r0, got.data(), 8);
    std::memcpy(&r1, got.data() + 8, 8);
    CHECK(r0 + r1 == cycles * (250 * 251 / 2) + (rest * (rest - 1) / 2) - (n - 1) % 251 - (n - 2) % 251 - (n - 3) % 251);
}

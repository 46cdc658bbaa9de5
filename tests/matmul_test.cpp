// kjit::matmul: errors without a GPU (pretend driver), and products on the GPU against a host
// reference in double, for every dtype, layout, batch and 1-D case.
#include "test_support.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>

#include "fake_driver.hpp"
#include "kjit/error.hpp"
#include "kjit/half.hpp"
#include "kjit/matmul.hpp"
#include "jit/kernels/ops/small_matmul.hpp"
#include "jit/kernels/ops/small_matmul_plan.hpp"

using kjit::Array;
using kjit::DType;
using kjit::Shape;
using Catch::Matchers::Contains;

namespace {

const kjit::Device gpu = kjit::Device::cuda(0);

// An operand: a random C-ordered host copy and a device array holding it.
struct Operand {
    Array device;
    std::vector<unsigned char> host;
    DType dtype;
    Shape shape;
    std::complex<double> at(const std::vector<std::int64_t>& idx) const {
        std::size_t flat = 0;
        for (std::size_t d = 0; d < shape.size(); ++d) flat = flat * static_cast<std::size_t>(shape[d]) + static_cast<std::size_t>(idx[d]);
        return kjit::test::element_value(host, dtype, flat);
    }
};
Operand random_operand(DType t, const Shape& shape) {
    Operand o;
    o.dtype = t;
    o.shape = shape;
    o.host = kjit::test::random_elements(t, kjit::shape_size(shape));
    o.device = Array::from_host(o.host.data(), t, shape, gpu);
    return o;
}

// The host product of (broadcast, promoted) operands, element by element in C order of `out`.
std::vector<std::complex<double>> reference(const Operand& a, const Operand& b, const Shape& out) {
    const Shape A = a.shape.size() == 1 ? Shape{1, a.shape[0]} : a.shape;
    const Shape B = b.shape.size() == 1 ? Shape{b.shape[0], 1} : b.shape;
    const std::int64_t m = A[A.size() - 2], k = A.back(), n = B.back();
    Shape batch = kjit::broadcast_shapes({Shape(A.begin(), A.end() - 2), Shape(B.begin(), B.end() - 2)});
    std::vector<std::complex<double>> r;
    const std::int64_t nb = kjit::shape_size(batch);
    for (std::int64_t bi = 0; bi < nb; ++bi) {
        std::vector<std::int64_t> bidx(batch.size());
        for (std::int64_t rest = bi, d = static_cast<std::int64_t>(batch.size()) - 1; d >= 0; --d) {
            bidx[static_cast<std::size_t>(d)] = rest % batch[static_cast<std::size_t>(d)];
            rest /= batch[static_cast<std::size_t>(d)];
        }
        auto index = [&](const Shape& own, const Shape& promoted, std::int64_t r0, std::int64_t c0) {
            std::vector<std::int64_t> idx;
            const std::size_t shift = batch.size() - (promoted.size() - 2);
            for (std::size_t d = 0; d + 2 < promoted.size(); ++d) idx.push_back(promoted[d] == 1 ? 0 : bidx[shift + d]);
            if (own.size() == 1) {
                idx.push_back(own.size() == promoted.size() - 1 && promoted[promoted.size() - 2] == 1 ? c0 : r0);
                return idx;
            }
            idx.push_back(r0);
            idx.push_back(c0);
            return idx;
        };
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                std::complex<double> s = 0;
                for (std::int64_t l = 0; l < k; ++l) s += a.at(index(a.shape, A, i, l)) * b.at(index(b.shape, B, l, j));
                r.push_back(s);
            }
    }
    (void)out;
    return r;
}

std::size_t mismatches(const Array& got, const std::vector<std::complex<double>>& want, double tol) {
    std::vector<unsigned char> bytes(got.nbytes());
    got.copy_to_host(bytes.data());
    REQUIRE(static_cast<std::size_t>(got.size()) == want.size());
    std::size_t wrong = 0;
    for (std::size_t k = 0; k < want.size(); ++k) {
        const std::complex<double> g = kjit::test::element_value(bytes, got.dtype(), k);
        if (!(std::abs(g - want[k]) <= tol * (1 + std::abs(want[k]))) && ++wrong <= 5)
            UNSCOPED_INFO("element " << k << ": got " << g << ", want " << want[k]);
    }
    return wrong;
}

double tolerance(DType t, std::int64_t k) {
    const double kk = static_cast<double>(std::max<std::int64_t>(k, 1));
    switch (t.id()) {
        case DType::float16: return 2e-3 * kk;
        case DType::bfloat16: return 1.6e-2 * kk;
        case DType::float32: case DType::complex64: return 2e-6 * kk;
        default: return 1e-14 * kk;
    }
}

// Runs `body` once with every product going to cuBLAS (but those cuBLAS crashes on:
// ops::cublas_crashes_on) and once with every product small enough for kjit's small-product
// kernel (jit/kernels/ops/small_matmul_plan.hpp), so both paths are checked.
template <class Body>
void on_both_paths(Body body) {
    const std::pair<const char*, std::int64_t> paths[] = {{"cuBLAS", 0}, {"small-product kernel", INT64_MAX}};
    for (const auto& [path, limit] : paths) {
        INFO("path: " << path);
        const std::int64_t before = kjit::jit::kernels::ops::set_small_matmul_limit(limit);
        try {
            body();
        } catch (...) {
            kjit::jit::kernels::ops::set_small_matmul_limit(before);
            throw;
        }
        kjit::jit::kernels::ops::set_small_matmul_limit(before);
    }
}

}  // namespace

TEST_CASE("which products go to the small-product kernel", "[matmul]") {
    using kjit::jit::kernels::ops::use_small_matmul;
    const std::int64_t before = kjit::jit::kernels::ops::set_small_matmul_limit(64 * 64 * 64);
    CHECK(use_small_matmul(64, 64, 64, 1));
    CHECK_FALSE(use_small_matmul(64, 64, 65, 1));
    CHECK(use_small_matmul(8, 8, 8, 512));
    CHECK_FALSE(use_small_matmul(8, 8, 8, 513));
    CHECK_FALSE(use_small_matmul(4, 4, 0, 1));  // k = 0: zeros, written without a kernel
    CHECK_FALSE(use_small_matmul(0, 4, 4, 1));
    // Products that would overflow 64 bits are simply large.
    CHECK_FALSE(use_small_matmul(INT64_MAX / 2, INT64_MAX / 2, 2, 1));
    kjit::jit::kernels::ops::set_small_matmul_limit(INT64_MAX);
    CHECK(use_small_matmul(1 << 16, 1 << 16, 1 << 10, 1));
    // What the grid cannot hold: more than 65535 batches or row tiles.
    CHECK_FALSE(use_small_matmul(2, 2, 2, 65536));
    CHECK_FALSE(use_small_matmul(16 * 65536, 2, 2, 1));
    kjit::jit::kernels::ops::set_small_matmul_limit(0);
    CHECK_FALSE(use_small_matmul(1, 1, 1, 1));
    kjit::jit::kernels::ops::set_small_matmul_limit(before);
    // The shapes cuBLAS crashed on (complex128 with one row or column) go to the kernel whatever
    // the limit; other dtypes and shapes do not.
    using kjit::jit::kernels::ops::cublas_crashes_on;
    CHECK(cublas_crashes_on(DType::complex128, 1, 2, 2, 1));
    CHECK(cublas_crashes_on(DType::complex128, 5000, 1, 5000, 3));
    CHECK(cublas_crashes_on(DType::complex128, 2, 2, 1, 1));
    CHECK_FALSE(cublas_crashes_on(DType::complex128, 2, 2, 2, 1));
    CHECK_FALSE(cublas_crashes_on(DType::complex64, 1, 2, 2, 1));
    CHECK_FALSE(cublas_crashes_on(DType::complex128, 1, 2, 2, 70000));  // more batches than a grid holds
}

TEST_CASE("a small product's shape and strides, read off the arrays without allocating", "[matmul]") {
    using kjit::jit::kernels::ops::describe_small_matmul;
    auto host = [](const Shape& shape) { return Array::empty(shape, DType::float32, kjit::Device::cpu()); };
    auto strides = [](const std::int64_t (&s)[3]) { return std::vector<std::int64_t>(s, s + 3); };
    using V = std::vector<std::int64_t>;
    kjit::jit::kernels::ops::SmallMatmul s;
    REQUIRE(describe_small_matmul(host({2, 3}), host({3, 4}), host({2, 4}), s));
    CHECK(V{s.m, s.n, s.k, s.batch} == V{2, 4, 3, 1});
    CHECK(strides(s.a_strides) == V{0, 3, 1});
    CHECK(strides(s.b_strides) == V{0, 4, 1});
    CHECK(strides(s.c_strides) == V{0, 4, 1});
    // A transposed operand and a transposed output go as their strides.
    REQUIRE(describe_small_matmul(host({3, 2}).transpose(), host({3, 4}), host({4, 2}).transpose(), s));
    CHECK(strides(s.a_strides) == V{0, 1, 2});
    CHECK(strides(s.c_strides) == V{0, 1, 2});
    // 1-D operands: a is one row, b one column; the result lacks that axis.
    REQUIRE(describe_small_matmul(host({3}), host({3, 4}), host({4}), s));
    CHECK(V{s.m, s.n, s.k} == V{1, 4, 3});
    CHECK(strides(s.a_strides) == V{0, 0, 1});
    CHECK(strides(s.c_strides) == V{0, 0, 1});
    REQUIRE(describe_small_matmul(host({2, 3}), host({3}), host({2}), s));
    CHECK(V{s.m, s.n, s.k} == V{2, 1, 3});
    CHECK(strides(s.b_strides) == V{0, 1, 0});
    CHECK(strides(s.c_strides) == V{0, 1, 0});
    // One batch axis, broadcast from either side.
    REQUIRE(describe_small_matmul(host({5, 2, 3}), host({3, 4}), host({5, 2, 4}), s));
    CHECK(s.batch == 5);
    CHECK(strides(s.a_strides) == V{6, 3, 1});
    CHECK(strides(s.b_strides) == V{0, 4, 1});
    CHECK(strides(s.c_strides) == V{8, 4, 1});
    REQUIRE(describe_small_matmul(host({1, 2, 3}), host({5, 3, 4}), host({5, 2, 4}), s));
    CHECK(s.a_strides[0] == 0);
    CHECK(s.b_strides[0] == 12);
    REQUIRE(describe_small_matmul(host({1, 2, 3}), host({3, 4}), host({1, 2, 4}), s));  // NumPy keeps the batch axis
    // Everything else is left to the general path.
    CHECK_FALSE(describe_small_matmul(host({2, 3}), host({3, 4}), host({2, 5}), s));     // not the result's shape
    CHECK_FALSE(describe_small_matmul(host({2, 3}), host({3, 4}), host({1, 2, 4}), s));  // nor its dimensions
    CHECK_FALSE(describe_small_matmul(host({2, 3}), host({4, 4}), host({2, 4}), s));     // inner sizes differ
    CHECK_FALSE(describe_small_matmul(host({2, 2, 3}), host({3, 3, 4}), host({3, 2, 4}), s));  // batches do not broadcast
    CHECK_FALSE(describe_small_matmul(host({2, 1, 2, 3}), host({3, 4}), host({2, 1, 2, 4}), s));  // two batch axes
    CHECK_FALSE(describe_small_matmul(host({5, 2, 3}), host({3, 4}), host({1, 2, 4}).broadcast_to({5, 2, 4}), s));  // batches would collide
    CHECK_FALSE(describe_small_matmul(host({2, 0}), host({0, 4}), host({2, 4}), s));  // k = 0
    CHECK_FALSE(describe_small_matmul(host({}), host({3}), host({}), s));             // a scalar
}

TEST_CASE("matmul's errors come before any GPU work", "[matmul]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_driver(), 1);
    const Array a = Array::empty({2, 3}, DType::float32, gpu), b = Array::empty({4, 5}, DType::float32, gpu);
    CHECK_THROWS_WITH(kjit::matmul(a, b), Contains("a (2, 3) and b (4, 5) do not multiply"));
    const Array i = Array::empty({3, 4}, DType::int32, gpu), j = Array::empty({4, 2}, DType::int32, gpu);
    CHECK_THROWS_AS(kjit::matmul(i, j), kjit::TypeError);
    const Array c = Array::empty({3, 4}, DType::float32, gpu);
    CHECK_THROWS_WITH(kjit::matmul(a, c, Array::empty({2, 5}, DType::float32, gpu)), Contains("out has shape (2, 5)") && Contains("is (2, 4)"));
    CHECK_THROWS_WITH(kjit::matmul(a, c, Array::empty({2, 4}, DType::float64, gpu)), Contains("out is float64 but a @ b is float32"));
    const Array host = Array::empty({3, 4}, DType::float32, kjit::Device::cpu());
    CHECK_THROWS_WITH(kjit::matmul(a, host), Contains("host memory"));
    CHECK_THROWS_WITH(kjit::matmul(Array(), c), Contains("empty"));
}

TEST_CASE("matmul of every float and complex dtype matches a double reference", "[gpu][matmul]") {
    KJIT_REQUIRE_GPU();
    on_both_paths([&] {
        for (DType t : {DType(DType::float16), DType(DType::bfloat16), DType(DType::float32), DType(DType::float64),
                        DType(DType::complex64), DType(DType::complex128)}) {
            INFO(t.name());
            const Operand a = random_operand(t, {37, 64}), b = random_operand(t, {64, 29});
            const Array c = kjit::matmul(a.device, b.device);
            CHECK(c.dtype() == t);
            CHECK(c.shape() == Shape{37, 29});
            CHECK(mismatches(c, reference(a, b, c.shape()), tolerance(t, 64)) == 0);
        }
    });
}

TEST_CASE("matmul takes transposed operands and outputs without copies, and other views with them", "[gpu][matmul]") {
    KJIT_REQUIRE_GPU();
    on_both_paths([&] {
        const Operand a = random_operand(DType::float64, {40, 30}), b = random_operand(DType::float64, {20, 40});
        // a.T (30, 40) @ b.T (40, 20) into a transposed output.
        Operand at = a, bt = b;
        at.shape = {30, 40};
        bt.shape = {40, 20};
        std::vector<std::complex<double>> want;
        for (std::int64_t i = 0; i < 30; ++i)
            for (std::int64_t j = 0; j < 20; ++j) {
                std::complex<double> s = 0;
                for (std::int64_t l = 0; l < 40; ++l) s += a.at({l, i}) * b.at({j, l});
                want.push_back(s);
            }
        CHECK(mismatches(kjit::matmul(a.device.transpose(), b.device.transpose()), want, 1e-13) == 0);
        const Array out = Array::empty({20, 30}, DType::float64, gpu).transpose();
        kjit::matmul(a.device.transpose(), b.device.transpose(), out);
        CHECK(mismatches(out.to(gpu), want, 1e-13) == 0);
        // Stepped slices (no unit stride): copied first.
        const Operand big = random_operand(DType::float64, {60, 40});
        const Array stepped = big.device.slice(0, {0, std::nullopt, 2});  // (30, 40), rows 0, 2, ...
        std::vector<std::complex<double>> want2;
        for (std::int64_t i = 0; i < 30; ++i)
            for (std::int64_t j = 0; j < 30; ++j) {
                std::complex<double> s = 0;
                for (std::int64_t l = 0; l < 40; ++l) s += big.at({2 * i, l}) * a.at({l, j});
                want2.push_back(s);
            }
        CHECK(mismatches(kjit::matmul(stepped, a.device), want2, 1e-13) == 0);
    });
}

TEST_CASE("matmul batches broadcast, 1-D operands, size 0, mixed dtypes, TF32", "[gpu][matmul]") {
    KJIT_REQUIRE_GPU();
    on_both_paths([&] {
        struct Case {
            Shape a, b;
        };
        for (const Case& c : std::vector<Case>{{{3, 5, 8}, {3, 8, 4}},
                                               {{3, 5, 8}, {8, 4}},
                                               {{5, 8}, {2, 3, 8, 4}},
                                               {{2, 1, 5, 8}, {4, 8, 3}},
                                               {{8}, {8, 4}},
                                               {{5, 8}, {8}},
                                               {{8}, {8}},
                                               {{2, 8}, {3, 8, 1}}}) {
            INFO("a " << kjit::shape_to_string(c.a) << " @ b " << kjit::shape_to_string(c.b));
            const Operand a = random_operand(DType::float64, c.a), b = random_operand(DType::float64, c.b);
            const Array r = kjit::matmul(a.device, b.device);
            CHECK(mismatches(r, reference(a, b, r.shape()), 1e-13) == 0);
        }
        // k = 0: zeros; m = 0: an empty result.
        const Array z = kjit::matmul(Array::empty({4, 0}, DType::float32, gpu), Array::empty({0, 3}, DType::float32, gpu));
        CHECK(mismatches(z, std::vector<std::complex<double>>(12, 0.0), 0) == 0);
        CHECK(kjit::matmul(Array::empty({0, 5}, DType::float32, gpu), Array::empty({5, 3}, DType::float32, gpu)).shape() == Shape{0, 3});
        // float16 @ float32 -> float32, computed on float32 copies.
        const Operand h = random_operand(DType::float16, {16, 32}), f = random_operand(DType::float32, {32, 8});
        const Array m = kjit::matmul(h.device, f.device);
        CHECK(m.dtype() == DType::float32);
        CHECK(mismatches(m, reference(h, f, m.shape()), tolerance(DType::float32, 32)) == 0);
        // TF32 asked for: close, not exact.
        const Operand x = random_operand(DType::float32, {64, 64}), y = random_operand(DType::float32, {64, 64});
        kjit::MatmulOptions tf32;
        tf32.allow_tf32 = true;
        CHECK(mismatches(kjit::matmul(x.device, y.device, Array(), tf32), reference(x, y, {64, 64}), 5e-3 * 64) == 0);
        // An output that is an operand: computed through a temporary.
        const Operand sq = random_operand(DType::float64, {16, 16}), other = random_operand(DType::float64, {16, 16});
        const auto want = reference(sq, other, {16, 16});
        kjit::matmul(sq.device, other.device, sq.device);
        CHECK(mismatches(sq.device, want, 1e-13) == 0);
    });
}

TEST_CASE("matmul's small-product kernel: sizes around its 16x16 tile, stepped views, a strided output", "[gpu][matmul]") {
    KJIT_REQUIRE_GPU();
    on_both_paths([&] {
        for (const Shape& mnk : std::vector<Shape>{{1, 1, 1}, {16, 16, 16}, {17, 33, 5}, {5, 3, 100}, {9, 70, 129}, {64, 64, 64}}) {
            for (DType t : {DType(DType::float32), DType(DType::float16), DType(DType::complex128)}) {
                INFO(t.name() << " m, n, k = " << kjit::shape_to_string(mnk));
                const Operand a = random_operand(t, {mnk[0], mnk[2]}), b = random_operand(t, {mnk[2], mnk[1]});
                const Array c = kjit::matmul(a.device, b.device);
                CHECK(mismatches(c, reference(a, b, c.shape()), tolerance(t, mnk[2])) == 0);
            }
        }
        // Every other row of a (a stepped view) times b, into every other column of a poisoned output.
        const Operand big = random_operand(DType::float64, {40, 24}), b = random_operand(DType::float64, {24, 9});
        const Array stepped = big.device.slice(0, {0, std::nullopt, 2});  // (20, 24)
        std::vector<double> nan(20 * 18, std::nan(""));
        const Array wide = Array::from_host(nan.data(), DType::float64, {20, 18}, gpu);
        const Array out = wide.slice(1, {0, std::nullopt, 2});  // (20, 9), column stride 2
        kjit::matmul(stepped, b.device, out);
        std::vector<std::complex<double>> want;
        for (std::int64_t i = 0; i < 20; ++i)
            for (std::int64_t j = 0; j < 9; ++j) {
                std::complex<double> s = 0;
                for (std::int64_t l = 0; l < 24; ++l) s += big.at({2 * i, l}) * b.at({l, j});
                want.push_back(s);
            }
        CHECK(mismatches(out.to(gpu), want, 1e-13) == 0);
        // The columns between were not written.
        const Array between = wide.slice(1, {1, std::nullopt, 2}).to(gpu);
        std::vector<double> host(static_cast<std::size_t>(between.size()));
        between.copy_to_host(host.data());
        CHECK(std::all_of(host.begin(), host.end(), [](double v) { return std::isnan(v); }));
    });
}

TEST_CASE("matmul's small-product kernel compiles for every dtype matmul multiplies", "[matmul][nvrtc]") {
    for (DType t : {DType(DType::float16), DType(DType::bfloat16), DType(DType::float32), DType(DType::float64),
                    DType(DType::complex64), DType(DType::complex128)}) {
        INFO(t.name());
        const kjit::Binary bin = kjit::jit::kernels::ops::small_matmul_module(t).compile("sm_90");
        CHECK(bin.arch == "sm_90");
        CHECK_FALSE(bin.cubin.empty());
    }
    CHECK_THROWS_AS(kjit::jit::kernels::ops::small_matmul_module(DType::int32), kjit::TypeError);
}

// A crash seen on the H200 (2026-12-01): cuBLAS, complex128, m = 1 or k = 1 (ops::cublas_crashes_on
// now sends those to kjit's kernel). Prints each product before making it, so that the log shows
// which call does not return; with the workaround every one returns.
TEST_CASE("diagnostic: tiny cuBLAS products of each dtype", "[.][diag]") {
    KJIT_REQUIRE_GPU();
    const std::int64_t before = kjit::jit::kernels::ops::set_small_matmul_limit(0);
    for (DType t : {DType(DType::float64), DType(DType::complex64), DType(DType::complex128)})
        for (const Shape& mnk : std::vector<Shape>{{2, 2, 2}, {1, 2, 2}, {2, 1, 2}, {2, 2, 1}, {1, 1, 1}}) {
            std::fprintf(stderr, "diag: %s %s ...\n", std::string(t.name()).c_str(), kjit::shape_to_string(mnk).c_str());
            const Operand a = random_operand(t, {mnk[0], mnk[2]}), b = random_operand(t, {mnk[2], mnk[1]});
            const Array c = kjit::matmul(a.device, b.device);
            c.to_host();
            std::fprintf(stderr, "diag: %s %s ok\n", std::string(t.name()).c_str(), kjit::shape_to_string(mnk).c_str());
        }
    kjit::jit::kernels::ops::set_small_matmul_limit(before);
}

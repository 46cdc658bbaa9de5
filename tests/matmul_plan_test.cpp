// Matrix products planned for cuBLAS: NumPy's shapes and errors, result dtypes, and every plan
// checked by running it through a host model of column-major GEMM on strided data.
#include "test_support.hpp"

#include "kjit/error.hpp"
#include "jit/kernels/ops/matmul_plan.hpp"

using kjit::DType;
using kjit::Shape;
using kjit::Strides;
using kjit::jit::kernels::ops::MatmulOperand;
using Catch::Matchers::Contains;

namespace {

// What cuBLAS's strided batched GEMM computes (column-major, op = N or T), over doubles in memory
// addressed by element offsets: C_i = op(A_i) op(B_i) for each batch i.
void host_gemm(const kjit::jit::kernels::ops::GemmPlan& p, const std::vector<double>& first, std::int64_t first_base,
               const std::vector<double>& second, std::int64_t second_base, std::vector<double>& c, std::int64_t c_base) {
    for (std::int64_t i = 0; i < p.batch; ++i)
        for (std::int64_t col = 0; col < p.n; ++col)
            for (std::int64_t row = 0; row < p.m; ++row) {
                double sum = 0;
                for (std::int64_t l = 0; l < p.k; ++l) {
                    const std::int64_t ia = p.first.transpose ? l + row * p.first.ld : row + l * p.first.ld;
                    const std::int64_t ib = p.second.transpose ? col + l * p.second.ld : l + col * p.second.ld;
                    sum += first[static_cast<std::size_t>(first_base + i * p.first.batch_stride + ia)] *
                           second[static_cast<std::size_t>(second_base + i * p.second.batch_stride + ib)];
                }
                c[static_cast<std::size_t>(c_base + i * p.c.batch_stride + row + col * p.c.ld)] = sum;
            }
}

// A strided operand over its own buffer: the element at multi-index idx is buf[base + Σ idx·stride].
struct Strided {
    MatmulOperand view;
    std::vector<double> buf;
    std::int64_t base = 0;
    double at(const std::vector<std::int64_t>& idx) const {
        std::int64_t off = base;
        for (std::size_t d = 0; d < idx.size(); ++d) off += idx[d] * view.strides[d];
        return buf[static_cast<std::size_t>(off)];
    }
};

// A view of `shape` whose storage follows `order` (a permutation: order[0] varies slowest) with
// `step` between neighbours along the last axis of that order; base 0, random contents.
Strided make(const Shape& shape, const std::vector<int>& order, std::int64_t step = 1) {
    Strided s;
    s.view.dtype = DType::float64;
    s.view.shape = shape;
    s.view.strides.assign(shape.size(), 0);
    std::int64_t stride = step;
    for (int k = static_cast<int>(order.size()) - 1; k >= 0; --k) {
        s.view.strides[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])] = stride;
        stride *= std::max<std::int64_t>(1, shape[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])]);
    }
    s.buf.resize(static_cast<std::size_t>(stride + 1));
    std::uniform_real_distribution<double> dist(-1, 1);
    for (double& x : s.buf) x = dist(kjit::test::rng());
    return s;
}

std::vector<int> c_order(std::size_t n) {
    std::vector<int> o(n);
    for (std::size_t k = 0; k < n; ++k) o[k] = static_cast<int>(k);
    return o;
}

std::vector<int> swap_last(std::size_t n) {
    std::vector<int> o = c_order(n);
    std::swap(o[n - 1], o[n - 2]);
    return o;
}

// Plans a·b into an output of `c_layout` and checks the plan's result against the definition.
void check_product(const Strided& a, const Strided& b, const std::vector<int>& c_layout) {
    const kjit::jit::kernels::ops::MatmulViews v = kjit::jit::kernels::ops::matmul_views(a.view, b.view);
    REQUIRE(kjit::jit::kernels::ops::gemm_layout_problem(v.a).empty());
    REQUIRE(kjit::jit::kernels::ops::gemm_layout_problem(v.b).empty());
    Strided c = make(v.out_shape, c_layout);
    std::fill(c.buf.begin(), c.buf.end(), std::nan(""));
    const kjit::jit::kernels::ops::GemmPlan p = kjit::jit::kernels::ops::plan_gemm(v.a, v.b, c.view);
    // The broadcast views address the same buffers as the operands.
    const Strided va{v.a, a.buf, a.base}, vb{v.b, b.buf, b.base};
    if (p.swapped)
        host_gemm(p, vb.buf, vb.base, va.buf, va.base, c.buf, c.base);
    else
        host_gemm(p, va.buf, va.base, vb.buf, vb.base, c.buf, c.base);
    const std::size_t nd = v.out_shape.size();
    std::vector<std::int64_t> idx(nd, 0);
    std::size_t wrong = 0, total = 0;
    for (;;) {
        double want = 0;
        std::vector<std::int64_t> ia = idx, ib = idx;
        for (std::int64_t l = 0; l < v.a.shape[nd - 1]; ++l) {
            ia[nd - 1] = l;
            ib[nd - 2] = l;
            want += va.at(ia) * vb.at(ib);
        }
        if (std::fabs(c.at(idx) - want) > 1e-12 || std::isnan(c.at(idx))) ++wrong;
        ++total;
        std::size_t d = nd;
        while (d > 0 && ++idx[d - 1] == v.out_shape[d - 1]) idx[--d] = 0;
        if (d == 0) break;
    }
    CHECK(total > 0);
    CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("matmul shapes follow NumPy and errors name both operands", "[matmul]") {
    using kjit::jit::kernels::ops::matmul_result_shape;
    CHECK(matmul_result_shape({2, 3}, {3, 4}) == Shape{2, 4});
    CHECK(matmul_result_shape({3}, {3, 4}) == Shape{4});
    CHECK(matmul_result_shape({2, 3}, {3}) == Shape{2});
    CHECK(matmul_result_shape({3}, {3}) == Shape{});
    CHECK(matmul_result_shape({5, 1, 2, 3}, {4, 3, 6}) == Shape{5, 4, 2, 6});
    CHECK(matmul_result_shape({0, 3}, {3, 4}) == Shape{0, 4});
    CHECK_THROWS_WITH(matmul_result_shape({2, 3}, {4, 5}),
                      Contains("a (2, 3) and b (4, 5) do not multiply: a has 3 columns, b has 4 rows"));
    CHECK_THROWS_WITH(matmul_result_shape({2, 2, 3}, {3, 3, 4}), Contains("batch dimensions do not broadcast"));
    CHECK_THROWS_AS(matmul_result_shape({}, {3}), kjit::ShapeError);
}

TEST_CASE("matmul result dtypes are NumPy's, floating or complex only", "[matmul]") {
    using kjit::jit::kernels::ops::matmul_result_dtype;
    CHECK(matmul_result_dtype(DType::float32, DType::float32) == DType::float32);
    CHECK(matmul_result_dtype(DType::float16, DType::float32) == DType::float32);
    CHECK(matmul_result_dtype(DType::float16, DType::bfloat16) == DType::float32);
    CHECK(matmul_result_dtype(DType::float32, DType::complex64) == DType::complex64);
    CHECK(matmul_result_dtype(DType::float64, DType::complex64) == DType::complex128);
    CHECK(matmul_result_dtype(DType::int16, DType::float32) == DType::float32);
    CHECK_THROWS_WITH(matmul_result_dtype(DType::int32, DType::int32), Contains("int32 @ int32 gives int32"));
}

TEST_CASE("every layout cuBLAS can take is planned without copies and computes a@b", "[matmul]") {
    const std::vector<std::pair<Shape, Shape>> shapes = {
        {{5, 3}, {3, 4}}, {{1, 3}, {3, 4}}, {{5, 3}, {3, 1}}, {{5, 1}, {1, 4}}, {{3}, {3, 4}},
        {{5, 3}, {3}},    {{3}, {3}},       {{2, 5, 3}, {2, 3, 4}}, {{2, 5, 3}, {3, 4}}, {{5, 3}, {6, 3, 4}},
        {{2, 4, 5, 3}, {2, 4, 3, 2}}, {{1, 5, 3}, {4, 3, 2}}};
    for (const auto& [sa, sb] : shapes) {
        for (int la = 0; la < 2; ++la)
            for (int lb = 0; lb < 2; ++lb)
                for (int lc = 0; lc < 2; ++lc) {
                    INFO("a " << kjit::shape_to_string(sa) << (la ? " F" : " C") << ", b " << kjit::shape_to_string(sb)
                              << (lb ? " F" : " C") << ", c" << (lc ? " F" : " C"));
                    const Strided a = make(sa, sa.size() >= 2 && la ? swap_last(sa.size()) : c_order(sa.size()));
                    const Strided b = make(sb, sb.size() >= 2 && lb ? swap_last(sb.size()) : c_order(sb.size()));
                    const Shape out = kjit::jit::kernels::ops::matmul_views(a.view, b.view).out_shape;
                    check_product(a, b, lc ? swap_last(out.size()) : c_order(out.size()));
                }
    }
}

TEST_CASE("layouts cuBLAS cannot take are named", "[matmul]") {
    using kjit::jit::kernels::ops::gemm_layout_problem;
    // Every other column and every other row: no unit stride.
    const Strided stepped = make({4, 5}, {0, 1}, 2);
    CHECK_THAT(gemm_layout_problem(stepped.view), Contains("no unit stride"));
    // A row broadcast to many rows (stride 0 along rows, 1 along columns): rows overlap.
    MatmulOperand rows{DType::float32, {4, 5}, {0, 1}};
    CHECK_THAT(gemm_layout_problem(rows), Contains("overlap"));
    // Batches that no single stride walks: a (2, 3) batch sliced along its inner batch axis.
    MatmulOperand batches{DType::float32, {2, 3, 4, 4}, {64, 32, 4, 1}};
    CHECK_THAT(gemm_layout_problem(batches), Contains("batch"));
    // A batch broadcast along one axis but not another: (2, 1) against (2, 4) walks (15, 0).
    const Strided partly = make({2, 1, 5, 3}, {0, 1, 2, 3});
    const Strided other = make({4, 3, 2}, {0, 1, 2});
    CHECK_THAT(gemm_layout_problem(kjit::jit::kernels::ops::matmul_views(partly.view, other.view).a), Contains("batch"));
    // The same for b (4, 3, 2) against a (2, 4, 5, 3): b's batch walks (0, 6).
    const Strided big = make({2, 4, 5, 3}, {0, 1, 2, 3});
    CHECK_THAT(gemm_layout_problem(kjit::jit::kernels::ops::matmul_views(big.view, other.view).b), Contains("batch"));
    // A broadcast batch (stride 0) is fine: one matrix reused.
    MatmulOperand shared{DType::float32, {7, 4, 4}, {0, 4, 1}};
    CHECK(gemm_layout_problem(shared).empty());
}

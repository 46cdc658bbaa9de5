#include "jit/kernels/ops/matmul_plan.hpp"

#include <algorithm>

#include "kjit/error.hpp"

namespace kjit::jit::kernels::ops {
namespace {

std::string both(const Shape& a, const Shape& b) {
    return "a " + shape_to_string(a) + " and b " + shape_to_string(b);
}

// How a (rows, cols) matrix with strides (sr, sc) looks to cuBLAS.
struct Orientation {
    bool row_major = true;   // X = Sᵀ, S column-major cols × rows
    std::int64_t ld = 1;
    std::string problem;
};

Orientation orient(std::int64_t rows, std::int64_t cols, std::int64_t sr, std::int64_t sc) {
    Orientation o;
    // An extent-1 axis has no stride to speak of: either orientation works along it.
    const bool unit_cols = sc == 1 || cols <= 1;
    const bool unit_rows = sr == 1 || rows <= 1;
    const std::int64_t row_ld = rows <= 1 ? std::max<std::int64_t>(1, cols) : sr;
    const std::int64_t col_ld = cols <= 1 ? std::max<std::int64_t>(1, rows) : sc;
    if (unit_cols && row_ld >= std::max<std::int64_t>(1, cols)) {
        o.row_major = true;
        o.ld = row_ld;
    } else if (unit_rows && col_ld >= std::max<std::int64_t>(1, rows)) {
        o.row_major = false;
        o.ld = col_ld;
    } else if (!unit_cols && !unit_rows) {
        o.problem = "no unit stride along either matrix axis (strides " + std::to_string(sr) + ", " + std::to_string(sc) + ")";
    } else {
        o.problem = "its rows or columns overlap or run backwards (strides " + std::to_string(sr) + ", " + std::to_string(sc) +
                    ")";
    }
    return o;
}

// The single stride that walks the batch dimensions (extent-1 ones ignored), if there is one.
bool batch_stride_of(const MatmulOperand& v, std::int64_t& stride) {
    const int nb = static_cast<int>(v.shape.size()) - 2;
    stride = 0;
    bool seen = false;
    std::int64_t inner_extent = 1, inner_stride = 0;
    for (int d = nb - 1; d >= 0; --d) {
        const std::int64_t extent = v.shape[static_cast<std::size_t>(d)], s = v.strides[static_cast<std::size_t>(d)];
        if (extent == 1) continue;
        if (!seen) {
            stride = s;
            seen = true;
        } else if (s != inner_stride * inner_extent) {
            return false;
        }
        inner_extent = extent;
        inner_stride = s;
    }
    return true;
}

}  // namespace

Shape matmul_result_shape(const Shape& a, const Shape& b) {
    if (a.empty() || b.empty())
        throw ShapeError("matmul: " + both(a, b) + ": an operand is a scalar; matmul needs at least one dimension each");
    const Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
    const Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
    if (a2.back() != b2[b2.size() - 2])
        throw ShapeError("matmul: " + both(a, b) + " do not multiply: a has " + std::to_string(a2.back()) +
                         " columns, b has " + std::to_string(b2[b2.size() - 2]) + " rows");
    Shape batch;
    try {
        batch = broadcast_shapes({Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2)});
    } catch (const ShapeError&) {
        throw ShapeError("matmul: " + both(a, b) + ": the batch dimensions do not broadcast");
    }
    Shape out = batch;
    if (a.size() > 1) out.push_back(a2[a2.size() - 2]);
    if (b.size() > 1) out.push_back(b2.back());
    return out;
}

DType matmul_result_dtype(DType a, DType b) {
    const DType r = result_type(a, b);
    if (!(r.is_floating() || r.is_complex()))
        throw TypeError("matmul: " + std::string(a.name()) + " @ " + std::string(b.name()) + " gives " + std::string(r.name()) +
                        "; cuBLAS multiplies float16, bfloat16, float32, float64, complex64 and complex128 (convert first)");
    return r;
}

MatmulViews matmul_views(const MatmulOperand& a, const MatmulOperand& b) {
    MatmulViews v;
    if (a.shape.size() == 2 && b.shape.size() == 2) {
        // Two matrices, the common case: nothing to promote or broadcast.
        v.out_shape = matmul_result_shape(a.shape, b.shape);
        v.a = a;
        v.b = b;
        return v;
    }
    const Shape out = matmul_result_shape(a.shape, b.shape);
    // Promote 1-D operands; a strides of the added axis that makes the matrix contiguous-looking.
    auto promote = [](const MatmulOperand& x, bool as_row) {
        MatmulOperand p = x;
        if (x.shape.size() == 1) {
            const std::int64_t n = x.shape[0], s = x.strides[0];
            p.shape = as_row ? Shape{1, n} : Shape{n, 1};
            p.strides = as_row ? Strides{n * s, s} : Strides{s, n * s};
        }
        return p;
    };
    const MatmulOperand a2 = promote(a, true), b2 = promote(b, false);
    const Shape batch = broadcast_shapes({Shape(a2.shape.begin(), a2.shape.end() - 2), Shape(b2.shape.begin(), b2.shape.end() - 2)});
    auto broadcast = [&](const MatmulOperand& x) {
        MatmulOperand r;
        r.dtype = x.dtype;
        r.shape = batch;
        r.strides.assign(batch.size(), 0);
        const std::size_t xb = x.shape.size() - 2, shift = batch.size() - xb;
        for (std::size_t d = 0; d < xb; ++d)
            if (x.shape[d] == batch[shift + d]) r.strides[shift + d] = x.strides[d];
        r.shape.push_back(x.shape[xb]);
        r.shape.push_back(x.shape[xb + 1]);
        r.strides.push_back(x.strides[xb]);
        r.strides.push_back(x.strides[xb + 1]);
        return r;
    };
    v.a = broadcast(a2);
    v.b = broadcast(b2);
    v.out_shape = batch;
    v.out_shape.push_back(a2.shape[a2.shape.size() - 2]);
    v.out_shape.push_back(b2.shape.back());
    (void)out;
    return v;
}

std::string gemm_layout_problem(const MatmulOperand& v) {
    const std::size_t n = v.shape.size();
    const Orientation o = orient(v.shape[n - 2], v.shape[n - 1], v.strides[n - 2], v.strides[n - 1]);
    if (!o.problem.empty()) return o.problem;
    std::int64_t stride = 0;
    if (!batch_stride_of(v, stride)) return "no single stride walks its batch dimensions";
    return "";
}

GemmPlan plan_gemm(const MatmulOperand& a, const MatmulOperand& b, const MatmulOperand& c) {
    for (const MatmulOperand* v : {&a, &b, &c})
        if (const std::string p = gemm_layout_problem(*v); !p.empty()) throw Error("plan_gemm: an operand is not usable: " + p);
    const std::size_t n = c.shape.size();
    const std::int64_t m = c.shape[n - 2], cols = c.shape[n - 1], k = a.shape[a.shape.size() - 1];
    const Orientation oa = orient(a.shape[n - 2], a.shape[n - 1], a.strides[n - 2], a.strides[n - 1]);
    const Orientation ob = orient(b.shape[n - 2], b.shape[n - 1], b.strides[n - 2], b.strides[n - 1]);
    const Orientation oc = orient(m, cols, c.strides[n - 2], c.strides[n - 1]);
    GemmPlan p;
    p.batch = 1;
    for (std::size_t d = 0; d + 2 < n; ++d) p.batch *= c.shape[d];
    p.k = k;
    std::int64_t sa = 0, sb = 0, sc = 0;
    batch_stride_of(a, sa);
    batch_stride_of(b, sb);
    batch_stride_of(c, sc);
    if (!oc.row_major) {
        // C column-major: C = op(SA)·op(SB) as it stands.
        p.m = m;
        p.n = cols;
        p.first = {oa.row_major, oa.ld, sa};
        p.second = {ob.row_major, ob.ld, sb};
    } else {
        // C row-major: Cᵀ (column-major) = Bᵀ·Aᵀ.
        p.swapped = true;
        p.m = cols;
        p.n = m;
        p.first = {!ob.row_major, ob.ld, sb};
        p.second = {!oa.row_major, oa.ld, sa};
    }
    p.c = {false, oc.ld, sc};
    return p;
}

}  // namespace kjit::jit::kernels::ops

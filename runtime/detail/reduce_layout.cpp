#include "runtime/detail/reduce_layout.hpp"

#include <algorithm>

#include "kjit/error.hpp"

namespace kjit::detail {

std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim) {
    std::vector<int> out;
    if (axes.empty()) {
        for (int d = 0; d < ndim; ++d) out.push_back(d);
        return out;
    }
    for (const int a : axes) {
        const int d = a < 0 ? a + ndim : a;
        if (d < 0 || d >= ndim)
            throw ShapeError("axis " + std::to_string(a) + " is out of range for an array of " + std::to_string(ndim) +
                             " dimensions");
        if (std::find(out.begin(), out.end(), d) != out.end())
            throw ShapeError("axis " + std::to_string(a) + " is given twice");
        out.push_back(d);
    }
    std::sort(out.begin(), out.end());
    return out;
}

Shape reduction_output_shape(const Shape& shape, const std::vector<int>& axes, bool keepdims) {
    Shape out;
    for (std::size_t d = 0; d < shape.size(); ++d) {
        const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int>(d)) != axes.end();
        if (!reduced) out.push_back(shape[d]);
        else if (keepdims) out.push_back(1);
    }
    return out;
}

namespace {

// One group of dimensions (kept or reduced): extents and, per operand, strides.
struct Group {
    std::vector<std::int64_t> shape;
    std::vector<std::vector<std::int64_t>> strides;  // [operand][dim]
};

// Drops extent-1 dimensions and merges neighbours every operand walks as one.
void simplify(Group& g) {
    Group out;
    out.strides.resize(g.strides.size());
    for (std::size_t d = 0; d < g.shape.size(); ++d) {
        if (g.shape[d] == 1) continue;
        bool merge = !out.shape.empty();
        for (std::size_t a = 0; a < g.strides.size() && merge; ++a)
            merge = out.strides[a].back() == g.strides[a][d] * g.shape[d];
        if (merge) {
            out.shape.back() *= g.shape[d];
            for (std::size_t a = 0; a < g.strides.size(); ++a) out.strides[a].back() = g.strides[a][d];
        } else {
            out.shape.push_back(g.shape[d]);
            for (std::size_t a = 0; a < g.strides.size(); ++a) out.strides[a].push_back(g.strides[a][d]);
        }
    }
    g = std::move(out);
}

std::int64_t product(const std::vector<std::int64_t>& v) {
    std::int64_t p = 1;
    for (const std::int64_t x : v) p *= x;
    return p;
}

}  // namespace

ReducePlan plan_reduction(const Shape& shape, const std::vector<Strides>& inputs, const std::vector<Strides>& outputs,
                          const std::vector<int>& axes, int sm_count) {
    const std::size_t ni = inputs.size(), no = outputs.size();
    Group kept, reduced;
    kept.strides.resize(ni + no);
    reduced.strides.resize(ni);
    std::size_t kept_index = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) {
        const bool is_reduced = std::find(axes.begin(), axes.end(), static_cast<int>(d)) != axes.end();
        Group& g = is_reduced ? reduced : kept;
        g.shape.push_back(shape[d]);
        for (std::size_t a = 0; a < ni; ++a) g.strides[a].push_back(inputs[a][d]);
        if (!is_reduced) {
            for (std::size_t o = 0; o < no; ++o) kept.strides[ni + o].push_back(outputs[o][kept_index]);
            ++kept_index;
        }
    }
    simplify(kept);
    simplify(reduced);
    if (kept.shape.size() + reduced.shape.size() > 16)
        throw ShapeError("the reduction needs " + std::to_string(kept.shape.size() + reduced.shape.size()) +
                         " dimensions even after merging; kjit's reduction kernels take at most 16");

    ReducePlan p;
    p.kept_ndim = static_cast<int>(kept.shape.size());
    p.reduced_ndim = static_cast<int>(reduced.shape.size());
    p.kept_size = product(kept.shape);
    p.reduced_size = product(reduced.shape);
    p.shape = kept.shape;
    p.shape.insert(p.shape.end(), reduced.shape.begin(), reduced.shape.end());
    p.in_strides.resize(ni);
    for (std::size_t a = 0; a < ni; ++a) {
        p.in_strides[a] = kept.strides[a];
        p.in_strides[a].insert(p.in_strides[a].end(), reduced.strides[a].begin(), reduced.strides[a].end());
    }
    for (std::size_t o = 0; o < no; ++o) p.out_strides.push_back(kept.strides[ni + o]);

    // The strategy: one value; rows when every input reads the reduced elements contiguously;
    // columns when neighbouring outputs read neighbouring elements; rows otherwise.
    auto unit = [&](const std::vector<std::vector<std::int64_t>>& strides, std::size_t count) {
        for (std::size_t a = 0; a < count; ++a)
            if (strides[a].empty() || (strides[a].back() != 1 && strides[a].back() != 0)) return false;
        return true;
    };
    if (p.kept_size == 1) {
        // Every input reads the reduced elements one after another (not broadcast: small reads element j at j).
        const bool contiguous = p.reduced_ndim == 0 || (p.reduced_ndim == 1 && std::all_of(reduced.strides.begin(), reduced.strides.end(),
                                                                                        [](const auto& s) { return s.back() == 1; }));
        p.strategy = contiguous && p.reduced_size <= kSmallReduceElements ? ReduceStrategy::small : ReduceStrategy::full;
    } else if (p.reduced_ndim == 0 || unit(reduced.strides, ni)) {
        p.strategy = (p.reduced_size > 4096 && p.kept_size < 4 * static_cast<std::int64_t>(sm_count))
                         ? ReduceStrategy::rows_block
                         : ReduceStrategy::rows_warp;
    } else if (unit(kept.strides, ni)) {
        // Few outputs over many rows: not enough threads to keep the memory busy without a split.
        p.strategy = p.kept_size < 256 * static_cast<std::int64_t>(sm_count) && p.reduced_size >= 1024
                         ? ReduceStrategy::columns_split
                         : ReduceStrategy::columns;
    } else {
        p.strategy = ReduceStrategy::rows_warp;
    }
    return p;
}

}  // namespace kjit::detail

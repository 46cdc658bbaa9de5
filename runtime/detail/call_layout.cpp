#include "runtime/detail/call_layout.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>

namespace kjit::detail {

bool broadcast_operands(const OperandView* operands, int count, CallLayout& layout) {
    layout.operands = count;
    layout.ndim = 0;
    for (int a = 0; a < count; ++a) layout.ndim = std::max(layout.ndim, operands[a].ndim);
    if (layout.ndim > kMaxCallDims) return false;
    for (int d = 0; d < layout.ndim; ++d) layout.shape[d] = 1;
    // Right-aligned, as NumPy: extents must agree or be 1.
    for (int a = 0; a < count; ++a) {
        const OperandView& v = operands[a];
        const int shift = layout.ndim - v.ndim;
        for (int d = 0; d < v.ndim; ++d) {
            std::int64_t& extent = layout.shape[shift + d];
            if (v.shape[d] == extent || v.shape[d] == 1) continue;
            if (extent != 1) return false;
            extent = v.shape[d];
        }
    }
    layout.size = 1;
    for (int d = 0; d < layout.ndim; ++d) layout.size *= layout.shape[d];
    for (int a = 0; a < count; ++a) {
        const OperandView& v = operands[a];
        const int shift = layout.ndim - v.ndim;
        layout.data[a] = v.data;
        layout.itemsize[a] = v.itemsize;
        for (int d = 0; d < layout.ndim; ++d) {
            const int own = d - shift;
            // A broadcast dimension (missing or of extent 1 against a larger one) repeats: stride 0.
            layout.strides[a][d] = (own < 0 || v.shape[own] != layout.shape[d]) ? 0 : v.strides[own];
        }
    }
    return true;
}

namespace {

void drop_extent_one(CallLayout& l) {
    int out = 0;
    for (int d = 0; d < l.ndim; ++d) {
        if (l.shape[d] == 1) continue;
        l.shape[out] = l.shape[d];
        for (int a = 0; a < l.operands; ++a) l.strides[a][out] = l.strides[a][d];
        ++out;
    }
    l.ndim = out;
}

void flip_and_sort(CallLayout& l, int ref) {
    // Reversed dimensions of the reference run forwards instead: every operand starts at its
    // last element along that dimension and steps back.
    for (int d = 0; d < l.ndim; ++d) {
        if (l.strides[ref][d] >= 0) continue;
        for (int a = 0; a < l.operands; ++a) {
            l.data[a] += (l.shape[d] - 1) * l.strides[a][d] * l.itemsize[a];
            l.strides[a][d] = -l.strides[a][d];
        }
    }
    // Insertion sort (few dimensions), stable: largest reference stride first; ties keep order.
    for (int d = 1; d < l.ndim; ++d) {
        for (int k = d; k > 0 && l.strides[ref][k - 1] < l.strides[ref][k]; --k) {
            std::swap(l.shape[k - 1], l.shape[k]);
            for (int a = 0; a < l.operands; ++a) std::swap(l.strides[a][k - 1], l.strides[a][k]);
        }
    }
}

void merge_adjacent(CallLayout& l) {
    if (l.ndim == 0) return;
    int out = 0;
    for (int d = 1; d < l.ndim; ++d) {
        bool mergeable = true;
        for (int a = 0; a < l.operands && mergeable; ++a)
            mergeable = l.strides[a][out] == l.strides[a][d] * l.shape[d];
        if (mergeable) {
            l.shape[out] *= l.shape[d];
            for (int a = 0; a < l.operands; ++a) l.strides[a][out] = l.strides[a][d];
        } else {
            ++out;
            l.shape[out] = l.shape[d];
            for (int a = 0; a < l.operands; ++a) l.strides[a][out] = l.strides[a][d];
        }
    }
    l.ndim = out + 1;
}

}  // namespace

void simplify(CallLayout& layout, bool may_reorder, int reference) {
    drop_extent_one(layout);
    if (may_reorder && reference >= 0 && reference < layout.operands) flip_and_sort(layout, reference);
    merge_adjacent(layout);
}

void byte_range(const OperandView& v, char*& lo, char*& hi) {
    std::int64_t low = 0, high = 0;
    for (int d = 0; d < v.ndim; ++d) {
        if (v.shape[d] == 0) {
            lo = hi = v.data;
            return;
        }
        const std::int64_t reach = (v.shape[d] - 1) * v.strides[d];
        (reach < 0 ? low : high) += reach;
    }
    lo = v.data + low * v.itemsize;
    hi = v.data + (high + 1) * v.itemsize;
}

bool same_elements(const CallLayout& layout, int a, int b) {
    if (layout.data[a] != layout.data[b] || layout.itemsize[a] != layout.itemsize[b]) return false;
    for (int d = 0; d < layout.ndim; ++d)
        if (layout.shape[d] > 1 && layout.strides[a][d] != layout.strides[b][d]) return false;
    return true;
}

bool fits_int32(const CallLayout& layout) {
    if (layout.size > INT_MAX) return false;
    for (int a = 0; a < layout.operands; ++a) {
        std::int64_t reach = 0;
        for (int d = 0; d < layout.ndim; ++d) reach += (layout.shape[d] - 1) * std::llabs(layout.strides[a][d]);
        if (reach > INT_MAX) return false;
    }
    return true;
}

namespace {

bool aligned(const char* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

// The alignment kjit::Vec<T, V> asks for (templates/elementwise.cuh).
std::size_t vector_alignment(int itemsize, int v) { return std::min<std::size_t>(16, static_cast<std::size_t>(itemsize) * v); }

bool is_output(const VariantNeeds& needs, int a) { return a < 64 && ((needs.output_mask >> a) & 1u); }

// One dimension (or none) walked with stride 1 by every operand.
bool unit_strides(const CallLayout& l) {
    if (l.ndim > 1) return false;
    for (int a = 0; a < l.operands; ++a)
        if (l.ndim == 1 && l.strides[a][0] != 1) return false;
    return true;
}

bool contiguous_ok(const CallLayout& l, const VariantNeeds& needs) {
    if (l.ndim > 1) return false;
    for (int a = 0; a < l.operands; ++a) {
        if (l.ndim == 1 && l.strides[a][0] != 1) return false;
        if (!aligned(l.data[a], vector_alignment(l.itemsize[a], needs.vector_width))) return false;
    }
    return true;
}

bool rows_ok(const CallLayout& l, const VariantNeeds& needs) {
    if (!needs.has_rows || l.ndim < 1 || l.ndim > kMaxKernelDims) return false;
    const int last = l.ndim - 1;
    const int v = needs.vector_width;
    if (l.shape[last] % v != 0) return false;
    for (int a = 0; a < l.operands; ++a) {
        const std::int64_t s = l.strides[a][last];
        if (s == 0 && !is_output(needs, a)) continue;  // one value repeated along the row
        if (s != 1) return false;
        if (!aligned(l.data[a], vector_alignment(l.itemsize[a], v))) return false;
        for (int d = 0; d < last; ++d)
            if (l.strides[a][d] % v != 0) return false;
    }
    return true;
}

bool tiled_ok(const CallLayout& l, const VariantNeeds& needs) {
    if (!needs.has_tiled || l.ndim != 2) return false;
    bool transposed_input = false;
    for (int a = 0; a < l.operands; ++a) {
        if (is_output(needs, a)) {
            if (l.strides[a][1] != 1) return false;
        } else if (l.strides[a][0] == 1 && l.strides[a][1] != 1) {
            transposed_input = true;
        }
    }
    return transposed_input;
}

}  // namespace

VariantChoice choose_variant(const CallLayout& layout, const VariantNeeds& needs) {
    VariantChoice c;
    const bool small = fits_int32(layout);
    if (layout.size <= kSmallCallElements && unit_strides(layout)) {
        c.variant = Variant::small;
        return c;
    }
    if (contiguous_ok(layout, needs)) {
        c.variant = Variant::contiguous;
        c.index64 = !small;
        return c;
    }
    if (small && tiled_ok(layout, needs)) {
        c.variant = Variant::tiled;
        return c;
    }
    if (small && rows_ok(layout, needs)) {
        c.variant = Variant::rows;
        return c;
    }
    c.variant = Variant::strided;
    c.index64 = !small;
    return c;
}

}  // namespace kjit::detail

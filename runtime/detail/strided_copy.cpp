#include "runtime/detail/strided_copy.hpp"

#include <cstring>
#include <vector>

namespace kjit::detail {
namespace {

// The innermost axis copied element by element with a fixed-size memcpy the compiler inlines.
template <std::size_t N>
void copy_row(const char* src, std::int64_t stride_bytes, std::int64_t count, char* dst) {
    for (std::int64_t k = 0; k < count; ++k, src += stride_bytes, dst += N) std::memcpy(dst, src, N);
}

void copy_row_any(const char* src, std::int64_t stride_bytes, std::int64_t count, std::size_t itemsize, char* dst) {
    switch (itemsize) {
        case 1: return copy_row<1>(src, stride_bytes, count, dst);
        case 2: return copy_row<2>(src, stride_bytes, count, dst);
        case 4: return copy_row<4>(src, stride_bytes, count, dst);
        case 8: return copy_row<8>(src, stride_bytes, count, dst);
        case 16: return copy_row<16>(src, stride_bytes, count, dst);
        default:
            for (std::int64_t k = 0; k < count; ++k, src += stride_bytes, dst += itemsize) std::memcpy(dst, src, itemsize);
    }
}

}  // namespace

void gather_strided(const void* origin, const Shape& shape, const Strides& strides, std::size_t itemsize, void* dst) {
    const auto isz = static_cast<std::int64_t>(itemsize);
    const char* base = static_cast<const char*>(origin);
    char* out = static_cast<char*>(dst);
    const int nd = static_cast<int>(shape.size());
    if (nd == 0) {
        std::memcpy(out, base, itemsize);
        return;
    }
    for (std::int64_t e : shape)
        if (e == 0) return;
    const std::int64_t inner = shape[nd - 1];
    const std::int64_t inner_stride = strides[nd - 1] * isz;
    std::vector<std::int64_t> idx(nd, 0);
    const char* row = base;
    while (true) {
        copy_row_any(row, inner_stride, inner, itemsize, out);
        out += inner * isz;
        // Advance the outer index like an odometer, moving `row` by each axis's stride.
        int ax = nd - 2;
        for (; ax >= 0; --ax) {
            row += strides[ax] * isz;
            if (++idx[ax] < shape[ax]) break;
            row -= shape[ax] * strides[ax] * isz;
            idx[ax] = 0;
        }
        if (ax < 0) return;
    }
}

}  // namespace kjit::detail

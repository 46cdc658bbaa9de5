#include "jit/frontend/conversions.hpp"

namespace kjit::jit::frontend {
namespace {

DType complex_of(DType real) noexcept { return real.id() == DType::float64 ? DType::complex128 : DType::complex64; }

int rank(DType t) noexcept { return t.itemsize() >= 8 ? 2 : 1; }  // int32/uint32: 1, 64-bit: 2

DType unsigned_of(DType t) noexcept { return t.itemsize() >= 8 ? DType::uint64 : DType::uint32; }

}  // namespace

DType promote_integer(DType t) noexcept {
    if (t.is_bool() || (t.is_integer() && t.itemsize() < 4)) return DType::int32;
    return t;
}

DType usual_arithmetic_conversion(DType a, DType b) noexcept {
    if (a.is_complex() || b.is_complex()) {
        const DType real = usual_arithmetic_conversion(a.real_type(), b.real_type());
        // float16/bfloat16 parts widen to float: kjit's complex has float and double parts only.
        return complex_of(real.itemsize() >= 8 ? DType::float64 : DType::float32);
    }
    if (a.id() == DType::float64 || b.id() == DType::float64) return DType::float64;
    if (a.id() == DType::float32 || b.id() == DType::float32) return DType::float32;
    if (a.is_floating() && b.is_floating()) return a == b ? a : DType(DType::float32);  // half with bfloat16
    if (a.is_floating()) return a;
    if (b.is_floating()) return b;
    const DType pa = promote_integer(a), pb = promote_integer(b);
    if (pa == pb) return pa;
    if (pa.is_signed() == pb.is_signed()) return rank(pa) >= rank(pb) ? pa : pb;
    const DType u = pa.is_signed() ? pb : pa;
    const DType s = pa.is_signed() ? pa : pb;
    if (rank(u) >= rank(s)) return u;
    if (s.itemsize() > u.itemsize()) return s;  // the signed type holds every unsigned value
    return unsigned_of(s);
}

DType math_type(DType t) noexcept {
    if (t.is_bool() || t.is_integer()) return DType::float64;
    return t;
}

}  // namespace kjit::jit::frontend

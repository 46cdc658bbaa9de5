// C's usual arithmetic conversions, extended to CUDA's 16-bit floats and to complex numbers, as
// the generated code computes them. This is what makes `a * x + b` compute the same in kjit as in
// a CuPy kernel: C semantics, not NumPy's.
#pragma once

#include "kjit/dtype.hpp"

namespace kjit::jit::frontend {

// C's integer promotion: bool and integers narrower than int become int32; others unchanged.
DType promote_integer(DType t) noexcept;

// The common type of the operands of a binary arithmetic operator:
// - complex with anything: complex of the common type of the real parts (complex64 with float64
//   gives complex128);
// - float64 wins, then float32; float16 with float16 stays float16, bfloat16 with bfloat16 stays
//   bfloat16, float16 with bfloat16 gives float32, a 16-bit float with an integer keeps the float;
// - integers after promotion: the larger rank; unsigned wins at equal rank; a signed type wins
//   over an unsigned one of lower rank (int64 with uint32 gives int64).
DType usual_arithmetic_conversion(DType a, DType b) noexcept;

// The floating type a math function computes in for an argument of type t: integers compute in
// float64 (C++'s overloads for integers), floats and complex in their own type.
DType math_type(DType t) noexcept;

}  // namespace kjit::jit::frontend

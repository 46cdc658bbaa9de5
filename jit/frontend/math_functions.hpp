// The math functions kernel code may call: CUDA math API names, generic over the float types
// (and complex where it makes sense). Anything else needs the preamble.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/dtype.hpp"

namespace kjit::jit::frontend {

enum class MathKind {
    float_unary,    // sqrt(x): computes in x's float type (integers in float64)
    float_binary,   // pow(x, y), atan2, fmod...: the common float type
    float_ternary,  // fma(x, y, z)
    min_max,        // min/max: the common arithmetic type, integers included
    abs,            // integers and floats keep their type; complex gives its real type
    predicate,      // isnan, isinf, isfinite, signbit: bool
    complex_part,   // real, imag, arg, norm: the real type
    conj,           // conj: complex stays complex, a real stays real
    ldexp,          // ldexp(x, int)
};

struct MathFunction {
    std::string_view name;
    int arity;
    MathKind kind;
    bool takes_complex;  // defined for complex arguments too
};

// The entry for `name`, or null when it is not in the table.
const MathFunction* find_math_function(std::string_view name) noexcept;
// Every name in the table, for "did you mean" hints.
std::vector<std::string> math_function_names();

// The result type of calling `f` on arguments of these types, or an explanation of why the
// arguments do not fit (empty optional and `why` set).
std::optional<DType> math_result_type(const MathFunction& f, const std::vector<DType>& args, std::string& why);

// The type the arguments are converted to before the call (for float16 and bfloat16, float32:
// they are computed in float and the result converted back).
DType math_compute_type(const MathFunction& f, const std::vector<DType>& args);

// The CUDA function to call for `f` computing in `compute`: "sqrtf", "sqrt", "kjit::sqrt"...
std::string cuda_math_name(const MathFunction& f, DType compute);

}  // namespace kjit::jit::frontend

#include "jit/frontend/math_functions.hpp"

#include <array>

#include "jit/frontend/conversions.hpp"

namespace kjit::jit::frontend {
namespace {

constexpr MathFunction kTable[] = {
    // one float argument
    {"sqrt", 1, MathKind::float_unary, true},     {"rsqrt", 1, MathKind::float_unary, false},
    {"cbrt", 1, MathKind::float_unary, false},    {"rcbrt", 1, MathKind::float_unary, false},
    {"exp", 1, MathKind::float_unary, true},      {"exp2", 1, MathKind::float_unary, false},
    {"exp10", 1, MathKind::float_unary, false},   {"expm1", 1, MathKind::float_unary, false},
    {"log", 1, MathKind::float_unary, true},      {"log2", 1, MathKind::float_unary, false},
    {"log10", 1, MathKind::float_unary, false},   {"log1p", 1, MathKind::float_unary, false},
    {"sin", 1, MathKind::float_unary, true},      {"cos", 1, MathKind::float_unary, true},
    {"tan", 1, MathKind::float_unary, true},      {"asin", 1, MathKind::float_unary, false},
    {"acos", 1, MathKind::float_unary, false},    {"atan", 1, MathKind::float_unary, false},
    {"sinh", 1, MathKind::float_unary, true},     {"cosh", 1, MathKind::float_unary, true},
    {"tanh", 1, MathKind::float_unary, true},     {"asinh", 1, MathKind::float_unary, false},
    {"acosh", 1, MathKind::float_unary, false},   {"atanh", 1, MathKind::float_unary, false},
    {"sinpi", 1, MathKind::float_unary, false},   {"cospi", 1, MathKind::float_unary, false},
    {"erf", 1, MathKind::float_unary, false},     {"erfc", 1, MathKind::float_unary, false},
    {"erfinv", 1, MathKind::float_unary, false},  {"erfcinv", 1, MathKind::float_unary, false},
    {"normcdf", 1, MathKind::float_unary, false}, {"normcdfinv", 1, MathKind::float_unary, false},
    {"lgamma", 1, MathKind::float_unary, false},  {"tgamma", 1, MathKind::float_unary, false},
    {"floor", 1, MathKind::float_unary, false},   {"ceil", 1, MathKind::float_unary, false},
    {"trunc", 1, MathKind::float_unary, false},   {"round", 1, MathKind::float_unary, false},
    {"rint", 1, MathKind::float_unary, false},    {"nearbyint", 1, MathKind::float_unary, false},
    {"fabs", 1, MathKind::float_unary, false},
    // two or three float arguments
    {"pow", 2, MathKind::float_binary, true},     {"atan2", 2, MathKind::float_binary, false},
    {"fmod", 2, MathKind::float_binary, false},   {"remainder", 2, MathKind::float_binary, false},
    {"hypot", 2, MathKind::float_binary, false},  {"fmin", 2, MathKind::float_binary, false},
    {"fmax", 2, MathKind::float_binary, false},   {"fdim", 2, MathKind::float_binary, false},
    {"copysign", 2, MathKind::float_binary, false}, {"nextafter", 2, MathKind::float_binary, false},
    {"fma", 3, MathKind::float_ternary, false},
    // typed like arithmetic
    {"min", 2, MathKind::min_max, false},         {"max", 2, MathKind::min_max, false},
    {"abs", 1, MathKind::abs, true},
    {"isnan", 1, MathKind::predicate, false},     {"isinf", 1, MathKind::predicate, false},
    {"isfinite", 1, MathKind::predicate, false},  {"signbit", 1, MathKind::predicate, false},
    {"real", 1, MathKind::complex_part, true},    {"imag", 1, MathKind::complex_part, true},
    {"arg", 1, MathKind::complex_part, true},     {"norm", 1, MathKind::complex_part, true},
    {"conj", 1, MathKind::conj, true},
    {"ldexp", 2, MathKind::ldexp, false},
};

DType common_of(const std::vector<DType>& args) {
    DType t = args[0];
    for (std::size_t k = 1; k < args.size(); ++k) t = usual_arithmetic_conversion(t, args[k]);
    return t;
}

bool any_complex(const std::vector<DType>& args) {
    for (DType t : args)
        if (t.is_complex()) return true;
    return false;
}

}  // namespace

const MathFunction* find_math_function(std::string_view name) noexcept {
    for (const MathFunction& f : kTable)
        if (f.name == name) return &f;
    return nullptr;
}

std::vector<std::string> math_function_names() {
    std::vector<std::string> names;
    for (const MathFunction& f : kTable) names.emplace_back(f.name);
    return names;
}

std::optional<DType> math_result_type(const MathFunction& f, const std::vector<DType>& args, std::string& why) {
    if (static_cast<int>(args.size()) != f.arity) {
        why = std::string(f.name) + "() takes " + std::to_string(f.arity) + " argument" + (f.arity == 1 ? "" : "s") +
              ", not " + std::to_string(args.size());
        return std::nullopt;
    }
    if (any_complex(args) && !f.takes_complex) {
        why = std::string(f.name) + "() is not defined for complex arguments";
        return std::nullopt;
    }
    switch (f.kind) {
        case MathKind::float_unary:
        case MathKind::float_binary:
        case MathKind::float_ternary:
            return math_type(common_of(args));
        case MathKind::min_max:
            return common_of(args);
        case MathKind::abs:
            return args[0].is_complex() ? args[0].real_type() : (args[0].is_floating() ? args[0] : promote_integer(args[0]));
        case MathKind::predicate:
            return DType(DType::bool_);
        case MathKind::complex_part:
            if (f.name == "real" || f.name == "imag") return args[0].real_type();
            return math_type(args[0]).real_type();
        case MathKind::conj:
            return args[0];
        case MathKind::ldexp:
            if (!(args[1].is_integer() || args[1].is_bool())) {
                why = "ldexp()'s second argument must be an integer, not " + std::string(args[1].name());
                return std::nullopt;
            }
            return math_type(args[0]);
    }
    return std::nullopt;
}

DType math_compute_type(const MathFunction& f, const std::vector<DType>& args) {
    std::string why;
    DType t = f.kind == MathKind::min_max || f.kind == MathKind::abs || f.kind == MathKind::conj ||
                      f.kind == MathKind::complex_part || f.kind == MathKind::predicate
                  ? (f.kind == MathKind::min_max ? common_of(args) : args[0])
                  : math_type(common_of(args));
    if (f.kind == MathKind::ldexp) t = math_type(args[0]);
    if (f.kind == MathKind::abs && !t.is_complex() && !t.is_floating()) t = promote_integer(t);
    // 16-bit floats have no math library of their own worth the name: compute in float.
    if (t.id() == DType::float16 || t.id() == DType::bfloat16) return DType::float32;
    return t;
}

std::string cuda_math_name(const MathFunction& f, DType compute) {
    const std::string name(f.name);
    if (compute.is_complex()) return "kjit::" + name;
    if (f.kind == MathKind::complex_part || f.kind == MathKind::conj) return "kjit::" + name;  // real(x) of a real x
    if (f.kind == MathKind::predicate) return name;  // CUDA overloads isnan & co. for float and double
    if (f.kind == MathKind::min_max || f.kind == MathKind::abs) {
        if (compute.is_floating()) {
            const std::string base = f.kind == MathKind::abs ? "fabs" : (name == "min" ? "fmin" : "fmax");
            return compute.id() == DType::float32 ? base + "f" : base;
        }
        if (f.kind == MathKind::abs) return compute.itemsize() == 8 ? "llabs" : "abs";
        return name;  // CUDA's integer overloads of min and max
    }
    return compute.id() == DType::float32 ? name + "f" : name;
}

}  // namespace kjit::jit::frontend

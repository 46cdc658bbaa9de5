// Array expressions: NumPy-style arithmetic on kjit::Arrays that runs as one fused kjit kernel.
//
//   kjit::Array z = kjit::sqrt(a * x + b) * c;     // one kernel, not four
//   kjit::eval(y, kjit::where(x > 0, x, 0.1 * x));  // in place, into y (or a view of it)
//   kjit::Array s = kjit::sum((x - m) * (x - m));   // the expression is the reduction's map
//
// Operators and functions on Arrays (and Exprs) build an Expr; nothing runs until it is
// evaluated: converted to an Array, written with eval(), or reduced (sum, prod, min, max, mean, or
// a ReductionKernel through kjit::reduce).
// Dtypes follow NumPy's promotion, with C++ numbers as NumPy 2's weak Python scalars (NEP 50):
// `x_f16 * 2.0` stays float16, `x_i32 * 2.5` is float64; a kjit::Scalar has its own dtype.
// Shapes broadcast as NumPy's; an operator whose operands do not broadcast, or have no common
// dtype, throws there, naming both. The fused kernel is an ElementwiseKernel (or ReductionKernel)
// written from the expression's structure and dtypes alone: shapes, strides and scalar values are
// arguments, so a loop that changes them compiles once; it is cached, recorded by
// KJIT_CACHE_RECORD and precompiled like any kernel, runs on host arrays through the host back
// end, and under graph capture. An array or subexpression used twice is read or computed once.
#pragma once

#include "kjit/export.hpp"

#include <complex>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "kjit/array.hpp"
#include "kjit/half.hpp"
#include "kjit/options.hpp"
#include "kjit/reduction_kernel.hpp"
#include "kjit/scalar.hpp"

namespace kjit {

namespace detail {
struct ExprNode;
}

class KJIT_API Expr {
public:
    Expr(const Array& array);  // NOLINT(google-explicit-constructor): an array is an expression
    explicit Expr(std::shared_ptr<const detail::ExprNode> node) : node_(std::move(node)) {}

    DType dtype() const noexcept;
    const Shape& shape() const noexcept;  // the broadcast of its arrays' shapes
    Device device() const noexcept;       // its arrays' device

    // A new array holding the expression's value (one kernel launch).
    Array eval(const CallOptions& options = {}) const;
    operator Array() const { return eval(); }  // NOLINT(google-explicit-constructor)

    Expr astype(DType dtype) const;
    template <class T>
    Expr astype() const;

    // The kernel the expression evaluates to, in the kernel language (its parameter lists and
    // operation), for reading; evaluation compiles it once per structure and dtypes.
    std::string source() const;

    const std::shared_ptr<const detail::ExprNode>& node() const noexcept { return node_; }

private:
    std::shared_ptr<const detail::ExprNode> node_;
};

// A number in an expression: a C++ number is weak (its kind only: bool, integer, floating,
// complex), a kjit::Scalar strong (its dtype).
KJIT_API Expr weak_scalar(const Scalar& value);
KJIT_API Expr strong_scalar(const Scalar& value);

namespace detail {
template <class T>
inline constexpr bool is_expr_number = std::is_arithmetic_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16> ||
                                       std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;
template <class T>
inline constexpr bool is_expr_array = std::is_same_v<T, Array> || std::is_same_v<T, Expr>;
template <class T>
inline constexpr bool is_expr_operand = is_expr_array<T> || is_expr_number<T> || std::is_same_v<T, Scalar>;
template <class T>
Expr to_expr(const T& v) {
    if constexpr (is_expr_array<T>) return Expr(v);
    else if constexpr (std::is_same_v<T, Scalar>) return strong_scalar(v);
    else return weak_scalar(Scalar(v));
}
template <class A, class B>
inline constexpr bool expr_operands = is_expr_operand<A> && is_expr_operand<B> && (is_expr_array<A> || is_expr_array<B>);
}  // namespace detail

enum class ExprOp : unsigned char {
    add, subtract, multiply, divide, remainder, power,
    less, less_equal, greater, greater_equal, equal, not_equal,
    logical_and, logical_or, bit_and, bit_or, bit_xor, shift_left, shift_right,
    minimum, maximum, atan2, hypot, fmod, copysign,
    negative, logical_not, bit_not, abs,
    sqrt, rsqrt, cbrt, exp, exp2, expm1, log, log2, log10, log1p, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh,
    asinh, acosh, atanh, erf, erfc, floor, ceil, trunc, rint, isnan, isinf, isfinite, signbit,
    where, cast,
    real, imag, conj,  // after the rest, so that the numbering of earlier ones stays
};

KJIT_API Expr binary(ExprOp op, const Expr& a, const Expr& b);
KJIT_API Expr unary(ExprOp op, const Expr& a);
KJIT_API Expr where(const Expr& condition, const Expr& x, const Expr& y);

#define KJIT_EXPR_BINARY(symbol, op)                                                   \
    template <class A, class B, std::enable_if_t<detail::expr_operands<A, B>, int> = 0> \
    Expr operator symbol(const A& a, const B& b) {                                      \
        return binary(ExprOp::op, detail::to_expr(a), detail::to_expr(b));             \
    }
KJIT_EXPR_BINARY(+, add)
KJIT_EXPR_BINARY(-, subtract)
KJIT_EXPR_BINARY(*, multiply)
KJIT_EXPR_BINARY(/, divide)
KJIT_EXPR_BINARY(%, remainder)
KJIT_EXPR_BINARY(<, less)
KJIT_EXPR_BINARY(<=, less_equal)
KJIT_EXPR_BINARY(>, greater)
KJIT_EXPR_BINARY(>=, greater_equal)
KJIT_EXPR_BINARY(==, equal)
KJIT_EXPR_BINARY(!=, not_equal)
KJIT_EXPR_BINARY(&&, logical_and)
KJIT_EXPR_BINARY(||, logical_or)
KJIT_EXPR_BINARY(&, bit_and)
KJIT_EXPR_BINARY(|, bit_or)
KJIT_EXPR_BINARY(^, bit_xor)
KJIT_EXPR_BINARY(<<, shift_left)
KJIT_EXPR_BINARY(>>, shift_right)
#undef KJIT_EXPR_BINARY

#define KJIT_EXPR_FUNCTION2(name, op)                                                  \
    template <class A, class B, std::enable_if_t<detail::expr_operands<A, B>, int> = 0> \
    Expr name(const A& a, const B& b) {                                                 \
        return binary(ExprOp::op, detail::to_expr(a), detail::to_expr(b));             \
    }
KJIT_EXPR_FUNCTION2(minimum, minimum)
KJIT_EXPR_FUNCTION2(maximum, maximum)
KJIT_EXPR_FUNCTION2(power, power)
KJIT_EXPR_FUNCTION2(pow, power)
KJIT_EXPR_FUNCTION2(atan2, atan2)
KJIT_EXPR_FUNCTION2(hypot, hypot)
KJIT_EXPR_FUNCTION2(fmod, fmod)
KJIT_EXPR_FUNCTION2(copysign, copysign)
#undef KJIT_EXPR_FUNCTION2

template <class C, class X, class Y,
          std::enable_if_t<detail::is_expr_operand<C> && detail::is_expr_operand<X> && detail::is_expr_operand<Y> &&
                               (detail::is_expr_array<C> || detail::is_expr_array<X> || detail::is_expr_array<Y>) &&
                               !(std::is_same_v<C, Expr> && std::is_same_v<X, Expr> && std::is_same_v<Y, Expr>),
                           int> = 0>
Expr where(const C& condition, const X& x, const Y& y) {
    return where(detail::to_expr(condition), detail::to_expr(x), detail::to_expr(y));
}

// clip(x, lo, hi): maximum(lo) then minimum(hi), NumPy's order.
template <class X, class L, class H, std::enable_if_t<detail::is_expr_array<X> && detail::is_expr_operand<L> && detail::is_expr_operand<H>, int> = 0>
Expr clip(const X& x, const L& lo, const H& hi) {
    return minimum(maximum(Expr(x), lo), hi);
}

inline Expr operator-(const Expr& a) { return unary(ExprOp::negative, a); }
inline Expr operator-(const Array& a) { return unary(ExprOp::negative, a); }
inline Expr operator+(const Expr& a) { return a; }
inline Expr operator!(const Expr& a) { return unary(ExprOp::logical_not, a); }
inline Expr operator!(const Array& a) { return unary(ExprOp::logical_not, a); }
inline Expr operator~(const Expr& a) { return unary(ExprOp::bit_not, a); }
inline Expr operator~(const Array& a) { return unary(ExprOp::bit_not, a); }

#define KJIT_EXPR_FUNCTION1(name) \
    inline Expr name(const Expr& a) { return unary(ExprOp::name, a); }
KJIT_EXPR_FUNCTION1(abs)
KJIT_EXPR_FUNCTION1(sqrt)
KJIT_EXPR_FUNCTION1(rsqrt)
KJIT_EXPR_FUNCTION1(cbrt)
KJIT_EXPR_FUNCTION1(exp)
KJIT_EXPR_FUNCTION1(exp2)
KJIT_EXPR_FUNCTION1(expm1)
KJIT_EXPR_FUNCTION1(log)
KJIT_EXPR_FUNCTION1(log2)
KJIT_EXPR_FUNCTION1(log10)
KJIT_EXPR_FUNCTION1(log1p)
KJIT_EXPR_FUNCTION1(sin)
KJIT_EXPR_FUNCTION1(cos)
KJIT_EXPR_FUNCTION1(tan)
KJIT_EXPR_FUNCTION1(asin)
KJIT_EXPR_FUNCTION1(acos)
KJIT_EXPR_FUNCTION1(atan)
KJIT_EXPR_FUNCTION1(sinh)
KJIT_EXPR_FUNCTION1(cosh)
KJIT_EXPR_FUNCTION1(tanh)
KJIT_EXPR_FUNCTION1(asinh)
KJIT_EXPR_FUNCTION1(acosh)
KJIT_EXPR_FUNCTION1(atanh)
KJIT_EXPR_FUNCTION1(erf)
KJIT_EXPR_FUNCTION1(erfc)
KJIT_EXPR_FUNCTION1(floor)
KJIT_EXPR_FUNCTION1(ceil)
KJIT_EXPR_FUNCTION1(trunc)
KJIT_EXPR_FUNCTION1(rint)
KJIT_EXPR_FUNCTION1(isnan)
KJIT_EXPR_FUNCTION1(isinf)
KJIT_EXPR_FUNCTION1(isfinite)
KJIT_EXPR_FUNCTION1(signbit)
// NumPy's real, imag and conj: the parts of a complex expression (of its real dtype); of a real
// one, itself, zeros of its dtype, and itself.
KJIT_EXPR_FUNCTION1(real)
KJIT_EXPR_FUNCTION1(imag)
KJIT_EXPR_FUNCTION1(conj)
#undef KJIT_EXPR_FUNCTION1

template <class T>
Expr Expr::astype() const {
    return astype(Scalar(T{}).dtype());
}

// Writes `e` into `out` (any writable view of the right shape; `e` may read `out`: in place).
KJIT_API void eval(const Array& out, const Expr& e, const CallOptions& options = {});
// Several outputs computed in one kernel; an array or subexpression shared between them is read
// or computed once.
struct ExprOutput {
    Array out;
    Expr value;
};
KJIT_API void eval(std::initializer_list<ExprOutput> outputs, const CallOptions& options = {});

// Reductions of an expression: the expression is the reduction's map, and the whole is one kernel
// (the same dtypes and options as kjit::sum and the others of kjit/reductions.hpp).
KJIT_API Array sum(const Expr& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array prod(const Expr& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array min(const Expr& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array max(const Expr& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array mean(const Expr& x, const ReduceOptions& options = {}, const Array& out = Array());
// argmin and argmax of an expression: one kernel too, whose running value is a (value, index)
// struct (kjit/reduction_kernel.hpp); kjit::argmin/argmax's answer, not for complex.
KJIT_API Array argmin(const Expr& x, const ReduceOptions& options = {}, const Array& out = Array());
KJIT_API Array argmax(const Expr& x, const ReduceOptions& options = {}, const Array& out = Array());

// A ReductionKernel whose inputs are expressions: each expression becomes part of the kernel's map,
// and the whole is one kernel, cached by the kernel, the expressions' structure and dtypes.
//
//   kjit::ReductionKernel l2("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2");
//   kjit::Array distance = kjit::reduce(l2, {a - b});   // a - b is never stored
//
// `args` as for the kernel's call: an Expr (or Array) for each array input, a number or Scalar
// for a scalar parameter, then optionally an Array for each output. An expression binds its
// parameter's placeholder with its dtype, as an array would; `raw` inputs take arrays only.
struct ExprArg {
    ExprArg(const Expr& e) : expr(e) {}     // NOLINT(google-explicit-constructor)
    ExprArg(const Array& a) : expr(a) {}    // NOLINT(google-explicit-constructor)
    ExprArg(const Scalar& s) : number(s), is_number(true) {}  // NOLINT(google-explicit-constructor)
    template <class T, std::enable_if_t<detail::is_expr_number<T>, int> = 0>
    ExprArg(T v) : number(Scalar(v)), is_number(true) {}  // NOLINT(google-explicit-constructor)

    Expr expr{std::shared_ptr<const detail::ExprNode>()};
    Scalar number;
    bool is_number = false;
};
KJIT_API Outputs reduce(const ReductionKernel& kernel, std::initializer_list<ExprArg> args, const ReduceOptions& options = {});

}  // namespace kjit

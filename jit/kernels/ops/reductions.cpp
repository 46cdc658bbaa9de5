// kjit::sum, prod, min, max, mean: ReductionKernels written per input dtype (the result and
// accumulation dtypes are fixed by the input's), kept for the life of the process so that their
// plans (jit/kernels/reduction/calls.hpp) serve every later call.
#include "kjit/reductions.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <mutex>

#include "jit/kernels/ops/arg_reduction.hpp"
#include "jit/kernels/ops/builtin_reductions.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/reduce_layout.hpp"

namespace kjit {
namespace {

enum class Op { sum, prod, min, max, mean, count };
constexpr const char* kOpNames[] = {"sum", "prod", "min", "max", "mean"};

// The dtype partial results are kept in.
DType accumulation_dtype(Op op, DType t) {
    if (op == Op::min || op == Op::max) return t;
    if (t == DType::float16 || t == DType::bfloat16) return DType::float32;
    if (op == Op::mean && (t.is_bool() || t.is_integer())) return DType::float64;
    return sum_dtype(t);
}

DType result_dtype(Op op, DType t) {
    switch (op) {
        case Op::min:
        case Op::max: return t;
        case Op::mean: return mean_dtype(t);
        default: return sum_dtype(t);
    }
}

// The extreme value of `t` as an expression: the identity of min (largest) or max (smallest).
std::string extreme(DType t, bool largest) {
    auto text = [](auto v) { return std::to_string(v); };
    switch (t.id()) {
        case DType::bool_: return largest ? "true" : "false";
        case DType::int8: return largest ? text(127) : text(-128);
        case DType::int16: return largest ? text(32767) : text(-32768);
        case DType::int32: return largest ? "2147483647" : "(-2147483647 - 1)";
        case DType::int64: return largest ? "9223372036854775807ll" : "(-9223372036854775807ll - 1)";
        case DType::uint8: return largest ? "255" : "0";
        case DType::uint16: return largest ? "65535" : "0";
        case DType::uint32: return largest ? "4294967295u" : "0u";
        case DType::uint64: return largest ? "18446744073709551615ull" : "0ull";
        default: {
            // Infinity for the float types, made at run time (1 / 0 in IEEE arithmetic).
            const std::string inf = "(" + std::string(t.name()) + ")(1.0 / 0.0)";
            return largest ? inf : "-" + inf;
        }
    }
}

// The kernel of `op` over values of dtype `t`: those of the input x, or of `map` over `in`.
ReductionKernel make_kernel(Op op, DType t, std::string in = {}, std::string x = "x", std::string name = {}) {
    if (in.empty()) in = std::string(t.name()) + " x";
    const std::string out = std::string(result_dtype(op, t).name()) + " y";
    KernelOptions o;
    o.reduce_type = std::string(accumulation_dtype(op, t).name());
    if (name.empty()) name = std::string("kjit_") + kOpNames[static_cast<int>(op)];
    switch (op) {
        case Op::sum: return ReductionKernel(in, out, x, "a + b", "y = a", "0", name, o);
        case Op::prod: return ReductionKernel(in, out, x, "a * b", "y = a", "1", name, o);
        case Op::mean: return ReductionKernel(in, out, x, "a + b", "y = a / n", "0", name, o);
        case Op::min:
        case Op::max: {
            const bool is_min = op == Op::min;
            if (t.is_bool()) return ReductionKernel(in, out, x, is_min ? "a && b" : "a || b", "y = a", is_min ? "true" : "false", name, o);
            if (t.is_integer()) return ReductionKernel(in, out, x, is_min ? "b < a ? b : a" : "b > a ? b : a", "y = a", extreme(t, is_min), name, o);
            if (t.is_floating()) {
                // NaN wins; otherwise the smaller (larger) value.
                const std::string pick = is_min ? "b < a ? b : a" : "b > a ? b : a";
                return ReductionKernel(in, out, x, "a != a ? a : (b != b ? b : (" + pick + "))", "y = a", extreme(t, is_min), name, o);
            }
            // Complex: NaN in either part wins; otherwise by real part, then imaginary part. No
            // identity (there is no largest complex number).
            const std::string cmp = is_min ? "<" : ">";
            const std::string better = "(real(b) " + cmp + " real(a) || (real(b) == real(a) && imag(b) " + cmp + " imag(a)))";
            const std::string nan_a = "(real(a) != real(a) || imag(a) != imag(a))";
            const std::string nan_b = "(real(b) != real(b) || imag(b) != imag(b))";
            return ReductionKernel(in, out, x, nan_a + " ? a : (" + nan_b + " ? b : (" + better + " ? b : a))", "y = a", "", name, o);
        }
        case Op::count: break;
    }
    throw Error("unreachable");
}

const ReductionKernel& kernel_for(Op op, DType t) {
    static std::mutex mutex;
    static std::array<std::array<std::unique_ptr<ReductionKernel>, DType::count>, static_cast<int>(Op::count)> kernels;
    std::lock_guard lock(mutex);
    std::unique_ptr<ReductionKernel>& k = kernels[static_cast<int>(op)][t.id()];
    if (!k) k = std::make_unique<ReductionKernel>(make_kernel(op, t));
    return *k;
}

void refuse_empty(const char* what, const Array& x, const ReduceOptions& options) {
    jit::kernels::refuse_empty_reduction(what, x.shape(), options);
}

Array reduce(Op op, const Array& x, const ReduceOptions& options, const Array& out) {
    if (!x.valid()) throw TypeError(std::string("kjit::") + kOpNames[static_cast<int>(op)] + ": x is an empty kjit::Array");
    if (op == Op::min || op == Op::max) refuse_empty(kOpNames[static_cast<int>(op)], x, options);
    const ReductionKernel& k = kernel_for(op, x.dtype());
    if (out.valid()) {
        k.launch({x, out}, options);
        return out;
    }
    return k({x}, options);
}

}  // namespace

DType sum_dtype(DType t) {
    if (t.is_bool()) return DType::int64;
    if (t.is_integer()) return t.is_signed() ? DType::int64 : DType::uint64;
    return t;
}

DType mean_dtype(DType t) { return t.is_bool() || t.is_integer() ? DType::float64 : t; }

void jit::kernels::refuse_empty_reduction(const char* what, const Shape& shape, const ReduceOptions& options) {
    std::int64_t size = 1;
    for (std::int64_t d : shape) size *= d;
    if (size != 0) return;
    const int ndim = static_cast<int>(shape.size());
    std::vector<int> axes = detail::normalize_axes(options.axis ? *options.axis : std::vector<int>{}, ndim);
    if (options.axis && options.axis->empty()) axes.clear();
    std::int64_t reduced = 1, kept = 1;
    for (int d = 0; d < ndim; ++d) (std::find(axes.begin(), axes.end(), d) != axes.end() ? reduced : kept) *= shape[static_cast<std::size_t>(d)];
    if (reduced == 0 && kept != 0)
        throw Error(std::string("kjit::") + what + ": a reduction over zero elements (shape " + shape_to_string(shape) +
                    ") has no value: " + what + " has no identity");
}

const ReductionKernel& jit::kernels::builtin_reduction(std::string_view op, DType t) {
    for (int k = 0; k < static_cast<int>(Op::count); ++k)
        if (op == kOpNames[k]) return kernel_for(static_cast<Op>(k), t);
    throw Error("no built-in reduction '" + std::string(op) + "'");
}

ReductionKernel jit::kernels::builtin_reduction_of(std::string_view op, DType t, const std::string& in_params, const std::string& map,
                                                   const std::string& name) {
    for (int k = 0; k < static_cast<int>(Op::count); ++k)
        if (op == kOpNames[k]) return make_kernel(static_cast<Op>(k), t, in_params, map, name);
    throw Error("no built-in reduction '" + std::string(op) + "'");
}

Array sum(const Array& x, const ReduceOptions& options, const Array& out) { return reduce(Op::sum, x, options, out); }
Array prod(const Array& x, const ReduceOptions& options, const Array& out) { return reduce(Op::prod, x, options, out); }
Array min(const Array& x, const ReduceOptions& options, const Array& out) { return reduce(Op::min, x, options, out); }
Array max(const Array& x, const ReduceOptions& options, const Array& out) { return reduce(Op::max, x, options, out); }
Array mean(const Array& x, const ReduceOptions& options, const Array& out) { return reduce(Op::mean, x, options, out); }

namespace {

Array arg_reduce(bool max, const Array& x, const ReduceOptions& options, const Array& out) {
    const char* what = max ? "argmax" : "argmin";
    if (!x.valid()) throw TypeError(std::string("kjit::") + what + ": x is an empty kjit::Array");
    if (options.axis && options.axis->size() != 1)
        throw ShapeError(std::string("kjit::") + what + " takes one axis or none (the flattened array), not " +
                         std::to_string(options.axis->size()));
    refuse_empty(what, x, options);
    const ReductionKernel& k = jit::kernels::arg_reduction_kernel(max);
    if (out.valid()) {
        k.launch({x, out}, options);
        return out;
    }
    return k({x}, options);
}

}  // namespace

Array argmin(const Array& x, const ReduceOptions& options, const Array& out) { return arg_reduce(false, x, options, out); }
Array argmax(const Array& x, const ReduceOptions& options, const Array& out) { return arg_reduce(true, x, options, out); }

}  // namespace kjit

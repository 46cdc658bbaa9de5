// NumPy's reductions beyond sum, prod, min, max and mean (jit/kernels/ops/reductions.cpp): var and
// std, any, all, count_nonzero, nansum, nanmin, nanmax and nanmean. Each is one ReductionKernel
// per input dtype (and ddof), one pass over the data: var and nanmean keep a struct running value
// (a count with shifted sums, see variance_kernel; a sum with its count).
#include "kjit/reductions.hpp"

#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string_view>
#include <tuple>

#include <nlohmann/json.hpp>

#include "jit/kernels/ops/builtin_reductions.hpp"
#include "jit/kernels/reduction/calls.hpp"
#include "kjit/error.hpp"

namespace kjit {
namespace {

enum class Op { var, std_, any, all, count_nonzero, nansum, nanmin, nanmax, nanmean };
constexpr const char* kNames[] = {"var", "std", "any", "all", "count_nonzero", "nansum", "nanmin", "nanmax", "nanmean"};

std::string name_of(Op op) { return kNames[static_cast<int>(op)]; }

// `v != 0` for a value of dtype t, as NumPy's truth: NaN is true; complex is true when either part is.
std::string nonzero(DType t, const std::string& v) {
    if (t.is_bool()) return v;
    if (t.is_complex()) return "(real(" + v + ") != 0 || imag(" + v + ") != 0)";
    return "(" + v + " != 0)";
}

// True when a value of dtype t is NaN (a complex one when either part is).
std::string is_nan(DType t, const std::string& v) {
    if (t.is_complex()) return "(real(" + v + ") != real(" + v + ") || imag(" + v + ") != imag(" + v + "))";
    return "(" + v + " != " + v + ")";
}

// The dtype a float16 or bfloat16 sum runs in, as kjit::sum's.
DType accumulation(DType t) { return t == DType::float16 || t == DType::bfloat16 ? DType::float32 : t; }


std::string number(double v) {
    std::ostringstream s;
    s.precision(17);
    s << v;
    std::string text = s.str();
    if (text.find_first_of(".en") == std::string::npos) text += ".0";
    return text;
}

// NAME_ops::fold_vector of var on float32, float16 or bfloat16 data (templates/reduction.cuh's
// contract; `v` is the running value of variance_kernel, `ok` always true with its identity).
constexpr const char* kFloat32Fold = R"(        const auto v_x = kjit::load<vector>(args.x + off[0]);
        if (v.n == 0) v.shift = static_cast<double>(static_cast<float>(v_x.v[0]));
        const float shift = static_cast<float>(v.shift);
        float s = 0.0f, q = 0.0f;
#pragma unroll
        for (int k = 0; k < vector; ++k) {
            const float d = static_cast<float>(v_x.v[k]) - shift;
            s += d;
            q += d * d;
        }
        // A shift that is no float32 (never in a thread's own loop, which starts from its first
        // element), or squares past float32's range or NaN: element by element in float64.
        if (static_cast<double>(shift) != v.shift || !(q <= 3.0e38f)) {
            fold_vector_elements<Index>(v, ok, args, off, j, n);
            return;
        }
        v.n += vector;
        v.s += static_cast<double>(s);
        v.ss += static_cast<double>(q);
        ok = true;)";

// One pass without cancellation: a running value holds its count n, a shift (one of its own
// values), and the sum s and squared sum ss of its values minus the shift, so that folding in one
// element is a subtraction and two multiply-adds, no division (the division of Welford's update
// per element held kjit::var to 58% of copy, docs/perf-log.md). A single element is
// {1, x, 0, 0}; merging two larger values goes through their means and squared deviations
// (m2 = ss - s^2/n, exact but for rounding relative to (mean - shift)^2 / variance, which a shift
// drawn from the data keeps small) as Chan et al. do, and the result is {n, mean, 0, m2}, itself
// of this form. Complex data keeps complex shift and s, and sums |x - shift|^2.
ReductionKernel variance_kernel(DType t, double ddof, bool root) {
    const bool complex = t.is_complex();
    KernelOptions o;
    const std::string c = complex ? "complex128" : "float64";
    o.reduce_type = "struct { float64 n; " + c + " shift; " + c + " s; float64 ss; }";
    auto norm = [&](const std::string& v) {
        return complex ? "(real(" + v + ") * real(" + v + ") + imag(" + v + ") * imag(" + v + "))" : "(" + v + ") * (" + v + ")";
    };
    auto mean = [&](const std::string& r) { return "(" + r + ".shift + " + r + ".s / " + r + ".n)"; };
    // Rounding may leave m2 a hair below zero, which std's sqrt would make NaN; a NaN stays NaN.
    auto m2 = [&](const std::string& r) {
        const std::string v = "(" + r + ".ss - " + norm(r + ".s") + " / " + r + ".n)";
        return "(" + v + " < 0 ? 0.0 : " + v + ")";
    };
    // Field by field (a struct value is a brace list; its conditions are the same in each field):
    // an empty side gives the other; an element b (n = 1: the thread loop's v = reduce(v, map(x)),
    // a uniform branch there) folds in as x - a.shift; two larger values merge by Chan's formulas.
    const std::string d = "(" + mean("b") + " - " + mean("a") + ")", e = "(b.shift - a.shift)";
    auto pick = [&](const std::string& a_empty, const std::string& b_empty, const std::string& element, const std::string& merged) {
        return "(a.n == 0 ? " + a_empty + " : (b.n == 0 ? " + b_empty + " : (b.n == 1 ? " + element + " : " + merged + ")))";
    };
    const std::string reduce = "{a.n + b.n, " + pick("b.shift", "a.shift", "a.shift", mean("a") + " + " + d + " * (b.n / (a.n + b.n))") + ", " +
                               pick("b.s", "a.s", "a.s + " + e, "0") + ", " +
                               pick("b.ss", "a.ss", "a.ss + " + norm(e), m2("a") + " + " + m2("b") + " + " + norm(d) + " * (a.n * b.n / (a.n + b.n))") + "}";
    // NumPy divides by max(n - ddof, 0): NaN for no elements, infinity past the degrees of freedom.
    const std::string value = "(a.n == 0 ? 0.0 / 0.0 : " + m2("a") + ") / max(a.n - " + number(ddof) + ", 0.0)";
    const std::string post = "y = " + (root ? "sqrt(" + value + ")" : value);
    const std::string in = std::string(t.name()) + " x", out = std::string(var_dtype(t).name()) + " y";
    const std::string x = t.is_bool() ? "(x ? 1.0 : 0.0)" : "x";
    const std::string name = std::string("kjit_") + (root ? "std" : "var");
    ReductionKernel k(in, out, "{1, " + x + ", 0, 0}", reduce, post, "{0, 0, 0, 0}", name, o);
    if (t != DType::float32 && t != DType::float16 && t != DType::bfloat16) return k;
    // Folding each element into float64 sums costs more than reading it on an H200 (var at 69% of
    // copy, docs/perf-log.md): a vector's deviations from the shift and their squares are summed
    // in float32 first (exact for the differences of nearby float32 values, and rounding once per
    // square as NumPy's float32 var does), then added to the float64 sums once per vector.
    nlohmann::json entry;
    entry["kind"] = "builtin";
    entry["name"] = name;
    entry["types"] = nlohmann::json::array({nlohmann::json{{"T", std::string(t.name())}}});
    entry["ddof"] = ddof;
    return jit::ReductionKernelAccess::with_fold_vector(k, kFloat32Fold, entry.dump());
}

ReductionKernel make_kernel(Op op, DType t, double ddof) {
    const std::string in = std::string(t.name()) + " x";
    const std::string name = "kjit_" + name_of(op);
    KernelOptions o;
    switch (op) {
        case Op::var:
        case Op::std_: return variance_kernel(t, ddof, op == Op::std_);
        case Op::any:
            o.reduce_type = "bool";
            return ReductionKernel(in, "bool y", nonzero(t, "x"), "a || b", "y = a", "false", name, o);
        case Op::all:
            o.reduce_type = "bool";
            return ReductionKernel(in, "bool y", nonzero(t, "x"), "a && b", "y = a", "true", name, o);
        case Op::count_nonzero:
            o.reduce_type = "int64";
            return ReductionKernel(in, "int64 y", nonzero(t, "x") + " ? 1 : 0", "a + b", "y = a", "0", name, o);
        case Op::nansum: {
            o.reduce_type = std::string(accumulation(t).name());
            return ReductionKernel(in, std::string(sum_dtype(t).name()) + " y", is_nan(t, "x") + " ? 0 : x", "a + b", "y = a", "0", name, o);
        }
        case Op::nanmin:
        case Op::nanmax: {
            // NaN only where every value is NaN (NaN is the identity: any number replaces it).
            const std::string cmp = op == Op::nanmin ? "<" : ">";
            const std::string better = t.is_complex()
                                           ? "(real(b) " + cmp + " real(a) || (real(b) == real(a) && imag(b) " + cmp + " imag(a)))"
                                           : "b " + cmp + " a";
            const std::string reduce = is_nan(t, "a") + " ? b : (" + is_nan(t, "b") + " ? a : (" + better + " ? b : a))";
            const std::string nan = "(" + std::string(t.name()) + ")(0.0 / 0.0)";
            return ReductionKernel(in, std::string(t.name()) + " y", "x", reduce, "y = a", nan, name, o);
        }
        case Op::nanmean: {
            const DType acc = accumulation(t);
            o.reduce_type = "struct { " + std::string(acc.name()) + " s; int64 c; }";
            return ReductionKernel(in, std::string(mean_dtype(t).name()) + " y", "{" + is_nan(t, "x") + " ? 0 : x, " + is_nan(t, "x") + " ? 0 : 1}",
                                   "{a.s + b.s, a.c + b.c}", "y = a.s / a.c", "{0, 0}", name, o);
        }
    }
    throw Error("unreachable");
}

const ReductionKernel& kernel_for(Op op, DType t, double ddof = 0) {
    static std::mutex mutex;
    static std::map<std::tuple<int, int, double>, std::unique_ptr<ReductionKernel>> kernels;
    std::lock_guard lock(mutex);
    std::unique_ptr<ReductionKernel>& k = kernels[{static_cast<int>(op), t.id(), ddof}];
    if (!k) k = std::make_unique<ReductionKernel>(make_kernel(op, t, ddof));
    return *k;
}

Array run(const ReductionKernel& k, const Array& x, const ReduceOptions& options, const Array& out) {
    if (out.valid()) {
        k.launch({x, out}, options);
        return out;
    }
    return k({x}, options);
}

Array reduce(Op op, const Array& x, const ReduceOptions& options, const Array& out, double ddof = 0) {
    const std::string what = name_of(op);
    if (!x.valid()) throw TypeError("kjit::" + what + ": x is an empty kjit::Array");
    const DType t = x.dtype();
    // Where NaN cannot occur, the nan* functions are their plain twins (NumPy's too).
    const bool has_nan = t.is_floating() || t.is_complex();
    switch (op) {
        case Op::nansum:
            if (!has_nan) return sum(x, options, out);
            break;
        case Op::nanmin:
        case Op::nanmax:
            if (!has_nan) return op == Op::nanmin ? min(x, options, out) : max(x, options, out);
            jit::kernels::refuse_empty_reduction(what.c_str(), x.shape(), options);
            break;
        case Op::nanmean:
            if (!has_nan) return mean(x, options, out);
            break;
        case Op::var:
        case Op::std_:
            if (!std::isfinite(ddof) || ddof < 0)
                throw Error("kjit::" + what + ": ddof must be a finite number >= 0, not " + number(ddof));
            break;
        default: break;
    }
    return run(kernel_for(op, t, ddof), x, options, out);
}

}  // namespace

const ReductionKernel& jit::kernels::numpy_reduction(std::string_view op, DType t, double ddof) {
    for (int k = 0; k < static_cast<int>(std::size(kNames)); ++k)
        if (op == kNames[k]) return kernel_for(static_cast<Op>(k), t, ddof);
    throw Error("no NumPy reduction '" + std::string(op) + "'");
}

Array var(const Array& x, const ReduceOptions& options, double ddof, const Array& out) { return reduce(Op::var, x, options, out, ddof); }
Array std(const Array& x, const ReduceOptions& options, double ddof, const Array& out) { return reduce(Op::std_, x, options, out, ddof); }
Array any(const Array& x, const ReduceOptions& options, const Array& out) { return reduce(Op::any, x, options, out); }
Array all(const Array& x, const ReduceOptions& options, const Array& out) { return reduce(Op::all, x, options, out); }
Array count_nonzero(const Array& x, const ReduceOptions& options, const Array& out) {
    return reduce(Op::count_nonzero, x, options, out);
}
Array nansum(const Array& x, const ReduceOptions& options, const Array& out) { return reduce(Op::nansum, x, options, out); }
Array nanmin(const Array& x, const ReduceOptions& options, const Array& out) { return reduce(Op::nanmin, x, options, out); }
Array nanmax(const Array& x, const ReduceOptions& options, const Array& out) { return reduce(Op::nanmax, x, options, out); }
Array nanmean(const Array& x, const ReduceOptions& options, const Array& out) { return reduce(Op::nanmean, x, options, out); }

DType var_dtype(DType t) {
    if (t.is_bool() || t.is_integer()) return DType::float64;
    if (t.is_complex()) return t.real_type();
    return t;
}

}  // namespace kjit

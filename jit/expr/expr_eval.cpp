// Array expressions (include/kjit/expr.hpp): the public operators, and evaluation: the expression's
// kernel found by the key of its structure (made and kept on its first evaluation), then called
// with the expression's arrays and numbers as arguments.

#include "jit/expr/expr_node.hpp"
#include "jit/expr/expr_kernels.hpp"
#include "jit/expr/expr_source.hpp"
#include "jit/kernels/ops/builtin_reductions.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"
#include "kjit/reduction_kernel.hpp"
#include "kjit/reductions.hpp"

namespace kjit {
namespace {

using detail::ExprKey;
using detail::ExprNode;
using detail::ExprNodePtr;
using detail::FlatExpr;
using detail::expr_arguments;
using detail::expr_elementwise_kernels;
using detail::expr_reduction_kernels;

constexpr const char* kKernelName = "kjit_expr";

const Expr& checked(const Expr& e, const char* what) {
    if (!e.node()) throw TypeError(std::string("kjit::") + what + ": an empty expression");
    return e;
}

std::string out_params(std::span<const DType> outputs) {
    std::string p;
    for (std::size_t k = 0; k < outputs.size(); ++k) p += (k ? ", " : "") + std::string(outputs[k].name()) + " out" + std::to_string(k);
    return p;
}

std::string operation(const FlatExpr& flat, std::span<const ExprNode* const> roots) {
    std::string op = flat.locals();
    for (std::size_t k = 0; k < roots.size(); ++k) op += "out" + std::to_string(k) + " = " + flat.text(roots[k], false) + "; ";
    return op;
}

const ElementwiseKernel& elementwise_for(const FlatExpr& flat, std::span<const ExprNode* const> roots, std::span<const DType> outputs) {
    return expr_elementwise_kernels().get(flat.key(outputs, 0), [&] {
        return ElementwiseKernel(flat.in_params(), out_params(outputs), operation(flat, roots), kKernelName);
    });
}

constexpr std::uint64_t salt_of(std::string_view op) {
    std::uint64_t h = 1469598103934665603ull;
    for (char c : op) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h;
}

// Calls a reduction whose map is `flat`'s expression: into `out` when given.
Array run_reduction(const ReductionKernel& k, const FlatExpr& flat, const ReduceOptions& options, const Array& out) {
    std::vector<Scalar> values;
    std::vector<KernelArg> args = expr_arguments(flat, values);
    if (out.valid()) {
        args.emplace_back(out);
        k.launch(args, options);
        return out;
    }
    return k(args, options);
}

Array reduce(const char* op, const Expr& x, const ReduceOptions& options, const Array& out) {
    checked(x, op);
    if (std::string_view(op) == "min" || std::string_view(op) == "max") jit::kernels::refuse_empty_reduction(op, x.shape(), options);
    const ExprNode* root = x.node().get();
    const ExprNode* const roots[] = {root};
    const FlatExpr flat(roots);
    const DType t = root->dtype;
    const ReductionKernel& k = expr_reduction_kernels().get(flat.key(std::span<const DType>(&t, 1), salt_of(op)), [&] {
        // The map is one expression: a subexpression used twice is written twice (NVRTC computes
        // it once all the same).
        return jit::kernels::builtin_reduction_of(op, t, flat.in_params(), flat.text(root, true), kKernelName);
    });
    return run_reduction(k, flat, options, out);
}

}  // namespace

namespace detail {

ExprKernels<ElementwiseKernel>& expr_elementwise_kernels() {
    static auto* k = new ExprKernels<ElementwiseKernel>();  // never destroyed: used until exit
    return *k;
}
ExprKernels<ReductionKernel>& expr_reduction_kernels() {
    static auto* k = new ExprKernels<ReductionKernel>();
    return *k;
}

const ElementwiseKernel& expr_elementwise_kernel(const Expr& e) {
    checked(e, "expr_elementwise_kernel");
    const ExprNode* const roots[] = {e.node().get()};
    const FlatExpr flat(roots);
    const DType t = e.dtype();
    return elementwise_for(flat, roots, std::span<const DType>(&t, 1));
}

std::vector<KernelArg> expr_arguments(const FlatExpr& flat, std::vector<Scalar>& values) {
    values.clear();
    for (const ExprNode* s : flat.scalars()) values.push_back(s->value.cast(s->dtype));
    std::vector<KernelArg> args;
    args.reserve(flat.arrays().size() + values.size() + 4);
    for (const ExprNode* a : flat.arrays()) args.emplace_back(a->array);
    for (const Scalar& v : values) args.emplace_back(v);
    return args;
}

}  // namespace detail

Expr::Expr(const Array& array) {
    if (!array.valid()) throw TypeError("kjit::Expr: an empty kjit::Array");
    auto n = std::make_shared<ExprNode>();
    n->kind = ExprNode::Kind::array;
    n->dtype = array.dtype();
    n->shape = array.shape();
    n->device = array.device();
    n->has_device = true;
    n->array = array;
    node_ = std::move(n);
}

DType Expr::dtype() const noexcept { return node_ ? node_->dtype : DType(); }
const Shape& Expr::shape() const noexcept {
    static const Shape none;
    return node_ ? node_->shape : none;
}
Device Expr::device() const noexcept { return node_ ? node_->device : Device::cpu(); }

Expr weak_scalar(const Scalar& value) {
    auto n = std::make_shared<ExprNode>();
    n->kind = ExprNode::Kind::scalar;
    n->dtype = value.dtype();
    n->value = value;
    n->weak = true;
    return Expr(std::shared_ptr<const ExprNode>(std::move(n)));
}

Expr strong_scalar(const Scalar& value) {
    auto n = std::make_shared<ExprNode>();
    n->kind = ExprNode::Kind::scalar;
    n->dtype = value.dtype();
    n->value = value;
    return Expr(std::shared_ptr<const ExprNode>(std::move(n)));
}

Expr binary(ExprOp op, const Expr& a, const Expr& b) { return Expr(detail::make_op(op, {a.node(), b.node()})); }
Expr unary(ExprOp op, const Expr& a) { return Expr(detail::make_op(op, {a.node()})); }
Expr where(const Expr& condition, const Expr& x, const Expr& y) {
    return Expr(detail::make_op(ExprOp::where, {condition.node(), x.node(), y.node()}));
}
Expr Expr::astype(DType dtype) const { return Expr(detail::make_op(ExprOp::cast, {checked(*this, "astype").node()}, dtype)); }

std::string Expr::source() const {
    checked(*this, "Expr::source");
    const ExprNode* const roots[] = {node_.get()};
    const FlatExpr flat(roots);
    const DType t = node_->dtype;
    return "in:  " + flat.in_params() + "\nout: " + out_params(std::span<const DType>(&t, 1)) + "\nop:  " + operation(flat, roots) + "\n";
}

Array Expr::eval(const CallOptions& options) const {
    checked(*this, "Expr::eval");
    if (node_->kind == ExprNode::Kind::scalar) throw TypeError("kjit::Expr::eval: a number alone is not an array expression");
    const ExprNode* const roots[] = {node_.get()};
    const FlatExpr flat(roots);
    const DType t = node_->dtype;
    const ElementwiseKernel& k = elementwise_for(flat, roots, std::span<const DType>(&t, 1));
    std::vector<Scalar> values;
    const std::vector<KernelArg> args = expr_arguments(flat, values);
    return k(args, options);
}

void eval(std::initializer_list<ExprOutput> outputs, const CallOptions& options) {
    if (outputs.size() == 0) throw TypeError("kjit::eval: no outputs");
    std::vector<const ExprNode*> roots;
    std::vector<DType> types;
    for (const ExprOutput& o : outputs) {
        checked(o.value, "eval");
        if (!o.out.valid()) throw TypeError("kjit::eval: an output is an empty kjit::Array");
        roots.push_back(o.value.node().get());
        types.push_back(o.out.dtype());
    }
    const FlatExpr flat(roots);
    const ElementwiseKernel& k = elementwise_for(flat, roots, types);
    std::vector<Scalar> values;
    std::vector<KernelArg> args = expr_arguments(flat, values);
    for (const ExprOutput& o : outputs) args.emplace_back(o.out);
    k.launch(args, options);
}

void eval(const Array& out, const Expr& e, const CallOptions& options) { eval({ExprOutput{out, e}}, options); }

Array sum(const Expr& x, const ReduceOptions& options, const Array& out) { return reduce("sum", x, options, out); }
Array prod(const Expr& x, const ReduceOptions& options, const Array& out) { return reduce("prod", x, options, out); }
Array min(const Expr& x, const ReduceOptions& options, const Array& out) { return reduce("min", x, options, out); }
Array max(const Expr& x, const ReduceOptions& options, const Array& out) { return reduce("max", x, options, out); }
Array mean(const Expr& x, const ReduceOptions& options, const Array& out) { return reduce("mean", x, options, out); }
namespace {

// argmin/argmax of an expression in one kernel: the running value is the (value, index) pair of
// a struct, reduced in NumPy's order (the first NaN, else the first extreme value), which is
// total, so the result does not depend on the grouping.
Array arg_reduce(bool max, const Expr& x, const ReduceOptions& options, const Array& out) {
    const char* what = max ? "argmax" : "argmin";
    checked(x, what);
    if (options.axis && options.axis->size() != 1)
        throw ShapeError(std::string("kjit::") + what + " takes one axis or none (the flattened array), not " +
                         std::to_string(options.axis->size()));
    jit::kernels::refuse_empty_reduction(what, x.shape(), options);
    const ExprNode* root = x.node().get();
    const ExprNode* const roots[] = {root};
    const FlatExpr flat(roots);
    const DType t = root->dtype;
    if (t.is_complex())
        throw TypeError(std::string(what) + " of " + std::string(t.name()) +
                        ": kjit does not order complex numbers here (NumPy compares real parts, then imaginary parts)");
    const ReductionKernel& k = expr_reduction_kernels().get(flat.key(std::span<const DType>(&t, 1), salt_of(what)), [&] {
        KernelOptions o;
        o.reduce_type = "struct { " + std::string(t.name()) + " v; int64 at; }";
        const std::string better = max ? "b.v > a.v" : "b.v < a.v", worse = max ? "a.v > b.v" : "a.v < b.v";
        std::string reduce = "(" + better + " ? b : (" + worse + " ? a : (a.at <= b.at ? a : b)))";
        if (t.is_floating())
            reduce = "(a.v != a.v || b.v != b.v) ? ((a.v != a.v && b.v != b.v) ? (a.at <= b.at ? a : b) : (a.v != a.v ? a : b)) : " + reduce;
        return ReductionKernel(flat.in_params(), "int64 y", "{" + flat.text(root, true) + ", i}", reduce, "y = a.at", "", kKernelName, o);
    });
    return run_reduction(k, flat, options, out);
}

}  // namespace

Array argmin(const Expr& x, const ReduceOptions& options, const Array& out) { return arg_reduce(false, x, options, out); }
Array argmax(const Expr& x, const ReduceOptions& options, const Array& out) { return arg_reduce(true, x, options, out); }

}  // namespace kjit

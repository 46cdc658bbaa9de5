// Making expression nodes: NumPy's result dtypes (with NEP 50's weak scalars) and broadcast
// shapes, checked when the operator is applied.
#include <algorithm>

#include "jit/expr/expr_node.hpp"
#include "kjit/error.hpp"

namespace kjit::detail {
namespace {

int kind_rank(DType t) {
    if (t.is_bool()) return 0;
    if (t.is_integer()) return 1;
    if (t.is_floating()) return 2;
    return 3;
}

// NEP 50: a weak number of `weak`'s kind with an array of `strong`: the array's dtype when the
// number's kind is not above it, else the kind's default at the array's precision.
DType weak_with(DType strong, DType weak) {
    const int s = kind_rank(strong), w = kind_rank(weak);
    if (w <= s) return strong;
    switch (w) {
        case 1: return DType::int64;
        case 2: return DType::float64;
        default: return strong == DType::float64 || s < 2 ? DType::complex128 : DType::complex64;
    }
}

// Two weak numbers: the default dtype of the higher kind.
DType weak_default(DType a, DType b) {
    switch (std::max(kind_rank(a), kind_rank(b))) {
        case 0: return DType::bool_;
        case 1: return DType::int64;
        case 2: return DType::float64;
        default: return DType::complex128;
    }
}

bool is_weak(const ExprNodePtr& n) { return n->kind == ExprNode::Kind::scalar && n->weak; }

DType promote(const ExprNodePtr& a, const ExprNodePtr& b) {
    if (is_weak(a) && is_weak(b)) return weak_default(a->dtype, b->dtype);
    if (is_weak(a)) return weak_with(b->dtype, a->dtype);
    if (is_weak(b)) return weak_with(a->dtype, b->dtype);
    return result_type(a->dtype, b->dtype);
}

// NumPy's float loop for an integer input: the smallest float that holds it.
DType float_of(DType t) {
    switch (t.id()) {
        case DType::bool_:
        case DType::int8:
        case DType::uint8: return DType::float16;
        case DType::int16:
        case DType::uint16: return DType::float32;
        case DType::int32:
        case DType::uint32:
        case DType::int64:
        case DType::uint64: return DType::float64;
        default: return t;
    }
}

std::string describe(const ExprNodePtr& n) {
    switch (n->kind) {
        case ExprNode::Kind::array: return std::string(n->dtype.name()) + " array of shape " + shape_to_string(n->shape);
        case ExprNode::Kind::scalar: return n->weak ? "the number " + n->value.to_string() : "the scalar " + n->value.to_string();
        case ExprNode::Kind::op: break;
    }
    return std::string(n->dtype.name()) + " expression of shape " + shape_to_string(n->shape);
}

bool is_float_function(ExprOp op) {
    switch (op) {
        case ExprOp::sqrt: case ExprOp::rsqrt: case ExprOp::cbrt: case ExprOp::exp: case ExprOp::exp2: case ExprOp::expm1:
        case ExprOp::log: case ExprOp::log2: case ExprOp::log10: case ExprOp::log1p: case ExprOp::sin: case ExprOp::cos:
        case ExprOp::tan: case ExprOp::asin: case ExprOp::acos: case ExprOp::atan: case ExprOp::sinh: case ExprOp::cosh:
        case ExprOp::tanh: case ExprOp::asinh: case ExprOp::acosh: case ExprOp::atanh: case ExprOp::erf: case ExprOp::erfc:
            return true;
        default: return false;
    }
}

// A weak number resolved to `t` (a new leaf: nodes are shared and never change). An integer
// that `t` cannot hold is an error, as NumPy 2 makes it (NEP 50), not a value that wraps.
// A weak integer that integer dtype t cannot hold.
bool weak_int_outside(const ExprNodePtr& n, DType t) {
    return is_weak(n) && t.is_integer() && n->dtype.is_integer() && n->value.cast(t).to_double() != n->value.to_double();
}

ExprNodePtr resolved(const ExprNodePtr& n, DType t) {
    if (!is_weak(n) || n->dtype == t) return n;
    if (weak_int_outside(n, t))
        throw TypeError("kjit: the number " + n->value.to_string() + " does not fit " + std::string(t.name()) +
                        ", the dtype it takes beside the array (NumPy 2 refuses it too): pass a kjit::Scalar of a wider "
                        "dtype, or astype() the array");
    auto r = std::make_shared<ExprNode>(*n);
    r->dtype = t;
    return r;
}

// The float functions the kernel language also defines for complex numbers (its math table).
bool takes_complex(ExprOp op) {
    switch (op) {
        case ExprOp::sqrt: case ExprOp::exp: case ExprOp::log: case ExprOp::sin: case ExprOp::cos: case ExprOp::tan:
        case ExprOp::sinh: case ExprOp::cosh: case ExprOp::tanh:
            return true;
        default: return false;
    }
}

bool is_comparison(ExprOp op) {
    return op == ExprOp::less || op == ExprOp::less_equal || op == ExprOp::greater || op == ExprOp::greater_equal ||
           op == ExprOp::equal || op == ExprOp::not_equal;
}

}  // namespace

const char* op_name(ExprOp op) {
    switch (op) {
        case ExprOp::add: return "+";
        case ExprOp::subtract: return "-";
        case ExprOp::multiply: return "*";
        case ExprOp::divide: return "/";
        case ExprOp::remainder: return "%";
        case ExprOp::power: return "power";
        case ExprOp::less: return "<";
        case ExprOp::less_equal: return "<=";
        case ExprOp::greater: return ">";
        case ExprOp::greater_equal: return ">=";
        case ExprOp::equal: return "==";
        case ExprOp::not_equal: return "!=";
        case ExprOp::logical_and: return "&&";
        case ExprOp::logical_or: return "||";
        case ExprOp::bit_and: return "&";
        case ExprOp::bit_or: return "|";
        case ExprOp::bit_xor: return "^";
        case ExprOp::shift_left: return "<<";
        case ExprOp::shift_right: return ">>";
        case ExprOp::minimum: return "minimum";
        case ExprOp::maximum: return "maximum";
        case ExprOp::atan2: return "atan2";
        case ExprOp::hypot: return "hypot";
        case ExprOp::fmod: return "fmod";
        case ExprOp::copysign: return "copysign";
        case ExprOp::negative: return "unary -";
        case ExprOp::logical_not: return "!";
        case ExprOp::bit_not: return "~";
        case ExprOp::abs: return "abs";
        case ExprOp::sqrt: return "sqrt";
        case ExprOp::rsqrt: return "rsqrt";
        case ExprOp::cbrt: return "cbrt";
        case ExprOp::exp: return "exp";
        case ExprOp::exp2: return "exp2";
        case ExprOp::expm1: return "expm1";
        case ExprOp::log: return "log";
        case ExprOp::log2: return "log2";
        case ExprOp::log10: return "log10";
        case ExprOp::log1p: return "log1p";
        case ExprOp::sin: return "sin";
        case ExprOp::cos: return "cos";
        case ExprOp::tan: return "tan";
        case ExprOp::asin: return "asin";
        case ExprOp::acos: return "acos";
        case ExprOp::atan: return "atan";
        case ExprOp::sinh: return "sinh";
        case ExprOp::cosh: return "cosh";
        case ExprOp::tanh: return "tanh";
        case ExprOp::asinh: return "asinh";
        case ExprOp::acosh: return "acosh";
        case ExprOp::atanh: return "atanh";
        case ExprOp::erf: return "erf";
        case ExprOp::erfc: return "erfc";
        case ExprOp::floor: return "floor";
        case ExprOp::ceil: return "ceil";
        case ExprOp::trunc: return "trunc";
        case ExprOp::rint: return "rint";
        case ExprOp::isnan: return "isnan";
        case ExprOp::isinf: return "isinf";
        case ExprOp::isfinite: return "isfinite";
        case ExprOp::signbit: return "signbit";
        case ExprOp::where: return "where";
        case ExprOp::cast: return "astype";
        case ExprOp::real: return "real";
        case ExprOp::imag: return "imag";
        case ExprOp::conj: return "conj";
    }
    return "?";
}

ExprNodePtr make_op(ExprOp op, std::vector<ExprNodePtr> operands, DType cast_to) {
    const auto fail = [&](const std::string& why) -> TypeError {
        std::string what = std::string("kjit: ") + op_name(op) + " of ";
        for (std::size_t k = 0; k < operands.size(); ++k)
            what += (k == 0 ? "" : k + 1 == operands.size() ? " and " : ", ") + describe(operands[k]);
        return TypeError(what + ": " + why);
    };
    for (const ExprNodePtr& o : operands)
        if (!o) throw TypeError(std::string("kjit: ") + op_name(op) + " of an empty expression");
    auto n = std::make_shared<ExprNode>();
    n->kind = ExprNode::Kind::op;
    n->op = op;
    for (const ExprNodePtr& o : operands) n->height = std::max(n->height, o->height + 1);
    if (n->height > kMaxExprHeight)
        throw Error(std::string("kjit: ") + op_name(op) + ": the expression would nest " + std::to_string(n->height) +
                    " operators deep (the limit is " + std::to_string(kMaxExprHeight) +
                    "); evaluate part of it into an array first (a loop that adds one array at a time builds such a chain)");
    // Shape and device: the arrays' broadcast, on one device.
    std::vector<Shape> shapes;
    for (const ExprNodePtr& o : operands) {
        shapes.push_back(o->shape);
        if (!o->has_device) continue;
        if (n->has_device && o->device != n->device)
            throw fail("the arrays are on " + n->device.to_string() + " and " + o->device.to_string() + "; move them to one device");
        n->device = o->device;
        n->has_device = true;
    }
    try {
        n->shape = broadcast_shapes(shapes);
    } catch (const ShapeError&) {
        std::string what = std::string("kjit: ") + op_name(op) + ": the shapes of ";
        for (std::size_t k = 0; k < operands.size(); ++k)
            what += (k == 0 ? "" : k + 1 == operands.size() ? " and " : ", ") + describe(operands[k]);
        throw ShapeError(what + " do not broadcast together");
    }
    const DType t0 = operands[0]->dtype;
    const auto no_complex = [&](DType t) {
        if (t.is_complex()) throw fail("not defined for complex numbers");
    };
    if (operands.size() == 1) {
        n->compute = t0;
        n->dtype = t0;
        switch (op) {
            case ExprOp::negative:
                if (t0.is_bool()) throw fail("negating booleans is not defined; use ! (logical not)");
                break;
            case ExprOp::logical_not: n->compute = DType::bool_, n->dtype = DType::bool_; break;
            case ExprOp::bit_not:
                if (!t0.is_integer() && !t0.is_bool()) throw fail("needs an integer or bool operand");
                break;
            case ExprOp::abs: n->dtype = t0.is_complex() ? t0.real_type() : t0; break;
            case ExprOp::real: case ExprOp::imag: n->dtype = t0.is_complex() ? t0.real_type() : t0; break;
            case ExprOp::conj: break;
            case ExprOp::floor: case ExprOp::ceil: case ExprOp::trunc: case ExprOp::rint: no_complex(t0); break;
            case ExprOp::isnan: case ExprOp::isinf: case ExprOp::isfinite: case ExprOp::signbit:
                no_complex(t0);
                n->compute = float_of(t0);
                n->dtype = DType::bool_;
                break;
            case ExprOp::cast:
                if (t0.is_complex() && !cast_to.is_complex())
                    throw fail(std::string("casting complex to ") + std::string(cast_to.name()) + " would drop the imaginary part; take real() first");
                n->compute = t0;
                n->dtype = cast_to;
                break;
            default:
                if (!is_float_function(op)) throw fail("is not a function of one operand");
                if (!takes_complex(op)) no_complex(t0);
                n->compute = float_of(t0);
                n->dtype = n->compute;
        }
        n->operands = std::move(operands);
        return n;
    }
    if (op == ExprOp::where) {
        if (operands.size() != 3) throw fail("takes a condition and two values");
        const DType t = promote(operands[1], operands[2]);
        operands[0] = resolved(operands[0], DType::bool_);
        operands[1] = resolved(operands[1], t);
        operands[2] = resolved(operands[2], t);
        n->compute = t;
        n->dtype = t;
        n->operands = std::move(operands);
        return n;
    }
    DType t = promote(operands[0], operands[1]);
    if (const bool right = weak_int_outside(operands[1], t); is_comparison(op) && (right || weak_int_outside(operands[0], t))) {
        // An integer array against a number outside its dtype: NumPy 2 answers, and the answer is
        // the same for every element (x < 300 for uint8 x): x == x or x != x, by the number's side.
        const ExprNodePtr& x = right ? operands[0] : operands[1];
        const bool x_less = (right ? operands[1] : operands[0])->value.to_double() > 0;  // every x is below the number
        bool result = false;
        switch (op) {
            case ExprOp::less: case ExprOp::less_equal: result = right ? x_less : !x_less; break;
            case ExprOp::greater: case ExprOp::greater_equal: result = right ? !x_less : x_less; break;
            case ExprOp::not_equal: result = true; break;
            default: result = false;  // equal
        }
        return make_op(result ? ExprOp::equal : ExprOp::not_equal, {x, x});
    }
    n->dtype = t;
    switch (op) {
        case ExprOp::add: case ExprOp::multiply: break;
        case ExprOp::subtract:
            if (t.is_bool()) throw fail("subtracting booleans is not defined (NumPy refuses it too); use ^ or !=");
            break;
        case ExprOp::divide:
            if (t.is_bool() || t.is_integer()) t = DType::float64;  // true division, as NumPy
            n->dtype = t;
            break;
        case ExprOp::remainder:
            no_complex(t);
            if (t.is_bool()) throw fail("remainder of booleans is not defined");
            break;
        case ExprOp::power:
            if (t.is_bool()) throw fail("power of booleans is not defined");
            break;
        case ExprOp::less: case ExprOp::less_equal: case ExprOp::greater: case ExprOp::greater_equal:
            no_complex(t);
            n->dtype = DType::bool_;
            break;
        case ExprOp::equal: case ExprOp::not_equal: n->dtype = DType::bool_; break;
        case ExprOp::logical_and: case ExprOp::logical_or:
            t = DType::bool_;
            n->dtype = DType::bool_;
            break;
        case ExprOp::bit_and: case ExprOp::bit_or: case ExprOp::bit_xor:
            if (!t.is_integer() && !t.is_bool()) throw fail("needs integer or bool operands");
            break;
        case ExprOp::shift_left: case ExprOp::shift_right:
            if (!t.is_integer()) throw fail("needs integer operands");
            break;
        case ExprOp::minimum: case ExprOp::maximum: no_complex(t); break;
        case ExprOp::fmod:
            no_complex(t);
            if (t.is_bool()) throw fail("fmod of booleans is not defined");
            if (t.is_integer()) break;  // C's %, the dividend's sign, as NumPy's integer fmod
            t = float_of(t);
            n->dtype = t;
            break;
        case ExprOp::atan2: case ExprOp::hypot: case ExprOp::copysign:
            no_complex(t);
            t = float_of(t);
            n->dtype = t;
            break;
        default: throw fail("is not a function of two operands");
    }
    n->compute = t;
    // Logical operators take their operands as they are (any nonzero is true); the others
    // convert both to the compute dtype, where a weak number takes it.
    const DType operand_type = op == ExprOp::logical_and || op == ExprOp::logical_or ? DType::bool_ : t;
    for (ExprNodePtr& o : operands) o = resolved(o, is_weak(o) && operand_type == DType::bool_ ? weak_default(o->dtype, o->dtype) : operand_type);
    n->operands = std::move(operands);
    return n;
}

}  // namespace kjit::detail

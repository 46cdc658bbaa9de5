#include "jit/codegen/statement_printer.hpp"

#include <algorithm>
#include <sstream>

#include "jit/frontend/conversions.hpp"
#include "jit/frontend/atomic_functions.hpp"
#include "jit/frontend/math_functions.hpp"
#include "jit/frontend/parser.hpp"
#include "jit/codegen/templates.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::codegen {

using namespace frontend;

namespace {

// --- conversions ---

bool is_16bit_float(DType t) { return t.id() == DType::float16 || t.id() == DType::bfloat16; }

// Whether generated code must spell a conversion out: CUDA's half, bfloat16 and kjit's complex
// have constructors and operators that would otherwise be ambiguous or round twice; C's own
// types convert implicitly exactly as C says.
bool needs_explicit(DType from, DType to) {
    return !(from == to) && (is_16bit_float(from) || is_16bit_float(to) || from.is_complex() || to.is_complex());
}

std::string to_float_from_16(const std::string& e, DType from) {
    return (from.id() == DType::float16 ? "__half2float(" : "__bfloat162float(") + e + ")";
}

// A primary expression converting `e` (of type `from`) to `to`.
std::string convert(const std::string& e, DType from, DType to) {
    if (from == to) return e;
    const std::string t = cuda_type(to);
    if (to.is_complex()) {
        const std::string part = cuda_type(to.real_type());
        if (from.is_complex())
            return t + "((" + part + ")kjit::real(" + e + "), (" + part + ")kjit::imag(" + e + "))";
        if (is_16bit_float(from)) return t + "((" + part + ")" + to_float_from_16(e, from) + ")";
        return t + "((" + part + ")(" + e + "))";
    }
    if (is_16bit_float(to)) {
        const char* from_double = to.id() == DType::float16 ? "__double2half(" : "__double2bfloat16(";
        if (is_16bit_float(from)) return std::string(from_double) + "(double)" + to_float_from_16(e, from) + ")";
        return std::string(from_double) + "(double)(" + e + "))";
    }
    if (is_16bit_float(from)) {
        if (to.is_bool()) return "(" + to_float_from_16(e, from) + " != 0.0f)";
        return "((" + t + ")" + to_float_from_16(e, from) + ")";
    }
    return "((" + t + ")(" + e + "))";
}

// --- expressions ---

// C's precedence levels, higher binds tighter.
enum Prec { kComma = 1, kAssign = 2, kConditional = 3, kLogicalOr = 4, kLogicalAnd = 5, kBitOr = 6, kBitXor = 7, kBitAnd = 8,
            kEquality = 9, kRelational = 10, kShift = 11, kAdditive = 12, kMultiplicative = 13, kUnary = 15,
            kPostfix = 16 };

int precedence(BinaryOp op) {
    switch (op) {
        case BinaryOp::mul: case BinaryOp::div: case BinaryOp::mod: return kMultiplicative;
        case BinaryOp::add: case BinaryOp::sub: return kAdditive;
        case BinaryOp::shl: case BinaryOp::shr: return kShift;
        case BinaryOp::lt: case BinaryOp::gt: case BinaryOp::le: case BinaryOp::ge: return kRelational;
        case BinaryOp::eq: case BinaryOp::ne: return kEquality;
        case BinaryOp::bit_and: return kBitAnd;
        case BinaryOp::bit_xor: return kBitXor;
        case BinaryOp::bit_or: return kBitOr;
        case BinaryOp::logical_and: return kLogicalAnd;
        case BinaryOp::logical_or: return kLogicalOr;
        case BinaryOp::comma: return kComma;
    }
    return kAssign;
}

const char* spelling(BinaryOp op) {
    static const char* const k[] = {"*", "/", "%", "+", "-", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "&", "^", "|", "&&", "||", ","};
    return k[static_cast<int>(op)];
}

const char* spelling(AssignOp op) {
    static const char* const k[] = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};
    return k[static_cast<int>(op)];
}

BinaryOp binary_of(AssignOp op) {
    static const BinaryOp k[] = {BinaryOp::add, BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div, BinaryOp::mod,
                                 BinaryOp::bit_and, BinaryOp::bit_or, BinaryOp::bit_xor, BinaryOp::shl, BinaryOp::shr};
    return k[static_cast<int>(op)];
}

class Printer {
public:
    Printer(const CheckedKernel& kernel, const BodyOrigin& origin) : kernel_(kernel), origin_(origin) {}

    std::string expr(const Expr& e, int min_prec) {
        int prec = kPostfix;
        std::string s = expr_text(e, prec);
        return prec < min_prec ? "(" + s + ")" : s;
    }

    // `e` converted to `to` (when its type is known and differs in a way that needs spelling).
    std::string expr_as(const Expr& e, const std::optional<DType>& to, int min_prec) {
        if (e.type && to && needs_explicit(*e.type, *to)) return convert(expr(e, kPostfix), *e.type, *to);
        return expr(e, min_prec);
    }

    // A type as written in the body: placeholders stay (the body declares them), dtype names
    // become their CUDA spelling.
    std::string type(const TypeName& t, const std::optional<DType>& resolved) const {
        if (is_placeholder_name(t.spelling)) return t.spelling;
        return resolved ? cuda_type(*resolved) : t.spelling;
    }

    void stmt(const Stmt& s, int indent, std::ostringstream& out) {
        const std::string pad(static_cast<std::size_t>(indent) * 4, ' ');
        if (s.pos.line > 0) out << "#line " << s.pos.line << " \"" << origin_.file << "\"\n";
        switch (s.kind) {
            case StmtKind::expr:
                out << pad << expr(*static_cast<const ExprStmt&>(s).expr, 0) << ";\n";
                return;
            case StmtKind::decl:
                out << pad << decl(static_cast<const DeclStmt&>(s)) << ";\n";
                return;
            case StmtKind::block: {
                out << pad << "{\n";
                for (const StmtPtr& b : static_cast<const BlockStmt&>(s).body) stmt(*b, indent + 1, out);
                out << pad << "}\n";
                return;
            }
            case StmtKind::if_: {
                const auto& st = static_cast<const IfStmt&>(s);
                out << pad << "if (" << condition(*st.condition) << ")\n";
                nested(*st.then_branch, indent, out);
                if (st.else_branch) {
                    out << pad << "else\n";
                    nested(*st.else_branch, indent, out);
                }
                return;
            }
            case StmtKind::for_: {
                const auto& st = static_cast<const ForStmt&>(s);
                std::string init;
                if (st.init && st.init->kind == StmtKind::decl) init = decl(static_cast<const DeclStmt&>(*st.init));
                if (st.init && st.init->kind == StmtKind::expr) init = expr(*static_cast<const ExprStmt&>(*st.init).expr, 0);
                out << pad << "for (" << init << "; " << (st.condition ? condition(*st.condition) : "") << "; "
                    << (st.step ? expr(*st.step, 0) : "") << ")\n";
                nested(*st.body, indent, out);
                return;
            }
            case StmtKind::while_: {
                const auto& st = static_cast<const WhileStmt&>(s);
                out << pad << "while (" << condition(*st.condition) << ")\n";
                nested(*st.body, indent, out);
                return;
            }
            case StmtKind::break_: out << pad << "break;\n"; return;
            case StmtKind::continue_: out << pad << "continue;\n"; return;
            case StmtKind::empty: out << pad << ";\n"; return;
        }
    }

private:
    void nested(const Stmt& s, int indent, std::ostringstream& out) {
        stmt(s, s.kind == StmtKind::block ? indent : indent + 1, out);
    }

    std::string condition(const Expr& e) { return expr_as(e, DType(DType::bool_), 0); }

    // loop_prep's top-level declarations: the state struct holds the variables (codegen/elementwise.cpp), so
    // a declaration is the assignment of its initial values.
    std::string state_decl(const DeclStmt& d) {
        std::string s;
        auto add = [&](const std::string& target, const Expr& value, const std::optional<DType>& t) {
            s += (s.empty() ? "" : ", ") + target + " = " + expr_as(value, t, kAssign);
        };
        for (const Declarator& decl : d.declarators) {
            const std::optional<DType> t = kernel_.locals[decl.local].type;
            const std::string target = std::string(kStateName) + "." + decl.name;
            if (decl.init) add(target, *decl.init, t);
            for (std::size_t k = 0; k < decl.elements.size(); ++k) add(target + "[" + std::to_string(k) + "]", *decl.elements[k], t);
            // C value-initialises the elements a brace list leaves out.
            for (std::size_t k = decl.elements.size(); decl.has_list && t && k < static_cast<std::size_t>(decl.array_length); ++k)
                s += (s.empty() ? "" : ", ") + target + "[" + std::to_string(k) + "] = " + cuda_type(*t) + "()";
        }
        return s.empty() ? "(void)0" : s;
    }

    std::string decl(const DeclStmt& d) {
        if (!d.declarators.empty() && kernel_.locals[d.declarators.front().local].in_state) return state_decl(d);
        std::string s = d.is_const ? "const " : "";
        const Local* first = d.declarators.empty() ? nullptr : &kernel_.locals[d.declarators.front().local];
        // `auto` is printed as the type kjit computed, so CUDA cannot deduce another.
        s += d.type.spelling == "auto" ? cuda_type(*first->type) : type(d.type, first->type);
        bool comma = false;
        for (const Declarator& decl : d.declarators) {
            s += comma ? ", " : " ";
            comma = true;
            s += decl.name;
            const std::optional<DType> t = kernel_.locals[decl.local].type;
            if (decl.array_length >= 0) {
                s += "[" + std::to_string(decl.array_length) + "]";
                if (decl.has_list) {
                    std::string list;
                    for (const ExprPtr& v : decl.elements) list += (list.empty() ? "" : ", ") + expr_as(*v, t, kAssign);
                    s += " = {" + list + "}";
                }
            }
            if (decl.init) s += " = " + expr_as(*decl.init, t, kAssign);
        }
        return s;
    }

    std::string expr_text(const Expr& e, int& prec) {
        switch (e.kind) {
            case ExprKind::int_literal: return static_cast<const IntLiteral&>(e).text;
            case ExprKind::float_literal: return static_cast<const FloatLiteral&>(e).text;
            case ExprKind::bool_literal: return static_cast<const BoolLiteral&>(e).value ? "true" : "false";
            case ExprKind::name: {
                const auto& n = static_cast<const NameExpr&>(e);
                if (n.refers_to == NameKind::constant) return kernel_.constants[static_cast<std::size_t>(n.index)].spelling;
                if (n.refers_to == NameKind::local && kernel_.locals[static_cast<std::size_t>(n.index)].in_state)
                    return std::string(kStateName) + "." + n.name;
                return n.name;
            }
            case ExprKind::unary: return unary(static_cast<const UnaryExpr&>(e), prec);
            case ExprKind::binary: return binary(static_cast<const BinaryExpr&>(e), prec);
            case ExprKind::assign: return assign(static_cast<const AssignExpr&>(e), prec);
            case ExprKind::conditional: {
                const auto& c = static_cast<const ConditionalExpr&>(e);
                prec = kConditional;
                return condition_operand(*c.condition) + " ? " + expr_as(*c.if_true, e.type, kAssign) + " : " +
                       expr_as(*c.if_false, e.type, kConditional);
            }
            case ExprKind::cast: return cast(static_cast<const CastExpr&>(e), prec);
            case ExprKind::call: return call(static_cast<const CallExpr&>(e));
            case ExprKind::index: {
                const auto& ix = static_cast<const IndexExpr&>(e);
                return expr(*ix.base, kPostfix) + "[" + expr(*ix.index, 0) + "]";
            }
            case ExprKind::member: {
                const auto& m = static_cast<const MemberExpr&>(e);
                if (static_cast<const NameExpr&>(*m.base).refers_to == NameKind::size_n) return "n";  // CuPy's _ind.size()
                return expr(*m.base, kPostfix) + "." + m.member + (m.called ? "()" : "");
            }
        }
        return {};
    }

    std::string condition_operand(const Expr& e) {
        if (e.type && needs_explicit(*e.type, DType::bool_)) return convert(expr(e, kPostfix), *e.type, DType::bool_);
        return expr(e, kLogicalOr);
    }

    std::string unary(const UnaryExpr& u, int& prec) {
        switch (u.op) {
            case UnaryOp::post_increment: return expr(*u.operand, kPostfix) + "++";
            case UnaryOp::post_decrement: return expr(*u.operand, kPostfix) + "--";
            default: break;
        }
        prec = kUnary;
        switch (u.op) {
            case UnaryOp::plus: return "+" + expr(*u.operand, kUnary);
            case UnaryOp::minus: return "-" + expr(*u.operand, kUnary);
            case UnaryOp::logical_not: return "!" + expr_as(*u.operand, DType(DType::bool_), kUnary);
            case UnaryOp::bit_not: return "~" + expr(*u.operand, kUnary);
            case UnaryOp::pre_increment: return "++" + expr(*u.operand, kUnary);
            case UnaryOp::pre_decrement: return "--" + expr(*u.operand, kUnary);
            default: return {};
        }
    }

    std::string binary(const BinaryExpr& b, int& prec) {
        prec = precedence(b.op);
        if (b.op == BinaryOp::comma) return expr(*b.lhs, kComma) + ", " + expr(*b.rhs, kAssign);
        const std::optional<DType> operand = b.operand_type;
        // Spaces around every operator but the multiplicative ones inside sums read as written.
        return expr_as(*b.lhs, operand, prec) + " " + spelling(b.op) + " " + expr_as(*b.rhs, operand, prec + 1);
    }

    std::string assign(const AssignExpr& a, int& prec) {
        prec = kAssign;
        const std::optional<DType> target = a.target->type;
        const std::string lhs = expr(*a.target, kUnary);
        if (a.op == AssignOp::assign) return lhs + " = " + expr_as(*a.value, target, kAssign);
        // Compound assignment: written out when a conversion must be spelled, so that the
        // operation happens in the common type and the result converts back once.
        if (target && a.value->type) {
            const DType common = usual_common(*target, *a.value->type, a.op);
            if (needs_explicit(*target, common) || needs_explicit(*a.value->type, common)) {
                const std::string op = std::string(" ") + spelling(binary_of(a.op)) + " ";
                const std::string computed = convert(lhs, *target, common) + op + convert(expr(*a.value, kPostfix), *a.value->type, common);
                return lhs + " = " + convert("(" + computed + ")", common, *target);
            }
        }
        return lhs + " " + spelling(a.op) + " " + expr(*a.value, kAssign);
    }

    static DType usual_common(DType target, DType value, AssignOp op) {
        if (op == AssignOp::shl || op == AssignOp::shr) return target;
        return usual_arithmetic_conversion(target, value);
    }

    std::string cast(const CastExpr& c, int& prec) {
        const std::optional<DType> from = c.operand->type;
        if (from && c.type && needs_explicit(*from, *c.type)) return convert(expr(*c.operand, kPostfix), *from, *c.type);
        const std::string t = type(c.target, c.type);
        switch (c.style) {
            case CastStyle::functional:
                if (t.find(' ') == std::string::npos) return t + "(" + expr(*c.operand, 0) + ")";
                [[fallthrough]];  // "unsigned int(x)" is not C++: print it C-style
            case CastStyle::c_style:
                prec = kUnary;
                return "(" + t + ")" + expr(*c.operand, kUnary);
            case CastStyle::static_cast_:
                return "static_cast<" + t + ">(" + expr(*c.operand, 0) + ")";
        }
        return {};
    }

    std::string call(const CallExpr& c) {
        if (find_atomic_function(c.callee) != nullptr) {
            // kjit::atomic_add(&element, value) & co. (templates/atomics.cuh), values converted to
            // the element's type.
            const DType t = *c.type;
            std::string args = "&" + expr(*c.args[0], kPostfix);
            for (std::size_t k = 1; k < c.args.size(); ++k) args += ", " + expr_as(*c.args[k], t, kAssign);
            return "kjit::" + c.callee + "(" + args + ")";
        }
        const MathFunction* f = find_math_function(c.callee);
        std::string args;
        if (f == nullptr) {  // a preamble function: called as written
            for (const ExprPtr& a : c.args) args += (args.empty() ? "" : ", ") + expr(*a, kAssign);
            return c.callee + "(" + args + ")";
        }
        std::vector<DType> types;
        for (const ExprPtr& a : c.args) types.push_back(*a->type);
        const DType compute = math_compute_type(*f, types);
        const DType result = *c.type;
        // Reals given to the complex-only functions: spelled directly, computed in `compute`.
        if (!compute.is_complex() && (f->kind == MathKind::complex_part || f->kind == MathKind::conj)) {
            if (f->name == "real" || f->name == "conj") return expr_as(*c.args[0], result, kPostfix);
            if (f->name == "imag") return convert("((" + cuda_type(compute) + ")0)", compute, result);
            const std::string x = expr_as(*c.args[0], compute, kPostfix);
            if (f->name == "norm") return convert("(" + x + " * " + x + ")", compute, result);
            const bool single = compute.id() == DType::float32;
            return convert(std::string(single ? "atan2f(0.0f, " : "atan2(0.0, ") + x + ")", compute, result);
        }
        if (f->kind == MathKind::abs && compute.kind() == DTypeKind::unsigned_int)
            return expr_as(*c.args[0], result, kPostfix);  // |u| == u
        // CUDA has isnan & co. for floats only; an integer is never NaN or infinite, as in C (and
        // as the host back end computes it). The argument is still evaluated, for its effects.
        if (f->kind == MathKind::predicate && !compute.is_floating() && !compute.is_complex()) {
            const std::string x = expr(*c.args[0], kAssign);
            if (f->name == "signbit" && compute.is_signed()) return "(" + x + " < 0)";
            return "((void)(" + x + "), " + (f->name == "isfinite" ? "true" : "false") + ")";
        }
        for (std::size_t k = 0; k < c.args.size(); ++k) {
            // ldexp's exponent stays an int; everything else computes in `compute`.
            const DType want = (f->kind == MathKind::ldexp && k == 1) ? DType(DType::int32) : compute;
            // Every argument of another type is converted explicitly: CUDA overloads the math
            // functions for float and double only, so sqrt(short) would be ambiguous.
            const Expr& a = *c.args[k];
            const std::string arg = (a.type && !(*a.type == want)) ? convert(expr(a, kPostfix), *a.type, want) : expr(a, kAssign);
            args += (args.empty() ? "" : ", ") + arg;
        }
        const std::string called = cuda_math_name(*f, compute) + "(" + args + ")";
        // The type CUDA's function returns, converted to what kjit says the call is.
        DType returned = compute;
        if (f->kind == MathKind::predicate) returned = DType::bool_;
        if (f->kind == MathKind::abs && compute.is_complex()) returned = compute.real_type();
        if (f->kind == MathKind::complex_part) returned = compute.real_type();
        return convert(called, returned, result);
    }

    const CheckedKernel& kernel_;
    const BodyOrigin& origin_;
};

// What print_statements leaves after a body, for number_line_directives to number.
constexpr std::string_view kUnnumberedLine = "#line KJIT_NEXT_LINE ";

}  // namespace

std::string cuda_type(DType t) { return std::string(t.cuda_name()); }

std::string convert_value(const std::string& e, DType from, DType to) { return convert(e, from, to); }

void print_statements(const CheckedKernel& kernel, const Body& body, int indent, std::ostringstream& out,
                      const BodyOrigin& origin) {
    Printer printer(kernel, origin);
    for (const StmtPtr& st : body.statements) printer.stmt(*st, indent, out);
    if (!body.statements.empty()) out << kUnnumberedLine << "\"" << origin.program << "\"\n";
}

std::string number_line_directives(std::string source) {
    std::string out;
    out.reserve(source.size() + 64);
    int line = 1;
    std::size_t begin = 0;
    while (begin < source.size()) {
        std::size_t end = source.find('\n', begin);
        end = end == std::string::npos ? source.size() : end + 1;
        const std::string_view text = std::string_view(source).substr(begin, end - begin);
        if (text.starts_with(kUnnumberedLine))
            out.append("#line ").append(std::to_string(line + 1)).append(" ").append(text.substr(kUnnumberedLine.size()));
        else
            out.append(text);
        ++line;
        begin = end;
    }
    return out;
}

}  // namespace kjit::jit::codegen

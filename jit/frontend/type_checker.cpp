#include "jit/frontend/type_checker.hpp"

#include <algorithm>
#include <set>

#include "jit/frontend/atomic_functions.hpp"
#include "jit/frontend/conversions.hpp"
#include "jit/frontend/lexer.hpp"
#include "jit/frontend/math_functions.hpp"
#include "jit/frontend/named_constants.hpp"
#include "jit/frontend/parser.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::frontend {
namespace {

using OptType = std::optional<DType>;

std::string type_name(const OptType& t) { return t ? std::string(t->name()) : std::string("a placeholder type"); }

bool known(const OptType& a) { return a.has_value(); }

const char* binary_spelling(BinaryOp op) {
    switch (op) {
        case BinaryOp::mul: return "*";
        case BinaryOp::div: return "/";
        case BinaryOp::mod: return "%";
        case BinaryOp::add: return "+";
        case BinaryOp::sub: return "-";
        case BinaryOp::shl: return "<<";
        case BinaryOp::shr: return ">>";
        case BinaryOp::lt: return "<";
        case BinaryOp::gt: return ">";
        case BinaryOp::le: return "<=";
        case BinaryOp::ge: return ">=";
        case BinaryOp::eq: return "==";
        case BinaryOp::ne: return "!=";
        case BinaryOp::bit_and: return "&";
        case BinaryOp::bit_xor: return "^";
        case BinaryOp::bit_or: return "|";
        case BinaryOp::logical_and: return "&&";
        case BinaryOp::logical_or: return "||";
        case BinaryOp::comma: return ",";
    }
    return "?";
}

BinaryOp binary_of(AssignOp op) {
    switch (op) {
        case AssignOp::add: return BinaryOp::add;
        case AssignOp::sub: return BinaryOp::sub;
        case AssignOp::mul: return BinaryOp::mul;
        case AssignOp::div: return BinaryOp::div;
        case AssignOp::mod: return BinaryOp::mod;
        case AssignOp::bit_and: return BinaryOp::bit_and;
        case AssignOp::bit_or: return BinaryOp::bit_or;
        case AssignOp::bit_xor: return BinaryOp::bit_xor;
        case AssignOp::shl: return BinaryOp::shl;
        case AssignOp::shr: return BinaryOp::shr;
        case AssignOp::assign: break;
    }
    return BinaryOp::add;  // unreachable for plain assignment
}

bool is_integral(DType t) { return t.is_integer() || t.is_bool(); }

enum class Use { read, write, read_write };

class Checker {
public:
    Checker(const KernelSources& sources, const TypeBinding& binding, CheckedKernel& out)
        : src_(sources), binding_(binding), out_(out) {}

    void check_body(Body& body) {
        scopes_.emplace_back();
        for (StmtPtr& s : body.statements) check_stmt(*s);
        scopes_.pop_back();
    }

    // loop_prep, then the body in a scope of its own, then after_loop, all in loop_prep's scope:
    // the locals loop_prep declares at its top level are the thread's state.
    void check_with_hooks(Body& body, LoopHooks& hooks) {
        scopes_.emplace_back();
        in_hook_ = &src_.loop_prep;
        for (StmtPtr& s : hooks.prep.statements) check_stmt(*s);
        for (const auto& [name, local] : scopes_.back()) out_.locals[static_cast<std::size_t>(local)].in_state = true;
        in_hook_ = nullptr;
        check_body(body);
        in_hook_ = &src_.after_loop;
        for (StmtPtr& s : hooks.after.statements) check_stmt(*s);
        in_hook_ = nullptr;
        scopes_.pop_back();
    }

private:
    [[noreturn]] void fail(SourcePos pos, const std::string& message, const std::string& hint = {}) const {
        fail_type(in_hook_ != nullptr ? *in_hook_ : src_.body, pos, message, hint);
    }

    void mark(const OptType& t) {
        if (t) out_.dtype_used[t->id()] = true;
    }

    // A type written in the body: a dtype, or a placeholder that some parameter binds.
    OptType resolve(const TypeName& t) {
        if (is_placeholder_name(t.spelling)) {
            bool bound_by_param = false;
            for (const Param& p : out_.params) bound_by_param = bound_by_param || (p.is_placeholder && p.type.spelling == t.spelling);
            if (!bound_by_param)
                fail(t.pos, "type placeholder '" + t.spelling + "' is not bound: no parameter has type " + t.spelling,
                     "use a concrete type such as float32, or a placeholder of the parameters");
            auto it = binding_.find(t.spelling);
            if (it == binding_.end()) return std::nullopt;
            mark(it->second);
            return it->second;
        }
        DType d;
        if (!DType::try_parse(t.spelling, d)) fail(t.pos, "unknown type '" + t.spelling + "'");
        mark(d);
        return d;
    }

    // Throws unless a value of type `from` may be stored in `to` implicitly.
    void check_assignable(const OptType& from, const OptType& to, SourcePos pos, const std::string& what) {
        if (!known(from) || !known(to)) return;
        if (from->is_complex() && !to->is_complex())
            fail(pos, "cannot convert " + type_name(from) + " to " + type_name(to) + " in " + what,
                 "take real(z), imag(z) or abs(z) first");
    }

    void check_condition(Expr& e, const char* what) {
        check_expr(e, Use::read);
        if (known(e.type) && e.type->is_complex())
            fail(e.pos, std::string(type_name(e.type)) + " cannot be used as " + what,
                 "compare it, for example abs(z) != 0");
    }

    // --- statements ---

    void check_stmt(Stmt& s) {
        switch (s.kind) {
            case StmtKind::expr: check_expr(*static_cast<ExprStmt&>(s).expr, Use::read); return;
            case StmtKind::decl: check_decl(static_cast<DeclStmt&>(s)); return;
            case StmtKind::block: {
                scopes_.emplace_back();
                for (StmtPtr& b : static_cast<BlockStmt&>(s).body) check_stmt(*b);
                scopes_.pop_back();
                return;
            }
            case StmtKind::if_: {
                auto& st = static_cast<IfStmt&>(s);
                check_condition(*st.condition, "a condition");
                check_scoped(*st.then_branch);
                if (st.else_branch) check_scoped(*st.else_branch);
                return;
            }
            case StmtKind::for_: {
                auto& st = static_cast<ForStmt&>(s);
                scopes_.emplace_back();
                if (st.init) check_stmt(*st.init);
                if (st.condition) check_condition(*st.condition, "a loop condition");
                if (st.step) check_expr(*st.step, Use::read);
                ++loop_depth_;
                check_scoped(*st.body);
                --loop_depth_;
                scopes_.pop_back();
                return;
            }
            case StmtKind::while_: {
                auto& st = static_cast<WhileStmt&>(s);
                check_condition(*st.condition, "a loop condition");
                ++loop_depth_;
                check_scoped(*st.body);
                --loop_depth_;
                return;
            }
            case StmtKind::break_:
            case StmtKind::continue_:
                if (loop_depth_ == 0)
                    fail(s.pos, std::string(s.kind == StmtKind::break_ ? "break" : "continue") + " outside a loop");
                return;
            case StmtKind::empty: return;
        }
    }

    void check_scoped(Stmt& s) {
        scopes_.emplace_back();
        check_stmt(s);
        scopes_.pop_back();
    }

    void check_decl(DeclStmt& d) {
        const bool is_auto = d.type.spelling == "auto";
        const OptType declared = is_auto ? OptType{} : resolve(d.type);
        for (Declarator& decl : d.declarators) {
            check_new_name(decl.name, decl.pos);
            OptType type = declared;
            if (decl.array_length >= 0) {
                check_array_decl(decl, declared, d.is_const);
            } else if (decl.init) {
                check_expr(*decl.init, Use::read);
                if (is_auto)
                    type = decl.init->type;
                else
                    check_assignable(decl.init->type, declared, decl.init->pos, "the initialisation of '" + decl.name + "'");
            } else if (is_auto) {
                fail(decl.pos, "'auto " + decl.name + "' needs an initialiser to take its type from");
            } else if (d.is_const) {
                fail(decl.pos, "const '" + decl.name + "' needs an initialiser");
            }
            mark(type);
            decl.local = static_cast<int>(out_.locals.size());
            out_.locals.push_back(Local{decl.name, type, d.is_const, decl.pos, decl.array_length});
            scopes_.back()[decl.name] = decl.local;
        }
    }

    // `float acc[N]` or `T v[] = {a, b}`: the length a positive integer constant, each value
    // assignable to the element type.
    void check_array_decl(Declarator& decl, const OptType& element, bool is_const) {
        if (!decl.length_name.empty()) {
            NameExpr length(decl.length_pos);
            length.name = decl.length_name;
            if (!resolve_constant(length, Use::read) || !length.type || !is_integral(*length.type))
                fail(decl.length_pos, "the length of array '" + decl.name + "' must be an integer literal or an integer constant",
                     "'" + decl.length_name + "' is not one");
            const NamedConstant& k = out_.constants[static_cast<std::size_t>(length.index)];
            const auto bits = static_cast<std::int64_t>(k.bits);
            const std::int64_t value = k.type.itemsize() == 4 && k.type.is_signed() ? static_cast<std::int32_t>(bits) : bits;
            if (value <= 0 || value > kMaxLocalArray)
                fail(decl.length_pos, "a local array has 1 to " + std::to_string(kMaxLocalArray) + " elements, not " +
                                          std::to_string(value));
            decl.array_length = static_cast<int>(value);
            if (decl.elements.size() > static_cast<std::size_t>(decl.array_length))
                fail(decl.elements[static_cast<std::size_t>(decl.array_length)]->pos,
                     "too many values for array '" + decl.name + "' of " + std::to_string(decl.array_length));
        }
        if (is_const && !decl.has_list) fail(decl.pos, "const array '" + decl.name + "' needs a brace list");
        for (ExprPtr& value : decl.elements) {
            check_expr(*value, Use::read);
            check_assignable(value->type, element, value->pos, "the initialisation of '" + decl.name + "'");
        }
    }

    void check_new_name(const std::string& name, SourcePos pos) {
        if (name == "i" || name == "n")
            fail(pos, "'" + name + "' is reserved: it is the element index" + std::string(name == "n" ? " count" : ""));
        if (name.rfind("_", 0) == 0) fail(pos, "names starting with '_' are reserved for kjit");
        if (std::string why = reserved_by_cpp(name); !why.empty()) fail(pos, why + ": it cannot name a variable", "choose another name");
        if (scopes_.back().count(name)) fail(pos, "'" + name + "' is already declared in this block");
        for (const Param& p : out_.params)
            if (p.name == name) fail(pos, "'" + name + "' is already a parameter", "choose another name for the local");
        check_not_a_macro(name, pos, in_hook_ != nullptr ? *in_hook_ : src_.body);
    }

    // NVRTC would replace a macro's name wherever it stands, a declaration's too.
    void check_not_a_macro(const std::string& name, SourcePos pos, const SourceText& where) const {
        for (const NamedConstant& m : out_.macros)
            if (m.name == name)
                fail_type(where, pos, "'" + name + "' is a macro defined in " + m.defined_where + ": it cannot name a variable",
                          "choose another name");
    }

public:
    void check_params_against_macros() const {
        for (const Param& p : out_.params) check_not_a_macro(p.name, p.pos, p.is_output ? src_.out : src_.in);
    }

    // A launch passes the parameters in one struct of at most kMaxArgumentBytes (the launcher's
    // buffer; NVRTC's own limit is 32 KiB): at least 8 bytes a parameter (a pointer or a scalar;
    // a raw array's field takes detail::RawField's 152), and `n`.
    void check_argument_space() const {
        std::size_t bytes = 8;
        for (const Param& p : out_.params) {
            bytes += p.raw ? 152 : 8;
            if (bytes > kMaxArgumentBytes)
                fail_type(p.is_output ? src_.out : src_.in, p.pos,
                          "the parameters up to '" + p.name + "' take at least " + std::to_string(bytes) + " bytes, more than the " +
                              std::to_string(kMaxArgumentBytes) + " kjit passes to a kernel",
                          "pass fewer arrays, or gather them into one raw array");
        }
    }

private:

    // --- expressions ---

    // Finds a name: innermost local first, then parameters, then i and n.
    void resolve_name(NameExpr& e, Use use) {
        for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
            if (auto it = scope->find(e.name); it != scope->end()) {
                const Local& l = out_.locals[it->second];
                if (l.array_length >= 0)
                    fail(e.pos, "'" + e.name + "' is an array of " + std::to_string(l.array_length) + ": index it, as in " + e.name + "[0]",
                         "a raw parameter may be indexed by it: x[" + e.name + "], one index per dimension");
                if (use != Use::read && l.is_const) fail(e.pos, "cannot assign to const local '" + e.name + "'");
                e.refers_to = NameKind::local;
                e.index = it->second;
                e.type = l.type;
                return;
            }
        }
        for (std::size_t k = 0; k < out_.params.size(); ++k) {
            const Param& p = out_.params[k];
            if (p.name != e.name) continue;
            if (p.raw)
                fail(e.pos, "raw parameter '" + e.name + "' must be indexed, as in " + e.name + "[i]",
                     "raw parameters are whole arrays; elementwise parameters are one element each");
            if (in_hook_ != nullptr)
                fail(e.pos, "'" + e.name + "' is one element of an array, and " + in_hook_->where + " runs outside the elements",
                     "it sees raw parameters, n and its own variables");
            if (use != Use::read && !p.is_output && p.non_const)
                fail(e.pos, "cannot assign to input parameter '" + e.name + "': kjit writes a _non_const input only when it is raw",
                     "declare it 'raw _non_const " + p.type.spelling + " " + e.name + "' and write " + e.name +
                         "[i], or declare it in the output list");
            if (use != Use::read && !p.is_output)
                fail(e.pos, "cannot assign to input parameter '" + e.name + "'",
                     "inputs are read-only; declare it in the output list to write it");
            e.refers_to = NameKind::param;
            e.index = static_cast<int>(k);
            e.type = out_.param_types[k];
            if (use != Use::write) out_.param_read[k] = true;
            if (use != Use::read) out_.param_written[k] = true;
            return;
        }
        if (e.name == "i" || e.name == "n") {
            if (use != Use::read) fail(e.pos, "cannot assign to '" + e.name + "'", "it is set by kjit for each element");
            if (e.name == "i" && in_hook_ != nullptr)
                fail(e.pos, "'i' is the element index, and " + in_hook_->where + " runs outside the elements");
            e.refers_to = e.name == "i" ? NameKind::index_i : NameKind::size_n;
            (e.name == "i" ? out_.uses_i : out_.uses_n) = true;
            e.type = DType::int64;
            return;
        }
        if (resolve_constant(e, use)) return;
        std::vector<std::string> candidates{"i", "n"};
        for (const Param& p : out_.params) candidates.push_back(p.name);
        for (const Local& l : out_.locals) candidates.push_back(l.name);
        for (const NamedConstant& m : out_.macros) candidates.push_back(m.name);
        if (e.name.rfind("CUDART_", 0) == 0)
            for (std::string& c : cuda_constant_names()) candidates.push_back(std::move(c));
        const std::string near = closest_name(e.name, candidates);
        if (find_math_function(e.name) || is_preamble_function(e.name))
            fail(e.pos, "'" + e.name + "' is a function; call it as " + e.name + "(...)");
        const std::string shown = e.name.size() > 64 ? e.name.substr(0, 64) + "..." : e.name;
        fail(e.pos, "unknown name '" + shown + "'", near.empty() ? std::string() : "did you mean '" + near + "'?");
    }

    // A macro of the kernel's, else one of CUDA's math constants: a read-only value.
    bool resolve_constant(NameExpr& e, Use use) {
        const NamedConstant* k = nullptr;
        for (const NamedConstant& m : out_.macros)
            if (m.name == e.name) k = &m;
        if (k == nullptr) k = find_cuda_constant(e.name);
        if (k == nullptr) return false;
        if (!k->unusable.empty()) fail(e.pos, "'" + e.name + "' cannot be used here: " + k->unusable);
        if (use != Use::read) fail(e.pos, "cannot assign to '" + e.name + "': it is a constant of " + k->defined_where);
        auto used = std::find_if(out_.constants.begin(), out_.constants.end(), [&](const NamedConstant& c) { return c.name == e.name; });
        if (used == out_.constants.end()) used = out_.constants.insert(out_.constants.end(), *k);
        e.refers_to = NameKind::constant;
        e.index = static_cast<int>(used - out_.constants.begin());
        e.type = k->type;
        return true;
    }

    bool is_preamble_function(const std::string& name) const {
        for (const PreambleFunction& f : out_.preamble_functions)
            if (f.name == name) return true;
        return false;
    }

    void check_expr(Expr& e, Use use) {
        switch (e.kind) {
            case ExprKind::int_literal: {
                if (use != Use::read) fail(e.pos, "cannot assign to a literal");
                auto& lit = static_cast<IntLiteral&>(e);
                e.type = int_literal_type(lit);
                break;
            }
            case ExprKind::float_literal:
                if (use != Use::read) fail(e.pos, "cannot assign to a literal");
                e.type = static_cast<FloatLiteral&>(e).is_float ? DType::float32 : DType::float64;
                break;
            case ExprKind::bool_literal:
                if (use != Use::read) fail(e.pos, "cannot assign to a literal");
                e.type = DType::bool_;
                break;
            case ExprKind::name: resolve_name(static_cast<NameExpr&>(e), use); break;
            case ExprKind::unary: check_unary(static_cast<UnaryExpr&>(e), use); break;
            case ExprKind::binary:
                if (use != Use::read) fail(e.pos, "cannot assign to the result of an operator");
                check_binary(static_cast<BinaryExpr&>(e));
                break;
            case ExprKind::assign:
                if (use != Use::read) fail(e.pos, "cannot assign to an assignment");
                check_assign(static_cast<AssignExpr&>(e));
                break;
            case ExprKind::conditional:
                if (use != Use::read) fail(e.pos, "cannot assign to a ?: expression");
                check_conditional(static_cast<ConditionalExpr&>(e));
                break;
            case ExprKind::cast:
                if (use != Use::read) fail(e.pos, "cannot assign to a cast");
                check_cast(static_cast<CastExpr&>(e));
                break;
            case ExprKind::call:
                if (use != Use::read) fail(e.pos, "cannot assign to a function's result");
                check_call(static_cast<CallExpr&>(e));
                break;
            case ExprKind::index: check_index(static_cast<IndexExpr&>(e), use); break;
            case ExprKind::member: check_member(static_cast<MemberExpr&>(e), use); break;
        }
        mark(e.type);
    }

    // C's rule: the first of int, long long (and their unsigned forms for hex or a u suffix)
    // that holds the value.
    OptType int_literal_type(const IntLiteral& lit) {
        const bool hex = lit.text.size() > 1 && (lit.text[1] == 'x' || lit.text[1] == 'X');
        const std::uint64_t v = lit.value;
        if (lit.is_unsigned) return (!lit.is_long && v <= 0xffffffffull) ? DType::uint32 : DType::uint64;
        if (!lit.is_long && v <= 0x7fffffffull) return DType::int32;
        if (hex && !lit.is_long && v <= 0xffffffffull) return DType::uint32;
        if (v <= 0x7fffffffffffffffull) return DType::int64;
        if (hex) return DType::uint64;
        fail(lit.pos, "integer literal " + lit.text + " is too large for a signed 64-bit integer",
             "add a u suffix for an unsigned 64-bit value");
    }

    void check_unary(UnaryExpr& e, Use use) {
        const bool steps = e.op == UnaryOp::pre_increment || e.op == UnaryOp::pre_decrement ||
                           e.op == UnaryOp::post_increment || e.op == UnaryOp::post_decrement;
        if (use != Use::read && !(steps && (e.op == UnaryOp::pre_increment || e.op == UnaryOp::pre_decrement)))
            fail(e.pos, "cannot assign to the result of an operator");
        if (steps) {
            check_lvalue(*e.operand, Use::read_write);
            const OptType t = e.operand->type;
            if (known(t) && (t->is_bool() || t->is_complex()))
                fail(e.pos, "++ and -- need an integer or float operand, not " + type_name(t));
            e.type = t;
            return;
        }
        check_expr(*e.operand, Use::read);
        const OptType t = e.operand->type;
        switch (e.op) {
            case UnaryOp::logical_not:
                if (known(t) && t->is_complex()) fail(e.pos, "! cannot be applied to " + type_name(t));
                e.type = DType::bool_;
                return;
            case UnaryOp::bit_not:
                if (known(t) && !is_integral(*t))
                    fail(e.pos, "bitwise ~ needs an integer operand, not " + type_name(t),
                         "bit operations on floats are not allowed; cast to an integer type first");
                e.type = known(t) ? OptType(promote_integer(*t)) : t;
                return;
            default:  // unary + and -
                e.type = known(t) && is_integral(*t) ? OptType(promote_integer(*t)) : t;
                return;
        }
    }

    void check_lvalue(Expr& e, Use use) {
        if (e.kind != ExprKind::name && e.kind != ExprKind::index)
            fail(e.pos, "the left side of an assignment must be an output parameter, a local, an array element or a raw element");
        check_expr(e, use);
    }

    // The type of `lhs op rhs`, checking that the operator applies; sets operand_type.
    OptType binary_type(BinaryOp op, const OptType& l, const OptType& r, SourcePos pos, OptType* operand_type) {
        const std::string sym = binary_spelling(op);
        const bool both = known(l) && known(r);
        const OptType common = both ? OptType(usual_arithmetic_conversion(*l, *r)) : OptType{};
        if (operand_type) *operand_type = common;
        switch (op) {
            case BinaryOp::mod:
                if (both && !(is_integral(*l) && is_integral(*r)))
                    fail(pos, "% needs integer operands, not " + type_name(l) + " and " + type_name(r),
                         "for floats use fmod(a, b)");
                return common;
            case BinaryOp::shl:
            case BinaryOp::shr:
                if ((known(l) && !is_integral(*l)) || (known(r) && !is_integral(*r)))
                    fail(pos, sym + " needs integer operands, not " + type_name(l) + " and " + type_name(r));
                if (operand_type) *operand_type = known(l) ? OptType(promote_integer(*l)) : OptType{};
                return known(l) ? OptType(promote_integer(*l)) : OptType{};
            case BinaryOp::bit_and:
            case BinaryOp::bit_xor:
            case BinaryOp::bit_or:
                if ((known(l) && !is_integral(*l)) || (known(r) && !is_integral(*r)))
                    fail(pos, "bitwise " + sym + " needs integer operands, not " + type_name(l) + " and " + type_name(r),
                         "bit operations on floats are not allowed; cast to an integer type first");
                return common;
            case BinaryOp::lt:
            case BinaryOp::gt:
            case BinaryOp::le:
            case BinaryOp::ge:
                if ((known(l) && l->is_complex()) || (known(r) && r->is_complex()))
                    fail(pos, "complex numbers have no order: " + sym + " cannot compare " + type_name(l) + " and " +
                                  type_name(r), "compare abs(z) or real(z)");
                return DType::bool_;
            case BinaryOp::eq:
            case BinaryOp::ne:
                return DType::bool_;
            case BinaryOp::logical_and:
            case BinaryOp::logical_or:
                if ((known(l) && l->is_complex()) || (known(r) && r->is_complex()))
                    fail(pos, sym + " cannot be applied to " + type_name(l->is_complex() ? l : r));
                if (operand_type) *operand_type = DType::bool_;
                return DType::bool_;
            default:
                return common;
        }
    }

    void check_binary(BinaryExpr& e) {
        check_expr(*e.lhs, Use::read);
        check_expr(*e.rhs, Use::read);
        if (e.op == BinaryOp::comma) {  // the right operand's value, unconverted
            e.type = e.rhs->type;
            return;
        }
        e.type = binary_type(e.op, e.lhs->type, e.rhs->type, e.pos, &e.operand_type);
        mark(e.operand_type);
    }

    void check_assign(AssignExpr& e) {
        check_lvalue(*e.target, e.op == AssignOp::assign ? Use::write : Use::read_write);
        check_expr(*e.value, Use::read);
        const OptType target = e.target->type;
        if (e.op == AssignOp::assign) {
            check_assignable(e.value->type, target, e.value->pos, "an assignment");
        } else {
            const OptType result = binary_type(binary_of(e.op), target, e.value->type, e.pos, nullptr);
            check_assignable(result, target, e.pos, "a compound assignment");
        }
        e.type = target;
    }

    void check_conditional(ConditionalExpr& e) {
        check_condition(*e.condition, "a condition");
        check_expr(*e.if_true, Use::read);
        check_expr(*e.if_false, Use::read);
        const OptType a = e.if_true->type, b = e.if_false->type;
        if (known(a) && known(b))
            e.type = (*a == *b) ? *a : usual_arithmetic_conversion(*a, *b);
    }

    void check_cast(CastExpr& e) {
        if (e.target.spelling == "auto") fail(e.target.pos, "cannot cast to auto");
        const OptType to = resolve(e.target);
        check_expr(*e.operand, Use::read);
        const OptType from = e.operand->type;
        if (known(from) && known(to) && from->is_complex() && !to->is_complex())
            fail(e.pos, "cannot cast " + type_name(from) + " to " + type_name(to), "take real(z), imag(z) or abs(z)");
        e.type = to;
    }

    // atomic_add(t[k], v) & co.: the element must be one the kernel may write, of a raw parameter.
    void check_atomic(CallExpr& e, const AtomicFunction& f) {
        if (static_cast<int>(e.args.size()) != f.arity)
            fail(e.callee_pos, std::string(f.name) + "() takes " + std::to_string(f.arity) + " arguments, not " +
                                   std::to_string(e.args.size()),
                 f.op == AtomicOp::cas ? "atomic_cas(t[k], expected, desired)" : std::string(f.name) + "(t[k], value)");
        Expr& target = *e.args[0];
        const bool raw_element = target.kind == ExprKind::index &&
                                 static_cast<IndexExpr&>(target).base->kind == ExprKind::name;
        if (!raw_element)
            fail(target.pos, std::string(f.name) + " updates an element of a raw output, as in " + std::string(f.name) + "(t[k], v)",
                 "declare the array 'raw T t' in the output list (or '_non_const' among the inputs)");
        check_expr(target, Use::read_write);
        const auto& base = static_cast<const NameExpr&>(*static_cast<IndexExpr&>(target).base);
        if (base.refers_to != NameKind::param)
            fail(target.pos, std::string(f.name) + " updates an element of a raw output, not of local array '" + base.name + "'",
                 "atomics are for memory other threads share");
        const OptType t = target.type;
        for (std::size_t k = 1; k < e.args.size(); ++k) {
            check_expr(*e.args[k], Use::read);
            check_assignable(e.args[k]->type, t, e.args[k]->pos, std::string(f.name) + "'s value");
        }
        if (known(t))
            if (const std::string why = atomic_unsupported(f, *t); !why.empty()) fail(e.callee_pos, why);
        out_.uses_atomics = true;
        e.type = t;
    }

    void check_call(CallExpr& e) {
        if (const AtomicFunction* f = find_atomic_function(e.callee)) {
            check_atomic(e, *f);
            return;
        }
        std::vector<DType> arg_types;
        bool all_known = true;
        for (ExprPtr& a : e.args) {
            check_expr(*a, Use::read);
            if (a->type)
                arg_types.push_back(*a->type);
            else
                all_known = false;
        }
        // A parameter or local of the same name would hide the function in the generated C++.
        for (const Param& p : out_.params)
            if (p.name == e.callee)
                fail(e.callee_pos, "'" + e.callee + "' is a parameter, not a function",
                     find_math_function(e.callee) ? "rename the parameter to call " + e.callee + "()" : std::string());
        for (const auto& scope : scopes_)
            if (scope.count(e.callee))
                fail(e.callee_pos, "'" + e.callee + "' is a local variable, not a function",
                     find_math_function(e.callee) ? "rename the variable to call " + e.callee + "()" : std::string());
        if (const MathFunction* f = find_math_function(e.callee)) {
            if (static_cast<int>(e.args.size()) != f->arity)
                fail(e.callee_pos, std::string(f->name) + "() takes " + std::to_string(f->arity) + " argument" +
                                       (f->arity == 1 ? "" : "s") + ", not " + std::to_string(e.args.size()));
            if (!all_known) return;  // generic until bound
            std::string why;
            e.type = math_result_type(*f, arg_types, why);
            if (!e.type) fail(e.callee_pos, why);
            return;
        }
        for (const PreambleFunction& f : out_.preamble_functions) {
            if (f.name == e.callee) {
                e.type = f.return_type;
                return;
            }
        }
        std::vector<std::string> names = math_function_names();
        for (const PreambleFunction& f : out_.preamble_functions) names.push_back(f.name);
        const std::string near = closest_name(e.callee, names);
        fail(e.callee_pos, "unknown function '" + e.callee + "'",
             near.empty() ? "functions outside kjit's math table must be declared in the preamble"
                          : "did you mean '" + near + "'?");
    }

    // The raw parameter a member access names (CuPy's CArray metadata), or an error.
    int raw_param_of(const MemberExpr& e) {
        const auto& base = static_cast<const NameExpr&>(*e.base);
        bool shadowed = false;
        for (const auto& scope : scopes_) shadowed = shadowed || scope.count(base.name) > 0;
        for (std::size_t k = 0; k < out_.params.size() && !shadowed; ++k)
            if (out_.params[k].name == base.name) {
                if (!out_.params[k].raw)
                    fail(e.pos, "'" + base.name + "' is not a raw parameter: only raw parameters have ." + e.member,
                         "declare it 'raw " + out_.params[k].type.spelling + " " + base.name + "'");
                return static_cast<int>(k);
            }
        fail(base.pos, "'" + base.name + "' is not a raw parameter: only raw parameters have ." + e.member);
    }

    // x.size(), x.ndim; x.shape() and x.strides() only indexed (check_index).
    void check_member(MemberExpr& e, Use use, bool indexed = false) {
        auto& base = static_cast<NameExpr&>(*e.base);
        if (base.name == "_ind") {  // CuPy's indexer of the elementwise loop
            if (e.member != "size" || !e.called || indexed)
                fail(base.pos, "CuPy's _ind." + e.member + (e.called ? "()" : "") + " has no kjit equivalent",
                     "kjit has i, the element's index in C order (a raw array of the call's shape: x[i]), and n, _ind.size()");
            if (use != Use::read) fail(base.pos, "cannot assign to _ind.size()");
            base.refers_to = NameKind::size_n;
            out_.uses_n = true;
            e.type = DType::int64;
            return;
        }
        const bool array = e.member == "shape" || e.member == "strides";
        if (e.member != "size" && e.member != "ndim" && !array) {
            const bool part = e.member == "real" || e.member == "imag";
            fail(e.member_pos, "'." + e.member + "': member access is only for a raw parameter's size(), shape(), strides() and ndim",
                 part ? "take the part with a function: " + e.member + "(z)" : "");
        }
        const int param = raw_param_of(e);
        base.refers_to = NameKind::param;
        base.index = param;
        base.type = out_.param_types[static_cast<std::size_t>(param)];
        if (e.called != (e.member != "ndim"))
            fail(e.member_pos, e.called ? "ndim is a value, not a function: write " + base.name + ".ndim"
                                        : e.member + " is a function: write " + base.name + "." + e.member + "()");
        if (use != Use::read) fail(e.pos, "cannot assign to " + base.name + "." + e.member + (e.called ? "()" : ""));
        if (array && !indexed)
            fail(e.pos, base.name + "." + e.member + "() is an array: index it, as in " + base.name + "." + e.member + "()[0]");
        e.type = e.member == "ndim" ? DType::int32 : DType::int64;
    }

    // `acc[k]` on a local array.
    void check_local_index(IndexExpr& e, int local, Use use) {
        const Local& l = out_.locals[static_cast<std::size_t>(local)];
        auto& base = static_cast<NameExpr&>(*e.base);
        if (use != Use::read && l.is_const) fail(e.pos, "cannot assign to an element of const array '" + l.name + "'");
        base.refers_to = NameKind::local;
        base.index = local;
        base.type = l.type;
        check_expr(*e.index, Use::read);
        const OptType it = e.index->type;
        if (known(it) && !is_integral(*it)) fail(e.index->pos, "an index must be an integer, not " + type_name(it));
        e.type = l.type;
    }

    // The local array `e` names, if it does: `x[idx]` indexes a raw parameter by it.
    int local_array_named(const Expr& e) const {
        if (e.kind != ExprKind::name) return -1;
        const auto& n = static_cast<const NameExpr&>(e);
        for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope)
            if (auto it = scope->find(n.name); it != scope->end()) return out_.locals[static_cast<std::size_t>(it->second)].array_length >= 0 ? it->second : -1;
        return -1;
    }

    void check_index(IndexExpr& e, Use use) {
        if (e.base->kind == ExprKind::member) {
            check_member(static_cast<MemberExpr&>(*e.base), use, true);
            check_expr(*e.index, Use::read);
            if (known(e.index->type) && !is_integral(*e.index->type))
                fail(e.index->pos, "an index must be an integer, not " + type_name(e.index->type));
            e.type = DType::int64;
            return;
        }
        if (e.base->kind != ExprKind::name)
            fail(e.pos, "only raw parameters can be indexed", "declare the parameter as 'raw T name'");
        if (const int local = local_array_named(*e.base); local >= 0) {
            check_local_index(e, local, use);
            return;
        }
        auto& base = static_cast<NameExpr&>(*e.base);
        int param = -1;
        for (std::size_t k = 0; k < out_.params.size(); ++k)
            if (out_.params[k].name == base.name) param = static_cast<int>(k);
        bool shadowed = false;
        for (const auto& scope : scopes_) shadowed = shadowed || scope.count(base.name) > 0;
        if (param < 0 || shadowed || !out_.params[param].raw) {
            if (param >= 0 && !shadowed)
                fail(e.pos, "'" + base.name + "' is not a raw parameter, so it cannot be indexed",
                     "elementwise parameters are one element each; declare it as 'raw " +
                         out_.params[param].type.spelling + " " + base.name + "' to index the whole array");
            fail(e.pos, "only raw parameters can be indexed; '" + base.name + "' is not one");
        }
        const Param& p = out_.params[param];
        if (use != Use::read && !p.is_output && !p.non_const)
            fail(e.pos, "cannot assign to an element of input parameter '" + p.name + "'",
                 "inputs are read-only; declare it '_non_const' (CuPy's modifier) or in the output list to write it");
        base.refers_to = NameKind::param;
        base.index = param;
        base.type = out_.param_types[param];
        if (use != Use::write) out_.param_read[param] = true;
        if (use != Use::read) out_.param_written[param] = true;
        if (const int local = local_array_named(*e.index); local >= 0) {  // x[idx]: one index per dimension
            const Local& l = out_.locals[static_cast<std::size_t>(local)];
            if (l.type && !l.type->is_integer())
                fail(e.index->pos, "an index array must hold integers, not " + type_name(l.type));
            auto& idx = static_cast<NameExpr&>(*e.index);
            idx.refers_to = NameKind::local;
            idx.index = local;
            idx.type = l.type;
            e.by_index_array = true;
            e.type = base.type;
            return;
        }
        check_expr(*e.index, Use::read);
        const OptType it = e.index->type;
        if (known(it) && !it->is_integer())
            fail(e.index->pos, "an index must be an integer, not " + type_name(it),
                 "cast it, as in " + p.name + "[(long long)k]");
        e.type = base.type;
    }

    const KernelSources& src_;
    const TypeBinding& binding_;
    CheckedKernel& out_;
    std::vector<std::map<std::string, int>> scopes_;
    int loop_depth_ = 0;
    const SourceText* in_hook_ = nullptr;  // checking loop_prep or after_loop: no element is at hand
};

const SourceText& source_of(const Param& p, const KernelSources& s) { return p.is_output ? s.out : s.in; }

}  // namespace

void check_binding(const std::vector<Param>& params, const KernelSources& sources, const TypeBinding& binding) {
    std::set<std::string> placeholders;
    for (const Param& p : params) {
        if (!p.is_placeholder) continue;
        placeholders.insert(p.type.spelling);
        if (!binding.count(p.type.spelling))
            fail_type(source_of(p, sources), p.type.pos,
                      "no type given for placeholder '" + p.type.spelling + "' of parameter '" + p.name + "'",
                      "bind it, as in --types " + p.type.spelling + "=float32");
    }
    for (const auto& [name, type] : binding) {
        if (placeholders.count(name)) continue;
        std::string list;
        for (const std::string& ph : placeholders) list += (list.empty() ? "" : ", ") + ph;
        throw TypeError("'" + name + "' is not a type placeholder of this kernel" +
                        (list.empty() ? std::string(" (it has none)") : " (its placeholders: " + list + ")"));
    }
}

CheckedKernel check_kernel(std::vector<Param> params, Body& body, const KernelSources& sources, const TypeBinding& binding,
                           OutsideNames outside, LoopHooks* hooks) {
    CheckedKernel out;
    out.params = std::move(params);
    out.preamble_functions = std::move(outside.functions);
    out.macros = std::move(outside.macros);
    out.complete = true;
    for (const Param& p : out.params) {
        std::optional<DType> t = p.dtype;
        if (p.is_placeholder) {
            auto it = binding.find(p.type.spelling);
            if (it != binding.end()) t = it->second;
        }
        if (!t) out.complete = false;
        if (t) out.dtype_used[t->id()] = true;
        out.param_types.push_back(t);
    }
    out.param_read.assign(out.params.size(), false);
    out.param_written.assign(out.params.size(), false);
    Checker checker(sources, binding, out);
    checker.check_params_against_macros();
    checker.check_argument_space();
    if (hooks != nullptr && !hooks->empty()) checker.check_with_hooks(body, *hooks);
    else checker.check_body(body);
    // A body whose every expression typed is complete only if no expression stayed generic;
    // parameters decide that, since every generic type comes from a placeholder.
    return out;
}

}  // namespace kjit::jit::frontend

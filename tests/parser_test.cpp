// The parser (jit/frontend/parser.hpp): tree shapes of what it accepts, the exact text of what it rejects,
// and that no input crashes, hangs or throws anything but ParseError.
#include "test_support.hpp"

#include <chrono>
#include <string>

#include "jit/frontend/parser.hpp"
#include "kjit/error.hpp"

namespace {

using namespace kjit::jit::frontend;

std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : " ") + p;
    return out;
}

const char* unary_name(UnaryOp op) {
    switch (op) {
        case UnaryOp::plus: return "+";
        case UnaryOp::minus: return "-";
        case UnaryOp::logical_not: return "!";
        case UnaryOp::bit_not: return "~";
        case UnaryOp::pre_increment: return "pre++";
        case UnaryOp::pre_decrement: return "pre--";
        case UnaryOp::post_increment: return "post++";
        case UnaryOp::post_decrement: return "post--";
    }
    return "?";
}

const char* binary_name(BinaryOp op) {
    constexpr const char* names[] = {"*", "/", "%", "+", "-", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "&", "^", "|",
                                     "&&", "||", ","};
    return names[static_cast<int>(op)];
}

const char* assign_name(AssignOp op) {
    constexpr const char* names[] = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};
    return names[static_cast<int>(op)];
}

// An S-expression of the tree: "(+ a (* b c))".
std::string dump(const Expr& e) {
    switch (e.kind) {
        case ExprKind::int_literal: return static_cast<const IntLiteral&>(e).text;
        case ExprKind::float_literal: return static_cast<const FloatLiteral&>(e).text;
        case ExprKind::bool_literal: return static_cast<const BoolLiteral&>(e).value ? "true" : "false";
        case ExprKind::name: return static_cast<const NameExpr&>(e).name;
        case ExprKind::unary: {
            const auto& u = static_cast<const UnaryExpr&>(e);
            return std::string("(") + unary_name(u.op) + " " + dump(*u.operand) + ")";
        }
        case ExprKind::binary: {
            const auto& b = static_cast<const BinaryExpr&>(e);
            return std::string("(") + binary_name(b.op) + " " + dump(*b.lhs) + " " + dump(*b.rhs) + ")";
        }
        case ExprKind::assign: {
            const auto& a = static_cast<const AssignExpr&>(e);
            return std::string("(") + assign_name(a.op) + " " + dump(*a.target) + " " + dump(*a.value) + ")";
        }
        case ExprKind::conditional: {
            const auto& c = static_cast<const ConditionalExpr&>(e);
            return "(? " + dump(*c.condition) + " " + dump(*c.if_true) + " " + dump(*c.if_false) + ")";
        }
        case ExprKind::cast: {
            const auto& c = static_cast<const CastExpr&>(e);
            const char* style = c.style == CastStyle::c_style ? "c-cast" : c.style == CastStyle::functional ? "f-cast" : "static_cast";
            return std::string("(") + style + " <" + c.target.spelling + "> " + dump(*c.operand) + ")";
        }
        case ExprKind::call: {
            const auto& c = static_cast<const CallExpr&>(e);
            std::vector<std::string> parts{"(call", c.callee};
            for (const ExprPtr& a : c.args) parts.push_back(dump(*a));
            return join(parts) + ")";
        }
        case ExprKind::index: {
            const auto& x = static_cast<const IndexExpr&>(e);
            return "(index " + dump(*x.base) + " " + dump(*x.index) + ")";
        }
        case ExprKind::member: {
            const auto& m = static_cast<const MemberExpr&>(e);
            return "(. " + dump(*m.base) + " " + m.member + (m.called ? "()" : "") + ")";
        }
    }
    return "?";
}

std::string dump(const Stmt& s) {
    switch (s.kind) {
        case StmtKind::expr: return dump(*static_cast<const ExprStmt&>(s).expr) + ";";
        case StmtKind::decl: {
            const auto& d = static_cast<const DeclStmt&>(s);
            std::vector<std::string> parts{"(decl"};
            if (d.is_const) parts.emplace_back("const");
            parts.push_back("<" + d.type.spelling + ">");
            for (const Declarator& v : d.declarators) {
                std::string text = v.name;
                if (v.array_length >= 0) text += "[" + (v.length_name.empty() ? std::to_string(v.array_length) : v.length_name) + "]";
                if (v.has_list) {
                    std::vector<std::string> values;
                    for (const ExprPtr& x : v.elements) values.push_back(dump(*x));
                    std::string list;
                    for (const std::string& x : values) list += (list.empty() ? "" : ",") + x;
                    text += "={" + list + "}";
                }
                parts.push_back(v.init ? text + "=" + dump(*v.init) : text);
            }
            return join(parts) + ")";
        }
        case StmtKind::block: {
            std::vector<std::string> parts{"{"};
            for (const StmtPtr& b : static_cast<const BlockStmt&>(s).body) parts.push_back(dump(*b));
            parts.emplace_back("}");
            return join(parts);
        }
        case StmtKind::if_: {
            const auto& i = static_cast<const IfStmt&>(s);
            return "(if " + dump(*i.condition) + " " + dump(*i.then_branch) +
                   (i.else_branch ? " else " + dump(*i.else_branch) : "") + ")";
        }
        case StmtKind::for_: {
            const auto& f = static_cast<const ForStmt&>(s);
            return "(for " + (f.init ? dump(*f.init) : "-") + " " + (f.condition ? dump(*f.condition) : "-") + " " +
                   (f.step ? dump(*f.step) : "-") + " " + dump(*f.body) + ")";
        }
        case StmtKind::while_: {
            const auto& w = static_cast<const WhileStmt&>(s);
            return "(while " + dump(*w.condition) + " " + dump(*w.body) + ")";
        }
        case StmtKind::break_: return "break;";
        case StmtKind::continue_: return "continue;";
        case StmtKind::empty: return ";";
    }
    return "?";
}

std::string body(std::string_view text) {
    const Body b = parse_body(SourceText{"op", text});
    std::vector<std::string> parts;
    for (const StmtPtr& s : b.statements) parts.push_back(dump(*s));
    return join(parts);
}

std::string expr(std::string_view text) { return dump(*parse_expression(SourceText{"map", text})); }

// The full what() of the error parsing `text` as a body, or "" when it parses.
std::string body_error(std::string_view text) {
    try {
        parse_body(SourceText{"op", text});
    } catch (const kjit::ParseError& e) {
        return e.what();
    }
    return {};
}

std::string expr_error(std::string_view text) {
    try {
        parse_expression(SourceText{"map", text});
    } catch (const kjit::ParseError& e) {
        return e.what();
    }
    return {};
}

}  // namespace

TEST_CASE("parser: binary operators follow C's precedence", "[parser]") {
    CHECK(expr("a + b * c") == "(+ a (* b c))");
    CHECK(expr("a * b + c") == "(+ (* a b) c)");
    CHECK(expr("a - b - c") == "(- (- a b) c)");
    CHECK(expr("a / b % c * d") == "(* (% (/ a b) c) d)");
    CHECK(expr("a << b + c") == "(<< a (+ b c))");
    CHECK(expr("a < b == c > d") == "(== (< a b) (> c d))");
    CHECK(expr("a <= b != c >= d") == "(!= (<= a b) (>= c d))");
    CHECK(expr("a | b ^ c & d") == "(| a (^ b (& c d)))");
    CHECK(expr("a || b && c | d") == "(|| a (&& b (| c d)))");
    CHECK(expr("a & b == c") == "(& a (== b c))");
    CHECK(expr("a >> 1 << 2") == "(<< (>> a 1) 2)");
    CHECK(expr("(a + b) * c") == "(* (+ a b) c)");
    CHECK(expr("a + (b)") == "(+ a b)");
}

TEST_CASE("parser: unary, postfix, assignment and conditional", "[parser]") {
    CHECK(expr("-a * b") == "(* (- a) b)");
    CHECK(expr("!a && ~b") == "(&& (! a) (~ b))");
    CHECK(expr("- - a") == "(- (- a))");
    CHECK(expr("+-!~a") == "(+ (- (! (~ a))))");
    CHECK(expr("++a") == "(pre++ a)");
    CHECK(expr("--a") == "(pre-- a)");
    CHECK(expr("a++ + b") == "(+ (post++ a) b)");
    CHECK(expr("-a--") == "(- (post-- a))");
    CHECK(expr("a = b = c") == "(= a (= b c))");
    CHECK(expr("a += b * c") == "(+= a (* b c))");
    CHECK(expr("a -= b") == "(-= a b)");
    CHECK(expr("a <<= b >>= 2") == "(<<= a (>>= b 2))");
    CHECK(expr("a %= b") == "(%= a b)");
    CHECK(expr("a &= b") == "(&= a b)");
    CHECK(expr("a |= b ^= c") == "(|= a (^= b c))");
    CHECK(expr("a ? b : c") == "(? a b c)");
    CHECK(expr("a ? b : c ? d : e") == "(? a b (? c d e))");
    CHECK(expr("a ? b ? c : d : e") == "(? a (? b c d) e)");
    CHECK(expr("a || b ? c + 1 : d") == "(? (|| a b) (+ c 1) d)");
    CHECK(expr("y = a > b ? a : b") == "(= y (? (> a b) a b))");
    CHECK(expr("a ? b : c = d") == "(? a b (= c d))");
    CHECK(expr("a ? b = 1 : c") == "(? a (= b 1) c)");
    // The comma operator: lowest of all, left-associative; not inside a call's arguments.
    CHECK(expr("s = a, q = a * a") == "(, (= s a) (= q (* a a)))");
    CHECK(expr("a, b, c") == "(, (, a b) c)");
    CHECK(expr("f(a, (b, c))") == "(call f a (, b c))");
    CHECK(expr("a ? b, c : d") == "(? a (, b c) d)");
    // CuPy's CArray metadata of a raw parameter.
    CHECK(expr("x.size() + x.ndim") == "(+ (. x size()) (. x ndim))");
    CHECK(expr("x.shape()[k] * x.strides()[0]") == "(* (index (. x shape()) k) (index (. x strides()) 0))");
}

TEST_CASE("parser: casts, calls and indexing", "[parser]") {
    CHECK(expr("(float)x * y") == "(* (c-cast <float> x) y)");
    CHECK(expr("(T)-x") == "(c-cast <T> (- x))");
    CHECK(expr("(unsigned int)x") == "(c-cast <unsigned int> x)");
    CHECK(expr("(long long int)x") == "(c-cast <long long> x)");
    CHECK(expr("(float)(double)x") == "(c-cast <float> (c-cast <double> x))");
    CHECK(expr("float(x) + 1") == "(+ (f-cast <float> x) 1)");
    CHECK(expr("T(x + 1)") == "(f-cast <T> (+ x 1))");
    CHECK(expr("(float64(x))") == "(f-cast <float64> x)");
    CHECK(expr("unsigned(x)") == "(f-cast <unsigned int> x)");
    CHECK(expr("half(x)") == "(f-cast <half> x)");
    CHECK(expr("static_cast<unsigned int>(x) >> 2") == "(>> (static_cast <unsigned int> x) 2)");
    CHECK(expr("static_cast<T>(a ? b : c)") == "(static_cast <T> (? a b c))");
    CHECK(expr("f()") == "(call f)");
    CHECK(expr("sqrt(x)") == "(call sqrt x)");
    CHECK(expr("atan2(y, x + 1)") == "(call atan2 y (+ x 1))");
    CHECK(expr("f(g(a), b = c)") == "(call f (call g a) (= b c))");
    CHECK(expr("table[i + 1] * 2") == "(* (index table (+ i 1)) 2)");
    CHECK(expr("t[k]++") == "(post++ (index t k))");
    CHECK(expr("t[u[k]]") == "(index t (index u k))");
    CHECK(expr("-t[k]") == "(- (index t k))");
}

TEST_CASE("parser: literals", "[parser]") {
    const ExprPtr e = parse_expression(SourceText{"map", "0x10ull + 2.5f * true - .5 + false"});
    CHECK(dump(*e) == "(+ (- (+ 0x10ull (* 2.5f true)) .5) false)");
    const auto& outer = static_cast<const BinaryExpr&>(*e);
    const auto& minus = static_cast<const BinaryExpr&>(*outer.lhs);
    const auto& plus = static_cast<const BinaryExpr&>(*minus.lhs);
    const auto& i = static_cast<const IntLiteral&>(*plus.lhs);
    CHECK(i.value == 16);
    CHECK(i.is_unsigned);
    CHECK(i.is_long);
    const auto& mul = static_cast<const BinaryExpr&>(*plus.rhs);
    const auto& f = static_cast<const FloatLiteral&>(*mul.lhs);
    CHECK(f.value == 2.5);
    CHECK(f.is_float);
    CHECK(static_cast<const BoolLiteral&>(*mul.rhs).value);
    const auto& half = static_cast<const FloatLiteral&>(*minus.rhs);
    CHECK(half.value == 0.5);
    CHECK_FALSE(half.is_float);
    const ExprPtr big = parse_expression(SourceText{"map", "-9223372036854775808"});
    const auto& neg = static_cast<const UnaryExpr&>(*big);
    CHECK(neg.op == UnaryOp::minus);
    CHECK(static_cast<const IntLiteral&>(*neg.operand).value == 9223372036854775808ull);
}

TEST_CASE("parser: statements", "[parser]") {
    CHECK(body("") == "");
    CHECK(body("  // nothing\n") == "");
    CHECK(body("y = a * x + b;") == "(= y (+ (* a x) b));");
    // The last statement may go without its ';', as CuPy operations do.
    CHECK(body("y = a * x + b") == "(= y (+ (* a x) b));");
    CHECK(body("float t = x * x; y = t  // done\n") == "(decl <float> t=(* x x)) (= y t);");
    CHECK(body("while (x) break") == "(while x break;)");
    CHECK(body("for (j = 0, k = 1; j < 3; ++j, k *= 2) {}") == "(for (, (= j 0) (= k 1)); (< j 3) (, (pre++ j) (*= k 2)) { })");
    CHECK(body("float t = x * x, u; y = t;") == "(decl <float> t=(* x x) u) (= y t);");
    CHECK(body("const auto s = x + 1;") == "(decl const <auto> s=(+ x 1))");
    CHECK(body("float acc[4]; ptrdiff_t idx[] = {i / 12, i % 4,}; int w[N] = {1};") ==
          "(decl <float> acc[4]) (decl <ptrdiff_t> idx[2]={(/ i 12),(% i 4)}) (decl <int> w[N]={1})");
    CHECK(body("T v = x;") == "(decl <T> v=x)");
    CHECK(body("unsigned int k = 3u;") == "(decl <unsigned int> k=3u)");
    CHECK(body("long long m = 1;") == "(decl <long long> m=1)");
    CHECK(body("unsigned long int a = 1; short int b = 2; signed c = 3; long unsigned d = 4;") ==
          "(decl <unsigned long> a=1) (decl <short> b=2) (decl <int> c=3) (decl <unsigned long> d=4)");
    CHECK(body("signed char c = 1; unsigned char d = 2; char e = 3;") ==
          "(decl <signed char> c=1) (decl <unsigned char> d=2) (decl <char> e=3)");
    CHECK(body("float32 a = 1; complex64 z = a; bool ok = true;") ==
          "(decl <float32> a=1) (decl <complex64> z=a) (decl <bool> ok=true)");
    CHECK(body("float a = b = 1;") == "(decl <float> a=(= b 1))");
    CHECK(body("float(x) * 2;") == "(* (f-cast <float> x) 2);");
    CHECK(body("if (x > 0) y = x; else y = -x;") == "(if (> x 0) (= y x); else (= y (- x));)");
    CHECK(body("if (a) if (b) y = 1; else y = 2;") == "(if a (if b (= y 1); else (= y 2);))");  // dangling else
    CHECK(body("if (a) { y = 1; } else if (b) { y = 2; } else { y = 3; }") ==
          "(if a { (= y 1); } else (if b { (= y 2); } else { (= y 3); }))");
    CHECK(body("for (int k = 0; k < 4; ++k) s += t[k];") ==
          "(for (decl <int> k=0) (< k 4) (pre++ k) (+= s (index t k));)");
    CHECK(body("for (k = 0; k < 4; k++) {}") == "(for (= k 0); (< k 4) (post++ k) { })");
    CHECK(body("for (;;) break;") == "(for - - - break;)");
    CHECK(body("while (x > 1) { x = x / 2; if (x == 3) continue; }") ==
          "(while (> x 1) { (= x (/ x 2)); (if (== x 3) continue;) })");
    CHECK(body(";;{}") == "; ; { }");
    CHECK(body("{ { float t = 1; } }") == "{ { (decl <float> t=1) } }");
    CHECK(body("y = x;\r\nz = 2;\r\n") == "(= y x); (= z 2);");
    CHECK(body("static_cast<float>(x); true;") == "(static_cast <float> x); true;");
}

TEST_CASE("parser: positions of nodes", "[parser]") {
    const Body b = parse_body(SourceText{"op", "float t = x;\n  if (t > 1)\n    y = f(t) + a[2];"});
    REQUIRE(b.statements.size() == 2);
    const auto& decl = static_cast<const DeclStmt&>(*b.statements[0]);
    CHECK(decl.pos.line == 1);
    CHECK(decl.pos.column == 1);
    CHECK(decl.type.pos.column == 1);
    CHECK(decl.declarators[0].pos.column == 7);
    CHECK(decl.declarators[0].init->pos.column == 11);
    const auto& stmt = static_cast<const IfStmt&>(*b.statements[1]);
    CHECK(stmt.pos.line == 2);
    CHECK(stmt.pos.column == 3);
    CHECK(stmt.pos.offset == 15);
    CHECK(stmt.condition->pos.column == 9);  // a binary node sits at its operator
    const auto& then = static_cast<const ExprStmt&>(*stmt.then_branch);
    CHECK(then.pos.line == 3);
    CHECK(then.pos.column == 5);
    const auto& assign = static_cast<const AssignExpr&>(*then.expr);
    CHECK(assign.pos.column == 7);
    CHECK(assign.target->pos.column == 5);
    const auto& sum = static_cast<const BinaryExpr&>(*assign.value);
    CHECK(sum.pos.column == 14);
    const auto& call = static_cast<const CallExpr&>(*sum.lhs);
    CHECK(call.pos.column == 9);
    CHECK(call.callee_pos.column == 9);
    CHECK(call.args[0]->pos.column == 11);
    const auto& index = static_cast<const IndexExpr&>(*sum.rhs);
    CHECK(index.pos.column == 17);  // at the '['
    CHECK(index.base->pos.column == 16);
    CHECK(index.index->pos.column == 18);

    const ExprPtr cast = parse_expression(SourceText{"map", "a ? (float)x : static_cast<T>(y)"});
    const auto& cond = static_cast<const ConditionalExpr&>(*cast);
    CHECK(cond.pos.column == 3);  // at the '?'
    CHECK(cond.if_true->pos.column == 5);
    CHECK(static_cast<const CastExpr&>(*cond.if_true).target.pos.column == 6);
    CHECK(cond.if_false->pos.column == 16);
    const ExprPtr post = parse_expression(SourceText{"map", "-x++"});
    CHECK(post->pos.column == 1);
    CHECK(static_cast<const UnaryExpr&>(*post).operand->pos.column == 3);  // at the "++"
}

TEST_CASE("parser: errors in expressions", "[parser]") {
    CHECK(body_error("y = x +;") == "op:1:8: error: expected an expression\ny = x +;\n       ^");
    CHECK(body_error("y = x\n// done\nz = 2") == "op:1:6: error: expected ';' after expression\ny = x\n     ^");
    CHECK(body_error("y = x\nz = 1;") == "op:1:6: error: expected ';' after expression\ny = x\n     ^");
    CHECK(body_error("y = x z = 1;") == "op:1:6: error: expected ';' after expression\ny = x z = 1;\n     ^");
    CHECK(body_error("y = x\n  + ;") == "op:2:5: error: expected an expression\n  + ;\n    ^");
    CHECK(body_error("\ty = x +;") == "op:1:9: error: expected an expression\n\ty = x +;\n\t       ^");
    CHECK(body_error("y = ();") ==
          "op:1:6: error: expected an expression\ny = ();\n     ^\nhint: '()' holds no expression");
    CHECK(body_error("y = (x + 1;") ==
          "op:1:11: error: expected ')'\ny = (x + 1;\n          ^\nhint: to match the '(' at 1:5");
    CHECK(body_error("y = (x + 1") ==
          "op:1:11: error: expected ')'\ny = (x + 1\n          ^\nhint: to match the '(' at 1:5");
    CHECK(body_error("y = x);") == "op:1:6: error: expected ';' after expression\ny = x);\n     ^");
    CHECK(body_error("y = f(a, b;") ==
          "op:1:11: error: expected ')' after the arguments\ny = f(a, b;\n          ^\nhint: to match the '(' at 1:6");
    CHECK(body_error("y = f(a,);") == "op:1:9: error: expected an expression\ny = f(a,);\n        ^");
    CHECK(body_error("y = t[k;") == "op:1:8: error: expected ']'\ny = t[k;\n       ^\nhint: to match the '[' at 1:6");
    CHECK(body_error("y = t[];") == "op:1:7: error: expected an expression\ny = t[];\n      ^");
    CHECK(body_error("y = x ? 1 2;") ==
          "op:1:11: error: expected ':' in conditional expression\ny = x ? 1 2;\n          ^\nhint: to match the '?' at 1:7");
    // The comma operator is C's (CuPy's post-map `s = a, q = a * a`), but an index is one expression.
    CHECK(body_error("y = t[a, b];") ==
          "op:1:8: error: an index is one expression: ',' here would drop all but the last\ny = t[a, b];\n       ^\n"
          "hint: index a raw parameter by one flat index: table[row * columns + column]");
    CHECK(body_error("y = &x;") ==
          "op:1:5: error: taking an address with '&' is not allowed: there are no pointers in kernel code\n"
          "y = &x;\n    ^");
    CHECK(body_error("y = *p;") ==
          "op:1:5: error: unary '*' (dereference) is not allowed: there are no pointers in kernel code\ny = *p;\n    ^\n"
          "hint: index a raw parameter instead: 'raw T table' and table[k]");
    CHECK(body_error("y = p->q;") ==
          "op:1:6: error: '->' is not allowed: there are no pointers in kernel code\ny = p->q;\n     ^");
    CHECK(body_error("y = (a + 1).b;") ==
          "op:1:12: error: member access with '.' is only for a raw parameter's size(), shape(), strides() and ndim\n"
          "y = (a + 1).b;\n           ^");
    CHECK(body_error("y = threadIdx.x;") ==
          "op:1:14: error: member access with '.' is only for a raw parameter's size(), shape(), strides() and ndim\n"
          "y = threadIdx.x;\n             ^\nhint: the element index is 'i' and the number of elements 'n'");
    CHECK(body_error("y = a.;") == "op:1:7: error: expected a member name after '.'\ny = a.;\n      ^");
    CHECK(body_error("y = std::sqrt(x);") ==
          "op:1:8: error: qualified names ('::') are not supported in kernel code\ny = std::sqrt(x);\n       ^\n"
          "hint: call math functions by their plain names: sqrt(x)");
    CHECK(body_error("y = x[1][2];") ==
          "op:1:9: error: multi-dimensional indexing is not supported\ny = x[1][2];\n        ^\n"
          "hint: compute a flat index: table[row * columns + column]");
    CHECK(body_error("y = f(x)[2];") ==
          "op:1:9: error: only a name can be indexed\ny = f(x)[2];\n        ^\nhint: index a raw parameter: table[k]");
    CHECK(body_error("y = f(x)(2);") == "op:1:9: error: only a named function can be called\ny = f(x)(2);\n        ^");
    CHECK(body_error("auto f = [](float v) { return v; };") ==
          "op:1:10: error: lambdas are not supported in kernel code\nauto f = [](float v) { return v; };\n         ^\n"
          "hint: declare helper functions in the preamble");
    CHECK(body_error("float a = {1};") ==
          "op:1:11: error: a brace list initialises an array\nfloat a = {1};\n          ^\nhint: write 'a[]' to declare one");
    CHECK(body_error("y = float;") ==
          "op:1:5: error: unexpected type name 'float' in an expression\ny = float;\n    ^\n"
          "hint: convert with float(x), (float)x or static_cast<float>(x); declare variables in statements of their own");
    CHECK(body_error("y = unsigned int(x);") ==
          "op:1:5: error: a functional cast needs a one-word type name\ny = unsigned int(x);\n    ^\n"
          "hint: write (unsigned int)x or static_cast<unsigned int>(x)");
    CHECK(body_error("y = (auto)x;") ==
          "op:1:6: error: 'auto' is only allowed in declarations\ny = (auto)x;\n     ^\nhint: name the type, e.g. float32 or T");
    CHECK(body_error("y = (float*)p;") ==
          "op:1:11: error: pointer casts are not allowed in kernel code\ny = (float*)p;\n          ^\n"
          "hint: index a raw parameter instead: 'raw T table' and table[k]");
    CHECK(body_error("y = static_cast<float(x);") ==
          "op:1:22: error: expected '>' after the type of static_cast\ny = static_cast<float(x);\n                     ^");
    CHECK(body_error("y = static_cast(x);") ==
          "op:1:16: error: expected '<' after 'static_cast'\ny = static_cast(x);\n               ^");
    CHECK(body_error("y = static_cast<x>(x);") ==
          "op:1:17: error: expected a type name\ny = static_cast<x>(x);\n                ^");
    CHECK(body_error("y = static_cast<int>x;") ==
          "op:1:21: error: expected '(' after static_cast<int>\ny = static_cast<int>x;\n                    ^");
    CHECK(body_error("y = reinterpret_cast<int>(x);") ==
          "op:1:5: error: 'reinterpret_cast' is not allowed in kernel code\ny = reinterpret_cast<int>(x);\n    ^\n"
          "hint: convert values with static_cast<T>(x), T(x) or (T)x");
    CHECK(body_error("y = sizeof(x);") ==
          "op:1:5: error: 'sizeof' is not supported in kernel code\ny = sizeof(x);\n    ^\nhint: write the size as a number");
    CHECK(body_error("y = new float;") ==
          "op:1:5: error: 'new' is not allowed in kernel code: there is no dynamic memory\ny = new float;\n    ^\n"
          "hint: use local variables");
    CHECK(body_error("delete p;") ==
          "op:1:1: error: 'delete' is not allowed in kernel code: there is no dynamic memory\ndelete p;\n^");
    CHECK(body_error("y = nullptr;") ==
          "op:1:5: error: 'nullptr' is not allowed in kernel code: there are no pointers\ny = nullptr;\n    ^");
    CHECK(body_error("y = if;") == "op:1:5: error: expected an expression\ny = if;\n    ^");
    CHECK(body_error("y = this;") == "op:1:5: error: 'this' is not allowed in kernel code\ny = this;\n    ^");
}

TEST_CASE("parser: errors in statements", "[parser]") {
    CHECK(body_error("float* p = x;") ==
          "op:1:6: error: pointers are not allowed in kernel code\nfloat* p = x;\n     ^\n"
          "hint: index a raw parameter instead: 'raw T table' and table[k]");
    CHECK(body_error("float a = 1, *p;") ==
          "op:1:14: error: pointers are not allowed in kernel code\nfloat a = 1, *p;\n             ^\n"
          "hint: index a raw parameter instead: 'raw T table' and table[k]");
    CHECK(body_error("float& r = x;") ==
          "op:1:6: error: references are not allowed in kernel code\nfloat& r = x;\n     ^");
    CHECK(body_error("float = 3;") == "op:1:7: error: expected a variable name after 'float'\nfloat = 3;\n      ^");
    CHECK(body_error("float") == "op:1:6: error: expected a variable name after 'float'\nfloat\n     ^");
    CHECK(body_error("T = 1;") ==
          "op:1:3: error: expected a variable name after 'T'\nT = 1;\n  ^\n"
          "hint: a single upper-case letter names a type placeholder, not a variable");
    CHECK(body_error("float T = 1;") ==
          "op:1:7: error: 'T' is a type name and cannot name a variable\nfloat T = 1;\n      ^\n"
          "hint: a single upper-case letter names a type placeholder");
    CHECK(body_error("float int = 1;") ==
          "op:1:7: error: 'int' is a type name and cannot name a variable\nfloat int = 1;\n      ^");
    CHECK(body_error("float if = 1;") ==
          "op:1:7: error: expected a variable name, found keyword 'if'\nfloat if = 1;\n      ^");
    CHECK(body_error("float const x = 1;") ==
          "op:1:7: error: expected a variable name, found keyword 'const'\nfloat const x = 1;\n      ^\n"
          "hint: write 'const' before the type");
    CHECK(body_error("const x = 1;") == "op:1:7: error: expected a type after 'const'\nconst x = 1;\n      ^");
    CHECK(body_error("auto t;") == "op:1:6: error: 'auto' variable 't' needs an initializer\nauto t;\n     ^");
    CHECK(body_error("auto t, u = 1;") == "op:1:6: error: 'auto' variable 't' needs an initializer\nauto t, u = 1;\n     ^");
    CHECK(body_error("const float c;") ==
          "op:1:13: error: const variable 'c' needs an initializer\nconst float c;\n            ^");
    CHECK(body_error("float a[0];") == "op:1:9: error: a local array has 1 to 1024 elements\nfloat a[0];\n        ^");
    CHECK(body_error("float a[];") ==
          "op:1:9: error: local array 'a' needs a length or a brace list to count\nfloat a[];\n        ^\n"
          "hint: write 'float a[4];' or 'float a[] = {a, b};'");
    CHECK(body_error("float a[2] = {1, 2, 3};") ==
          "op:1:21: error: too many values for array 'a' of 2\nfloat a[2] = {1, 2, 3};\n                    ^");
    CHECK(body_error("float a[2][2];") ==
          "op:1:11: error: local arrays have one dimension\nfloat a[2][2];\n          ^\nhint: use a flat index: a[row * columns + column]");

    CHECK(body_error("float a(3);") ==
          "op:1:8: error: only '=' initialisation is supported\nfloat a(3);\n       ^\nhint: write 'float a = value;'");
    CHECK(body_error("float a = 1\ny = a;") == "op:1:12: error: expected ';' after declaration\nfloat a = 1\n           ^");
    CHECK(body_error("for (int k = 0") ==
          "op:1:15: error: expected ';' after declaration\nfor (int k = 0\n              ^");
    CHECK(body_error("{ y = x }") == "op:1:8: error: expected ';' after expression\n{ y = x }\n       ^");
    CHECK(body_error("float a b;") == "op:1:8: error: expected ';' after declaration\nfloat a b;\n       ^");
    CHECK(body_error("int long short x = 1;") ==
          "op:1:1: error: 'int long short' is not a valid type\nint long short x = 1;\n^\n"
          "hint: C integer types are [unsigned] char, short, int, long, long long");
    CHECK(body_error("unsigned unsigned x = 1;") ==
          "op:1:1: error: 'unsigned unsigned' is not a valid type\nunsigned unsigned x = 1;\n^\n"
          "hint: C integer types are [unsigned] char, short, int, long, long long");
    CHECK(body_error("{ y = 1;") == "op:1:9: error: expected '}'\n{ y = 1;\n        ^\nhint: to match the '{' at 1:1");
    CHECK(body_error("{ y = 1;\n\n") == "op:1:9: error: expected '}'\n{ y = 1;\n        ^\nhint: to match the '{' at 1:1");
    CHECK(body_error("y = 1; }") == "op:1:8: error: '}' without a matching '{'\ny = 1; }\n       ^");
    CHECK(body_error("if (x) }") == "op:1:8: error: expected a statement\nif (x) }\n       ^");
    CHECK(body_error("while (x)") == "op:1:10: error: expected a statement\nwhile (x)\n         ^");
    CHECK(body_error("if x > 0 { y = 1; }") == "op:1:4: error: expected '(' after 'if'\nif x > 0 { y = 1; }\n   ^");
    CHECK(body_error("if (x > 0 { y = 1; }") ==
          "op:1:11: error: expected ')'\nif (x > 0 { y = 1; }\n          ^\nhint: to match the '(' at 1:4");
    CHECK(body_error("while x {}") == "op:1:7: error: expected '(' after 'while'\nwhile x {}\n      ^");
    CHECK(body_error("for x {}") == "op:1:5: error: expected '(' after 'for'\nfor x {}\n    ^");
    CHECK(body_error("for (k = 0; k < 3) {}") ==
          "op:1:18: error: expected ';' after the condition of 'for'\nfor (k = 0; k < 3) {}\n                 ^");
    CHECK(body_error("for (k = 0) {}") ==
          "op:1:11: error: expected ';' after the initialisation of 'for'\nfor (k = 0) {}\n          ^");
    CHECK(body_error("for (;; k++ {}") ==
          "op:1:13: error: expected ')'\nfor (;; k++ {}\n            ^\nhint: to match the '(' at 1:5");
    CHECK(body_error("if (x) y = 1; else y = 2; else y = 3;") ==
          "op:1:27: error: 'else' without a matching 'if'\nif (x) y = 1; else y = 2; else y = 3;\n                          ^");
    CHECK(body_error("else y = 1;") == "op:1:1: error: 'else' without a matching 'if'\nelse y = 1;\n^");
    CHECK(body_error("break y = 1;") == "op:1:6: error: expected ';' after 'break'\nbreak y = 1;\n     ^");
    CHECK(body_error("continue x;") == "op:1:9: error: expected ';' after 'continue'\ncontinue x;\n        ^");
    CHECK(body_error("return;") ==
          "op:1:1: error: 'return' is not allowed in kernel code\nreturn;\n^\n"
          "hint: the body runs once per element: assign the outputs, and use if/else to skip work");
    CHECK(body_error("if (x < 0) return y;") ==
          "op:1:12: error: 'return' is not allowed in kernel code\nif (x < 0) return y;\n           ^\n"
          "hint: the body runs once per element: assign the outputs, and use if/else to skip work");
    CHECK(body_error("goto end;") ==
          "op:1:1: error: 'goto' is not allowed in kernel code\ngoto end;\n^\nhint: use loops with 'break' and 'continue'");
    CHECK(body_error("asm(\"nop\");") ==
          "op:1:1: error: inline assembly is not allowed in kernel code\nasm(\"nop\");\n^\n"
          "hint: put device functions that need it in the preamble");
    CHECK(body_error("__asm__ volatile(\"\");") ==
          "op:1:1: error: inline assembly is not allowed in kernel code\n__asm__ volatile(\"\");\n^\n"
          "hint: put device functions that need it in the preamble");
    for (const char* word : {"struct", "class", "union", "enum", "template", "typedef", "using", "namespace"}) {
        const std::string text = std::string(word) + " S;";
        INFO(text);
        CHECK(body_error(text) == "op:1:1: error: '" + std::string(word) + "' is not allowed in kernel code\n" + text +
                                      "\n^\nhint: declare types and helper functions in the preamble");
    }
    CHECK(body_error("switch (x) { case 1: break; }") ==
          "op:1:1: error: 'switch' is not supported in kernel code\nswitch (x) { case 1: break; }\n^\nhint: use if / else if");
    CHECK(body_error("do { x++; } while (x < 3);") ==
          "op:1:1: error: do-while loops are not supported in kernel code\ndo { x++; } while (x < 3);\n^\n"
          "hint: use 'while (true) { ...; if (!(condition)) break; }'");
    CHECK(body_error("static float s = 1;") ==
          "op:1:1: error: 'static' is not allowed in kernel code\nstatic float s = 1;\n^");
    CHECK(body_error("throw 1;") == "op:1:1: error: exceptions are not supported in kernel code\nthrow 1;\n^");
    CHECK(body_error("void f();") == "op:1:1: error: 'void' is not allowed in kernel code\nvoid f();\n^");
    // Lexer errors reach the user through the parser unchanged.
    CHECK(body_error("#include <math.h>") ==
          "op:1:1: error: preprocessor directives are not allowed in kernel code\n#include <math.h>\n^\n"
          "hint: put #include lines, macros and helper functions in the preamble");
    CHECK(body_error("y = 017;") ==
          "op:1:5: error: integer literal '017' has a leading zero\ny = 017;\n    ^\n"
          "hint: C reads it as octal (017 is 15); write 15, or 17 for the decimal number");
}

TEST_CASE("parser: parse_expression takes exactly one expression", "[parser]") {
    CHECK(expr("x * x") == "(* x x)");
    CHECK(expr("y = sqrt(a)") == "(= y (call sqrt a))");
    CHECK(expr("  a + b  // comment\n") == "(+ a b)");
    CHECK(expr_error("") == "map:1:1: error: expected an expression\n\n^");
    CHECK(expr_error("  ") == "map:1:3: error: expected an expression\n  \n  ^");
    CHECK(expr_error("x * x;") ==
          "map:1:6: error: unexpected ';' after the expression\nx * x;\n     ^\nhint: this string holds one expression, not statements");
    CHECK(expr_error("x y") == "map:1:3: error: unexpected 'y' after the expression\nx y\n  ^");
    CHECK(expr("a, b") == "(, a b)");
    CHECK(expr_error("(x") == "map:1:3: error: expected ')'\n(x\n  ^\nhint: to match the '(' at 1:1");
    CHECK(expr_error("x)") == "map:1:2: error: unexpected ')' after the expression\nx)\n ^");
    CHECK(expr_error("float t = x") == "map:1:1: error: unexpected type name 'float' in an expression\nfloat t = x\n^\n"
                                           "hint: convert with float(x), (float)x or static_cast<float>(x); declare "
                                           "variables in statements of their own");
    CHECK(expr_error("{x}") ==
          "map:1:1: error: expected an expression\n{x}\n^\nhint: brace initialisation is not supported");
}

TEST_CASE("parser: type names", "[parser]") {
    CHECK(is_type_name("float"));
    CHECK(is_type_name("float32"));
    CHECK(is_type_name("bfloat16"));
    CHECK(is_type_name("complex64"));
    CHECK(is_type_name("unsigned int"));
    CHECK(is_type_name("auto"));
    CHECK(is_type_name("T"));
    CHECK(is_type_name("half"));
    CHECK_FALSE(is_type_name("x"));
    CHECK_FALSE(is_type_name("TT"));
    CHECK_FALSE(is_type_name(""));
    CHECK(is_placeholder_name("U"));
    CHECK_FALSE(is_placeholder_name("u"));
    CHECK_FALSE(is_placeholder_name("T1"));
    CHECK(canonical_c_type({"long", "unsigned", "int"}) == "unsigned long");
    CHECK(canonical_c_type({"long", "long"}) == "long long");
    CHECK(canonical_c_type({"signed"}) == "int");
    CHECK(canonical_c_type({"unsigned"}) == "unsigned int");
    CHECK_FALSE(canonical_c_type({"long", "char"}));
    CHECK_FALSE(canonical_c_type({"long", "long", "long"}));
    CHECK_FALSE(canonical_c_type({"short", "long"}));
    CHECK_FALSE(canonical_c_type({"signed", "unsigned"}));
    CHECK_FALSE(canonical_c_type({}));
}

TEST_CASE("parser: nesting is limited, never a stack overflow", "[parser]") {
    const auto start = std::chrono::steady_clock::now();
    const std::string deep(100000, '(');
    const std::string nested_message = "nested too deeply (the limit is " + std::to_string(kMaxDepth) + " levels)";
    auto check_deep = [&](const std::string& text, bool as_expression) {
        try {
            if (as_expression) {
                parse_expression(SourceText{"map", text});
            } else {
                parse_body(SourceText{"op", text});
            }
            FAIL("parsed");
        } catch (const kjit::ParseError& e) {
            CHECK(e.message() == nested_message);
            CHECK(e.hint() == "split it into several statements with local variables; long chains of operators count too");
        }
    };
    check_deep("y = " + deep, false);
    check_deep(deep, true);
    check_deep("y = " + std::string(100000, '-') + "x;", false);
    check_deep(std::string(100000, '!') + "x", true);
    check_deep(std::string(100000, '{'), false);
    check_deep(std::string(50000, '{') + std::string(50000, '}'), false);
    std::string ifs;
    for (int k = 0; k < 20000; ++k) ifs += "if (x) ";
    check_deep(ifs + "y = 1;", false);
    std::string casts;
    for (int k = 0; k < 20000; ++k) casts += "(float)";
    check_deep(casts + "x", true);
    std::string calls;
    for (int k = 0; k < 20000; ++k) calls += "f(";
    check_deep(calls, true);
    std::string indexes;
    for (int k = 0; k < 20000; ++k) indexes += "t[";
    check_deep(indexes, true);
    std::string assigns;
    for (int k = 0; k < 20000; ++k) assigns += "a = ";
    check_deep(assigns + "1", true);
    std::string ternaries;
    for (int k = 0; k < 20000; ++k) ternaries += "a ? b : ";
    check_deep(ternaries + "c", true);
    // Long flat chains make deep trees too (the checker walks them recursively).
    std::string sum = "a";
    for (int k = 0; k < 100000; ++k) sum += " + a";
    check_deep(sum, true);
    std::string posts = "x";
    for (int k = 0; k < 100000; ++k) posts += "++";
    check_deep(posts, true);
    std::string elses = "if (a) x = 1;";
    for (int k = 0; k < 20000; ++k) elses += " else if (a) x = 1;";
    check_deep(elses, false);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(seconds < 5.0);

    // Within the limit everything parses: 150 parentheses, a 150-term sum, 150 nested blocks.
    CHECK_NOTHROW(parse_expression(SourceText{"map", std::string(150, '(') + "x" + std::string(150, ')')}));
    std::string sum150 = "a";
    for (int k = 0; k < 150; ++k) sum150 += " + a";
    CHECK_NOTHROW(parse_expression(SourceText{"map", sum150}));
    CHECK_NOTHROW(parse_body(SourceText{"op", std::string(150, '{') + std::string(150, '}')}));
    // Many statements one after the other are no nesting at all.
    std::string many;
    for (int k = 0; k < 20000; ++k) many += "y = y + 1;\n";
    CHECK(parse_body(SourceText{"op", many}).statements.size() == 20000);
}

TEST_CASE("parser: random input throws only ParseError", "[parser]") {
    std::mt19937_64& rng = kjit::test::rng();
    INFO("seed " << kjit::test::seed());
    auto parse_all_ways = [](const std::string& text) {
        for (int way = 0; way < 2; ++way) {
            try {
                if (way == 0) {
                    parse_body(SourceText{"op", text});
                } else {
                    parse_expression(SourceText{"map", text});
                }
            } catch (const kjit::ParseError&) {
            }
        }
    };
    // Random bytes, mostly stopped by the lexer.
    for (int round = 0; round < 3000; ++round) {
        std::string text(rng() % 64, '\0');
        for (char& c : text) c = static_cast<char>(rng() % 256);
        INFO("bytes round " << round);
        REQUIRE_NOTHROW(parse_all_ways(text));
    }
    // Random token soup: reaches deep into the parser.
    const char* vocabulary[] = {"x", "y", "f", "t", "T", "float", "unsigned", "int", "long", "auto", "const", "if",
                                "else", "for", "while", "break", "continue", "return", "static_cast", "true", "1",
                                "2.5f", "0x1F", "(", ")", "[", "]", "{", "}", ";", ",", "=", "+=", "+", "-", "*", "/",
                                "%", "<<", ">>", "<", ">", "<=", "==", "!=", "&", "&&", "|", "||", "^", "~", "!", "?",
                                ":", "++", "--", ".", "->", "::", " ", "\n", "/**/", "//\n"};
    const std::size_t words = sizeof vocabulary / sizeof vocabulary[0];
    for (int round = 0; round < 5000; ++round) {
        std::string text;
        const std::size_t count = rng() % 40;
        for (std::size_t k = 0; k < count; ++k) {
            text += vocabulary[rng() % words];
            text += ' ';
        }
        INFO("tokens: " << text);
        REQUIRE_NOTHROW(parse_all_ways(text));
    }
}

// The syntax tree of kernel bodies. The parser builds it; the type checker fills in the `type`
// of every expression and what each name refers to; the code generator prints it as CUDA.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jit/frontend/source.hpp"
#include "kjit/dtype.hpp"

namespace kjit::jit::frontend {

// A type as written: "float", "T", "unsigned int", "float32", "auto".
struct TypeName {
    std::string spelling;  // single spaces between words
    SourcePos pos;
};

// --- expressions ---

enum class ExprKind { int_literal, float_literal, bool_literal, name, unary, binary, assign, conditional, cast, call, index, member };

enum class UnaryOp { plus, minus, logical_not, bit_not, pre_increment, pre_decrement, post_increment, post_decrement };

enum class BinaryOp {
    mul, div, mod, add, sub, shl, shr, lt, gt, le, ge, eq, ne, bit_and, bit_xor, bit_or, logical_and, logical_or,
    comma,  // `a, b`: a, then b, whose value it is (CuPy's post-map `s = a, q = a * a`)
};

// `=` is `assign`; the others are compound assignments with the named binary operator.
enum class AssignOp { assign, add, sub, mul, div, mod, bit_and, bit_or, bit_xor, shl, shr };

enum class CastStyle { c_style, functional, static_cast_ };

// What a name refers to, once checked.
// constant: CUDA's math constants and the kernel's own macros (jit/frontend/named_constants.hpp).
enum class NameKind { unresolved, param, local, index_i, size_n, preamble_function, constant };

struct Expr {
    ExprKind kind;
    SourcePos pos;
    // Filled by the type checker: the value's dtype, or nothing when it depends on a
    // placeholder that is not bound (checking without types).
    std::optional<DType> type;

    explicit Expr(ExprKind k, SourcePos p) : kind(k), pos(p) {}
    virtual ~Expr() = default;
};
using ExprPtr = std::unique_ptr<Expr>;

struct IntLiteral : Expr {
    std::string text;          // as written, for error messages and readable output
    std::uint64_t value = 0;   // magnitude (a leading '-' is a unary minus)
    bool is_unsigned = false;  // u/U suffix
    bool is_long = false;      // l/L or ll/LL suffix
    IntLiteral(SourcePos p) : Expr(ExprKind::int_literal, p) {}
};

struct FloatLiteral : Expr {
    std::string text;
    double value = 0.0;
    bool is_float = false;  // f/F suffix: float; otherwise double, as in C
    FloatLiteral(SourcePos p) : Expr(ExprKind::float_literal, p) {}
};

struct BoolLiteral : Expr {
    bool value = false;
    BoolLiteral(SourcePos p) : Expr(ExprKind::bool_literal, p) {}
};

struct NameExpr : Expr {
    std::string name;
    NameKind refers_to = NameKind::unresolved;  // set by the checker
    int index = -1;  // param, local or CheckedKernel::constants index, set by the checker
    NameExpr(SourcePos p) : Expr(ExprKind::name, p) {}
};

struct UnaryExpr : Expr {
    UnaryOp op;
    ExprPtr operand;
    UnaryExpr(SourcePos p, UnaryOp o, ExprPtr e) : Expr(ExprKind::unary, p), op(o), operand(std::move(e)) {}
};

struct BinaryExpr : Expr {
    BinaryOp op;
    ExprPtr lhs, rhs;
    // The type both operands are converted to before the operation (the usual arithmetic
    // conversions); set by the checker. For comparisons it differs from `type` (bool).
    std::optional<DType> operand_type;
    BinaryExpr(SourcePos p, BinaryOp o, ExprPtr l, ExprPtr r)
        : Expr(ExprKind::binary, p), op(o), lhs(std::move(l)), rhs(std::move(r)) {}
};

struct AssignExpr : Expr {
    AssignOp op;
    ExprPtr target, value;
    AssignExpr(SourcePos p, AssignOp o, ExprPtr t, ExprPtr v)
        : Expr(ExprKind::assign, p), op(o), target(std::move(t)), value(std::move(v)) {}
};

struct ConditionalExpr : Expr {
    ExprPtr condition, if_true, if_false;
    ConditionalExpr(SourcePos p, ExprPtr c, ExprPtr t, ExprPtr f)
        : Expr(ExprKind::conditional, p), condition(std::move(c)), if_true(std::move(t)), if_false(std::move(f)) {}
};

struct CastExpr : Expr {
    TypeName target;
    CastStyle style;
    ExprPtr operand;
    CastExpr(SourcePos p, TypeName t, CastStyle s, ExprPtr e)
        : Expr(ExprKind::cast, p), target(std::move(t)), style(s), operand(std::move(e)) {}
};

struct CallExpr : Expr {
    std::string callee;
    SourcePos callee_pos;
    std::vector<ExprPtr> args;
    CallExpr(SourcePos p) : Expr(ExprKind::call, p) {}
};

// `table[k]` on a raw parameter, `acc[k]` on a local array, `x.shape()[d]` and `x.strides()[d]`
// on a raw parameter's metadata; `x[idx]` indexes a raw parameter by a local array of indices
// (the checker enforces all that).
struct IndexExpr : Expr {
    ExprPtr base;
    ExprPtr index;
    bool by_index_array = false;  // set by the checker: `index` names a local array, one index per dimension
    IndexExpr(SourcePos p, ExprPtr b, ExprPtr i) : Expr(ExprKind::index, p), base(std::move(b)), index(std::move(i)) {}
};

// CuPy's CArray metadata of a raw parameter: `x.size()`, `x.shape()`, `x.strides()` (indexed),
// `x.ndim`.
struct MemberExpr : Expr {
    ExprPtr base;
    std::string member;
    SourcePos member_pos;
    bool called = false;  // written with "()"
    MemberExpr(SourcePos p, ExprPtr b) : Expr(ExprKind::member, p), base(std::move(b)) {}
};

// --- statements ---

enum class StmtKind { expr, decl, block, if_, for_, while_, break_, continue_, empty };

struct Stmt {
    StmtKind kind;
    SourcePos pos;
    explicit Stmt(StmtKind k, SourcePos p) : kind(k), pos(p) {}
    virtual ~Stmt() = default;
};
using StmtPtr = std::unique_ptr<Stmt>;

struct ExprStmt : Stmt {
    ExprPtr expr;
    ExprStmt(SourcePos p, ExprPtr e) : Stmt(StmtKind::expr, p), expr(std::move(e)) {}
};

struct Declarator {
    std::string name;
    SourcePos pos;
    ExprPtr init;   // may be null (not for `auto`)
    int local = -1; // index in the checker's table of locals
    // A fixed-size array `float acc[4]` or `ptrdiff_t idx[] = {a, b, c}`: its length (from the
    // brace list when the brackets are empty), and the list's elements; -1 for a scalar.
    int array_length = -1;
    std::string length_name;  // `float acc[N]`: a constant's name, resolved by the checker
    SourcePos length_pos;
    bool has_list = false;    // initialised from a brace list
    std::vector<ExprPtr> elements;
};

// `float t = x * x, u;` or `const auto s = ...;`
struct DeclStmt : Stmt {
    TypeName type;
    bool is_const = false;
    std::vector<Declarator> declarators;
    DeclStmt(SourcePos p) : Stmt(StmtKind::decl, p) {}
};

struct BlockStmt : Stmt {
    std::vector<StmtPtr> body;
    BlockStmt(SourcePos p) : Stmt(StmtKind::block, p) {}
};

struct IfStmt : Stmt {
    ExprPtr condition;
    StmtPtr then_branch;
    StmtPtr else_branch;  // may be null
    IfStmt(SourcePos p) : Stmt(StmtKind::if_, p) {}
};

struct ForStmt : Stmt {
    StmtPtr init;        // a declaration, an expression statement or empty; may be null
    ExprPtr condition;   // may be null (forever, until break)
    ExprPtr step;        // may be null
    StmtPtr body;
    ForStmt(SourcePos p) : Stmt(StmtKind::for_, p) {}
};

struct WhileStmt : Stmt {
    ExprPtr condition;
    StmtPtr body;
    WhileStmt(SourcePos p) : Stmt(StmtKind::while_, p) {}
};

struct SimpleStmt : Stmt {  // break, continue, empty (`;`)
    using Stmt::Stmt;
};

// A parsed kernel body: the statements of `operation` (elementwise) or one expression (a
// reduction's map, reduce or post-map expression is parsed as a body holding one statement).
struct Body {
    std::vector<StmtPtr> statements;
};

// Whether a top-level `y = ...;` writes output `k` on every path before anything could skip it
// (then its old value need not be loaded); both back ends (CUDA and host) decide with it.
bool definitely_assigned(const Body& body, int k);

}  // namespace kjit::jit::frontend

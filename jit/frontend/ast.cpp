// Queries on the syntax tree that the back ends share.
#include "jit/frontend/ast.hpp"

namespace kjit::jit::frontend {
namespace {

// Whether evaluating `e` always assigns parameter k: `k = ...`, or one of `a, b`'s operands does.
bool assigns(const Expr& e, int k) {
    if (e.kind == ExprKind::binary && static_cast<const BinaryExpr&>(e).op == BinaryOp::comma)
        return assigns(*static_cast<const BinaryExpr&>(e).lhs, k) || assigns(*static_cast<const BinaryExpr&>(e).rhs, k);
    if (e.kind != ExprKind::assign) return false;
    const auto& a = static_cast<const AssignExpr&>(e);
    return a.op == AssignOp::assign && a.target->kind == ExprKind::name &&
           static_cast<const NameExpr&>(*a.target).refers_to == NameKind::param && static_cast<const NameExpr&>(*a.target).index == k;
}

}  // namespace

bool definitely_assigned(const Body& body, int k) {
    for (const StmtPtr& s : body.statements)
        if (s->kind == StmtKind::expr && assigns(*static_cast<const ExprStmt&>(*s).expr, k)) return true;
    return false;
}

}  // namespace kjit::jit::frontend

#include "jit/kernels/reduction/struct_value.hpp"

#include <algorithm>

#include "jit/frontend/parser.hpp"

namespace kjit::jit::kernels {

using namespace frontend;

namespace {

std::string field_list(const StructDecl& s) {
    std::string names;
    for (const StructField& f : s.fields) names += (names.empty() ? "" : ", ") + f.name;
    return names;
}

std::string struct_title(const StructDecl& s) { return s.name.empty() ? std::string("the struct") : "struct '" + s.name + "'"; }

class FieldReads {
public:
    FieldReads(const SourceText& src, const StructDecl& s, const std::vector<std::string>& values) : src_(src), s_(s), values_(values) {}

    bool is_value(const Expr& e) const {
        return e.kind == ExprKind::name &&
               std::find(values_.begin(), values_.end(), static_cast<const NameExpr&>(e).name) != values_.end();
    }

    // "a.f" for field f of value a; fails for unknown fields.
    ExprPtr field(const std::string& value, SourcePos pos, const std::string& f, SourcePos field_pos) const {
        bool known = false;
        std::vector<std::string> names;
        for (const StructField& g : s_.fields) {
            known = known || g.name == f;
            names.push_back(g.name);
        }
        if (!known) {
            const std::string near = closest_name(f, names);
            fail_type(src_, field_pos, struct_title(s_) + " has no field '" + f + "'",
                      near.empty() ? "its fields: " + field_list(s_) : "did you mean '" + near + "'?");
        }
        auto n = std::make_unique<NameExpr>(pos);
        n->name = value + "." + f;
        return n;
    }

    void expr(ExprPtr& e) const {
        if (!e) return;
        switch (e->kind) {
            case ExprKind::name:
                if (is_value(*e)) {
                    const auto& n = static_cast<const NameExpr&>(*e);
                    fail_type(src_, n.pos, "'" + n.name + "' is a value of " + struct_title(s_) + ": read one of its fields",
                              "as in " + n.name + "." + s_.fields.front().name + " (fields: " + field_list(s_) + ")");
                }
                return;
            case ExprKind::member: {
                auto& m = static_cast<MemberExpr&>(*e);
                if (m.base && is_value(*m.base)) {
                    const std::string& value = static_cast<const NameExpr&>(*m.base).name;
                    if (m.called) fail_type(src_, m.member_pos, "'" + value + "." + m.member + "' is a field, not a function", "drop the ()");
                    e = field(value, m.pos, m.member, m.member_pos);
                    return;
                }
                expr(m.base);
                return;
            }
            case ExprKind::unary: expr(static_cast<UnaryExpr&>(*e).operand); return;
            case ExprKind::binary: {
                auto& b = static_cast<BinaryExpr&>(*e);
                expr(b.lhs);
                expr(b.rhs);
                return;
            }
            case ExprKind::assign: {
                auto& a = static_cast<AssignExpr&>(*e);
                expr(a.target);
                expr(a.value);
                return;
            }
            case ExprKind::conditional: {
                auto& c = static_cast<ConditionalExpr&>(*e);
                expr(c.condition);
                expr(c.if_true);
                expr(c.if_false);
                return;
            }
            case ExprKind::cast: expr(static_cast<CastExpr&>(*e).operand); return;
            case ExprKind::call:
                for (ExprPtr& a : static_cast<CallExpr&>(*e).args) expr(a);
                return;
            case ExprKind::index: {
                auto& ix = static_cast<IndexExpr&>(*e);
                expr(ix.base);
                expr(ix.index);
                return;
            }
            default: return;
        }
    }

    void stmt(StmtPtr& s) const {
        if (!s) return;
        switch (s->kind) {
            case StmtKind::expr: expr(static_cast<ExprStmt&>(*s).expr); return;
            case StmtKind::decl:
                for (Declarator& d : static_cast<DeclStmt&>(*s).declarators) {
                    expr(d.init);
                    for (ExprPtr& v : d.elements) expr(v);
                }
                return;
            case StmtKind::block:
                for (StmtPtr& b : static_cast<BlockStmt&>(*s).body) stmt(b);
                return;
            case StmtKind::if_: {
                auto& i = static_cast<IfStmt&>(*s);
                expr(i.condition);
                stmt(i.then_branch);
                stmt(i.else_branch);
                return;
            }
            case StmtKind::for_: {
                auto& f = static_cast<ForStmt&>(*s);
                stmt(f.init);
                expr(f.condition);
                expr(f.step);
                stmt(f.body);
                return;
            }
            case StmtKind::while_: {
                auto& w = static_cast<WhileStmt&>(*s);
                expr(w.condition);
                stmt(w.body);
                return;
            }
            default: return;
        }
    }

    // Field `j` of a struct-valued expression: `a`, `b`, or a conditional between such values.
    ExprPtr field_of(ExprPtr e, std::size_t j) const {
        if (is_value(*e)) {
            const auto& n = static_cast<const NameExpr&>(*e);
            return field(n.name, n.pos, s_.fields[j].name, n.pos);
        }
        if (e->kind == ExprKind::conditional) {
            auto& c = static_cast<ConditionalExpr&>(*e);
            expr(c.condition);
            c.if_true = field_of(std::move(c.if_true), j);
            c.if_false = field_of(std::move(c.if_false), j);
            return e;
        }
        std::string how = "{" + field_list(s_) + "} in that order";
        for (const std::string& v : values_) how += ", " + v;
        fail_type(src_, e->pos, "expected a value of " + struct_title(s_),
                  "write " + how + (values_.empty() ? "" : ", or a conditional choosing between them"));
    }

private:
    const SourceText& src_;
    const StructDecl& s_;
    const std::vector<std::string>& values_;
};

void flatten_commas(ExprPtr e, std::vector<ExprPtr>& out) {
    if (e->kind == ExprKind::binary && static_cast<BinaryExpr&>(*e).op == BinaryOp::comma) {
        auto& b = static_cast<BinaryExpr&>(*e);
        flatten_commas(std::move(b.lhs), out);
        flatten_commas(std::move(b.rhs), out);
        return;
    }
    out.push_back(std::move(e));
}

}  // namespace

void rewrite_field_reads(Body& body, const SourceText& src, const StructDecl& s, const std::vector<std::string>& values) {
    const FieldReads reads(src, s, values);
    for (StmtPtr& st : body.statements) reads.stmt(st);
}

std::vector<ExprPtr> parse_struct_value(const SourceText& src, const StructDecl& s, const std::vector<std::string>& values,
                                        const std::function<void(const Expr*)>& check_names) {
    const FieldReads reads(src, s, values);
    const std::string_view text = src.text;
    const std::size_t first = text.find_first_not_of(" \t\r\n\v\f");
    const std::size_t last = text.find_last_not_of(" \t\r\n\v\f");
    std::vector<ExprPtr> fields;
    if (first != std::string_view::npos && text[first] == '{') {
        if (text[last] != '}') fail_parse(src, position_at(text, last), "expected '}' to close the list of field values");
        // The list's values as one comma expression, at the positions they have in the text.
        std::string inner(text);
        inner[first] = ' ';
        inner[last] = ' ';
        if (inner.find_first_not_of(" \t\r\n\v\f") == std::string::npos)
            fail_type(src, position_at(text, first), "an empty list for " + struct_title(s), "give a value for each field: " + field_list(s));
        ExprPtr e = parse_expression(SourceText{src.where, inner});
        check_names(e.get());
        std::vector<ExprPtr> list;
        flatten_commas(std::move(e), list);
        if (list.size() != s.fields.size())
            fail_type(src, position_at(text, first),
                      std::to_string(list.size()) + " value" + (list.size() == 1 ? "" : "s") + " for the " + std::to_string(s.fields.size()) +
                          " fields of " + struct_title(s),
                      "one value per field, in order: " + field_list(s));
        for (ExprPtr& v : list) {
            reads.expr(v);
            fields.push_back(std::move(v));
        }
        return fields;
    }
    // a, b or a conditional between values: parsed once per field (each copy yields one field).
    for (std::size_t j = 0; j < s.fields.size(); ++j) {
        ExprPtr e = parse_expression(src);
        if (j == 0) check_names(e.get());
        fields.push_back(reads.field_of(std::move(e), j));
    }
    return fields;
}

}  // namespace kjit::jit::kernels

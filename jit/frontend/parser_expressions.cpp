// The parser, part three: expressions. See jit/frontend/parser.hpp and jit/frontend/parser_internals.hpp.
#include "jit/frontend/parser.hpp"
#include "jit/frontend/parser_internals.hpp"

#include "kjit/dtype.hpp"

namespace kjit::jit::frontend::parsing {

// ---------------------------------------------------------------------------------------------
// Expressions

// expression := assignment (',' assignment)*        (the comma operator, left-associative)
ExprPtr Parser::parse_expression() {
    ExprPtr e = parse_assignment();
    int chain = 0;
    while (at_punct(",")) {
        enter();  // each comma adds a level to the tree
        ++chain;
        const Token comma = advance();
        ExprPtr next = parse_assignment();
        e = std::make_unique<BinaryExpr>(comma.pos, BinaryOp::comma, std::move(e), std::move(next));
    }
    depth_ -= chain;
    return e;
}

// assignment := conditional [assign-op assignment]          (right-associative)
// assign-op := '=' | '+=' | '-=' | '*=' | '/=' | '%=' | '&=' | '|=' | '^=' | '<<=' | '>>='
ExprPtr Parser::parse_assignment() {
    ExprPtr target = parse_conditional();
    const AssignOpInfo* op = find_assign_op(peek());
    if (!op) return target;
    const Token t = advance();
    Nest nest(*this);  // a = b = c = ... nests to the right
    ExprPtr value = parse_assignment();
    return std::make_unique<AssignExpr>(t.pos, op->op, std::move(target), std::move(value));
}

// conditional := binary ['?' expression ':' assignment]      (right-associative)
ExprPtr Parser::parse_conditional() {
    ExprPtr condition = parse_binary(1);
    if (!at_punct("?")) return condition;
    const Token question = advance();
    Nest nest(*this);  // a ? b : c ? d : ... nests to the right
    ExprPtr if_true = parse_expression();
    if (!at_punct(":")) {
        fail_here("expected ':' in conditional expression",
                  "to match the '?' at " + at_line_column(question.pos));
    }
    advance();
    ExprPtr if_false = parse_assignment();
    return std::make_unique<ConditionalExpr>(question.pos, std::move(condition), std::move(if_true),
                                             std::move(if_false));
}

// binary := unary (binary-op unary)*, by precedence climbing with C's precedences, all
// left-associative: || < && < | < ^ < & < == != < < > <= >= < << >> < + - < * / %
ExprPtr Parser::parse_binary(int min_precedence) {
    ExprPtr lhs = parse_unary();
    int chain = 0;
    for (const BinaryOpInfo* op = find_binary_op(peek()); op && op->precedence >= min_precedence;
         op = find_binary_op(peek())) {
        enter();  // each operator adds a level to the tree
        ++chain;
        const Token t = advance();
        ExprPtr rhs = parse_binary(op->precedence + 1);
        lhs = std::make_unique<BinaryExpr>(t.pos, op->op, std::move(lhs), std::move(rhs));
    }
    depth_ -= chain;
    return lhs;
}

// unary := prefix-op unary | '(' type_name ')' unary | postfix
// prefix-op := '+' | '-' | '!' | '~' | '++' | '--'
ExprPtr Parser::parse_unary() {
    Nest nest(*this);
    const Token t = peek();
    if (const UnaryOpInfo* op = find_prefix_op(t)) {
        advance();
        ExprPtr operand = parse_unary();
        return std::make_unique<UnaryExpr>(t.pos, op->op, std::move(operand));
    }
    if (t.kind == TokenKind::punct) {
        if (t.text == "*") {
            fail(t.pos, "unary '*' (dereference) is not allowed: there are no pointers in kernel code",
                 kNoPointersHint);
        }
        if (t.text == "&" || t.text == "&&") {
            fail(t.pos, "taking an address with '&' is not allowed: there are no pointers in kernel code");
        }
        // "(float)x" and "(float*)p" are casts; "(float(x))" is a parenthesised functional cast.
        if (t.text == "(") {
            const std::size_t n = type_length(1);
            if (n > 0 && (at_punct(")", 1 + n) || at_punct("*", 1 + n))) return parse_c_cast();
        }
    }
    return parse_postfix();
}

// c-cast := '(' type_name ')' unary
ExprPtr Parser::parse_c_cast() {
    const Token open = advance();
    TypeName type = parse_type_name(/*allow_auto=*/false);
    if (at_punct("*")) fail(peek().pos, "pointer casts are not allowed in kernel code", kNoPointersHint);
    expect_closing(")", open);
    ExprPtr operand = parse_unary();
    return std::make_unique<CastExpr>(open.pos, std::move(type), CastStyle::c_style, std::move(operand));
}

// postfix := primary { '[' assignment ']' | '++' | '--' | '.' identifier ['(' ')'] }
// Indexing and members apply to names, and `x.shape()[d]`: the checker says which names.
ExprPtr Parser::parse_postfix() {
    ExprPtr e = parse_primary();
    int chain = 0;
    for (;;) {
        const Token t = peek();
        if (t.kind != TokenKind::punct) break;
        if (t.text == "[") {
            if (e->kind == ExprKind::index) {
                fail(t.pos, "multi-dimensional indexing is not supported",
                     "compute a flat index: table[row * columns + column]");
            }
            if (e->kind != ExprKind::name && e->kind != ExprKind::member)
                fail(t.pos, "only a name can be indexed", "index a raw parameter: table[k]");
            enter();
            ++chain;
            advance();
            // One index: `x[a, b]` would index by b alone (C++'s comma operator), never a 2-D element.
            ExprPtr index = parse_assignment();
            if (at_punct(",")) fail(peek().pos, "an index is one expression: ',' here would drop all but the last",
                                    "index a raw parameter by one flat index: table[row * columns + column]");
            expect_closing("]", t);
            e = std::make_unique<IndexExpr>(t.pos, std::move(e), std::move(index));
        } else if (t.text == "++" || t.text == "--") {
            enter();
            ++chain;
            advance();
            e = std::make_unique<UnaryExpr>(t.pos, t.text == "++" ? UnaryOp::post_increment : UnaryOp::post_decrement,
                                            std::move(e));
        } else if (t.text == "(") {
            fail(t.pos, "only a named function can be called");
        } else if (t.text == ".") {
            const bool builtin = e->kind == ExprKind::name && is_cuda_builtin(static_cast<NameExpr&>(*e).name);
            if (builtin || e->kind != ExprKind::name)
                fail(t.pos, "member access with '.' is only for a raw parameter's size(), shape(), strides() and ndim",
                     builtin ? "the element index is 'i' and the number of elements 'n'" : "");
            enter();
            ++chain;
            advance();
            auto member = std::make_unique<MemberExpr>(t.pos, std::move(e));
            if (peek().kind != TokenKind::identifier) fail_here("expected a member name after '.'");
            member->member_pos = peek().pos;
            member->member = std::string(advance().text);
            if (at_punct("(")) {
                const Token open = advance();
                expect_closing(")", open);
                member->called = true;
            }
            e = std::move(member);
        } else if (t.text == "->" || t.text == "->*" || t.text == ".*") {
            fail(t.pos, "'" + std::string(t.text) + "' is not allowed: there are no pointers in kernel code");
        } else if (t.text == "::") {
            fail(t.pos, "qualified names ('::') are not supported in kernel code",
                 "call math functions by their plain names: sqrt(x)");
        } else {
            break;
        }
    }
    depth_ -= chain;
    return e;
}

// primary := int-literal | float-literal | 'true' | 'false' | name | call
//          | '(' expression ')' | functional-cast | static-cast
ExprPtr Parser::parse_primary() {
    const Token t = peek();
    switch (t.kind) {
        case TokenKind::int_literal:
        case TokenKind::float_literal:
            return parse_number();
        case TokenKind::identifier:
            if (type_length(0) > 0) return parse_functional_cast();
            return parse_name_or_call();
        case TokenKind::keyword:
            if (t.text == "true" || t.text == "false") {
                advance();
                auto b = std::make_unique<BoolLiteral>(t.pos);
                b->value = t.text == "true";
                return b;
            }
            if (t.text == "static_cast") return parse_static_cast();
            if (t.text == "auto") return parse_functional_cast();  // parse_type_name rejects it
            if (t.text == "if" || t.text == "for" || t.text == "while" || t.text == "break" ||
                t.text == "continue" || t.text == "const") {
                fail(t.pos, "expected an expression");
            }
            reject_keyword(t);
        case TokenKind::punct:
            if (t.text == "(") return parse_parenthesized();
            if (t.text == "[") {
                fail(t.pos, "lambdas are not supported in kernel code", "declare helper functions in the preamble");
            }
            if (t.text == "{") fail(t.pos, "expected an expression", "brace initialisation is not supported");
            if (t.text == "::") {
                fail(t.pos, "qualified names ('::') are not supported in kernel code",
                     "call math functions by their plain names: sqrt(x)");
            }
            break;
        case TokenKind::end:
            break;
    }
    fail_here("expected an expression");
}

// int-literal and float-literal, as the lexer accepted them
ExprPtr Parser::parse_number() {
    const Token t = advance();
    if (t.kind == TokenKind::int_literal) {
        std::string error;
        const std::optional<IntLiteralValue> v = decode_int_literal(t.text, &error);
        if (!v) fail(t.pos, error);  // cannot happen: the lexer checked it
        auto lit = std::make_unique<IntLiteral>(t.pos);
        lit->text = std::string(t.text);
        lit->value = v->value;
        lit->is_unsigned = v->is_unsigned;
        lit->is_long = v->is_long;
        return lit;
    }
    std::string error;
    const std::optional<FloatLiteralValue> v = decode_float_literal(t.text, &error);
    if (!v) fail(t.pos, error);
    auto lit = std::make_unique<FloatLiteral>(t.pos);
    lit->text = std::string(t.text);
    lit->value = v->value;
    lit->is_float = v->is_float;
    return lit;
}

// name := identifier
// call := identifier '(' [assignment (',' assignment)*] ')'
ExprPtr Parser::parse_name_or_call() {
    const Token name = advance();
    if (!at_punct("(")) {
        auto e = std::make_unique<NameExpr>(name.pos);
        e->name = std::string(name.text);
        return e;
    }
    const Token open = advance();
    auto call = std::make_unique<CallExpr>(name.pos);
    call->callee = std::string(name.text);
    call->callee_pos = name.pos;
    if (!at_punct(")")) {
        call->args.push_back(parse_assignment());
        while (at_punct(",")) {
            advance();
            call->args.push_back(parse_assignment());
        }
    }
    if (!at_punct(")")) {
        fail_here("expected ')' after the arguments", "to match the '(' at " + at_line_column(open.pos));
    }
    advance();
    return call;
}

// functional-cast := type_name '(' expression ')'       (a one-word type: float(x), T(x))
ExprPtr Parser::parse_functional_cast() {
    const Token first = peek();
    const bool one_word = type_length(0) == 1;
    TypeName type = parse_type_name(/*allow_auto=*/false);
    if (!at_punct("(")) {
        fail(first.pos, "unexpected type name '" + type.spelling + "' in an expression",
             "convert with " + type.spelling + "(x), (" + type.spelling + ")x or static_cast<" + type.spelling +
                 ">(x); declare variables in statements of their own");
    }
    if (!one_word) {
        fail(first.pos, "a functional cast needs a one-word type name",
             "write (" + type.spelling + ")x or static_cast<" + type.spelling + ">(x)");
    }
    const Token open = advance();
    ExprPtr operand = parse_expression();
    expect_closing(")", open);
    return std::make_unique<CastExpr>(first.pos, std::move(type), CastStyle::functional, std::move(operand));
}

// static-cast := 'static_cast' '<' type_name '>' '(' expression ')'
ExprPtr Parser::parse_static_cast() {
    const Token keyword = advance();
    expect_punct("<", "expected '<' after 'static_cast'");
    TypeName type = parse_type_name(/*allow_auto=*/false);
    if (at_punct("*")) fail(peek().pos, "pointer casts are not allowed in kernel code", kNoPointersHint);
    expect_punct(">", "expected '>' after the type of static_cast");
    const Token open = expect_punct("(", "expected '(' after static_cast<" + type.spelling + ">");
    ExprPtr operand = parse_expression();
    expect_closing(")", open);
    return std::make_unique<CastExpr>(keyword.pos, std::move(type), CastStyle::static_cast_, std::move(operand));
}

// parenthesized := '(' expression ')'      (no node of its own)
ExprPtr Parser::parse_parenthesized() {
    const Token open = advance();
    if (at_punct(")")) fail(peek().pos, "expected an expression", "'()' holds no expression");
    ExprPtr e = parse_expression();
    expect_closing(")", open);
    return e;
}

// single-expression := expression end
ExprPtr Parser::parse_single_expression() {
    ExprPtr e = parse_expression();
    if (!at_end()) {
        const Token t = peek();
        if (t.kind == TokenKind::punct && t.text == ";") {
            fail(t.pos, "unexpected ';' after the expression", "this string holds one expression, not statements");
        }
        fail(t.pos, "unexpected '" + std::string(t.text) + "' after the expression");
    }
    return e;
}

}  // namespace kjit::jit::frontend::parsing

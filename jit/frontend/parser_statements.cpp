// The parser, part two: statements. See jit/frontend/parser.hpp and jit/frontend/parser_internals.hpp.
#include "jit/frontend/parser.hpp"
#include "jit/frontend/parser_internals.hpp"

#include "kjit/dtype.hpp"

namespace kjit::jit::frontend::parsing {

// ---------------------------------------------------------------------------------------------
// Statements

// body := statement* end
Body Parser::parse_body() {
    Body body;
    while (!at_end()) {
        if (at_punct("}")) fail(peek().pos, "'}' without a matching '{'");
        body.statements.push_back(parse_statement());
    }
    return body;
}

// statement := block | if-statement | for-statement | while-statement
//            | 'break' ';' | 'continue' ';' | ';' | declaration | expression ';'
StmtPtr Parser::parse_statement() {
    Nest nest(*this);
    const Token t = peek();
    if (t.kind == TokenKind::punct) {
        if (t.text == "{") return parse_block();
        if (t.text == ";") {
            advance();
            return std::make_unique<SimpleStmt>(StmtKind::empty, t.pos);
        }
        if (t.text == "}") fail(t.pos, "expected a statement");
    }
    if (t.kind == TokenKind::end) fail_here("expected a statement");
    if (t.kind == TokenKind::keyword) {
        if (t.text == "if") return parse_if();
        if (t.text == "for") return parse_for();
        if (t.text == "while") return parse_while();
        if (t.text == "break" || t.text == "continue") return parse_jump();
        const bool starts_expression = t.text == "true" || t.text == "false" || t.text == "static_cast";
        if (!starts_expression && t.text != "const" && t.text != "auto") reject_keyword(t);
    }
    if (starts_declaration()) return parse_declaration();
    return parse_expression_statement();
}

// block := '{' statement* '}'
StmtPtr Parser::parse_block() {
    const Token open = advance();
    auto block = std::make_unique<BlockStmt>(open.pos);
    while (!at_punct("}")) {
        if (at_end()) expect_closing("}", open);
        block->body.push_back(parse_statement());
    }
    advance();
    return block;
}

// if-statement := 'if' '(' expression ')' statement ['else' statement]
StmtPtr Parser::parse_if() {
    const Token keyword = advance();
    auto stmt = std::make_unique<IfStmt>(keyword.pos);
    stmt->condition = parse_condition("if");
    stmt->then_branch = parse_statement();
    if (at_keyword("else")) {
        advance();
        stmt->else_branch = parse_statement();
    }
    return stmt;
}

// for-statement := 'for' '(' (declaration | expression ';' | ';') [expression] ';' [expression] ')'
//                  statement
StmtPtr Parser::parse_for() {
    const Token keyword = advance();
    auto stmt = std::make_unique<ForStmt>(keyword.pos);
    const Token open = expect_punct("(", "expected '(' after 'for'");
    if (at_punct(";")) {
        advance();
    } else if (starts_declaration()) {
        stmt->init = parse_declaration(/*final_semicolon_optional=*/false);
    } else {
        const SourcePos pos = peek().pos;
        stmt->init = std::make_unique<ExprStmt>(pos, parse_expression());
        expect_semicolon("the initialisation of 'for'", false);
    }
    if (!at_punct(";")) stmt->condition = parse_expression();
    expect_semicolon("the condition of 'for'", false);
    if (!at_punct(")")) stmt->step = parse_expression();
    expect_closing(")", open);
    stmt->body = parse_statement();
    return stmt;
}

// while-statement := 'while' '(' expression ')' statement
StmtPtr Parser::parse_while() {
    const Token keyword = advance();
    auto stmt = std::make_unique<WhileStmt>(keyword.pos);
    stmt->condition = parse_condition("while");
    stmt->body = parse_statement();
    return stmt;
}

// jump := ('break' | 'continue') ';'
StmtPtr Parser::parse_jump() {
    const Token keyword = advance();
    expect_semicolon("'" + std::string(keyword.text) + "'");
    return std::make_unique<SimpleStmt>(keyword.text == "break" ? StmtKind::break_ : StmtKind::continue_, keyword.pos);
}

// A declaration starts with 'const' or a type name not followed by '(' (which makes it a
// functional cast such as `float(x) * 2;`).
bool Parser::starts_declaration() {
    if (at_keyword("const")) return true;
    const std::size_t n = type_length(0);
    return n > 0 && !at_punct("(", n);
}

// declaration := ['const'] type_name declarator (',' declarator)* ';'
StmtPtr Parser::parse_declaration(bool final_semicolon_optional) {
    auto decl = std::make_unique<DeclStmt>(peek().pos);
    if (at_keyword("const")) {
        advance();
        decl->is_const = true;
        if (type_length(0) == 0) fail_here("expected a type after 'const'");
    }
    decl->type = parse_type_name(/*allow_auto=*/true);
    if (at_punct("*")) fail(peek().pos, "pointers are not allowed in kernel code", kNoPointersHint);
    if (at_punct("&") || at_punct("&&")) fail(peek().pos, "references are not allowed in kernel code");
    decl->declarators.push_back(parse_declarator(*decl));
    while (at_punct(",")) {
        advance();
        decl->declarators.push_back(parse_declarator(*decl));
    }
    expect_semicolon("declaration", final_semicolon_optional);
    return decl;
}

// declarator := identifier ['[' [int-literal | identifier] ']'] ['=' (assignment | brace-list)]
// brace-list := '{' [assignment (',' assignment)* [',']] '}'          (arrays only)
Declarator Parser::parse_declarator(const DeclStmt& decl) {
    const Token name = peek();
    const std::string type = decl.type.spelling;
    if (name.kind == TokenKind::keyword) {
        fail(name.pos, "expected a variable name, found keyword '" + std::string(name.text) + "'",
             name.text == "const" ? "write 'const' before the type" : "");
    }
    if (name.kind != TokenKind::identifier) {
        if (at_punct("*")) fail(name.pos, "pointers are not allowed in kernel code", kNoPointersHint);
        fail_here("expected a variable name after '" + type + "'",
                  is_placeholder_name(type) ? "a single upper-case letter names a type placeholder, not a variable"
                                            : "");
    }
    if (is_type_name(name.text)) {
        fail(name.pos, "'" + std::string(name.text) + "' is a type name and cannot name a variable",
             is_placeholder_name(name.text) ? "a single upper-case letter names a type placeholder" : "");
    }
    advance();
    Declarator d;
    d.name = std::string(name.text);
    d.pos = name.pos;
    if (at_punct("[")) {
        parse_array_length(d);
        if (at_punct("=")) {
            advance();
            parse_brace_list(d);
        } else if (d.array_length == 0 && d.length_name.empty()) {
            fail(d.length_pos, "local array '" + d.name + "' needs a length or a brace list to count",
                 "write '" + type + " " + d.name + "[4];' or '" + type + " " + d.name + "[] = {a, b};'");
        } else if (decl.is_const) {
            fail(name.pos, "const array '" + d.name + "' needs a brace list");
        }
        if (decl.type.spelling == "auto") fail(name.pos, "an array's type cannot be 'auto'");
    } else if (at_punct("=")) {
        advance();
        if (at_punct("{")) fail(peek().pos, "a brace list initialises an array", "write '" + d.name + "[]' to declare one");
        d.init = parse_assignment();
    } else if (at_punct("(") || at_punct("{")) {
        fail(peek().pos, "only '=' initialisation is supported", "write '" + type + " " + d.name + " = value;'");
    } else if (decl.type.spelling == "auto") {
        fail(name.pos, "'auto' variable '" + d.name + "' needs an initializer");
    } else if (decl.is_const) {
        fail(name.pos, "const variable '" + d.name + "' needs an initializer");
    }
    return d;
}

// '[' [int-literal | identifier] ']' after a local's name: a fixed-size array. Its length is a
// constant so that the array lives in registers (or local memory), as in C.
void Parser::parse_array_length(Declarator& d) {
    const Token open = advance();
    d.array_length = 0;  // "[]": counted from the brace list
    d.length_pos = peek().pos;
    if (peek().kind == TokenKind::int_literal) {
        const std::optional<IntLiteralValue> v = decode_int_literal(advance().text);
        if (!v || v->value == 0 || v->value > kMaxLocalArray)
            fail(d.length_pos, "a local array has 1 to " + std::to_string(kMaxLocalArray) + " elements");
        d.array_length = static_cast<int>(v->value);
    } else if (peek().kind == TokenKind::identifier) {
        d.length_name = std::string(advance().text);
    } else if (!at_punct("]")) {
        fail_here("a local array's length is an integer literal or a constant's name");
    }
    expect_closing("]", open);
    if (at_punct("[")) fail(peek().pos, "local arrays have one dimension", "use a flat index: a[row * columns + column]");
}

void Parser::parse_brace_list(Declarator& d) {
    if (!at_punct("{")) fail_here("an array is initialised from a brace list", "write '= {a, b, c}'");
    const Token open = advance();
    d.has_list = true;
    while (!at_punct("}")) {
        if (static_cast<int>(d.elements.size()) >= kMaxLocalArray)
            fail_here("a local array has at most " + std::to_string(kMaxLocalArray) + " elements");
        d.elements.push_back(parse_assignment());
        if (!at_punct(",")) break;
        advance();
    }
    expect_closing("}", open);
    if (d.array_length == 0 && d.length_name.empty()) {
        if (d.elements.empty()) fail(open.pos, "an empty brace list gives no length to array '" + d.name + "'");
        d.array_length = static_cast<int>(d.elements.size());
    } else if (d.length_name.empty() && static_cast<int>(d.elements.size()) > d.array_length) {
        fail(d.elements[static_cast<std::size_t>(d.array_length)]->pos,
             "too many values for array '" + d.name + "' of " + std::to_string(d.array_length));
    }
}

// expression-statement := expression ';'
StmtPtr Parser::parse_expression_statement() {
    const SourcePos pos = peek().pos;
    ExprPtr e = parse_expression();
    expect_semicolon("expression");
    return std::make_unique<ExprStmt>(pos, std::move(e));
}


// condition := '(' expression ')'   (after 'if' or 'while')
ExprPtr Parser::parse_condition(std::string_view keyword) {
    const Token open = expect_punct("(", "expected '(' after '" + std::string(keyword) + "'");
    ExprPtr condition = parse_expression();
    expect_closing(")", open);
    return condition;
}

}  // namespace kjit::jit::frontend::parsing

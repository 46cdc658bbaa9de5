#include "jit/parser.hpp"

#include <deque>
#include <utility>

#include "jit/lexer.hpp"
#include "kjit/dtype.hpp"

namespace kjit::jit {
namespace {

// C/C++ words that have no place in kernel code, with what the user most likely wanted.
struct RejectedWord {
    std::string_view word;
    std::string_view message;
    std::string_view hint;
};

constexpr std::string_view kStructHint = "declare types and helper functions in the preamble";
constexpr std::string_view kCastHint = "convert values with static_cast<T>(x), T(x) or (T)x";

constexpr RejectedWord kRejectedWords[] = {
    {"return", "'return' is not allowed in kernel code",
     "the body runs once per element: assign the outputs, and use if/else to skip work"},
    {"goto", "'goto' is not allowed in kernel code", "use loops with 'break' and 'continue'"},
    {"asm", "inline assembly is not allowed in kernel code", "put device functions that need it in the preamble"},
    {"__asm", "inline assembly is not allowed in kernel code", "put device functions that need it in the preamble"},
    {"__asm__", "inline assembly is not allowed in kernel code", "put device functions that need it in the preamble"},
    {"sizeof", "'sizeof' is not supported in kernel code", "write the size as a number"},
    {"alignof", "'alignof' is not supported in kernel code", ""},
    {"decltype", "'decltype' is not supported in kernel code", "use 'auto' or a placeholder such as T"},
    {"new", "'new' is not allowed in kernel code: there is no dynamic memory", "use local variables"},
    {"delete", "'delete' is not allowed in kernel code: there is no dynamic memory", ""},
    {"struct", "'struct' is not allowed in kernel code", kStructHint},
    {"class", "'class' is not allowed in kernel code", kStructHint},
    {"union", "'union' is not allowed in kernel code", kStructHint},
    {"enum", "'enum' is not allowed in kernel code", kStructHint},
    {"template", "'template' is not allowed in kernel code", kStructHint},
    {"typedef", "'typedef' is not allowed in kernel code", kStructHint},
    {"using", "'using' is not allowed in kernel code", kStructHint},
    {"namespace", "'namespace' is not allowed in kernel code", kStructHint},
    {"typename", "'typename' is not allowed in kernel code", kStructHint},
    {"switch", "'switch' is not supported in kernel code", "use if / else if"},
    {"case", "'case' is not supported in kernel code", "use if / else if"},
    {"default", "'default' is not supported in kernel code", "use if / else if"},
    {"do", "do-while loops are not supported in kernel code",
     "use 'while (true) { ...; if (!(condition)) break; }'"},
    {"else", "'else' without a matching 'if'", ""},
    {"const_cast", "'const_cast' is not allowed in kernel code", kCastHint},
    {"reinterpret_cast", "'reinterpret_cast' is not allowed in kernel code", kCastHint},
    {"dynamic_cast", "'dynamic_cast' is not allowed in kernel code", kCastHint},
    {"nullptr", "'nullptr' is not allowed in kernel code: there are no pointers", ""},
    {"try", "exceptions are not supported in kernel code", ""},
    {"catch", "exceptions are not supported in kernel code", ""},
    {"throw", "exceptions are not supported in kernel code", ""},
};

constexpr std::string_view kNoPointersHint = "index a raw parameter instead: 'raw T table' and table[k]";
constexpr std::string_view kCommaHint = "write separate statements";

struct BinaryOpInfo {
    std::string_view spelling;
    BinaryOp op;
    int precedence;  // C's: higher binds tighter
};

constexpr BinaryOpInfo kBinaryOps[] = {
    {"*", BinaryOp::mul, 10},         {"/", BinaryOp::div, 10},        {"%", BinaryOp::mod, 10},
    {"+", BinaryOp::add, 9},          {"-", BinaryOp::sub, 9},         {"<<", BinaryOp::shl, 8},
    {">>", BinaryOp::shr, 8},         {"<", BinaryOp::lt, 7},          {">", BinaryOp::gt, 7},
    {"<=", BinaryOp::le, 7},          {">=", BinaryOp::ge, 7},         {"==", BinaryOp::eq, 6},
    {"!=", BinaryOp::ne, 6},          {"&", BinaryOp::bit_and, 5},     {"^", BinaryOp::bit_xor, 4},
    {"|", BinaryOp::bit_or, 3},       {"&&", BinaryOp::logical_and, 2}, {"||", BinaryOp::logical_or, 1},
};

struct AssignOpInfo {
    std::string_view spelling;
    AssignOp op;
};

constexpr AssignOpInfo kAssignOps[] = {
    {"=", AssignOp::assign},   {"+=", AssignOp::add},     {"-=", AssignOp::sub},    {"*=", AssignOp::mul},
    {"/=", AssignOp::div},     {"%=", AssignOp::mod},     {"&=", AssignOp::bit_and}, {"|=", AssignOp::bit_or},
    {"^=", AssignOp::bit_xor}, {"<<=", AssignOp::shl},    {">>=", AssignOp::shr},
};

struct UnaryOpInfo {
    std::string_view spelling;
    UnaryOp op;
};

constexpr UnaryOpInfo kPrefixOps[] = {
    {"+", UnaryOp::plus},           {"-", UnaryOp::minus},          {"!", UnaryOp::logical_not},
    {"~", UnaryOp::bit_not},        {"++", UnaryOp::pre_increment}, {"--", UnaryOp::pre_decrement},
};

const BinaryOpInfo* find_binary_op(const Token& t) {
    if (t.kind != TokenKind::punct) return nullptr;
    for (const BinaryOpInfo& info : kBinaryOps) {
        if (info.spelling == t.text) return &info;
    }
    return nullptr;
}

const AssignOpInfo* find_assign_op(const Token& t) {
    if (t.kind != TokenKind::punct) return nullptr;
    for (const AssignOpInfo& info : kAssignOps) {
        if (info.spelling == t.text) return &info;
    }
    return nullptr;
}

const UnaryOpInfo* find_prefix_op(const Token& t) {
    if (t.kind != TokenKind::punct) return nullptr;
    for (const UnaryOpInfo& info : kPrefixOps) {
        if (info.spelling == t.text) return &info;
    }
    return nullptr;
}

std::string at_line_column(SourcePos p) { return std::to_string(p.line) + ":" + std::to_string(p.column); }

// Names CUDA code uses for the thread's position, which kernel code replaces by `i`.
bool is_cuda_builtin(std::string_view name) {
    return name == "threadIdx" || name == "blockIdx" || name == "blockDim" || name == "gridDim";
}

class Parser {
public:
    explicit Parser(const SourceText& source) : source_(source), lexer_(source) {}

    Body parse_body();
    ExprPtr parse_single_expression();

private:
    // --- tokens ---
    const Token& peek(std::size_t k = 0);
    Token advance();
    bool at_punct(std::string_view spelling, std::size_t k = 0);
    bool at_keyword(std::string_view word, std::size_t k = 0);
    bool at_end() { return peek().kind == TokenKind::end; }

    // --- errors ---
    [[noreturn]] void fail(SourcePos pos, const std::string& message, std::string_view hint = {});
    // At the current token; at the end of the input, just after the last token instead (the
    // line a user has to fix, not an empty line after it).
    [[noreturn]] void fail_here(const std::string& message, std::string_view hint = {});
    // Just after the previous token, as clang reports a missing ';'.
    [[noreturn]] void fail_after_previous(const std::string& message, std::string_view hint = {});
    [[noreturn]] void reject_keyword(const Token& t);
    [[noreturn]] void reject_comma();
    void expect_semicolon(std::string_view after, bool final_optional = true);
    Token expect_closing(std::string_view closing, const Token& opening);
    Token expect_punct(std::string_view spelling, const std::string& message);

    // --- nesting ---
    void enter();
    struct Nest {
        explicit Nest(Parser& p) : parser(p) { parser.enter(); }
        ~Nest() { --parser.depth_; }
        Nest(const Nest&) = delete;
        Nest& operator=(const Nest&) = delete;
        Parser& parser;
    };

    // --- types ---
    std::size_t type_length(std::size_t k);
    TypeName parse_type_name(bool allow_auto);

    // --- statements ---
    StmtPtr parse_statement();
    StmtPtr parse_block();
    StmtPtr parse_if();
    StmtPtr parse_for();
    StmtPtr parse_while();
    StmtPtr parse_jump();
    bool starts_declaration();
    StmtPtr parse_declaration(bool final_semicolon_optional = true);
    Declarator parse_declarator(const DeclStmt& decl);
    StmtPtr parse_expression_statement();

    // --- expressions ---
    ExprPtr parse_expression();
    ExprPtr parse_assignment();
    ExprPtr parse_conditional();
    ExprPtr parse_binary(int min_precedence);
    ExprPtr parse_unary();
    ExprPtr parse_c_cast();
    ExprPtr parse_postfix();
    ExprPtr parse_primary();
    ExprPtr parse_number();
    ExprPtr parse_name_or_call();
    ExprPtr parse_functional_cast();
    ExprPtr parse_static_cast();
    ExprPtr parse_parenthesized();

    SourceText source_;
    Lexer lexer_;
    std::deque<Token> ahead_;  // lexed, not yet consumed; front() is the current token
    Token previous_;
    bool has_previous_ = false;
    int depth_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Tokens and errors

const Token& Parser::peek(std::size_t k) {
    while (ahead_.size() <= k) {
        // Past the end the lexer keeps returning `end`; no need to lex further.
        if (!ahead_.empty() && ahead_.back().kind == TokenKind::end) return ahead_.back();
        ahead_.push_back(lexer_.next());
    }
    return ahead_[k];
}

Token Parser::advance() {
    Token t = peek();
    if (t.kind != TokenKind::end) ahead_.pop_front();
    previous_ = t;
    has_previous_ = true;
    return t;
}

bool Parser::at_punct(std::string_view spelling, std::size_t k) {
    const Token& t = peek(k);
    return t.kind == TokenKind::punct && t.text == spelling;
}

bool Parser::at_keyword(std::string_view word, std::size_t k) {
    const Token& t = peek(k);
    return t.kind == TokenKind::keyword && t.text == word;
}

void Parser::fail(SourcePos pos, const std::string& message, std::string_view hint) {
    fail_parse(source_, pos, message, std::string(hint));
}

void Parser::fail_here(const std::string& message, std::string_view hint) {
    if (at_end() && has_previous_) fail_after_previous(message, hint);
    fail(peek().pos, message, hint);
}

void Parser::fail_after_previous(const std::string& message, std::string_view hint) {
    fail(has_previous_ ? end_of(previous_) : peek().pos, message, hint);
}

void Parser::reject_keyword(const Token& t) {
    for (const RejectedWord& r : kRejectedWords) {
        if (r.word == t.text) fail(t.pos, std::string(r.message), r.hint);
    }
    fail(t.pos, "'" + std::string(t.text) + "' is not allowed in kernel code");
}

void Parser::reject_comma() { fail(peek().pos, "the comma operator is not supported", kCommaHint); }

// A missing ';' is reported where it belongs, just after the previous token. The last
// statement of a body may go without one, as in CuPy, where "y = a * x + b" is an operation
// (`final_optional`; not so inside a for header).
void Parser::expect_semicolon(std::string_view after, bool final_optional) {
    if (at_punct(";")) {
        advance();
        return;
    }
    if (final_optional && at_end()) return;
    if (at_punct(",")) reject_comma();
    fail_after_previous("expected ';' after " + std::string(after));
}

Token Parser::expect_closing(std::string_view closing, const Token& opening) {
    if (at_punct(closing)) return advance();
    if (at_punct(",") && closing != "}") reject_comma();
    fail_here("expected '" + std::string(closing) + "'",
              "to match the '" + std::string(opening.text) + "' at " + at_line_column(opening.pos));
}

Token Parser::expect_punct(std::string_view spelling, const std::string& message) {
    if (!at_punct(spelling)) fail_here(message);
    return advance();
}

void Parser::enter() {
    if (++depth_ > kMaxDepth) {
        fail_here("nested too deeply (the limit is " + std::to_string(kMaxDepth) + " levels)",
                  "split it into several statements with local variables; long chains of operators count too");
    }
}

// ---------------------------------------------------------------------------------------------
// Types

// How many tokens from peek(k) on spell a type name: one for auto, placeholders and dtype
// names, a run of C type words for "unsigned long long"; 0 when no type starts there.
std::size_t Parser::type_length(std::size_t k) {
    const Token& first = peek(k);
    if (first.kind == TokenKind::keyword) return first.text == "auto" ? 1 : 0;
    if (first.kind != TokenKind::identifier) return 0;
    if (!is_c_type_word(first.text)) return is_type_name(first.text) ? 1 : 0;
    std::size_t n = 1;
    while (peek(k + n).kind == TokenKind::identifier && is_c_type_word(peek(k + n).text)) ++n;
    return n;
}

// type_name := 'auto' | placeholder | dtype-name | c-type-word+
TypeName Parser::parse_type_name(bool allow_auto) {
    const std::size_t n = type_length(0);
    if (n == 0) fail_here("expected a type name");
    const Token first = advance();
    TypeName type{std::string(first.text), first.pos};
    if (first.text == "auto" && !allow_auto) {
        fail(first.pos, "'auto' is only allowed in declarations", "name the type, e.g. float32 or T");
    }
    if (is_c_type_word(first.text)) {
        std::vector<std::string_view> words{first.text};
        for (std::size_t k = 1; k < n; ++k) words.push_back(advance().text);
        std::optional<std::string> canonical = canonical_c_type(words);
        if (!canonical) {
            std::string spelling;
            for (std::string_view w : words) spelling += (spelling.empty() ? "" : " ") + std::string(w);
            fail(first.pos, "'" + spelling + "' is not a valid type",
                 "C integer types are [unsigned] char, short, int, long, long long");
        }
        type.spelling = std::move(*canonical);
    }
    return type;
}

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
    const Token open = expect_punct("(", "expected '(' after 'if'");
    stmt->condition = parse_expression();
    expect_closing(")", open);
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
    const Token open = expect_punct("(", "expected '(' after 'while'");
    stmt->condition = parse_expression();
    expect_closing(")", open);
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

// declarator := identifier ['=' assignment]
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
    if (at_punct("=")) {
        advance();
        d.init = parse_assignment();
    } else if (at_punct("[")) {
        fail(peek().pos, "local arrays are not supported in kernel code", "use separate variables, or a raw parameter");
    } else if (at_punct("(") || at_punct("{")) {
        fail(peek().pos, "only '=' initialisation is supported", "write '" + type + " " + d.name + " = value;'");
    } else if (decl.type.spelling == "auto") {
        fail(name.pos, "'auto' variable '" + d.name + "' needs an initializer");
    } else if (decl.is_const) {
        fail(name.pos, "const variable '" + d.name + "' needs an initializer");
    }
    return d;
}

// expression-statement := expression ';'
StmtPtr Parser::parse_expression_statement() {
    const SourcePos pos = peek().pos;
    ExprPtr e = parse_expression();
    expect_semicolon("expression");
    return std::make_unique<ExprStmt>(pos, std::move(e));
}

// ---------------------------------------------------------------------------------------------
// Expressions

// expression := assignment           (there is no comma operator: ',' here is an error)
ExprPtr Parser::parse_expression() {
    ExprPtr e = parse_assignment();
    if (at_punct(",")) reject_comma();
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

// postfix := primary { '[' expression ']' | '++' | '--' }
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
            if (e->kind != ExprKind::name) fail(t.pos, "only a name can be indexed", "index a raw parameter: table[k]");
            enter();
            ++chain;
            advance();
            ExprPtr index = parse_expression();
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
            fail(t.pos, "member access with '.' is not supported in kernel code",
                 builtin ? "the element index is 'i' and the number of elements 'n'" : "");
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

}  // namespace

Body parse_body(const SourceText& source) { return Parser(source).parse_body(); }

ExprPtr parse_expression(const SourceText& source) { return Parser(source).parse_single_expression(); }

bool is_placeholder_name(std::string_view spelling) {
    return spelling.size() == 1 && spelling[0] >= 'A' && spelling[0] <= 'Z';
}

bool is_type_name(std::string_view spelling) {
    DType ignored;
    return spelling == "auto" || is_placeholder_name(spelling) || DType::try_parse(spelling, ignored);
}

bool is_c_type_word(std::string_view word) {
    return word == "unsigned" || word == "signed" || word == "short" || word == "long" || word == "int" ||
           word == "char";
}

std::optional<std::string> canonical_c_type(const std::vector<std::string_view>& words) {
    int n_unsigned = 0, n_signed = 0, n_short = 0, n_long = 0, n_int = 0, n_char = 0;
    for (std::string_view w : words) {
        if (w == "unsigned") ++n_unsigned;
        else if (w == "signed") ++n_signed;
        else if (w == "short") ++n_short;
        else if (w == "long") ++n_long;
        else if (w == "int") ++n_int;
        else if (w == "char") ++n_char;
        else return std::nullopt;
    }
    const bool valid = !words.empty() && n_unsigned + n_signed <= 1 && n_short <= 1 && n_long <= 2 && n_int <= 1 &&
                       n_char <= 1 && !(n_short && n_long) && !(n_char && (n_short || n_long || n_int));
    if (!valid) return std::nullopt;
    // The base word: 'int' is implied by short, long and a lone signed/unsigned.
    std::string base = n_short ? "short" : n_long == 2 ? "long long" : n_long ? "long" : n_char ? "char" : "int";
    if (n_unsigned) return "unsigned " + base;
    if (n_signed && n_char) return std::string("signed char");
    return base;
}

}  // namespace kjit::jit

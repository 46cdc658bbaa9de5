// The parser's internals, shared by jit/frontend/parser.cpp (tokens, errors, types, the public entry
// points), jit/frontend/parser_statements.cpp and jit/frontend/parser_expressions.cpp. Not part of any interface.
#pragma once

#include <deque>
#include <string>
#include <string_view>

#include "jit/frontend/ast.hpp"
#include "jit/frontend/lexer.hpp"
#include "jit/frontend/source.hpp"

namespace kjit::jit::frontend::parsing {

// C/C++ words that have no place in kernel code, with what the user most likely wanted.
struct RejectedWord {
    std::string_view word;
    std::string_view message;
    std::string_view hint;
};
const RejectedWord* find_rejected_word(std::string_view word);

inline constexpr std::string_view kNoPointersHint = "index a raw parameter instead: 'raw T table' and table[k]";
inline constexpr std::string_view kCommaHint = "write separate statements";

struct BinaryOpInfo {
    std::string_view spelling;
    BinaryOp op;
    int precedence;  // C's: higher binds tighter
};
struct AssignOpInfo {
    std::string_view spelling;
    AssignOp op;
};
struct UnaryOpInfo {
    std::string_view spelling;
    UnaryOp op;
};
const BinaryOpInfo* find_binary_op(const Token& t);
const AssignOpInfo* find_assign_op(const Token& t);
const UnaryOpInfo* find_prefix_op(const Token& t);

std::string at_line_column(SourcePos p);
// Names CUDA code uses for the thread's position, which kernel code replaces by `i`.
bool is_cuda_builtin(std::string_view name);

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
    ExprPtr parse_condition(std::string_view keyword);
    StmtPtr parse_jump();
    bool starts_declaration();
    StmtPtr parse_declaration(bool final_semicolon_optional = true);
    Declarator parse_declarator(const DeclStmt& decl);
    StmtPtr parse_expression_statement();
    void parse_array_length(Declarator& d);
    void parse_brace_list(Declarator& d);

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

}  // namespace kjit::jit::frontend::parsing

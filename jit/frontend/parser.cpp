#include "jit/frontend/parser.hpp"

#include <utility>

#include "jit/frontend/parser_internals.hpp"
#include "kjit/dtype.hpp"

namespace kjit::jit::frontend {
namespace parsing {
namespace {

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

constexpr BinaryOpInfo kBinaryOps[] = {
    {"*", BinaryOp::mul, 10},         {"/", BinaryOp::div, 10},        {"%", BinaryOp::mod, 10},
    {"+", BinaryOp::add, 9},          {"-", BinaryOp::sub, 9},         {"<<", BinaryOp::shl, 8},
    {">>", BinaryOp::shr, 8},         {"<", BinaryOp::lt, 7},          {">", BinaryOp::gt, 7},
    {"<=", BinaryOp::le, 7},          {">=", BinaryOp::ge, 7},         {"==", BinaryOp::eq, 6},
    {"!=", BinaryOp::ne, 6},          {"&", BinaryOp::bit_and, 5},     {"^", BinaryOp::bit_xor, 4},
    {"|", BinaryOp::bit_or, 3},       {"&&", BinaryOp::logical_and, 2}, {"||", BinaryOp::logical_or, 1},
};

constexpr AssignOpInfo kAssignOps[] = {
    {"=", AssignOp::assign},   {"+=", AssignOp::add},     {"-=", AssignOp::sub},    {"*=", AssignOp::mul},
    {"/=", AssignOp::div},     {"%=", AssignOp::mod},     {"&=", AssignOp::bit_and}, {"|=", AssignOp::bit_or},
    {"^=", AssignOp::bit_xor}, {"<<=", AssignOp::shl},    {">>=", AssignOp::shr},
};

constexpr UnaryOpInfo kPrefixOps[] = {
    {"+", UnaryOp::plus},           {"-", UnaryOp::minus},          {"!", UnaryOp::logical_not},
    {"~", UnaryOp::bit_not},        {"++", UnaryOp::pre_increment}, {"--", UnaryOp::pre_decrement},
};

}  // namespace

const RejectedWord* find_rejected_word(std::string_view word) {
    for (const RejectedWord& r : kRejectedWords)
        if (r.word == word) return &r;
    return nullptr;
}

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
    if (const RejectedWord* r = find_rejected_word(t.text)) fail(t.pos, std::string(r->message), r->hint);
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
        type.spelling = c_type_spelling(source_, first.pos, words);
    }
    return type;
}


}  // namespace parsing

using parsing::Parser;

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

std::string c_type_spelling(const SourceText& source, SourcePos pos, const std::vector<std::string_view>& words) {
    if (std::optional<std::string> canonical = canonical_c_type(words)) return *canonical;
    std::string spelling;
    for (std::string_view w : words) spelling += (spelling.empty() ? "" : " ") + std::string(w);
    fail_parse(source, pos, "'" + spelling + "' is not a valid type",
               "C integer types are [unsigned] char, short, int, long, long long");
}

}  // namespace kjit::jit::frontend

// The lexer: characters to tokens, each with its position. Its state lives in the class, so
// several can run at once on different threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "jit/frontend/source.hpp"

namespace kjit::jit::frontend {

enum class TokenKind {
    end,
    identifier,
    keyword,        // if, else, for, while, do, break, continue, return, true, false, const, auto, ...
    int_literal,
    float_literal,
    punct,          // operators and punctuation: text holds the spelling ("<<=", "(", ...)
};

struct Token {
    TokenKind kind = TokenKind::end;
    std::string_view text;  // a view into the source
    SourcePos pos;
};

// The place just after `token` (tokens never span lines): where clang points "expected ';'".
SourcePos end_of(const Token& token);

// The lexer's character classes: identifiers are [A-Za-z_][A-Za-z0-9_]*; whitespace is ' ', tab,
// and the line, return, vertical-tab and form-feed characters. Also read by the parameter lists'
// scanner for simple lists (jit/frontend/params.cpp), which must see the same words and spaces.
inline bool is_word_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool is_word_char(char c) { return is_word_start(c) || (c >= '0' && c <= '9'); }
inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// True for the words the lexer reports as TokenKind::keyword: the statement words kernel code
// uses and the C/C++ words it rejects with a message of their own (return, goto, asm, ...).
bool is_keyword(std::string_view word);
// Why `word` cannot name anything in generated C++ (a keyword or alternative token kjit's
// language does not use, such as `and` or `public`, or a macro such as NULL); empty if it can.
std::string reserved_by_cpp(std::string_view word);

// The value of an integer literal token ("42", "0xFFu", "10ull"), or an error message when it
// is malformed or needs more than 64 bits. The lexer only produces tokens this accepts.
struct IntLiteralValue {
    std::uint64_t value = 0;
    bool is_unsigned = false;
    bool is_long = false;
};
std::optional<IntLiteralValue> decode_int_literal(std::string_view text, std::string* error = nullptr);

// The value of a floating literal token ("1.5", ".5", "1e-3", "2.5f"), or an error message.
struct FloatLiteralValue {
    double value = 0.0;
    bool is_float = false;
};
std::optional<FloatLiteralValue> decode_float_literal(std::string_view text, std::string* error = nullptr);

class Lexer {
public:
    explicit Lexer(const SourceText& source);
    // The next token; throws ParseError on characters that cannot start one ('#', '"', '@'...)
    // and on unterminated comments.
    Token next();
    const SourceText& source() const { return source_; }

private:
    char at(std::size_t k = 0) const;  // the byte k ahead, '\0' past the end
    void advance(std::size_t count = 1);
    SourcePos pos() const;
    void skip_space_and_comments();
    Token lex_number();
    Token lex_word();
    Token lex_punct();
    [[noreturn]] void reject_character();
    Token make(TokenKind kind, SourcePos start) const;

    SourceText source_;
    std::size_t offset_ = 0;
    int line_ = 1;
    int column_ = 1;
};

}  // namespace kjit::jit::frontend

#include "jit/frontend/lexer.hpp"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <charconv>
#include <cstdio>

namespace kjit::jit::frontend {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex_digit(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// Words with a meaning of their own: those kernel code uses, and C/C++ words that the parser
// rejects by name ("'goto' is not allowed") instead of treating them as unknown identifiers.
// C type words (int, unsigned, float...) are identifiers: is_type_name() decides about them.
// Sorted (checked below), for a binary search: words are looked up on every call's parameter lists.
constexpr std::string_view kKeywords[] = {
    "__asm", "__asm__", "__device__", "__global__", "__restrict__", "alignof", "asm", "auto",
    "break", "case", "catch", "class", "const", "const_cast", "constexpr", "continue", "decltype",
    "default", "delete", "do", "dynamic_cast", "else", "enum", "extern", "false", "for", "goto",
    "if", "inline", "mutable", "namespace", "new", "nullptr", "operator", "register",
    "reinterpret_cast", "return", "sizeof", "static", "static_cast", "struct", "switch", "template",
    "this", "throw", "true", "try", "typedef", "typename", "union", "using", "virtual", "void",
    "volatile", "while",
};
static_assert(std::is_sorted(std::begin(kKeywords), std::end(kKeywords)));

// Longest first, so that "<<=" wins over "<<" and "<".
constexpr std::string_view kPunctuators[] = {
    "<<=", ">>=", "...", "->*",                                                  //
    "++",  "--",  "->",  "+=",  "-=",  "*=",  "/=", "%=", "&=", "|=", "^=",      //
    "<<",  ">>",  "<=",  ">=",  "==",  "!=",  "&&", "||", "::", ".*",            //
    "+",   "-",   "*",   "/",   "%",   "&",   "|",  "^",  "~",  "!",  "<",  ">", //
    "=",   "?",   ":",   ";",   ",",   ".",   "(",  ")",  "[",  "]",  "{",  "}",
};

std::string hex_byte(unsigned char c) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "0x%02X", static_cast<unsigned>(c));
    return buffer;
}

void set_error(std::string* error, std::string message) {
    if (error) *error = std::move(message);
}

// Splits an integer suffix (u, l, ll in either case and order) into its flags; false when it
// is anything else ("lL", "uu", "x").
bool decode_int_suffix(std::string_view suffix, IntLiteralValue& out) {
    std::size_t k = 0;
    bool seen_u = false;
    bool seen_l = false;
    while (k < suffix.size()) {
        const char c = suffix[k];
        if ((c == 'u' || c == 'U') && !seen_u) {
            seen_u = true;
            ++k;
        } else if ((c == 'l' || c == 'L') && !seen_l) {
            seen_l = true;
            ++k;
            if (k < suffix.size() && suffix[k] == c) ++k;  // "ll" or "LL", never "lL"
        } else {
            return false;
        }
    }
    out.is_unsigned = seen_u;
    out.is_long = seen_l;
    return true;
}

// "15" for the digits of an octal literal such as "017", for the hint; empty if not octal.
std::string octal_value(std::string_view digits) {
    std::uint64_t value = 0;
    for (char c : digits) {
        if (c > '7' || value > (UINT64_MAX >> 3)) return {};
        value = value * 8 + static_cast<std::uint64_t>(c - '0');
    }
    return std::to_string(value);
}

// A hint for the integer literal mistakes people make: octal by accident, "1f" for a float.
std::string int_literal_hint(std::string_view text, const std::string& error) {
    std::size_t digits = 0;
    while (digits < text.size() && is_digit(text[digits])) ++digits;
    const std::string_view number = text.substr(0, digits);
    const std::string_view suffix = text.substr(digits);
    if (error.find("leading zero") != std::string::npos) {
        const std::size_t nonzero = number.find_first_not_of('0');
        const std::string decimal = std::string(nonzero == std::string_view::npos ? "0" : number.substr(nonzero)) +
                                    std::string(suffix);
        const std::string octal = octal_value(number);
        if (octal.empty()) return "C reads a leading 0 as octal; write " + decimal + " for the decimal number";
        if (octal + std::string(suffix) == decimal) return "C reads a leading 0 as octal; write " + decimal;
        return "C reads it as octal (" + std::string(number) + " is " + octal + "); write " + octal + std::string(suffix) +
               ", or " + decimal + " for the decimal number";
    }
    if (digits > 0 && (suffix == "f" || suffix == "F")) {
        return "a float literal needs a '.' or an exponent: " + std::string(number) + ".0f";
    }
    return {};
}

}  // namespace

bool is_keyword(std::string_view word) {
    return std::binary_search(std::begin(kKeywords), std::end(kKeywords), word);
}

namespace {
// Words that kernel code may spell as names but generated C++ may not: C++'s other keywords and
// alternative tokens, and macros every NVRTC program sees.
constexpr std::string_view kCppOnlyWords[] = {
    "CUDART_VERSION", "INFINITY", "NAN", "NULL", "alignas", "and", "and_eq", "bitand", "bitor",
    "char16_t", "char32_t", "char8_t", "co_await", "co_return", "co_yield", "compl", "concept",
    "consteval", "constinit", "explicit", "export", "friend", "noexcept", "not", "not_eq", "or",
    "or_eq", "private", "protected", "public", "requires", "static_assert", "thread_local", "typeid",
    "wchar_t", "xor", "xor_eq",
};
static_assert(std::is_sorted(std::begin(kCppOnlyWords), std::end(kCppOnlyWords)));
}  // namespace

std::string reserved_by_cpp(std::string_view word) {
    if (is_keyword(word) || std::binary_search(std::begin(kCppOnlyWords), std::end(kCppOnlyWords), word)) {
        const bool macro = !word.empty() && std::isupper(static_cast<unsigned char>(word[0]));
        return "'" + std::string(word) + "' is " + (macro ? "a macro of every CUDA program" : "a C++ keyword") +
               " in the generated code";
    }
    return {};
}

SourcePos end_of(const Token& token) {
    SourcePos p = token.pos;
    p.column += static_cast<int>(token.text.size());
    p.offset += static_cast<std::uint32_t>(token.text.size());
    return p;
}

std::optional<IntLiteralValue> decode_int_literal(std::string_view text, std::string* error) {
    IntLiteralValue out;
    const bool hex = text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    const std::size_t first = hex ? 2 : 0;
    std::size_t end = first;
    while (end < text.size() && (hex ? is_hex_digit(text[end]) : is_digit(text[end]))) ++end;
    const std::string_view digits = text.substr(first, end - first);
    const std::string_view suffix = text.substr(end);
    if (digits.empty()) {
        set_error(error, "hexadecimal literal '" + std::string(text) + "' has no digits");
        return std::nullopt;
    }
    if (!decode_int_suffix(suffix, out)) {
        set_error(error, "invalid suffix '" + std::string(suffix) + "' on integer literal");
        return std::nullopt;
    }
    if (!hex && digits.size() > 1 && digits[0] == '0') {
        // C reads a leading zero as octal, a classic source of wrong constants: refuse it.
        set_error(error, "integer literal '" + std::string(text) + "' has a leading zero");
        return std::nullopt;
    }
    const int base = hex ? 16 : 10;
    const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), out.value, base);
    if (result.ec != std::errc()) {
        set_error(error, "integer literal '" + std::string(text) + "' does not fit in 64 bits");
        return std::nullopt;
    }
    return out;
}

std::optional<FloatLiteralValue> decode_float_literal(std::string_view text, std::string* error) {
    FloatLiteralValue out;
    // number := digits ['.' digits] [('e' | 'E') ['+' | '-'] digits]; the rest is the suffix.
    std::size_t end = 0;
    const auto skip_digits = [&] {
        while (end < text.size() && is_digit(text[end])) ++end;
    };
    skip_digits();
    if (end < text.size() && text[end] == '.') {
        ++end;
        skip_digits();
    }
    if (end < text.size() && (text[end] == 'e' || text[end] == 'E')) {
        std::size_t digits = end + 1;
        if (digits < text.size() && (text[digits] == '+' || text[digits] == '-')) ++digits;
        if (digits < text.size() && is_digit(text[digits])) {
            end = digits;
            skip_digits();
        }
    }
    const std::string_view number = text.substr(0, end);
    const std::string_view suffix = text.substr(end);
    if (suffix == "f" || suffix == "F") {
        out.is_float = true;
    } else if (!suffix.empty()) {
        set_error(error, "invalid suffix '" + std::string(suffix) + "' on floating literal");
        return std::nullopt;
    }
    const auto result = std::from_chars(number.data(), number.data() + number.size(), out.value);
    if (result.ec == std::errc::result_out_of_range) {
        set_error(error, "floating literal '" + std::string(text) + "' is out of the range of double");
        return std::nullopt;
    }
    if (result.ec != std::errc() || result.ptr != number.data() + number.size()) {
        set_error(error, "malformed floating literal '" + std::string(text) + "'");
        return std::nullopt;
    }
    if (out.is_float && out.value > FLT_MAX) {
        set_error(error, "floating literal '" + std::string(text) + "' is out of the range of float");
        return std::nullopt;
    }
    // Below half the smallest float it would be 0, which NVRTC refuses to round to silently.
    if (out.is_float && out.value != 0 && out.value <= static_cast<double>(FLT_TRUE_MIN) / 2) {
        set_error(error, "floating literal '" + std::string(text) + "' is too small for a float: it would be 0");
        return std::nullopt;
    }
    return out;
}

Lexer::Lexer(const SourceText& source) : source_(source) {}

char Lexer::at(std::size_t k) const {
    const std::size_t p = offset_ + k;
    return p < source_.text.size() ? source_.text[p] : '\0';
}

void Lexer::advance(std::size_t count) {
    for (std::size_t k = 0; k < count && offset_ < source_.text.size(); ++k) {
        if (source_.text[offset_] == '\n') {
            ++line_;
            column_ = 1;
        } else {
            ++column_;
        }
        ++offset_;
    }
}

SourcePos Lexer::pos() const { return SourcePos{line_, column_, static_cast<std::uint32_t>(offset_)}; }

Token Lexer::make(TokenKind kind, SourcePos start) const {
    Token t;
    t.kind = kind;
    t.pos = start;
    t.text = source_.text.substr(start.offset, offset_ - start.offset);
    return t;
}

// whitespace := ' ' | '\t' | '\n' | '\r' | '\v' | '\f'
// comment := '//' any* end-of-line | '/*' any* '*/'
void Lexer::skip_space_and_comments() {
    const std::size_t size = source_.text.size();
    while (offset_ < size) {
        const char c = at();
        if (is_space(c)) {
            advance();
        } else if (c == '/' && at(1) == '/') {
            while (offset_ < size && at() != '\n') advance();
        } else if (c == '/' && at(1) == '*') {
            const SourcePos start = pos();
            const std::size_t close = source_.text.find("*/", offset_ + 2);
            if (close == std::string_view::npos) {
                fail_parse(source_, start, "unterminated /* comment", "close the comment with */");
            }
            advance(close + 2 - offset_);
        } else {
            return;
        }
    }
}

Token Lexer::next() {
    skip_space_and_comments();
    const SourcePos start = pos();
    if (offset_ >= source_.text.size()) return make(TokenKind::end, start);
    const char c = at();
    if (is_digit(c) || (c == '.' && is_digit(at(1)))) return lex_number();
    if (is_word_start(c)) return lex_word();
    return lex_punct();
}

// number := digits ['.' digits?] [exponent] suffix? | '.' digits [exponent] suffix?
//         | '0x' hex-digits int-suffix?
// exponent := ('e' | 'E') ['+' | '-'] digits
// The suffix is every letter, digit and '_' that follows; decode_*_literal judges it.
Token Lexer::lex_number() {
    const SourcePos start = pos();
    bool is_float = false;
    if (at() == '0' && (at(1) == 'x' || at(1) == 'X')) {
        advance(2);
        while (is_hex_digit(at())) advance();
        if (at() == '.' || at() == 'p' || at() == 'P') {
            fail_parse(source_, start, "hexadecimal floating literals are not supported",
                       "write the value in decimal, e.g. 1.5e-3");
        }
    } else {
        while (is_digit(at())) advance();
        if (at() == '.') {
            is_float = true;
            advance();
            while (is_digit(at())) advance();
        }
        if (at() == 'e' || at() == 'E') {
            const std::size_t sign = (at(1) == '+' || at(1) == '-') ? 1 : 0;
            if (!is_digit(at(1 + sign))) {
                advance(1 + sign);
                fail_parse(source_, start, "exponent has no digits", "write it as in 1e-3 or 2.5E+4");
            }
            is_float = true;
            advance(1 + sign);
            while (is_digit(at())) advance();
        }
    }
    while (is_word_char(at())) advance();  // the suffix
    Token token = make(is_float ? TokenKind::float_literal : TokenKind::int_literal, start);
    std::string error;
    if (is_float) {
        if (!decode_float_literal(token.text, &error)) fail_parse(source_, start, error);
    } else if (!decode_int_literal(token.text, &error)) {
        fail_parse(source_, start, error, int_literal_hint(token.text, error));
    }
    return token;
}

// identifier := [A-Za-z_] [A-Za-z0-9_]*   (keywords are the identifiers in kKeywords)
Token Lexer::lex_word() {
    const SourcePos start = pos();
    while (is_word_char(at())) advance();
    Token token = make(TokenKind::identifier, start);
    if (is_keyword(token.text)) token.kind = TokenKind::keyword;
    return token;
}

// punct := one of kPunctuators, the longest that matches
Token Lexer::lex_punct() {
    const SourcePos start = pos();
    const std::string_view rest = source_.text.substr(offset_);
    for (std::string_view p : kPunctuators) {
        // The first byte decides for nearly every punctuator: no compare call for the others.
        if (p.front() == rest.front() && rest.substr(0, p.size()) == p) {
            advance(p.size());
            return make(TokenKind::punct, start);
        }
    }
    reject_character();
}

// Every byte that cannot start a token, with the reason a user most likely wrote it.
void Lexer::reject_character() {
    const SourcePos start = pos();
    const char c = at();
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
        case '#':
            fail_parse(source_, start, "preprocessor directives are not allowed in kernel code",
                       "put #include lines, macros and helper functions in the preamble");
        case '"':
            fail_parse(source_, start, "string literals are not allowed in kernel code");
        case '\'':
            fail_parse(source_, start, "character literals are not allowed in kernel code",
                       "write the character's code as a number, e.g. 65 for 'A'");
        case '\\':
            fail_parse(source_, start, "unexpected '\\' in kernel code",
                       "statements may span lines without a line continuation");
        case '\0':
            fail_parse(source_, start, "unexpected NUL byte in kernel code");
        default:
            break;
    }
    if (byte >= 0x80) {
        fail_parse(source_, start, "unexpected non-ASCII byte " + hex_byte(byte) + " in kernel code",
                   "kernel code is ASCII; other characters may appear only in comments");
    }
    if (byte < 0x20 || byte == 0x7F) {
        fail_parse(source_, start, "unexpected control character " + hex_byte(byte) + " in kernel code");
    }
    fail_parse(source_, start, std::string("unexpected character '") + c + "' in kernel code");
}

}  // namespace kjit::jit::frontend

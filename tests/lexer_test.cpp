// The lexer, source positions and diagnostics helpers (jit/frontend/lexer.hpp, jit/frontend/source.hpp).
#include "test_support.hpp"

#include <string>
#include <vector>

#include "jit/frontend/lexer.hpp"
#include "jit/frontend/source.hpp"
#include "kjit/error.hpp"

namespace {

using kjit::jit::frontend::Lexer;
using kjit::jit::frontend::SourcePos;
using kjit::jit::frontend::SourceText;
using kjit::jit::frontend::Token;
using kjit::jit::frontend::TokenKind;

std::vector<Token> lex_all(std::string_view text) {
    Lexer lexer(SourceText{"op", text});
    std::vector<Token> tokens;
    for (;;) {
        tokens.push_back(lexer.next());
        if (tokens.back().kind == TokenKind::end) return tokens;
    }
}

std::vector<std::string> texts(std::string_view text) {
    std::vector<std::string> out;
    for (const Token& t : lex_all(text)) {
        if (t.kind != TokenKind::end) out.emplace_back(t.text);
    }
    return out;
}

// The full message a lexing error gives, or "" when the text lexes.
std::string lex_error(std::string_view text) {
    try {
        lex_all(text);
    } catch (const kjit::ParseError& e) {
        return e.what();
    }
    return {};
}

}  // namespace

TEST_CASE("lexer: token kinds, texts and positions", "[lexer]") {
    const std::vector<Token> t = lex_all("y = a*x\n\t+ 1.5f; if (b) c += 0x1F;");
    REQUIRE(t.size() == 17);
    CHECK(t[0].kind == TokenKind::identifier);
    CHECK(t[0].text == "y");
    CHECK(t[1].kind == TokenKind::punct);
    CHECK(t[1].text == "=");
    CHECK(t[3].text == "*");
    // Second line: the tab is one column.
    CHECK(t[5].text == "+");
    CHECK(t[5].pos.line == 2);
    CHECK(t[5].pos.column == 2);
    CHECK(t[5].pos.offset == 9);
    CHECK(t[6].kind == TokenKind::float_literal);
    CHECK(t[6].text == "1.5f");
    CHECK(t[6].pos.column == 4);
    CHECK(t[8].kind == TokenKind::keyword);
    CHECK(t[8].text == "if");
    CHECK(t[13].text == "+=");
    CHECK(t[14].kind == TokenKind::int_literal);
    CHECK(t[14].text == "0x1F");
    CHECK(t[16].kind == TokenKind::end);
    CHECK(t[16].pos.line == 2);
    CHECK(t[16].pos.column == 27);
    CHECK(t[16].pos.offset == 34);
    // The lexer keeps returning `end`.
    Lexer lexer(SourceText{"op", "x"});
    lexer.next();
    CHECK(lexer.next().kind == TokenKind::end);
    CHECK(lexer.next().kind == TokenKind::end);
}

TEST_CASE("lexer: punctuators take the longest match", "[lexer]") {
    CHECK(texts("a<<=b>>=c<<d>>e<=f>=g") ==
          std::vector<std::string>{"a", "<<=", "b", ">>=", "c", "<<", "d", ">>", "e", "<=", "f", ">=", "g"});
    CHECK(texts("++x--+-y") == std::vector<std::string>{"++", "x", "--", "+", "-", "y"});
    CHECK(texts("a&&b&c||d|e^f~g!h!=i==j") ==
          std::vector<std::string>{"a", "&&", "b", "&", "c", "||", "d", "|", "e", "^", "f", "~", "g", "!", "h",
                                   "!=", "i", "==", "j"});
    CHECK(texts("+=-=*=/=%=&=|=^=") == std::vector<std::string>{"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="});
    CHECK(texts("p->q::r.s?t:u;v,w[x]{y}(z)") ==
          std::vector<std::string>{"p", "->", "q", "::", "r", ".", "s", "?", "t", ":", "u", ";", "v", ",", "w", "[",
                                   "x", "]", "{", "y", "}", "(", "z", ")"});
}

TEST_CASE("lexer: keywords and identifiers", "[lexer]") {
    const std::vector<Token> t = lex_all("if else for while break continue true false const auto static_cast "
                                         "return goto asm sizeof float unsigned T _x x1 iffy");
    for (std::size_t k = 0; k < 15; ++k) {
        INFO(t[k].text);
        CHECK(t[k].kind == TokenKind::keyword);
    }
    for (std::size_t k = 15; k < 21; ++k) {
        INFO(t[k].text);
        CHECK(t[k].kind == TokenKind::identifier);  // type words are identifiers; the parser decides
    }
    CHECK(kjit::jit::frontend::is_keyword("while"));
    CHECK_FALSE(kjit::jit::frontend::is_keyword("int"));
    CHECK_FALSE(kjit::jit::frontend::is_keyword(""));
}

TEST_CASE("lexer: comments and whitespace are skipped", "[lexer]") {
    const std::vector<Token> t = lex_all("a // one /* not a block\n/* two\n * lines */ b\r\n\v\fc/**/d");
    REQUIRE(t.size() == 5);
    CHECK(t[1].text == "b");
    CHECK(t[1].pos.line == 3);
    CHECK(t[1].pos.column == 13);
    CHECK(t[2].text == "c");
    CHECK(t[2].pos.line == 4);
    CHECK(t[3].text == "d");
    CHECK(texts("// only a comment").empty());
    CHECK(texts("/* α → β */ x") == std::vector<std::string>{"x"});  // non-ASCII is fine in comments
    CHECK(texts("x//").size() == 1);
}

TEST_CASE("lexer: integer literals", "[lexer]") {
    using kjit::jit::frontend::decode_int_literal;
    struct Case {
        const char* text;
        std::uint64_t value;
        bool is_unsigned;
        bool is_long;
    };
    const Case cases[] = {
        {"0", 0, false, false},
        {"42", 42, false, false},
        {"0x1F", 31, false, false},
        {"0XffU", 255, true, false},
        {"10u", 10, true, false},
        {"7l", 7, false, true},
        {"7LL", 7, false, true},
        {"10ull", 10, true, true},
        {"10LLU", 10, true, true},
        {"10Lu", 10, true, true},
        {"18446744073709551615", UINT64_MAX, false, false},
        {"0xFFFFFFFFFFFFFFFF", UINT64_MAX, false, false},
        {"9223372036854775808", 9223372036854775808ull, false, false},
    };
    for (const Case& c : cases) {
        INFO(c.text);
        const std::vector<Token> t = lex_all(c.text);
        REQUIRE(t.size() == 2);
        CHECK(t[0].kind == TokenKind::int_literal);
        CHECK(t[0].text == c.text);
        const auto v = decode_int_literal(c.text);
        REQUIRE(v);
        CHECK(v->value == c.value);
        CHECK(v->is_unsigned == c.is_unsigned);
        CHECK(v->is_long == c.is_long);
    }
}

TEST_CASE("lexer: floating literals", "[lexer]") {
    using kjit::jit::frontend::decode_float_literal;
    struct Case {
        const char* text;
        double value;
        bool is_float;
    };
    const Case cases[] = {
        {"1.5", 1.5, false},   {".5", 0.5, false},       {"1.", 1.0, false},   {"1e-3", 1e-3, false},
        {"1.5e+3f", 1500.0, true}, {"2E2F", 200.0, true}, {"0.25f", 0.25, true}, {"1.e2", 100.0, false},
        {"0e0", 0.0, false},   {"017.5", 17.5, false},
    };
    for (const Case& c : cases) {
        INFO(c.text);
        const std::vector<Token> t = lex_all(c.text);
        REQUIRE(t.size() == 2);
        CHECK(t[0].kind == TokenKind::float_literal);
        CHECK(t[0].text == c.text);
        const auto v = decode_float_literal(c.text);
        REQUIRE(v);
        CHECK(v->value == c.value);
        CHECK(v->is_float == c.is_float);
    }
    // "1..2" is two literals (the parser rejects the pair); "x.5" is a name and a literal.
    CHECK(texts("1..2") == std::vector<std::string>{"1.", ".2"});
    CHECK(texts("a.b") == std::vector<std::string>{"a", ".", "b"});
}

TEST_CASE("lexer: literal errors", "[lexer]") {
    CHECK(lex_error("y = 017;") ==
          "op:1:5: error: integer literal '017' has a leading zero\ny = 017;\n    ^\n"
          "hint: C reads it as octal (017 is 15); write 15, or 17 for the decimal number");
    CHECK(lex_error("y = 08;") ==
          "op:1:5: error: integer literal '08' has a leading zero\ny = 08;\n    ^\n"
          "hint: C reads a leading 0 as octal; write 8 for the decimal number");
    CHECK(lex_error("007u") ==
          "op:1:1: error: integer literal '007u' has a leading zero\n007u\n^\nhint: C reads a leading 0 as octal; write 7u");
    // Too small for a double is refused too, rather than silently read as 0.
    CHECK(lex_error("1e-400") == "op:1:1: error: floating literal '1e-400' is out of the range of double\n1e-400\n^");
    CHECK(lex_error("y = 99999999999999999999;") ==
          "op:1:5: error: integer literal '99999999999999999999' does not fit in 64 bits\n"
          "y = 99999999999999999999;\n    ^");
    CHECK(lex_error("0x10000000000000000") ==
          "op:1:1: error: integer literal '0x10000000000000000' does not fit in 64 bits\n0x10000000000000000\n^");
    CHECK(lex_error("y = 1f;") ==
          "op:1:5: error: invalid suffix 'f' on integer literal\ny = 1f;\n    ^\n"
          "hint: a float literal needs a '.' or an exponent: 1.0f");
    CHECK(lex_error("y = 12abc;") == "op:1:5: error: invalid suffix 'abc' on integer literal\ny = 12abc;\n    ^");
    CHECK(lex_error("1lL") == "op:1:1: error: invalid suffix 'lL' on integer literal\n1lL\n^");
    CHECK(lex_error("1uu") == "op:1:1: error: invalid suffix 'uu' on integer literal\n1uu\n^");
    CHECK(lex_error("0x") == "op:1:1: error: hexadecimal literal '0x' has no digits\n0x\n^");
    CHECK(lex_error("y = 0x1.8p3;") ==
          "op:1:5: error: hexadecimal floating literals are not supported\ny = 0x1.8p3;\n    ^\n"
          "hint: write the value in decimal, e.g. 1.5e-3");
    CHECK(lex_error("y = 1e;") ==
          "op:1:5: error: exponent has no digits\ny = 1e;\n    ^\nhint: write it as in 1e-3 or 2.5E+4");
    CHECK(lex_error("y = 2.5e+;") ==
          "op:1:5: error: exponent has no digits\ny = 2.5e+;\n    ^\nhint: write it as in 1e-3 or 2.5E+4");
    CHECK(lex_error("y = 1.5x;") == "op:1:5: error: invalid suffix 'x' on floating literal\ny = 1.5x;\n    ^");
    CHECK(lex_error("1.5e3e4") == "op:1:1: error: invalid suffix 'e4' on floating literal\n1.5e3e4\n^");
    CHECK(lex_error("y = 1.5L;") == "op:1:5: error: invalid suffix 'L' on floating literal\ny = 1.5L;\n    ^");
    CHECK(lex_error("y = 1.5e999;") ==
          "op:1:5: error: floating literal '1.5e999' is out of the range of double\ny = 1.5e999;\n    ^");
    CHECK(lex_error("y = 1e40f;") ==
          "op:1:5: error: floating literal '1e40f' is out of the range of float\ny = 1e40f;\n    ^");
}

TEST_CASE("lexer: characters that start no token", "[lexer]") {
    CHECK(lex_error("#include <math.h>\ny = x;") ==
          "op:1:1: error: preprocessor directives are not allowed in kernel code\n#include <math.h>\n^\n"
          "hint: put #include lines, macros and helper functions in the preamble");
    CHECK(lex_error("y = x;\n  #define N 3") ==
          "op:2:3: error: preprocessor directives are not allowed in kernel code\n  #define N 3\n  ^\n"
          "hint: put #include lines, macros and helper functions in the preamble");
    CHECK(lex_error("y = \"s\";") ==
          "op:1:5: error: string literals are not allowed in kernel code\ny = \"s\";\n    ^");
    CHECK(lex_error("y = 'a';") ==
          "op:1:5: error: character literals are not allowed in kernel code\ny = 'a';\n    ^\n"
          "hint: write the character's code as a number, e.g. 65 for 'A'");
    CHECK(lex_error("y = a @ b;") == "op:1:7: error: unexpected character '@' in kernel code\ny = a @ b;\n      ^");
    CHECK(lex_error("y = $a;") == "op:1:5: error: unexpected character '$' in kernel code\ny = $a;\n    ^");
    CHECK(lex_error("y = `a`;") == "op:1:5: error: unexpected character '`' in kernel code\ny = `a`;\n    ^");
    CHECK(lex_error("y = a \\\n + b;") ==
          "op:1:7: error: unexpected '\\' in kernel code\ny = a \\\n      ^\n"
          "hint: statements may span lines without a line continuation");
    CHECK(lex_error("y = \xCE\xB1;") ==
          "op:1:5: error: unexpected non-ASCII byte 0xCE in kernel code\ny = \xCE\xB1;\n    ^\n"
          "hint: kernel code is ASCII; other characters may appear only in comments");
    CHECK(lex_error(std::string_view("y = \0;", 6)) ==
          "op:1:5: error: unexpected NUL byte in kernel code\ny = ?;\n    ^");  // what() is a C string
    CHECK(lex_error("y = \x01;") ==
          "op:1:5: error: unexpected control character 0x01 in kernel code\ny = ?;\n    ^");
    CHECK(lex_error("y = \x7F;") ==
          "op:1:5: error: unexpected control character 0x7F in kernel code\ny = ?;\n    ^");
}

TEST_CASE("lexer: an unterminated comment is reported where it starts", "[lexer]") {
    CHECK(lex_error("y = x; /* open\nz = 1;\n") ==
          "op:1:8: error: unterminated /* comment\ny = x; /* open\n       ^\nhint: close the comment with */");
    CHECK(lex_error("/*/") == "op:1:1: error: unterminated /* comment\n/*/\n^\nhint: close the comment with */");
}

TEST_CASE("source: caret_snippet", "[lexer]") {
    using kjit::jit::frontend::caret_snippet;
    const std::string_view text = "first\n\ty = sqr(x);\nlast";
    CHECK(caret_snippet(text, SourcePos{2, 6, 11}) == "\ty = sqr(x);\n\t    ^");
    CHECK(caret_snippet(text, SourcePos{1, 1, 0}) == "first\n^");
    // A column just past the end of the line: where a missing ';' goes.
    CHECK(caret_snippet(text, SourcePos{1, 6, 5}) == "first\n     ^");
    CHECK(caret_snippet(text, SourcePos{3, 5, 23}) == "last\n    ^");
    // "\r\n" line ends, and UTF-8 text before the caret (which takes one column per character).
    CHECK(caret_snippet("a\r\nb = 1;\r\n", SourcePos{2, 3, 5}) == "b = 1;\n  ^");
    CHECK(caret_snippet("/* \xCE\xB1 */ @", SourcePos{1, 11, 10}) == "/* \xCE\xB1 */ @\n         ^");
    // Control characters show as '?': what() stays one C string and the terminal undisturbed.
    CHECK(caret_snippet(std::string_view("a\0b\x1B[2J\rc", 9), SourcePos{1, 9, 8}) == "a?b?[2J?c\n        ^");
    // Empty text and an offset past the end never read out of bounds.
    CHECK(caret_snippet("", SourcePos{1, 1, 0}) == "\n^");
    CHECK(caret_snippet("ab", SourcePos{1, 3, 99}) == "ab\n  ^");
}

TEST_CASE("source: fail_parse and fail_type read alike", "[lexer]") {
    using kjit::jit::frontend::fail_parse;
    using kjit::jit::frontend::fail_type;
    const SourceText src{"op", "y = x % 2.5;"};
    CHECK_THROWS_WITH(fail_parse(src, SourcePos{1, 7, 6}, "bad thing", "do this"),
                      "op:1:7: error: bad thing\ny = x % 2.5;\n      ^\nhint: do this");
    CHECK_THROWS_WITH(fail_type(src, SourcePos{1, 7, 6}, "'%' needs integer operands", "use fmod(x, y)"),
                      "op:1:7: error: '%' needs integer operands\ny = x % 2.5;\n      ^\nhint: use fmod(x, y)");
    CHECK_THROWS_WITH(fail_type(src, SourcePos{1, 1, 0}, "no hint"), "op:1:1: error: no hint\ny = x % 2.5;\n^");
    CHECK_THROWS_AS(fail_type(src, SourcePos{}, "m"), kjit::TypeError);
    try {
        fail_parse(src, SourcePos{1, 5, 4}, "message", "hint text");
        FAIL("fail_parse returned");
    } catch (const kjit::ParseError& e) {
        CHECK(e.where() == "op");
        CHECK(e.line() == 1);
        CHECK(e.column() == 5);
        CHECK(e.message() == "message");
        CHECK(e.snippet() == "y = x % 2.5;\n    ^");
        CHECK(e.hint() == "hint text");
    }
}

TEST_CASE("source: closest_name", "[lexer]") {
    using kjit::jit::frontend::closest_name;
    const std::vector<std::string> names{"sqrt", "exp", "float32", "float64", "int32", "x"};
    CHECK(closest_name("sqr", names) == "sqrt");
    CHECK(closest_name("flaot32", names) == "float32");
    CHECK(closest_name("Float64", names) == "float64");
    CHECK(closest_name("epx", names).empty());  // two edits in three letters is too far
    CHECK(closest_name("y", names).empty());  // replacing the whole name is no suggestion
    CHECK(closest_name("xx", names) == "x");  // dropping a letter is
    CHECK(closest_name("banana", names).empty());
    CHECK(closest_name("sqrt", {}).empty());
    CHECK(closest_name(std::string(10000, 'a'), names).empty());  // cheap on long names
}

TEST_CASE("lexer: end_of a token", "[lexer]") {
    const std::vector<Token> t = lex_all("ab <<= c");
    const SourcePos p = kjit::jit::frontend::end_of(t[1]);
    CHECK(p.line == 1);
    CHECK(p.column == 7);
    CHECK(p.offset == 6);
}

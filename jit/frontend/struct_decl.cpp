#include "jit/frontend/struct_decl.hpp"

#include "jit/frontend/lexer.hpp"
#include "jit/frontend/parser.hpp"

namespace kjit::jit::frontend {
namespace {

constexpr const char* kShape = "write it as 'struct NAME { float64 n; float64 mean; }': fields of dtypes, C types or placeholders";

bool is_punct(const Token& t, std::string_view p) { return t.kind == TokenKind::punct && t.text == p; }

// Reads the declaration from the lexer's position; stops after the closing brace (and a ';' when
// `trailing` allows one, which must then end the text).
StructDecl parse_from(Lexer& lex, bool whole_text) {
    const SourceText& src = lex.source();
    Token t = lex.next();
    if (!(t.kind == TokenKind::keyword && t.text == "struct")) fail_parse(src, t.pos, "expected 'struct'", kShape);
    StructDecl d;
    t = lex.next();
    if (t.kind == TokenKind::identifier) {
        d.name = std::string(t.text);
        if (d.name[0] == '_') fail_parse(src, t.pos, "'" + d.name + "' is reserved: names starting with '_' belong to kjit");
        if (is_type_name(d.name)) fail_parse(src, t.pos, "'" + d.name + "' already names a type", "choose another name for the struct");
        t = lex.next();
    }
    if (!is_punct(t, "{")) fail_parse(src, t.pos, "expected '{' to open the struct's fields", kShape);
    for (;;) {
        t = lex.next();
        if (is_punct(t, "}")) break;
        std::vector<Token> words;
        while (t.kind == TokenKind::identifier || t.kind == TokenKind::keyword) {
            words.push_back(t);
            t = lex.next();
        }
        if (t.kind == TokenKind::end) fail_parse(src, t.pos, "expected '}' to close the struct", kShape);
        if (is_punct(t, "[")) fail_parse(src, t.pos, "a field of a struct running value cannot be an array", "give each value a field of its own");
        if (is_punct(t, "(")) fail_parse(src, t.pos, "a struct running value has fields only, no functions", "write the functions in the pieces or the preamble");
        if (is_punct(t, ":")) fail_parse(src, t.pos, "bit fields are not supported in a struct running value");
        if (!is_punct(t, ";") || words.size() < 2)
            fail_parse(src, t.pos, words.empty() ? "expected a field's type" : "expected a type and a field name, then ';'", kShape);
        StructField f;
        const Token& name = words.back();
        f.name = std::string(name.text);
        f.pos = name.pos;
        words.pop_back();
        if (f.name[0] == '_') fail_parse(src, f.pos, "'" + f.name + "' is reserved: names starting with '_' belong to kjit");
        if (is_type_name(f.name) || is_c_type_word(f.name)) fail_parse(src, f.pos, "'" + f.name + "' names a type, not a field");
        if (const std::string why = reserved_by_cpp(f.name); !why.empty()) fail_parse(src, f.pos, "'" + f.name + "' cannot name a field: " + why);
        for (const StructField& g : d.fields)
            if (g.name == f.name) fail_parse(src, f.pos, "the struct has two fields named '" + f.name + "'");
        std::vector<std::string_view> spelled;
        for (const Token& w : words) spelled.push_back(w.text);
        if (spelled.size() == 1 && is_placeholder_name(spelled[0])) {
            f.placeholder = f.type = std::string(spelled[0]);
        } else {
            DType dt;
            std::string canonical = spelled.size() == 1 ? std::string(spelled[0]) : c_type_spelling(src, words[0].pos, spelled);
            if (!DType::try_parse(canonical, dt)) {
                if (const auto c = canonical_c_type(spelled)) canonical = *c;
                if (!DType::try_parse(canonical, dt))
                    fail_parse(src, words[0].pos, "unknown type '" + canonical + "' for field '" + f.name + "'",
                               "a dtype (float32, float64, int64...), a C type name or a placeholder (one upper-case letter)");
            }
            f.dtype = dt;
            f.type = canonical;
        }
        d.fields.push_back(std::move(f));
    }
    if (d.fields.empty()) fail_parse(src, t.pos, "a struct running value needs at least one field", kShape);
    if (whole_text) {
        t = lex.next();
        if (is_punct(t, ";")) t = lex.next();
        if (t.kind != TokenKind::end) fail_parse(src, t.pos, "unexpected text after the struct", kShape);
    }
    return d;
}

bool word_at(std::string_view text, std::size_t at, std::string_view word) {
    if (text.compare(at, word.size(), word) != 0) return false;
    const bool starts = at == 0 || !is_word_char(text[at - 1]);
    const bool ends = at + word.size() == text.size() || !is_word_char(text[at + word.size()]);
    return starts && ends;
}

}  // namespace

bool is_struct_decl(std::string_view text) {
    std::size_t k = 0;
    while (k < text.size() && is_space(text[k])) ++k;
    return word_at(text, k, "struct");
}

StructDecl parse_struct_decl(const SourceText& source) {
    Lexer lex(source);
    return parse_from(lex, true);
}

std::optional<StructDecl> find_preamble_struct(std::string_view preamble, const std::string& name) {
    // The first "struct ... NAME {" (a light scan like scan_preamble's: a definition, not a use;
    // attributes such as __align__(16) may stand before the name, and the generated code's
    // static_assert then tells whether the layout is still the fields' own).
    for (std::size_t at = preamble.find("struct"); at != std::string_view::npos; at = preamble.find("struct", at + 1)) {
        if (!word_at(preamble, at, "struct")) continue;
        const std::size_t brace = preamble.find_first_of("{;", at);
        if (brace == std::string_view::npos || preamble[brace] != '{') continue;
        std::size_t end = brace;
        while (end > at && is_space(preamble[end - 1])) --end;
        if (end < name.size() || !word_at(preamble, end - name.size(), name)) continue;
        const std::size_t name_at = end - name.size();
        // Lex from `at`: the text before it, and the attributes, as spaces (line breaks kept), so
        // positions are the preamble's.
        std::string text(preamble);
        for (std::size_t c = 0; c < name_at; ++c)
            if (text[c] != '\n' && (c < at || c >= at + 6)) text[c] = ' ';
        const std::size_t k = brace;
        const std::size_t close = text.find('}', k);
        if (close != std::string::npos) text.resize(close + 1);
        Lexer lex(SourceText{"preamble", text});
        StructDecl d = parse_from(lex, false);
        d.from_preamble = true;
        return d;
    }
    return std::nullopt;
}

}  // namespace kjit::jit::frontend

#include "jit/frontend/params.hpp"

#include <cctype>

#include "jit/frontend/lexer.hpp"
#include "jit/frontend/parser.hpp"

namespace kjit::jit::frontend {
namespace {

constexpr std::string_view kTypesHint =
    "types are NumPy names (float32, int64...), C names (float, unsigned int...) or a placeholder: one "
    "upper-case letter such as T";

// Every spelling worth suggesting for a mistyped type: NumPy's names and the common C ones.
std::vector<std::string> suggestible_type_names() {
    std::vector<std::string> names;
    for (int k = 0; k < DType::count; ++k) names.emplace_back(DType(static_cast<DType::Id>(k)).name());
    for (const char* c : {"float", "double", "half", "int", "long", "short", "char", "unsigned", "signed", "complex",
                          "size_t", "ptrdiff_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
                          "uint32_t", "uint64_t"}) {
        names.emplace_back(c);
    }
    return names;
}

bool all_upper(std::string_view word) {
    for (char c : word) {
        if (!std::isupper(static_cast<unsigned char>(c))) return false;
    }
    return !word.empty();
}

std::string at_line_column(SourcePos p) { return std::to_string(p.line) + ":" + std::to_string(p.column); }

// Why `name` (not empty) cannot name a parameter, if it cannot: the names the kernel reserves
// (`i`, `n`, anything starting with '_'), `raw`, keywords and type names. Strings are made only
// for a problem: every call's lists pass through here.
struct NameProblem {
    std::string message, hint;
};
std::optional<NameProblem> name_problem(std::string_view name) {
    auto quoted = [name] { return "'" + std::string(name) + "'"; };
    if (name == "i") return NameProblem{"'i' is reserved: it is the element index", "choose another name"};
    if (name == "n") return NameProblem{"'n' is reserved: it is the number of elements", "choose another name"};
    if (name[0] == '_') return NameProblem{quoted() + " is reserved: names starting with '_' belong to kjit", "choose another name"};
    if (name == "raw") return NameProblem{"'raw' cannot name a parameter", "'raw' goes before the type: 'raw T x'"};
    if (is_keyword(name)) return NameProblem{quoted() + " is a keyword and cannot name a parameter", ""};
    if (is_type_name(name))
        return NameProblem{quoted() + " is a type name and cannot name a parameter",
                           is_placeholder_name(name) ? "a single upper-case letter names a type placeholder" : ""};
    if (std::string why = reserved_by_cpp(name); !why.empty()) return NameProblem{why + ": it cannot name a parameter", "choose another name"};
    return std::nullopt;
}

// Reads one list token by token. All tokens are lexed first: lists are short.
class ParamParser {
public:
    ParamParser(const SourceText& source, bool outputs) : source_(source), outputs_(outputs) {
        Lexer lexer(source);
        do {
            tokens_.push_back(lexer.next());
        } while (tokens_.back().kind != TokenKind::end);
    }

    // param-list := [param (',' param)*] end
    std::vector<Param> parse() {
        std::vector<Param> params;
        if (at_end()) return params;  // "" and "  " declare no parameters
        for (;;) {
            params.push_back(parse_param());
            check_duplicate(params);
            if (at_end()) return params;
            if (!at_punct(",")) reject_trailing(params.back());
            advance();
        }
    }

private:
    const Token& peek(std::size_t k = 0) const { return tokens_[std::min(next_ + k, tokens_.size() - 1)]; }
    const Token& advance() {
        const Token& t = peek();
        if (next_ + 1 < tokens_.size()) ++next_;
        return t;
    }
    const Token& previous() const { return tokens_[next_ > 0 ? next_ - 1 : 0]; }
    bool at_end() const { return peek().kind == TokenKind::end; }
    bool at_punct(std::string_view p) const { return peek().kind == TokenKind::punct && peek().text == p; }

    [[noreturn]] void fail(SourcePos pos, const std::string& message, std::string_view hint = {}) const {
        fail_parse(source_, pos, message, std::string(hint));
    }

    // param := modifier* type name
    // modifier := 'raw' | '_non_const'       (CuPy's; in any order, repeats allowed as CuPy allows them)
    Param parse_param() {
        if (at_punct(",")) fail(peek().pos, "expected a parameter before ','");
        if (at_end()) fail(end_of(previous()), "expected a parameter after ','");
        Param p;
        p.is_output = outputs_;
        for (;;) {
            if (peek().kind == TokenKind::identifier && peek().text == "raw") {
                p.raw = true;
            } else if (peek().kind == TokenKind::identifier && peek().text == "_non_const") {
                p.non_const = true;
            } else {
                break;
            }
            advance();
        }
        parse_type(p);
        parse_name(p);
        return p;
    }

    // type := placeholder | dtype-name | c-type-word+
    void parse_type(Param& p) {
        const Token first = peek();
        if (first.kind == TokenKind::keyword && first.text == "const") {
            fail(first.pos, "'const' is not needed in parameter lists", "inputs are read-only; outputs are written");
        }
        if (first.kind != TokenKind::identifier) {
            if (first.kind == TokenKind::end) fail(end_of(previous()), "expected a type after '" + std::string(previous().text) + "'");
            fail(first.pos, "expected a parameter type, found '" + std::string(first.text) + "'", kTypesHint);
        }
        advance();
        p.type = TypeName{std::string(first.text), first.pos};
        if (is_c_type_word(first.text)) {
            std::vector<std::string_view> words{first.text};
            while (peek().kind == TokenKind::identifier && is_c_type_word(peek().text)) words.push_back(advance().text);
            p.type.spelling = c_type_spelling(source_, first.pos, words);
        }
        if (is_placeholder_name(p.type.spelling)) {
            p.is_placeholder = true;
            return;
        }
        DType dtype;
        if (DType::try_parse(p.type.spelling, dtype)) {
            p.dtype = dtype;
            return;
        }
        reject_type(first);
    }

    [[noreturn]] void reject_type(const Token& word) const {
        const std::string spelling(word.text);
        if (at_end() || at_punct(",")) {
            // A lone word: most likely a name without its type ("x, y").
            fail(word.pos, "parameter '" + spelling + "' has no type",
                 "write the type before the name: 'T " + spelling + "' or 'float32 " + spelling + "'");
        }
        std::string hint;
        const std::string suggestion = closest_name(spelling, suggestible_type_names());
        if (!suggestion.empty()) {
            hint = "did you mean '" + suggestion + "'?";
        } else if (all_upper(spelling)) {
            hint = "a placeholder is one upper-case letter, such as T";
        } else {
            hint = kTypesHint;
        }
        fail(word.pos, "unknown type '" + spelling + "'", hint);
    }

    // name := identifier, not one the kernel reserves
    void parse_name(Param& p) {
        const Token t = peek();
        const std::string type = p.type.spelling;
        if (t.kind == TokenKind::punct && t.text == "*") {
            fail(t.pos, "pointers are not allowed in parameter lists",
                 "declare 'raw " + type + " name' and index it in the kernel: name[k]");
        }
        if (t.kind == TokenKind::punct && (t.text == "&" || t.text == "&&")) {
            fail(t.pos, "references are not allowed in parameter lists");
        }
        if (t.kind == TokenKind::end || (t.kind == TokenKind::punct && t.text == ",")) {
            fail(end_of(previous()), "expected a parameter name after '" + type + "'");
        }
        if (t.kind != TokenKind::identifier && t.kind != TokenKind::keyword) {
            fail(t.pos, "expected a parameter name after '" + type + "', found '" + std::string(t.text) + "'");
        }
        check_reserved(t);
        advance();
        p.name = std::string(t.text);
        p.pos = t.pos;
    }

    void check_reserved(const Token& t) const {
        if (const std::optional<NameProblem> problem = name_problem(t.text)) fail(t.pos, problem->message, problem->hint);
    }

    void check_duplicate(const std::vector<Param>& params) const {
        const Param& last = params.back();
        for (std::size_t k = 0; k + 1 < params.size(); ++k) {
            if (params[k].name == last.name) {
                fail(last.pos, "duplicate parameter '" + last.name + "'",
                     "'" + last.name + "' is first declared at " + at_line_column(params[k].pos));
            }
        }
    }

    [[noreturn]] void reject_trailing(const Param& p) const {
        const Token& t = peek();
        const std::string found = "unexpected '" + std::string(t.text) + "' after parameter '" + p.name + "'";
        if (t.kind == TokenKind::punct && t.text == "[") {
            fail(t.pos, found, "declare 'raw " + p.type.spelling + " " + p.name + "' and index it in the kernel");
        }
        if (t.kind == TokenKind::identifier || t.kind == TokenKind::keyword) {
            fail(t.pos, found, "separate parameters with ','");
        }
        fail(t.pos, found);
    }

    SourceText source_;
    bool outputs_;
    std::vector<Token> tokens_;
    std::size_t next_ = 0;
};

// The lists nearly every kernel has ("T x, raw T table, float32 alpha": words, commas and
// spaces, one-word types, names nothing reserves), read without the lexer; nullopt for anything
// else (comments, C types of several words, every mistake), which ParamParser reads and judges
// (tests/params_test.cpp checks both agree). A fresh process's first call parses its kernel's
// lists, and on a cold processor every piece of code run once counts (docs/perf-log.md).
std::optional<std::vector<Param>> parse_simple_params(std::string_view text, bool outputs) {
    std::vector<Param> params;
    std::size_t k = 0;
    int line = 1, column = 1;
    auto skip_space = [&] {
        for (; k < text.size() && is_space(text[k]); ++k) {
            if (text[k] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
    };
    auto word = [&](SourcePos& at) {
        skip_space();
        at = SourcePos{line, column, static_cast<std::uint32_t>(k)};
        const std::size_t begin = k;
        if (k < text.size() && is_word_start(text[k]))
            for (; k < text.size() && is_word_char(text[k]); ++k) ++column;
        return text.substr(begin, k - begin);
    };
    skip_space();
    if (k == text.size()) return params;
    for (;;) {
        Param p;
        p.is_output = outputs;
        SourcePos type_at, name_at;
        std::string_view type = word(type_at);
        if (type == "raw") {
            p.raw = true;
            type = word(type_at);
        }
        if (type.empty() || is_c_type_word(type)) return std::nullopt;
        if (is_placeholder_name(type)) {
            p.is_placeholder = true;
        } else {
            DType dtype;
            if (!DType::try_parse(type, dtype)) return std::nullopt;
            p.dtype = dtype;
        }
        const std::string_view name = word(name_at);
        if (name.empty() || name_problem(name)) return std::nullopt;
        for (const Param& q : params)
            if (q.name == name) return std::nullopt;
        p.type = TypeName{std::string(type), type_at};
        p.name = std::string(name);
        p.pos = name_at;
        params.push_back(std::move(p));
        skip_space();
        if (k == text.size()) return params;
        if (text[k] != ',') return std::nullopt;
        ++k;
        ++column;
    }
}

}  // namespace

std::vector<Param> parse_params(const SourceText& source, bool outputs) {
    if (std::optional<std::vector<Param>> simple = parse_simple_params(source.text, outputs)) return std::move(*simple);
    return ParamParser(source, outputs).parse();
}

std::vector<Param> parse_params_without_shortcut(const SourceText& source, bool outputs) {
    return ParamParser(source, outputs).parse();
}

std::vector<Param> parse_param_lists(const SourceText& in, const SourceText& out) {
    std::vector<Param> params = parse_params(in, false);
    const std::size_t inputs = params.size();
    for (Param& p : parse_params(out, true)) {
        for (std::size_t k = 0; k < inputs; ++k) {
            if (params[k].name == p.name) {
                fail_parse(out, p.pos, "'" + p.name + "' is both an input and an output parameter",
                           "the input is declared at " + in.where + ":" + at_line_column(params[k].pos) +
                               "; give the output another name");
            }
        }
        params.push_back(std::move(p));
    }
    return params;
}

void check_kernel_name(const std::string& name) {
    const SourceText src{"name", name};
    if (name.empty()) fail_parse(src, {}, "a kernel needs a name");
    for (std::size_t k = 0; k < name.size(); ++k) {
        const unsigned char c = static_cast<unsigned char>(name[k]);
        if (!(std::isalnum(c) || c == '_') || (k == 0 && std::isdigit(c)))
            fail_parse(src, {1, static_cast<int>(k) + 1, static_cast<std::uint32_t>(k)},
                       "a kernel name must be a C identifier (letters, digits and '_', not starting with a digit)");
    }
    if (name[0] == '_') fail_parse(src, {}, "kernel names starting with '_' are reserved for kjit");
    // The name prefixes C++ functions: a keyword or a type would not compile.
    if (std::string why = reserved_by_cpp(name); !why.empty()) fail_parse(src, {}, why + ": it cannot name a kernel");
    if (is_type_name(name)) fail_parse(src, {}, "'" + name + "' is a type name: it cannot name a kernel");
}

}  // namespace kjit::jit::frontend

#include "jit/frontend/preamble.hpp"

#include "jit/frontend/source.hpp"

#include <cctype>
#include <unordered_set>

namespace kjit::jit::frontend {
namespace {

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Words that may stand before '(' without naming a function.
bool is_not_a_function(std::string_view w) {
    for (std::string_view k : {"if", "while", "for", "switch", "return", "sizeof", "alignof", "decltype", "alignas",
                               "static_assert", "defined", "__launch_bounds__", "__align__", "__attribute__",
                               "__declspec", "operator", "noexcept", "throw", "catch"})
        if (w == k) return true;
    return false;
}

// Qualifiers between a return type and the name.
bool is_qualifier(std::string_view w) {
    for (std::string_view k : {"__device__", "__host__", "__global__", "__forceinline__", "__noinline__", "inline",
                               "static", "constexpr", "extern", "const", "volatile"})
        if (w == k) return true;
    return false;
}

}  // namespace

std::vector<PreambleFunction> scan_preamble(std::string_view s) {
    std::vector<PreambleFunction> found;
    std::unordered_set<std::string> seen;  // a set: a preamble may declare thousands of functions
    int depth = 0;  // braces and parentheses: only file-scope declarations count
    std::string previous_word, word_before_previous;
    std::size_t k = 0;
    const std::size_t n = s.size();
    bool line_start = true;
    while (k < n) {
        const char c = s[k];
        if (line_start && c == '#') {  // preprocessor line, with continuations
            while (k < n && s[k] != '\n') k += (s[k] == '\\' && k + 1 < n) ? 2 : 1;
            continue;
        }
        if (c == '\n') {
            line_start = true;
            ++k;
            continue;
        }
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++k;
            continue;
        }
        line_start = false;
        if (c == '/' && k + 1 < n && s[k + 1] == '/') {
            while (k < n && s[k] != '\n') ++k;
            continue;
        }
        if (c == '/' && k + 1 < n && s[k + 1] == '*') {
            const std::size_t end = s.find("*/", k + 2);
            k = end == std::string_view::npos ? n : end + 2;
            continue;
        }
        if (c == '"' || c == '\'') {
            ++k;
            while (k < n && s[k] != c) k += (s[k] == '\\' && k + 1 < n) ? 2 : 1;
            ++k;
            continue;
        }
        if (is_ident_start(c)) {
            const std::size_t start = k;
            while (k < n && is_ident_char(s[k])) ++k;
            const std::string word(s.substr(start, k - start));
            if (!is_qualifier(word)) {
                word_before_previous = previous_word;
                previous_word = word;
            }
            continue;
        }
        if (c == '(' && depth == 0 && !previous_word.empty() && !word_before_previous.empty() &&
            !is_not_a_function(previous_word)) {
            PreambleFunction f;
            f.name = previous_word;
            DType t;
            if (DType::try_parse(word_before_previous, t)) f.return_type = t;
            if (seen.insert(f.name).second) found.push_back(f);
        }
        if (c == '{' || c == '(') ++depth;
        if ((c == '}' || c == ')') && depth > 0) --depth;
        if (c == ';' || c == '{' || c == '}' || c == '(' || c == ')' || c == ',') {
            previous_word.clear();
            word_before_previous.clear();
        }
        ++k;
    }
    return found;
}

OutsideNames outside_names(std::string_view preamble, const std::vector<std::string>& nvrtc_options) {
    refuse_nul_byte({"preamble", preamble});
    for (std::size_t k = 0; k < nvrtc_options.size(); ++k)
        refuse_nul_byte({"NVRTC option " + std::to_string(k + 1), nvrtc_options[k]});
    return OutsideNames{scan_preamble(preamble), kernel_macros(preamble, nvrtc_options)};
}

}  // namespace kjit::jit::frontend

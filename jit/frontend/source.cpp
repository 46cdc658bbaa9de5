#include "jit/frontend/source.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kjit/error.hpp"

namespace kjit::jit::frontend {
namespace {

// UTF-8 continuation bytes take no column of their own on a terminal; skipping them in the
// caret's padding keeps the caret under the right character when a comment holds "α" or "→".
bool is_utf8_continuation(char c) {
    return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// The [begin, end) byte range of the line holding `offset`, without its '\n' (or "\r\n").
std::pair<std::size_t, std::size_t> line_range(std::string_view text, std::size_t offset) {
    offset = std::min(offset, text.size());
    // The '\n' ending the previous line lies before `offset`; an offset at a '\n' belongs to the
    // line that '\n' ends.
    const std::size_t newline = text.substr(0, offset).rfind('\n');
    const std::size_t begin = newline == std::string_view::npos ? 0 : newline + 1;
    std::size_t end = text.find('\n', offset);
    if (end == std::string_view::npos) end = text.size();
    if (end > begin && text[end - 1] == '\r') --end;
    return {begin, end};
}

// "where:LINE:COL: error: message\n<snippet>\nhint: ..." as ParseError builds it; TypeErrors at a
// position reuse it so that both read alike.
ParseError make_parse_error(const SourceText& source, SourcePos pos, const std::string& message,
                            const std::string& hint) {
    return ParseError(source.where, pos.line, pos.column, message, caret_snippet(source.text, pos), hint);
}

}  // namespace

std::string caret_snippet(std::string_view text, SourcePos pos) {
    const auto [begin, end] = line_range(text, pos.offset);
    std::string_view line = text.substr(begin, end - begin);
    // A long line shows a window around the caret, not megabytes of one line.
    constexpr std::size_t kWindow = 160;
    std::size_t column = pos.column > 1 ? static_cast<std::size_t>(pos.column - 1) : 0;
    std::string out;
    if (line.size() > kWindow) {
        std::size_t from = column > kWindow / 2 ? column - kWindow / 2 : 0;
        while (from > 0 && is_utf8_continuation(line[from])) --from;
        std::size_t to = std::min(line.size(), from + kWindow);
        while (to < line.size() && is_utf8_continuation(line[to])) ++to;
        const bool cut_before = from > 0, cut_after = to < line.size();
        line = line.substr(from, to - from);
        column = column - from + (cut_before ? 3 : 0);
        if (cut_before) out += "...";
        for (char c : line) {
            const auto byte = static_cast<unsigned char>(c);
            out += (byte < 0x20 && c != '\t') || byte == 0x7F ? '?' : c;
        }
        if (cut_after) out += "...";
        out += '\n';
        for (std::size_t k = 0; k < column; ++k) {
            const std::size_t at = k - (cut_before ? 3 : 0);
            if (cut_before && k < 3) out += ' ';
            else if (at < line.size() && is_utf8_continuation(line[at])) continue;
            else out += at < line.size() && line[at] == '\t' ? '\t' : ' ';
        }
        out += '^';
        return out;
    }
    for (char c : line) {
        // Control characters (NUL above all) would cut what() short or disturb a terminal.
        const auto byte = static_cast<unsigned char>(c);
        out += (byte < 0x20 && c != '\t') || byte == 0x7F ? '?' : c;
    }
    out += '\n';
    // Pad with the line's own tabs so that the caret lines up however wide a tab is shown.
    // The column may lie one past the end of the line (a missing ';' at the end of a line).
    const std::size_t before = pos.column > 1 ? static_cast<std::size_t>(pos.column - 1) : 0;
    for (std::size_t k = 0; k < before; ++k) {
        if (k < line.size()) {
            if (is_utf8_continuation(line[k])) continue;
            out += line[k] == '\t' ? '\t' : ' ';
        } else {
            out += ' ';
        }
    }
    out += '^';
    return out;
}

SourcePos position_at(std::string_view text, std::size_t offset) {
    offset = std::min(offset, text.size());
    const std::string_view before = text.substr(0, offset);
    const std::size_t newline = before.rfind('\n');
    const std::size_t line_start = newline == std::string_view::npos ? 0 : newline + 1;
    SourcePos pos;
    pos.line = 1 + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
    pos.column = 1 + static_cast<int>(offset - line_start);
    pos.offset = static_cast<std::uint32_t>(std::min<std::size_t>(offset, UINT32_MAX));
    return pos;
}

void refuse_nul_byte(const SourceText& source) {
    const std::size_t at = source.text.find('\0');
    if (at == std::string_view::npos) return;
    fail_parse(source, position_at(source.text, at), "a NUL byte: NVRTC would compile only the text before it");
}

void fail_parse(const SourceText& source, SourcePos pos, const std::string& message, const std::string& hint) {
    throw make_parse_error(source, pos, message, hint);
}

void fail_type(const SourceText& source, SourcePos pos, const std::string& message, const std::string& hint) {
    throw TypeError(make_parse_error(source, pos, message, hint).location());
}

namespace {

// Levenshtein distance, one row at a time; gives up (returns limit + 1) as soon as every entry
// of a row exceeds `limit`, so a long name against short candidates costs little.
std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t limit) {
    const std::size_t diff = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
    if (diff > limit) return limit + 1;
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        std::size_t row_min = row[0];
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            const std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
            row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
            diagonal = above;
            row_min = std::min(row_min, row[j]);
        }
        if (row_min > limit) return limit + 1;
    }
    return row[b.size()];
}

}  // namespace

std::string closest_name(std::string_view name, const std::vector<std::string>& candidates) {
    // A third of the name's length, at least one: "sqr" -> "sqrt", "flaot32" -> "float32", but
    // not "x" -> "y" suggestions for every one-letter name.
    const std::size_t limit = std::max<std::size_t>(1, name.size() / 3);
    // Names no one mistypes: the distance would cost length squared for no hint.
    if (name.size() > 64) return {};
    std::string best;
    std::size_t best_distance = limit + 1;
    for (const std::string& candidate : candidates) {
        const std::size_t d = edit_distance(name, candidate, limit);
        // Replacing every character is no suggestion ("x" -> "y"), dropping one is ("xx" -> "x").
        if (d < best_distance && d < std::max(name.size(), candidate.size())) {
            best = candidate;
            best_distance = d;
        }
    }
    return best;
}

}  // namespace kjit::jit::frontend

#include "runtime/detail/printable.hpp"

#include <cstddef>

namespace kjit::detail {
namespace {

// The length of the well-formed UTF-8 sequence of a non-ASCII, non-control character starting at
// `s[i]`, or 0 when there is none there (a stray continuation byte, an overlong form, a surrogate,
// a value past U+10FFFF, a truncated sequence, or a C1 control).
std::size_t utf8_char_length(std::string_view s, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char lead = byte(i);
    std::size_t n = 0;
    unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) {
        n = 2;
        if (lead == 0xC2) low = 0xA0;  // C2 80..C2 9F are the C1 controls
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        n = 3;
        if (lead == 0xE0) low = 0xA0;   // overlong below that
        if (lead == 0xED) high = 0x9F;  // surrogates above that
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        n = 4;
        if (lead == 0xF0) low = 0x90;   // overlong below that
        if (lead == 0xF4) high = 0x8F;  // past U+10FFFF above that
    } else {
        return 0;
    }
    if (i + n > s.size()) return 0;
    if (byte(i + 1) < low || byte(i + 1) > high) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
    return n;
}

}  // namespace

std::string printable(std::string_view text, bool keep_lines) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c < 0x7F) {
            out += text[i++];
        } else if (keep_lines && (c == '\n' || c == '\t')) {
            out += text[i++];
        } else if (const std::size_t n = c >= 0x80 ? utf8_char_length(text, i) : 0; n > 0) {
            out.append(text.substr(i, n));
            i += n;
        } else {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
            ++i;
        }
    }
    return out;
}

}  // namespace kjit::detail

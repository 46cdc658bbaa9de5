// A parameter list as parse_params reads it, spelled out (names, types, positions, flags) or its
// error: what the shortcut for simple lists (jit/frontend/params.cpp) must read exactly as the full parser
// does. Shared by tests/params_test.cpp and the fuzzer.
#pragma once

#include <string>
#include <string_view>

#include "jit/frontend/params.hpp"
#include "kjit/error.hpp"

namespace kjit::test {

inline std::string params_as_text(std::string_view text, bool shortcut) {
    using namespace kjit::jit::frontend;
    auto at = [](const SourcePos& p) {
        std::string s(1, '@');
        s.append(std::to_string(p.offset)).append(1, ':').append(std::to_string(p.line)).append(1, ':');
        return s.append(std::to_string(p.column));
    };
    try {
        const SourceText source{"in", text};
        std::string out;
        for (const Param& p : shortcut ? parse_params(source, false) : parse_params_without_shortcut(source, false)) {
            out.append(p.name).append(at(p.pos)).append(1, ' ').append(p.type.spelling).append(at(p.type.pos));
            if (p.raw) out.append(" raw");
            if (p.is_placeholder) out.append(" placeholder");
            if (p.dtype) out.append(1, ' ').append(p.dtype->name());
            out.append(1, ';');
        }
        return out;
    } catch (const kjit::Error& e) {
        return std::string("error: ") + e.what();
    }
}

}  // namespace kjit::test

// Text taken from a file (a .npy header, a manifest) made safe to print in a message.
#pragma once

#include <string>
#include <string_view>

namespace kjit::detail {

// `text` with every byte that could drive the terminal showing it written as "\xNN": C0 controls
// (ESC starts the escape sequences that recolour, retitle or rewrite a terminal), DEL, the C1
// controls in UTF-8 (U+0080 to U+009F), and any byte that is not part of well-formed UTF-8 (a
// lone 0x9B is CSI to a Latin-1 terminal). Printable ASCII and well-formed UTF-8 are kept as they
// are, so that an honest name reads the same. With `keep_lines`, '\n' and '\t' are kept too: a
// multi-line diagnostic keeps its snippet and caret lines.
std::string printable(std::string_view text, bool keep_lines = false);

}  // namespace kjit::detail

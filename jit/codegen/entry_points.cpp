#include "jit/codegen/entry_points.hpp"

#include <algorithm>

#include "kjit/error.hpp"

namespace kjit::jit::codegen {

std::string keep_entry_points(const std::string& source, const EntryLines& lines, const std::vector<std::string>& keep) {
    std::string printed;
    for (const auto& entry : lines) printed += entry.second;
    if (printed.size() > source.size() || source.compare(source.size() - printed.size(), printed.size(), printed) != 0)
        throw Error("generated source: its entry points are not its last lines");
    std::string out = source.substr(0, source.size() - printed.size());
    for (const auto& [name, line] : lines)
        if (std::find(keep.begin(), keep.end(), name) != keep.end()) out += line;
    return out;
}

}  // namespace kjit::jit::codegen

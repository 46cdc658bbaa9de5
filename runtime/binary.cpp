#include "kjit/binary.hpp"

#include "kjit/error.hpp"

namespace kjit {

const std::string& Binary::entry_point(const std::string& name) const {
    if (const auto it = entry_points.find(name); it != entry_points.end()) return it->second;
    std::string known;
    for (const auto& [entry, symbol] : entry_points) known += (known.empty() ? "" : ", ") + entry;
    throw Error("the binary has no entry point '" + name + "' (it has: " + (known.empty() ? "none" : known) + ")");
}

}  // namespace kjit

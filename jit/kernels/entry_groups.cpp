#include "jit/kernels/entry_groups.hpp"

#include "kjit/error.hpp"

namespace kjit::jit::kernels {

EntryGroups::EntryGroups(std::size_t groups) : groups_(groups) {
    if (groups > kMaxGroups) throw Error("entry point groups: " + std::to_string(groups) + " groups, at most " + std::to_string(kMaxGroups));
}

EntryGroups::EntryGroups(const std::vector<std::vector<std::string>>& groups) : EntryGroups(groups.size()) {
    for (std::size_t g = 0; g < groups.size(); ++g)
        for (const std::string& name : groups[g]) add(g, name);
}

void EntryGroups::add(std::size_t g, std::string_view name) {
    if (g >= groups_ || counts_[g] >= kMaxPerGroup) throw Error("entry point groups: too many entry points in a group");
    if (name.find('\0') != std::string_view::npos) throw Error("entry point groups: a name holds a NUL");
    spans_[g][counts_[g]++] = static_cast<std::uint32_t>(text_.size());
    text_.append(name);
    text_.push_back('\0');
}

std::vector<std::string> EntryGroups::names(std::size_t g) const {
    std::vector<std::string> out;
    for (std::size_t k = 0; k < count(g); ++k) out.emplace_back(name(g, k));
    return out;
}

}  // namespace kjit::jit::kernels

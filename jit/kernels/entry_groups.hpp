// The entry point names of a module's groups (jit/kernels/lazy_entry_points.hpp): at most kMaxPerGroup
// names in each of at most kMaxGroups groups, all held in one string. A fresh process's first
// cached call makes one from its plan note: a list of lists of strings was two heap blocks per
// group, each run cold there (docs/perf-log.md).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::jit::kernels {

class EntryGroups {
public:
    static constexpr std::size_t kMaxGroups = 18;  // a reduction: 9 strategies in two index widths
    static constexpr std::size_t kMaxPerGroup = 2;

    // `groups` empty groups.
    explicit EntryGroups(std::size_t groups = 0);
    // Throws kjit::Error when there are more than kMaxGroups groups or kMaxPerGroup names in one.
    explicit EntryGroups(const std::vector<std::vector<std::string>>& groups);

    // Appends `name` to group g (throws kjit::Error past the limits, or on a name with a NUL).
    void add(std::size_t g, std::string_view name);

    std::size_t size() const { return groups_; }
    std::size_t count(std::size_t g) const { return g < groups_ ? counts_[g] : 0; }
    bool empty(std::size_t g) const { return count(g) == 0; }
    // The k-th name of group g, NUL-terminated (for the driver).
    const char* name(std::size_t g, std::size_t k) const { return text_.c_str() + spans_[g][k]; }
    std::vector<std::string> names(std::size_t g) const;

private:
    std::string text_;  // the names, each followed by a NUL
    std::array<std::array<std::uint32_t, kMaxPerGroup>, kMaxGroups> spans_{};  // where each starts
    std::array<std::uint8_t, kMaxGroups> counts_{};
    std::size_t groups_ = 0;
};

}  // namespace kjit::jit::kernels

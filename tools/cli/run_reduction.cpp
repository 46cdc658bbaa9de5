#include "tools/cli/run_reduction.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "kjit/error.hpp"

namespace kjit::cli {

std::optional<std::vector<int>> parse_axes(const std::vector<std::string>& items) {
    if (items.empty()) return std::nullopt;
    std::vector<int> axes;
    for (const std::string& item : items) {
        std::size_t start = 0;
        while (true) {
            const std::size_t comma = std::min(item.find(',', start), item.size());
            const std::string text = item.substr(start, comma - start);
            // strtol alone would take " 1", "1x" or "" (as 0): the whole piece must be the number.
            char* end = nullptr;
            errno = 0;
            const long axis = text.empty() || std::isspace(static_cast<unsigned char>(text[0]))
                                  ? 0
                                  : std::strtol(text.c_str(), &end, 10);
            if (end == nullptr || *end != '\0' || errno != 0 || axis < INT_MIN || axis > INT_MAX)
                throw Error(fmt::format("--axis '{}': write axes as integers, e.g. --axis 0, --axis -1 or --axis 0,2",
                                        item));
            axes.push_back(static_cast<int>(axis));
            if (comma == item.size()) break;
            start = comma + 1;
        }
    }
    return axes;
}

Outputs run_reduction(const ReductionKernel& kernel, std::span<const KernelArg> args, const ReduceOptions& options) {
    return kernel(args, options);
}

}  // namespace kjit::cli

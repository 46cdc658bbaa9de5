#include "jit/templates.hpp"

#include <algorithm>
#include <string>

#include "kjit/error.hpp"

namespace kjit::jit {
namespace {

struct Joined {
    std::vector<std::string> texts;       // parallel to detail::embedded_templates
    std::vector<std::string_view> names;  // sorted
};

// Built once, on first use (thread-safe as a function-local static): a few kilobytes copied once.
const Joined& joined() {
    static const Joined j = [] {
        Joined out;
        out.texts.reserve(detail::embedded_template_count);
        for (std::size_t i = 0; i < detail::embedded_template_count; ++i) {
            const detail::EmbeddedTemplate& t = detail::embedded_templates[i];
            std::string text;
            for (std::size_t p = 0; p < t.part_count; ++p) text += t.parts[p];
            out.texts.push_back(std::move(text));
            out.names.push_back(t.name);
        }
        std::sort(out.names.begin(), out.names.end());
        return out;
    }();
    return j;
}

}  // namespace

std::string_view template_text(std::string_view name) {
    const Joined& j = joined();
    for (std::size_t i = 0; i < detail::embedded_template_count; ++i) {
        if (detail::embedded_templates[i].name == name) return j.texts[i];
    }
    std::string known;
    for (std::string_view n : j.names) known += (known.empty() ? "" : ", ") + std::string(n);
    throw Error("no CUDA template named '" + std::string(name) + "' is embedded in kjit (known: " + known + ")");
}

const std::vector<std::string_view>& template_names() { return joined().names; }

}  // namespace kjit::jit

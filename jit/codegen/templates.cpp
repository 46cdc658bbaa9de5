#include "jit/codegen/templates.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>

#include "kjit/error.hpp"

namespace kjit::jit::codegen {
namespace {

// Each template's text joined from its parts the first time it is asked for (a first call of a
// kernel pays for the templates it uses, not for all of them), and the sorted names.
struct Joined {
    std::unique_ptr<std::once_flag[]> once{new std::once_flag[detail::embedded_template_count]};
    std::vector<std::string> texts = std::vector<std::string>(detail::embedded_template_count);  // parallel to detail::embedded_templates
    std::vector<std::string_view> names;  // sorted
    Joined() {
        for (std::size_t i = 0; i < detail::embedded_template_count; ++i) names.push_back(detail::embedded_templates[i].name);
        std::sort(names.begin(), names.end());
    }
    std::string_view text(std::size_t i) {
        std::call_once(once[i], [&] {
            const detail::EmbeddedTemplate& t = detail::embedded_templates[i];
            for (std::size_t p = 0; p < t.part_count; ++p) texts[i] += t.parts[p];
        });
        return texts[i];
    }
};

Joined& joined() {
    static Joined j;
    return j;
}

}  // namespace

std::string_view template_text(std::string_view name) {
    Joined& j = joined();
    for (std::size_t i = 0; i < detail::embedded_template_count; ++i) {
        if (detail::embedded_templates[i].name == name) return j.text(i);
    }
    std::string known;
    for (std::string_view n : j.names) known += (known.empty() ? "" : ", ") + std::string(n);
    throw Error("no CUDA template named '" + std::string(name) + "' is embedded in kjit (known: " + known + ")");
}

const std::vector<std::string_view>& template_names() { return joined().names; }

}  // namespace kjit::jit::codegen

#include "jit/plan_note.hpp"

#include <algorithm>
#include <string_view>

#include "cache/cache_key.hpp"
#include "cache/kernel_cache.hpp"
#include "jit/nvrtc_version.hpp"
#include "jit/program_lookup.hpp"

namespace kjit::jit {
namespace {

constexpr std::string_view kHeader = "kjit-plan-note 1\n";

// The GNU build ID of the library holding this code (kjit), read once; empty without one, and
// then nothing is noted (a note made by one build must not steer another).
const std::string& kjit_build() {
    static const std::string id = detail::elf_build_id(reinterpret_cast<const void*>(&format_plan_note));
    return id;
}

bool one_line(const std::string& s) { return s.find('\n') == std::string::npos; }

}  // namespace

std::string format_plan_note(const PlanNote::Values& values, const std::vector<std::string>& keys) {
    std::string text(kHeader);
    for (const auto& [name, value] : values) {
        if (name.empty() || name.find('=') != std::string::npos || !one_line(name) || !one_line(value)) return {};
        text += "value." + name + "=" + value + "\n";
    }
    for (std::size_t g = 0; g < keys.size(); ++g)
        if (!keys[g].empty()) text += "key." + std::to_string(g) + "=" + keys[g] + "\n";
    return text;
}

bool parse_plan_note(const std::string& text, std::size_t groups, PlanNote::Values& values, std::vector<std::string>& keys) {
    values.clear();
    keys.assign(groups, {});
    if (text.compare(0, kHeader.size(), kHeader) != 0) return false;
    values.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')));
    for (std::size_t at = kHeader.size(); at < text.size();) {
        const std::size_t end = text.find('\n', at);
        if (end == std::string::npos) return false;
        const std::string_view line(text.data() + at, end - at);
        at = end + 1;
        const std::size_t eq = line.find('=');
        if (eq == std::string_view::npos) return false;
        const std::string_view name = line.substr(0, eq), value = line.substr(eq + 1);
        if (name.starts_with("value.") && name.size() > 6) {
            if (find_value(values, name.substr(6)) != nullptr) return false;
            values.emplace_back(name.substr(6), value);
        } else if (name.starts_with("key.") && name.size() > 4) {
            std::size_t g = 0;
            for (const char c : name.substr(4)) {
                if (c < '0' || c > '9' || g > groups) return false;
                g = g * 10 + static_cast<std::size_t>(c - '0');
            }
            if (g >= groups || !keys[g].empty() || !cache::is_key(value)) return false;
            keys[g] = std::string(value);
        } else {
            return false;
        }
    }
    return true;
}

const std::string* find_value(const PlanNote::Values& values, std::string_view name, std::string_view prefix) {
    for (const auto& [n, v] : values)
        if (n.size() == prefix.size() + name.size() && n.starts_with(prefix) && n.ends_with(name)) return &v;
    return nullptr;
}

PlanNote::PlanNote(std::vector<std::string> source_fields, int device_cc, std::size_t groups,
                   std::function<std::string()> spec_json)
    : source_fields_(std::move(source_fields)), device_cc_(device_cc), spec_json_(std::move(spec_json)), keys_(groups) {
    const std::string n = name();
    if (n.empty()) return;
    const std::optional<std::string> text = cache::process_cache()->read_note(n);
    Values values;
    std::vector<std::string> keys;
    if (text && parse_plan_note(*text, groups, values, keys)) {
        noted_ = true;
        values_ = std::move(values);
        keys_ = std::move(keys);
    }
}

std::string PlanNote::name() {
    if (!name_.empty() || kjit_build().empty()) return name_;
    const std::optional<ProgramKeying> keying = program_keying(device_cc_);
    if (!keying) return {};
    std::vector<std::string> fields = source_fields_;
    fields.push_back("sm_" + std::to_string(device_cc_));
    fields.push_back(keying->target);
    fields.push_back(keying->nvrtc_version);
    fields.push_back(kjit_build());
    name_ = cache::make_fields_key("kjit-plan-note", fields);
    target_ = keying->target;
    return name_;
}

std::shared_ptr<kjit::detail::LoadedModule> PlanNote::find(std::size_t g, int ordinal) {
    if (g >= keys_.size() || keys_[g].empty()) return nullptr;
    return load_cached_program(keys_[g], ordinal, device_cc_, target_, spec_json_);
}

void PlanNote::loaded(std::size_t g, const std::string& key) {
    if (g >= keys_.size() || !values_ || keys_[g] == key) return;
    keys_[g] = key;
    const std::string n = name();
    const std::string text = format_plan_note(*values_, keys_);
    if (!n.empty() && !text.empty()) cache::process_cache()->write_note(n, text);
}

}  // namespace kjit::jit

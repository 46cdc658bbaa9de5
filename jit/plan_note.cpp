#include "jit/plan_note.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string_view>

#include "cache/cache_key.hpp"
#include "cache/kernel_cache.hpp"
#include "jit/nvrtc_identity.hpp"
#include "jit/nvrtc_version.hpp"
#include "jit/program_lookup.hpp"
#include "runtime/detail/nvrtc.hpp"
#include "runtime/detail/trace_points.hpp"

namespace kjit::jit {
namespace {

constexpr std::string_view kHeader = "kjit-plan-note 2\n";
constexpr std::string_view kNvrtcPrefix = "nvrtc.";

// The GNU build ID of the library holding this code (kjit), read once; empty without one, and
// then nothing is noted (a note made by one build must not steer another).
const std::string& kjit_build() {
    static const std::string id = detail::own_build_id();
    return id;
}

bool one_line(const std::string& s) { return s.find('\n') == std::string::npos; }

// The note's name; empty without kjit's build ID.
std::string note_name(std::span<const std::string_view> source_fields, int device_cc) {
    if (kjit_build().empty()) return {};
    std::vector<std::string_view> fields;
    fields.reserve(source_fields.size() + 3);
    fields.assign(source_fields.begin(), source_fields.end());
    char sm[16] = "sm_";
    const auto r = std::to_chars(sm + 3, sm + sizeof sm, device_cc);
    fields.emplace_back(sm, static_cast<std::size_t>(r.ptr - sm));
    const char* arch = std::getenv("KJIT_ARCH");
    fields.emplace_back(arch != nullptr ? arch : "");
    fields.emplace_back(kjit_build());
    return cache::make_fields_key("kjit-plan-note", fields);
}

}  // namespace

std::string format_plan_note(const NoteKeying& keying, const PlanNote::Values& values, const std::vector<std::string>& keys) {
    if (keying.nvrtc_lines.empty() || keying.nvrtc_lines.back() != '\n' || keying.nvrtc_version.empty() ||
        keying.target.empty() || !one_line(keying.nvrtc_version) || !one_line(keying.target))
        return {};
    std::string text(kHeader);
    for (std::size_t at = 0; at < keying.nvrtc_lines.size();) {
        const std::size_t end = keying.nvrtc_lines.find('\n', at) + 1;
        const std::string_view line = std::string_view(keying.nvrtc_lines).substr(at, end - at);
        if (line.find('=') == std::string_view::npos || line.starts_with("version_key=")) return {};
        text.append(kNvrtcPrefix);
        text.append(line);
        at = end;
    }
    text += std::string(kNvrtcPrefix) + "version_key=" + keying.nvrtc_version + "\ntarget=" + keying.target + "\n";
    for (const auto& [name, value] : values) {
        if (name.empty() || name.find('=') != std::string::npos || !one_line(name) || !one_line(value)) return {};
        text += "value." + name + "=" + value + "\n";
    }
    for (std::size_t g = 0; g < keys.size(); ++g)
        if (!keys[g].empty()) text += "key." + std::to_string(g) + "=" + keys[g] + "\n";
    return text;
}

bool parse_plan_note(const std::string& text, std::size_t groups, NoteKeying& keying, PlanNote::Values& values,
                     std::vector<std::string>& keys) {
    keying = {};
    values.clear();
    keys.assign(groups, {});
    if (text.compare(0, kHeader.size(), kHeader) != 0) return false;
    values.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')));
    keying.nvrtc_lines.reserve(text.size());
    bool keyed = false;  // past the target line
    for (std::size_t at = kHeader.size(); at < text.size();) {
        const std::size_t end = text.find('\n', at);
        if (end == std::string::npos) return false;
        const std::string_view line(text.data() + at, end - at);
        at = end + 1;
        if (!keyed) {
            // NVRTC's identity lines, its version key, the target: first, in this order.
            if (line.starts_with("target=") && !keying.nvrtc_version.empty()) {
                keying.target = std::string(line.substr(7));
                if (keying.target.empty()) return false;
                keyed = true;
            } else if (line.starts_with(kNvrtcPrefix) && keying.nvrtc_version.empty()) {
                const std::string_view rest = line.substr(kNvrtcPrefix.size());
                if (rest.find('=') == std::string_view::npos) return false;
                if (rest.starts_with("version_key=")) {
                    keying.nvrtc_version = std::string(rest.substr(12));
                    if (keying.nvrtc_version.empty() || keying.nvrtc_lines.empty()) return false;
                } else {
                    keying.nvrtc_lines.append(rest);
                    keying.nvrtc_lines.push_back('\n');
                }
            } else {
                return false;
            }
            continue;
        }
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
    return keyed;
}

const std::string* find_value(const PlanNote::Values& values, std::string_view name, std::string_view prefix) {
    for (const auto& [n, v] : values)
        if (n.size() == prefix.size() + name.size() && n.starts_with(prefix) && n.ends_with(name)) return &v;
    return nullptr;
}

PlanNote::PlanNote(std::span<const std::string_view> source_fields, int device_cc, std::size_t groups,
                   std::function<std::string()> spec_json)
    : device_cc_(device_cc), spec_json_(std::move(spec_json)), name_(note_name(source_fields, device_cc)), keys_(groups) {
    KJIT_TRACE("note: name");
    if (name_.empty()) return;
    const std::shared_ptr<cache::KernelCache> kernel_cache = cache::process_cache();
    KJIT_TRACE("note: process cache");
    const std::optional<std::string> text = kernel_cache->read_note(name_);
    KJIT_TRACE("note: read");
    NoteKeying keying;
    Values values;
    std::vector<std::string> keys;
    const bool parsed = text && parse_plan_note(*text, groups, keying, values, keys);
    KJIT_TRACE("note: parsed");
    if (parsed && still_keys(keying)) {
        KJIT_TRACE("note: NVRTC identity checked");
        noted_ = true;
        kernel_cache->count_note_hit();
        target_ = std::move(keying.target);
        values_ = std::move(values);
        keys_ = std::move(keys);
    }
}

// Whether what the note was made under still keys this process's programs: with NVRTC loaded, its
// version and the target it gives; without, the noted NVRTC file and environment unchanged (then
// the version and target follow from them, the GPU and KJIT_ARCH being part of the note's name).
bool PlanNote::still_keys(const NoteKeying& keying) const {
    if (!kjit::detail::nvrtc_loaded())
        return held_identity_lines(keying.nvrtc_lines) == keying.nvrtc_lines.size() && !keying.nvrtc_lines.empty();
    const std::optional<ProgramKeying> now = program_keying(device_cc_);
    return now && now->nvrtc_version == keying.nvrtc_version && now->target == keying.target;
}


std::shared_ptr<kjit::detail::LoadedModule> PlanNote::find(std::size_t g, int ordinal) {
    if (g >= keys_.size() || keys_[g].empty()) return nullptr;
    return load_cached_program(keys_[g], ordinal, device_cc_, target_, spec_json_);
}

void PlanNote::loaded(std::size_t g, const std::string& key) {
    if (g >= keys_.size() || !values_ || keys_[g] == key) return;
    keys_[g] = key;
    if (name_.empty()) return;
    const std::optional<ProgramKeying> now = program_keying(device_cc_, /*with_identity=*/true);
    if (!now) return;
    if (target_.empty()) target_ = now->target;
    const std::string text = format_plan_note({now->nvrtc_lines, now->nvrtc_version, now->target}, *values_, keys_);
    if (!text.empty()) cache::process_cache()->write_note(name_, text);
}

}  // namespace kjit::jit

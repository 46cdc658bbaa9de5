#include "jit/kernels/plan_note.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string_view>

#include "cache/cache_key.hpp"
#include "cache/kernel_cache.hpp"
#include "jit/compile/nvrtc_identity.hpp"
#include "jit/compile/nvrtc_version.hpp"
#include "jit/compile/program_store.hpp"
#include "jit/compile/source_identity.hpp"
#include "jit/kernels/elementwise/calls.hpp"
#include "runtime/detail/log.hpp"
#include "runtime/detail/nvrtc.hpp"

namespace kjit::jit::kernels {

NoteFields::NoteFields(std::initializer_list<std::string_view> strings, const std::vector<std::string>& nvrtc_options,
                       const TypeBinding& types, const ModuleVariant& variant)
    : options(std::to_string(nvrtc_options.size())),
      binding(format_type_binding(types)),
      scalar(variant.scalar_field()),
      storage(variant.storage_field()) {
    fields.assign(strings);
    fields.emplace_back(options);
    for (const std::string& o : nvrtc_options) fields.emplace_back(o);
    fields.insert(fields.end(), {binding, scalar, storage});
}
namespace {

constexpr std::string_view kHeader = "kjit-plan-note 5\n";
constexpr std::string_view kVersionKey = "version_key=";
constexpr std::string_view kTarget = "target=";

bool one_line(std::string_view s) { return s.find('\n') == std::string::npos; }

// The note's name; `kjit_arch` is KJIT_ARCH as the reading process has it.
std::string note_name(std::span<const std::string_view> source_fields, int device_cc, const char* kjit_arch) {
    std::vector<std::string_view> fields;
    fields.reserve(source_fields.size() + 3);
    fields.assign(source_fields.begin(), source_fields.end());
    char sm[16] = "sm_";
    const auto r = std::to_chars(sm + 3, sm + sizeof sm, device_cc);
    fields.emplace_back(sm, static_cast<std::size_t>(r.ptr - sm));
    fields.emplace_back(kjit_arch != nullptr ? kjit_arch : "");
    fields.emplace_back(compile::kSourceIdentity);
    return cache::make_fields_key("kjit-plan-note", fields);
}

}  // namespace



std::string format_plan_note(const NoteKeying& keying, const PlanNote::NotedValues& values, const std::vector<std::string>& keys,
                             const std::vector<std::string>& aliases) {
    if (keying.nvrtc_lines.empty() || keying.nvrtc_lines.back() != '\n' || keying.nvrtc_version.empty() ||
        keying.target.empty() || !one_line(keying.nvrtc_version) || !one_line(keying.target))
        return {};
    for (std::size_t at = 0; at < keying.nvrtc_lines.size();) {
        const std::size_t end = keying.nvrtc_lines.find('\n', at) + 1;
        const std::string_view line = keying.nvrtc_lines.substr(at, end - at);
        if (line.find('=') == std::string_view::npos || line.starts_with(kVersionKey)) return {};
        at = end;
    }
    std::string text(kHeader);
    text.append(keying.nvrtc_lines);
    text.append(kVersionKey).append(keying.nvrtc_version).append("\n");
    text.append(kTarget).append(keying.target).append("\n");
    for (const auto& [name, value] : values) {
        if (name.empty() || name.find('=') != std::string::npos || !one_line(name) || !one_line(value)) return {};
        text.append("value.").append(name).append("=").append(value).append("\n");
    }
    for (std::size_t g = 0; g < keys.size(); ++g)
        if (!keys[g].empty()) text += "key." + std::to_string(g) + "=" + keys[g] + "\n";
    for (std::size_t g = 0; g < aliases.size(); ++g)
        if (!aliases[g].empty()) text += "alias." + std::to_string(g) + "=" + aliases[g] + "\n";
    return text;
}

// Reads the lines in place (views of `text`, one allocation for the values' list): a fresh
// process's first cached call reads a note, where each string allocated was a heap block's worth
// of instructions run cold (docs/PERFORMANCE.md).
bool parse_plan_note(std::string_view text, std::size_t groups, NoteKeying& keying, PlanNote::NotedValues& values,
                     std::vector<std::string>& keys, std::vector<std::string>& aliases) {
    keying = {};
    values.clear();
    keys.assign(groups, {});
    aliases.assign(groups, {});
    // A group number: digits only, below `groups`.
    auto group_number = [groups](std::string_view digits, std::size_t& g) {
        g = 0;
        if (digits.empty()) return false;
        for (const char c : digits) {
            if (c < '0' || c > '9' || g > groups) return false;
            g = g * 10 + static_cast<std::size_t>(c - '0');
        }
        return g < groups;
    };
    if (!text.starts_with(kHeader)) return false;
    std::size_t at = kHeader.size();
    // The next whole line, without its end; false at the text's end or on a last line unended.
    std::string_view line;
    auto next_line = [&] {
        const std::size_t end = text.find('\n', at);
        if (end == std::string_view::npos) return false;
        line = text.substr(at, end - at);
        at = end + 1;
        return true;
    };
    // NVRTC's identity lines (each "name=value") up to its version key, then the target: first,
    // in this order.
    const std::size_t identity_at = at;
    for (;;) {
        const std::size_t line_at = at;
        if (!next_line() || line.find('=') == std::string_view::npos) return false;
        if (line.starts_with(kVersionKey)) {
            keying.nvrtc_lines = text.substr(identity_at, line_at - identity_at);
            keying.nvrtc_version = line.substr(kVersionKey.size());
            break;
        }
    }
    if (keying.nvrtc_lines.empty() || keying.nvrtc_version.empty()) return false;
    if (!next_line() || !line.starts_with(kTarget) || line.size() == kTarget.size()) return false;
    keying.target = line.substr(kTarget.size());
    values.reserve(24);  // a reduction's note has 21 values, an elementwise kernel's up to 13
    while (at < text.size()) {
        if (!next_line()) return false;
        const std::size_t eq = line.find('=');
        if (eq == std::string_view::npos) return false;
        const std::string_view name = line.substr(0, eq), value = line.substr(eq + 1);
        if (name.starts_with("value.") && name.size() > 6) {
            if (find_value(values, name.substr(6)) != nullptr) return false;
            values.emplace_back(name.substr(6), value);
        } else if (name.starts_with("key.") && name.size() > 4) {
            std::size_t g = 0;
            if (!group_number(name.substr(4), g) || !keys[g].empty() || !cache::is_key(value)) return false;
            keys[g] = std::string(value);
        } else if (name.starts_with("alias.") && name.size() > 6) {
            std::size_t g = 0;
            if (!group_number(name.substr(6), g) || !aliases[g].empty() || !cache::is_key(value)) return false;
            aliases[g] = std::string(value);
        } else {
            return false;
        }
    }
    return true;
}

const std::string_view* find_value(const PlanNote::NotedValues& values, std::string_view name, std::string_view prefix) {
    for (const auto& [n, v] : values)
        if (n.size() == prefix.size() + name.size() && n.starts_with(prefix) && n.ends_with(name)) return &v;
    return nullptr;
}

bool find_number(const PlanNote::NotedValues& values, std::string_view name, int& out, int low, int high) {
    const std::string_view* value = find_value(values, name);
    if (value == nullptr) return false;
    const char* end = value->data() + value->size();
    const auto [at, error] = std::from_chars(value->data(), end, out);
    return error == std::errc() && at == end && out >= low && out <= high;
}

PlanNote::PlanNote(std::span<const std::string_view> source_fields, int device_cc, std::size_t groups,
                   std::function<std::string()> spec_json, std::string kernel_name, std::string types)
    : device_cc_(device_cc),
      spec_json_(std::move(spec_json)),
      kernel_name_(std::move(kernel_name)),
      types_(std::move(types)),
      name_(note_name(source_fields, device_cc, std::getenv("KJIT_ARCH"))),
      keys_(groups),
      aliases_(groups) {
    if (name_.empty()) return;
    const std::shared_ptr<cache::KernelCache> kernel_cache = cache::process_cache();
    std::optional<cache::KernelCache::FoundNote> found = kernel_cache->read_note(name_);
    if (!found) return;
    note_ = std::move(found->note);
    NoteKeying keying;
    std::vector<std::string> keys, aliases;
    const bool parsed = parse_plan_note(note_.text(), groups, keying, noted_values_, keys, aliases);
    use_ = parsed ? use_of(keying) : Use::none;
    if (use_ == Use::aliases && std::all_of(aliases.begin(), aliases.end(), [](const std::string& a) { return a.empty(); }))
        use_ = Use::none;
    if (use_ == Use::none) {
        noted_values_.clear();
        return;
    }
    noted_ = true;
    kernel_cache->count_note_hit();
    target_ = std::string(keying.target);
    // By aliases, the noted keys are another NVRTC's: a note written from here on has only the
    // keys this process loads (and the aliases, which hold for any NVRTC).
    if (use_ == Use::keys) keys_ = std::move(keys);
    aliases_ = std::move(aliases);
}

// How what the note was made under meets this process's programs. With NVRTC loaded: its keys when
// that NVRTC gives the same version and target, else none. Without: its keys when the noted NVRTC
// file and environment are unchanged (then the version and target follow from them, the GPU and
// KJIT_ARCH being part of the note's name), or when the NVRTC recorded beside the writable folder
// gives them; none when that record names another NVRTC (the long way compiles with it); and when
// this process knows of no NVRTC at all, its aliases.
PlanNote::Use PlanNote::use_of(const NoteKeying& keying) const {
    if (kjit::detail::nvrtc_loaded()) {
        const std::optional<compile::ProgramKeying> now = compile::program_keying(device_cc_);
        return now && now->nvrtc_version == keying.nvrtc_version && now->target == keying.target ? Use::keys : Use::none;
    }
    if (!keying.nvrtc_lines.empty() && compile::held_identity_lines(keying.nvrtc_lines) == keying.nvrtc_lines.size()) return Use::keys;
    const std::optional<compile::ProgramKeying> recorded = compile::program_keying(device_cc_);
    if (!recorded) return Use::aliases;
    return recorded->nvrtc_version == keying.nvrtc_version && recorded->target == keying.target ? Use::keys : Use::none;
}

std::shared_ptr<kjit::detail::LoadedModule> PlanNote::find(std::size_t g, int ordinal) {
    if (use_ == Use::aliases) {
        if (g >= aliases_.size() || aliases_[g].empty()) return nullptr;
        // Found as the long way finds an entry by alias: it must be this kernel's, for this
        // binding and the noted target, or it is passed over with a warning.
        const std::shared_ptr<cache::KernelCache> kernel_cache = cache::process_cache();
        const std::string spec = kernel_cache->settings().record.empty() || !spec_json_ ? std::string() : spec_json_();
        return compile::load_entry_module(kernel_cache->find_alias(aliases_[g], spec, target_, {kernel_name_, types_, target_}), ordinal,
                                 device_cc_);
    }
    if (g >= keys_.size() || keys_[g].empty()) return nullptr;
    return compile::load_cached_program(keys_[g], ordinal, device_cc_, target_, spec_json_);
}

void PlanNote::loaded(std::size_t g, const cache::Entry& entry, const compile::CachedProgram& program) {
    if (g >= keys_.size() || keys_[g] == entry.key) return;
    keys_[g] = entry.key;
    aliases_[g] = compile::alias_key(program);
    write();
}

// The note as known now, written to the writable folder when the plan's values are known (the
// long way's, or the note's own): a failed write is only a lost shortcut.
void PlanNote::write() {
    if (name_.empty() || (!values_ && !noted_)) return;
    const std::optional<compile::ProgramKeying> now = compile::program_keying(device_cc_, /*with_identity=*/true);
    if (!now) return;
    if (target_.empty() || use_ == Use::aliases) target_ = now->target;
    const NotedValues values = values_ ? NotedValues(values_->begin(), values_->end()) : noted_values_;
    const std::string text = format_plan_note({now->nvrtc_lines, now->nvrtc_version, now->target}, values, keys_, aliases_);
    if (!text.empty()) cache::process_cache()->write_note(name_, text);
}

bool write_plan_note(std::span<const std::string_view> source_fields, const std::string& arch, const PlanNote::Values& values,
                     const std::vector<std::string>& keys, const std::vector<std::string>& aliases) {
    // A GPU reports its own architecture as "sm_XY" (no "a"/"f" suffix, never PTX only): only a
    // cubin for exactly that is what a process on it without KJIT_ARCH loads.
    int cc = 0;
    const auto [end, error] = arch.starts_with("sm_") ? std::from_chars(arch.data() + 3, arch.data() + arch.size(), cc)
                                                       : std::from_chars_result{arch.data(), std::errc::invalid_argument};
    if (error != std::errc() || end != arch.data() + arch.size() || cc <= 0 || arch != "sm_" + std::to_string(cc)) return false;
    if (!kjit::detail::nvrtc_loaded()) return false;
    const std::optional<compile::NvrtcIdentity> id = compile::loaded_nvrtc_identity();
    if (!id) return false;
    const std::string name = note_name(source_fields, cc, nullptr);
    const std::string version = compile::nvrtc_version_key();
    const PlanNote::NotedValues noted(values.begin(), values.end());
    const std::string text = format_plan_note({id->lines, version, arch}, noted, keys, aliases);
    return !name.empty() && !text.empty() && cache::process_cache()->write_note(name, text);
}

}  // namespace kjit::jit::kernels

// Plan notes: what a kernel's first call learns by checking the kernel and generating its code
// (the launch shape of its variants, their entry point names, the cache key of each variant's
// program), noted in the kernel cache under a name made from what the code is generated from (the
// kernel's strings, the dtype binding), the GPU, KJIT_ARCH and kjit's own build. A fresh process
// whose first call finds the note loads the cached program by its key at once: no check, no code
// generation, no source to hash. On the H200 host that was most of a fresh process's first cached
// call (docs/PERFORMANCE.md).
//
// What keys the noted programs (NVRTC's version and the target) is in the note, with the identity
// of NVRTC's file (jit/nvrtc_identity.hpp): a process that has not loaded NVRTC checks that
// identity with one `stat` and reads no other file to trust the note's keys.
//
// A note is a shortcut, never the only truth: a note that is missing, damaged (it carries its own
// checksum, cache/disk_store.hpp), made under another NVRTC, or naming an entry that no cache
// layer has sends the call the long way, which notes what it found. kjit's build is part of the
// name because a note records what this kjit's code generator made: another build may generate
// other code for the same strings.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/disk_store.hpp"
#include "cache/entry.hpp"
#include "runtime/detail/module.hpp"

namespace kjit::jit {

// What a note's programs were keyed under: NVRTC's identity lines (nvrtc_identity_lines), its
// version key and the target ("sm_90"). Views: of the note's text when read, of the process's
// keying when written.
struct NoteKeying {
    std::string_view nvrtc_lines;
    std::string_view nvrtc_version;
    std::string_view target;
};

class PlanNote {
public:
    // (name, value) pairs in the order noted: a handful, so a flat list (a fresh process's first
    // call reads them, where every map node allocated and every piece of code touched counts).
    // As the long way learns them, and as a note read holds them: views of its text, which the
    // PlanNote keeps (a fresh process's first call then allocates no string per line).
    using Values = std::vector<std::pair<std::string, std::string>>;
    using NotedValues = std::vector<std::pair<std::string_view, std::string_view>>;

    // The note of the programs generated from `source_fields` (each string that decides the
    // generated code, `kind` first: "elementwise", the strings, the binding...) for a GPU of
    // compute capability `device_cc`, with `groups` programs (a launch loads one group). Reads
    // the note, and takes it when it still keys this process's programs. `spec_json` makes the
    // manifest entry a hit records under KJIT_CACHE_RECORD.
    PlanNote(std::span<const std::string_view> source_fields, int device_cc, std::size_t groups,
             std::function<std::string()> spec_json);

    // The plan's values as noted, when a note was found; null otherwise.
    const NotedValues* noted_values() const { return noted_ ? &noted_values_ : nullptr; }
    // What the long way learnt: noted with the keys of the groups loaded from now on.
    void set_values(Values values) {
        values_ = std::move(values);
        noted_ = false;
    }

    // Group g's module, loaded from the entry the note names; null when the note has no key for
    // it or no cache layer has that entry with a cubin for this GPU.
    std::shared_ptr<kjit::detail::LoadedModule> find(std::size_t g, int ordinal);
    // Group g was loaded the long way from the cache entry `entry` (a cubin for this GPU):
    // noted, with every key known, when the plan's values are known. A failed write is only a
    // lost shortcut.
    void loaded(std::size_t g, const cache::Entry& entry);

private:
    bool still_keys(const NoteKeying& keying) const;
    void write();

    int device_cc_;
    std::function<std::string()> spec_json_;
    std::string name_;
    std::string target_;
    bool noted_ = false;
    cache::DiskStore::Note note_;  // the note read, whose text noted_values_ views
    NotedValues noted_values_;
    std::optional<Values> values_;
    std::vector<std::string> keys_;  // per group, empty when not known
};

// The note's text and back: "kjit-plan-note 4", NVRTC's identity lines as they are, then
// "version_key=<key>" and "target=<arch>", then "value.<name>=<value>" lines, then
// "key.<group>=<key>" lines. A text that is not exactly that reads as no note; a keying or value
// that cannot be written so makes no text. What parsing gives views `text`. Exposed for tests.
std::string format_plan_note(const NoteKeying& keying, const PlanNote::NotedValues& values, const std::vector<std::string>& keys);
bool parse_plan_note(std::string_view text, std::size_t groups, NoteKeying& keying, PlanNote::NotedValues& values,
                     std::vector<std::string>& keys);
// The value named `prefix` + `name` in `values`, or null.
const std::string_view* find_value(const PlanNote::NotedValues& values, std::string_view name, std::string_view prefix = {});
// The value named `name` read as a whole decimal number into `out`: false when it is missing,
// not exactly a number, or outside [low, high].
bool find_number(const PlanNote::NotedValues& values, std::string_view name, int& out, int low, int high);

}  // namespace kjit::jit

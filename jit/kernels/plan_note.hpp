// Plan notes: what a kernel's first call learns by checking the kernel and generating its code
// (the launch shape of its variants, their entry point names, the cache key and the alias key of
// each variant's program), noted in the kernel cache under a name made from what the code is
// generated from (the kernel's strings, the dtype binding), the GPU, KJIT_ARCH and kjit's source
// identity (jit/compile/source_identity.hpp). A fresh process whose first call finds the note loads the
// cached program at once: no check, no code generation, no source to hash. On the H200 host that
// was most of a fresh process's first cached call (docs/PERFORMANCE.md).
//
// What keys the noted programs (NVRTC's version and the target) is in the note, with the identity
// of NVRTC's file (jit/compile/nvrtc_identity.hpp). A process uses the noted keys when its NVRTC is the
// noted one: loaded with that version, or not loaded and the noted file and environment unchanged
// (one `stat`), or not loaded and the identity recorded beside the writable folder giving that
// version. A process that has not loaded NVRTC and knows of no NVRTC (none recorded, the noted one
// changed or gone: a shipped read-only cache) uses the noted alias keys instead, which do not
// depend on NVRTC, with the check the long way makes of an entry found by alias (the entry must be
// this kernel's, for this binding and target: cache/kernel_cache.hpp). The note's values depend
// only on what names it, so they hold either way. Any other process takes the long way.
//
// A note is a shortcut, never the only truth: a note that is missing, damaged (it carries its own
// checksum, cache/disk_store.hpp), made under another NVRTC that this process would use, or naming
// an entry that no cache layer has (or another kernel's, by alias) sends the call the long way,
// which notes what it found. kjit's source identity is part of the name because a note records
// what this kjit's code generator made: other sources may generate other code for the same strings.
//
// `kjit precompile` writes notes too (write_plan_note), one per device architecture it compiles
// for, so that a shipped read-only cache has them.
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
#include "kjit/dtype.hpp"
#include "runtime/detail/module.hpp"

namespace kjit::jit::compile {
struct CachedProgram;  // jit/compile/program_store.hpp
}  // namespace kjit::jit::compile

namespace kjit::jit::kernels {

struct ModuleVariant;  // jit/kernels/elementwise/calls.hpp

// What a kernel's generated code for one binding depends on, as a note's name takes it: the
// kernel's own strings (`strings`, its kind first), its NVRTC options, the binding and the module
// variant. Views of the kernel's strings and of this object's own: it must outlive them and not move.
struct NoteFields {
    std::string options, binding, scalar, storage;
    std::vector<std::string_view> fields;

    NoteFields(std::initializer_list<std::string_view> strings, const std::vector<std::string>& nvrtc_options,
               const TypeBinding& types, const ModuleVariant& variant);
    NoteFields(const NoteFields&) = delete;
    NoteFields& operator=(const NoteFields&) = delete;
};

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
    // `kernel_name` and `types` ("T=float32") are what an entry found by a noted alias must be.
    PlanNote(std::span<const std::string_view> source_fields, int device_cc, std::size_t groups,
             std::function<std::string()> spec_json, std::string kernel_name, std::string types);

    // The plan's values as noted, when a note was found; null otherwise.
    const NotedValues* noted_values() const { return noted_ ? &noted_values_ : nullptr; }
    // What the long way learnt: noted with the keys of the groups loaded from now on.
    void set_values(Values values) {
        values_ = std::move(values);
        noted_ = false;
    }

    // Group g's module, loaded from the entry the note names (by key, or by alias in a process
    // without NVRTC); null when the note names none for it or no cache layer has that entry
    // (this kernel's, by alias) with a cubin for this GPU.
    std::shared_ptr<kjit::detail::LoadedModule> find(std::size_t g, int ordinal);
    // Group g was loaded the long way from the cache entry `entry` (a cubin for this GPU), made
    // from `program` (whose alias key is noted too): noted, with every key known, when the
    // plan's values are known. A failed write is only a lost shortcut.
    void loaded(std::size_t g, const cache::Entry& entry, const compile::CachedProgram& program);

private:
    // How a note read is used: not at all, by its keys, or by its aliases.
    enum class Use { none, keys, aliases };
    Use use_of(const NoteKeying& keying) const;
    void write();

    int device_cc_;
    std::function<std::string()> spec_json_;
    std::string kernel_name_, types_;
    Use use_ = Use::none;
    std::string name_;
    std::string target_;
    bool noted_ = false;
    cache::DiskStore::Note note_;  // the note read, whose text noted_values_ views
    NotedValues noted_values_;
    std::optional<Values> values_;
    std::vector<std::string> keys_;     // per group, empty when not known (or not usable here)
    std::vector<std::string> aliases_;  // per group, empty when not known
};

// The note `kjit precompile` writes for the programs generated from `source_fields` (as PlanNote
// takes them) and compiled for `arch` ("sm_90") by the NVRTC this process has loaded: the note a
// process on a GPU of that architecture, without KJIT_ARCH, reads. `keys` and `aliases` per group
// (empty: none). Written to the writable folder; false when nothing was written (no NVRTC loaded,
// an architecture a GPU does not report as its own, no writable folder, values that cannot be
// noted).
bool write_plan_note(std::span<const std::string_view> source_fields, const std::string& arch, const PlanNote::Values& values,
                     const std::vector<std::string>& keys, const std::vector<std::string>& aliases);

// The note's text and back: "kjit-plan-note 5", NVRTC's identity lines as they are, then
// "version_key=<key>" and "target=<arch>", then "value.<name>=<value>" lines, then
// "key.<group>=<key>" and "alias.<group>=<alias key>" lines. A text that is not exactly that
// (an older format among them) reads as no note; a keying or value that cannot be written so
// makes no text. What parsing gives views `text`. Exposed for tests.
std::string format_plan_note(const NoteKeying& keying, const PlanNote::NotedValues& values, const std::vector<std::string>& keys,
                             const std::vector<std::string>& aliases);
bool parse_plan_note(std::string_view text, std::size_t groups, NoteKeying& keying, PlanNote::NotedValues& values,
                     std::vector<std::string>& keys, std::vector<std::string>& aliases);
// The value named `prefix` + `name` in `values`, or null.
const std::string_view* find_value(const PlanNote::NotedValues& values, std::string_view name, std::string_view prefix = {});
// The value named `name` read as a whole decimal number into `out`: false when it is missing,
// not exactly a number, or outside [low, high].
bool find_number(const PlanNote::NotedValues& values, std::string_view name, int& out, int low, int high);

}  // namespace kjit::jit::kernels

// Plan notes: what a kernel's first call learns by checking the kernel and generating its code
// (the launch shape of its variants, their entry point names, the cache key of each variant's
// program), noted in the kernel cache under a name made from what the code is generated from (the
// kernel's strings, the dtype binding), kjit's own build and what keys programs (the target and
// NVRTC's version). A fresh process whose first call finds the note loads the cached program by
// its key at once: no check, no code generation, no source to hash. On the H200 host that was
// most of a fresh process's first cached call (docs/PERFORMANCE.md).
//
// A note is a shortcut, never the only truth: a note that is missing, damaged (it carries its own
// checksum, cache/disk_store.hpp) or names an entry that no cache layer has sends the call the long
// way, which notes what it found. kjit's build is part of the name because a note records what
// this kjit's code generator made: another build may generate other code for the same strings.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/detail/module.hpp"

namespace kjit::jit {

class PlanNote {
public:
    // (name, value) pairs in the order noted: a handful, so a flat list (a fresh process's first
    // call reads them, where every map node allocated and every piece of code touched counts).
    using Values = std::vector<std::pair<std::string, std::string>>;

    // The note of the programs generated from `source_fields` (each string that decides the
    // generated code, `kind` first: "elementwise", the strings, the binding...) for a GPU of
    // compute capability `device_cc`, with `groups` programs (a launch loads one group). Reads
    // the note when it can already be named (NVRTC loaded, or its identity recorded). `spec_json`
    // makes the manifest entry a hit records under KJIT_CACHE_RECORD.
    PlanNote(std::vector<std::string> source_fields, int device_cc, std::size_t groups,
             std::function<std::string()> spec_json);

    // The plan's values as noted, when a note was found; null otherwise.
    const Values* noted_values() const { return noted_ ? &*values_ : nullptr; }
    // What the long way learnt: noted with the keys of the groups loaded from now on.
    void set_values(Values values) {
        values_ = std::move(values);
        noted_ = false;
    }

    // Group g's module, loaded from the entry the note names; null when the note has no key for
    // it or no cache layer has that entry with a cubin for this GPU.
    std::shared_ptr<kjit::detail::LoadedModule> find(std::size_t g, int ordinal);
    // Group g was loaded the long way from the cache entry `key` (a cubin for this GPU): noted,
    // with every key known, when the plan's values are known. A failed write is only a lost
    // shortcut.
    void loaded(std::size_t g, const std::string& key);

private:
    std::string name();  // empty when it cannot be named (yet)

    std::vector<std::string> source_fields_;
    int device_cc_;
    std::function<std::string()> spec_json_;
    std::string name_;
    std::string target_;
    bool noted_ = false;
    std::optional<Values> values_;
    std::vector<std::string> keys_;  // per group, empty when not known
};

// The note's text and back: "kjit-plan-note 1", then "value.<name>=<value>" lines, then
// "key.<group>=<key>" lines. A text that is not exactly that reads as no note. Exposed for tests.
std::string format_plan_note(const PlanNote::Values& values, const std::vector<std::string>& keys);
bool parse_plan_note(const std::string& text, std::size_t groups, PlanNote::Values& values, std::vector<std::string>& keys);
// The value named `prefix` + `name` in `values`, or null.
const std::string* find_value(const PlanNote::Values& values, std::string_view name, std::string_view prefix = {});

}  // namespace kjit::jit

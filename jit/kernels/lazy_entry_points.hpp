// The modules of a generated source's entry points, compiled (or found in a kernel cache) and
// loaded on one device the first time a call needs them: the entry points are grouped (a group is
// what one launch needs: one kernel, or a kernel and its finishing kernel), and each group is its
// own program, so a call pays NVRTC for what it launches only (jit/codegen/entry_points.hpp says why).
#pragma once

#include <array>
#include <functional>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cuda.h>

#include "jit/kernels/entry_groups.hpp"
#include "jit/codegen/entry_points.hpp"
#include "jit/kernels/plan_note.hpp"
#include "jit/compile/program_store.hpp"

namespace kjit::jit::kernels {

// The program of the entry points `keep` of `whole`, whose source ends with `lines`. Its source
// is its cache key, so each group is its own cache entry.
compile::CachedProgram program_with_entries(const compile::CachedProgram& whole, const codegen::EntryLines& lines, const std::vector<std::string>& keep);

// What compiling one or more programs gave.
struct CompiledModules {
    std::string arch;        // what they were built for ("sm_90")
    double compile_ms = 0;   // NVRTC's milliseconds (0 when a cache had every one)
    std::string key;         // one program's: its entry's key and its alias key (plan notes)
    std::string alias;
};

class LazyEntryPoints {
public:
    static constexpr std::size_t kMaxGroups = EntryGroups::kMaxGroups;
    static constexpr std::size_t kMaxPerGroup = EntryGroups::kMaxPerGroup;
    // `groups[g]`: the entry point names of group g (at most kMaxPerGroup; an empty group cannot
    // be loaded: the generator made no such entry point).
    LazyEntryPoints(compile::CachedProgram whole, codegen::EntryLines lines, std::vector<std::vector<std::string>> groups, int ordinal,
                    std::shared_ptr<PlanNote> note = nullptr);
    // The same with each group's program made by `program_of(g)` (a generator that writes a
    // group's program on its own rather than cutting it out of the whole); `description` names
    // the kernel in errors.
    // With `note` (jit/kernels/plan_note.hpp), a group the note knows is loaded from the cache entry it
    // names, without making its program; a group loaded the long way is noted.
    LazyEntryPoints(std::function<compile::CachedProgram(std::size_t)> program_of, EntryGroups groups, std::string description,
                    int ordinal, std::shared_ptr<PlanNote> note = nullptr);

    // Group g's kernels on the device, in the group's order: compiled or found and loaded on the
    // first request (concurrent first requests load once), then one atomic load.
    const std::array<CUfunction, kMaxPerGroup>& group(std::size_t g);

    // Every group there is, compiled or found and loaded now (ElementwiseKernel::prepare): a later
    // call then loads nothing, whatever variant it picks.
    void load_all();

private:
    const std::function<compile::CachedProgram(std::size_t)> program_of_;
    const EntryGroups groups_;
    const std::string description_;
    const int ordinal_;
    const std::shared_ptr<PlanNote> note_;  // used under mutex_
    std::mutex mutex_;
    std::array<std::atomic<bool>, kMaxGroups> ready_{};
    std::array<std::array<CUfunction, kMaxPerGroup>, kMaxGroups> functions_{};
    std::array<std::shared_ptr<kjit::detail::LoadedModule>, kMaxGroups> modules_{};
};

}  // namespace kjit::jit::kernels

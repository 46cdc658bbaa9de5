// A reduction's strategies as separate modules (jit/reduction_calls.hpp): which entry points form
// each group, each group's program, and the loader that compiles (or finds) and loads a group the
// first time a call on a device needs it.
#include <array>
#include <atomic>
#include <mutex>

#include "jit/reduction_calls.hpp"
#include "kjit/error.hpp"

namespace kjit::jit {

std::vector<std::string> reduction_group_entries(const GeneratedReduction& g, ReductionEntryGroup group, bool index64) {
    auto pick = [index64](const std::string& narrow, const std::string& wide) { return index64 ? wide : narrow; };
    switch (group) {
        case ReductionEntryGroup::full: return {pick(g.full32, g.full64)};
        case ReductionEntryGroup::rows_warp: return {pick(g.rows_warp32, g.rows_warp64)};
        case ReductionEntryGroup::rows_block: return {pick(g.rows_block32, g.rows_block64)};
        case ReductionEntryGroup::columns: return {pick(g.columns32, g.columns64)};
        case ReductionEntryGroup::columns_split:
            return {pick(g.columns_split32, g.columns_split64), pick(g.columns_finish32, g.columns_finish64)};
        case ReductionEntryGroup::segments_warp: return {pick(g.segments_warp32, g.segments_warp64)};
        case ReductionEntryGroup::segments_block: return {pick(g.segments_block32, g.segments_block64)};
    }
    throw Error("unknown reduction entry group");
}

std::string reduction_group_label(ReductionEntryGroup group, bool index64) {
    static const char* const names[] = {"full", "rows_warp", "rows_block", "columns", "columns_split", "segments_warp",
                                        "segments_block"};
    return std::string(names[static_cast<int>(group)]) + (index64 ? "64" : "32");
}

CachedProgram reduction_group_program(const CachedProgram& whole, const GeneratedReduction& g, ReductionEntryGroup group,
                                      bool index64) {
    CachedProgram p = whole;
    p.request.source = source_with_entries(g, reduction_group_entries(g, group, index64));
    // key_source stays empty: the group's own source is its key, so each group is its own entry.
    return p;
}

class ReductionGroupLoader {
public:
    ReductionGroupLoader(CachedProgram whole, GeneratedReduction g, int ordinal)
        : whole_(std::move(whole)), generated_(std::move(g)), ordinal_(ordinal) {}

    ReductionEntries entries(ReductionEntryGroup group, bool index64) {
        const std::size_t slot = static_cast<std::size_t>(group) * 2 + (index64 ? 1 : 0);
        if (ready_[slot].load(std::memory_order_acquire)) return loaded_[slot];
        // One loader at a time per kernel and device: concurrent first calls of one group compile
        // it once (the kernel cache would too; this also keeps `modules_` simple).
        std::lock_guard lock(mutex_);
        if (ready_[slot].load(std::memory_order_relaxed)) return loaded_[slot];
        CachedProgram program = reduction_group_program(whole_, generated_, group, index64);
        const LoadedProgram loaded = load_program(program, ordinal_);
        const std::vector<std::string> names = reduction_group_entries(generated_, group, index64);
        ReductionEntries e;
        e.main = loaded.module->function(names[0]);
        if (names.size() > 1) e.finish = loaded.module->function(names[1]);
        modules_[slot] = loaded.module;
        loaded_[slot] = e;
        ready_[slot].store(true, std::memory_order_release);
        return e;
    }

private:
    static constexpr std::size_t kSlots = kReductionEntryGroups * 2;
    const CachedProgram whole_;
    const GeneratedReduction generated_;
    const int ordinal_;
    std::mutex mutex_;
    std::array<std::atomic<bool>, kSlots> ready_{};
    std::array<ReductionEntries, kSlots> loaded_{};
    std::array<std::shared_ptr<detail::LoadedModule>, kSlots> modules_{};
};

std::shared_ptr<ReductionGroupLoader> make_reduction_group_loader(CachedProgram whole, GeneratedReduction g, int ordinal) {
    return std::make_shared<ReductionGroupLoader>(std::move(whole), std::move(g), ordinal);
}

ReductionEntries ReductionModule::entries(ReductionEntryGroup group, bool index64) const {
    if (!loader) throw Error("reduction module used before it was made");
    return loader->entries(group, index64);
}

}  // namespace kjit::jit

// A reduction's strategies as separate modules (jit/kernels/reduction/calls.hpp): which entry points form
// each group, each group's program, and the loader that compiles (or finds) and loads a group the
// first time a call on a device needs it.
#include "jit/kernels/reduction/calls.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::kernels {

std::vector<std::string> reduction_group_entries(const codegen::GeneratedReduction& g, ReductionEntryGroup group, bool index64) {
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
        case ReductionEntryGroup::small:
            if (index64) return {};
            return {g.small32};
        case ReductionEntryGroup::bins:
            if (!index64) return {};
            return {g.bins64, g.bins_finish64};
    }
    throw Error("unknown reduction entry group");
}

std::string reduction_group_label(ReductionEntryGroup group, bool index64) {
    static const char* const names[] = {"full", "rows_warp", "rows_block", "columns", "columns_split", "segments_warp",
                                        "segments_block", "small", "bins"};
    return std::string(names[static_cast<int>(group)]) + (index64 ? "64" : "32");
}

compile::CachedProgram reduction_group_program(const compile::CachedProgram& whole, const codegen::GeneratedReduction& g, ReductionEntryGroup group,
                                      bool index64) {
    return program_with_entries(whole, g.entry_lines, reduction_group_entries(g, group, index64));
}

namespace {
std::size_t slot_of(ReductionEntryGroup group, bool index64) { return static_cast<std::size_t>(group) * 2 + (index64 ? 1 : 0); }
}  // namespace

std::vector<std::vector<std::string>> reduction_groups(const codegen::GeneratedReduction& g) {
    std::vector<std::vector<std::string>> groups(kReductionEntryGroups * 2);
    for (int k = 0; k < kReductionEntryGroups; ++k)
        for (const bool index64 : {false, true})
            groups[slot_of(static_cast<ReductionEntryGroup>(k), index64)] =
                reduction_group_entries(g, static_cast<ReductionEntryGroup>(k), index64);
    return groups;
}

std::shared_ptr<LazyEntryPoints> make_reduction_group_loader(compile::CachedProgram whole, codegen::GeneratedReduction g, int ordinal,
                                                             std::shared_ptr<PlanNote> note) {
    std::vector<std::vector<std::string>> groups = reduction_groups(g);
    return std::make_shared<LazyEntryPoints>(std::move(whole), std::move(g.entry_lines), std::move(groups), ordinal,
                                             std::move(note));
}

ReductionEntries ReductionModule::entries(ReductionEntryGroup group, bool index64) const {
    if (!loader) throw Error("reduction module used before it was made");
    const auto& f = loader->group(slot_of(group, index64));
    return {f[0], f[1]};
}

}  // namespace kjit::jit::kernels

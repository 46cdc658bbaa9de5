#include "jit/kernels/reduction/note.hpp"


#include "kjit/elementwise_kernel.hpp"

namespace kjit::jit::kernels {
namespace {

// The note's name of group slot s's k-th entry: "full32.0", "columns_split64.1"...
std::string entry_label(std::size_t slot, std::size_t k) {
    return reduction_group_label(static_cast<ReductionEntryGroup>(slot / 2), slot % 2 == 1) + "." + std::to_string(k);
}

// How many entries each slot's group has (reduction_group_entries).
std::size_t entries_in(std::size_t slot) {
    const auto group = static_cast<ReductionEntryGroup>(slot / 2);
    if (!reduction_group_exists(group, slot % 2 == 1)) return 0;
    return reduction_group_has_finish(group) ? 2 : 1;
}

constexpr std::size_t kSlots = static_cast<std::size_t>(kReductionEntryGroups) * 2;
constexpr std::size_t kFacts = 5;  // the values before the entries

}  // namespace

NoteFields reduction_note_fields(const ReductionKernel& k, const TypeBinding& types, const ModuleVariant& variant) {
    return {{"reduction", k.name(), k.in_params(), k.out_params(), k.map_expr(), k.reduce_expr(), k.post_map_expr(), k.identity(),
             k.options().preamble, k.options().reduce_type},
            k.options().nvrtc_options, types, variant};
}

PlanNote::Values reduction_note_values(const ReductionModule& m, const std::vector<std::vector<std::string>>& groups) {
    PlanNote::Values values{{"reduce_itemsize", std::to_string(m.reduce_itemsize)},
                            {"has_identity", m.has_identity ? "1" : "0"},
                            {"array_inputs", std::to_string(m.array_inputs)},
                            {"outputs", std::to_string(m.outputs)},
                            {"vector_width", std::to_string(m.vector_width)}};
    for (std::size_t s = 0; s < groups.size(); ++s)
        for (std::size_t k = 0; k < groups[s].size(); ++k) values.emplace_back("entry." + entry_label(s, k), groups[s][k]);
    return values;
}

bool reduction_from_note(const PlanNote::NotedValues& values, ReductionModule& m, EntryGroups& groups) {
    int itemsize = 0, identity = 0;
    if (!find_number(values, "reduce_itemsize", itemsize, 1, 1024) || !find_number(values, "has_identity", identity, 0, 1) ||
        !find_number(values, "array_inputs", m.array_inputs, 0, 64) || !find_number(values, "outputs", m.outputs, 1, 64) ||
        !find_number(values, "vector_width", m.vector_width, 1, 16))
        return false;
    m.reduce_itemsize = static_cast<std::size_t>(itemsize);
    m.has_identity = identity == 1;
    // Every group of every strategy, each with its entries, and nothing else.
    groups = EntryGroups(kSlots);
    std::size_t entries = 0;
    for (std::size_t s = 0; s < kSlots; ++s)
        for (std::size_t k = 0; k < entries_in(s); ++k) {
            const std::string_view* name = find_value(values, entry_label(s, k), "entry.");
            if (name == nullptr || name->empty() || name->find('\0') != std::string_view::npos) return false;
            groups.add(s, *name);
            ++entries;
        }
    return entries + kFacts == values.size();
}

}  // namespace kjit::jit::kernels

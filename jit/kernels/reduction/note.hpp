// Plan notes for reductions (jit/kernels/plan_note.hpp): what a ReductionKernel's module for one binding
// depends on, and what its first call learns by checking the kernel and generating its code (the
// facts the launcher uses, the entry point names of each strategy's group), so that a fresh
// process's first call of a cached reduction loads it with no check and no code generation, as
// an elementwise kernel's does. kjit::sum, prod, mean, min and max are such string reductions
// (jit/kernels/ops/reductions.cpp) and are noted too; argmin and argmax have a generator of their own and
// no notes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "jit/kernels/entry_groups.hpp"
#include "jit/kernels/plan_note.hpp"
#include "jit/kernels/reduction/calls.hpp"
#include "kjit/reduction_kernel.hpp"

namespace kjit::jit::kernels {

// What the generated code of `kernel` for this binding and variant depends on, for its note.
NoteFields reduction_note_fields(const ReductionKernel& kernel, const TypeBinding& types, const ModuleVariant& variant);

// A module's facts and its groups' entry names (one group per strategy and index width, as
// make_reduction_group_loader numbers them) as a note holds them, and back: false when the
// values are not exactly such a plan.
PlanNote::Values reduction_note_values(const ReductionModule& m, const std::vector<std::vector<std::string>>& groups);
bool reduction_from_note(const PlanNote::NotedValues& values, ReductionModule& m, EntryGroups& groups);

}  // namespace kjit::jit::kernels

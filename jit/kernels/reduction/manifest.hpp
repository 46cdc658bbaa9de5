// A manifest entry of "kind": "reduction" (DESIGN.md's format, and what ReductionKernel::compile
// records under KJIT_CACHE_RECORD) as a ReductionKernel and its type bindings: what `kjit
// precompile` compiles and what `--spec FILE.json` names for a reduction.
#pragma once

#include <nlohmann/json.hpp>

#include "jit/kernels/manifest_fields.hpp"
#include "kjit/reduction_kernel.hpp"

namespace kjit::jit::kernels {

using ManifestReduction = ManifestEntry<ReductionKernel>;

// Whether the entry is a reduction ("kind": "reduction").
bool is_reduction_manifest_entry(const nlohmann::json& entry);

// Reads one reduction entry: "map", "reduce", "post" (required), "name" (default "reduce"), "in",
// "out", "identity" (absent or empty: none), "reduce_type", "preamble", "options", "types",
// "scalars", "storage". Throws CacheError naming the field that is malformed, or saying that the
// entry is not a reduction.
ManifestReduction reduction_from_manifest_entry(const nlohmann::json& entry);

}  // namespace kjit::jit::kernels

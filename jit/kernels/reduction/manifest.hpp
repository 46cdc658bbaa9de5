// A manifest entry of "kind": "reduction" (DESIGN.md's format, and what ReductionKernel::compile
// records under KJIT_CACHE_RECORD) as a ReductionKernel and its type bindings: what `kjit
// precompile` compiles and what `--spec FILE.json` names for a reduction.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jit/kernels/reduction/calls.hpp"
#include "kjit/reduction_kernel.hpp"

namespace kjit::jit::kernels {

struct ManifestReduction {
    ReductionKernel kernel;
    std::vector<TypeBinding> bindings;  // the entry's "types"; empty when it has none
    // How calls passed the arguments, as for elementwise entries: another module than the plain
    // binding's (manifest_reduction_variant).
    std::vector<std::string> scalars;
    std::map<std::string, DType> storage;
};

// Whether the entry is a reduction ("kind": "reduction").
bool is_reduction_manifest_entry(const nlohmann::json& entry);

// Reads one reduction entry: "map", "reduce", "post" (required), "name" (default "reduce"), "in",
// "out", "identity" (absent or empty: none), "reduce_type", "preamble", "options", "types",
// "scalars", "storage". Throws CacheError naming the field that is malformed, or saying that the
// entry is not a reduction.
ManifestReduction reduction_from_manifest_entry(const nlohmann::json& entry);

// The module variant the entry's "scalars" and "storage" ask for (jit/kernels/reduction/calls.hpp).
ModuleVariant manifest_reduction_variant(const ManifestReduction& m);

}  // namespace kjit::jit::kernels

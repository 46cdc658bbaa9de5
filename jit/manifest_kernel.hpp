// A manifest entry (DESIGN.md's format) as a kernel and its type bindings: what `kjit precompile`
// compiles and what `--spec FILE.json` names.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "kjit/elementwise_kernel.hpp"

namespace kjit::jit {

struct ManifestKernel {
    ElementwiseKernel kernel;
    std::vector<TypeBinding> bindings;  // the entry's "types"; empty when it has none
};

// Reads one entry: "kind" (default "elementwise", the only kind so far), "name", "in", "out",
// "op", "preamble", "options", "types". Throws CacheError naming the field that is malformed.
ManifestKernel kernel_from_manifest_entry(const nlohmann::json& entry);

}  // namespace kjit::jit

// A manifest entry (DESIGN.md's format) as a kernel and its type bindings: what `kjit precompile`
// compiles and what `--spec FILE.json` names. Entries of "kind": "raw" are raw CUDA modules, read
// by raw_module_from_manifest_entry; entries of "kind": "reduction" are read by
// reduction_from_manifest_entry (jit/kernels/reduction/manifest.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include "jit/kernels/manifest_fields.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/raw_kernel.hpp"

namespace kjit::jit::kernels {

using ManifestKernel = ManifestEntry<ElementwiseKernel>;

// Reads one elementwise entry: "kind" (default "elementwise"), "name", "in", "out", "op",
// "preamble", "options", "types", "scalars", "storage". Throws CacheError naming the field that is
// malformed, or saying that a raw or reduction entry is not an elementwise kernel.
ManifestKernel kernel_from_manifest_entry(const nlohmann::json& entry);

// Whether the entry is a raw CUDA module ("kind": "raw").
bool is_raw_manifest_entry(const nlohmann::json& entry);

// Reads one raw entry: "source", and "name", "options", "name_expressions", "toolkit_headers", "headers", "arch" when
// present (what RawModule records). Throws CacheError naming the field that is malformed.
RawModule raw_module_from_manifest_entry(const nlohmann::json& entry);

}  // namespace kjit::jit::kernels

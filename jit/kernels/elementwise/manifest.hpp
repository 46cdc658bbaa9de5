// A manifest entry (DESIGN.md's format) as a kernel and its type bindings: what `kjit precompile`
// compiles and what `--spec FILE.json` names. Entries of "kind": "raw" are raw CUDA modules, read
// by raw_module_from_manifest_entry; entries of "kind": "reduction" are read by
// reduction_from_manifest_entry (jit/kernels/reduction/manifest.hpp).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jit/kernels/elementwise/calls.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/raw_kernel.hpp"

namespace kjit::jit::kernels {

struct ManifestKernel {
    ElementwiseKernel kernel;
    std::vector<TypeBinding> bindings;  // the entry's "types"; empty when it has none
    // How calls passed the arguments ("scalars": names passed as scalars, "storage": name -> dtype of
    // an array input converted on load): another module than the plain binding's.
    std::vector<std::string> scalars;
    std::map<std::string, DType> storage;
};

// Reads one elementwise entry: "kind" (default "elementwise"), "name", "in", "out", "op",
// "preamble", "options", "types", "scalars", "storage". Throws CacheError naming the field that is
// malformed, or saying that a raw or reduction entry is not an elementwise kernel.
ManifestKernel kernel_from_manifest_entry(const nlohmann::json& entry);

// Whether the entry is a raw CUDA module ("kind": "raw").
bool is_raw_manifest_entry(const nlohmann::json& entry);

// Reads one raw entry: "source", and "name", "options", "name_expressions", "toolkit_headers" when
// present (what RawModule records). Throws CacheError naming the field that is malformed.
RawModule raw_module_from_manifest_entry(const nlohmann::json& entry);

// The module variant the entry's "scalars" and "storage" name (the plain one when neither).
ModuleVariant manifest_kernel_variant(const ManifestKernel& m);

}  // namespace kjit::jit::kernels

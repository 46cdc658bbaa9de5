// A raw module's relocatable device code: whether its NVRTC options make it relocatable, and what
// it is linked with (RawModuleOptions::link), read for a compile and hashed for its cache key.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jit/compile/linker.hpp"
#include "kjit/raw_kernel.hpp"

namespace kjit::jit::kernels {

// Whether `options` ask NVRTC for relocatable device code: "-dc", "--device-c", "-rdc=true",
// "--relocatable-device-code=true", or "-rdc"/"--relocatable-device-code" followed by "true".
bool is_relocatable(const std::vector<std::string>& options);

// Checks the link inputs of a module (`label`) at its construction: each a path or bytes, never
// both nor neither, and only in a relocatable module. Throws Error saying which.
void check_link_inputs(const RawModuleOptions& options, const std::string& label);

// What the module is linked with: every input of `link`, files read now. Appends to `key` each
// input's name, kind and an XXH3-128 of its bytes. Throws IoError naming a file that cannot be read.
compile::LinkPlan link_plan(const std::vector<LinkInput>& link, std::string& key);

// The manifest's "link": a file input's path, an in-memory one as {"name", "kind"} (which a
// manifest cannot rebuild: raw_module_from_manifest_entry refuses it).
nlohmann::json link_inputs_json(const std::vector<LinkInput>& link);

// ImageKind's name in manifests: "cubin", "ptx", "fatbin", "ltoir".
const char* image_kind_key(ImageKind kind) noexcept;

}  // namespace kjit::jit::kernels

// Reading the fields of one manifest entry, shared by the readers of elementwise and reduction
// entries (jit/kernels/elementwise/manifest.cpp, jit/kernels/reduction/manifest.cpp), so that both say the same thing
// about the same mistake. Every error is a CacheError naming the field.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jit/kernels/elementwise/calls.hpp"
#include "kjit/elementwise_kernel.hpp"

namespace kjit::jit::kernels {

// The string at `key`; empty when absent and not required.
std::string manifest_text(const nlohmann::json& entry, const char* key, bool required);

// The list of strings at `key`; empty when absent.
std::vector<std::string> manifest_text_list(const nlohmann::json& entry, const char* key);

// "types": a list of objects such as {"T": "float32"}; empty when absent.
std::vector<TypeBinding> manifest_bindings(const nlohmann::json& entry);

// "storage": parameter name -> dtype of an array input converted on load; empty when absent.
std::map<std::string, DType> manifest_storage(const nlohmann::json& entry);

// The module variant an entry's "scalars" and "storage" describe, over the parameters of the
// kernel's lists `in` and `out`; a name that is not a parameter is a CacheError naming the kernel.
ModuleVariant manifest_variant(const std::string& in, const std::string& out, const std::string& kernel_name,
                               const std::vector<std::string>& scalars, const std::map<std::string, DType>& storage);

// The other way: the fields every kernel's entry has, for one binding, as KJIT_CACHE_RECORD writes
// them: "kind", "name", "in", "out", "preamble" and "options" when not empty, "types", and
// "scalars" / "storage" when a call passed scalars or converted inputs (another module, which a
// precompile must build too). The caller adds its kind's own fields.
nlohmann::json write_manifest_entry(const char* kind, const std::string& name, const std::string& in, const std::string& out,
                                    const std::string& preamble, const std::vector<std::string>& options,
                                    const TypeBinding& types, const ModuleVariant& variant);

}  // namespace kjit::jit::kernels

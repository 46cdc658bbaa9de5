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

// A kernel's manifest entry read back: the kernel (ElementwiseKernel, ReductionKernel), its
// bindings, and how calls passed the arguments ("scalars": names passed as scalars, "storage":
// name -> dtype of an array input converted on load): another module than the plain binding's.
template <class Kernel>
struct ManifestEntry {
    Kernel kernel;
    std::vector<TypeBinding> bindings;  // the entry's "types"; empty when it has none
    std::vector<std::string> scalars;
    std::map<std::string, DType> storage;

    // The module variant "scalars" and "storage" name (the plain one when neither).
    ModuleVariant variant() const { return manifest_variant(kernel.in_params(), kernel.out_params(), kernel.name(), scalars, storage); }
};

// The other way: the fields every kernel's entry has, for one binding, as KJIT_CACHE_RECORD writes
// them: "kind", "name", "in", "out", "preamble" and "options" when not empty, "types", and
// "scalars" / "storage" when a call passed scalars or converted inputs (another module, which a
// precompile must build too). The caller adds its kind's own fields.
nlohmann::json write_manifest_entry(const char* kind, const std::string& name, const std::string& in, const std::string& out,
                                    const std::string& preamble, const std::vector<std::string>& options,
                                    const TypeBinding& types, const ModuleVariant& variant);

}  // namespace kjit::jit::kernels

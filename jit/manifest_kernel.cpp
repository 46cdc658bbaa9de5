#include "jit/manifest_kernel.hpp"

#include "kjit/error.hpp"

namespace kjit::jit {
namespace {

std::string text_field(const nlohmann::json& e, const char* key, bool required) {
    if (!e.contains(key)) {
        if (required) throw CacheError(std::string("missing \"") + key + "\"");
        return {};
    }
    if (!e[key].is_string()) throw CacheError(std::string("\"") + key + "\" must be a string");
    return e[key].get<std::string>();
}

TypeBinding binding_of(const nlohmann::json& b) {
    if (!b.is_object()) throw CacheError("each \"types\" item must be an object such as {\"T\": \"float32\"}");
    TypeBinding t;
    for (const auto& [ph, name] : b.items()) {
        if (!name.is_string()) throw CacheError("the type of '" + ph + "' must be a string");
        t[ph] = DType::parse(name.get<std::string>());
    }
    return t;
}

}  // namespace

ManifestKernel kernel_from_manifest_entry(const nlohmann::json& e) {
    if (!e.is_object()) throw CacheError("a manifest entry must be a JSON object");
    const std::string kind = e.contains("kind") ? text_field(e, "kind", true) : "elementwise";
    if (kind != "elementwise") throw CacheError("kind \"" + kind + "\" is not supported by this kjit (only elementwise)");
    KernelOptions options;
    options.preamble = text_field(e, "preamble", false);
    if (e.contains("options")) {
        if (!e["options"].is_array()) throw CacheError("\"options\" must be a list of strings");
        for (const auto& o : e["options"]) {
            if (!o.is_string()) throw CacheError("\"options\" must be a list of strings");
            options.nvrtc_options.push_back(o.get<std::string>());
        }
    }
    const std::string name = e.contains("name") ? text_field(e, "name", true) : "kernel";
    ManifestKernel m{ElementwiseKernel(text_field(e, "in", false), text_field(e, "out", false), text_field(e, "op", true),
                                       name, options),
                     {}};
    if (e.contains("types")) {
        if (!e["types"].is_array()) throw CacheError("\"types\" must be a list of objects");
        for (const auto& b : e["types"]) m.bindings.push_back(binding_of(b));
    }
    return m;
}

}  // namespace kjit::jit

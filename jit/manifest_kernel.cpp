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

std::vector<std::string> text_list(const nlohmann::json& e, const char* key) {
    std::vector<std::string> list;
    if (!e.contains(key)) return list;
    const std::string error = std::string("\"") + key + "\" must be a list of strings";
    if (!e[key].is_array()) throw CacheError(error);
    for (const auto& item : e[key]) {
        if (!item.is_string()) throw CacheError(error);
        list.push_back(item.get<std::string>());
    }
    return list;
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
    if (kind == "raw") throw CacheError("a raw CUDA entry (\"kind\": \"raw\") is not an elementwise kernel");
    if (kind != "elementwise")
        throw CacheError("kind \"" + kind + "\" is not supported by this kjit (elementwise and raw)");
    KernelOptions options;
    options.preamble = text_field(e, "preamble", false);
    options.nvrtc_options = text_list(e, "options");
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

bool is_raw_manifest_entry(const nlohmann::json& e) {
    return e.is_object() && e.contains("kind") && e["kind"] == "raw";
}

RawModule raw_module_from_manifest_entry(const nlohmann::json& e) {
    if (!is_raw_manifest_entry(e)) throw CacheError("not a raw entry: \"kind\" must be \"raw\"");
    RawModuleOptions options;
    options.name = text_field(e, "name", false);
    options.nvrtc_options = text_list(e, "options");
    options.name_expressions = text_list(e, "name_expressions");
    if (e.contains("toolkit_headers")) {
        if (!e["toolkit_headers"].is_boolean()) throw CacheError("\"toolkit_headers\" must be true or false");
        options.toolkit_headers = e["toolkit_headers"].get<bool>();
    }
    try {
        return RawModule(text_field(e, "source", true), std::move(options));
    } catch (const CacheError&) {
        throw;
    } catch (const Error& ex) {
        throw CacheError(ex.what());
    }
}

}  // namespace kjit::jit

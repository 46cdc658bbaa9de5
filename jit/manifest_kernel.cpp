#include "jit/manifest_kernel.hpp"

#include "jit/elementwise_calls.hpp"
#include "jit/params.hpp"

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
                     {}, {}, {}};
    if (e.contains("types")) {
        if (!e["types"].is_array()) throw CacheError("\"types\" must be a list of objects");
        for (const auto& b : e["types"]) m.bindings.push_back(binding_of(b));
    }
    m.scalars = text_list(e, "scalars");
    if (e.contains("storage")) {
        if (!e["storage"].is_object()) throw CacheError("\"storage\" must be an object of parameter names to dtypes");
        for (const auto& [param, dtype] : e["storage"].items()) {
            if (!dtype.is_string()) throw CacheError("\"storage\": the dtype of '" + param + "' must be a string");
            DType t;
            if (!DType::try_parse(dtype.get<std::string>(), t))
                throw CacheError("\"storage\": '" + dtype.get<std::string>() + "' (for '" + param + "') is not a dtype");
            m.storage[param] = t;
        }
    }
    return m;
}

void compile_manifest_kernel(const ManifestKernel& m, const TypeBinding& binding, const std::string& arch) {
    if (m.scalars.empty() && m.storage.empty()) {
        (void)m.kernel.compile(binding, arch);
        return;
    }
    const std::vector<Param> params =
        parse_param_lists(SourceText{"in", m.kernel.in_params()}, SourceText{"out", m.kernel.out_params()});
    ModuleVariant v;
    v.scalar.assign(params.size(), false);
    v.storage.assign(params.size(), std::nullopt);
    auto index_of = [&](const std::string& name, const char* field) {
        for (std::size_t k = 0; k < params.size(); ++k)
            if (params[k].name == name) return k;
        throw CacheError(std::string("\"") + field + "\" names '" + name + "', which is not a parameter of kernel '" +
                         m.kernel.name() + "'");
    };
    for (const std::string& name : m.scalars) v.scalar[index_of(name, "scalars")] = true;
    for (const auto& [name, t] : m.storage) v.storage[index_of(name, "storage")] = t;
    (void)compile_elementwise(m.kernel, binding, v, arch);
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

#include "jit/kernels/manifest_fields.hpp"

#include "jit/frontend/params.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::kernels {

using namespace frontend;

namespace {

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

std::string manifest_text(const nlohmann::json& e, const char* key, bool required) {
    if (!e.contains(key)) {
        if (required) throw CacheError(std::string("missing \"") + key + "\"");
        return {};
    }
    if (!e[key].is_string()) throw CacheError(std::string("\"") + key + "\" must be a string");
    return e[key].get<std::string>();
}

std::vector<std::string> manifest_text_list(const nlohmann::json& e, const char* key) {
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

std::vector<TypeBinding> manifest_bindings(const nlohmann::json& e) {
    std::vector<TypeBinding> bindings;
    if (!e.contains("types")) return bindings;
    if (!e["types"].is_array()) throw CacheError("\"types\" must be a list of objects");
    for (const auto& b : e["types"]) bindings.push_back(binding_of(b));
    return bindings;
}

std::map<std::string, DType> manifest_storage(const nlohmann::json& e) {
    std::map<std::string, DType> storage;
    if (!e.contains("storage")) return storage;
    if (!e["storage"].is_object()) throw CacheError("\"storage\" must be an object of parameter names to dtypes");
    for (const auto& [param, dtype] : e["storage"].items()) {
        if (!dtype.is_string()) throw CacheError("\"storage\": the dtype of '" + param + "' must be a string");
        DType t;
        if (!DType::try_parse(dtype.get<std::string>(), t))
            throw CacheError("\"storage\": '" + dtype.get<std::string>() + "' (for '" + param + "') is not a dtype");
        storage[param] = t;
    }
    return storage;
}

ModuleVariant manifest_variant(const std::string& in, const std::string& out, const std::string& kernel_name,
                               const std::vector<std::string>& scalars, const std::map<std::string, DType>& storage) {
    const std::vector<Param> params = parse_param_lists(SourceText{"in", in}, SourceText{"out", out});
    ModuleVariant v;
    v.scalar.assign(params.size(), false);
    v.storage.assign(params.size(), std::nullopt);
    auto index_of = [&](const std::string& name, const char* field) {
        for (std::size_t k = 0; k < params.size(); ++k)
            if (params[k].name == name) return k;
        throw CacheError(std::string("\"") + field + "\" names '" + name + "', which is not a parameter of kernel '" + kernel_name + "'");
    };
    for (const std::string& name : scalars) v.scalar[index_of(name, "scalars")] = true;
    for (const auto& [name, t] : storage) v.storage[index_of(name, "storage")] = t;
    return v;
}

nlohmann::json write_manifest_entry(const char* kind, const std::string& name, const std::string& in, const std::string& out,
                                    const std::string& preamble, const std::vector<std::string>& options,
                                    const TypeBinding& types, const ModuleVariant& variant) {
    nlohmann::json e;
    e["kind"] = kind;
    e["name"] = name;
    e["in"] = in;
    e["out"] = out;
    if (!preamble.empty()) e["preamble"] = preamble;
    if (!options.empty()) e["options"] = options;
    nlohmann::json binding = nlohmann::json::object();
    for (const auto& [ph, t] : types) binding[ph] = std::string(t.name());
    e["types"] = nlohmann::json::array({binding});
    const std::vector<Param> params = parse_param_lists(SourceText{"in", in}, SourceText{"out", out});
    nlohmann::json scalars = nlohmann::json::array(), storage = nlohmann::json::object();
    for (std::size_t i = 0; i < params.size(); ++i) {
        if (i < variant.scalar.size() && variant.scalar[i]) scalars.push_back(params[i].name);
        if (i < variant.storage.size() && variant.storage[i]) storage[params[i].name] = std::string(variant.storage[i]->name());
    }
    if (!scalars.empty()) e["scalars"] = scalars;
    if (!storage.empty()) e["storage"] = storage;
    return e;
}

}  // namespace kjit::jit::kernels

#include "jit/manifest_fields.hpp"

#include "kjit/error.hpp"

namespace kjit::jit {
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

}  // namespace kjit::jit

#include "jit/kernels/elementwise/manifest.hpp"

#include "jit/kernels/elementwise/calls.hpp"
#include "jit/kernels/manifest_fields.hpp"
#include "jit/frontend/params.hpp"

#include "kjit/error.hpp"

namespace kjit::jit::kernels {

ManifestKernel kernel_from_manifest_entry(const nlohmann::json& e) {
    if (!e.is_object()) throw CacheError("a manifest entry must be a JSON object");
    const std::string kind = e.contains("kind") ? manifest_text(e, "kind", true) : "elementwise";
    if (kind == "raw") throw CacheError("a raw CUDA entry (\"kind\": \"raw\") is not an elementwise kernel");
    if (kind == "reduction")
        throw CacheError("a reduction entry (\"kind\": \"reduction\") is not an elementwise kernel");
    if (kind == "scan") throw CacheError("a scan entry (\"kind\": \"scan\") is not an elementwise kernel");
    if (kind != "elementwise")
        throw CacheError("kind \"" + kind + "\" is not supported by this kjit (elementwise, reduction, scan and raw)");
    KernelOptions options;
    options.preamble = manifest_text(e, "preamble", false);
    options.nvrtc_options = manifest_text_list(e, "options");
    options.loop_prep = manifest_text(e, "loop_prep", false);
    options.after_loop = manifest_text(e, "after_loop", false);
    const std::string name = e.contains("name") ? manifest_text(e, "name", true) : "kernel";
    ManifestKernel m{ElementwiseKernel(manifest_text(e, "in", false), manifest_text(e, "out", false),
                                       manifest_text(e, "op", true), name, options),
                     {}, {}, {}};
    m.bindings = manifest_bindings(e);
    m.scalars = manifest_text_list(e, "scalars");
    m.storage = manifest_storage(e);
    return m;
}

bool is_raw_manifest_entry(const nlohmann::json& e) {
    return e.is_object() && e.contains("kind") && e["kind"] == "raw";
}

RawModule raw_module_from_manifest_entry(const nlohmann::json& e) {
    if (!is_raw_manifest_entry(e)) throw CacheError("not a raw entry: \"kind\" must be \"raw\"");
    RawModuleOptions options;
    options.name = manifest_text(e, "name", false);
    options.nvrtc_options = manifest_text_list(e, "options");
    options.name_expressions = manifest_text_list(e, "name_expressions");
    if (e.contains("toolkit_headers")) {
        if (!e["toolkit_headers"].is_boolean()) throw CacheError("\"toolkit_headers\" must be true or false");
        options.toolkit_headers = e["toolkit_headers"].get<bool>();
    }
    if (e.contains("arch")) options.arch = manifest_text(e, "arch", false);
    if (e.contains("headers")) {
        const nlohmann::json& headers = e["headers"];
        if (!headers.is_array()) throw CacheError("\"headers\" must be a list of {\"name\": ..., \"text\": ...}");
        for (const nlohmann::json& h : headers) {
            if (!h.is_object() || !h.contains("name") || !h.contains("text") || !h["name"].is_string() || !h["text"].is_string() ||
                h.size() != 2)
                throw CacheError("each of \"headers\" must be {\"name\": string, \"text\": string}");
            options.headers.emplace_back(h["name"].get<std::string>(), h["text"].get<std::string>());
        }
    }
    if (e.contains("link")) {
        const nlohmann::json& link = e["link"];
        if (!link.is_array()) throw CacheError("\"link\" must be a list of file paths");
        for (const nlohmann::json& l : link) {
            if (l.is_object())
                throw CacheError("a \"link\" input given in memory (" + l.dump() +
                                 ") cannot be rebuilt from a manifest: give it to RawModuleOptions::link as a file");
            if (!l.is_string() || l.get<std::string>().empty()) throw CacheError("each of \"link\" must be a file path");
            options.link.push_back(LinkInput::file(l.get<std::string>()));
        }
    }
    try {
        return RawModule(manifest_text(e, "source", true), std::move(options));
    } catch (const CacheError&) {
        throw;
    } catch (const Error& ex) {
        throw CacheError(ex.what());
    }
}

}  // namespace kjit::jit::kernels

#include "jit/kernels/raw/link_inputs.hpp"

#include <filesystem>

#include <fmt/format.h>
#define XXH_INLINE_ALL  // header-only, as cache/cache_key.cpp uses it
#include <xxhash.h>

#include "kjit/error.hpp"

namespace kjit {

LinkInput LinkInput::file(std::string path) {
    LinkInput in;
    in.path = std::move(path);
    return in;
}

LinkInput LinkInput::image(std::vector<unsigned char> bytes, ImageKind kind, std::string name) {
    LinkInput in;
    in.bytes = std::move(bytes);
    in.kind = kind;
    in.name = std::move(name);
    return in;
}

}  // namespace kjit

namespace kjit::jit::kernels {
namespace {

compile::LinkKind link_kind(ImageKind kind) {
    switch (kind) {
        case ImageKind::cubin: return compile::LinkKind::cubin;
        case ImageKind::ptx: return compile::LinkKind::ptx;
        case ImageKind::fatbin: return compile::LinkKind::fatbin;
        case ImageKind::ltoir: return compile::LinkKind::ltoir;
    }
    return compile::LinkKind::cubin;
}

}  // namespace

bool is_relocatable(const std::vector<std::string>& options) {
    bool relocatable = false;
    for (std::size_t k = 0; k < options.size(); ++k) {
        const std::string& o = options[k];
        if (o == "-dc" || o == "--device-c") relocatable = true;
        for (const char* flag : {"-rdc", "--relocatable-device-code"}) {
            if (o == std::string(flag) + "=true") relocatable = true;
            if (o == std::string(flag) + "=false") relocatable = false;
            if (o == flag && k + 1 < options.size()) relocatable = options[k + 1] == "true";
        }
    }
    return relocatable;
}

void check_link_inputs(const RawModuleOptions& options, const std::string& label) {
    for (std::size_t k = 0; k < options.link.size(); ++k) {
        const LinkInput& in = options.link[k];
        if (in.path.empty() == in.bytes.empty())
            throw Error(fmt::format("raw module '{}': link input {} must name a file or hold bytes ({})", label, k + 1,
                                    in.path.empty() ? "it has neither" : "it has both"));
        if (in.path.find('\0') != std::string::npos || in.name.find('\0') != std::string::npos)
            throw Error(fmt::format("raw module '{}': the path or name of link input {} holds a NUL byte", label, k + 1));
    }
    if (!options.link.empty() && !is_relocatable(options.nvrtc_options))
        throw Error(fmt::format("raw module '{}' has link inputs but is not relocatable device code: add \"-rdc=true\" "
                                "(or \"-dc\") to RawModuleOptions::nvrtc_options",
                                label));
}

compile::LinkPlan link_plan(const std::vector<LinkInput>& link, std::string& key) {
    compile::LinkPlan plan;
    for (std::size_t k = 0; k < link.size(); ++k) {
        const LinkInput& in = link[k];
        compile::LinkData d;
        if (!in.path.empty()) {
            d = compile::read_link_file(in.path);
        } else {
            d.bytes = in.bytes;
            d.kind = link_kind(in.kind);
            d.name = fmt::format("link input {}", k + 1);
        }
        if (!in.name.empty()) d.name = in.name;
        const XXH128_hash_t h = XXH3_128bits(d.bytes.data(), d.bytes.size());
        key.append(1, '\0').append("link").append(1, '\0').append(d.name).append(1, '\0');
        key += fmt::format("{}:{:016x}{:016x}", compile::link_kind_name(d.kind), h.high64, h.low64);
        plan.inputs.push_back(std::move(d));
    }
    return plan;
}

const char* image_kind_key(ImageKind kind) noexcept {
    switch (kind) {
        case ImageKind::cubin: return "cubin";
        case ImageKind::ptx: return "ptx";
        case ImageKind::fatbin: return "fatbin";
        case ImageKind::ltoir: return "ltoir";
    }
    return "cubin";
}

nlohmann::json link_inputs_json(const std::vector<LinkInput>& link) {
    nlohmann::json list = nlohmann::json::array();
    for (const LinkInput& in : link) {
        if (!in.path.empty()) list.push_back(in.path);
        else list.push_back({{"name", in.name}, {"kind", image_kind_key(in.kind)}});
    }
    return list;
}

}  // namespace kjit::jit::kernels

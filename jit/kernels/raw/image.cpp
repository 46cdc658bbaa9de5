#include "jit/kernels/raw/image.hpp"

#include <cstring>

#include <fmt/format.h>
#define XXH_INLINE_ALL  // header-only, as cache/cache_key.cpp uses it
#include <xxhash.h>

#include "jit/compile/linker.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/capture.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit::jit::kernels {
namespace {

using compile::kFatbinMagic;
using compile::kLtoirMagic;

template <class T>
bool read_at(const std::vector<unsigned char>& b, std::size_t at, T& value) {
    if (at > b.size() || b.size() - at < sizeof(T)) return false;
    std::memcpy(&value, b.data() + at, sizeof(T));  // the formats are little-endian, as every CUDA host
    return true;
}

std::uint32_t magic_of(const std::vector<unsigned char>& b) {
    std::uint32_t m = 0;
    read_at(b, 0, m);
    return m;
}

std::string kind_name(ImageKind k) {
    switch (k) {
        case ImageKind::cubin: return "cubin";
        case ImageKind::ptx: return "PTX";
        case ImageKind::fatbin: return "fatbin";
        case ImageKind::ltoir: return "LTO-IR";
    }
    return "image";
}

// A cubin's architecture from its ELF header: e_flags holds the SM version, in bits 8-15 from
// ELF ABI version 8 (CUDA 12.8 on) and in bits 0-7 before.
std::string cubin_arch(const std::vector<unsigned char>& b, const std::string& origin) {
    std::uint32_t flags = 0;
    if (b.size() < 64 || b[4] != 2 || !read_at(b, 48, flags))
        throw Error(origin + " is not a 64-bit ELF cubin (its header is cut short or 32-bit)");
    const unsigned sm = b[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
    return sm == 0 ? std::string() : "sm_" + std::to_string(sm);
}

// "compute_90a" from PTX's `.target sm_90a[, ...]`.
std::string ptx_arch(std::string_view text, const std::string& origin) {
    const std::size_t at = text.find(".target");
    if (at == std::string_view::npos) throw Error(origin + " is not PTX: it has no .target directive");
    std::size_t i = at + 7;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    std::size_t end = i;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
    const std::string_view target = text.substr(i, end - i);
    if (!target.starts_with("sm_")) throw Error(fmt::format("{} is PTX for an unknown target '{}'", origin, target));
    return "compute_" + std::string(target.substr(3));
}

// Each entry of a fatbin: a header (kind 1 PTX, 2 ELF; its size; the payload's size; the SM
// version at byte 28), then the payload. Unknown kinds are skipped.
std::vector<std::string> fatbin_archs(const std::vector<unsigned char>& b, const std::string& origin) {
    std::uint16_t header_size = 0;
    std::uint64_t fat_size = 0;
    if (!read_at(b, 6, header_size) || !read_at(b, 8, fat_size) || header_size < 16 || fat_size > b.size() - header_size)
        throw Error(origin + " is not a fatbin: its header is cut short or larger than the file");
    std::vector<std::string> archs;
    std::size_t at = header_size;
    const std::size_t end = header_size + fat_size;
    while (at < end) {
        std::uint16_t kind = 0;
        std::uint32_t entry_header = 0, sm = 0;
        std::uint64_t payload = 0;
        if (!read_at(b, at, kind) || !read_at(b, at + 4, entry_header) || !read_at(b, at + 8, payload) ||
            !read_at(b, at + 28, sm) || entry_header < 32 || payload > end - at || entry_header > end - at - payload)
            throw Error(fmt::format("{} is not a well-formed fatbin: entry at byte {} runs past its end", origin, at));
        if (kind == 1) archs.push_back("compute_" + std::to_string(sm));
        if (kind == 2) archs.push_back("sm_" + std::to_string(sm));
        at += entry_header + payload;
    }
    return archs;
}

std::string list(const std::vector<std::string>& archs) {
    std::string s;
    for (const std::string& a : archs) s += (s.empty() ? "" : ", ") + a;
    return s.empty() ? "no code kjit can read" : s;
}

std::string device_text(int ordinal) {
    const int cc = detail::device_attributes(ordinal).compute_capability();
    return fmt::format("cuda:{} is sm_{} (compute capability {}.{})", ordinal, cc, cc / 10, cc % 10);
}

}  // namespace

ImageKind detect_image_kind(const std::vector<unsigned char>& bytes, const std::string& origin) {
    switch (compile::link_kind_of(bytes, origin)) {  // the linker reads inputs by the same first bytes
        case compile::LinkKind::cubin: return ImageKind::cubin;
        case compile::LinkKind::ptx: return ImageKind::ptx;
        case compile::LinkKind::ltoir: return ImageKind::ltoir;
        case compile::LinkKind::fatbin: return ImageKind::fatbin;
        case compile::LinkKind::library: break;
    }
    throw Error(origin + " is a library (.a), which is not a module: link it into a relocatable module "
                         "(RawModuleOptions::link)");
}

BinaryImage read_image(std::vector<unsigned char> bytes, ImageKind kind, std::string origin) {
    if (bytes.empty()) throw Error(origin + " is empty");
    BinaryImage image;
    image.kind = kind;
    image.origin = std::move(origin);
    const std::string as = fmt::format("{} is not a {}", image.origin, kind_name(kind));
    switch (kind) {
        case ImageKind::cubin: {
            if (bytes.size() < 4 || std::memcmp(bytes.data(), "\x7f" "ELF", 4) != 0) throw Error(as + ": it is not an ELF file");
            const std::string arch = cubin_arch(bytes, image.origin);
            if (!arch.empty()) image.archs.push_back(arch);
            break;
        }
        case ImageKind::ptx: {
            while (!bytes.empty() && bytes.back() == '\0') bytes.pop_back();
            const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
            if (text.find('\0') != std::string_view::npos) throw Error(as + ": it holds a NUL byte");
            image.archs.push_back(ptx_arch(text, image.origin));
            break;
        }
        case ImageKind::fatbin:
            if (magic_of(bytes) != kFatbinMagic) throw Error(as + ": it does not start with the fatbin magic number");
            image.archs = fatbin_archs(bytes, image.origin);
            break;
        case ImageKind::ltoir:
            if (magic_of(bytes) != kLtoirMagic) throw Error(as + ": it does not start with LTO-IR's magic number");
            break;
    }
    const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
    image.key = fmt::format("image:{}:{:016x}{:016x}", static_cast<int>(kind), h.high64, h.low64);
    image.bytes = std::move(bytes);
    return image;
}

std::shared_ptr<detail::LoadedModule> load_image(const BinaryImage& image, const std::string& label, int ordinal) {
    const std::string where = fmt::format("raw module '{}' ({})", label, image.origin);
    const int cc = detail::device_attributes(ordinal).compute_capability();
    switch (image.kind) {
        case ImageKind::cubin:
            if (!image.archs.empty() && !detail::cubin_runs_on(image.archs[0], cc))
                throw Error(fmt::format("{} is a cubin for {}, whose code runs on {}; {}", where, image.archs[0],
                                        detail::where_arch_runs(image.archs[0]), device_text(ordinal)));
            break;
        case ImageKind::ptx:
        case ImageKind::fatbin:
        case ImageKind::ltoir:
            break;
    }
    return detail::ModuleRegistry::process().get(image.key, ordinal, [&]() -> std::shared_ptr<detail::LoadedModule> {
        if (image.kind == ImageKind::ptx) {
            std::vector<unsigned char> jitted;  // not kept: a binary gets no cache entry of its own
            try {
                return detail::load_module({image.archs[0], {}, std::string(image.bytes.begin(), image.bytes.end())}, ordinal, &jitted);
            } catch (const CudaError&) {
                throw;
            } catch (const Error& e) {
                throw Error(where + ": " + e.what());
            }
        }
        std::vector<unsigned char> linked;  // LTO-IR's cubin for this device, kept while it loads
        if (image.kind == ImageKind::ltoir) linked = link_ltoir(image, label, fmt::format("sm_{}", cc));
        detail::Driver& d = detail::driver_on(ordinal);
        CUmodule m = nullptr;
        const detail::RelaxedCaptureMode relaxed;  // a first use may come under capture (runtime/detail/capture.hpp)
        const CUresult st = d.cuModuleLoadData(&m, linked.empty() ? image.bytes.data() : linked.data());
        if (st == CUDA_ERROR_NO_BINARY_FOR_GPU || st == CUDA_ERROR_INVALID_PTX || st == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
            throw Error(fmt::format("{} holds no code that runs on this GPU: it has {}; {}", where, list(image.archs),
                                    device_text(ordinal)));
        if (st != CUDA_SUCCESS) throw CudaError(st, "cuModuleLoadData(" + image.origin + ")", __FILE__, __LINE__);
        return std::make_shared<detail::LoadedModule>(m, ordinal);
    });
}

std::vector<unsigned char> link_ltoir(const BinaryImage& image, const std::string& label, const std::string& arch) {
    const compile::LinkData input{image.origin, compile::LinkKind::ltoir, image.bytes, {}};
    return compile::link_cubin({input}, arch, fmt::format("raw module '{}' ({})", label, image.origin)).cubin;
}

}  // namespace kjit::jit::kernels

#include "cache/cache_key.hpp"

#include <cctype>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kjit::cache {
namespace {

// Long and short spellings NVRTC accepts for the same option.
struct Alias {
    std::string_view from;
    std::string_view to;
};
constexpr Alias kAliases[] = {
    {"-lineinfo", "--generate-line-info"},  {"-G", "--device-debug"},
    {"-use_fast_math", "--use_fast_math"},   {"-default-device", "--device-as-default-execution-space"},
    {"-dopt", "--dopt"},                     {"-rdc", "--relocatable-device-code"},
    {"-std", "--std"},                       {"-ftz", "--ftz"},
    {"-prec-div", "--prec-div"},             {"-prec-sqrt", "--prec-sqrt"},
    {"-fmad", "--fmad"},                     {"-maxrregcount", "--maxrregcount"},
    {"-arch", "--gpu-architecture"},         {"-I", "--include-path"},
    {"-D", "--define-macro"},                {"-minimal", "--minimal"},
};

std::string trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return std::string(s);
}

// A length-prefixed field, so that ("ab", "c") and ("a", "bc") never hash alike.
void add_field(XXH3_state_t* state, std::string_view field) {
    const std::uint64_t n = field.size();
    unsigned char le[8];
    for (int k = 0; k < 8; ++k) le[k] = static_cast<unsigned char>(n >> (8 * k));
    XXH3_128bits_update(state, le, sizeof le);
    XXH3_128bits_update(state, field.data(), field.size());
}

// One allocation (a key names the files of a fresh process's first cached call).
std::string hex(XXH128_hash_t h) {
    std::string s(32, '0');
    put_hex16(s.data(), h.high64);
    put_hex16(s.data() + 16, h.low64);
    return s;
}

std::string key_of(std::string_view kind, std::string_view source, const std::vector<std::string>& options,
                   std::string_view arch, std::string_view nvrtc_version) {
    XXH3_state_t* state = XXH3_createState();
    XXH3_128bits_reset(state);
    add_field(state, kind);
    add_field(state, std::to_string(kKeyFormatVersion));
    add_field(state, source);
    const std::vector<std::string> normal = normalise_options(options);
    add_field(state, std::to_string(normal.size()));
    for (const std::string& o : normal) add_field(state, o);
    add_field(state, arch);
    add_field(state, nvrtc_version);
    const XXH128_hash_t h = XXH3_128bits_digest(state);
    XXH3_freeState(state);
    return hex(h);
}

}  // namespace

std::vector<std::string> normalise_options(const std::vector<std::string>& options) {
    std::vector<std::string> out;
    for (const std::string& raw : options) {
        std::string o = trim(raw);
        if (o.empty()) continue;
        for (const Alias& a : kAliases) {
            // "-std=c++17" -> "--std=c++17"; "-lineinfo" -> "--generate-line-info".
            if (o == a.from || (o.size() > a.from.size() && o.compare(0, a.from.size(), a.from) == 0 &&
                                o[a.from.size()] == '=')) {
                o = std::string(a.to) + o.substr(a.from.size());
                break;
            }
        }
        out.push_back(std::move(o));
    }
    return out;
}

std::string make_key(std::string_view source, const std::vector<std::string>& options, std::string_view arch,
                     std::string_view nvrtc_version) {
    return key_of("kjit-entry", source, options, arch, nvrtc_version);
}

std::string make_alias_key(std::string_view source, const std::vector<std::string>& options, std::string_view arch) {
    return key_of("kjit-alias", source, options, arch, "");
}

std::string make_fields_key(std::string_view kind, std::span<const std::string_view> fields) {
    // On the stack: a fresh process's first cached call names a note with this.
    XXH3_state_t state;
    XXH3_128bits_reset(&state);
    add_field(&state, kind);
    add_field(&state, std::to_string(kKeyFormatVersion));
    add_field(&state, std::to_string(fields.size()));
    for (const std::string_view f : fields) add_field(&state, f);
    return hex(XXH3_128bits_digest(&state));
}

void put_hex16(char* out, std::uint64_t value) {
    for (int k = 15; k >= 0; --k, value >>= 4) out[k] = "0123456789abcdef"[value & 15];
}

std::string hex16(std::uint64_t value) {
    std::string s(16, '0');
    put_hex16(s.data(), value);
    return s;
}

bool is_key(std::string_view text) {
    if (text.size() != 32) return false;
    for (char c : text)
        if (!(std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

}  // namespace kjit::cache

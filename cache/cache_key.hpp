// Cache keys: a strong hash of everything that changes a compiled kernel's bytes (DESIGN.md,
// example 7). Never std::hash, which differs between standard libraries and runs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::cache {

// Bump when what goes into a key, or the way kjit compiles, changes in a way the inputs below do
// not show: old entries then simply stop matching.
inline constexpr std::uint32_t kKeyFormatVersion = 1;

// NVRTC options in one spelling each ("-lineinfo" and "--generate-line-info" are one option),
// trimmed, empty ones dropped; the order is kept (it can matter to NVRTC).
std::vector<std::string> normalise_options(const std::vector<std::string>& options);

// 32 lowercase hex digits of XXH3-128 over the format version, the generated source, the
// normalised options, the target ("sm_90") and NVRTC's version with its build.
std::string make_key(std::string_view source, const std::vector<std::string>& options, std::string_view arch,
                     std::string_view nvrtc_version);

// The same without NVRTC's version: the name under which a process that has no NVRTC (an
// application shipping a precompiled cache) finds entries, whichever NVRTC compiled them.
std::string make_alias_key(std::string_view source, const std::vector<std::string>& options, std::string_view arch);

// 32 lowercase hex digits of XXH3-128 over `kind`, the key format version and `fields`, each
// length-prefixed: names of records that are not compiled programs (plan notes, jit/kernels/plan_note.hpp).
std::string make_fields_key(std::string_view kind, std::span<const std::string_view> fields);

// Whether `text` looks like a key (32 lowercase hex digits).
bool is_key(std::string_view text);

// `value` as 16 lowercase hex digits, most significant first (keys are two of them); put_hex16
// writes them to out[0, 16) without allocating.
std::string hex16(std::uint64_t value);
void put_hex16(char* out, std::uint64_t value);

}  // namespace kjit::cache

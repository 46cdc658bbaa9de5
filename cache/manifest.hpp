// Manifests: the list of kernels (spec and type bindings) and architectures a cache should hold,
// in the JSON format of DESIGN.md. KJIT_CACHE_RECORD writes one; `kjit precompile` reads one.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cache/file_io.hpp"

namespace kjit::cache {

// Reads and validates a manifest: an object with "kernels" (a list of entries, each an object
// with a string "kind") and optionally "arch" (a list of strings). Throws IoError for a file that
// cannot be read or is not JSON, CacheError naming the entry and field for a malformed one.
nlohmann::json read_manifest(const std::filesystem::path& path);

// Adds `kernel` (one entry; its "types" list holds the bindings to add) and `arch` to `manifest`:
// an entry equal to an existing one but for "types" merges into it, and no binding or arch is
// listed twice.
void merge_into_manifest(nlohmann::json& manifest, const nlohmann::json& kernel, const std::string& arch);

// merge_into_manifest on the file at `path`, safely under concurrent writers (a lock file beside
// it, waited for up to `lock_timeout`, then an IoError naming its holder) and atomically (a
// temporary of a random name renamed into place: cache/file_io.hpp replace_file); creates the
// file if missing.
void record_in_manifest(const std::filesystem::path& path, const nlohmann::json& kernel, const std::string& arch,
                        std::chrono::milliseconds lock_timeout = kDefaultLockTimeout);

}  // namespace kjit::cache

#include "cache/manifest.hpp"

#include <fstream>

#include "cache/file_io.hpp"
#include "kjit/error.hpp"

namespace kjit::cache {
namespace {

// The fields that identify a kernel: everything but its bindings.
nlohmann::json identity(const nlohmann::json& kernel) {
    nlohmann::json id = kernel;
    id.erase("types");
    return id;
}

void add_unique(nlohmann::json& list, const nlohmann::json& item) {
    for (const auto& existing : list)
        if (existing == item) return;
    list.push_back(item);
}

// An exclusive lock on `<path>.lock` (removed when released), for the manifest's read, merge and
// write: processes recording at once would otherwise lose each other's kernels. Waited for no
// longer than `timeout`: a stopped recorder must not stop every other process's calls.
EntryLock lock_manifest(const std::filesystem::path& path, std::chrono::milliseconds timeout) {
    std::string error;
    EntryLock lock = lock_file(path.string() + ".lock", 0644, Wait::bounded, &error, timeout);
    if (!lock) throw IoError(error);
    return lock;
}

}  // namespace

nlohmann::json read_manifest(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) throw IoError("cannot read manifest '" + path.string() + "'");
    nlohmann::json m;
    try {
        m = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw IoError("manifest '" + path.string() + "' is not valid JSON: " + e.what());
    }
    const std::string where = "manifest '" + path.string() + "'";
    if (!m.is_object()) throw CacheError(where + ": expected a JSON object with \"kernels\"");
    if (!m.contains("kernels") || !m["kernels"].is_array()) throw CacheError(where + ": \"kernels\" must be a list");
    if (m.contains("arch")) {
        if (!m["arch"].is_array()) throw CacheError(where + ": \"arch\" must be a list of strings such as \"sm_90\"");
        for (const auto& a : m["arch"])
            if (!a.is_string()) throw CacheError(where + ": \"arch\" must be a list of strings such as \"sm_90\"");
    }
    for (std::size_t k = 0; k < m["kernels"].size(); ++k) {
        const auto& e = m["kernels"][k];
        const std::string entry = where + ", kernel " + std::to_string(k);
        if (!e.is_object()) throw CacheError(entry + ": expected an object");
        if (!e.contains("kind") || !e["kind"].is_string()) throw CacheError(entry + ": \"kind\" must be a string");
        if (e.contains("types") && !e["types"].is_array()) throw CacheError(entry + ": \"types\" must be a list");
    }
    return m;
}

void merge_into_manifest(nlohmann::json& manifest, const nlohmann::json& kernel, const std::string& arch) {
    if (!manifest.is_object()) manifest = nlohmann::json::object();
    if (!manifest.contains("arch")) manifest["arch"] = nlohmann::json::array();
    if (!manifest.contains("kernels")) manifest["kernels"] = nlohmann::json::array();
    if (!arch.empty()) add_unique(manifest["arch"], arch);
    const nlohmann::json id = identity(kernel);
    for (auto& existing : manifest["kernels"]) {
        if (identity(existing) != id) continue;
        if (kernel.contains("types")) {
            if (!existing.contains("types")) existing["types"] = nlohmann::json::array();
            for (const auto& b : kernel["types"]) add_unique(existing["types"], b);
        }
        return;
    }
    manifest["kernels"].push_back(kernel);
}

void record_in_manifest(const std::filesystem::path& path, const nlohmann::json& kernel, const std::string& arch,
                        std::chrono::milliseconds lock_timeout) {
    const EntryLock lock = lock_manifest(path, lock_timeout);
    nlohmann::json manifest = nlohmann::json::object();
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) manifest = read_manifest(path);
    merge_into_manifest(manifest, kernel, arch);
    // A temporary nobody can plant a symlink at ahead (replace_file), with the mode a file the
    // user writes gets (the umask's), fsynced: a manifest gathers what many runs recorded.
    const std::string error = replace_file(path, manifest.dump(2) + "\n", 0666, ModeIs::less_umask, /*durable=*/true);
    if (!error.empty()) throw IoError("cannot write manifest '" + path.string() + "': " + error);
}

}  // namespace kjit::cache

// Knowing which NVRTC a process would load without loading it. Loading libnvrtc costs 6-7 ms
// (a 109 MB library), yet a cache key needs NVRTC's build: so the writable cache folder keeps a
// record of the NVRTC last loaded — its file's path, size, mtime and inode, the environment that
// chose it, its version key and architectures. A process whose environment and file still match
// takes the version from the record, and loads NVRTC only when it has to compile.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kjit::jit {

struct NvrtcIdentity {
    std::string version_key;         // as nvrtc_version_key() gives it
    std::vector<int> supported_archs;
};

// The identity recorded in `cache_dir` when it still describes the NVRTC this process would load;
// nothing when there is no record, the environment differs, or the library file changed.
std::optional<NvrtcIdentity> remembered_nvrtc(const std::string& cache_dir);

// Records the loaded NVRTC in `cache_dir` (atomically; failures are silent: it is only a
// shortcut). Does nothing when NVRTC is not loaded.
void remember_nvrtc(const std::string& cache_dir);

}  // namespace kjit::jit

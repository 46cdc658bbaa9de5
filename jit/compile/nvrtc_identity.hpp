// Knowing which NVRTC a process would load without loading it. Loading libnvrtc costs 6-7 ms
// (a 109 MB library), yet a cache key needs NVRTC's build: so the writable cache folder keeps a
// record of the NVRTC last loaded — its file's path, size, mtime and inode, the environment that
// chose it, its version key and architectures. A process whose environment and file still match
// takes the version from the record, and loads NVRTC only when it has to compile.
#pragma once

#include <optional>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::jit::compile {

struct NvrtcIdentity {
    std::string version_key;         // as nvrtc_version_key() gives it
    std::vector<int> supported_archs;
    std::string lines;               // nvrtc_identity_lines() of its file, as they were when recorded
};

// `name=value` lines that describe the NVRTC library file `library` as this
// process would find it now: the environment that chooses it, then the file's path, size, mtime
// and inode (a replaced or rebuilt library changes at least one). Empty when the file cannot be
// seen or a value would not fit on one line.
std::string nvrtc_identity_lines(std::string_view library);
// The length of the identity lines that `text` begins with, when they still
// describe the NVRTC this process would load (the environment and the file named unchanged); 0
// otherwise. One `stat`, no file read: a plan note carries these lines (jit/kernels/plan_note.hpp).
std::size_t held_identity_lines(std::string_view text);
// The identity of the NVRTC this process has loaded; nothing when it has not loaded one.
std::optional<NvrtcIdentity> loaded_nvrtc_identity();

// The identity recorded in `cache_dir` when it still describes the NVRTC this process would load;
// nothing when there is no record, the environment differs, or the library file changed.
std::optional<NvrtcIdentity> remembered_nvrtc(const std::string& cache_dir);

// Records the loaded NVRTC in `cache_dir` (atomically; failures are silent: it is only a
// shortcut). Does nothing when NVRTC is not loaded.
void remember_nvrtc(const std::string& cache_dir);

}  // namespace kjit::jit::compile

// The kernel cache: every compiled kernel is kept in memory for the process and on disk in a
// writable folder, and looked up in read-only folders too (a cache shipped with an application,
// built by `kjit precompile` on a machine without a GPU). See docs/CACHE.md.
//
// Settings come from the environment on first use: KJIT_CACHE_DIR (writable, default
// $XDG_CACHE_HOME/kjit or ~/.cache/kjit; none when none is set), KJIT_CACHE_PATH (read-only folders, ':'-separated,
// searched after the writable one), KJIT_CACHE_MAX_BYTES (size cap of the writable folder, least
// recently used entries go first), KJIT_CACHE_DISABLE=1 (memory only), KJIT_CACHE_RECORD=FILE
// (append every kernel used to a manifest that `kjit precompile` reads), KJIT_CACHE_LOCK_TIMEOUT
// (seconds a compile waits for another process's lock of the same kernel, default 30; then it
// compiles without storing).
#pragma once

#include "kjit/export.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "kjit/device.hpp"

namespace kjit {

struct KJIT_API CacheSettings {
    std::string dir;                      // the writable folder; empty: none
    std::vector<std::string> read_only;   // searched after it, in order
    bool disk = true;                     // false: memory only
    std::uint64_t max_bytes = 0;          // 0: no cap
    std::string record;                   // manifest to append kernels to; empty: none
    // The longest a compile waits for a lock on its kernel that another process holds (one that is
    // stopped or hung would hold it for good): then one warning naming the holder, and the kernel
    // is compiled and not stored.
    double lock_timeout_seconds = 30;

    static CacheSettings from_environment();
    bool operator==(const CacheSettings&) const = default;
};

// Replaces the process's cache settings (tools and tests; an application normally uses the
// environment). Kernels already in memory stay there.
KJIT_API void configure_cache(const CacheSettings& settings);
KJIT_API CacheSettings cache_settings();

struct KJIT_API CacheLayerStats {
    std::string dir;
    bool writable = false;
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    // Entries compiled for the writable folder and stored there, and those that could not be (a
    // folder that cannot be written or was refused, a full disk, a lock held too long).
    std::uint64_t stores = 0;
    std::uint64_t store_failures = 0;
};

struct KJIT_API CacheStats {
    std::uint64_t memory_hits = 0;
    std::uint64_t memory_misses = 0;
    std::vector<CacheLayerStats> layers;  // the writable folder first, then the read-only ones
    std::uint64_t compiles = 0;           // NVRTC runs
    double compile_ms = 0;                // their total time
    // Plan notes found on disk: first calls in this process that loaded a cached kernel without
    // checking it or generating its code (docs/CACHE.md, "Plan notes").
    std::uint64_t note_hits = 0;
};

// Counters since the process started (or since configure_cache()).
KJIT_API CacheStats cache_stats();

// Makes a process ready ahead: every module that a call of the manifest's kernels (elementwise,
// reduction and built-in entries, every binding) on `device` may load, whatever layout and
// strategy it picks, is found in the kernel cache (or compiled, with NVRTC) and loaded on the
// device now, so that those calls later compile and load nothing (before a Graph::capture, or
// a latency-bound loop). The manifest is the one KJIT_CACHE_RECORD writes and `kjit precompile`
// reads. Raw modules in it are loaded at their kernels' first use. A kernel that cannot be
// made ready is one line in `failures`; the others are still loaded. Throws IoError or
// CacheError for a manifest that cannot be read.
struct KJIT_API WarmResult {
    std::size_t modules = 0;   // modules made ready (kernel x binding x variant)
    std::size_t compiled = 0;  // of those, compiled by NVRTC now (the rest came from the cache)
    std::vector<std::string> failures;
    double seconds = 0;
};
KJIT_API WarmResult warm(const std::string& manifest_path, const Device& device);

}  // namespace kjit

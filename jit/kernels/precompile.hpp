// Precompiling a manifest: every kernel (elementwise or reduction) x type binding x architecture
// (a raw module: module x architecture; a reduction: also x strategy, one module each, as calls
// load them) compiled into the process's kernel cache
// (configure_cache() says where), in parallel. `kjit precompile` is this, plus a progress bar.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kjit::jit::kernels {

struct PrecompileResult {
    std::size_t jobs = 0;                  // modules: kernel x binding x arch (x strategy for reductions)
    std::size_t compiled = 0;              // NVRTC runs (the rest came from the cache)
    std::size_t stored = 0;                // entries stored in the writable folder
    std::size_t not_stored = 0;            // compiled but not stored (unwritable folder, full disk, held lock)
    std::vector<std::string> failures;     // each with its diagnostic
    std::size_t failed_jobs = 0;           // of `jobs` (the other failures are entries or archs refused)
    std::size_t loaded = 0;                // warm(): modules loaded on the device
    double seconds = 0;
    std::size_t kernels = 0;               // the manifest's entries
    int threads = 0;                       // that ran the jobs
    std::vector<std::string> archs;        // the architectures built for
};

// `archs` empty: the manifest's "arch" list. `threads` <= 0: one per core. `on_step` runs after
// each job (from worker threads).
PrecompileResult precompile(const nlohmann::json& manifest, std::vector<std::string> archs, int threads,
                            const std::function<void(std::size_t done, std::size_t total, const std::string& finished)>& on_step = {});

// kjit::warm: every module a call of the manifest's kernels (elementwise, reduction, built-in) on
// device `ordinal` may load, compiled or found in the cache for the architecture such a call
// builds for, and loaded on the device, so that the calls compile and load nothing. Raw modules
// are left to their first use.
PrecompileResult warm(const nlohmann::json& manifest, int ordinal, int threads);

}  // namespace kjit::jit::kernels

// The jobs of precompiling a manifest (jit/kernels/precompile.hpp): one per module to build, each a label
// for messages and a function that compiles that module into the process's kernel cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kjit::jit::kernels {

struct PrecompileJob {
    std::string label;  // "axpb (T=float32, contiguous) for sm_90"
    std::function<void()> compile;
};

// Every job of the manifest's "kernels" for `archs` (already checked). A malformed entry, or a
// binding its kernel rejects, is one message in `failures` instead of jobs. The jobs of one entry
// share it (kernel and bindings) rather than each holding a copy: an entry of thousands of
// bindings would otherwise need memory quadratic in them.
// With `load_on` >= 0, each job also loads its module on that device (warm()), and raw modules
// get no jobs.
std::vector<PrecompileJob> precompile_jobs(const nlohmann::json& manifest, const std::vector<std::string>& archs,
                                           std::vector<std::string>& failures, int load_on = -1);

// How many modules jobs with `load_on` have loaded in this process (a variant a kernel does not
// have is a job that loads none): warm() counts its modules by the difference.
std::uint64_t modules_loaded_by_jobs() noexcept;

}  // namespace kjit::jit::kernels

// Modules loaded ahead of need: the kernels a cache folder noted last, loaded onto a device the
// moment its context is made, beside a fresh process's first kernel call.
//
// A fresh process's first call of a cached kernel spends about 100 us of its time in the driver
// loading the kernel's module (cuModuleLoadData, then the function's code put on the GPU), and
// only after about as long in kjit finding it. The warm start (jit/warm_start.hpp) has the
// entries the notes it read ahead carry, already checked; it loads their modules as soon as the
// context exists, into the process's module registry, where the call that wants one finds it
// loaded, or waits for the load under way instead of starting its own. An application's first
// call then pays the driver's load only in part, or not at all when there was time in between.
//
// What it costs: a few KB of device memory for each module loaded that is never used, and driver
// work on a thread of kjit's beside the application's first driver calls. So it loads few, and
// stops as soon as a load it did not start begins, that is when the application's calls reach a
// module it did not load: from then on its loads would only compete with theirs. Which to load
// is a guess: of the notes read ahead (the folder's newest), the oldest first, since a program
// notes its kernels in the order it first calls them; but a note is written again when a call
// learns more (another variant), and a folder may be shared by several programs. With several
// GPUs, the modules go onto the device whose context kjit made first.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "cache/entry.hpp"

namespace kjit::jit {

// Loads onto device `ordinal` (whose primary context kjit holds) the modules of up to
// `max_modules` of `entries`, given newest first and loaded from the oldest of them, those
// whose cubin runs on the device; each with every function put on the GPU. Stops when the
// module registry has started a load it did not start since it counted `loads_before`
// (ModuleRegistry::loads_started, when the context was made), when a load fails (a call waiting
// for it then loads the module itself), or when `stop` is set (the process exits). Skips a
// module the registry has or is loading, waiting for nothing. Returns how many it loaded;
// never throws.
std::size_t preload_modules(std::span<const std::shared_ptr<const cache::Entry>> entries, int ordinal,
                            std::size_t max_modules, std::uint64_t loads_before, const std::atomic<bool>& stop) noexcept;

}  // namespace kjit::jit

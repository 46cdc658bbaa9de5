#include "jit/module_preload.hpp"

#include <cstdint>
#include <ranges>

#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/module.hpp"

namespace kjit::jit {

std::size_t preload_modules(std::span<const std::shared_ptr<const cache::Entry>> entries, int ordinal,
                            std::size_t max_modules, std::uint64_t loads_before, const std::atomic<bool>& stop) noexcept {
    std::size_t loaded = 0;
    try {
        const int cc = kjit::detail::device_attributes(ordinal).compute_capability();
        kjit::detail::ModuleRegistry& registry = kjit::detail::ModuleRegistry::process();
        std::uint64_t loads_seen = loads_before;
        for (const std::shared_ptr<const cache::Entry>& entry : entries | std::views::reverse) {
            if (loaded == max_modules || stop.load(std::memory_order_relaxed)) break;
            // Another load began since the last look: the application's calls are loading
            // modules of their own, which these loads would only slow down.
            if (registry.loads_started() != loads_seen) break;
            if (!entry || entry->cubin.empty() || !kjit::detail::cubin_runs_on(entry->meta.arch, cc)) continue;
            const bool loaded_here = registry.load_if_absent(entry->key, ordinal, [&] {
                auto module = kjit::detail::load_module({entry->meta.arch, entry->cubin, entry->ptx}, ordinal, nullptr);
                try {
                    module->load_functions();
                } catch (...) {
                    // the functions load at their first use then, as without this
                }
                return module;
            });
            if (!loaded_here) continue;  // there already (two notes carrying one entry), or loading
            ++loads_seen;
            ++loaded;
        }
    } catch (...) {
        // a load that failed: the calls that want it load it themselves, as without this
    }
    return loaded;
}

}  // namespace kjit::jit

// Modules loaded ahead of need (jit/module_preload.hpp), on the pretend driver: which of the
// entries read ahead are loaded, in what order, and when loading stops.
#include "test_support.hpp"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "cache/entry.hpp"
#include "fake_driver.hpp"
#include "jit/module_preload.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/module.hpp"

namespace {

using kjit::cache::Entry;
using Entries = std::vector<std::shared_ptr<const Entry>>;

// An entry with a key no other test uses (the module registry is the process's).
std::shared_ptr<const Entry> entry_for(const std::string& arch) {
    static std::atomic<int> next{0};
    char key[33];
    std::snprintf(key, sizeof key, "%032x", 0x9e10ad00 + next++);
    Entry e;
    e.key = key;
    e.meta.arch = arch;
    e.meta.kernel_name = "preloaded";
    e.cubin = {0x7f, 'E', 'L', 'F'};
    return std::make_shared<const Entry>(std::move(e));
}

// Whether the registry holds the module of `e` on device 0 (asking loads nothing: a load here
// fails the check).
bool registered(const Entry& e) {
    bool loaded_now = false;
    (void)kjit::detail::ModuleRegistry::process().get(e.key, 0, [&] {
        loaded_now = true;
        return std::make_shared<kjit::detail::LoadedModule>(nullptr, 0);
    });
    return !loaded_now;
}

const std::atomic<bool> g_never{false};

// preload_modules() as the warm start calls it, the loads counted from now.
std::size_t preload(const Entries& entries, std::size_t max_modules, const std::atomic<bool>& stop = g_never) {
    return kjit::jit::preload_modules(entries, 0, max_modules, kjit::detail::ModuleRegistry::process().loads_started(), stop);
}

// What an application's call loads while the first module loaded ahead is loading.
std::string g_app_key;
bool g_app_loaded = false;

}  // namespace

TEST_CASE("modules are loaded ahead from the oldest entry read ahead, only those the device runs", "[module_preload]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_sm90_driver(), 1);
    const auto newest = entry_for("sm_90"), other_gpu = entry_for("sm_80"), middle = entry_for("sm_90"),
               oldest = entry_for("sm_90");
    const Entries entries{newest, other_gpu, middle, oldest};

    SECTION("within the budget, oldest first") {
        CHECK(preload(entries, 2) == 2);
        CHECK(kjit::test::fake_state().modules_loaded == 2);
        CHECK(kjit::test::fake_state().functions_loaded == 2);  // each module's functions put on the GPU
        CHECK(registered(*oldest));
        CHECK(registered(*middle));
        CHECK_FALSE(registered(*other_gpu));  // an sm_80 cubin does not run on sm_90
        CHECK_FALSE(registered(*newest));
    }
    SECTION("all that run on the device") {
        CHECK(preload(entries, 8) == 3);
        CHECK(registered(*newest));
        CHECK_FALSE(registered(*other_gpu));
    }
    SECTION("a module the registry has is skipped, and so is a second note carrying one entry") {
        REQUIRE_FALSE(registered(*middle));  // loaded before the count starts, as a call's would be
        const Entries twice{newest, oldest, oldest};
        CHECK(preload(twice, 8) == 2);
        CHECK(kjit::test::fake_state().modules_loaded == 2);
        CHECK(registered(*newest));
    }
    SECTION("it stops once a load it did not start begins") {
        kjit::detail::DriverApi api = kjit::test::make_fake_sm90_driver();
        g_app_key = entry_for("sm_90")->key;
        g_app_loaded = false;
        api.cuModuleLoadData = [](CUmodule* m, const void*) {
            ++kjit::test::fake_state().modules_loaded;
            if (!g_app_loaded) {  // the application's call loads a module of its own meanwhile
                g_app_loaded = true;
                (void)kjit::detail::ModuleRegistry::process().get(g_app_key, 0, [] {
                    return std::make_shared<kjit::detail::LoadedModule>(nullptr, 0);
                });
            }
            *m = reinterpret_cast<CUmodule>(std::uintptr_t{0x6000});
            return CUDA_SUCCESS;
        };
        kjit::detail::ScopedDriverOverride busy(api, 1);
        CHECK(preload(entries, 8) == 1);  // the oldest, then no more
        CHECK_FALSE(registered(*middle));
    }
    SECTION("a load begun after the context was made, before it looked, stops it at once") {
        const std::uint64_t at_context = kjit::detail::ModuleRegistry::process().loads_started();
        REQUIRE_FALSE(registered(*newest));  // the application's first call, quicker than the thread
        CHECK(kjit::jit::preload_modules(entries, 0, 8, at_context, g_never) == 0);
        CHECK_FALSE(registered(*oldest));
    }
    SECTION("nothing once the process is exiting") {
        const std::atomic<bool> stopping{true};
        CHECK(preload(entries, 8, stopping) == 0);
        CHECK(kjit::test::fake_state().modules_loaded == 0);
    }
    SECTION("a failed load stops it, and is not kept") {
        kjit::detail::DriverApi failing = kjit::test::make_fake_sm90_driver();
        failing.cuModuleLoadData = [](CUmodule*, const void*) { return CUDA_ERROR_OUT_OF_MEMORY; };
        kjit::detail::ScopedDriverOverride broken(failing, 1);
        CHECK(preload(entries, 8) == 0);
        CHECK_FALSE(registered(*oldest));  // loaded now by the check: the failure was not remembered
    }
}

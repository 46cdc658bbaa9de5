// Modules loaded ahead of need (jit/module_preload.hpp), on the pretend driver: which of the
// entries read ahead are loaded, in what order, and when loading stops.
#include "test_support.hpp"

#include <atomic>
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

}  // namespace

TEST_CASE("modules are loaded ahead from the oldest entry read ahead, only those the device runs", "[module_preload]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_sm90_driver(), 1);
    const auto newest = entry_for("sm_90"), other_gpu = entry_for("sm_80"), middle = entry_for("sm_90"),
               oldest = entry_for("sm_90");
    const Entries entries{newest, other_gpu, middle, oldest};

    SECTION("within the budget, oldest first") {
        CHECK(kjit::jit::preload_modules(entries, 0, 2) == 2);
        CHECK(kjit::test::fake_state().modules_loaded == 2);
        CHECK(kjit::test::fake_state().functions_loaded == 2);  // each module's functions put on the GPU
        CHECK(registered(*oldest));
        CHECK(registered(*middle));
        CHECK_FALSE(registered(*other_gpu));  // an sm_80 cubin does not run on sm_90
        CHECK_FALSE(registered(*newest));
    }
    SECTION("all that run on the device") {
        CHECK(kjit::jit::preload_modules(entries, 0, 8) == 3);
        CHECK(registered(*newest));
        CHECK_FALSE(registered(*other_gpu));
    }
    SECTION("it stops at a module another load made") {
        REQUIRE_FALSE(registered(*middle));  // loaded here, as an application's call would
        const int before = kjit::test::fake_state().modules_loaded;
        CHECK(kjit::jit::preload_modules(entries, 0, 8) == 1);  // the oldest, then the middle one was there
        CHECK(kjit::test::fake_state().modules_loaded == before + 1);
        CHECK_FALSE(registered(*newest));
    }
    SECTION("a failed load stops it, and is not kept") {
        kjit::detail::DriverApi failing = kjit::test::make_fake_sm90_driver();
        failing.cuModuleLoadData = [](CUmodule*, const void*) { return CUDA_ERROR_OUT_OF_MEMORY; };
        kjit::detail::ScopedDriverOverride broken(failing, 1);
        CHECK(kjit::jit::preload_modules(entries, 0, 8) == 0);
        CHECK_FALSE(registered(*oldest));  // loaded now by the check: the failure was not remembered
    }
}

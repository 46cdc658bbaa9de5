// One kernel object on several devices (issue 38), on the pretend driver with two devices: a
// kernel compiles once per architecture and loads once per device, whichever device calls first.
#include "test_support.hpp"

#include <filesystem>

#include "fake_driver.hpp"
#include "kjit/cache.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "runtime/detail/driver.hpp"

using kjit::Array;
using kjit::Device;
using kjit::DType;

namespace {

struct Counts {
    std::uint64_t compiles;
    int loads;
    std::uint64_t disk_reads;   // entries looked for in the cache folders
    std::uint64_t notes_taken;  // plan notes taken, from memory or a folder
};
Counts now() {
    const kjit::CacheStats stats = kjit::cache_stats();
    std::uint64_t reads = 0;
    for (const kjit::CacheLayerStats& layer : stats.layers) reads += layer.hits + layer.misses;
    return {stats.compiles, kjit::test::fake_state().modules_loaded, reads, stats.note_hits};
}

}  // namespace

TEST_CASE("two devices of different architectures: a kernel compiles for each and loads on each", "[devices][nvrtc]") {
    const kjit::test::ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    kjit::CacheSettings settings;
    settings.dir = (work.path() / "cache").string();
    kjit::configure_cache(settings);
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 2);
    kjit::test::fake_state().device_cc[1] = {8, 0};
    const kjit::ElementwiseKernel twice("T x", "T y", "y = x * 2", "twice_two_archs");
    const Array x0 = Array::empty({1000}, DType::float32, Device::cuda(0)), y0 = Array::empty({1000}, DType::float32, Device::cuda(0));
    const Array x1 = Array::empty({1000}, DType::float32, Device::cuda(1)), y1 = Array::empty({1000}, DType::float32, Device::cuda(1));
    const Counts start = now();
    twice.launch({x0, y0});
    const Counts after0 = now();
    CHECK(after0.compiles == start.compiles + 1);
    CHECK(after0.loads == start.loads + 1);
    twice.launch({x1, y1});  // sm_80: its own binary
    const Counts after1 = now();
    CHECK(after1.compiles == after0.compiles + 1);
    CHECK(after1.loads == after0.loads + 1);
    twice.launch({x0, y0});
    twice.launch({x1, y1});
    CHECK(now().compiles == after1.compiles);
    CHECK(now().loads == after1.loads);
    CHECK(twice.load({{"T", DType::float32}}, Device::cuda(1)).arch() == "sm_80");
    CHECK(twice.load({{"T", DType::float32}}, Device::cuda(0)).arch() == "sm_90");
    // Arrays of both devices in one call: refused, naming both.
    CHECK_THROWS_WITH(twice.launch({x0, y1}), Catch::Contains("cuda:1") && Catch::Contains("cuda:0"));
}

TEST_CASE("two devices of one architecture: a kernel compiles once and loads on each", "[devices][nvrtc]") {
    const kjit::test::ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    kjit::CacheSettings settings;
    settings.dir = (work.path() / "cache").string();
    kjit::configure_cache(settings);
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 2);
    const kjit::ElementwiseKernel twice("T x", "T y", "y = x * 2", "twice_one_arch");
    const Array x0 = Array::empty({1000}, DType::float32, Device::cuda(0)), y0 = Array::empty({1000}, DType::float32, Device::cuda(0));
    const Array x1 = Array::empty({1000}, DType::float32, Device::cuda(1)), y1 = Array::empty({1000}, DType::float32, Device::cuda(1));
    const Counts start = now();
    twice.launch({x0, y0});
    const Counts after0 = now();
    for (const auto& file : std::filesystem::recursive_directory_iterator(work.path() / "cache"))
        if (file.path().extension() == ".note") std::filesystem::remove(file.path());
    twice.launch({x1, y1});
    CHECK(now().compiles == start.compiles + 1);
    CHECK(now().loads == start.loads + 2);
    // The second device's first call takes the note the first wrote, from memory: the folder's
    // notes are gone, and still it generates no code and reads no entry.
    CHECK(now().notes_taken == after0.notes_taken + 1);
    CHECK(now().disk_reads == after0.disk_reads);
}

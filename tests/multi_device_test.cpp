// One kernel object on several devices (issue 38), on the pretend driver with two devices: a
// kernel compiles once per architecture and loads once per device, whichever device calls first.
#include "test_support.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "fake_driver.hpp"
#include "kjit/cache.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/split.hpp"
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

// `count` pretend GPUs whose kernels compile with NVRTC, load and launch (launches do nothing
// but count), with a cache folder of the test's own.
class LaunchingDevices {
public:
    explicit LaunchingDevices(int count) : fake_(kjit::test::make_fake_launching_driver(), count) {
        kjit::configure_cache(kjit::test::cache_in(cache_dir()));
    }
    std::filesystem::path cache_dir() const { return work_.path() / "cache"; }

private:
    kjit::test::ProcessCacheGuard restore_;
    kjit::test::TempDir work_;
    kjit::detail::ScopedDriverOverride fake_;
};

}  // namespace

TEST_CASE("two devices of different architectures: a kernel compiles for each and loads on each", "[devices][nvrtc]") {
    const LaunchingDevices devices(2);
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
    const LaunchingDevices devices(2);
    const kjit::ElementwiseKernel twice("T x", "T y", "y = x * 2", "twice_one_arch");
    const Array x0 = Array::empty({1000}, DType::float32, Device::cuda(0)), y0 = Array::empty({1000}, DType::float32, Device::cuda(0));
    const Array x1 = Array::empty({1000}, DType::float32, Device::cuda(1)), y1 = Array::empty({1000}, DType::float32, Device::cuda(1));
    const Counts start = now();
    twice.launch({x0, y0});
    const Counts after0 = now();
    for (const auto& file : std::filesystem::recursive_directory_iterator(devices.cache_dir()))
        if (file.path().extension() == ".note") std::filesystem::remove(file.path());
    twice.launch({x1, y1});
    CHECK(now().compiles == start.compiles + 1);
    CHECK(now().loads == start.loads + 2);
    // The second device's first call takes the note the first wrote, from memory: the folder's
    // notes are gone, and still it generates no code and reads no entry.
    CHECK(now().notes_taken == after0.notes_taken + 1);
    CHECK(now().disk_reads == after0.disk_reads);
}

namespace {

std::string name_of(const kjit::Stream& s) {
    char text[32];
    std::snprintf(text, sizeof text, "s%llx", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(s.handle())));
    return text;
}
CUmemoryPool pool(int device) { return reinterpret_cast<CUmemoryPool>(static_cast<std::uintptr_t>(0x2000 + device)); }

}  // namespace

TEST_CASE("a copy between two devices goes peer to peer, ordered on a stream of each", "[devices]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_sm90_driver(), 2);
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const kjit::Stream s0 = kjit::Stream::create(Device::cuda(0)), s1 = kjit::Stream::create(Device::cuda(1));
    const Array x = Array::empty({1000}, DType::float32, Device::cuda(0), s0);
    state.record_stream_work = true;
    const Array y = x.to(Device::cuda(1), s0, s1);
    CHECK(y.device() == Device::cuda(1));
    CHECK(y.shape() == kjit::Shape{1000});
    CHECK(y.data() != x.data());
    // The copy runs on the source's stream after the destination's allocation, and the
    // destination's stream waits for it; the source's device is current when it is queued.
    CHECK(state.stream_work == std::vector<std::string>{"record e1 on " + name_of(s1), "wait " + name_of(s0) + " for e1",
                                                        "peer 4000 to cuda:1 on " + name_of(s0) + " in cuda:0",
                                                        "record e2 on " + name_of(s0), "wait " + name_of(s1) + " for e2"});
    // Each pool opened to the other device, once.
    CHECK(state.pool_access == std::vector<std::pair<CUmemoryPool, int>>{{pool(1), 0}, {pool(0), 1}});
    const Array back = y.to(Device::cuda(0), s1, s0);
    CHECK(back.device() == Device::cuda(0));
    CHECK(state.pool_access.size() == 2);
    CHECK(state.stream_work.back() == "wait " + name_of(s0) + " for e4");
}

TEST_CASE("a copy between devices without peer access is staged through the host", "[devices]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_sm90_driver(), 2);
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    state.can_access_peer = 0;
    const kjit::Stream s0 = kjit::Stream::create(Device::cuda(0)), s1 = kjit::Stream::create(Device::cuda(1));
    const Array x = Array::empty({3, 5}, DType::int64, Device::cuda(1), s1);
    state.record_stream_work = true;
    const Array y = x.to(Device::cuda(0), s1, s0);
    CHECK(y.device() == Device::cuda(0));
    CHECK(state.stream_work == std::vector<std::string>{"dtoh 120 on " + name_of(s1), "record e1 on " + name_of(s1),
                                                        "wait " + name_of(s0) + " for e1", "htod 120 on " + name_of(s0),
                                                        "sync " + name_of(s0)});
    CHECK(state.pool_access.empty());
}

TEST_CASE("Array::to another device with one stream: it orders the side it belongs to", "[devices]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_sm90_driver(), 3);
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const kjit::Stream s0 = kjit::Stream::create(Device::cuda(0)), s1 = kjit::Stream::create(Device::cuda(1)),
                       s2 = kjit::Stream::create(Device::cuda(2));
    const Array x = Array::empty({16}, DType::float64, Device::cuda(0), s0);
    state.record_stream_work = true;
    SECTION("the source's stream: the destination's default stream waits") {
        (void)x.to(Device::cuda(1), s0);
        CHECK(state.stream_work.at(2) == "peer 128 to cuda:1 on " + name_of(s0) + " in cuda:0");
        CHECK(state.stream_work.back() == "wait s0 for e2");
    }
    SECTION("the destination's stream: the copy runs on the source's default stream") {
        (void)x.to(Device::cuda(1), s1);
        CHECK(state.stream_work.at(2) == "peer 128 to cuda:1 on s0 in cuda:0");
        CHECK(state.stream_work.back() == "wait " + name_of(s1) + " for e2");
    }
    SECTION("a default stream of no device: both sides' default streams") {
        (void)x.to(Device::cuda(1), kjit::Stream());
        CHECK(state.stream_work.at(2) == "peer 128 to cuda:1 on s0 in cuda:0");
    }
    SECTION("a third device's stream, or two streams where one copy has one side: refused, saying which") {
        CHECK_THROWS_WITH(x.to(Device::cuda(1), s2), Catch::Contains("cuda:2") && Catch::Contains("cuda:0"));
        CHECK_THROWS_WITH(x.to(Device::cuda(1), s0, s2), Catch::Contains("cuda:2") && Catch::Contains("cuda:1"));
        CHECK_THROWS_WITH(x.to(Device::cuda(0), s0, s0), Catch::Contains("between two GPUs"));
        CHECK_THROWS_WITH(x.to(Device::cpu(), s0, s1), Catch::Contains("between two GPUs") && Catch::Contains("cpu"));
        CHECK(state.stream_work.empty());
    }
}

TEST_CASE("a non-contiguous array is packed on its device, then copied once", "[devices][nvrtc]") {
    const LaunchingDevices devices(2);
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const kjit::Stream s0 = kjit::Stream::create(Device::cuda(0)), s1 = kjit::Stream::create(Device::cuda(1));
    const Array x = Array::empty({40, 30}, DType::float32, Device::cuda(0), s0).transpose();
    state.record_stream_work = true;
    const int launches = state.launches;
    const Array y = x.to(Device::cuda(1), s0, s1);
    CHECK(state.launches == launches + 1);
    CHECK(y.shape() == kjit::Shape{30, 40});
    CHECK(y.is_c_contiguous());
    CHECK(std::count_if(state.stream_work.begin(), state.stream_work.end(),
                        [](const std::string& w) { return w.rfind("peer 4800 to cuda:1", 0) == 0; }) == 1);
}

TEST_CASE("split: NumPy's array_split over devices, a view where the array already is", "[devices]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_sm90_driver(), 2);
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const Array x = Array::empty({10, 4}, DType::float32, Device::cuda(0));
    state.record_stream_work = true;
    const std::vector<Array> parts = kjit::split(x, {Device::cuda(0), Device::cuda(1), Device::cuda(0)});
    REQUIRE(parts.size() == 3);
    CHECK(parts[0].shape() == kjit::Shape{4, 4});
    CHECK(parts[0].data() == x.data());
    CHECK(parts[1].shape() == kjit::Shape{3, 4});
    CHECK(parts[1].device() == Device::cuda(1));
    CHECK(parts[2].shape() == kjit::Shape{3, 4});
    CHECK(parts[2].data() == static_cast<const char*>(x.data()) + 7 * 4 * 4);
    CHECK(std::count(state.stream_work.begin(), state.stream_work.end(), "peer 48 to cuda:1 on s0 in cuda:0") == 1);
    // More devices than elements: empty parts.
    const std::vector<Array> thin = kjit::split(Array::empty({1, 3}, DType::int8, Device::cuda(1)), {Device::cuda(0), Device::cuda(1)});
    CHECK(thin[0].shape() == kjit::Shape{1, 3});
    CHECK(thin[1].shape() == kjit::Shape{0, 3});
}

TEST_CASE("gather: parts from other devices copied into their place on one device", "[devices]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_sm90_driver(), 2);
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const kjit::Stream s0 = kjit::Stream::create(Device::cuda(0));
    const Array a = Array::empty({2, 5}, DType::int32, Device::cuda(1)), b = Array::empty({3, 5}, DType::int32, Device::cuda(1));
    state.record_stream_work = true;
    const Array y = kjit::gather({a, b}, Device::cuda(0), 0, s0);
    CHECK(y.shape() == kjit::Shape{5, 5});
    CHECK(y.device() == Device::cuda(0));
    CHECK(std::count(state.stream_work.begin(), state.stream_work.end(), "peer 40 to cuda:0 on s0 in cuda:1") == 1);
    CHECK(std::count(state.stream_work.begin(), state.stream_work.end(), "peer 60 to cuda:0 on s0 in cuda:1") == 1);
    CHECK(state.stream_work.back() == "wait " + name_of(s0) + " for e4");
}

TEST_CASE("split and gather say what is wrong", "[devices]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_sm90_driver(), 2);
    const Array x = Array::empty({6, 2}, DType::float32, Device::cuda(0));
    const std::vector<Device> both{Device::cuda(0), Device::cuda(1)};
    CHECK_THROWS_WITH(kjit::split(x, {}), Catch::Contains("no devices"));
    CHECK_THROWS_WITH(kjit::split(x, {Device::cuda(0), Device::cpu()}), Catch::Contains("cpu is not a GPU"));
    CHECK_THROWS_WITH(kjit::split(x, both, 2), Catch::Contains("axis 2 is out of range"));
    CHECK_THROWS_WITH(kjit::split(x, both, 0, {kjit::Stream()}), Catch::Contains("1 streams for 2 devices"));
    CHECK_THROWS_WITH(kjit::split(x, {Device::cuda(2)}), Catch::Contains("no CUDA device 2"));
    const Array wide = Array::empty({6, 3}, DType::float32, Device::cuda(1));
    CHECK_THROWS_WITH(kjit::gather({x, wide}, Device::cuda(0)), Catch::Contains("part 1") && Catch::Contains("(6, 3)"));
    CHECK_THROWS_WITH(kjit::gather({x, Array::empty({6, 2}, DType::float64, Device::cuda(1))}, Device::cuda(0)),
                      Catch::Contains("one dtype"));
    CHECK_THROWS_WITH(kjit::gather({x, Array::empty({6, 2}, DType::float32, Device::cpu())}, Device::cuda(0)),
                      Catch::Contains("host memory"));
    CHECK_THROWS_WITH(kjit::gather({}, Device::cuda(0)), Catch::Contains("no parts"));
    CHECK_THROWS_WITH(kjit::gather({x}, Device::cpu()), Catch::Contains("not a GPU"));
}

TEST_CASE("a lost device: its calls fail naming it, the other device goes on", "[devices][nvrtc]") {
    const LaunchingDevices devices(2);
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const kjit::ElementwiseKernel twice("T x", "T y", "y = x * 2", "twice_lost_device");
    const Array x0 = Array::empty({1000}, DType::float32, Device::cuda(0));
    const Array x1 = Array::empty({1000}, DType::float32, Device::cuda(1)), y1 = twice({x1})[0];
    state.lost_device = 1;
    // (Catch's && keeps references to its operands: named matchers, combined where used.)
    const auto unavailable = Catch::Contains("CUDA_ERROR_DEVICE_UNAVAILABLE"), on_1 = Catch::Contains("on cuda:1");
#define names_lost (unavailable && on_1)
    CHECK_THROWS_WITH(Array::empty({10}, DType::float32, Device::cuda(1)), names_lost);
    CHECK_THROWS_WITH(twice({x1}), names_lost);  // its output cannot be allocated
    CHECK_THROWS_WITH(twice.launch({x1, y1}), names_lost);
    CHECK_THROWS_WITH(x0.to(Device::cuda(1)), names_lost);
    CHECK_THROWS_WITH(Device::cuda(1).synchronize(), names_lost);
#undef names_lost
    // cuda:0 is untouched: its first call compiles, loads and launches; its memory still comes.
    const int launches = state.launches;
    const Array y0 = twice({x0})[0];
    CHECK(state.launches == launches + 1);
    CHECK(y0.device() == Device::cuda(0));
    CHECK_NOTHROW(Device::cuda(0).synchronize());
}

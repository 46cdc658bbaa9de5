// Devices: identity, properties, current device per thread.
#include "test_support.hpp"

#include <cstring>
#include <thread>

#include "fake_driver.hpp"
#include "kjit/device.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/driver.hpp"

using kjit::Device;
using Catch::Matchers::Contains;

TEST_CASE("device identity needs no driver", "[device]") {
    CHECK(Device::cpu().to_string() == "cpu");
    CHECK(Device::cuda(3).to_string() == "cuda:3");
    CHECK(Device::cuda(0) == Device::cuda(0));
    CHECK_FALSE(Device::cuda(0) == Device::cuda(1));
    CHECK_FALSE(Device::cpu() == Device::cuda(0));
    CHECK(Device().is_cuda());
    CHECK(Device::count() == (kjit::test::gpu_available() ? Device::count() : 0));
    CHECK_THROWS_WITH(Device::cpu().properties(), Contains("needs a CUDA device"));
}

TEST_CASE("device properties are those of a real GPU", "[gpu][device]") {
    KJIT_REQUIRE_GPU();
    REQUIRE(Device::count() >= 1);
    const kjit::DeviceProperties p = Device::cuda(0).properties();
    CHECK_FALSE(p.name.empty());
    CHECK(p.cc_major >= 7);
    CHECK(p.sm_count > 0);
    CHECK(p.total_memory > (std::size_t{1} << 30));
    CHECK(p.max_threads_per_block >= 1024);
    CHECK(p.shared_memory_per_block >= 48 * 1024);
    CHECK(p.arch() == "sm_" + std::to_string(p.cc_major * 10 + p.cc_minor));
    CHECK_FALSE(p.pci_bus_id.empty());
    WARN("device 0: " << p.name << ", " << p.arch() << ", " << p.sm_count << " SMs");
    CHECK(kjit::driver_version() >= 12000);
    const auto [free_bytes, total] = Device::cuda(0).memory_info();
    CHECK(free_bytes <= total);
    CHECK_NOTHROW(Device::cuda(0).synchronize());
}

TEST_CASE("the current device is per thread", "[gpu][device]") {
    KJIT_REQUIRE_GPU();
    Device::set_current(0);
    CHECK(Device::current().ordinal() == 0);
    CHECK_THROWS_AS(Device::set_current(Device::count()), kjit::NoDeviceError);
    CHECK(Device::current().ordinal() == 0);
    int seen_in_thread = -1;
    std::thread t([&] { seen_in_thread = Device::current().ordinal(); });
    t.join();
    CHECK(seen_in_thread == 0);
}

TEST_CASE("device properties are asked of the driver once per device", "[device]") {
    static int name_calls;
    name_calls = 0;
    kjit::detail::DriverApi api = kjit::test::make_fake_sm90_driver();
    api.cuDeviceGetName = [](char* name, int len, CUdevice) {
        ++name_calls;
        std::strncpy(name, "Counted GPU", static_cast<std::size_t>(len));
        return CUDA_SUCCESS;
    };
    {
        kjit::detail::ScopedDriverOverride fake(api, 1);
        for (int k = 0; k < 3; ++k) {
            const kjit::DeviceProperties p = Device::cuda(0).properties();
            CHECK(p.name == "Counted GPU");
            CHECK(p.arch() == "sm_90");
            CHECK(p.sm_count == 132);
        }
        CHECK(name_calls == 1);
        CHECK_THROWS(Device::cuda(1).properties());  // no such device: nothing kept
    }
    // Another driver (here a fresh fake) asks again.
    kjit::detail::ScopedDriverOverride again(api, 1);
    CHECK(Device::cuda(0).properties().name == "Counted GPU");
    CHECK(name_calls == 2);
}

namespace {
int g_name_queries = 0;
}  // namespace

TEST_CASE("a device's attributes are asked without its name, bus id or memory, once", "[device]") {
    kjit::detail::DriverApi api = kjit::test::make_fake_sm90_driver();
    g_name_queries = 0;
    api.cuDeviceGetName = [](char* name, int len, CUdevice) {
        ++g_name_queries;
        std::strncpy(name, "Fake GPU", static_cast<std::size_t>(len));
        return CUDA_SUCCESS;
    };
    const kjit::detail::ScopedDriverOverride fake(api, 1);
    const kjit::detail::DeviceAttributes& a = kjit::detail::device_attributes(0);
    CHECK(a.compute_capability() == 90);
    CHECK(a.sm_count == 132);
    CHECK(a.max_threads_per_block == 1024);
    CHECK(a.shared_memory_per_block == 232448);
    CHECK(g_name_queries == 0);
    CHECK(&kjit::detail::device_attributes(0) == &a);  // kept, not asked again
    const kjit::DeviceProperties p = Device::cuda(0).properties();
    CHECK(g_name_queries == 1);
    CHECK(p.name == "Fake GPU");
    CHECK(p.cc_major * 10 + p.cc_minor == a.compute_capability());
    CHECK(p.sm_count == a.sm_count);
    CHECK(p.shared_memory_per_block == a.shared_memory_per_block);
    CHECK_THROWS_AS(kjit::detail::device_attributes(1), kjit::NoDeviceError);
}

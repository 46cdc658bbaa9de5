// Run-time loading of the driver and NVRTC, and failure injection through the function table.
#include "test_support.hpp"

#include "fake_driver.hpp"
#include "kjit/buffer.hpp"
#include "kjit/error.hpp"
#include "kjit/info.hpp"
#include "kjit/stream.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/nvrtc.hpp"

using Catch::Matchers::Contains;

TEST_CASE("without a GPU the library loads and says what is missing", "[loader]") {
    if (kjit::test::gpu_available()) {
        CHECK(kjit::Device::count() > 0);
        CHECK(kjit::no_device_reason().empty());
        return;
    }
    CHECK(kjit::Device::count() == 0);
    const std::string why = kjit::no_device_reason();
    // Either the driver library is absent, or it loaded and found no device.
    const bool names_library = why.find("libcuda.so.1") != std::string::npos;
    const bool names_gpu = why.find("GPU") != std::string::npos;
    CHECK((names_library || names_gpu));
    CHECK_THROWS_AS(kjit::detail::driver(), kjit::NoDeviceError);
    CHECK_THROWS_WITH(kjit::Stream::create(), Contains(why));
    CHECK_THROWS_AS(kjit::Buffer::allocate_device(16), kjit::NoDeviceError);
    // Host memory never needs the driver.
    CHECK(kjit::Buffer::allocate_host(1024)->data() != nullptr);
}

TEST_CASE("NVRTC is found and reports its version and architectures", "[loader]") {
    std::string why;
    const kjit::detail::NvrtcApi* api = kjit::detail::try_nvrtc(&why);
    INFO(why);
    REQUIRE(api != nullptr);
    int major = 0, minor = 0;
    REQUIRE(api->nvrtcVersion(&major, &minor) == NVRTC_SUCCESS);
    CHECK(major >= 12);
    const kjit::SystemInfo info = kjit::system_info();
    CHECK(info.nvrtc_loaded);
    CHECK(info.nvrtc_major == major);
    // CI compiles for sm_80 and sm_90: both must be there.
    CHECK(std::find(info.nvrtc_archs.begin(), info.nvrtc_archs.end(), 80) != info.nvrtc_archs.end());
    CHECK(std::find(info.nvrtc_archs.begin(), info.nvrtc_archs.end(), 90) != info.nvrtc_archs.end());
}

TEST_CASE("NVRTC missing is a NoDeviceError that names it", "[loader]") {
    kjit::detail::ScopedNvrtcOverride missing(nullptr);
    CHECK_THROWS_AS(kjit::detail::nvrtc(), kjit::NoDeviceError);
    CHECK_THROWS_WITH(kjit::detail::nvrtc(), Contains("NVRTC"));
    const kjit::SystemInfo info = kjit::system_info();
    CHECK_FALSE(info.nvrtc_loaded);
    CHECK_THAT(info.nvrtc_problem, Contains("NVRTC"));
}

TEST_CASE("NVRTC candidates honour KJIT_NVRTC_LIBRARY first", "[loader]") {
    ::setenv("KJIT_NVRTC_LIBRARY", "/opt/custom/libnvrtc.so.13", 1);
    const auto candidates = kjit::detail::nvrtc_candidates();
    ::unsetenv("KJIT_NVRTC_LIBRARY");
    REQUIRE(!candidates.empty());
    CHECK(candidates.front() == "/opt/custom/libnvrtc.so.13");
    CHECK(std::find(candidates.begin(), candidates.end(), "libnvrtc.so.13") != candidates.end());
}

TEST_CASE("an injected driver failure becomes a CudaError with the call, place and status", "[loader]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_driver(), 1);
    kjit::test::fake_state().stream_synchronize_result = CUDA_ERROR_LAUNCH_FAILED;
    const kjit::Stream s = kjit::Stream::wrap(nullptr, kjit::Device::cuda(0));
    try {
        s.synchronize();
        FAIL("synchronize() did not throw");
    } catch (const kjit::CudaError& e) {
        CHECK(e.code() == CUDA_ERROR_LAUNCH_FAILED);
        const std::string what = e.what();
        CHECK_THAT(what, Contains("CUDA_ERROR_LAUNCH_FAILED"));
        CHECK_THAT(what, Contains("unspecified launch failure"));
        CHECK_THAT(what, Contains("cuStreamSynchronize"));
        CHECK_THAT(what, Contains("runtime/stream.cpp:"));
        CHECK_THAT(e.call(), Contains("cuStreamSynchronize"));
    }
    // The runtime stays usable: the next call that does not fail works.
    kjit::test::fake_state().stream_synchronize_result = CUDA_SUCCESS;
    CHECK_NOTHROW(s.synchronize());
}

TEST_CASE("a device ordinal that does not exist is a NoDeviceError naming the valid ones", "[loader]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_driver(), 2);
    CHECK_THROWS_AS(kjit::Device::set_current(5), kjit::NoDeviceError);
    CHECK_THROWS_WITH(kjit::Device::set_current(5), Contains("no CUDA device 5") && Contains("0..1"));
    CHECK_THROWS_AS(kjit::Device::set_current(-1), kjit::NoDeviceError);
    CHECK(kjit::Device::current().ordinal() == 0);  // unchanged by the failures
}

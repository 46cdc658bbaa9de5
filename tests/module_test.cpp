// Loading compiled kernels onto the GPU: the device's cubin, or cached PTX of an older
// architecture compiled by the driver (without NVRTC), whose result is then cached.
#include "test_support.hpp"

#include <cmath>
#include <cstring>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "kjit/array.hpp"
#include "kjit/cache.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/module.hpp"
#include "runtime/detail/nvrtc.hpp"

using kjit::Array;
using kjit::DType;

namespace {

struct CacheSettingsGuard {
    kjit::CacheSettings saved = kjit::cache_settings();
    ~CacheSettingsGuard() { kjit::configure_cache(saved); }
};

// Runs the module's contiguous variant of y = a * x + b (float32) and counts wrong elements.
std::size_t wrong_axpb(const kjit::Module& km) {
    const std::int64_t n = 100003;
    const auto bytes = [&] { return kjit::test::random_elements(DType::float32, n); };
    const auto x = bytes(), a = bytes(), b = bytes();
    const Array dx = Array::from_host(x.data(), DType::float32, {n}, kjit::Device::cuda(0));
    const Array da = Array::from_host(a.data(), DType::float32, {n}, kjit::Device::cuda(0));
    const Array db = Array::from_host(b.data(), DType::float32, {n}, kjit::Device::cuda(0));
    const std::vector<float> poison(n, std::nanf(""));
    const Array dy = Array::from_host(poison.data(), DType::float32, {n}, kjit::Device::cuda(0));
    struct {
        const void *x, *a, *b;
        void* y;
        long long n;
    } args{dx.data(), da.data(), db.data(), dy.data(), n};
    void* params[] = {&args};
    auto& d = kjit::detail::driver_on(0);
    KJIT_CU_CHECK(d.cuLaunchKernel(km.function("contiguous32"), 128, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
    KJIT_CU_CHECK(d.cuCtxSynchronize());
    std::vector<float> xs(n), as(n), bs(n), y(n);
    std::memcpy(xs.data(), x.data(), x.size());
    std::memcpy(as.data(), a.data(), a.size());
    std::memcpy(bs.data(), b.data(), b.size());
    dy.copy_to_host(y.data());
    std::size_t wrong = 0;
    for (std::int64_t k = 0; k < n; ++k) {
        const double ref = double(as[k]) * double(xs[k]) + double(bs[k]);
        if (!(std::fabs(y[k] - ref) <= 1e-5 * (std::fabs(ref) + 1))) ++wrong;
    }
    return wrong;
}

kjit::CacheSettings folder(const std::filesystem::path& dir) {
    kjit::CacheSettings s;
    s.dir = dir.string();
    return s;
}

}  // namespace

TEST_CASE("which cubins run on which GPUs", "[module]") {
    using kjit::detail::cubin_runs_on;
    CHECK(cubin_runs_on("sm_90", 90));
    CHECK(cubin_runs_on("sm_80", 86));   // later minor of the same major
    CHECK_FALSE(cubin_runs_on("sm_86", 80));
    CHECK_FALSE(cubin_runs_on("sm_80", 90));  // another major: PTX needed
    CHECK_FALSE(cubin_runs_on("compute_90", 90));
    CHECK_FALSE(cubin_runs_on("nonsense", 90));
}

TEST_CASE("the module registry loads a key once; a caller that waited for a failed load loads it itself", "[module]") {
    kjit::detail::ModuleRegistry registry;
    const auto module = [] { return std::make_shared<kjit::detail::LoadedModule>(nullptr, 0); };
    std::atomic<int> loads{0};
    SECTION("concurrent callers wait for the one load") {
        std::vector<std::thread> callers;
        std::vector<std::shared_ptr<kjit::detail::LoadedModule>> got(4);
        for (std::size_t k = 0; k < got.size(); ++k)
            callers.emplace_back([&, k] {
                got[k] = registry.get("k1", 0, [&] {
                    ++loads;
                    std::this_thread::sleep_for(std::chrono::milliseconds(50));
                    return module();
                });
            });
        for (auto& t : callers) t.join();
        CHECK(loads == 1);
        for (const auto& m : got) CHECK(m == got[0]);
    }
    SECTION("a caller whose wait ends in another's failure loads it itself; a failure is not remembered") {
        // Loads fail twice, then work. The first load's caller and one waiter fail by their own
        // loads; the other waiter, whichever it is, goes round again and gets the module.
        std::atomic<int> calls{0};
        std::atomic<bool> first_loading{false}, release{false};
        const auto load = [&]() -> std::shared_ptr<kjit::detail::LoadedModule> {
            const int call = ++calls;
            if (call == 1) {
                first_loading = true;
                while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            if (call <= 2) throw kjit::Error("out of memory, say");
            return module();
        };
        std::atomic<int> failed{0};
        std::vector<std::shared_ptr<kjit::detail::LoadedModule>> got(3);
        const auto caller = [&](std::size_t k) {
            try {
                got[k] = registry.get("k2", 0, load);
            } catch (const kjit::Error&) {
                ++failed;
            }
        };
        std::thread first(caller, 0);
        while (!first_loading) std::this_thread::yield();
        std::thread w1(caller, 1), w2(caller, 2);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // most likely both waiting now
        release = true;
        first.join();
        w1.join();
        w2.join();
        CHECK(calls == 3);
        CHECK(failed == 2);
        CHECK(got[0] == nullptr);
        CHECK((got[1] != nullptr) != (got[2] != nullptr));
        const auto kept = got[1] ? got[1] : got[2];
        CHECK(registry.get("k2", 0, [&] {
            ++loads;
            return module();
        }) == kept);
        CHECK(loads == 0);
    }
}

TEST_CASE("load() puts the device's cubin on the GPU", "[gpu][module]") {
    KJIT_REQUIRE_GPU();
    const kjit::ElementwiseKernel k("T x, T a, T b", "T y", "y = a * x + b", "load_axpb");
    const kjit::Module km = k.load({{"T", DType::float32}});
    CHECK_FALSE(km.compiled_from_ptx());
    CHECK(km.arch() == kjit::Device::cuda(0).properties().arch());
    REQUIRE(km.function("contiguous32") != nullptr);
    CHECK(km.function("strided64") != nullptr);
    CHECK(km.function(km.entry_points().at("small32")) == km.function("small32"));  // by symbol, too
    CHECK_THROWS_WITH(km.function("vectorised"), Catch::Contains("no entry point or symbol 'vectorised'") &&
                                                     Catch::Contains("contiguous32"));
    CHECK(wrong_axpb(km) == 0);
    // Loaded once per device: the same module again, also when 8 threads ask at once.
    const kjit::Module again = k.load({{"T", DType::float32}});
    CHECK(again.handle() == km.handle());
    CHECK(again.function("contiguous32") == km.function("contiguous32"));
    const kjit::ElementwiseKernel fresh("T x, T a, T b", "T y", "y = a * x + b + 0", "load_threads");
    std::vector<CUmodule> seen(8);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) threads.emplace_back([&, t] { seen[t] = fresh.load({{"T", DType::float32}}).handle(); });
    for (auto& th : threads) th.join();
    for (int t = 1; t < 8; ++t) CHECK(seen[t] == seen[0]);
}

TEST_CASE("without NVRTC, PTX cached for an older GPU is compiled by the driver and kept", "[gpu][module][nvrtc]") {
    KJIT_REQUIRE_GPU();
    const CacheSettingsGuard restore;
    const kjit::test::TempDir work;
    const kjit::ElementwiseKernel k("T x, T a, T b", "T y", "y = a * x + b", "ptx_axpb");
    const kjit::TypeBinding f32{{"T", DType::float32}};
    // A cache built elsewhere for sm_80 only (the H200 is sm_90: its cubin cannot run here).
    kjit::configure_cache(folder(work.path() / "shipped"));
    REQUIRE(k.compile(f32, "sm_80").arch == "sm_80");

    kjit::CacheSettings app = folder(work.path() / "app");
    app.read_only = {(work.path() / "shipped").string()};
    kjit::configure_cache(app);
    const kjit::detail::ScopedNvrtcOverride no_nvrtc(nullptr);
    const kjit::Module first = k.load(f32);
    CHECK(first.compiled_from_ptx());
    CHECK(first.arch() == kjit::Device::cuda(0).properties().arch());
    CHECK(wrong_axpb(first) == 0);

    kjit::configure_cache(app);  // as a new process: empty memory, same folders
    const kjit::Module second = k.load(f32);
    CHECK_FALSE(second.compiled_from_ptx());  // the driver's cubin was kept in the writable folder
    CHECK(wrong_axpb(second) == 0);

    const kjit::ElementwiseKernel missing("T x", "T y", "y = x + 1", "not_shipped");
    CHECK_THROWS_AS(missing.load(f32), kjit::NoDeviceError);
}

TEST_CASE("a Module that holds nothing says so", "[module]") {
    const kjit::Module empty;
    CHECK_THROWS_WITH(empty.function("contiguous32"), Catch::Contains("holds no module"));
    CHECK_THROWS_AS(empty.entry_points(), kjit::Error);
}

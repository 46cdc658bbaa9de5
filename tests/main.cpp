// The test runner. When asked for the [gpu] tests only and there is no GPU, it says so and exits
// with 77, which ctest reports as "skipped" (never as passed).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "kjit/device.hpp"
#include "test_support.hpp"

int main(int argc, char** argv) {
    // Every run compiles into a cache folder of its own, so that a cache left by an earlier run
    // can never make a compile test pass without compiling.
    const kjit::test::TempDir cache_dir;
    ::setenv("KJIT_CACHE_DIR", cache_dir.path().c_str(), 1);
    ::unsetenv("KJIT_CACHE_PATH");
    ::unsetenv("KJIT_CACHE_RECORD");
    // The tests hold kjit's objects themselves, so the host back end is not beside "libkjit" (this
    // program) but one folder up, in the build and in tools/pack-for-gpu.sh's copy. The run path
    // says so too, but a sanitizer's dlopen interceptor loads with its own (none).
    std::error_code ec;
    const std::filesystem::path backend =
        std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().parent_path() / "libkjit_host.so";
    if (!ec && std::filesystem::exists(backend, ec)) ::setenv("KJIT_HOST_BACKEND", backend.c_str(), 0);
    Catch::Session session;
    if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
    bool gpu_only = false;
    for (int i = 1; i < argc; ++i) gpu_only = gpu_only || std::string(argv[i]) == "[gpu]";
    if (gpu_only && !kjit::test::gpu_available()) {
        std::printf("SKIPPED: the [gpu] tests need a GPU: %s\n", kjit::no_device_reason().c_str());
        return 77;
    }
    std::printf("kjit tests: random seed %llu (set KJIT_TEST_SEED to replay)\n",
                static_cast<unsigned long long>(kjit::test::seed()));
    return session.run();
}

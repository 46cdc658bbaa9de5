// The warm start (jit/warm_start.hpp): the runtime's context-creation hook, the prepared process
// cache and when it is taken, and the thread's start, exit and fork. The warm start runs once per
// process, so what it does to a fresh process is checked in fresh processes: this test program
// started again with a hidden test case, on the pretend driver.
#include "test_support.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cache/entry.hpp"
#include "cache/kernel_cache.hpp"
#include "fake_driver.hpp"
#include "gpu_data.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "jit/warm_start.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/module.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using kjit::test::ScopedEnv;

int g_hook_calls = 0;
int g_hook_calls_at_retain = -1;  // g_hook_calls when the driver was asked to retain a context
void count_hook() noexcept { ++g_hook_calls; }

// The pretend driver, noting when it retains a context.
kjit::detail::DriverApi noting_driver() {
    kjit::detail::DriverApi api = kjit::test::make_fake_sm90_driver();
    api.cuDevicePrimaryCtxRetain = [](CUcontext* c, CUdevice d) {
        g_hook_calls_at_retain = g_hook_calls;
        *c = reinterpret_cast<CUcontext>(static_cast<std::uintptr_t>(0x1000 + d));
        return CUDA_SUCCESS;
    };
    return api;
}

// A pretend driver whose primary context is already active (an application made it).
kjit::detail::DriverApi driver_with_active_context() {
    kjit::detail::DriverApi api = kjit::test::make_fake_sm90_driver();
    api.cuDevicePrimaryCtxGetState = [](CUdevice, unsigned int* flags, int* active) {
        *flags = 0;
        *active = 1;
        return CUDA_SUCCESS;
    };
    return api;
}

// This test program again, running only the hidden case [warm_start_child] with `mode` (and the
// environment given, on top of this one's); its exit status (0: every check there passed).
int run_child(const std::string& mode, const std::vector<std::string>& env) {
    std::vector<std::string> vars = env;
    vars.push_back("KJIT_TEST_WARM_MODE=" + mode);
    auto set_here = [&](std::string_view var) {
        const std::string_view name = var.substr(0, var.find('='));
        for (const std::string& v : vars)
            if (v.starts_with(name) && v.size() > name.size() && v[name.size()] == '=') return true;
        return false;
    };
    for (char** e = environ; *e != nullptr; ++e)
        if (!set_here(*e)) vars.emplace_back(*e);
    std::vector<char*> envp;
    for (std::string& v : vars) envp.push_back(v.data());
    envp.push_back(nullptr);
    std::string self = fs::read_symlink("/proc/self/exe").string(), tag = "[warm_start_child]";
    char* argv[] = {self.data(), tag.data(), nullptr};
    // Its output goes to a file, shown only when it failed.
    const kjit::test::TempDir out;
    const std::string log = (out.path() / "child.log").string();
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&files, 1, 2);
    pid_t pid = 0;
    const int spawned = ::posix_spawn(&pid, self.c_str(), &files, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&files);
    REQUIRE(spawned == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (rc != 0) {
        std::ifstream f(log);
        UNSCOPED_INFO("the child (" << mode << ") printed:\n" << std::string(std::istreambuf_iterator<char>(f), {}));
    }
    return rc;
}

}  // namespace

TEST_CASE("the runtime calls the context-creation hook before it makes a primary context, not for an active one",
          "[warm_start]") {
    const kjit::detail::ContextCreationHook previous = kjit::detail::on_context_creation(&count_hook);
    g_hook_calls = 0;
    {
        kjit::detail::ScopedDriverOverride fake(noting_driver(), 1);
        (void)kjit::detail::driver_on(0);
        CHECK(g_hook_calls == 1);
        CHECK(g_hook_calls_at_retain == 1);  // called before the context is made
        (void)kjit::detail::driver_on(0);  // kept: not made again
        CHECK(g_hook_calls == 1);
    }
    {
        kjit::detail::ScopedDriverOverride fake(driver_with_active_context(), 1);
        (void)kjit::detail::driver_on(0);
        CHECK(g_hook_calls == 1);  // the application's context: nothing to overlap
    }
    CHECK(kjit::detail::on_context_creation(previous) == &count_hook);
}

TEST_CASE("a prepared process cache is taken only while the environment gives its settings", "[warm_start][kernel_cache]") {
    const kjit::test::ProcessCacheGuard restore;
    kjit::test::TempDir tmp;
    const fs::path a = tmp.path() / "a", b = tmp.path() / "b";
    fs::create_directories(a);
    fs::create_directories(b);
    ScopedEnv dir("KJIT_CACHE_DIR", a.c_str());
    ScopedEnv path("KJIT_CACHE_PATH", nullptr);

    kjit::cache::forget_process_cache();
    REQUIRE(kjit::cache::prepare_process_cache(kjit::CacheSettings::from_environment()) != nullptr);
    CHECK(kjit::cache::prepare_process_cache(kjit::CacheSettings::from_environment()) == nullptr);  // one is there
    CHECK(kjit::cache::process_cache()->settings().dir == a.string());
    CHECK(kjit::cache::process_cache_was_prepared());
    CHECK(kjit::cache::prepare_process_cache(kjit::CacheSettings::from_environment()) == nullptr);  // made already

    // The environment changed after the cache was prepared: the prepared one is dropped.
    kjit::cache::forget_process_cache();
    REQUIRE(kjit::cache::prepare_process_cache(kjit::CacheSettings::from_environment()) != nullptr);
    {
        ScopedEnv other("KJIT_CACHE_DIR", b.c_str());
        CHECK(kjit::cache::process_cache()->settings().dir == b.string());
        CHECK_FALSE(kjit::cache::process_cache_was_prepared());
    }

    // configure_cache() wins over a prepared cache.
    kjit::cache::forget_process_cache();
    REQUIRE(kjit::cache::prepare_process_cache(kjit::CacheSettings::from_environment()) != nullptr);
    kjit::configure_cache(kjit::test::cache_in(b));
    CHECK(kjit::cache::process_cache()->settings().dir == b.string());
    CHECK_FALSE(kjit::cache::process_cache_was_prepared());
}

TEST_CASE("a fresh process's context creation readies its kernel cache on the warm start's thread", "[warm_start]") {
    kjit::test::TempDir tmp;
    const fs::path a = tmp.path() / "a", b = tmp.path() / "b";
    fs::create_directories(a);
    fs::create_directories(b);
    const std::string dir_a = "KJIT_TEST_WARM_DIR=" + a.string(), no_off = "KJIT_WARM_START=1";
    SECTION("taken when the environment is unchanged") { CHECK(run_child("taken", {dir_a, no_off}) == 0); }
    SECTION("dropped when the environment changed before the first call") {
        CHECK(run_child("changed:" + b.string(), {dir_a, no_off}) == 0);
    }
    SECTION("a cache folder that is not there is not made") {
        CHECK(run_child("missing", {"KJIT_TEST_WARM_DIR=" + (tmp.path() / "none").string(), no_off}) == 0);
        CHECK_FALSE(fs::exists(tmp.path() / "none"));
    }
    SECTION("not started with KJIT_WARM_START=0") { CHECK(run_child("off", {dir_a, "KJIT_WARM_START=0"}) == 0); }
    SECTION("not started for an application's active context") { CHECK(run_child("active", {dir_a, no_off}) == 0); }
    SECTION("a process that exits while it runs waits for it, then exits cleanly") {
        CHECK(run_child("exit", {dir_a, no_off}) == 0);
    }
    SECTION("a fork while it runs waits for it; the child's cache works") { CHECK(run_child("fork", {dir_a, no_off}) == 0); }
}

TEST_CASE("the warm start loads the module a note read ahead carries once the context is made", "[warm_start][module_preload]") {
    kjit::test::TempDir tmp;
    const fs::path a = tmp.path() / "a";
    kjit::cache::Entry e;
    e.key = "0123456789abcdef0123456789abcdef";
    e.meta.arch = "sm_90";
    e.meta.kernel_name = "noted";
    e.cubin = {0x7f, 'E', 'L', 'F', 1, 2, 3};
    {
        kjit::cache::KernelCache writer(kjit::test::cache_in(a));
        REQUIRE(writer.write_note(std::string(32, 'e'), "a note\n", kjit::cache::serialize_entry(e)));
    }
    const auto env = [&](const std::string& setting) {
        return std::vector<std::string>{"KJIT_TEST_WARM_DIR=" + a.string(), "KJIT_TEST_WARM_KEY=" + e.key,
                                        "KJIT_WARM_START=" + setting};
    };
    SECTION("loaded, its functions on the GPU") { CHECK(run_child("preload", env("1")) == 0); }
    SECTION("not with KJIT_WARM_START=files") { CHECK(run_child("preload-files", env("files")) == 0); }
    SECTION("not when the context could not be made") { CHECK(run_child("preload-failed", env("1")) == 0); }
}

TEST_CASE("on the GPU, the warm start runs when kjit makes the context and readies the first call's cache",
          "[gpu][warm_start]") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir tmp;
    CHECK(run_child("gpu", {"KJIT_TEST_WARM_DIR=" + tmp.path().string(), "KJIT_WARM_START=1"}) == 0);
}

TEST_CASE("on the GPU, a module loaded ahead is the one the first call runs, and computes what the host does",
          "[gpu][warm_start][module_preload]") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir tmp;
    const std::vector<std::string> env{"KJIT_TEST_WARM_DIR=" + tmp.path().string(), "KJIT_WARM_START=1"};
    REQUIRE(run_child("gpu-note", env) == 0);     // compiles the kernel: its note is written
    CHECK(run_child("gpu-preload", env) == 0);    // a fresh process: loaded ahead, then called
}

// Not a test on its own: what run_child() starts (KJIT_TEST_WARM_MODE says what to check).
TEST_CASE("warm start in a fresh process", "[.][warm_start_child]") {
    const char* m = std::getenv("KJIT_TEST_WARM_MODE");
    REQUIRE(m != nullptr);
    const std::string mode = m;
    const bool active = mode == "active";
    if (mode == "gpu") {  // the real driver, whose context this process has not made yet
        const ScopedEnv cache_dir("KJIT_CACHE_DIR", std::getenv("KJIT_TEST_WARM_DIR"));
        kjit::cache::forget_process_cache();
        kjit::Device::set_current(0);
        REQUIRE(kjit::jit::warm_start_started());
        kjit::jit::wait_for_warm_start();
        (void)kjit::cache::process_cache();
        CHECK(kjit::cache::process_cache_was_prepared());
        return;
    }
    if (mode == "gpu-note" || mode == "gpu-preload") {  // y = a * x + b, noted, then loaded ahead
        const ScopedEnv cache_dir("KJIT_CACHE_DIR", std::getenv("KJIT_TEST_WARM_DIR"));
        kjit::cache::forget_process_cache();
        kjit::Device::set_current(0);
        REQUIRE(kjit::jit::warm_start_started());
        kjit::jit::wait_for_warm_start();
        const std::size_t loaded_ahead = kjit::detail::ModuleRegistry::process().size();
        CHECK(loaded_ahead == (mode == "gpu-preload" ? 1u : 0u));  // nothing noted before the first process
        const std::int64_t n = 4099;
        const kjit::test::DeviceData x = kjit::test::random_device(kjit::DType::float32, {n});
        const kjit::Array y = kjit::test::poisoned(kjit::DType::float32, {n});
        const kjit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "warm_axpb");
        axpb.launch({x.device, 1.75f, -0.5f, y});
        const auto* xs = reinterpret_cast<const float*>(x.host.data());
        CHECK(kjit::test::mismatches(y, [&](std::size_t k) { return 1.75 * double(xs[k]) - 0.5; }, 1e-6, 1e-6) == 0);
        // The call ran the module loaded ahead: no other was loaded.
        CHECK(kjit::detail::ModuleRegistry::process().size() == (mode == "gpu-preload" ? loaded_ahead : 1u));
        return;
    }
    // tests/main.cpp points KJIT_CACHE_DIR at a folder of its own: set as a process started with
    // the test's folder would have it, before anything is made.
    const char* dir = std::getenv("KJIT_TEST_WARM_DIR");
    REQUIRE(dir != nullptr);
    const ScopedEnv cache_dir("KJIT_CACHE_DIR", dir);
    kjit::cache::forget_process_cache();
    // "exit" and "fork": the thread sleeps first, so that it is surely running when the process
    // exits or forks.
    constexpr int kPauseMs = 300;
    if (mode == "exit" || mode == "fork") kjit::jit::set_warm_start_pause_for_tests(kPauseMs);
    if (mode.starts_with("preload")) {
        const auto start = std::chrono::steady_clock::now();
        const bool fails = mode == "preload-failed";
        kjit::detail::DriverApi api = kjit::test::make_fake_sm90_driver();
        if (fails) api.cuDevicePrimaryCtxRetain = [](CUcontext*, CUdevice) { return CUDA_ERROR_OUT_OF_MEMORY; };
        kjit::detail::ScopedDriverOverride fake(api, 1);
        if (fails) CHECK_THROWS(kjit::detail::driver_on(0));
        else (void)kjit::detail::driver_on(0);
        REQUIRE(kjit::jit::warm_start_started());
        kjit::jit::wait_for_warm_start();  // at once: it waited for the context's news, not for a timeout
        CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
        const bool loads = mode == "preload";
        // Every setting read the note ahead, and its entry with it: only the loads differ.
        CHECK(kjit::cache::process_cache()->entries_read_ahead().size() == 1);
        CHECK(kjit::cache::process_cache_was_prepared());
        CHECK(kjit::test::fake_state().modules_loaded == (loads ? 1 : 0));
        CHECK(kjit::test::fake_state().functions_loaded == (loads ? 1 : 0));
        if (loads) {
            bool loaded_now = false;
            (void)kjit::detail::ModuleRegistry::process().get(std::getenv("KJIT_TEST_WARM_KEY"), 0, [&] {
                loaded_now = true;
                return std::make_shared<kjit::detail::LoadedModule>(nullptr, 0);
            });
            CHECK_FALSE(loaded_now);  // the registry has it: a first call would wait for it, not load it
        }
        return;
    }
    kjit::detail::ScopedDriverOverride fake(active ? driver_with_active_context() : kjit::test::make_fake_sm90_driver(), 1);
    const auto made = std::chrono::steady_clock::now();
    (void)kjit::detail::driver_on(0);  // the context is made: the hook runs
    if (mode == "exit") {
        // Exits now, the thread asleep: the exit handler waits for it (this process's status,
        // which run_child() checks, would show a crash of a thread left running through exit).
        REQUIRE(kjit::jit::warm_start_started());
        return;
    }
    if (mode == "fork") {
        const pid_t pid = ::fork();
        const auto forked = std::chrono::steady_clock::now();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::alarm(10);  // a child stuck on a lock the thread held would hang: killed then
            // The process cache, which the thread made under its lock: usable here.
            const bool usable = kjit::cache::process_cache() != nullptr && kjit::cache::process_cache_was_prepared();
            std::exit(usable ? 0 : 3);
        }
        CHECK(forked - made >= std::chrono::milliseconds(kPauseMs - 50));  // fork waited for the thread
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
        return;
    }
    if (mode == "off" || active) {
        CHECK_FALSE(kjit::jit::warm_start_started());
        CHECK_FALSE(kjit::cache::process_cache_was_prepared());
        (void)kjit::cache::process_cache();
        CHECK_FALSE(kjit::cache::process_cache_was_prepared());
        return;
    }
    REQUIRE(kjit::jit::warm_start_started());
    if (mode == "missing") {
        kjit::jit::wait_for_warm_start();
        CHECK_FALSE(fs::exists(std::getenv("KJIT_CACHE_DIR")));  // the first call makes it, not the warm start
        return;
    }
    std::optional<ScopedEnv> changed;
    if (mode.starts_with("changed:")) changed.emplace("KJIT_CACHE_DIR", mode.substr(8).c_str());
    kjit::jit::wait_for_warm_start();
    const std::shared_ptr<kjit::cache::KernelCache> cache = kjit::cache::process_cache();
    CHECK(cache->settings().dir == std::string(std::getenv("KJIT_CACHE_DIR")));
    CHECK(kjit::cache::process_cache_was_prepared() == (mode == "taken"));
}

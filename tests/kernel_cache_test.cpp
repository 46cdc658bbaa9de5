// The kernel cache: keys, memory, layers, compile-once, record mode, and a cache precompiled
// from a recorded manifest that serves a process without NVRTC.
#include "test_support.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/cache_key.hpp"
#include "cache/disk_store.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/manifest.hpp"
#include "jit/compile/arch.hpp"
#include "jit/kernels/elementwise/calls.hpp"
#include "jit/compile/nvrtc_compiler.hpp"
#include "jit/compile/nvrtc_identity.hpp"
#include "jit/kernels/precompile.hpp"
#include "kjit/cache.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"
#include "kjit/info.hpp"
#include "kjit/device.hpp"
#include "fake_driver.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/nvrtc.hpp"

using kjit::test::cache_in;
using kjit::test::ProcessCacheGuard;
namespace fs = std::filesystem;
using kjit::DType;
using kjit::cache::Entry;
using kjit::cache::KernelCache;
using kjit::cache::Request;
using Catch::Matchers::Contains;

namespace {

Entry fake_entry(const std::string& key, const std::string& ptx) {
    Entry e;
    e.key = key;
    e.meta.kernel_name = "k";
    e.meta.arch = "sm_90";
    const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 1, 2, 3};
    e.cubin.assign(std::begin(elf), std::end(elf));
    e.ptx = ptx;
    return e;
}

}  // namespace

TEST_CASE("cache keys hash everything that changes the bytes, and nothing else", "[kernel_cache]") {
    using kjit::cache::make_key;
    const std::vector<std::string> opts{"-std=c++17", "-minimal"};
    const std::string k = make_key("src", opts, "sm_90", "nvrtc-13.0+bid:1");
    CHECK(kjit::cache::is_key(k));
    CHECK(k == make_key("src", opts, "sm_90", "nvrtc-13.0+bid:1"));
    CHECK(k != make_key("src2", opts, "sm_90", "nvrtc-13.0+bid:1"));
    CHECK(k != make_key("src", {"-std=c++17"}, "sm_90", "nvrtc-13.0+bid:1"));
    CHECK(k != make_key("src", opts, "sm_80", "nvrtc-13.0+bid:1"));
    CHECK(k != make_key("src", opts, "sm_90", "nvrtc-13.0+bid:2"));
    CHECK(k != kjit::cache::make_alias_key("src", opts, "sm_90"));
    // One option, two spellings: one key.
    CHECK(make_key("s", {"-lineinfo", " -std=c++17 "}, "sm_90", "v") ==
          make_key("s", {"--generate-line-info", "--std=c++17"}, "sm_90", "v"));
    // Fields cannot run into each other.
    CHECK(make_key("ab", {"c"}, "sm_90", "v") != make_key("a", {"bc"}, "sm_90", "v"));
    CHECK_FALSE(kjit::cache::is_key("xyz"));
}

TEST_CASE("the cache compiles a key once, then serves it from memory, then from disk", "[kernel_cache]") {
    const kjit::test::TempDir dir;
    std::atomic<int> compiles{0};
    const std::string key = kjit::cache::make_key("a", {}, "sm_90", "v");
    Request r{key, kjit::cache::make_alias_key("a", {}, "sm_90"), "sm_90", "", [&] {
                  ++compiles;
                  return fake_entry(key, "ptx-a");
              }};
    {
        KernelCache cache(cache_in(dir.path()));
        CHECK(cache.get(r)->ptx == "ptx-a");
        CHECK(cache.get(r)->ptx == "ptx-a");
        CHECK(compiles == 1);
        const kjit::CacheStats s = cache.stats();
        CHECK(s.memory_hits == 1);
        CHECK(s.memory_misses == 1);
        CHECK(s.compiles == 1);
        REQUIRE(s.layers.size() == 1);
        CHECK(s.layers[0].misses == 1);
    }
    KernelCache fresh(cache_in(dir.path()));  // as a new process would
    CHECK(fresh.get(r)->ptx == "ptx-a");
    CHECK(compiles == 1);
    CHECK(fresh.stats().layers[0].hits == 1);
}

TEST_CASE("concurrent first calls compile once; different keys compile in parallel", "[kernel_cache]") {
    const kjit::test::TempDir dir;
    KernelCache cache(cache_in(dir.path()));
    std::atomic<int> compiles{0}, running{0}, most_running{0};
    auto request = [&](const std::string& name) {
        const std::string key = kjit::cache::make_key(name, {}, "sm_90", "v");
        return Request{key, "", "sm_90", "", [&, key] {
                           ++compiles;
                           const int now = ++running;
                           for (int seen = most_running; now > seen && !most_running.compare_exchange_weak(seen, now);) {
                           }
                           std::this_thread::sleep_for(std::chrono::milliseconds(50));
                           --running;
                           return fake_entry(key, "ptx");
                       }};
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t) threads.emplace_back([&] { CHECK(cache.get(request("same"))->ptx == "ptx"); });
    for (auto& t : threads) t.join();
    CHECK(compiles == 1);
    threads.clear();
    compiles = 0;
    most_running = 0;
    for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { cache.get(request("other" + std::to_string(t))); });
    for (auto& t : threads) t.join();
    CHECK(compiles == 4);
    CHECK(most_running > 1);  // no lock held across a compile
}

TEST_CASE("a failed compile reaches every waiter and is retried by the next call", "[kernel_cache]") {
    const kjit::test::TempDir dir;
    KernelCache cache(cache_in(dir.path()));
    const std::string key = kjit::cache::make_key("f", {}, "sm_90", "v");
    int attempts = 0;
    Request r{key, "", "sm_90", "", [&]() -> Entry {
                  if (++attempts == 1) throw kjit::CompileError("broken", "log", "src");
                  return fake_entry(key, "ok");
              }};
    CHECK_THROWS_AS(cache.get(r), kjit::CompileError);
    CHECK(cache.get(r)->ptx == "ok");
    CHECK(attempts == 2);
}

TEST_CASE("read-only layers serve entries; an unusable writable folder only warns", "[kernel_cache]") {
    const kjit::test::TempDir shipped, other;
    const std::string key = kjit::cache::make_key("ro", {}, "sm_90", "v");
    int compiles = 0;
    Request r{key, "", "sm_90", "", [&] {
                  ++compiles;
                  return fake_entry(key, "shipped");
              }};
    KernelCache(cache_in(shipped.path())).get(r);
    REQUIRE(compiles == 1);
    kjit::CacheSettings s;
    s.dir = (other.path() / "file-not-folder").string();
    std::ofstream(s.dir) << "in the way";  // the writable folder cannot be created
    s.read_only = {(other.path() / "missing").string(), shipped.path().string()};
    KernelCache layered(s);
    CHECK(layered.get(r)->ptx == "shipped");
    CHECK(compiles == 1);
    const kjit::CacheStats st = layered.stats();
    REQUIRE(st.layers.size() == 3);
    CHECK_FALSE(st.layers[0].writable);
    CHECK(st.layers[1].misses == 1);
    CHECK(st.layers[2].hits == 1);
}

TEST_CASE("manifests merge kernels and bindings without duplicates", "[kernel_cache]") {
    nlohmann::json m;
    const nlohmann::json k1 = {{"kind", "elementwise"}, {"name", "a"}, {"in", "T x"}, {"out", "T y"}, {"op", "y = x"},
                               {"types", {{{"T", "float32"}}}}};
    nlohmann::json k2 = k1;
    k2["types"] = {{{"T", "int8"}}};
    kjit::cache::merge_into_manifest(m, k1, "sm_90");
    kjit::cache::merge_into_manifest(m, k2, "sm_90");
    kjit::cache::merge_into_manifest(m, k1, "sm_80");
    REQUIRE(m["kernels"].size() == 1);
    CHECK(m["kernels"][0]["types"].size() == 2);
    CHECK(m["arch"] == nlohmann::json({"sm_90", "sm_80"}));
    const kjit::test::TempDir dir;
    std::ofstream(dir.path() / "bad.json") << R"({"kernels": [{"name": 3}]})";
    CHECK_THROWS_WITH(kjit::cache::read_manifest(dir.path() / "bad.json"), Contains("kernel 0: \"kind\" must be a string"));
    CHECK_THROWS_AS(kjit::cache::read_manifest(dir.path() / "none.json"), kjit::IoError);
}

TEST_CASE("kernels recorded at once by several threads are all kept, and no lock file is left", "[kernel_cache]") {
    const kjit::test::TempDir dir;
    const std::filesystem::path manifest = dir.path() / "manifest.json";
    constexpr int threads = 6, each = 8;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            for (int k = 0; k < each; ++k) {
                const nlohmann::json kernel = {{"kind", "elementwise"}, {"name", "k" + std::to_string(t) + "_" + std::to_string(k)},
                                               {"in", "T x"}, {"out", "T y"}, {"op", "y = x"}, {"types", {{{"T", "float32"}}}}};
                kjit::cache::record_in_manifest(manifest, kernel, "sm_90");
            }
        });
    for (std::thread& t : pool) t.join();
    const nlohmann::json m = nlohmann::json::parse(std::ifstream(manifest));
    CHECK(m["kernels"].size() == static_cast<std::size_t>(threads * each));
    CHECK_FALSE(std::filesystem::exists(manifest.string() + ".lock"));
}

TEST_CASE("record, precompile, then a process without NVRTC finds every kernel", "[kernel_cache][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    const auto manifest = work.path() / "manifest.json";
    const kjit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb_rec");
    const kjit::ElementwiseKernel scale("T x, float64 s", "T y", "y = x * s", "scale_rec");

    // 1. An application runs with KJIT_CACHE_RECORD: each kernel it uses is appended.
    kjit::CacheSettings app = cache_in(work.path() / "app-cache");
    app.record = manifest.string();
    kjit::configure_cache(app);
    axpb.compile({{"T", DType::float32}}, "sm_90");
    axpb.compile({{"T", DType::float64}}, "sm_90");
    axpb.compile({{"T", DType::float32}}, "sm_90");
    scale.compile({{"T", DType::int16}}, "sm_90");
    const nlohmann::json recorded = kjit::cache::read_manifest(manifest);
    REQUIRE(recorded["kernels"].size() == 2);
    CHECK(recorded["kernels"][0]["types"].size() == 2);

    // 2. A build machine precompiles it for two architectures; a second run compiles nothing.
    kjit::configure_cache(cache_in(work.path() / "shipped"));
    const auto first = kjit::jit::kernels::precompile(recorded, {"sm_80", "sm_90"}, 2);
    CHECK(first.failures.empty());
    // A job per variant calls load (jit/kernels/elementwise/calls.hpp): contiguous, strided, rows, tiled.
    CHECK(first.jobs >= 3 * 2 * 4);
    CHECK(first.compiled == first.jobs);
    CHECK(first.stored == first.jobs);
    CHECK(first.not_stored == 0);
    kjit::configure_cache(cache_in(work.path() / "shipped"));
    const auto second = kjit::jit::kernels::precompile(recorded, {"sm_80", "sm_90"}, 2);
    CHECK(second.compiled == 0);
    CHECK(second.stored == 0);
    // Issue 30: into a folder that is refused (others may write to it), every build is compiled
    // and none stored, and precompile says so instead of "0 failed" alone.
    const fs::path refused = work.path() / "refused";
    fs::create_directory(refused);
    fs::permissions(refused, fs::perms::all);
    kjit::configure_cache(cache_in(refused));
    const auto unstored = kjit::jit::kernels::precompile(recorded, {"sm_90"}, 2);
    CHECK(unstored.failures.empty());
    CHECK(unstored.compiled == unstored.jobs);
    CHECK(unstored.stored == 0);
    CHECK(unstored.not_stored == unstored.jobs);

    // 3. The application ships that folder read-only and has no NVRTC.
    kjit::CacheSettings shipped;
    shipped.dir = (work.path() / "empty-writable").string();
    shipped.read_only = {(work.path() / "shipped").string()};
    kjit::configure_cache(shipped);
    const kjit::detail::ScopedNvrtcOverride no_nvrtc(nullptr);
    for (const char* arch : {"sm_80", "sm_90"}) {
        INFO(arch);
        for (const auto& [kernel, binding] : {std::pair{&axpb, kjit::TypeBinding{{"T", DType::float64}}},
                                              std::pair{&scale, kjit::TypeBinding{{"T", DType::int16}}}})
            for (const kjit::jit::kernels::ElementwiseEntry e : kjit::jit::kernels::elementwise_entries(*kernel, binding, {})) {
                INFO(kernel->name() << " " << kjit::jit::kernels::elementwise_entry_label(e));
                const kjit::jit::kernels::CompiledModules c = kjit::jit::kernels::compile_elementwise_entry(*kernel, binding, {}, arch, e);
                CHECK(c.arch == arch);
                CHECK(c.compile_ms == 0);
            }
    }
    CHECK(kjit::cache_stats().compiles == 0);
    // The module of every variant at once (compile(), `kjit compile`) is not what calls load, and
    // precompile does not build it.
    CHECK_THROWS_AS(axpb.compile({{"T", DType::float64}}, "sm_90"), kjit::NoDeviceError);
    // A kernel the manifest did not have: a clear error naming it and the missing NVRTC.
    CHECK_THROWS_AS(scale.compile({{"T", DType::float32}}, "sm_90"), kjit::NoDeviceError);
    CHECK_THROWS_WITH(scale.compile({{"T", DType::float32}}, "sm_90"),
                      Contains("scale_rec") && Contains("T=float32") && Contains("NVRTC"));
}

TEST_CASE("calls' module variants (scalars, converted inputs) are recorded and precompiled", "[kernel_cache][nvrtc]") {
    // A call that passes `a` as a scalar and an int16 `x` to a float32 parameter needs another
    // module than the plain binding: the manifest must say so, or a shipped cache would miss it.
    const ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    const auto manifest = work.path() / "manifest.json";
    const kjit::ElementwiseKernel axpb("T x, T a", "T y", "y = a * x", "axpb_variant");
    kjit::jit::kernels::ModuleVariant v;
    v.scalar = {false, true, false};
    v.storage = {DType(DType::int16), std::nullopt, std::nullopt};
    const kjit::TypeBinding f32{{"T", DType::float32}};
    kjit::CacheSettings app = cache_in(work.path() / "app-cache");
    app.record = manifest.string();
    kjit::configure_cache(app);
    const kjit::Binary made = kjit::jit::kernels::compile_elementwise(axpb, f32, v, "sm_90");
    const nlohmann::json recorded = kjit::cache::read_manifest(manifest);
    REQUIRE(recorded["kernels"].size() == 1);
    CHECK(recorded["kernels"][0]["scalars"] == nlohmann::json::array({"a"}));
    CHECK(recorded["kernels"][0]["storage"] == nlohmann::json({{"x", "int16"}}));

    kjit::configure_cache(cache_in(work.path() / "shipped"));
    const auto built = kjit::jit::kernels::precompile(recorded, {"sm_90"}, 1);
    CHECK(built.failures.empty());
    CHECK(built.compiled == built.jobs);  // one job per variant of that module

    kjit::CacheSettings shipped;
    shipped.dir = (work.path() / "empty-writable").string();
    shipped.read_only = {(work.path() / "shipped").string()};
    kjit::configure_cache(shipped);
    const kjit::detail::ScopedNvrtcOverride no_nvrtc(nullptr);
    for (const kjit::jit::kernels::ElementwiseEntry e : kjit::jit::kernels::elementwise_entries(axpb, f32, v)) {
        INFO(kjit::jit::kernels::elementwise_entry_label(e));
        CHECK(kjit::jit::kernels::compile_elementwise_entry(axpb, f32, v, "sm_90", e).compile_ms == 0);
    }
    CHECK(kjit::cache_stats().compiles == 0);
    CHECK_THAT(made.source, Contains("int16"));
    // The plain binding was never recorded, so it is not there.
    CHECK_THROWS_AS(kjit::jit::kernels::compile_elementwise_entry(axpb, f32, {}, "sm_90", kjit::jit::kernels::ElementwiseEntry::contiguous32),
                    kjit::NoDeviceError);

    // A manifest naming a parameter the kernel does not have fails clearly.
    nlohmann::json bad = recorded;
    bad["kernels"][0]["scalars"] = nlohmann::json::array({"b"});
    kjit::configure_cache(cache_in(work.path() / "other"));
    const auto failed = kjit::jit::kernels::precompile(bad, {"sm_90"}, 1);
    REQUIRE(failed.failures.size() == 1);
}

// Not a test: what a cache hit costs, run by hand or by the GPU script with
// `kjit_tests "[cache_bench]"`; numbers go to docs/PERFORMANCE.md.
TEST_CASE("the NVRTC a process would load is remembered beside the cache", "[kernel_cache][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    kjit::ElementwiseKernel("T x", "T y", "y = x + 3", "remember").compile({{"T", DType::float32}}, "sm_90");
    const auto id = kjit::jit::compile::remembered_nvrtc(dir.path().string());
    REQUIRE(id.has_value());
    CHECK(id->version_key == kjit::jit::compile::nvrtc_version_key());
    CHECK(id->supported_archs == kjit::jit::compile::nvrtc_supported_archs());
    // Another environment could load another NVRTC: the record does not apply.
    const char* old = std::getenv("LD_LIBRARY_PATH");
    const std::string saved = old ? old : "";
    ::setenv("LD_LIBRARY_PATH", "/somewhere/else", 1);
    CHECK_FALSE(kjit::jit::compile::remembered_nvrtc(dir.path().string()).has_value());
    if (old) ::setenv("LD_LIBRARY_PATH", saved.c_str(), 1); else ::unsetenv("LD_LIBRARY_PATH");
    CHECK(kjit::jit::compile::remembered_nvrtc(dir.path().string()).has_value());
    // A damaged record is no record: cut short, a field changed, a bad list of architectures.
    std::string record;
    {
        std::ifstream in(dir.path() / "nvrtc-identity");
        record.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    auto with = [&](const std::string& text) {
        std::ofstream(dir.path() / "nvrtc-identity", std::ios::trunc) << text;
        return kjit::jit::compile::remembered_nvrtc(dir.path().string()).has_value();
    };
    CHECK(with(record));
    CHECK_FALSE(with(record.substr(0, record.size() / 2)));
    CHECK_FALSE(with(record.substr(0, record.size() - 1)));
    const std::size_t size_at = record.find("\nsize=") + 6;
    CHECK_FALSE(with(record.substr(0, size_at) + "1" + record.substr(size_at)));
    const std::size_t archs_at = record.find("archs=") + 6;
    CHECK_FALSE(with(record.substr(0, archs_at) + "90,,x\n"));
    CHECK_FALSE(with(record + "extra=1\n"));
    CHECK_FALSE(with("{\"environment\": 1"));
    CHECK_FALSE(kjit::jit::compile::remembered_nvrtc("").has_value());
}

TEST_CASE("KJIT_SAVE_SOURCE=1 writes each compiled program's source beside the cache", "[kernel_cache][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const kjit::ElementwiseKernel k("T x", "T y", "y = x * 7", "saved_source");
    k.compile({{"T", DType::float32}}, "sm_90");
    CHECK_FALSE(fs::exists(dir.path() / "sources"));  // not asked
    ::setenv("KJIT_SAVE_SOURCE", "1", 1);
    const kjit::ElementwiseKernel k2("T x", "T y", "y = x * 8", "saved_source");
    try {
        k2.compile({{"T", DType::float32}}, "sm_90");
    } catch (...) {
        ::unsetenv("KJIT_SAVE_SOURCE");
        throw;
    }
    ::unsetenv("KJIT_SAVE_SOURCE");
    std::vector<fs::path> saved;
    for (const auto& e : fs::directory_iterator(dir.path() / "sources")) saved.push_back(e.path());
    REQUIRE(saved.size() == 1);
    CHECK(saved[0].extension() == ".cu");
    std::ifstream in(saved[0]);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text == k2.source({{"T", DType::float32}}));
    // The folder is not a shard: the cache's listing and verification ignore it.
    CHECK(kjit::cache::DiskStore(dir.path(), false).verify().empty());
}

TEST_CASE("cost of cache hits", "[.][cache_bench]") {
    using clock = std::chrono::steady_clock;
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    // Warm in-memory lookup of a key: what the kernel cache adds to a call that finds it there.
    {
        KernelCache cache(cache_in(dir.path() / "warm"));
        const std::string key = kjit::cache::make_key("warm", {}, "sm_90", "v");
        const Request r{key, "", "sm_90", "", [&] { return fake_entry(key, "ptx"); }};
        cache.get(r);
        const int n = 1000000;
        const auto t = clock::now();
        for (int k = 0; k < n; ++k) cache.get(r);
        const double ns = std::chrono::duration<double, std::nano>(clock::now() - t).count() / n;
        WARN("warm in-memory lookup: " << ns << " ns per get()");
    }
    // A kernel compiled earlier in this folder, asked for again by a cache with an empty memory
    // (as a new process): parse, check, generate, hash, read and verify the entry.
    std::vector<kjit::ElementwiseKernel> kernels;
    for (int k = 0; k < 15; ++k)
        kernels.emplace_back("T x, T a, T b", "T y", "y = a * x + b + " + std::to_string(k), "hit" + std::to_string(k));
    const kjit::TypeBinding f32{{"T", DType::float32}};
    kjit::configure_cache(cache_in(dir.path() / "disk"));
    for (const auto& k : kernels) k.compile(f32, "sm_90");
    kjit::configure_cache(cache_in(dir.path() / "disk"));
    std::vector<double> us;
    for (const auto& k : kernels) {
        const auto t = clock::now();
        const kjit::Binary b = k.compile(f32, "sm_90");
        us.push_back(std::chrono::duration<double, std::micro>(clock::now() - t).count());
        CHECK(b.compile_ms == 0);
    }
    std::sort(us.begin(), us.end());
    CHECK(kjit::cache_stats().compiles == 0);
    WARN("disk hit with an empty memory (NVRTC already loaded): median " << us[7] << " us (min " << us.front()
                                                                        << ", max " << us.back() << ")");
}

// Issue 30: with no home, a folder relative to the current directory (/tmp, say) is one that
// another user could have made first, full of planted entries: there is no disk cache then.
TEST_CASE("with no home there is no cache folder: memory only, one warning", "[kernel_cache][trust]") {
    const kjit::test::TempDir cwd;
    const fs::path old_cwd = fs::current_path();
    fs::current_path(cwd.path());
    kjit::test::ScopedEnv dir("KJIT_CACHE_DIR", nullptr), xdg("XDG_CACHE_HOME", nullptr), home("HOME", nullptr),
        disable("KJIT_CACHE_DISABLE", nullptr);
    CHECK(kjit::default_cache_dir().empty());
    const kjit::CacheSettings settings = kjit::CacheSettings::from_environment();
    CHECK(settings.dir.empty());
    const std::string key = kjit::cache::make_key("nohome", {}, "sm_90", "v");
    int compiles = 0;
    KernelCache cache(settings);
    cache.get(Request{key, "", "sm_90", "", [&] { return ++compiles, fake_entry(key, "p"); }});
    CHECK(compiles == 1);
    CHECK(cache.stats().layers.empty());
    CHECK(fs::is_empty(cwd.path()));
    fs::current_path(old_cwd);
}

// Issue 30: the NVRTC record beside the cache as a FIFO or a link to /dev/zero is no record
// (and neither blocks nor is read without end).
TEST_CASE("a special file as nvrtc-identity is ignored at once", "[kernel_cache][trust]") {
    const kjit::test::TempDir dir;
    const fs::path record = dir.path() / "nvrtc-identity";
    REQUIRE(::mkfifo(record.c_str(), 0600) == 0);
    CHECK_FALSE(kjit::jit::compile::remembered_nvrtc(dir.path().string()).has_value());
    fs::remove(record);
    fs::create_symlink("/dev/zero", record);
    CHECK_FALSE(kjit::jit::compile::remembered_nvrtc(dir.path().string()).has_value());
}

// Issue 30, swapped aliases: an alias holds only a key, so the entry it leads to is served only
// when its own metadata (kernel, binding, arch) is what was asked. Written as aliases of older
// kjit were (the key alone), which say nothing of whose they are.
TEST_CASE("an alias that leads to another kernel's entry is a miss with a warning", "[kernel_cache][trust]") {
    const kjit::test::TempDir dir;
    const std::string ka = kjit::cache::make_key("a", {}, "sm_90", "v"), kb = kjit::cache::make_key("b", {}, "sm_90", "v");
    const std::string aa = kjit::cache::make_alias_key("a", {}, "sm_90"), ab = kjit::cache::make_alias_key("b", {}, "sm_90");
    auto named = [](const std::string& key, const std::string& name) {
        Entry e = fake_entry(key, "ptx of " + name);
        e.meta.kernel_name = name;
        e.meta.types = "T=float32";
        return e;
    };
    {
        KernelCache writer(cache_in(dir.path()));
        writer.get(Request{ka, aa, "sm_90", "", [&] { return named(ka, "ka"); }});
        writer.get(Request{kb, ab, "sm_90", "", [&] { return named(kb, "kb"); }});
    }
    // The two aliases' contents exchanged.
    std::ofstream(dir.path() / aa.substr(0, 2) / (aa + ".alias"), std::ios::trunc) << kb;
    std::ofstream(dir.path() / ab.substr(0, 2) / (ab + ".alias"), std::ios::trunc) << ka;
    KernelCache reader(cache_in(dir.path()));
    const auto found = reader.find_alias(aa, "", "sm_90", {"ka", "T=float32", "sm_90"});
    CHECK((found == nullptr || found->meta.kernel_name == "ka"));
    CHECK(reader.find_alias(ab, "", "sm_90", {"kb", "T=float32", "sm_90"}) == nullptr);
    // Straight, they serve.
    std::ofstream(dir.path() / aa.substr(0, 2) / (aa + ".alias"), std::ios::trunc) << ka;
    KernelCache straight(cache_in(dir.path()));
    const auto good = straight.find_alias(aa, "", "sm_90", {"ka", "T=float32", "sm_90"});
    REQUIRE(good != nullptr);
    CHECK(good->meta.kernel_name == "ka");
}

namespace {
std::string file_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
unsigned mode_of(const fs::path& p) {
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    return st.st_mode & 07777;
}
}  // namespace

// Issue 30: KJIT_CACHE_MAX_BYTES=-1 was taken as 2^64-1 (strtoull wraps it), a cap of nothing.
TEST_CASE("KJIT_CACHE_MAX_BYTES and KJIT_CACHE_LOCK_TIMEOUT take numbers only", "[kernel_cache]") {
    for (const char* bad : {"-1", "-0", " 5", "+5", "5 ", "12abc", "0x10", "99999999999999999999999"}) {
        INFO(bad);
        const kjit::test::ScopedEnv cap("KJIT_CACHE_MAX_BYTES", bad);
        CHECK(kjit::CacheSettings::from_environment().max_bytes == 0);
    }
    {
        const kjit::test::ScopedEnv cap("KJIT_CACHE_MAX_BYTES", "18446744073709551615");
        CHECK(kjit::CacheSettings::from_environment().max_bytes == 18446744073709551615ull);
    }
    for (const char* bad : {"-1", "abc", "inf", "nan", " 1", "1s", "100000"}) {
        INFO(bad);
        const kjit::test::ScopedEnv wait("KJIT_CACHE_LOCK_TIMEOUT", bad);
        CHECK(kjit::CacheSettings::from_environment().lock_timeout_seconds == 30);
    }
    const kjit::test::ScopedEnv wait("KJIT_CACHE_LOCK_TIMEOUT", "0.25");
    CHECK(kjit::CacheSettings::from_environment().lock_timeout_seconds == 0.25);
}

// Issue 30: an alias was written for an entry that could not be stored, leading nowhere.
TEST_CASE("no alias is written for an entry that was not stored; stats count stores", "[kernel_cache]") {
    const kjit::test::TempDir dir;
    const std::string key(32, 'a'), alias(32, 'b'), key2 = "c" + std::string(31, 'a'), alias2 = "d" + std::string(31, 'b');
    fs::create_directory(dir.path() / "aa");
    fs::permissions(dir.path() / "aa", fs::perms::all);  // refused: the key's entry cannot be stored
    KernelCache cache(cache_in(dir.path()));
    cache.get(Request{key, alias, "sm_90", "", [&] { return fake_entry(key, "p"); }});
    CHECK_FALSE(fs::exists(dir.path() / "bb" / (alias + ".alias")));
    cache.get(Request{key2, alias2, "sm_90", "", [&] { return fake_entry(key2, "p"); }});
    CHECK(fs::exists(dir.path() / "db" / (alias2 + ".alias")));
    const kjit::CacheStats stats = cache.stats();
    REQUIRE(stats.layers.size() == 1);
    CHECK(stats.layers[0].stores == 1);
    CHECK(stats.layers[0].store_failures == 1);
}

// Issue 30, held locks: through the kernel cache, a compile whose lock another process holds
// returns after the configured wait (the compile is done, not stored).
TEST_CASE("a held lock costs a compile the lock timeout, not forever", "[kernel_cache][lock]") {
    const kjit::test::TempDir dir;
    const std::string key = kjit::cache::make_key("held", {}, "sm_90", "v");
    fs::create_directory(dir.path() / key.substr(0, 2));
    fs::permissions(dir.path() / key.substr(0, 2), fs::perms::owner_all, fs::perm_options::replace);
    const fs::path lock = dir.path() / key.substr(0, 2) / (key + ".lock");
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t holder = ::fork();  // holds the lock as another kjit process would, and hangs
    REQUIRE(holder >= 0);
    if (holder == 0) {
        const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT, 0600);
        if (fd < 0 || ::flock(fd, LOCK_EX) != 0 || ::write(ready[1], "x", 1) != 1) ::_exit(1);
        ::pause();
        ::_exit(0);
    }
    char c = 0;
    REQUIRE(::read(ready[0], &c, 1) == 1);
    ::close(ready[0]);
    ::close(ready[1]);
    kjit::CacheSettings settings = cache_in(dir.path());
    settings.lock_timeout_seconds = 0.2;
    KernelCache cache(settings);
    int compiles = 0;
    const auto start = std::chrono::steady_clock::now();
    cache.get(Request{key, "", "sm_90", "", [&] { return ++compiles, fake_entry(key, "p"); }});
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ::kill(holder, SIGKILL);
    int status = 0;
    ::waitpid(holder, &status, 0);
    CHECK(compiles == 1);
    CHECK(waited >= 0.2);
    CHECK(waited < 10);
    CHECK(cache.stats().layers[0].store_failures == 1);
}

// Issue 30, predictable temporaries: KJIT_CACHE_RECORD wrote "M.tmp.<pid>" through whatever
// was there (a symlink to another file), and a dangling symlink as "M.lock" made its target.
TEST_CASE("recording a manifest writes through no planted symlink", "[kernel_cache][trust]") {
    const kjit::test::TempDir dir, elsewhere;
    const fs::path manifest = dir.path() / "m.json", victim = elsewhere.path() / "precious";
    std::ofstream(victim) << "precious\n";
    fs::create_symlink(victim, manifest.string() + ".tmp." + std::to_string(::getpid()));
    const nlohmann::json kernel = {{"kind", "raw"}, {"name", "k"}, {"source", "x"}};
    kjit::cache::record_in_manifest(manifest, kernel, "sm_90");
    CHECK(file_text(victim) == "precious\n");
    CHECK(fs::is_regular_file(fs::symlink_status(manifest)));
    CHECK(kjit::cache::read_manifest(manifest)["kernels"].size() == 1);
    // A dangling symlink as its lock: an error, and nothing made where it points.
    const fs::path made = elsewhere.path() / "made-by-the-lock";
    fs::create_symlink(made, manifest.string() + ".lock");
    CHECK_THROWS_AS(kjit::cache::record_in_manifest(manifest, kernel, "sm_80", std::chrono::milliseconds(100)),
                    kjit::IoError);
    CHECK_FALSE(fs::exists(made));
}

// Issue 30: nvrtc-identity was written 0644 whatever the folder's mode (other files follow it),
// and through a symlink planted at "nvrtc-identity.tmp.<pid>".
TEST_CASE("nvrtc-identity follows the folder's mode and writes through no planted symlink", "[kernel_cache][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir, planted, elsewhere;
    const mode_t old_umask = ::umask(022);
    fs::permissions(dir.path(), fs::perms::owner_all, fs::perm_options::replace);
    kjit::configure_cache(cache_in(dir.path()));
    kjit::ElementwiseKernel("T x", "T y", "y = x + 5", "identity_mode").compile({{"T", DType::float32}}, "sm_90");
    ::umask(old_umask);
    REQUIRE(fs::exists(dir.path() / "nvrtc-identity"));
    CHECK(mode_of(dir.path() / "nvrtc-identity") == 0600);

    const fs::path victim = elsewhere.path() / "precious";
    std::ofstream(victim) << "precious\n";
    fs::create_symlink(victim, planted.path() / ("nvrtc-identity.tmp." + std::to_string(::getpid())));
    kjit::jit::compile::remember_nvrtc(planted.path().string());
    CHECK(file_text(victim) == "precious\n");
    CHECK(fs::is_regular_file(fs::symlink_status(planted.path() / "nvrtc-identity")));
    CHECK(kjit::jit::compile::remembered_nvrtc(planted.path().string()).has_value());
}

// Issue 30: KJIT_SAVE_SOURCE wrote sources/<key>.cu through a symlink planted at that name.
TEST_CASE("KJIT_SAVE_SOURCE writes through no planted symlink", "[kernel_cache][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir first, second, elsewhere;
    const kjit::ElementwiseKernel k("T x", "T y", "y = x * 9", "saved_planted");
    const kjit::test::ScopedEnv save("KJIT_SAVE_SOURCE", "1");
    kjit::configure_cache(cache_in(first.path()));
    k.compile({{"T", DType::float32}}, "sm_90");
    std::vector<fs::path> saved;
    for (const auto& e : fs::directory_iterator(first.path() / "sources")) saved.push_back(e.path());
    REQUIRE(saved.size() == 1);
    // The same program compiled into another folder, where its source's name is a symlink.
    const fs::path victim = elsewhere.path() / "precious";
    std::ofstream(victim) << "precious\n";
    fs::create_directory(second.path() / "sources");
    const fs::path name = second.path() / "sources" / saved[0].filename();
    fs::create_symlink(victim, name);
    kjit::configure_cache(cache_in(second.path()));
    const kjit::ElementwiseKernel again("T x", "T y", "y = x * 9", "saved_planted");
    again.compile({{"T", DType::float32}}, "sm_90");
    CHECK(file_text(victim) == "precious\n");
    CHECK(fs::is_regular_file(fs::symlink_status(name)));
    CHECK(file_text(name) == file_text(saved[0]));
}

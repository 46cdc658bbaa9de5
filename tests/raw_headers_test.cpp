// Headers of raw modules: named in-memory headers, and the content of every header a module
// includes (through -I, nested, by name) in its cache key, so that an edited header is a miss.
#include "test_support.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include "gpu_data.hpp"
#include "jit/compile/included_files.hpp"
#include "jit/kernels/elementwise/manifest.hpp"
#include "kjit/cache.hpp"
#include "kjit/error.hpp"
#include "kjit/raw_kernel.hpp"

using Catch::Matchers::Contains;
using kjit::RawModule;
using kjit::RawModuleOptions;
using kjit::jit::compile::include_directives;
using kjit::jit::compile::include_dirs_of;
using kjit::jit::compile::included_files_key;
using kjit::test::cache_in;
using kjit::test::ProcessCacheGuard;

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace {

void write(const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
}

// Scales by SCALE, which the header "scale.cuh" defines through "inner.cuh".
const char* const kScaled = R"(#include "scale.cuh"
extern "C" __global__ void scaled(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = SCALE * x[i];
}
)";

}  // namespace

TEST_CASE("include directives are read as the preprocessor writes them", "[raw][headers]") {
    const auto found = include_directives(
        "#include <a.h>\n  #  include \"b/c.cuh\"\n#include HEADER\n// #include \"commented.h\"\n#include_next <n.h>\n"
        "#include \"\"\n#include \"unterminated.h\n#include\t<tab.h> // trailing");
    REQUIRE(found.size() == 3);
    CHECK((found[0].name == "a.h" && !found[0].quoted));
    CHECK((found[1].name == "b/c.cuh" && found[1].quoted));
    CHECK((found[2].name == "tab.h" && !found[2].quoted));
    std::vector<std::string> pre;
    CHECK(include_dirs_of({"-I", "one", "-Itwo", "--include-path=three", "--include-path", "four", "-DX=1",
                           "-include", "pre.h", "--pre-include=pre2.h"},
                          &pre) == std::vector<std::string>{"one", "two", "three", "four"});
    CHECK(pre == std::vector<std::string>{"pre.h", "pre2.h"});
    // Any string is safe to scan.
    for (const char* odd : {"#", "#include", "#include <", "#include \"", "\n\n#", "#include <>"})
        CHECK(include_directives(odd).empty());
}

TEST_CASE("the include key follows nested headers and changes with any of them", "[raw][headers]") {
    const kjit::test::TempDir dir;
    const std::string inc = (dir.path() / "inc").string();
    write(dir.path() / "inc/scale.cuh", "#pragma once\n#include \"detail/inner.cuh\"\n");
    write(dir.path() / "inc/detail/inner.cuh", "#define SCALE 2.0f\n#include \"../scale.cuh\"\n");  // a cycle
    const std::vector<std::string> options{"-I" + inc};
    const std::string k1 = included_files_key(kScaled, {}, options);
    CHECK(k1.find("scale.cuh") != std::string::npos);
    CHECK(k1.find("detail/inner.cuh") != std::string::npos);
    CHECK(included_files_key(kScaled, {}, options) == k1);  // stable

    // The nested header edited: another key. Back: the same key.
    write(dir.path() / "inc/detail/inner.cuh", "#define SCALE 3.0f\n#include \"../scale.cuh\"\n");
    const std::string k2 = included_files_key(kScaled, {}, options);
    CHECK(k2 != k1);
    write(dir.path() / "inc/detail/inner.cuh", "#define SCALE 2.0f\n#include \"../scale.cuh\"\n");
    CHECK(included_files_key(kScaled, {}, options) == k1);

    // Every form of the option finds it; without the folder, nothing is found.
    CHECK(included_files_key(kScaled, {}, {"--include-path=" + inc}) == k1);
    CHECK(included_files_key(kScaled, {}, {"-I", inc}) == k1);
    CHECK(included_files_key(kScaled, {}, {}).empty());

    // Named headers: their names and texts are the key, and what they include is followed.
    const std::string named = included_files_key(kScaled, {{"scale.cuh", "#include \"detail/inner.cuh\"\n"}}, options);
    CHECK(named != k1);
    CHECK(named.find("detail/inner.cuh") != std::string::npos);
    CHECK(included_files_key(kScaled, {{"scale.cuh", "#define SCALE 4.0f\n"}}, {}) !=
          included_files_key(kScaled, {{"scale.cuh", "#define SCALE 5.0f\n"}}, {}));

    // A pre-included file counts too.
    write(dir.path() / "pre.h", "#define PRE 1\n");
    const std::string pre = (dir.path() / "pre.h").string();
    const std::string with_pre = included_files_key("", {}, {"-include", pre});
    write(dir.path() / "pre.h", "#define PRE 2\n");
    CHECK(included_files_key("", {}, {"-include", pre}) != with_pre);
}

TEST_CASE("a header edit is a cache miss, and named headers compile and key", "[raw][headers][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path() / "cache"));
    const std::string inc = (dir.path() / "inc").string();
    write(dir.path() / "inc/scale.cuh", "#include \"inner.cuh\"\n");
    write(dir.path() / "inc/inner.cuh", "#define SCALE 2.0f\n");
    const RawModuleOptions options{.nvrtc_options = {"-I" + inc}, .name = "scaled"};

    const kjit::Binary first = RawModule(kScaled, options).compile("sm_90");
    CHECK(first.compile_ms > 0);
    CHECK(RawModule(kScaled, options).compile("sm_90").compile_ms == 0);  // unchanged: a hit
    CHECK(kjit::cache_stats().compiles == 1);

    write(dir.path() / "inc/inner.cuh", "#define SCALE 3.0f\n");  // the nested header edited
    const kjit::Binary edited = RawModule(kScaled, options).compile("sm_90");
    CHECK(edited.compile_ms > 0);
    CHECK(edited.ptx != first.ptx);
    CHECK(kjit::cache_stats().compiles == 2);
    // A new process with the edit on disk: the edited entry, from the disk.
    kjit::configure_cache(cache_in(dir.path() / "cache"));
    const kjit::Binary again = RawModule(kScaled, options).compile("sm_90");
    CHECK(again.compile_ms == 0);
    CHECK(again.ptx == edited.ptx);

    // Named headers, found by name with no file and no -I.
    const RawModuleOptions named{.headers = {{"scale.cuh", "#define SCALE 4.0f\n"}}, .name = "scaled"};
    const kjit::Binary four = RawModule(kScaled, named).compile("sm_90");
    CHECK(four.compile_ms > 0);
    CHECK(four.ptx.find("0f40800000") != std::string::npos);  // 4.0f in PTX's hex form
    CHECK(RawModule(kScaled, named).compile("sm_90").compile_ms == 0);
    const RawModuleOptions five{.headers = {{"scale.cuh", "#define SCALE 5.0f\n"}}, .name = "scaled"};
    CHECK(RawModule(kScaled, five).compile("sm_90").compile_ms > 0);
    // A named header including the toolkit's headers gets the toolkit's folder.
    const RawModuleOptions fp16{.headers = {{"scale.cuh", "#include <cuda_fp16.h>\n#define SCALE __half2float(__float2half(2.0f))\n"}},
                                .name = "scaled"};
    CHECK_FALSE(RawModule(kScaled, fp16).compile("sm_90").cubin.empty());
}

TEST_CASE("named headers: refused when malformed, kept in manifest entries", "[raw][headers]") {
    CHECK_THROWS_WITH(RawModule(kScaled, {.headers = {{"", "x"}}}), Contains("a header with an empty name"));
    CHECK_THROWS_WITH(RawModule(kScaled, {.headers = {{"a.h", std::string("x\0y", 3)}}}), Contains("a.h"));
    nlohmann::json e = {{"kind", "raw"}, {"name", "scaled"}, {"source", kScaled},
                        {"headers", {{{"name", "scale.cuh"}, {"text", "#define SCALE 2.0f\n"}}}}};
    const RawModule m = kjit::jit::kernels::raw_module_from_manifest_entry(e);
    REQUIRE(m.options().headers.size() == 1);
    CHECK(m.options().headers[0] == std::pair<std::string, std::string>{"scale.cuh", "#define SCALE 2.0f\n"});
    e["headers"] = {{{"name", "scale.cuh"}}};
    CHECK_THROWS_AS(kjit::jit::kernels::raw_module_from_manifest_entry(e), kjit::CacheError);
    e["headers"] = "scale.cuh";
    CHECK_THROWS_WITH(kjit::jit::kernels::raw_module_from_manifest_entry(e), Contains("\"headers\" must be a list"));
}

TEST_CASE("a header edited between two modules changes what the kernel computes", "[raw][headers][gpu]") {
    KJIT_REQUIRE_GPU();
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path() / "cache"));
    const std::string inc = (dir.path() / "inc").string();
    write(dir.path() / "inc/scale.cuh", "#include \"inner.cuh\"\n");
    const RawModuleOptions options{.nvrtc_options = {"-I" + inc}, .name = "scaled"};
    const int n = 100003;
    const kjit::test::DeviceData x = kjit::test::random_device(kjit::DType::float32, {n});
    for (const float scale : {2.0f, -3.5f}) {
        write(dir.path() / "inc/inner.cuh", "#define SCALE (" + std::to_string(scale) + "f)\n");
        const kjit::Array y = kjit::test::poisoned(kjit::DType::float32, {n});
        RawModule(kScaled, options).get_function("scaled")((n + 255) / 256, 256, {x.device, y, n});
        INFO("SCALE " << scale);
        CHECK(kjit::test::mismatches(y, [&](std::size_t k) {
                  return double(scale) * kjit::test::element_value(x.host, kjit::DType::float32, k).real();
              }, 1e-6, 1e-6) == 0);
    }
    CHECK(kjit::cache_stats().compiles == 2);
}

// Manifest entries of "kind": "reduction": read field by field (with a CacheError naming the
// field for each malformed one), entries ReductionKernel records read back, and precompiled.
#include "test_support.hpp"

#include "cache/manifest.hpp"
#include "jit/kernels/elementwise/manifest.hpp"
#include "jit/kernels/reduction/manifest.hpp"
#include "jit/kernels/reduction/calls.hpp"
#include "jit/kernels/precompile.hpp"
#include "kjit/cache.hpp"
#include "kjit/error.hpp"
#include "kjit/reduction_kernel.hpp"
#include "runtime/detail/nvrtc.hpp"

using kjit::test::ProcessCacheGuard;
using kjit::DType;
using kjit::jit::kernels::reduction_from_manifest_entry;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

json l2_entry() {
    return {{"kind", "reduction"}, {"name", "l2"},      {"in", "T x"},         {"out", "T y"},
            {"map", "x * x"},      {"reduce", "a + b"}, {"post", "y = sqrt(a)"}, {"identity", "0"},
            {"types", json::array({{{"T", "float32"}}, {{"T", "float64"}}})}};
}

}  // namespace

TEST_CASE("a reduction entry reads every field", "[manifest]") {
    json e = l2_entry();
    e["reduce_type"] = "float64";
    e["preamble"] = "__device__ float twice(float v) { return 2 * v; }";
    e["options"] = json::array({"-lineinfo"});
    const kjit::jit::kernels::ManifestReduction m = reduction_from_manifest_entry(e);
    CHECK(m.kernel.name() == "l2");
    CHECK(m.kernel.in_params() == "T x");
    CHECK(m.kernel.out_params() == "T y");
    CHECK(m.kernel.map_expr() == "x * x");
    CHECK(m.kernel.reduce_expr() == "a + b");
    CHECK(m.kernel.post_map_expr() == "y = sqrt(a)");
    CHECK(m.kernel.identity() == "0");
    CHECK(m.kernel.options().reduce_type == "float64");
    CHECK(m.kernel.options().preamble == e["preamble"].get<std::string>());
    CHECK(m.kernel.options().nvrtc_options == std::vector<std::string>{"-lineinfo"});
    REQUIRE(m.bindings.size() == 2);
    CHECK(m.bindings[1].at("T") == DType::float64);
    CHECK(kjit::jit::kernels::is_reduction_manifest_entry(e));
    CHECK_FALSE(kjit::jit::kernels::is_reduction_manifest_entry(json{{"kind", "elementwise"}}));
}

TEST_CASE("a reduction entry's optional fields default as the constructor's do", "[manifest]") {
    const json e = {{"kind", "reduction"}, {"map", "x"}, {"reduce", "a + b"}, {"post", "y = a"}};
    const kjit::jit::kernels::ManifestReduction m = reduction_from_manifest_entry(e);
    CHECK(m.kernel.name() == "reduce");
    CHECK(m.kernel.identity().empty());  // none: reducing nothing is an error at call time
    CHECK(m.kernel.options().reduce_type.empty());
    CHECK(m.kernel.options().preamble.empty());
    CHECK(m.bindings.empty());
    CHECK(m.scalars.empty());
    CHECK(m.storage.empty());
}

TEST_CASE("a reduction entry's \"scalars\" and \"storage\" are read", "[manifest]") {
    json e = l2_entry();
    e["in"] = "T x, T s";
    e["scalars"] = json::array({"s"});
    e["storage"] = {{"x", "int16"}};
    const kjit::jit::kernels::ManifestReduction m = reduction_from_manifest_entry(e);
    CHECK(m.scalars == std::vector<std::string>{"s"});
    CHECK(m.storage.at("x") == DType::int16);
}

TEST_CASE("a malformed reduction entry is a CacheError naming the field", "[manifest]") {
    auto refused = [](const json& e, const std::string& message) {
        INFO(e.dump());
        CHECK_THROWS_AS(reduction_from_manifest_entry(e), kjit::CacheError);
        CHECK_THROWS_WITH(reduction_from_manifest_entry(e), Contains(message));
    };
    auto with = [](const char* key, json value) {
        json e = l2_entry();
        e[key] = std::move(value);
        return e;
    };
    auto without = [](const char* key) {
        json e = l2_entry();
        e.erase(key);
        return e;
    };
    refused(without("map"), "missing \"map\"");
    refused(without("reduce"), "missing \"reduce\"");
    refused(without("post"), "missing \"post\"");
    refused(with("in", 3), "\"in\" must be a string");
    refused(with("out", json::array()), "\"out\" must be a string");
    refused(with("map", nullptr), "\"map\" must be a string");
    refused(with("identity", 0), "\"identity\" must be a string");
    refused(with("reduce_type", 1), "\"reduce_type\" must be a string");
    refused(with("name", false), "\"name\" must be a string");
    refused(with("preamble", 1), "\"preamble\" must be a string");
    refused(with("options", "-lineinfo"), "\"options\" must be a list of strings");
    refused(with("types", json{{"T", "float32"}}), "\"types\" must be a list");
    refused(with("types", json::array({"float32"})), "each \"types\" item must be an object");
    refused(with("scalars", "s"), "\"scalars\" must be a list of strings");
    refused(with("storage", json::array({"x"})), "\"storage\" must be an object");
    refused(with("storage", json{{"x", "int99"}}), "'int99' (for 'x') is not a dtype");
    refused(with("kind", "elementwise"), "not a reduction entry");
    // The elementwise reader (kjit compile --spec) says what a reduction entry is.
    CHECK_THROWS_WITH(kjit::jit::kernels::kernel_from_manifest_entry(l2_entry()), Contains("reduction entry"));
    CHECK_THROWS_AS(kjit::jit::kernels::kernel_from_manifest_entry(l2_entry()), kjit::CacheError);
}

TEST_CASE("recorded reductions read back and precompile", "[manifest][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    const auto manifest = work.path() / "manifest.json";
    kjit::KernelOptions options;
    options.reduce_type = "float64";
    options.nvrtc_options = {"-lineinfo"};
    const kjit::ReductionKernel l2("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2_rec", options);
    const kjit::ReductionKernel top("T x", "T y", "x", "max(a, b)", "y = a", "", "top_rec");
    // A call that passed `s` as a scalar and int16 data for `x` makes another module.
    const kjit::ReductionKernel scaled("T x, T s", "T y", "x * s", "a + b", "y = a", "0", "scaled_rec");
    kjit::jit::kernels::ModuleVariant variant;
    variant.scalar = {false, true, false};
    variant.storage = {DType(DType::int16), std::nullopt, std::nullopt};

    // An application records what it compiles (KJIT_CACHE_RECORD).
    kjit::CacheSettings app;
    app.dir = (work.path() / "app-cache").string();
    app.record = manifest.string();
    kjit::configure_cache(app);
    const kjit::Binary made = l2.compile({{"T", DType::float32}}, "sm_90");
    l2.compile({{"T", DType::float64}}, "sm_90");
    top.compile({{"T", DType::int32}}, "sm_90");
    const kjit::Binary made_variant = kjit::jit::kernels::compile_reduction(scaled, {{"T", DType::float32}}, variant, "sm_90").binary;
    CHECK_THAT(made_variant.source, Contains("s passed as a scalar") && Contains("x stored as int16"));
    const json recorded = kjit::cache::read_manifest(manifest);
    REQUIRE(recorded["kernels"].size() == 3);
    const kjit::jit::kernels::ManifestReduction variant_back = reduction_from_manifest_entry(recorded["kernels"][2]);
    CHECK(variant_back.scalars == std::vector<std::string>{"s"});
    CHECK(variant_back.storage.at("x") == DType::int16);

    // Each entry reads back as the kernel that wrote it.
    const kjit::jit::kernels::ManifestReduction back = reduction_from_manifest_entry(recorded["kernels"][0]);
    CHECK(back.kernel.name() == "l2_rec");
    CHECK(back.kernel.map_expr() == l2.map_expr());
    CHECK(back.kernel.post_map_expr() == l2.post_map_expr());
    CHECK(back.kernel.identity() == "0");
    CHECK(back.kernel.options().reduce_type == "float64");
    CHECK(back.kernel.options().nvrtc_options == options.nvrtc_options);
    CHECK(back.bindings.size() == 2);
    const kjit::jit::kernels::ManifestReduction top_back = reduction_from_manifest_entry(recorded["kernels"][1]);
    CHECK(top_back.kernel.identity().empty());
    CHECK(top_back.kernel.reduce_expr() == "max(a, b)");

    // A build machine precompiles the manifest; a process without NVRTC then finds the same bytes.
    kjit::CacheSettings shipped_dir;
    shipped_dir.dir = (work.path() / "shipped").string();
    kjit::configure_cache(shipped_dir);
    const auto built = kjit::jit::kernels::precompile(recorded, {"sm_90"}, 2);
    CHECK(built.failures.empty());
    // A job per module calls load: one per strategy and index width (14) of each binding.
    CHECK(built.jobs == 4 * kjit::jit::kernels::kReductionPrograms);
    CHECK(built.compiled == built.jobs);

    kjit::CacheSettings shipped;
    shipped.dir = (work.path() / "empty-writable").string();
    shipped.read_only = {(work.path() / "shipped").string()};
    kjit::configure_cache(shipped);
    const kjit::detail::ScopedNvrtcOverride no_nvrtc(nullptr);
    CHECK(kjit::jit::kernels::compile_reduction_groups(l2, {{"T", DType::float32}}, {}, "sm_90").compile_ms == 0);
    CHECK(kjit::jit::kernels::compile_reduction_groups(l2, {{"T", DType::float64}}, {}, "sm_90").compile_ms == 0);
    CHECK(kjit::jit::kernels::compile_reduction_groups(top, {{"T", DType::int32}}, {}, "sm_90").compile_ms == 0);
    CHECK(kjit::jit::kernels::compile_reduction_groups(scaled, {{"T", DType::float32}}, variant, "sm_90").compile_ms == 0);
    CHECK(kjit::cache_stats().compiles == 0);
    // The module of every entry point (ReductionKernel::compile, `kjit compile`) is not what calls
    // load, and precompile does not build it.
    CHECK_THROWS_AS(l2.compile({{"T", DType::float32}}, "sm_90"), kjit::NoDeviceError);
    (void)made;
}

TEST_CASE("precompile reports a malformed or wrong reduction entry as a failure", "[manifest][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    kjit::CacheSettings s;
    s.dir = work.path().string();
    kjit::configure_cache(s);
    json bad = l2_entry();
    bad.erase("reduce");
    json wrong = l2_entry();
    wrong["map"] = "sqr(x)";
    const json manifest = {{"kernels", json::array({bad, wrong})}};
    const auto result = kjit::jit::kernels::precompile(manifest, {"sm_90"}, 1);
    REQUIRE(result.failures.size() == 3);  // the malformed entry once, the wrong one per binding
    CHECK_THAT(result.failures[0], Contains("kernel 0 ('l2')") && Contains("missing \"reduce\""));
    CHECK_THAT(result.failures[1], Contains("unknown function 'sqr'"));
}

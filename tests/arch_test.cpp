// Choosing the architecture NVRTC compiles for: KJIT_ARCH parsing, the device/default choice, and
// fitting a request to the architectures an NVRTC supports (lists injected: clamp_arch is pure).
#include "test_support.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "jit/compile/arch.hpp"
#include "runtime/detail/module.hpp"
#include "kjit/error.hpp"

using kjit::jit::compile::ArchSpec;
using kjit::jit::compile::ArchTarget;

using kjit::test::ScopedEnv;

namespace {

// NVRTC 13.0's list, out of order on purpose.
const std::vector<int> nvrtc13 = {90, 75, 80, 86, 87, 88, 89, 100, 103, 110, 120, 121};

std::string error_text(const std::string& arch) {
    try {
        kjit::jit::compile::parse_arch(arch, "KJIT_ARCH");
    } catch (const kjit::Error& e) {
        return e.what();
    }
    return {};
}

}  // namespace

TEST_CASE("parse_arch reads sm_XX and compute_XX", "[arch]") {
    CHECK(kjit::jit::compile::parse_arch("sm_90", "KJIT_ARCH").compute_capability == 90);
    CHECK_FALSE(kjit::jit::compile::parse_arch("sm_90", "KJIT_ARCH").ptx_only);
    CHECK(kjit::jit::compile::parse_arch("sm_120", "KJIT_ARCH").compute_capability == 120);
    const ArchSpec ptx = kjit::jit::compile::parse_arch("compute_86", "KJIT_ARCH");
    CHECK(ptx.compute_capability == 86);
    CHECK(ptx.ptx_only);
}

TEST_CASE("architecture- and family-specific targets are parsed, kept exactly, and named", "[arch]") {
    const ArchSpec a = kjit::jit::compile::parse_arch("sm_90a", "KJIT_ARCH");
    CHECK((a.compute_capability == 90 && a.suffix == 'a' && !a.ptx_only));
    const ArchSpec f = kjit::jit::compile::parse_arch("compute_100f", "KJIT_ARCH");
    CHECK((f.compute_capability == 100 && f.suffix == 'f' && f.ptx_only));
    const ArchTarget t = kjit::jit::compile::clamp_arch(a, nvrtc13, "argument");
    CHECK(t.name() == "sm_90a");
    CHECK(kjit::jit::compile::clamp_arch(f, nvrtc13, "argument").name() == "compute_100f");
    // Never substituted by a neighbour, as a plain target would be.
    try {
        (void)kjit::jit::compile::clamp_arch({91, false, 'a'}, nvrtc13, "argument");
        FAIL("sm_91a was accepted");
    } catch (const kjit::Error& e) {
        CHECK_THAT(e.what(), Catch::Contains("sm_91a") && Catch::Contains("architecture-specific") && Catch::Contains("sm_90"));
    }
    CHECK(kjit::jit::compile::choose_arch("sm_100a", 90, nvrtc13).name() == "sm_100a");
}

TEST_CASE("where a cubin runs: plain and family targets on later minors, architecture-specific on their own", "[arch]") {
    using kjit::detail::cubin_runs_on;
    CHECK(cubin_runs_on("sm_90", 90));
    CHECK(cubin_runs_on("sm_80", 86));
    CHECK_FALSE(cubin_runs_on("sm_90", 100));
    CHECK(cubin_runs_on("sm_90a", 90));
    CHECK_FALSE(cubin_runs_on("sm_90a", 100));
    CHECK_FALSE(cubin_runs_on("sm_100a", 103));
    CHECK(cubin_runs_on("sm_100f", 103));
    CHECK_FALSE(cubin_runs_on("sm_103f", 100));
    CHECK_FALSE(cubin_runs_on("sm_120f", 100));
    CHECK(kjit::detail::where_arch_runs("sm_90a") == "GPUs of compute capability 9.0 only");
    CHECK(kjit::detail::where_arch_runs("sm_100f") == "GPUs of compute capability 10.x from 10.0 on");
}

TEST_CASE("parse_arch rejects malformed values, naming the variable and the value", "[arch]") {
    for (const char* bad : {"", "90", "sm90", "sm_9", "sm_090", "sm_1000", "SM_90", "sm_90 ", "sm_9x", "compute_",
                            "sm_90x", "sm_90ab", "sm_90fa", "sm_a"}) {
        INFO("value: '" << bad << "'");
        const std::string what = error_text(bad);
        CHECK_THAT(what, Catch::Contains("KJIT_ARCH='" + std::string(bad) + "'"));
    }
    CHECK_THAT(error_text("sm_90x"), Catch::Contains("an 'a' or 'f' suffix may follow"));
    CHECK_THAT(error_text("sm9"), Catch::Contains("e.g. sm_90"));
}

TEST_CASE("clamp_arch keeps an architecture the NVRTC supports", "[arch]") {
    for (int cc : {75, 80, 86, 89, 90, 100, 120, 121}) {
        const ArchTarget t = kjit::jit::compile::clamp_arch({cc, false}, nvrtc13, "device");
        CHECK(t.requested == cc);
        CHECK(t.compiled == cc);
        CHECK_FALSE(t.ptx_only);
        CHECK(t.note.empty());
        CHECK(t.name() == "sm_" + std::to_string(cc));
        CHECK(t.origin == "device");
    }
    const ArchTarget ptx = kjit::jit::compile::clamp_arch({90, true}, nvrtc13, "KJIT_ARCH");
    CHECK(ptx.ptx_only);
    CHECK(ptx.name() == "compute_90");
}

TEST_CASE("clamp_arch uses a cubin of the same major version for an unlisted minor", "[arch]") {
    const ArchTarget t = kjit::jit::compile::clamp_arch({92, false}, nvrtc13, "device");
    CHECK(t.requested == 92);
    CHECK(t.compiled == 90);
    CHECK_FALSE(t.ptx_only);
    CHECK(t.name() == "sm_90");
    CHECK_THAT(t.note, Catch::Contains("sm_92") && Catch::Contains("sm_90"));
    CHECK(kjit::jit::compile::clamp_arch({105, false}, nvrtc13, "device").name() == "sm_103");
}

TEST_CASE("clamp_arch gives PTX of the newest supported arch for a newer device", "[arch]") {
    const ArchTarget t = kjit::jit::compile::clamp_arch({130, false}, nvrtc13, "device");
    CHECK(t.requested == 130);
    CHECK(t.compiled == 121);
    CHECK(t.ptx_only);
    CHECK(t.name() == "compute_121");
    CHECK_THAT(t.note, Catch::Contains("newer") && Catch::Contains("compute_121"));

    // An NVRTC 12.0-like list: a Blackwell GPU gets compute_90 PTX.
    const std::vector<int> nvrtc120 = {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90};
    CHECK(kjit::jit::compile::clamp_arch({100, false}, nvrtc120, "device").name() == "compute_90");
    // A gap between majors also falls back to PTX of the arch below.
    CHECK(kjit::jit::compile::clamp_arch({100, false}, std::vector<int>{75, 80, 90, 120}, "device").name() == "compute_90");
    // Explicit compute_XX beyond the list: still PTX only.
    CHECK(kjit::jit::compile::clamp_arch({130, true}, nvrtc13, "KJIT_ARCH").name() == "compute_121");
}

TEST_CASE("clamp_arch rejects a device older than every supported arch", "[arch]") {
    CHECK_THROWS_WITH(kjit::jit::compile::clamp_arch({70, false}, nvrtc13, "device"),
                      Catch::Contains("sm_70") && Catch::Contains("older") && Catch::Contains("sm_75") &&
                          Catch::Contains("from device"));
    CHECK_THROWS_AS(kjit::jit::compile::clamp_arch({52, true}, nvrtc13, "KJIT_ARCH"), kjit::Error);
    CHECK_THROWS_WITH(kjit::jit::compile::clamp_arch({90, false}, std::vector<int>{}, "device"),
                      Catch::Contains("no architectures"));
}

TEST_CASE("choose_arch: KJIT_ARCH, then the device, then the default", "[arch]") {
    CHECK(kjit::jit::compile::choose_arch("sm_80", 90, nvrtc13).name() == "sm_80");
    CHECK(kjit::jit::compile::choose_arch("sm_80", 90, nvrtc13).origin == "KJIT_ARCH");
    CHECK(kjit::jit::compile::choose_arch("compute_90", std::nullopt, nvrtc13).name() == "compute_90");
    CHECK(kjit::jit::compile::choose_arch("", 89, nvrtc13).name() == "sm_89");  // empty counts as unset
    CHECK(kjit::jit::compile::choose_arch(nullptr, 89, nvrtc13).origin == "device");
    const ArchTarget d = kjit::jit::compile::choose_arch(nullptr, std::nullopt, nvrtc13);
    CHECK(d.name() == "sm_80");
    CHECK(d.origin == "default");
    CHECK(kjit::jit::compile::default_compute_capability == 80);
    CHECK_THROWS_WITH(kjit::jit::compile::choose_arch("ampere", 90, nvrtc13), Catch::Contains("KJIT_ARCH='ampere'"));
}

TEST_CASE("select_arch reads KJIT_ARCH and asks the loaded NVRTC", "[arch][nvrtc]") {
    const std::vector<int> supported = kjit::jit::compile::nvrtc_supported_archs();
    REQUIRE_FALSE(supported.empty());
    CHECK(std::is_sorted(supported.begin(), supported.end()));
    CHECK(std::find(supported.begin(), supported.end(), 90) != supported.end());
    {
        const ScopedEnv env("KJIT_ARCH", nullptr);
        CHECK(kjit::jit::compile::select_arch().name() == "sm_80");
        CHECK(kjit::jit::compile::select_arch(90).name() == "sm_90");
        kjit::DeviceProperties props;
        props.cc_major = 8;
        props.cc_minor = 6;
        CHECK(kjit::jit::compile::select_arch(props).name() == "sm_86");
        // Newer than any NVRTC can know: PTX of its newest.
        const ArchTarget future = kjit::jit::compile::select_arch(990);
        CHECK(future.ptx_only);
        CHECK(future.compiled == supported.back());
    }
    {
        const ScopedEnv env("KJIT_ARCH", "sm_90");
        CHECK(kjit::jit::compile::select_arch(80).name() == "sm_90");
    }
    {
        const ScopedEnv env("KJIT_ARCH", "sm90");
        CHECK_THROWS_WITH(kjit::jit::compile::select_arch(80), Catch::Contains("KJIT_ARCH='sm90'"));
    }
}

#include "jit/compile/arch.hpp"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/nvrtc.hpp"

namespace kjit::jit::compile {
namespace {

std::string cc_text(int cc) { return fmt::format("{}.{}", cc / 10, cc % 10); }

std::string supported_text(const std::vector<int>& sorted) {
    std::string s;
    for (int cc : sorted) s += fmt::format("{}sm_{}", s.empty() ? "" : ", ", cc);
    return s;
}

}  // namespace

// Without fmt: a fresh process's first cached call names its target, and fmt's formatting code
// would be touched for that alone.
std::string ArchTarget::name() const {
    std::string n = (ptx_only ? "compute_" : "sm_") + std::to_string(compiled);
    if (suffix != 0) n += suffix;
    return n;
}

ArchSpec parse_arch(std::string_view text, std::string_view where) {
    const auto fail = [&](std::string_view why) -> ArchSpec {
        throw Error(fmt::format("{}='{}' is not a GPU architecture kjit can target: {}", where, text, why));
    };
    ArchSpec spec;
    std::string_view digits;
    if (text.starts_with("sm_")) {
        digits = text.substr(3);
    } else if (text.starts_with("compute_")) {
        digits = text.substr(8);
        spec.ptx_only = true;
    } else {
        return fail("expected sm_XX (cubin) or compute_XX (PTX only), e.g. sm_90");
    }
    std::size_t n = 0;
    while (n < digits.size() && digits[n] >= '0' && digits[n] <= '9') ++n;
    if (n < 2 || n > 3 || digits[0] == '0')
        return fail("expected two or three digits after the prefix, e.g. sm_90 or sm_120");
    if (n + 1 == digits.size() && (digits[n] == 'a' || digits[n] == 'f'))
        spec.suffix = digits[n];
    else if (n != digits.size())
        return fail("unexpected characters after the digits (an 'a' or 'f' suffix may follow: sm_90a, sm_100f)");
    for (std::size_t i = 0; i < n; ++i) spec.compute_capability = spec.compute_capability * 10 + (digits[i] - '0');
    return spec;
}

ArchTarget clamp_arch(ArchSpec spec, std::span<const int> supported, std::string origin) {
    std::vector<int> sorted(supported.begin(), supported.end());
    std::sort(sorted.begin(), sorted.end());
    const int r = spec.compute_capability;
    if (sorted.empty()) throw Error("NVRTC reports no architectures it can compile for");
    if (r < sorted.front())
        throw Error(fmt::format("compute capability {} (sm_{}, from {}) is older than the oldest architecture "
                                "this NVRTC supports ({}); supported: {}. Use an older CUDA toolkit's NVRTC "
                                "for this GPU.",
                                cc_text(r), r, origin, "sm_" + std::to_string(sorted.front()),
                                supported_text(sorted)));

    ArchTarget t;
    t.requested = r;
    t.origin = std::move(origin);
    t.ptx_only = spec.ptx_only;
    t.suffix = spec.suffix;
    if (spec.suffix != 0 && !std::binary_search(sorted.begin(), sorted.end(), r))
        throw Error(fmt::format("sm_{}{} (from {}) is an {}-specific target, which only its own architecture can "
                                "compile for, and this NVRTC does not support sm_{}; supported: {}",
                                r, spec.suffix, t.origin, spec.suffix == 'a' ? "architecture" : "family", r,
                                supported_text(sorted)));
    if (std::binary_search(sorted.begin(), sorted.end(), r)) {
        t.compiled = r;
        return t;
    }
    // The newest supported architecture not newer than r (exists: r >= sorted.front()).
    const int below = *std::prev(std::upper_bound(sorted.begin(), sorted.end(), r));
    t.compiled = below;
    if (below / 10 == r / 10) {
        t.note = fmt::format("sm_{} is not supported by this NVRTC; compiled for sm_{}, whose code runs on "
                             "every {}.x GPU",
                             r, below, r / 10);
    } else {
        t.ptx_only = true;
        t.note = fmt::format("sm_{} is {} this NVRTC supports; compiled PTX for compute_{}, which the driver "
                             "compiles for the GPU when the module is loaded",
                             r, r > sorted.back() ? "newer than any architecture" : "not an architecture", below);
    }
    return t;
}

ArchTarget choose_arch(const char* kjit_arch, std::optional<int> device_cc, std::span<const int> supported) {
    if (kjit_arch != nullptr && *kjit_arch != '\0')
        return clamp_arch(parse_arch(kjit_arch, "KJIT_ARCH"), supported, "KJIT_ARCH");
    if (device_cc) return clamp_arch(ArchSpec{*device_cc, false}, supported, "device");
    return clamp_arch(ArchSpec{default_compute_capability, false}, supported, "default");
}

std::vector<int> nvrtc_supported_archs() {
    const kjit::detail::NvrtcApi& api = kjit::detail::nvrtc();
    int count = 0;
    KJIT_NVRTC_CHECK(api.nvrtcGetNumSupportedArchs(&count));
    std::vector<int> archs(static_cast<std::size_t>(std::max(count, 0)));
    if (count > 0) KJIT_NVRTC_CHECK(api.nvrtcGetSupportedArchs(archs.data()));
    std::sort(archs.begin(), archs.end());
    return archs;
}

ArchTarget select_arch(std::optional<int> device_cc) {
    return choose_arch(std::getenv("KJIT_ARCH"), device_cc, nvrtc_supported_archs());
}

ArchTarget select_arch(const DeviceProperties& device) {
    return select_arch(device.cc_major * 10 + device.cc_minor);
}

}  // namespace kjit::jit::compile

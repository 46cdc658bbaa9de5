// Which GPU architecture NVRTC compiles for: KJIT_ARCH if set, else the device's compute
// capability, else a default; then fitted to what the loaded NVRTC can target.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/device.hpp"

namespace kjit::jit::compile {

// With no KJIT_ARCH and no device (a build machine filling a cache, `kjit compile`), kjit compiles
// for sm_80: its cubin runs on every 8.x GPU (A100, A10, L4, L40, RTX 30/40: cubins run on later
// minors of their major), and the compute_80 PTX kept beside it is JIT-compiled by the driver on
// 9.0 and newer. sm_80 is also the oldest architecture with bfloat16 arithmetic in hardware; sm_75
// would run on more GPUs but emulate bfloat16 everywhere.
inline constexpr int default_compute_capability = 80;

// An architecture as written in KJIT_ARCH: "sm_90" (cubin and PTX) or "compute_90" (PTX only),
// with an optional suffix: "sm_90a" (architecture-specific: wgmma, setmaxnreg; runs on 9.0 only)
// or "sm_100f" (family-specific: runs on the 10.x GPUs from 10.0 on).
struct ArchSpec {
    int compute_capability = 0;  // 10 * major + minor: 90 for 9.0, 120 for 12.0
    bool ptx_only = false;
    char suffix = 0;             // 'a', 'f' or none
};

// Parses "sm_XX" / "compute_XX" (XX two or three digits), each with an optional 'a' or 'f'.
// Throws kjit::Error naming `where` (e.g. "KJIT_ARCH") and the value when the text is anything else.
ArchSpec parse_arch(std::string_view text, std::string_view where);

// The target of one compilation.
struct ArchTarget {
    int requested = 0;      // the compute capability asked for (device, KJIT_ARCH or default)
    int compiled = 0;       // the architecture NVRTC compiles for; differs when clamped
    bool ptx_only = false;  // compile for compute_<compiled>: PTX only, no cubin; the driver JITs it
    char suffix = 0;        // 'a' or 'f' for an architecture- or family-specific target
    std::string origin;     // where `requested` came from: "KJIT_ARCH", "device", "default"
    std::string note;       // why compiled/ptx_only differ from what was asked; empty if they don't

    // "sm_90", "sm_90a", or "compute_90" when ptx_only: what --gpu-architecture gets.
    std::string name() const;
    friend bool operator==(const ArchTarget&, const ArchTarget&) = default;
};

// Fits a request to the architectures an NVRTC supports (`supported`, any order, as
// nvrtcGetSupportedArchs lists them). A pure function, so that tests can inject the list:
//  - supported exactly: that architecture;
//  - else the newest supported one of the same major version not newer than it: cubins run on
//    later minors of their major (an sm_90 cubin on a 9.2 GPU);
//  - else the newest supported one older than it, PTX only (covers a device newer than this NVRTC
//    knows: the driver compiles the PTX for it);
//  - older than every supported one: kjit::Error saying so.
// An 'a' or 'f' target is never substituted: supported exactly, or kjit::Error.
ArchTarget clamp_arch(ArchSpec spec, std::span<const int> supported, std::string origin);

// The whole choice as a pure function: `kjit_arch` is KJIT_ARCH's value (null or empty when
// unset), `device_cc` the device's compute capability if there is one.
ArchTarget choose_arch(const char* kjit_arch, std::optional<int> device_cc, std::span<const int> supported);

// The architectures the loaded NVRTC can compile for, ascending (nvrtcGetSupportedArchs);
// throws NoDeviceError when there is no NVRTC.
std::vector<int> nvrtc_supported_archs();

// choose_arch with this process's KJIT_ARCH and NVRTC.
ArchTarget select_arch(std::optional<int> device_cc = std::nullopt);
ArchTarget select_arch(const DeviceProperties& device);

}  // namespace kjit::jit::compile

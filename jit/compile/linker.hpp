// Linking device code into one cubin with nvJitLink (loaded at run time,
// runtime/detail/nvjitlink.hpp): relocatable code compiled by NVRTC (-rdc, -dc), other modules,
// LTO-IR and libraries such as the device runtime.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kjit::jit::compile {

enum class LinkKind { cubin, ptx, ltoir, fatbin, library };

// The first four bytes (little-endian) of a fatbin and of NVVM's LTO-IR.
inline constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
inline constexpr std::uint32_t kLtoirMagic = 0x7F4E43ED;

// One input of a link: bytes in memory, or a file nvJitLink reads itself (bytes empty).
struct LinkData {
    std::string name;  // in messages and nvJitLink's log: "helper.ltoir", "libcudadevrt.a"
    LinkKind kind = LinkKind::cubin;
    std::vector<unsigned char> bytes;
    std::string path;
};

// What a relocatable program is linked with besides its own code (jit/compile/program_store.hpp).
struct LinkPlan {
    std::vector<LinkData> inputs;
    bool device_runtime = true;  // libcudadevrt.a too (jit/compile/device_runtime.hpp), linked last
};

struct LinkResult {
    std::vector<unsigned char> cubin;  // for the arch linked for
    std::string log;                   // nvJitLink's info log, often empty
    double link_ms = 0;
};

// The options for linking `inputs` for `arch` ("sm_90", "sm_90a"): "-arch=sm_90", and "-lto"
// when an input is LTO-IR (nvJitLink refuses LTO-IR without it).
std::vector<std::string> link_options(const std::vector<LinkData>& inputs, const std::string& arch);

// Links `inputs` into a cubin for `arch`. Throws LinkError naming the inputs, with nvJitLink's
// error log, when nvJitLink refuses them (an undefined symbol, another architecture's code);
// NoDeviceError when there is no nvJitLink. `what` names the module in messages.
LinkResult link_cubin(const std::vector<LinkData>& inputs, const std::string& arch, const std::string& what);

// The kind of `bytes` from their first bytes: an ELF (cubin), a fatbin's or LTO-IR's magic
// number, an ar archive ("!<arch>\n": a library), or PTX text. Throws Error naming `name`.
LinkKind link_kind_of(const std::vector<unsigned char>& bytes, const std::string& name);

// The file at `path` as a link input, its kind from its first bytes and its name the file's.
// Throws IoError naming the path when it cannot be read.
LinkData read_link_file(const std::string& path);

// "cubin", "PTX", "LTO-IR", "fatbin", "library".
const char* link_kind_name(LinkKind kind) noexcept;

// What identifies the loaded nvJitLink for cache keys: "nvjitlink-13.0+bid:<hex>" (or "+xxh3:"
// of the file when it has no build ID); memoised per library. Throws NoDeviceError without it.
std::string nvjitlink_version_key();

}  // namespace kjit::jit::compile
